//! Memory for the large per-unit arrays, and software prefetch.
//!
//! The mapping table and the OOB array of a large device span hundreds of MiB; with 4 KiB
//! pages nearly every random access also misses the TLB. [`large_vec`] asks Linux for
//! transparent huge pages on them (`madvise(MADV_HUGEPAGE)`, before the first touch).
//!
//! Software prefetch: a hint that `slice[i]` will be touched soon. On large devices the
//! functional hot loops are bound by random accesses to the mapping table and the OOB
//! array (DRAM misses, one after another); loops that know their next units ask for those
//! lines early — what a hand-written loop gets from out-of-order execution over a short
//! body.

/// Ask for the cache line of `slice[i]` (nothing when `i` is out of range or the target
/// has no prefetch instruction).
#[inline(always)]
pub fn prefetch<T>(slice: &[T], i: usize) {
    prefetch_bytes(slice, i, 0);
}

/// Ask for the cache line of byte `byte` of `slice[i]` (nothing when `i` is out of
/// range).
#[inline(always)]
pub fn prefetch_bytes<T>(slice: &[T], i: usize, byte: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = slice.get(i) {
        // SAFETY: `_mm_prefetch` only hints the cache and never faults; the caller names a
        // byte of a live element.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast::<i8>().wrapping_add(byte),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i, byte);
}

/// Huge-page size on x86_64 Linux.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Bytes of one element of `v` (memory estimates follow the arrays' real types).
pub fn elem_bytes<T>(_: &[T]) -> u64 {
    std::mem::size_of::<T>() as u64
}

/// `vec![value; len]`, backed by transparent huge pages where the OS offers them and the
/// array spans several of them.
pub fn large_vec<T: Copy>(len: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge_pages(v.as_mut_ptr(), len * std::mem::size_of::<T>());
    v.resize(len, value);
    v
}

/// A copy of `src` in memory from [`large_vec`].
pub fn large_copy<T: Copy + Default>(src: &[T]) -> Vec<T> {
    let mut v = large_vec(src.len(), T::default());
    v.copy_from_slice(src);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(ptr: *mut T, bytes: usize) {
    if bytes < 2 * HUGE_PAGE_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE_BYTES);
    let end = (ptr as usize + bytes) & !(HUGE_PAGE_BYTES - 1);
    if end > start {
        // SAFETY: madvise only advises the kernel how to back the pages; the range lies
        // inside the allocation just made and no reference into it exists yet. A refusal
        // (THP off) leaves ordinary pages, so the result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_ptr: *mut T, _bytes: usize) {}
