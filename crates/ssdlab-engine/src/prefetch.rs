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

/// Fault in all of `v` now, written (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14+): for an
/// array from [`large_zeroed`] that a phase is about to write entirely (preconditioning's
/// fill writes every mapping entry and, with its overwrites, every slot's OOB word), one
/// call instead of a fault per page the phase's first touches would take. Contents are
/// unchanged (zero pages stay zero); a kernel without it, or a refusal, leaves the pages
/// to be faulted in on first touch as before.
pub fn populate<T: Zeroable>(v: &mut [T]) {
    populate_bytes(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v));
}

#[cfg(target_os = "linux")]
fn populate_bytes(ptr: *mut u8, bytes: usize) {
    if bytes < 2 * HUGE_PAGE_BYTES {
        return;
    }
    // SAFETY: `sysconf` only reads a system constant.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => return,
    };
    let start = (ptr as usize).next_multiple_of(page);
    let end = (ptr as usize + bytes) & !(page - 1);
    if end > start {
        // SAFETY: the range lies inside the live allocation behind the caller's `&mut`
        // slice, and populating only faults its pages in (writable, contents kept); no
        // other reference into it exists meanwhile. A refusal (EINVAL before Linux 5.14)
        // changes nothing, so the result is ignored.
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn populate_bytes(_ptr: *mut u8, _bytes: usize) {}

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
