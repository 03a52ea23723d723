//! How much of each LRU list a reclaim pass scans (mm/vmscan.c prepare_scan_control,
//! get_scan_count, calculate_pressure_balance, lru_note_cost), for the classic LRU.
//!
//! Anon is not scanned without swap space (or when the boosted kswapd may not swap). Global
//! reclaim scans anon only when the file LRU plus free memory is below the high watermark
//! (file_is_tiny); both kinds scan file only while the inactive file list is large and not
//! thrashing (cache_trim_mode). Otherwise each type's share follows swappiness and the
//! recent cost of reclaiming it: rotations, and I/O weighted by SWAP_CLUSTER_MAX.

use super::{inactive_is_low_pages, Reclaim, SWAP_CLUSTER_MAX};
use crate::mm::lruvec::Lruvec;
use crate::mm::memcontrol::{page_counter, swap, ROOT_MEMCG};
use crate::mm::page_alloc::Wmark;
use crate::mm::Kernel;

/// MAX_SWAPPINESS
pub const MAX_SWAPPINESS: u64 = 200;
/// vm.swappiness at boot.
pub const DEFAULT_SWAPPINESS: u32 = 60;

/// The four evictable lists, in for_each_evictable_lru order.
pub const INACTIVE_ANON: usize = 0;
pub const ACTIVE_ANON: usize = 1;
pub const INACTIVE_FILE: usize = 2;
pub const ACTIVE_FILE: usize = 3;

const DEACTIVATE_ANON: u8 = 1;
const DEACTIVATE_FILE: u8 = 2;

/// What shrink_folio_list saw of dirty and writeback file folios (struct reclaim_stat),
/// summed over a shrink_node pass (sc->nr).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimStat {
    pub dirty: u64,
    pub unqueued_dirty: u64,
    pub congested: u64,
    pub writeback: u64,
    pub immediate: u64,
    pub taken: u64,
    pub file_taken: u64,
}

/// struct scan_control, the parts the model uses.
#[derive(Debug, Clone)]
pub struct ScanControl {
    /// The node reclaimed (shrink_node's pgdat).
    pub nid: usize,
    pub reclaim: Reclaim,
    pub priority: u32,
    /// Boosted kswapd reclaim neither swaps nor writes.
    pub may_swap: bool,
    may_deactivate: u8,
    cache_trim_mode: bool,
    file_is_tiny: bool,
    anon_cost: u64,
    file_cost: u64,
    pub nr: ReclaimStat,
    /// sc->target_mem_cgroup (the root memcg for global reclaim).
    pub target: u16,
    /// sc->memcg_low_reclaim: reclaim may take from memcgs within their memory.low.
    pub memcg_low_reclaim: bool,
    /// sc->memcg_low_skipped: a memcg was left alone for its memory.low.
    pub memcg_low_skipped: bool,
}

impl ScanControl {
    /// Does reclaim deactivate this type's active list this pass?
    pub fn may_deactivate(&self, file: bool) -> bool {
        self.may_deactivate
            & if file {
                DEACTIVATE_FILE
            } else {
                DEACTIVATE_ANON
            }
            != 0
    }

    /// cgroup_reclaim(sc)
    pub fn cgroup_reclaim(&self) -> bool {
        self.reclaim == Reclaim::Memcg
    }
}

/// The target's list sizes on node `nid`: a memcg's subtree's, or for global reclaim the
/// node's (the root memcg's hierarchical counts).
pub(crate) fn target_sizes(k: &Kernel, target: Option<u16>, nid: usize) -> [u64; 4] {
    let one = |lv: &Lruvec| {
        [
            lv.lru_pages(false, false),
            lv.lru_pages(false, true),
            lv.lru_pages(true, false),
            lv.lru_pages(true, true),
        ]
    };
    // A memcg's lruvec stats are hierarchical: its subtree's lists.
    let root = target.unwrap_or(ROOT_MEMCG);
    k.memcg_tree.subtree(root).fold([0; 4], |mut acc, i| {
        let cg = &k.memcgs[k.memcg_tree.preorder[i] as usize];
        for (a, b) in acc.iter_mut().zip(one(cg.lruvec_of(nid))) {
            *a += b;
        }
        acc
    })
}

/// prepare_scan_control for one shrink_node pass at `priority` (`target` None: global).
pub fn prepare_scan_control(
    k: &Kernel,
    nid: usize,
    target: Option<u16>,
    reclaim: Reclaim,
    priority: u32,
    may_swap: bool,
) -> ScanControl {
    let lv = k.memcgs[target.unwrap_or(ROOT_MEMCG) as usize].lruvec_of(nid);
    let size = target_sizes(k, target, nid);
    // Refaults into activation since the target's last reclaim mean a new workingset is
    // forming: deactivate that type's stale active pages even if its inactive list is not low.
    let refaults = crate::mm::workingset::activations(k, target.unwrap_or(ROOT_MEMCG));
    let mut may_deactivate = 0;
    if refaults[0] != lv.refaults[0]
        || inactive_is_low_pages(size[INACTIVE_ANON], size[ACTIVE_ANON])
    {
        may_deactivate |= DEACTIVATE_ANON;
    }
    if refaults[1] != lv.refaults[1]
        || inactive_is_low_pages(size[INACTIVE_FILE], size[ACTIVE_FILE])
    {
        may_deactivate |= DEACTIVATE_FILE;
    }
    let cache_trim_mode =
        size[INACTIVE_FILE] >> priority > 0 && may_deactivate & DEACTIVATE_FILE == 0;
    let file_is_tiny = target.is_none() && {
        let zone = &k.pgdat[nid].zone;
        let free = zone.nr_free_pages();
        let file = size[INACTIVE_FILE] + size[ACTIVE_FILE];
        file + free <= zone.wmark_pages(Wmark::High)
            && may_deactivate & DEACTIVATE_ANON == 0
            && size[INACTIVE_ANON] >> priority > 0
    };
    ScanControl {
        nid,
        reclaim,
        priority,
        may_swap,
        may_deactivate,
        cache_trim_mode,
        file_is_tiny,
        anon_cost: lv.anon_cost,
        file_cost: lv.file_cost,
        nr: ReclaimStat::default(),
        target: target.unwrap_or(ROOT_MEMCG),
        memcg_low_reclaim: false,
        memcg_low_skipped: false,
    }
}

/// get_scan_count: pages to scan of each list of `memcg`'s lruvec this pass.
pub fn get_scan_count(k: &Kernel, sc: &ScanControl, memcg: u16) -> [u64; 4] {
    enum Balance {
        Equal,
        Fract(u64, u64),
        Anon,
        File,
    }
    let swappiness = k.cfg.swappiness as u64;
    // No swap space (or may not swap), or a memcg that asked for none: file only.
    // can_reclaim_anon_pages: swap space the memcg may use (memory.swap.max), or a lower tier
    // to demote to.
    let no_anon = !sc.may_swap
        || (swap::get_nr_swap_pages(k, memcg) == 0
            && !crate::mm::numa_balancing::can_demote(k, sc.nid));
    let balance = if no_anon || (sc.cgroup_reclaim() && swappiness == 0) {
        Balance::File
    } else if sc.priority == 0 && swappiness > 0 {
        Balance::Equal
    } else if sc.file_is_tiny {
        Balance::Anon
    } else if sc.cache_trim_mode {
        Balance::File
    } else {
        // calculate_pressure_balance: each type's pressure inversely proportional to its
        // cost, at least a third before swappiness.
        let total = sc.anon_cost + sc.file_cost;
        let anon_cost = total + sc.anon_cost;
        let file_cost = total + sc.file_cost;
        let total = anon_cost + file_cost;
        let ap = swappiness * (total + 1) / (anon_cost + 1);
        let fp = (MAX_SWAPPINESS - swappiness) * (total + 1) / (file_cost + 1);
        Balance::Fract(ap, fp)
    };
    let lv = k.memcgs[memcg as usize].lruvec_of(sc.nid);
    let sizes = [
        lv.inactive_anon.nr_pages,
        lv.active_anon.nr_pages,
        lv.inactive_file.nr_pages,
        lv.active_file.nr_pages,
    ];
    let protection = page_counter::protection(&k.memcgs, sc.target, memcg, sc.memcg_low_reclaim);
    let cgroup_size = k.memcgs[memcg as usize].usage_pages.max(protection);
    let mut nr = [0u64; 4];
    for (lru, &size) in sizes.iter().enumerate() {
        let file = lru >= INACTIVE_FILE;
        let scan = apply_proportional_protection(size, protection, cgroup_size) >> sc.priority;
        nr[lru] = match balance {
            Balance::Equal => scan,
            Balance::Fract(ap, fp) => {
                let fraction = if file { fp } else { ap };
                (scan as u128 * fraction as u128 / (ap + fp) as u128) as u64
            }
            Balance::Anon => scan * !file as u64,
            Balance::File => scan * file as u64,
        };
    }
    nr
}

/// apply_proportional_protection: a protected memcg's list is scanned in proportion to how
/// far its usage is above its protection (mem_cgroup_protection), at least SWAP_CLUSTER_MAX,
/// so that pressure rises smoothly as usage crosses it.
fn apply_proportional_protection(size: u64, protection: u64, cgroup_size: u64) -> u64 {
    if protection == 0 {
        return size;
    }
    let scan = size - (size as u128 * protection as u128 / (cgroup_size as u128 + 1)) as u64;
    scan.max(SWAP_CLUSTER_MAX)
}

/// lru_note_cost: reclaiming `file` pages of `memcg` on node `nid` cost `nr_io` pages of I/O
/// and `nr_rotated` pages put back; recorded in the memcg's lruvec there and every ancestor's
/// up to the root, halving both costs once they exceed a quarter of the lruvec's
/// (hierarchical) pages.
pub fn lru_note_cost(
    k: &mut Kernel,
    memcg: u16,
    nid: usize,
    file: bool,
    nr_io: u64,
    nr_rotated: u64,
) {
    let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
    if cost == 0 {
        return;
    }
    let mut level = Some(memcg);
    while let Some(id) = level {
        // The lruvec's stats count its subtree (the root's: the whole node).
        let lrusize: u64 = k
            .memcg_tree
            .subtree(id)
            .map(|i| {
                k.memcgs[k.memcg_tree.preorder[i] as usize]
                    .lruvec_of(nid)
                    .nr_pages()
            })
            .sum();
        let cg = &mut k.memcgs[id as usize];
        let lv = cg.lruvec_mut(nid);
        if file {
            lv.file_cost += cost;
        } else {
            lv.anon_cost += cost;
        }
        if lv.file_cost + lv.anon_cost > lrusize / 4 {
            lv.file_cost /= 2;
            lv.anon_cost /= 2;
        }
        level = (id != ROOT_MEMCG).then_some(cg.parent);
    }
}
