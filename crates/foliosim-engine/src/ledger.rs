//! CPU time by the work that spent it. Every charge names a bucket by a `CostId`: the model
//! numbers and names its buckets (the kernel function or cost behind them); the engine only
//! carries the number and adds the time to the run's ledger.

use std::cell::Cell;

/// A CPU-time bucket, numbered by the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CostId(pub u8);

/// The contexts of one run book their CPU time here, by bucket. Shared by every context of
/// the run (a `Ctx` is Copy), so the buckets are cells; a run lives on one thread.
#[derive(Debug)]
pub struct CpuLedger {
    ns: [Cell<u64>; Self::BUCKETS],
}

impl Default for CpuLedger {
    fn default() -> Self {
        CpuLedger {
            ns: std::array::from_fn(|_| Cell::new(0)),
        }
    }
}

impl CpuLedger {
    /// One bucket per possible id: indexing never needs a bounds check.
    pub const BUCKETS: usize = 1 << u8::BITS;

    #[inline]
    pub fn add(&self, id: CostId, ns: u64) {
        let c = &self.ns[id.0 as usize];
        c.set(c.get() + ns);
    }

    pub fn ns(&self, id: CostId) -> u64 {
        self.ns[id.0 as usize].get()
    }

    /// Every bucket's time, by number.
    pub fn snapshot(&self) -> Vec<u64> {
        self.ns.iter().map(Cell::get).collect()
    }

    /// Every bucket's time.
    pub fn total_ns(&self) -> u64 {
        self.ns.iter().map(Cell::get).sum()
    }

    /// This thread's ledger for contexts whose time no run reports (tests, benches), leaked
    /// once per thread.
    pub fn scratch() -> &'static CpuLedger {
        thread_local! {
            static SCRATCH: &'static CpuLedger = Box::leak(Box::default());
        }
        SCRATCH.with(|l| *l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ctx;

    #[test]
    fn a_spend_lands_in_its_bucket_and_advances_the_clock() {
        let ledger = CpuLedger::default();
        let mut ctx = Ctx::with_ledger(0, 100, &ledger);
        ctx.spend(CostId(3), 40);
        ctx.spend(CostId(255), 2);
        ctx.busy_until(CostId(3), 150);
        ctx.busy_until(CostId(3), 120);
        assert_eq!(ctx.now_ns, 150);
        assert_eq!((ledger.ns(CostId(3)), ledger.ns(CostId(255))), (48, 2));
        assert_eq!(ledger.total_ns(), 50);
    }
}
