//! Deferred compaction (mm/compaction.c): after a sync compaction fails to produce a block,
//! the next 1 << compact_defer_shift attempts at that order or above are skipped (the shift
//! grows by one per failure, up to 6); a successful allocation resets it. Async failures never
//! defer.

use super::{ZoneCompaction, COMPACT_MAX_DEFER_SHIFT};

impl ZoneCompaction {
    /// defer_compaction: a compaction for `order` failed.
    pub fn defer_compaction(&mut self, order: u32) {
        self.considered = 0;
        self.defer_shift = (self.defer_shift + 1).min(COMPACT_MAX_DEFER_SHIFT);
        self.order_failed = self.order_failed.min(order);
    }

    /// compaction_deferred: should this attempt at `order` be skipped? Counts the attempt.
    pub fn compaction_deferred(&mut self, order: u32) -> bool {
        if order < self.order_failed {
            return false;
        }
        let defer_limit = 1u32 << self.defer_shift;
        self.considered += 1;
        if self.considered >= defer_limit {
            self.considered = defer_limit;
            return false;
        }
        true
    }

    /// compaction_defer_reset: an allocation of `order` succeeded (`alloc_success`) or is
    /// expected to.
    pub fn compaction_defer_reset(&mut self, order: u32, alloc_success: bool) {
        if alloc_success {
            self.considered = 0;
            self.defer_shift = 0;
        }
        if order >= self.order_failed {
            self.order_failed = order + 1;
        }
    }

    /// compaction_restarting: retried after the longest deferral: time to clear the skip bits.
    pub fn compaction_restarting(&self, order: i32) -> bool {
        if order < self.order_failed as i32 {
            return false;
        }
        self.defer_shift == COMPACT_MAX_DEFER_SHIFT && self.considered >= 1 << self.defer_shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_doubles_the_attempts_skipped_up_to_64() {
        let mut z = ZoneCompaction::new(0, 1 << 16);
        let skipped_after = |z: &mut ZoneCompaction| {
            let mut n = 0;
            while z.compaction_deferred(9) {
                n += 1;
            }
            n
        };
        z.compaction_defer_reset(9, false);
        assert!(!z.compaction_deferred(9), "nothing failed yet");
        for (failures, skipped) in [(1, 1), (2, 3), (3, 7), (6, 63), (7, 63)] {
            let mut z = ZoneCompaction::new(0, 1 << 16);
            for _ in 0..failures {
                z.defer_compaction(9);
            }
            assert_eq!(skipped_after(&mut z), skipped, "{failures} failures");
        }
        // Lower orders than the one that failed are not deferred.
        let mut z = ZoneCompaction::new(0, 1 << 16);
        z.compaction_defer_reset(9, false);
        z.defer_compaction(9);
        assert!(!z.compaction_deferred(4));
        assert!(z.compaction_deferred(9));
    }

    #[test]
    fn success_resets_and_restarting_follows_the_longest_deferral() {
        let mut z = ZoneCompaction::new(0, 1 << 16);
        for _ in 0..6 {
            z.defer_compaction(9);
        }
        while z.compaction_deferred(9) {}
        assert!(z.compaction_restarting(9));
        z.compaction_defer_reset(9, true);
        assert_eq!((z.considered, z.defer_shift, z.order_failed), (0, 0, 10));
        assert!(!z.compaction_restarting(9));
        assert!(!z.compaction_deferred(9));
    }
}
