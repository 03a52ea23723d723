//! MGLRU's aging (mm/vmscan.c "the aging" and "rmap/PT walk feedback"): try_to_inc_max_seq
//! walks the page tables of the memcg's mms (walk_mm), clearing accessed bits and moving the
//! folios found young to the youngest generation, then opens a new generation
//! (inc_max_seq), first retiring the oldest one when there are MAX_NR_GENS (inc_min_seq).
//! lru_gen_look_around does the same around a young PTE that eviction's rmap walk met.
//!
//! Simplified: a folio found young is moved to its new generation's list at once (the kernel
//! only updates its generation bits and lets sort_folio move it when eviction reaches it);
//! every mm of the memcg with enough pages is walked (no Bloom filter of PMDs, no per-node
//! bitmap of where the mm ran); a PMD-mapped THP is one entry.

use super::{
    clear_refs, folio_lru_gen, lru_gen_from_seq, LruGen, LRU_GEN_ANON, LRU_GEN_FILE, MAX_NR_GENS,
    MIN_LRU_BATCH,
};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::mm::folio::{flags, FolioTable};
use crate::mm::lruvec::Lruvec;
use crate::mm::Kernel;

/// folio_update_gen: a young folio goes to generation `gen` with its refs cleared; one
/// isolated by reclaim (on no generation) gets PG_referenced instead. Returns its old one.
pub fn folio_update_gen(
    lv: &mut Lruvec,
    f: &mut FolioTable,
    pfn: u32,
    gen: usize,
) -> Option<usize> {
    let Some(old) = folio_lru_gen(f, pfn) else {
        f.set(pfn, flags::REFERENCED);
        return None;
    };
    clear_refs(f, pfn);
    if old != gen {
        lv.lrugen.move_folio(f, pfn, gen, true);
    }
    Some(old)
}

/// folio_inc_gen: a folio of the oldest generation moves one up (protected by its refs, or
/// waiting for writeback: `reclaiming` sets PG_reclaim), refs cleared. Returns the new gen.
pub fn folio_inc_gen(
    lg: &mut LruGen,
    f: &mut FolioTable,
    pfn: u32,
    reclaiming: bool,
    head: bool,
) -> usize {
    let ty = f.test(pfn, flags::FILE) as usize;
    let old_gen = lru_gen_from_seq(lg.min_seq[ty]);
    let gen = folio_lru_gen(f, pfn).expect("a folio on a generation");
    if gen != old_gen {
        // Promoted by the aging meanwhile.
        return gen;
    }
    let new_gen = (old_gen + 1) % MAX_NR_GENS as usize;
    clear_refs(f, pfn);
    if reclaiming {
        f.set(pfn, flags::RECLAIM);
    }
    lg.move_folio(f, pfn, new_gen, head);
    new_gen
}

/// reset_ctrl_pos with carryover (NR_HIST_GENS == 1): the generation leaving the oldest end
/// folds its refaulted/evicted/protected counts into the averages and clears them.
pub fn reset_ctrl_pos(lg: &mut LruGen, ty: usize) {
    for tier in 0..super::MAX_NR_TIERS {
        lg.avg_refaulted[ty][tier] = (lg.avg_refaulted[ty][tier] + lg.refaulted[ty][tier]) / 2;
        let mut total = lg.avg_total[ty][tier] + lg.evicted[ty][tier];
        if tier > 0 {
            total += lg.protected[ty][tier - 1];
            lg.protected[ty][tier - 1] = 0;
        }
        lg.avg_total[ty][tier] = total / 2;
        lg.refaulted[ty][tier] = 0;
        lg.evicted[ty][tier] = 0;
    }
}

/// inc_min_seq: retire the oldest generation of `ty`, its folios one generation up (anon is
/// left in place when it cannot be swapped: it becomes part of the youngest).
fn inc_min_seq(lg: &mut LruGen, f: &mut FolioTable, ty: usize, can_swap: bool) {
    if ty == LRU_GEN_FILE || can_swap {
        let old_gen = lru_gen_from_seq(lg.min_seq[ty]);
        while let Some(pfn) = lg.folios[old_gen][ty].tail() {
            folio_inc_gen(lg, f, pfn, false, false);
        }
    }
    reset_ctrl_pos(lg, ty);
    lg.min_seq[ty] += 1;
}

/// try_to_inc_min_seq: skip empty oldest generations (anon's only when it can be swapped);
/// anon may not lag behind file. True if a min_seq moved.
pub fn try_to_inc_min_seq(lg: &mut LruGen, can_swap: bool) -> bool {
    let mut min_seq = lg.min_seq;
    for (ty, seq) in min_seq.iter_mut().enumerate().skip(!can_swap as usize) {
        while *seq + super::MIN_NR_GENS <= lg.max_seq {
            if lg.folios[lru_gen_from_seq(*seq)][ty].nr_folios > 0 {
                break;
            }
            *seq += 1;
        }
    }
    if can_swap {
        // Anon may not get ahead of file; but never back past its own oldest generation
        // (which inc_min_seq may have moved on while it could not swap).
        min_seq[LRU_GEN_ANON] = min_seq[LRU_GEN_ANON]
            .min(min_seq[LRU_GEN_FILE])
            .max(lg.min_seq[LRU_GEN_ANON]);
        min_seq[LRU_GEN_FILE] = min_seq[LRU_GEN_ANON].max(lg.min_seq[LRU_GEN_FILE]);
    }
    let mut success = false;
    for (ty, &seq) in min_seq.iter().enumerate().skip(!can_swap as usize) {
        if seq != lg.min_seq[ty] {
            reset_ctrl_pos(lg, ty);
            lg.min_seq[ty] = seq;
            success = true;
        }
    }
    success
}

/// inc_max_seq: open a new youngest generation, retiring the oldest of a type that has
/// MAX_NR_GENS already.
fn inc_max_seq(lg: &mut LruGen, f: &mut FolioTable, can_swap: bool, now_ns: u64) {
    for ty in [LRU_GEN_FILE, LRU_GEN_ANON] {
        if lg.nr_gens(ty) == MAX_NR_GENS {
            inc_min_seq(lg, f, ty, can_swap);
        }
    }
    lg.timestamps_ns[lru_gen_from_seq(lg.max_seq + 1)] = now_ns;
    lg.max_seq += 1;
    lg.nr_aging += 1;
}

/// try_to_inc_max_seq on `memcg`'s lruvec on node `nid`: walk its mms' page tables, then
/// inc_max_seq. False if another aging got there first (max_seq moved on).
pub fn try_to_inc_max_seq(
    k: &mut Kernel,
    ctx: &mut Ctx,
    memcg: u16,
    nid: usize,
    max_seq: u64,
    can_swap: bool,
) -> bool {
    if max_seq != k.memcgs[memcg as usize].lruvec_of(nid).lrugen.max_seq {
        return false;
    }
    walk_mm(k, ctx, memcg, nid, max_seq, can_swap);
    let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
    inc_max_seq(&mut lv.lrugen, &mut k.folios, can_swap, ctx.now_ns);
    lv.lru_lock.hold(ctx, k.cost.lru_move_ns);
    true
}

/// walk_mm over every mm of `memcg` (its mm_list): each present PTE of the VMAs it may
/// age (anonymous ones only when it can swap) whose folio is young, of this memcg and on
/// node `nid` (get_pfn_folio): accessed bit cleared (the Access ops' OLD kind notes it), folio to generation
/// `max_seq` (folio_update_gen). should_skip_mm: mms with fewer than MIN_LRU_BATCH pages of
/// the types aged are skipped. Cost: lru_gen_walk_pte_ns per entry looked at.
fn walk_mm(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, nid: usize, max_seq: u64, can_swap: bool) {
    let new_gen = lru_gen_from_seq(max_seq);
    let mut young = Vec::new();
    let mut entries = 0u64;
    for mm_id in 0..k.mms.len() {
        let m = &k.mms[mm_id];
        let size = if can_swap { m.rss_anon } else { 0 } + m.rss_file;
        if m.memcg != memcg || size < MIN_LRU_BATCH {
            continue;
        }
        for vma_id in 0..m.vmas.len() {
            let m = &k.mms[mm_id];
            let Some(vma) = m.vmas[vma_id].as_ref() else {
                continue;
            };
            let anon = m.vma_files.get(vma_id).is_none_or(|f| f.is_none());
            if anon && !can_swap {
                continue;
            }
            let f = &mut k.folios;
            let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
            let mut index = 0usize;
            while index < vma.ptes.len() {
                let pte = vma.ptes[index];
                index += 1;
                if !pte.is_present() {
                    continue;
                }
                entries += 1;
                let head = f.head_of(pte.pfn());
                if f.test(head, flags::PMD_MAPPED) {
                    // One PMD entry for the whole folio.
                    index += (f.nr_pages(head) - 1 - (pte.pfn() - head)) as usize;
                }
                if !f.test(head, flags::YOUNG)
                    || f.memcg(head as usize) != memcg
                    || k.nodes.nid(head) != nid
                    || (!f.test(head, flags::FILE) && !can_swap)
                {
                    continue;
                }
                f.clear(head, flags::YOUNG);
                young.push(head);
                folio_update_gen(lv, f, head, new_gen);
            }
            for pfn in young.drain(..) {
                crate::mm::access::young_cleared(k, pfn);
            }
        }
    }
    k.memcgs[memcg as usize].lruvec_mut(nid).lrugen.nr_walked_ptes += entries;
    ctx.spend(CpuCost::LruGenWalk, entries * k.cost.lru_gen_walk_pte_ns);
}

/// lru_gen_look_around: eviction's rmap walk found the isolated anonymous folio `pfn`
/// young; the PTEs around it (up to MIN_LRU_BATCH within its PMD) are scanned too, and
/// their young folios promoted to the youngest generation: by kswapd through its walk state
/// (folio_update_gen), by other reclaimers through folio_activate (counted as pgactivate).
pub fn lru_gen_look_around(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let f = &k.folios;
    if f.test(pfn, flags::FILE) {
        // A page-cache folio's PTEs are found through i_mmap; not modelled.
        return;
    }
    let (mm, vma, index) = (
        f.owner_mm(pfn as usize) as usize,
        f.owner_vma(pfn as usize) as usize,
        f.owner_index(pfn as usize) as u64,
    );
    let Some(Some(v)) = k.mms.get(mm).and_then(|m| m.vmas.get(vma)) else {
        return;
    };
    let memcg = f.memcg(pfn as usize);
    let nid = k.nodes.nid(pfn);
    let nr = v.ptes.len() as u64;
    if index >= nr {
        return;
    }
    let pmd_pages = 1u64 << crate::scenario::PMD_ORDER;
    let mut start = index & !(pmd_pages - 1);
    let mut end = (start + pmd_pages).min(nr);
    if end - start > MIN_LRU_BATCH {
        if index - start < MIN_LRU_BATCH / 2 {
            end = start + MIN_LRU_BATCH;
        } else if end - index < MIN_LRU_BATCH / 2 {
            start = end - MIN_LRU_BATCH;
        } else {
            start = index - MIN_LRU_BATCH / 2;
            end = index + MIN_LRU_BATCH / 2;
        }
    }
    let kswapd = k.kthreads.current(ctx.cpu).is_some_and(|t| t.is_kswapd());
    let mut young = Vec::new();
    for i in start..end {
        let pte = v.ptes[i as usize];
        if !pte.is_present() {
            continue;
        }
        let head = f.head_of(pte.pfn());
        if head == pfn
            || !f.test(head, flags::YOUNG)
            || f.memcg(head as usize) != memcg
            || k.nodes.nid(head) != nid
            || young.contains(&head)
        {
            continue;
        }
        young.push(head);
    }
    let scanned = end - start;
    let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
    lv.lrugen.nr_look_around_ptes += scanned;
    let new_gen = lru_gen_from_seq(lv.lrugen.max_seq);
    let mut activated = 0u64;
    for &head in &young {
        let f = &mut k.folios;
        f.clear(head, flags::YOUNG);
        let lv = k.memcgs[memcg as usize].lruvec_mut(nid);
        if kswapd {
            folio_update_gen(lv, f, head, new_gen);
            continue;
        }
        match folio_lru_gen(f, head) {
            None => f.set(head, flags::REFERENCED),
            Some(old) if old != new_gen => {
                // folio_activate -> lru_activate: to the youngest generation.
                lv.lruvec_del_folio(f, head);
                f.set(head, flags::ACTIVE);
                lv.lruvec_add_folio(f, head);
                activated += f.nr_pages(head) as u64;
            }
            Some(_) => {}
        }
    }
    if activated > 0 {
        super::count_activate(k, memcg as usize, activated);
    }
    for head in young {
        crate::mm::access::young_cleared(k, head);
    }
    ctx.spend(CpuCost::LruGenWalk, scanned * k.cost.lru_gen_walk_pte_ns);
}
