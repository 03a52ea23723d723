//! MGLRU's refault detection (mm/workingset.c's lru_gen_eviction / lru_gen_test_recent /
//! lru_gen_refault, as before 6.14's rework, like the rest of this model: docs/mglru.md). The
//! shadow holds the folio's memcg, a token (its type's min_seq at eviction, and its refs
//! beyond the first) and whether it had any refs. A refault is recent while that min_seq has
//! not moved on (the generation it left is still the oldest): it counts in `refaulted` for its
//! tier, which the PID controller weighs against `evicted`, and as an activation; one that
//! refaults in a page fault, or had its refs near the top, gets all LRU_REFS bits and
//! PG_workingset (a restore: the 6.9 "fix underprotected page cache" rule).

use super::{folio_lru_refs, lru_tier_from_refs, set_refs_bits, LRU_REFS_WIDTH};
use crate::mm::folio::flags;
use crate::mm::workingset::{count, events, Shadow};
use crate::mm::Kernel;

/// lru_gen_eviction: the shadow of the folio at `pfn` (evicted from its own memcg's lruvec on
/// its node).
pub fn lru_gen_eviction(k: &mut Kernel, pfn: u32) -> Shadow {
    let nid = k.nodes.nid(pfn);
    let f = &k.folios;
    let ty = f.test(pfn, flags::FILE) as usize;
    let memcg = f.memcg(pfn as usize);
    let refs = folio_lru_refs(f, pfn);
    let min_seq = k.memcgs[memcg as usize].lruvec_of(nid).lrugen.min_seq[ty];
    let token = min_seq << LRU_REFS_WIDTH | refs.saturating_sub(1) as u64;
    k.workingset.pack_token(memcg, nid, token, refs != 0)
}

/// lru_gen_refault: the new folio at `pfn` took a slot that held `shadow`. Only a refault into
/// the lruvec the folio left counts (same memcg, same node).
pub fn lru_gen_refault(k: &mut Kernel, pfn: u32, shadow: Shadow) {
    let crate::mm::workingset::Unpacked {
        memcg,
        nid,
        token,
        workingset,
    } = k.workingset.unpack_token(shadow);
    if memcg != k.folios.memcg(pfn as usize) || k.nodes.nid(pfn) != nid {
        return;
    }
    let file = k.folios.test(pfn, flags::FILE);
    let delta = k.folios.nr_pages(pfn) as u64;
    let [refault, activate, restore] = events(file);
    count(k, memcg, refault, delta);
    let mask = k.workingset.token_mask() >> LRU_REFS_WIDTH;
    let lg = &mut k.memcgs[memcg as usize].lruvec_mut(nid).lrugen;
    // lru_gen_test_recent
    if token >> LRU_REFS_WIDTH != lg.min_seq[file as usize] & mask {
        return;
    }
    let max_refs = (1 << LRU_REFS_WIDTH) - 1;
    let refs = (token & max_refs as u64) as u32 + workingset as u32;
    lg.refaulted[file as usize][lru_tier_from_refs(refs)] += delta;
    count(k, memcg, activate, delta);
    // Stalls: a page-table access pushed out by hotter pages, or a folio sort_folio would
    // have protected.
    if k.in_lru_fault || refs >= max_refs {
        set_refs_bits(&mut k.folios, pfn, max_refs);
        k.folios.set(pfn, flags::WORKINGSET);
        count(k, memcg, restore, delta);
    }
}
