//! Memory for the large per-unit arrays, and software prefetch.
//!
//! The mapping table and the OOB array of a large device span hundreds of MiB; with 4 KiB
//! pages nearly every random access also misses the TLB. [`large_zeroed`] asks Linux for
//! transparent huge pages on them (`madvise(MADV_HUGEPAGE)`, before the first touch) and
//! hands them out zeroed: memory nobody writes is never faulted in.
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

/// Types whose all-zero bit pattern is a valid value: [`large_zeroed`] hands them out
/// from zeroed memory without writing it.
///
/// # Safety
///
/// Every bit of the type is data (no padding, no niche), and all-zero bits are a value.
pub unsafe trait Zeroable: Copy {}

// SAFETY: plain integers: every bit pattern is a value.
unsafe impl Zeroable for u8 {}
// SAFETY: as above.
unsafe impl Zeroable for u16 {}
// SAFETY: as above.
unsafe impl Zeroable for u32 {}
// SAFETY: as above.
unsafe impl Zeroable for u64 {}

/// `len` zero values from the allocator's zeroed memory (`calloc`: a large array is fresh
/// pages that read as zero and cost nothing until written), backed by transparent huge
/// pages where the OS offers them and the array spans several of them. An empty device's
/// tables are written only where it is used, so their owners choose an encoding in which
/// the initial value is zero (e.g. `NONE` stored as 0).
pub fn large_zeroed<T: Zeroable>(len: usize) -> Vec<T> {
    let layout = std::alloc::Layout::array::<T>(len).expect("array size overflows");
    if layout.size() == 0 {
        return Vec::new();
    }
    // SAFETY: the layout's size is not zero.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    advise_huge_pages(ptr, layout.size());
    // SAFETY: `ptr` comes from the global allocator with the layout of `len` `T`s, and
    // all `len` of them are zero bits, a value of `T` (`Zeroable`).
    unsafe { Vec::from_raw_parts(ptr, len, len) }
}

/// A copy of `src` in memory from [`large_zeroed`] (written once, by the copy).
pub fn large_copy<T: Zeroable>(src: &[T]) -> Vec<T> {
    let mut v = large_zeroed(src.len());
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
