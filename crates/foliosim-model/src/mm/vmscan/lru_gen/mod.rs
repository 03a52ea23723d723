//! The multi-generational LRU (MGLRU, CONFIG_LRU_GEN; mm/vmscan.c's lru_gen code and the
//! lru_gen_* helpers of include/linux/mm_inline.h as before 6.14's workingset-protection and
//! type-selection rework, for every kernel profile: docs/mglru.md lists what 6.14+ changes),
//! selected by `[sysfs.lru_gen] enabled = true` (/sys/kernel/mm/lru_gen/enabled).
//!
//! Each lruvec keeps up to MAX_NR_GENS generations per type (anon, file), numbered by
//! sequence: anon and file each have their oldest `min_seq`, both share the youngest
//! `max_seq`. A folio's generation is `seq % MAX_NR_GENS`, stored in its `lru_gen` byte with
//! its LRU_REFS (accesses through file descriptors). Eviction (evict.rs) takes the oldest
//! generation of the type the PID controller picks; aging (aging.rs) walks the page tables
//! of the memcg's mms, moving folios whose accessed bit is set to the youngest generation,
//! then opens a new generation.
//!
//! The model has one zone per node, so the kernel's per-zone lists are one list per
//! (generation, type); NR_HIST_GENS is 1 (the kernel's default without CONFIG_LRU_GEN_STATS).

pub mod aging;
pub mod evict;
pub mod refault;

use super::lru_policy::{LruPolicy, LruPolicyEntry};
use super::scan_count::ScanControl;
use super::ShrinkCount;
use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::lruvec::{LruList, Lruvec};
use crate::mm::vmstat::VmEvent;
use crate::mm::workingset::Shadow;
use crate::mm::Kernel;

/// MIN_NR_GENS: eviction stops at two generations per type (the two youngest are "active").
pub const MIN_NR_GENS: u64 = 2;
/// MAX_NR_GENS (include/linux/mmzone.h).
pub const MAX_NR_GENS: u64 = 4;
/// MAX_NR_TIERS: tiers 0..3 by accesses through file descriptors.
pub const MAX_NR_TIERS: usize = 4;
/// LRU_REFS_WIDTH: bits of folio->flags counting accesses beyond PG_referenced.
pub const LRU_REFS_WIDTH: u32 = 2;
/// MIN_LRU_BATCH (BITS_PER_LONG) and MAX_LRU_BATCH.
pub const MIN_LRU_BATCH: u64 = 64;
pub const MAX_LRU_BATCH: u64 = MIN_LRU_BATCH * 64;
pub const LRU_GEN_ANON: usize = 0;
pub const LRU_GEN_FILE: usize = 1;

const GEN_MASK: u8 = 0b111;
const REFS_SHIFT: u32 = 3;
const REFS_MASK: u8 = ((1 << LRU_REFS_WIDTH) - 1) << REFS_SHIFT;

/// struct lru_gen_folio: the generations of one lruvec and the PID controller's history.
#[derive(Debug, Clone)]
pub struct LruGen {
    /// lrugen->enabled: folios added now go onto generations.
    pub enabled: bool,
    pub max_seq: u64,
    pub min_seq: [u64; 2],
    /// When each generation was opened (inc_max_seq), for min_ttl_ms.
    pub timestamps_ns: [u64; MAX_NR_GENS as usize],
    /// lrugen->folios[gen][type] (one zone).
    pub folios: [[LruList; 2]; MAX_NR_GENS as usize],
    /// The PID controller's I term: averages over the generations evicted before.
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    /// Its P term, for the generation being evicted.
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    pub protected: [[u64; MAX_NR_TIERS - 1]; 2],
    /// Debug figures (what /sys/kernel/debug/lru_gen would show, summed): generations opened
    /// by aging, and PTEs the walks and look-arounds examined.
    pub nr_aging: u64,
    pub nr_walked_ptes: u64,
    pub nr_look_around_ptes: u64,
}

impl Default for LruGen {
    fn default() -> Self {
        // lru_gen_init_lruvec: max_seq = MIN_NR_GENS + 1, min_seq 0.
        LruGen {
            enabled: false,
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0; 2],
            timestamps_ns: [0; MAX_NR_GENS as usize],
            folios: Default::default(),
            avg_refaulted: [[0; MAX_NR_TIERS]; 2],
            avg_total: [[0; MAX_NR_TIERS]; 2],
            refaulted: [[0; MAX_NR_TIERS]; 2],
            evicted: [[0; MAX_NR_TIERS]; 2],
            protected: [[0; MAX_NR_TIERS - 1]; 2],
            nr_aging: 0,
            nr_walked_ptes: 0,
            nr_look_around_ptes: 0,
        }
    }
}

/// lru_gen_from_seq
#[inline]
pub fn lru_gen_from_seq(seq: u64) -> usize {
    (seq % MAX_NR_GENS) as usize
}

/// folio_lru_gen: the folio's generation, None when it is on none.
#[inline]
pub fn folio_lru_gen(f: &FolioTable, pfn: u32) -> Option<usize> {
    let g = f.lru_gen(pfn as usize) & GEN_MASK;
    (g != 0).then(|| (g - 1) as usize)
}

fn set_folio_gen(f: &mut FolioTable, pfn: u32, gen: Option<usize>) {
    let b = f.lru_gen_mut(pfn as usize);
    *b = (*b & !GEN_MASK) | gen.map_or(0, |g| g as u8 + 1);
}

/// The LRU_REFS bits alone.
fn refs_bits(f: &FolioTable, pfn: u32) -> u32 {
    ((f.lru_gen(pfn as usize) & REFS_MASK) >> REFS_SHIFT) as u32
}

fn set_refs_bits(f: &mut FolioTable, pfn: u32, refs: u32) {
    let b = f.lru_gen_mut(pfn as usize);
    *b = (*b & !REFS_MASK) | ((refs as u8) << REFS_SHIFT & REFS_MASK);
}

/// Clear LRU_REFS_MASK | LRU_REFS_FLAGS (PG_referenced, PG_workingset).
fn clear_refs(f: &mut FolioTable, pfn: u32) {
    set_refs_bits(f, pfn, 0);
    f.clear(pfn, flags::REFERENCED | flags::WORKINGSET);
}

/// folio_lru_refs: accesses beyond PG_referenced, plus one for PG_workingset.
pub fn folio_lru_refs(f: &FolioTable, pfn: u32) -> u32 {
    refs_bits(f, pfn) + f.test(pfn, flags::WORKINGSET) as u32
}

/// lru_tier_from_refs: order_base_2(refs + 1).
pub fn lru_tier_from_refs(refs: u32) -> usize {
    (refs + 1).next_power_of_two().trailing_zeros() as usize
}

/// lru_gen_inc_refs (folio_mark_accessed under MGLRU): the first access sets PG_referenced,
/// later ones count in LRU_REFS until it saturates, then PG_workingset.
pub fn lru_gen_inc_refs(f: &mut FolioTable, pfn: u32) {
    if !f.test(pfn, flags::REFERENCED) {
        set_refs_bits(f, pfn, 0);
        f.set(pfn, flags::REFERENCED);
        return;
    }
    let refs = refs_bits(f, pfn);
    if refs == (1 << LRU_REFS_WIDTH) - 1 {
        f.set(pfn, flags::WORKINGSET);
    } else {
        set_refs_bits(f, pfn, refs + 1);
    }
}

impl LruGen {
    /// get_nr_gens
    pub fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq - self.min_seq[ty] + 1
    }

    /// lru_gen_is_active: the two youngest generations count as active (NR_ACTIVE_*).
    pub fn is_active(&self, gen: usize) -> bool {
        gen == lru_gen_from_seq(self.max_seq) || gen == lru_gen_from_seq(self.max_seq - 1)
    }

    /// Pages of `ty` in generation `gen`.
    pub fn gen_pages(&self, gen: usize, ty: usize) -> u64 {
        self.folios[gen][ty].nr_pages
    }

    /// Pages on every generation.
    pub fn nr_pages(&self) -> u64 {
        self.folios.iter().flatten().map(|l| l.nr_pages).sum()
    }

    /// NR_{IN,}ACTIVE_{ANON,FILE} as lru_gen_update_size keeps them.
    pub fn lru_pages(&self, file: bool, active: bool) -> u64 {
        (0..MAX_NR_GENS as usize)
            .filter(|&g| self.is_active(g) == active)
            .map(|g| self.folios[g][file as usize].nr_pages)
            .sum()
    }

    /// lru_gen_add_folio: onto the generation its state calls for (see the kernel's four
    /// cases): active (faulted in, or activated by reclaim) to the youngest; anon not in the
    /// swap cache, or dirty / under writeback with PG_reclaim, to the second youngest; when
    /// `reclaiming` (folio_rotate_reclaimable) the oldest; else the second oldest (readahead).
    pub fn add_folio(&mut self, f: &mut FolioTable, pfn: u32, reclaiming: bool) {
        debug_assert!(folio_lru_gen(f, pfn).is_none());
        let ty = f.test(pfn, flags::FILE) as usize;
        let seq = if f.test(pfn, flags::ACTIVE) {
            self.max_seq
        } else if (ty == LRU_GEN_ANON && !f.test(pfn, flags::SWAPCACHE))
            || (f.test(pfn, flags::RECLAIM) && f.test(pfn, flags::DIRTY | flags::WRITEBACK))
        {
            self.max_seq - 1
        } else if reclaiming || self.min_seq[ty] + MIN_NR_GENS >= self.max_seq {
            self.min_seq[ty]
        } else {
            self.min_seq[ty] + 1
        };
        let gen = lru_gen_from_seq(seq);
        set_folio_gen(f, pfn, Some(gen));
        f.clear(pfn, flags::ACTIVE);
        let list = &mut self.folios[gen][ty];
        if reclaiming {
            list.add_tail(f, pfn);
        } else {
            list.add_head(f, pfn);
        }
    }

    /// lru_gen_del_folio: off its generation; outside reclaim, PG_active records that it was
    /// in an active one (for folio_migrate_flags). Returns false if it was on none.
    pub fn del_folio(&mut self, f: &mut FolioTable, pfn: u32, reclaiming: bool) -> bool {
        let Some(gen) = folio_lru_gen(f, pfn) else {
            return false;
        };
        let ty = f.test(pfn, flags::FILE) as usize;
        self.folios[gen][ty].remove(f, pfn);
        set_folio_gen(f, pfn, None);
        if !reclaiming && self.is_active(gen) {
            f.set(pfn, flags::ACTIVE);
        }
        true
    }

    /// Move a folio on a generation list to generation `gen` (head: youngest end of it, else
    /// the tail, the end eviction takes next), keeping its other bits.
    pub fn move_folio(&mut self, f: &mut FolioTable, pfn: u32, gen: usize, head: bool) {
        let old = folio_lru_gen(f, pfn).expect("a folio on a generation");
        let ty = f.test(pfn, flags::FILE) as usize;
        self.folios[old][ty].remove(f, pfn);
        set_folio_gen(f, pfn, Some(gen));
        let list = &mut self.folios[gen][ty];
        if head {
            list.add_head(f, pfn);
        } else {
            list.add_tail(f, pfn);
        }
    }

    /// Every folio on a generation is between min_seq and max_seq of its type, and the
    /// numbers of generations are within [MIN_NR_GENS, MAX_NR_GENS] (seq_is_valid).
    pub fn check(&self) -> Result<(), String> {
        for ty in 0..2 {
            let n = self.nr_gens(ty);
            if !(MIN_NR_GENS..=MAX_NR_GENS).contains(&n) {
                return Err(format!(
                    "lru_gen type {ty}: {n} generations (min_seq {}, max_seq {})",
                    self.min_seq[ty], self.max_seq
                ));
            }
            for gen in 0..MAX_NR_GENS as usize {
                let live = (self.min_seq[ty]..=self.max_seq).any(|s| lru_gen_from_seq(s) == gen);
                if !live && self.folios[gen][ty].nr_folios > 0 {
                    return Err(format!(
                        "lru_gen type {ty}: generation {gen} holds {} folios outside min_seq {} ..= max_seq {}",
                        self.folios[gen][ty].nr_folios, self.min_seq[ty], self.max_seq
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The registry's row (vmscan.rs `registry!`).
pub const ENTRY: LruPolicyEntry = LruPolicyEntry {
    name: "mglru",
    doc: "multi-gen LRU: generations aged by page-table walks (needs sysfs.lru_gen.enabled)",
    lru_gen: true,
    policy: &LruGenPolicy,
};

/// The MGLRU reclaim policy.
pub struct LruGenPolicy;

impl LruPolicy for LruGenPolicy {
    fn name(&self) -> &'static str {
        "mglru"
    }

    fn shrink_lruvec(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        memcg: u16,
        nr_to_reclaim: u64,
        sc: &mut ScanControl,
    ) -> ShrinkCount {
        evict::lru_gen_shrink_lruvec(k, ctx, memcg, nr_to_reclaim, sc)
    }

    fn age_node(&self, k: &mut Kernel, ctx: &mut Ctx, nid: usize) {
        evict::lru_gen_age_node(k, ctx, nid);
    }

    fn folio_check_references(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        pfn: u32,
    ) -> super::FolioReferences {
        // folio_referenced -> lru_gen_look_around on a young PTE: the folio (isolated, so
        // PG_referenced) and its young neighbours (to the youngest generation).
        let young = k.folios.test(pfn, flags::YOUNG);
        k.folios.clear(pfn, flags::YOUNG);
        if !young {
            return super::FolioReferences::Reclaim;
        }
        aging::lru_gen_look_around(k, ctx, pfn);
        lru_gen_set_refs(&mut k.folios, pfn)
    }

    fn file_check_references(
        &self,
        k: &mut Kernel,
        ctx: &mut Ctx,
        pfn: u32,
    ) -> super::file::FileRef {
        let referenced_ptes = crate::mm::filemap::rmap::folio_referenced_file(k, ctx, pfn);
        if referenced_ptes == 0 {
            return super::file::FileRef::Reclaim;
        }
        match lru_gen_set_refs(&mut k.folios, pfn) {
            super::FolioReferences::Activate => super::file::FileRef::Activate,
            _ => super::file::FileRef::Keep,
        }
    }

    fn folio_mark_accessed(&self, k: &mut Kernel, _ctx: &mut Ctx, pfn: u32) {
        lru_gen_inc_refs(&mut k.folios, pfn);
    }

    /// lru_gen_eviction: the folio's own lruvec, whatever the reclaim target.
    fn workingset_eviction(&self, k: &mut Kernel, pfn: u32, _target: u16) -> Option<Shadow> {
        Some(refault::lru_gen_eviction(k, pfn))
    }

    fn workingset_refault(&self, k: &mut Kernel, pfn: u32, shadow: Shadow) {
        refault::lru_gen_refault(k, pfn, shadow);
    }
}

/// lru_gen_set_refs (folio_check_references under MGLRU, young PTEs found): the first time
/// PG_referenced and another trip; once referenced or in the workingset, activate.
fn lru_gen_set_refs(f: &mut FolioTable, pfn: u32) -> super::FolioReferences {
    if !f.test(pfn, flags::REFERENCED) && !f.test(pfn, flags::WORKINGSET) {
        set_refs_bits(f, pfn, 0);
        f.set(pfn, flags::REFERENCED);
        return super::FolioReferences::Keep;
    }
    f.clear(pfn, flags::REFERENCED);
    f.set(pfn, flags::WORKINGSET);
    super::FolioReferences::Activate
}

/// The lru_gen debug figures over every lruvec, for reports: (generations opened by aging,
/// PTEs walked, PTEs looked around).
pub fn debug_totals(k: &Kernel) -> (u64, u64, u64) {
    k.memcgs
        .iter()
        .flat_map(|cg| cg.lruvecs())
        .fold((0, 0, 0), |(a, w, l), lv| {
            (
                a + lv.lrugen.nr_aging,
                w + lv.lrugen.nr_walked_ptes,
                l + lv.lrugen.nr_look_around_ptes,
            )
        })
}

/// Count a pgactivate as lru_activate does (folio_activate from look-around).
pub(crate) fn count_activate(k: &mut Kernel, memcg: usize, nr: u64) {
    k.memcgs[memcg].count(VmEvent::Pgactivate, nr);
    k.vmstat.count(VmEvent::Pgactivate, nr);
}

/// Is the lruvec on generations (so Lruvec's list operations go to them)?
pub fn enabled(lv: &Lruvec) -> bool {
    lv.lrugen.enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folio(f: &mut FolioTable, pfn: u32, flag: flags::Flags) {
        f.init(pfn, 0, 0, (0, 0, 0));
        f.set(pfn, flag);
    }

    #[test]
    fn lru_gen_add_folio_places_by_the_kernels_four_cases() {
        let mut f = FolioTable::new(8);
        let mut lg = LruGen {
            enabled: true,
            ..Default::default()
        };
        // max_seq 3, min_seq 0: faulted (active) -> 3, anon -> 2, readahead file -> 1,
        // rotated file -> 0.
        folio(&mut f, 0, flags::ACTIVE | flags::FILE);
        folio(&mut f, 1, 0);
        folio(&mut f, 2, flags::FILE);
        folio(&mut f, 3, flags::FILE);
        lg.add_folio(&mut f, 0, false);
        lg.add_folio(&mut f, 1, false);
        lg.add_folio(&mut f, 2, false);
        lg.add_folio(&mut f, 3, true);
        assert_eq!(folio_lru_gen(&f, 0), Some(3));
        assert!(!f.test(0, flags::ACTIVE));
        assert_eq!(folio_lru_gen(&f, 1), Some(2));
        assert_eq!(folio_lru_gen(&f, 2), Some(1));
        assert_eq!(folio_lru_gen(&f, 3), Some(0));
        // The two youngest count as active.
        assert_eq!(lg.lru_pages(true, true), 1);
        assert_eq!(lg.lru_pages(false, true), 1);
        assert_eq!(lg.lru_pages(true, false), 2);
        lg.check().unwrap();
        // Deleting outside reclaim marks a folio of an active generation PG_active.
        assert!(lg.del_folio(&mut f, 0, false));
        assert!(f.test(0, flags::ACTIVE) && folio_lru_gen(&f, 0).is_none());
        assert!(lg.del_folio(&mut f, 2, false));
        assert!(!f.test(2, flags::ACTIVE));
    }

    #[test]
    fn refs_climb_tiers_then_saturate_into_workingset() {
        let mut f = FolioTable::new(1);
        folio(&mut f, 0, flags::FILE);
        let tiers: Vec<usize> = (0..6)
            .map(|_| {
                lru_gen_inc_refs(&mut f, 0);
                lru_tier_from_refs(folio_lru_refs(&f, 0))
            })
            .collect();
        // PG_referenced, then refs 1, 2, 3, then PG_workingset (refs 4 = BIT(LRU_REFS_WIDTH)).
        assert_eq!(tiers, vec![0, 1, 2, 2, 3, 3]);
        assert_eq!(folio_lru_refs(&f, 0), 1 << LRU_REFS_WIDTH);
    }
}
