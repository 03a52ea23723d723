//! The per-CPU differentials of a zone's stat items and their folds into the shared counters
//! (mm/vmstat.c __mod_zone_page_state): each CPU adds to its own `vm_stat_diff[item]`, and
//! only when that passes the zone's `stat_threshold` does it fold the whole differential into
//! `zone->vm_stat[item]` and the global `vm_zone_stat[item]` with two atomics, on lines every
//! CPU writes. The threshold grows with the CPUs and the zone's size
//! (calculate_normal_threshold), so a fold, and the two line transfers it may cost, comes once
//! per tens of pages a CPU allocates or frees.
//!
//! Priced only with a topology (`Ctx::line`). Items kept: NR_FREE_PAGES, changed where the
//! model's allocator takes blocks from or gives them to the buddy lists (rmqueue_bulk,
//! rmqueue_buddy, free_pcppages_bulk, free_one_page). Not priced: the node items (LRU sizes,
//! NR_ANON_MAPPED), the memcg stats' rstat updates, and vmstat_update's periodic fold of the
//! leftovers (once a second per CPU).

use crate::cpu_cost::CpuCost;
use crate::engine::line::SharedLine;
use crate::engine::Ctx;

/// The largest stat_threshold (calculate_normal_threshold's cap).
const MAX_STAT_THRESHOLD: i32 = 125;

/// calculate_normal_threshold: 2 x fls(online CPUs) x (1 + fls(managed memory in 128 MiB
/// units)), at most 125.
pub fn calculate_normal_threshold(managed_pages: u64, ncpus: usize) -> i32 {
    let fls = |x: u64| (u64::BITS - x.leading_zeros()) as i32;
    let mem = managed_pages >> (27 - 12);
    (2 * fls(ncpus as u64) * (1 + fls(mem))).min(MAX_STAT_THRESHOLD)
}

/// One zone stat item: each CPU's differential, the zone's and the global counter's lines.
#[derive(Debug, Clone)]
pub struct ZoneStatItem {
    diff: Vec<i32>,
    threshold: i32,
    /// zone->vm_stat[item]'s and vm_zone_stat[item]'s cache lines.
    zone_line: SharedLine,
    global_line: SharedLine,
    /// Folds done and the CPU time their line transfers cost, for the report.
    pub folds: u64,
    pub transfer_ns: u64,
}

impl ZoneStatItem {
    pub fn new(managed_pages: u64, ncpus: usize) -> ZoneStatItem {
        ZoneStatItem {
            diff: vec![0; ncpus],
            threshold: calculate_normal_threshold(managed_pages, ncpus),
            zone_line: SharedLine::default(),
            global_line: SharedLine::default(),
            folds: 0,
            transfer_ns: 0,
        }
    }

    /// __mod_zone_page_state by `delta` pages, `times` times in a row (one per block).
    #[inline]
    pub fn mod_state(&mut self, ctx: &mut Ctx, delta: i32, times: u32) {
        if ctx.line.is_none() {
            return;
        }
        for _ in 0..times {
            let x = self.diff[ctx.cpu] + delta;
            self.diff[ctx.cpu] = if x.abs() > self.threshold {
                self.fold(ctx);
                0
            } else {
                x
            };
        }
    }

    /// zone_page_state_add: the differential into the zone's and the global counter.
    #[cold]
    fn fold(&mut self, ctx: &mut Ctx) {
        self.folds += 1;
        self.transfer_ns += self.zone_line.write(ctx, CpuCost::LineVmstat.into())
            + self.global_line.write(ctx, CpuCost::LineVmstat.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::line::HandoffTable;

    #[test]
    fn thresholds_follow_the_kernels_table() {
        // mm/vmstat.c's sample table: 2 CPUs, 0.9-1 GB -> 16 (its rows for larger zones
        // are a size class off the formula: 64 CPUs, 4 GiB gives 2 x 7 x (1 + 6) = 98).
        let gib = 1u64 << 18;
        assert_eq!(calculate_normal_threshold(gib - 1, 2), 16);
        assert_eq!(calculate_normal_threshold(4 * gib, 64), 98);
        assert_eq!(calculate_normal_threshold(16 * gib, 1024), 125);
        // 224 CPUs, 4 GiB: 2 x 8 x (1 + 6) = 112.
        assert_eq!(calculate_normal_threshold(4 * gib, 224), 112);
    }

    #[test]
    fn a_cpu_folds_past_the_threshold_and_pays_only_after_another_cpu_folded() {
        let table = HandoffTable::intern(2, |f, t| (f != t) as u32 * 100);
        let at = |cpu| Ctx {
            line: Some(table),
            ..Ctx::new(cpu, 0)
        };
        // 1 GiB less a page on 2 CPUs: threshold 16.
        let mut item = ZoneStatItem::new((1 << 18) - 1, 2);
        let (mut c0, mut c1) = (at(0), at(1));
        item.mod_state(&mut c0, -1, 16);
        assert_eq!(item.folds, 0, "within the threshold");
        item.mod_state(&mut c0, -1, 1);
        assert_eq!(
            (item.folds, c0.now_ns),
            (1, 0),
            "first writer of both lines"
        );
        // An order-9 block alone passes it: CPU 1 folds, pulling both lines from CPU 0.
        item.mod_state(&mut c1, 512, 1);
        assert_eq!((item.folds, c1.now_ns), (2, 200));
        item.mod_state(&mut c1, 512, 2);
        assert_eq!((item.folds, c1.now_ns), (4, 200), "its own lines now");
        // One CPU alone never pays; without a topology nothing is counted.
        let mut flat = Ctx::new(0, 0);
        item.mod_state(&mut flat, 512, 4);
        assert_eq!(item.folds, 4);
    }
}
