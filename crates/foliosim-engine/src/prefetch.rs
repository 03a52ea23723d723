//! Software prefetch for walks whose next targets are known ahead (a zap's PTEs name the pfns
//! it will free): each touches per-pfn arrays at random, one cache miss per array otherwise.

/// Hint that `slice[i]` will be accessed soon. A no-op when `i` is out of range or the target
/// has no prefetch instruction; never changes a result.
#[inline(always)]
pub fn prefetch<T>(slice: &[T], i: usize) {
    if let Some(x) = slice.get(i) {
        prefetch_ptr(x);
    }
}

/// Hint that `*x` will be accessed soon.
#[inline(always)]
pub fn prefetch_ptr<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch of a valid address (a reference) has no architectural effect.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(x as *const T as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
