//! The process's allocator: the system one, except that blocks of 2 MiB and more are mapped
//! 2 MiB-aligned and advised MADV_HUGEPAGE.
//!
//! The model's dense arrays (per pfn, per swap slot, per PTE) are GiBs of metadata touched at
//! random. Backed by 4 KiB pages they cost a host page fault per 4 KiB on first touch (40% of
//! the CPU time of a seed-000 2M run went to the host's fault path) and a TLB miss on most
//! accesses; in transparent huge pages they cost neither. The host decides whether it has huge
//! pages to give (sysfs `enabled` = madvise or always); results never depend on it, only speed.
//! Fresh mappings are zero-filled by the host, so zeroed blocks need no write at all.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks this large or larger are mapped on their own, aligned to a PMD.
const HUGE_BYTES: usize = 2 << 20;
const PAGE_BYTES: usize = 4096;

pub struct HugePageAlloc;

#[inline]
fn is_huge(layout: &Layout) -> bool {
    cfg!(target_os = "linux") && layout.size() >= HUGE_BYTES && layout.align() <= PAGE_BYTES
}

#[inline]
fn map_len(size: usize) -> usize {
    size.next_multiple_of(PAGE_BYTES)
}

#[cfg(target_os = "linux")]
mod os {
    use super::{map_len, HUGE_BYTES};

    /// A fresh zeroed mapping of `size` bytes starting on a 2 MiB boundary, advised
    /// MADV_HUGEPAGE; null on failure.
    pub unsafe fn map(size: usize) -> *mut u8 {
        let len = map_len(size);
        let over = len + HUGE_BYTES;
        let base = libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        let base = base as usize;
        let start = base.next_multiple_of(HUGE_BYTES);
        // Give back the unaligned head and the tail past the block.
        if start > base {
            libc::munmap(base as *mut libc::c_void, start - base);
        }
        let end = start + len;
        if base + over > end {
            libc::munmap(end as *mut libc::c_void, base + over - end);
        }
        // Advice only: without huge pages the block is still good memory.
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        start as *mut u8
    }

    pub unsafe fn unmap(ptr: *mut u8, size: usize) {
        libc::munmap(ptr as *mut libc::c_void, map_len(size));
    }

    /// Grow or shrink a mapping in place or by moving its pages (no copy); null on failure.
    pub unsafe fn remap(ptr: *mut u8, old_size: usize, new_size: usize) -> *mut u8 {
        let p = libc::mremap(
            ptr as *mut libc::c_void,
            map_len(old_size),
            map_len(new_size),
            libc::MREMAP_MAYMOVE,
        );
        if p == libc::MAP_FAILED {
            return std::ptr::null_mut();
        }
        libc::madvise(p, map_len(new_size), libc::MADV_HUGEPAGE);
        p as *mut u8
    }
}

#[cfg(not(target_os = "linux"))]
mod os {
    pub unsafe fn map(_size: usize) -> *mut u8 {
        unreachable!("huge blocks are Linux only")
    }
    pub unsafe fn unmap(_ptr: *mut u8, _size: usize) {
        unreachable!("huge blocks are Linux only")
    }
    pub unsafe fn remap(_ptr: *mut u8, _old: usize, _new: usize) -> *mut u8 {
        unreachable!("huge blocks are Linux only")
    }
}

unsafe impl GlobalAlloc for HugePageAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_huge(&layout) {
            os::map(layout.size())
        } else {
            System.alloc(layout)
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_huge(&layout) {
            // A fresh mapping is zeroed by the host.
            os::map(layout.size())
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_huge(&layout) {
            os::unmap(ptr, layout.size())
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (is_huge(&layout), is_huge(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => os::remap(ptr, layout.size(), new_size),
            _ => {
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

/// Back a large block not yet touched with base pages (MADV_NOHUGEPAGE): for a table touched
/// sparsely, where a huge page would make 2 MiB resident for each record written. Speed and
/// memory only; a no-op for small blocks (from the system allocator) and off Linux.
pub fn advise_sparse<T>(block: &[T]) {
    let bytes = std::mem::size_of_val(block);
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_BYTES && std::mem::align_of::<T>() <= PAGE_BYTES {
        // SAFETY: advice on a mapping this allocator made (page-aligned, map_len long).
        unsafe {
            libc::madvise(
                block.as_ptr() as *mut libc::c_void,
                map_len(bytes),
                libc::MADV_NOHUGEPAGE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_blocks_are_aligned_zeroed_and_resizable() {
        let a = HugePageAlloc;
        unsafe {
            let layout = Layout::from_size_align(3 << 20, 8).unwrap();
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            if cfg!(target_os = "linux") {
                assert_eq!(p as usize % HUGE_BYTES, 0);
            }
            assert!(std::slice::from_raw_parts(p, layout.size())
                .iter()
                .all(|&b| b == 0));
            *p.add(12345) = 7;
            let q = a.realloc(p, layout, 9 << 20);
            assert_eq!(*q.add(12345), 7);
            // Down below the threshold: copied into a small block.
            let big = Layout::from_size_align(9 << 20, 8).unwrap();
            let r = a.realloc(q, big, 1 << 20);
            assert_eq!(*r.add(12345), 7);
            a.dealloc(r, Layout::from_size_align(1 << 20, 8).unwrap());
        }
        let v = vec![u32::MAX; 1 << 20];
        assert!(v.iter().all(|&x| x == u32::MAX));
    }
}
