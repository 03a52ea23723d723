//! The invariants of shmem (mm/shmem.rs), checked with the rest (mm/invariants.rs), which
//! also counts the inodes' swap references against swap_map:
//! - every slot holding a pfn points at the head of a live shmem folio of that inode whose
//!   pages cover the slot, and a slot never holds a folio and a swap entry at once;
//! - NR_SHMEM = the pages of the folios in tmpfs files, each memcg's `shmem` = those charged
//!   to it, NR_SHMEM_THPS = the pages of PMD-sized ones;
//! - an inode's nrpages and swapped match its slots, and a mount's used blocks are the sum of
//!   its inodes' (alloced = nrpages + swapped);
//! - a shmem folio in a file's page cache is on an LRU and not in the swap cache; one that left
//!   it is in the swap cache.

use super::folio::{flags, NIL};
use super::shmem::{in_page_cache, is_shmem, SHMEM_OWNER};
use super::Kernel;
use crate::scenario::PMD_ORDER;

pub fn check(k: &Kernel) -> Result<(), String> {
    let sh = &k.shmem;
    let mut memcg_pages = vec![0u64; sh.memcg_pages.len()];
    let (mut total, mut thp) = (0u64, 0u64);
    let mut mount_used = vec![0u64; sh.mounts.len()];
    for (id, inode) in sh.inodes.iter().enumerate() {
        let Some(inode) = inode else { continue };
        let (pages, swapped) = check_inode(k, id, inode, &mut memcg_pages, &mut thp)?;
        total += pages;
        mount_used[inode.mount as usize] += pages + swapped;
    }
    if total != sh.nr_pages || thp != sh.nr_thp_pages {
        return Err(format!(
            "NR_SHMEM {} / NR_SHMEM_THPS {} but the files hold {total} / {thp} pages",
            sh.nr_pages, sh.nr_thp_pages
        ));
    }
    if memcg_pages != sh.memcg_pages {
        return Err(format!(
            "memcg shmem {:?} but the files' folios are charged {memcg_pages:?}",
            sh.memcg_pages
        ));
    }
    for (m, mount) in sh.mounts.iter().enumerate() {
        if mount.used_pages != mount_used[m] || mount.used_pages > mount.max_pages {
            return Err(format!(
                "tmpfs {m}: used {} blocks (size {}) but its files hold {}",
                mount.used_pages, mount.max_pages, mount_used[m]
            ));
        }
    }
    check_folios(k)
}

/// One inode's slots: (pages in memory, pages on swap).
fn check_inode(
    k: &Kernel,
    id: usize,
    inode: &super::shmem::Inode,
    memcg_pages: &mut [u64],
    thp: &mut u64,
) -> Result<(u64, u64), String> {
    let f = &k.folios;
    let (mut pages, mut swapped) = (0u64, 0u64);
    for (x, (&pfn, &swap)) in inode.folios.iter().zip(&inode.swap).enumerate() {
        if swap != NIL {
            swapped += 1;
        }
        if pfn == NIL {
            continue;
        }
        let first = f.owner_index(pfn as usize) as usize;
        let nr = f.nr_pages(pfn) as usize;
        let ok = swap == NIL
            && f.test(pfn, flags::ALLOCATED)
            && f.owner_mm(pfn as usize) as usize == id
            && f.owner_vma(pfn as usize) == SHMEM_OWNER
            && (first..first + nr).contains(&x)
            && f.test(pfn, flags::LRU)
            && !f.test(pfn, flags::SWAPCACHE);
        if !ok {
            return Err(format!(
                "shmem inode {id} page {x}: slot pfn {pfn} (swap {swap:#x}) is no folio of it on an LRU"
            ));
        }
        pages += 1;
        memcg_pages[f.memcg(pfn as usize) as usize] += 1;
        if f.order[pfn as usize] as u32 == PMD_ORDER {
            *thp += 1;
        }
    }
    if pages != inode.nr_pages || swapped != inode.swapped {
        return Err(format!(
            "shmem inode {id}: nrpages {} / swapped {} but its slots hold {pages} / {swapped}",
            inode.nr_pages, inode.swapped
        ));
    }
    Ok((pages, swapped))
}

/// Every live shmem folio is in its file's page cache or in the swap cache.
fn check_folios(k: &Kernel) -> Result<(), String> {
    let f = &k.folios;
    let mut pfn = 0usize;
    while pfn < f.order.as_vec().len() {
        let p = pfn as u32;
        if !f.test(p, flags::ALLOCATED) {
            pfn += 1;
            continue;
        }
        if is_shmem(k, p) && !in_page_cache(k, p) && !f.test(p, flags::SWAPCACHE) {
            return Err(format!(
                "shmem folio {p} is neither in its file nor in the swap cache: leaked"
            ));
        }
        pfn += f.nr_pages(p) as usize;
    }
    Ok(())
}
