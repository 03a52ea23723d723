//! Per-CPU page lists (struct per_cpu_pages, mm/page_alloc.c): each CPU keeps free pages of
//! orders 0..=PAGE_ALLOC_COSTLY_ORDER per migratetype, and PMD-order pages (THP), off the buddy
//! lists. An empty list is refilled by rmqueue_bulk; a CPU holding `high` pages or more drains
//! to the buddy lists by free_pcppages_bulk.
//!
//! batch and high follow zone_batchsize and zone_highsize (high = the low watermark split over
//! the CPUs, at least 4 x batch). Not modelled: pcp->high auto-tuning between high_min and
//! high_max (decay_pcp_high, ZONE_BELOW_HIGH), the free_high rule for high-order frees and the
//! cache-size PCPF_FREE_HIGH_BATCH: high stays at high_min, as with high_min == high_max.

use super::migratetype::{MigrateType, MIGRATE_PCPTYPES};
use super::PAGE_ALLOC_COSTLY_ORDER;
use crate::scenario::PMD_ORDER;
use std::collections::VecDeque;

/// NR_LOWORDER_PCP_LISTS.
const NR_LOWORDER_PCP_LISTS: usize = MIGRATE_PCPTYPES * (PAGE_ALLOC_COSTLY_ORDER as usize + 1);
/// NR_PCP_LISTS: plus a non-movable and a movable THP list (CONFIG_TRANSPARENT_HUGEPAGE).
pub const NR_PCP_LISTS: usize = NR_LOWORDER_PCP_LISTS + 2;
/// CONFIG_PCP_BATCH_SCALE_MAX (default 5).
pub const PCP_BATCH_SCALE_MAX: u32 = 5;

/// pcp_allowed_order: orders that go through the per-CPU lists.
#[inline]
pub fn pcp_allowed_order(order: u32) -> bool {
    order <= PAGE_ALLOC_COSTLY_ORDER || order == PMD_ORDER
}

/// order_to_pindex: which list of a CPU holds blocks of `order` and type `mt` (< PCPTYPES).
#[inline]
pub fn order_to_pindex(mt: MigrateType, order: u32) -> usize {
    if order > PAGE_ALLOC_COSTLY_ORDER {
        debug_assert_eq!(order, PMD_ORDER);
        NR_LOWORDER_PCP_LISTS + (mt == MigrateType::Movable) as usize
    } else {
        MIGRATE_PCPTYPES * order as usize + mt as usize
    }
}

/// pindex_to_order.
#[inline]
pub fn pindex_to_order(pindex: usize) -> u32 {
    if pindex >= NR_LOWORDER_PCP_LISTS {
        PMD_ORDER
    } else {
        (pindex / MIGRATE_PCPTYPES) as u32
    }
}

/// zone_batchsize: ~0.025% of the zone or 256 KiB, whichever is smaller, rounded to 2^n - 1.
pub fn zone_batchsize(managed_pages: u64) -> u32 {
    let batch = (managed_pages >> 12).min((256 << 10) / 4096);
    if batch <= 1 {
        return 1;
    }
    let b = batch + batch / 2;
    (1u64 << (63 - b.leading_zeros())) as u32 - 1
}

/// zone_highsize (percpu_pagelist_high_fraction 0): the low watermark split over the CPUs,
/// at least 4 x batch.
pub fn zone_highsize(low_wmark_pages: u64, batch: u32, ncpus: usize) -> u32 {
    ((low_wmark_pages / ncpus as u64) as u32).max(batch << 2)
}

/// One CPU's lists. Each list's front is the kernel list's head.
#[derive(Default)]
pub struct PerCpuPages {
    pub lists: [VecDeque<u32>; NR_PCP_LISTS],
    /// pcp->count: pages (not blocks) on the lists.
    pub count: u32,
    /// pcp->free_count: pages freed since the last allocations halved it; a long run of frees
    /// drains more at once (nr_pcp_free).
    pub free_count: u32,
    /// pcp->alloc_factor: refills double (up to batch << PCP_BATCH_SCALE_MAX) while a CPU
    /// allocates without freeing (nr_pcp_alloc).
    pub alloc_factor: u32,
}

impl PerCpuPages {
    /// nr_pcp_alloc: how many blocks of `order` a refill takes from the buddy lists.
    pub fn nr_pcp_alloc(&mut self, order: u32, batch: u32, high: u32) -> u32 {
        if high < batch {
            return 1;
        }
        let mut nr = if order > 0 {
            batch
        } else {
            batch << self.alloc_factor
        };
        if order == 0 {
            let max_nr_alloc = high.saturating_sub(self.count + batch).max(batch);
            if nr <= max_nr_alloc && self.alloc_factor < PCP_BATCH_SCALE_MAX {
                self.alloc_factor += 1;
            }
            nr = nr.min(max_nr_alloc);
        }
        if nr > 1 {
            nr = (nr >> order).max(2);
        }
        nr
    }

    /// nr_pcp_free: pages to drain once the CPU holds `high` (high_min == high_max).
    pub fn nr_pcp_free(&self, batch: u32, high: u32) -> u32 {
        if high < batch {
            return 1;
        }
        self.free_count.clamp(batch, high - batch)
    }

    /// The list the round-robin drain takes from next, at or after `pindex` (free_pcppages_bulk).
    pub fn next_nonempty(&self, pindex: usize) -> usize {
        (0..NR_PCP_LISTS)
            .map(|i| (pindex + i) % NR_PCP_LISTS)
            .find(|&i| !self.lists[i].is_empty())
            .expect("a CPU with pages has a non-empty list")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_and_high_follow_the_kernel() {
        // 1 GiB and more: 64 pages -> rounddown_pow_of_two(96) - 1 = 63.
        assert_eq!(zone_batchsize(1 << 18), 63);
        assert_eq!(zone_batchsize(20 << 18), 63);
        // 64 MiB (16384 pages): 4 -> rounddown_pow_of_two(6) - 1 = 3.
        assert_eq!(zone_batchsize(16384), 3);
        assert_eq!(zone_batchsize(4096), 1);
        assert_eq!(zone_highsize(30000, 63, 8), 3750);
        assert_eq!(zone_highsize(1000, 63, 8), 252);
    }

    #[test]
    fn pindex_round_trips() {
        for order in (0..=PAGE_ALLOC_COSTLY_ORDER).chain([PMD_ORDER]) {
            for mt in [
                MigrateType::Unmovable,
                MigrateType::Movable,
                MigrateType::Reclaimable,
            ] {
                assert_eq!(pindex_to_order(order_to_pindex(mt, order)), order);
            }
        }
        assert_eq!(
            order_to_pindex(MigrateType::Movable, PMD_ORDER),
            NR_PCP_LISTS - 1
        );
    }
}
