//! Refault detection (mm/workingset.c). Reclaim leaves a shadow entry in the cache slot of a
//! folio it evicts (the swap cache for anon, the page cache for file). For the classic LRU
//! (here) it is stamped with the age of the reclaim target's lruvec (`nonresident_age`:
//! evictions and activations so far). When the page is read back into that slot, the refault
//! distance (how far the lruvec aged meanwhile) is compared with the workingset it competes
//! with: a page that would have stayed resident had all that memory been its own comes back
//! active (workingset_activate_*), and one that was active before its eviction also gets
//! PG_workingset back (workingset_restore_*). Activations during reclaim and by
//! folio_mark_accessed age the lruvec too, as do refault activations. MGLRU's shadows carry
//! a generation token instead (vmscan/lru_gen/refault.rs); the slots and the packing are
//! shared.
//!
//! Not modelled: the shadow-node shrinker (workingset_nodereclaim: shadows live until their
//! slot is reused or freed), and zswap writeback's swap-cache read (it does not go through the
//! swap cache here).

use super::folio::{flags, NIL};
use super::memcontrol::swap::get_nr_swap_pages;
use super::memcontrol::ROOT_MEMCG;
use super::vmscan::scan_count::{
    lru_note_cost, target_sizes, ACTIVE_ANON, ACTIVE_FILE, INACTIVE_ANON, INACTIVE_FILE,
};
use super::vmstat::VmEvent;
use super::Kernel;

/// A cache slot (swap cache or page cache) holds a folio's pfn, NIL, or a shadow: the
/// kernel's xarray value entry, here a u32 with this bit set and bit 0 clear (never NIL).
const SHADOW_BIT: u32 = 1 << 31;
/// Bits of a shadow besides its two marker bits and the workingset bit.
const PAYLOAD_BITS: u32 = 32 - 3;

/// The folio a cache slot holds, if any (not NIL, not a shadow).
#[inline]
pub fn slot_folio(raw: u32) -> Option<u32> {
    (raw & SHADOW_BIT == 0).then_some(raw)
}

/// The shadow a cache slot holds, if any.
#[inline]
pub fn slot_shadow(raw: u32) -> Option<Shadow> {
    (raw != NIL && raw & SHADOW_BIT != 0).then_some(Shadow(raw))
}

/// A shadow entry: the evicting lruvec's memcg and node, its age at eviction (in buckets) and
/// whether the folio was in the workingset (PG_workingset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shadow(u32);

impl Shadow {
    /// What the cache slot stores.
    pub fn raw(self) -> u32 {
        self.0
    }
}

/// How a shadow packs (pack_shadow / workingset_init): bit 31 marks it, bit 0 is clear, bit 1
/// is PG_workingset, then the memcg id in as many bits as the scenario's memcgs need, the node
/// id in as many as its nodes need (NODES_SHIFT; none on one node), then the eviction age.
/// When the age's bits cannot count every page of memory, its low `bucket_order` bits are
/// dropped, as the kernel does when its entry runs short of bits.
#[derive(Clone, Copy, Debug)]
pub struct ShadowPacking {
    memcg_bits: u32,
    node_bits: u32,
    eviction_bits: u32,
    bucket_order: u32,
}

/// What a shadow holds (unpack_shadow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unpacked {
    pub memcg: u16,
    pub nid: usize,
    /// The classic LRU's age at eviction, or MGLRU's token.
    pub token: u64,
    pub workingset: bool,
}

/// Bits to number `n` things 0..n.
fn bits_for(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

impl ShadowPacking {
    /// For `nr_memcgs` memcgs (root included) and `nr_nodes` nodes on a machine of
    /// `total_pages`.
    pub fn new(nr_memcgs: usize, nr_nodes: usize, total_pages: u64) -> ShadowPacking {
        let memcg_bits = bits_for(nr_memcgs);
        let node_bits = bits_for(nr_nodes);
        let eviction_bits = PAYLOAD_BITS - memcg_bits - node_bits;
        // fls_long(totalram_pages() - 1)
        let max_order = u64::BITS - total_pages.saturating_sub(1).leading_zeros();
        ShadowPacking {
            memcg_bits,
            node_bits,
            eviction_bits,
            bucket_order: max_order.saturating_sub(eviction_bits),
        }
    }

    fn pack(&self, memcg: u16, nid: usize, age: u64, workingset: bool) -> Shadow {
        self.pack_token(memcg, nid, age >> self.bucket_order, workingset)
    }

    /// The shadow's fields, its token the age at eviction with its dropped bits 0.
    fn unpack(&self, s: Shadow) -> Unpacked {
        let u = self.unpack_token(s);
        Unpacked {
            token: u.token << self.bucket_order,
            ..u
        }
    }

    /// pack_shadow of a value stored as is, masked to the bits there are (EVICTION_MASK):
    /// the classic LRU's bucketed age, or MGLRU's token.
    pub(crate) fn pack_token(&self, memcg: u16, nid: usize, token: u64, ws: bool) -> Shadow {
        debug_assert!((nid as u64) < 1 << self.node_bits || nid == 0);
        let eviction = ((token & self.token_mask()) as u32) << self.node_bits | nid as u32;
        let payload = eviction << self.memcg_bits | memcg as u32;
        Shadow(SHADOW_BIT | payload << 2 | (ws as u32) << 1)
    }

    /// The stored fields (unpack_shadow).
    pub(crate) fn unpack_token(&self, s: Shadow) -> Unpacked {
        let payload = (s.0 & !SHADOW_BIT) >> 2;
        let memcg = payload & ((1 << self.memcg_bits) - 1);
        let eviction = payload >> self.memcg_bits;
        Unpacked {
            memcg: memcg as u16,
            nid: (eviction & ((1 << self.node_bits) - 1)) as usize,
            token: (eviction >> self.node_bits) as u64,
            workingset: s.0 & 2 != 0,
        }
    }

    /// EVICTION_MASK: the bits a stored value keeps.
    pub(crate) fn token_mask(&self) -> u64 {
        (1 << self.eviction_bits) - 1
    }

    /// The refault distance from an age at eviction to `now`, modulo the span the shadow can
    /// tell apart (at least every page of memory, as a 64-bit kernel's EVICTION_MASK is).
    fn distance(&self, eviction: u64, now: u64) -> u64 {
        now.wrapping_sub(eviction) & ((1 << (self.eviction_bits + self.bucket_order)) - 1)
    }
}

/// workingset_age_nonresident: `nr` pages were evicted or activated in `memcg`'s lruvec on
/// node `nid`; it and every ancestor's age (a parent's LRU order is made of its children's).
pub fn age_nonresident(k: &mut Kernel, memcg: u16, nid: usize, nr: u64) {
    let mut id = memcg;
    loop {
        let cg = &mut k.memcgs[id as usize];
        cg.lruvec_mut(nid).nonresident_age += nr;
        if id == ROOT_MEMCG {
            return;
        }
        id = cg.parent;
    }
}

/// workingset_activation: folio_mark_accessed activated the folio at `pfn`.
pub fn workingset_activation(k: &mut Kernel, pfn: u32) {
    let memcg = k.folios.memcg(pfn as usize);
    let nid = k.nodes.nid(pfn);
    let nr = k.folios.nr_pages(pfn) as u64;
    age_nonresident(k, memcg, nid, nr);
}

/// workingset_eviction, as __remove_mapping calls it: the shadow the folio at `pfn` leaves in
/// its cache slots when reclaim on behalf of `target` (ROOT_MEMCG for global reclaim and
/// MADV_PAGEOUT) evicts it, made by the LRU policy (classic_eviction, or MGLRU's token).
pub fn workingset_eviction(k: &mut Kernel, pfn: u32, target: u16) -> Option<Shadow> {
    let policy = k.cfg.lru_policy;
    policy.workingset_eviction(k, pfn, target)
}

/// workingset_refault, as a cache insert calls it: the new folio at `pfn` (charged, not yet
/// on an LRU) took a slot that held `shadow`; the LRU policy judges it (classic_refault, or
/// MGLRU's).
pub fn workingset_refault(k: &mut Kernel, pfn: u32, shadow: Shadow) {
    let policy = k.cfg.lru_policy;
    policy.workingset_refault(k, pfn, shadow);
}

/// The classic LRU's eviction: the shadow is stamped with the age of the target's lruvec on
/// the folio's node, which the eviction advances.
pub(crate) fn classic_eviction(k: &mut Kernel, pfn: u32, target: u16) -> Shadow {
    let nid = k.nodes.nid(pfn);
    let age = k.memcgs[target as usize].lruvec_of(nid).nonresident_age;
    let nr = k.folios.nr_pages(pfn) as u64;
    age_nonresident(k, target, nid, nr);
    let workingset = k.folios.test(pfn, flags::WORKINGSET);
    k.workingset.pack(target, nid, age, workingset)
}

/// workingset_test_recent: would the evicted page have stayed resident had the workingset it
/// competes with (in the evicting lruvec: its memcg, hierarchically, on its node) had all
/// that memory? Some(the shadow's workingset bit) if so. File pages compete with the active file list and, while
/// the memcg can swap, with all anon; anon pages with all file and the active anon list.
pub fn workingset_test_recent(k: &Kernel, shadow: Shadow, file: bool) -> Option<bool> {
    let Unpacked {
        memcg,
        nid,
        token: eviction,
        workingset,
    } = k.workingset.unpack(shadow);
    let now = k.memcgs[memcg as usize].lruvec_of(nid).nonresident_age;
    let distance = k.workingset.distance(eviction, now);
    let size = target_sizes(k, Some(memcg), nid);
    let mut workingset_size = size[ACTIVE_FILE];
    if !file {
        workingset_size += size[INACTIVE_FILE];
    }
    if get_nr_swap_pages(k, memcg) > 0 {
        workingset_size += size[ACTIVE_ANON];
        if file {
            workingset_size += size[INACTIVE_ANON];
        }
    }
    (distance <= workingset_size).then_some(workingset)
}

/// The classic LRU's refault: counted as a refault of the folio's memcg; if recent, it goes on
/// the LRU active (and ages it), and if it was in the workingset before eviction,
/// PG_workingset is restored and the refault counts as reclaim cost of its type
/// (lru_note_cost_refault).
pub(crate) fn classic_refault(k: &mut Kernel, pfn: u32, shadow: Shadow) {
    let file = k.folios.test(pfn, flags::FILE);
    let memcg = k.folios.memcg(pfn as usize);
    let nid = k.nodes.nid(pfn);
    let nr = k.folios.nr_pages(pfn) as u64;
    let [refault, activate, restore] = events(file);
    count(k, memcg, refault, nr);
    let Some(workingset) = workingset_test_recent(k, shadow, file) else {
        return;
    };
    k.folios.set(pfn, flags::ACTIVE);
    age_nonresident(k, memcg, nid, nr);
    count(k, memcg, activate, nr);
    if workingset {
        k.folios.set(pfn, flags::WORKINGSET);
        lru_note_cost(k, memcg, nid, file, nr, 0);
        count(k, memcg, restore, nr);
    }
}

/// WORKINGSET_REFAULT, _ACTIVATE and _RESTORE of a type.
pub(crate) fn events(file: bool) -> [VmEvent; 3] {
    if file {
        [
            VmEvent::WorkingsetRefaultFile,
            VmEvent::WorkingsetActivateFile,
            VmEvent::WorkingsetRestoreFile,
        ]
    } else {
        [
            VmEvent::WorkingsetRefaultAnon,
            VmEvent::WorkingsetActivateAnon,
            VmEvent::WorkingsetRestoreAnon,
        ]
    }
}

/// mod_lruvec_state of a workingset event: the memcg's memory.stat and the node's vmstat.
pub(crate) fn count(k: &mut Kernel, memcg: u16, event: VmEvent, nr: u64) {
    k.memcgs[memcg as usize].count(event, nr);
    k.vmstat.count(event, nr);
}

/// WORKINGSET_ACTIVATE_ANON and _FILE of `memcg`'s lruvec (hierarchical: its subtree's).
pub fn activations(k: &Kernel, memcg: u16) -> [u64; 2] {
    let mut sum = [0; 2];
    for i in k.memcg_tree.subtree(memcg) {
        let cg = &k.memcgs[k.memcg_tree.preorder[i] as usize];
        sum[0] += cg.vm_event(VmEvent::WorkingsetActivateAnon);
        sum[1] += cg.vm_event(VmEvent::WorkingsetActivateFile);
    }
    sum
}

/// snapshot_refaults: the end of a reclaim run for `target` (None: global) on node `nid`
/// remembers its activations in its lruvec there, so the next run deactivates a type's active
/// list only if its pages refaulted into activation since (or its inactive list is low). The
/// activations are the memcg's on every node (the model keeps no per-node count of them).
pub fn snapshot_refaults(k: &mut Kernel, target: Option<u16>, nid: usize) {
    let memcg = target.unwrap_or(ROOT_MEMCG);
    let now = activations(k, memcg);
    k.memcgs[memcg as usize].lruvec_mut(nid).refaults = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shadow_is_never_a_folio_nor_nil() {
        let p = ShadowPacking::new(300, 1, 1 << 20);
        for (memcg, age, ws) in [(0, 0, false), (299, u64::MAX, true), (7, 12345, true)] {
            let s = p.pack(memcg, 0, age, ws);
            assert_ne!(s.raw(), NIL);
            assert_eq!(slot_folio(s.raw()), None);
            assert_eq!(slot_shadow(s.raw()), Some(s));
        }
        assert_eq!(slot_shadow(NIL), None);
        assert_eq!(slot_folio(NIL), None);
        assert_eq!(slot_folio(12), Some(12));
        assert_eq!(slot_shadow(12), None);
    }

    #[test]
    fn pack_unpack_round_trip_within_a_bucket() {
        // 2^28 pages (1 TiB) and 9 memcg bits leave 20 bits of age: buckets of 2^8 pages.
        let p = ShadowPacking::new(300, 1, 1 << 28);
        assert_eq!((p.memcg_bits, p.eviction_bits, p.bucket_order), (9, 20, 8));
        let u = p.unpack(p.pack(299, 0, 0x12345, true));
        assert_eq!(
            (u.memcg, u.nid, u.token, u.workingset),
            (299, 0, 0x12300, true)
        );
        // A small machine keeps every page of age.
        let p = ShadowPacking::new(1, 1, 1 << 20);
        assert_eq!(p.bucket_order, 0);
        let u = p.unpack(p.pack(0, 0, 777, false));
        assert_eq!((u.memcg, u.token, u.workingset), (0, 777, false));
    }

    #[test]
    fn a_shadow_carries_its_node_in_the_bits_the_nodes_need() {
        // Three nodes take two bits from the age: one node takes none.
        let one = ShadowPacking::new(4, 1, 1 << 20);
        let three = ShadowPacking::new(4, 3, 1 << 20);
        assert_eq!((one.node_bits, three.node_bits), (0, 2));
        assert_eq!(three.eviction_bits + 2, one.eviction_bits);
        for nid in 0..3 {
            let u = three.unpack(three.pack(3, nid, 4242, nid == 1));
            assert_eq!(
                (u.memcg, u.nid, u.token, u.workingset),
                (3, nid, 4242, nid == 1)
            );
        }
    }

    #[test]
    fn distance_counts_across_the_wrap_of_the_stored_age() {
        let p = ShadowPacking::new(2, 1, 1 << 20);
        let span = 1u64 << (p.eviction_bits + p.bucket_order);
        let eviction = p.unpack(p.pack(1, 0, span - 10, false)).token;
        // The age went on past what the shadow can hold: 30 pages later.
        assert_eq!(p.distance(eviction, span + 20), 30);
        assert_eq!(p.distance(eviction, span - 10), 0);
    }
}
