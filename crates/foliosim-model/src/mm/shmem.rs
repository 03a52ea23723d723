//! shmem and tmpfs (mm/shmem.c): files in memory, backed by swap.
//!
//! A tmpfs file is an inode with one slot per page index: the head pfn of the folio holding
//! that page, or the swap entry its page was written to, or neither (a hole). Its folios are
//! swap-backed: they sit on the anonymous LRU lists, are charged to the memcg of the task that
//! wrote them, count in NR_SHMEM and in the memcg's `shmem`, and reclaim writes them to swap
//! through shmem_writeout (the slot keeps the swap entry, holding one swap_map reference).
//! A shmem folio reuses the folio owner fields: owner_mm is the inode id, owner_vma is
//! SHMEM_OWNER, owner_index the index of its first page.
//!
//! Workloads reach tmpfs through write(2) and read(2) only (no mmap of tmpfs files, so a shmem
//! folio is never mapped: no shmem_pmdmapped, thp_file_mapped stays 0).

pub mod stats;
pub mod swap;

use super::folio::{flags, SwapEntry, NIL};
use super::gfp::Gfp;
use super::memcontrol::try_charge;
use super::page_alloc::alloc_pages;
use super::{Kernel, MmError};
use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::releases::MmChange;
use crate::scenario::tmpfs::{ShmemEnabled, ShmemHuge};
use crate::scenario::{Scenario, PMD_ORDER};
pub use stats::ShmemStats;

/// owner_vma of a shmem folio (an anonymous folio's owner_vma is a VMA index, far below).
pub const SHMEM_OWNER: u32 = NIL - 1;

/// One tmpfs mount: its `size=` (max_blocks) and `huge=`.
pub struct Mount {
    pub max_pages: u64,
    /// sbinfo->used_blocks: pages of its files in memory or on swap.
    pub used_pages: u64,
    pub huge: ShmemHuge,
}

/// A shmem inode: i_size, the page-cache slots and the swap entries (shmem_inode_info).
pub struct Inode {
    pub mount: u32,
    pub i_size_pages: u32,
    /// Index -> head pfn of the folio holding the page, or NIL.
    pub folios: Vec<u32>,
    /// Index -> raw swap entry the page was written to, or NIL.
    pub swap: Vec<u32>,
    /// mapping->nrpages.
    pub nr_pages: u64,
    /// info->swapped.
    pub swapped: u64,
    /// What its writer stores in it (the content of its pages when swapped).
    pub content: ContentClass,
}

impl Inode {
    /// i_size grows to `end` (a write past the end).
    fn grow(&mut self, end: u32) {
        self.grow_slots(end);
        self.i_size_pages = self.i_size_pages.max(end);
    }

    fn grow_slots(&mut self, end: u32) {
        if self.folios.len() < end as usize {
            self.folios.resize(end as usize, NIL);
            self.swap.resize(end as usize, NIL);
        }
    }
}

/// Every tmpfs mount and shmem inode, and the node's shmem counters.
pub struct Shmem {
    /// Any `[[tmpfs]]` in the scenario: only then are the shmem counters reported.
    pub enabled: bool,
    pub mounts: Vec<Mount>,
    /// By inode id (a workload's file number); None before its first write or after unlink.
    pub inodes: Vec<Option<Inode>>,
    pub shmem_enabled: ShmemEnabled,
    /// NR_SHMEM and NR_SHMEM_THPS, pages.
    pub nr_pages: u64,
    pub nr_thp_pages: u64,
    /// memory.stat `shmem` of each memcg, pages.
    pub memcg_pages: Vec<u64>,
    pub stats: ShmemStats,
}

impl Shmem {
    pub fn new(scenario: &Scenario) -> Shmem {
        let memory = scenario.machine.memory;
        Shmem {
            enabled: !scenario.tmpfs.is_empty(),
            mounts: scenario
                .tmpfs
                .iter()
                .map(|m| Mount {
                    max_pages: m.max_pages(memory),
                    used_pages: 0,
                    huge: m.huge,
                })
                .collect(),
            inodes: Vec::new(),
            shmem_enabled: scenario.sysfs.shmem_enabled,
            nr_pages: 0,
            nr_thp_pages: 0,
            memcg_pages: vec![0; 1 + scenario.memcgs.len()],
            stats: ShmemStats::default(),
        }
    }

    pub fn inode(&self, id: u32) -> Result<&Inode, MmError> {
        self.inodes
            .get(id as usize)
            .and_then(|i| i.as_ref())
            .ok_or(MmError::NoSuchShmemFile { file: id })
    }

    #[inline]
    pub fn inode_mut(&mut self, id: u32) -> &mut Inode {
        self.inodes[id as usize]
            .as_mut()
            .expect("shmem folio of a live inode")
    }
}

/// Is the folio at `pfn` a shmem folio (in a tmpfs file's page cache, or its swap cache once
/// shmem_writeout moved it there)?
#[inline]
pub fn is_shmem(k: &Kernel, pfn: u32) -> bool {
    !k.folios.test(pfn, flags::FILE) && k.folios.owner_vma(pfn as usize) == SHMEM_OWNER
}

/// Is it in its inode's page cache (not yet moved to the swap cache)?
pub fn in_page_cache(k: &Kernel, pfn: u32) -> bool {
    if !is_shmem(k, pfn) {
        return false;
    }
    let (inode, index) = (
        k.folios.owner_mm(pfn as usize),
        k.folios.owner_index(pfn as usize),
    );
    k.shmem.inodes.get(inode as usize).is_some_and(|i| {
        i.as_ref()
            .is_some_and(|i| i.folios.get(index as usize) == Some(&pfn))
    })
}

/// The orders huge=always/within_size allow write(2), by release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TmpfsOrders {
    /// Before 6.14: the PMD size only.
    PmdOnly,
    /// 6.14-6.17 (shmem_mapping_size_orders): up to the write's size from the index.
    WriteSize,
    /// 6.18: every order, the PMD size tried first.
    PmdFirst,
}

impl TmpfsOrders {
    pub fn of(release: crate::scenario::releases::Release) -> TmpfsOrders {
        if release.has(MmChange::TmpfsHugePmdFirst) {
            TmpfsOrders::PmdFirst
        } else if release.has(MmChange::TmpfsLargeFolios) {
            TmpfsOrders::WriteSize
        } else {
            TmpfsOrders::PmdOnly
        }
    }
}

/// shmem_allowable_huge_orders for write(2) (no VMA): a bitmask of orders > 0. With no anonymous
/// shmem VMA the kernel returns the mount's orders: per-size `hugepages-*/shmem_enabled` (6.11+,
/// `sysfs.hugepages_shmem`) is not consulted.
fn allowable_orders(k: &Kernel, inode: u32, index: u32, write_end: u32) -> u32 {
    let pmd = 1u32 << PMD_ORDER;
    match k.shmem.shmem_enabled {
        ShmemEnabled::Deny => return 0,
        ShmemEnabled::Force => return pmd,
        _ => {}
    }
    let i = k.shmem.inodes[inode as usize].as_ref().expect("live inode");
    let huge = k.shmem.mounts[i.mount as usize].huge;
    let orders = match k.cfg.tmpfs_orders {
        TmpfsOrders::PmdOnly => pmd,
        TmpfsOrders::WriteSize => size_orders(index, write_end),
        // THP_ORDERS_ALL_FILE_DEFAULT: every order 1..=MAX_PAGECACHE_ORDER (the PMD order).
        TmpfsOrders::PmdFirst => (pmd << 1) - 2,
    };
    match huge {
        ShmemHuge::Always => orders,
        ShmemHuge::WithinSize => orders_within_size(orders, index, i.i_size_pages.max(write_end)),
        // advise: only with MADV_HUGEPAGE, which write(2) has not.
        ShmemHuge::Advise | ShmemHuge::Never => 0,
    }
}

/// shmem_mapping_size_orders (6.14-6.17): orders up to the write's size from `index`, no
/// larger than the index's alignment.
fn size_orders(index: u32, write_end: u32) -> u32 {
    let size = write_end.saturating_sub(index);
    if size < 2 {
        return 0;
    }
    let mut order = (31 - size.leading_zeros()).min(PMD_ORDER);
    if index & ((1 << order) - 1) != 0 {
        order = index.trailing_zeros();
    }
    if order == 0 {
        0
    } else {
        ((1u32 << (order + 1)) - 1) & !1
    }
}

/// shmem_get_orders_within_size: from the highest order down, the first whose aligned end is
/// within i_size (the write's end counted) keeps it and every smaller order.
fn orders_within_size(orders: u32, index: u32, i_size_pages: u32) -> u32 {
    let mut rest = orders;
    while rest != 0 {
        let order = 31 - rest.leading_zeros();
        let nr = 1u64 << order;
        let aligned_end = (index as u64 + 1).div_ceil(nr) * nr;
        if i_size_pages as u64 >= aligned_end {
            return rest;
        }
        rest &= !(1 << order);
    }
    0
}

/// shmem_suitable_orders: drop the orders whose aligned range already holds a page or a swap
/// entry, from the highest down to the first free one.
fn suitable_orders(i: &Inode, index: u32, mut orders: u32) -> u32 {
    while orders != 0 {
        let order = 31 - orders.leading_zeros();
        let first = (index >> order << order) as usize;
        let end = (first + (1 << order)).min(i.folios.len());
        let taken = (first..end).any(|x| i.folios[x] != NIL || i.swap[x] != NIL);
        if !taken {
            break;
        }
        orders &= !(1 << order);
    }
    orders
}

/// The THP gfp of a shmem allocation without a VMA (vma_thp_gfp_mask(NULL)): the defrag
/// setting as for a VMA without MADV_HUGEPAGE.
fn huge_gfp(k: &Kernel) -> Gfp {
    let vma = super::mmap::Vma {
        nr_pages: 0,
        thp: super::mmap::ThpAdvice::Default,
        anon_vma: false,
        ptes: Vec::new(),
        prot: Default::default(),
        special: Vec::new(),
        swap_ra: Default::default(),
    };
    super::huge_memory::vma_thp_gfp_mask(k.cfg.thp_defrag, &vma, k.cfg.gfp_transhuge)
}

/// shmem_alloc_and_add_folio for the orders in `orders` (high to low), then order 0 with
/// GFP_HIGHUSER_MOVABLE: allocate, charge `memcg`, account the mount's blocks, put the folio
/// in the inode's slots and on the anon LRU. Returns the head pfn.
fn alloc_and_add(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    index: u32,
    memcg: u16,
    orders: u32,
) -> Result<u32, MmError> {
    let gfp = huge_gfp(k);
    let mut rest = orders;
    while rest != 0 {
        let order = 31 - rest.leading_zeros();
        rest &= !(1 << order);
        let Some(pfn) = alloc_pages(k, ctx, gfp, order) else {
            k.shmem.stats.fallback(order, false);
            continue;
        };
        if !try_charge(k, ctx, memcg, 1 << order, gfp) {
            k.free_pages(ctx, pfn, order);
            k.shmem.stats.fallback(order, true);
            break;
        }
        add_to_page_cache(k, ctx, inode, index >> order << order, pfn, order, memcg)?;
        k.shmem.stats.alloc(order);
        return Ok(pfn);
    }
    let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
    let Some(pfn) = alloc_pages(k, ctx, gfp, 0) else {
        return Err(super::oom_kill::oom_error(k, ctx, None));
    };
    if !try_charge(k, ctx, memcg, 1, gfp) {
        k.free_pages(ctx, pfn, 0);
        return Err(super::oom_kill::oom_error(k, ctx, Some(memcg)));
    }
    add_to_page_cache(k, ctx, inode, index, pfn, 0, memcg)?;
    Ok(pfn)
}

/// shmem_add_to_page_cache + shmem_inode_acct_blocks + folio_add_lru for a new, charged
/// folio: a mount over its size= refuses it (-ENOSPC) and the folio is freed.
fn add_to_page_cache(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    first: u32,
    pfn: u32,
    order: u32,
    memcg: u16,
) -> Result<(), MmError> {
    let nr = 1u32 << order;
    let mount = k.shmem.inode_mut(inode).mount;
    let m = &mut k.shmem.mounts[mount as usize];
    if m.used_pages + nr as u64 > m.max_pages {
        k.free_pages(ctx, pfn, order);
        super::memcontrol::uncharge(k, ctx, memcg, nr as u64);
        return Err(MmError::TmpfsFull { mount });
    }
    m.used_pages += nr as u64;
    k.folios
        .init(pfn, order, memcg, (inode, SHMEM_OWNER, first));
    k.folios.set(pfn, flags::REFERENCED);
    let i = k.shmem.inode_mut(inode);
    // A folio may reach past i_size (huge=always): its slots exist all the same.
    i.grow_slots(first + nr);
    for x in first..first + nr {
        debug_assert!(i.folios[x as usize] == NIL && i.swap[x as usize] == NIL);
        i.folios[x as usize] = pfn;
    }
    i.nr_pages += nr as u64;
    account(k, memcg, order, nr as i64);
    ctx.spend(CpuCost::FilemapAddFolio, k.cost.filemap_add_folio_ns);
    k.folio_add_lru(ctx, pfn);
    Ok(())
}

/// NR_SHMEM (+ NR_SHMEM_THPS for a PMD-sized folio) and the memcg's `shmem`, by `delta` pages.
pub(crate) fn account(k: &mut Kernel, memcg: u16, order: u32, delta: i64) {
    let s = &mut k.shmem;
    s.nr_pages = s.nr_pages.checked_add_signed(delta).expect("NR_SHMEM");
    let cg = &mut s.memcg_pages[memcg as usize];
    *cg = cg.checked_add_signed(delta).expect("memcg shmem");
    if order == PMD_ORDER {
        s.nr_thp_pages = s.nr_thp_pages.checked_add_signed(delta).expect("THPs");
    }
}

/// shmem_get_folio_gfp: the folio holding page `index` of `inode`, swapped in or allocated
/// (SGP_WRITE with `write_end`, else SGP_READ: None for a hole).
fn get_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    index: u32,
    memcg: u16,
    write_end: Option<u32>,
) -> Result<Option<u32>, MmError> {
    let i = k.shmem.inode_mut(inode);
    if let Some(end) = write_end {
        i.grow(end);
    }
    if index as usize >= i.folios.len() {
        return Ok(None);
    }
    let pfn = i.folios[index as usize];
    if pfn != NIL {
        if write_end.is_some() {
            super::filemap::folio_mark_accessed(k, ctx, pfn);
        }
        return Ok(Some(pfn));
    }
    if i.swap[index as usize] != NIL {
        return swap::shmem_swapin_folio(k, ctx, inode, index, memcg).map(Some);
    }
    let Some(end) = write_end else {
        return Ok(None);
    };
    let orders = allowable_orders(k, inode, index, end);
    let orders = suitable_orders(k.shmem.inode_mut(inode), index, orders);
    alloc_and_add(k, ctx, inode, index, memcg, orders).map(Some)
}

/// Pages a write or read step handles at most (shmem_file_write_iter's loop, one step).
pub const STEP_PAGES: u32 = 16;

/// write(2) of pages [index, end) of `inode` on `mount` (created at its first write), from a
/// task of `memcg` writing `content`: up to STEP_PAGES pages a step; returns how many were done.
pub fn shmem_write_step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    w: WriteTarget,
    index: u32,
    end: u32,
) -> Result<u32, MmError> {
    create_if_missing(k, w.mount, w.inode, w.content)?;
    let last = end.min(index + STEP_PAGES);
    for x in index..last {
        let pfn = get_folio(k, ctx, w.inode, x, w.memcg, Some(end))?.expect("allocated");
        k.folios.set(pfn, flags::DIRTY);
        ctx.spend(CpuCost::FilemapRead, k.cost.file_read_page_ns);
    }
    Ok(last - index)
}

/// Where a write goes: the mount, the inode, and the writer's memcg and content.
#[derive(Debug, Clone, Copy)]
pub struct WriteTarget {
    pub mount: u32,
    pub inode: u32,
    pub memcg: u16,
    pub content: ContentClass,
}

/// read(2) of pages [index, end) of `inode` (shmem_file_read_iter): holes read as zeros,
/// swapped pages come back; up to STEP_PAGES pages a step.
pub fn shmem_read_step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    inode: u32,
    memcg: u16,
    index: u32,
    end: u32,
) -> Result<u32, MmError> {
    let size = k.shmem.inode(inode)?.i_size_pages;
    let last = end.min(size).min(index + STEP_PAGES);
    for x in index..last {
        if let Some(pfn) = get_folio(k, ctx, inode, x, memcg, None)? {
            super::filemap::folio_mark_accessed(k, ctx, pfn);
        }
        ctx.spend(CpuCost::FilemapRead, k.cost.file_read_page_ns);
    }
    // Past i_size the read ends.
    Ok(if last >= size.min(end) {
        end - index
    } else {
        last - index
    })
}

fn create_if_missing(
    k: &mut Kernel,
    mount: u32,
    inode: u32,
    content: ContentClass,
) -> Result<(), MmError> {
    if mount as usize >= k.shmem.mounts.len() {
        return Err(MmError::NoSuchTmpfs { mount });
    }
    let inodes = &mut k.shmem.inodes;
    if inodes.len() <= inode as usize {
        inodes.resize_with(inode as usize + 1, || None);
    }
    let slot = &mut inodes[inode as usize];
    match slot {
        Some(i) if i.mount != mount => Err(MmError::ShmemFileOnOtherMount {
            file: inode,
            mount: i.mount,
        }),
        Some(_) => Ok(()),
        None => {
            *slot = Some(Inode {
                mount,
                i_size_pages: 0,
                folios: Vec::new(),
                swap: Vec::new(),
                nr_pages: 0,
                swapped: 0,
                content,
            });
            Ok(())
        }
    }
}

/// unlink of the last name of `inode` (shmem_evict_inode -> shmem_truncate_range): its
/// folios are freed and its swap entries released; the mount's blocks come back.
pub fn shmem_unlink(k: &mut Kernel, ctx: &mut Ctx, inode: u32) -> Result<(), MmError> {
    k.shmem.inode(inode)?;
    let i = k.shmem.inodes[inode as usize].take().expect("checked");
    let mut x = 0;
    while x < i.folios.len() {
        let pfn = i.folios[x];
        if pfn != NIL {
            let order = k.folios.order[pfn as usize] as u32;
            account(k, k.folios.memcg(pfn as usize), order, -(1i64 << order));
            k.folio_free(ctx, pfn);
            x += 1 << order;
            continue;
        }
        if i.swap[x] != NIL {
            swap::shmem_free_swap(k, ctx, SwapEntry::from_raw(i.swap[x]));
        }
        x += 1;
    }
    let alloced = i.nr_pages + i.swapped;
    k.shmem.mounts[i.mount as usize].used_pages -= alloced;
    ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
    Ok(())
}

/// The content of page `sub` of shmem folio `pfn`: its inode's class, keyed by file and index.
pub fn page_content(k: &Kernel, pfn: u32, sub: u32) -> (ContentClass, u64) {
    let (inode, index) = (
        k.folios.owner_mm(pfn as usize),
        k.folios.owner_index(pfn as usize),
    );
    let content = k
        .shmem
        .inodes
        .get(inode as usize)
        .and_then(|i| i.as_ref())
        .map_or(ContentClass::default(), |i| i.content);
    (content, (inode as u64) << 32 | (index + sub) as u64)
}

#[cfg(test)]
mod tests;
