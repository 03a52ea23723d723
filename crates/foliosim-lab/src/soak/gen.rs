//! The generator's random choices: one seeded stream per case (engine/rng.rs), so a case is a
//! function of its seed alone.

use crate::engine::rng::SimRng;

pub struct Gen(SimRng);

impl Gen {
    pub fn new(seed: u64, stream: &str) -> Gen {
        Gen(SimRng::stream(seed, stream))
    }

    /// Uniform in lo..=hi.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.0.below(hi - lo + 1)
    }

    pub fn u32(&mut self, lo: u32, hi: u32) -> u32 {
        self.range(lo as u64, hi as u64) as u32
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.0.below(100) < percent
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.0.below(items.len() as u64) as usize].clone()
    }

    /// `Some(f(self))` with probability `percent` / 100.
    pub fn maybe<T>(&mut self, percent: u64, f: impl FnOnce(&mut Gen) -> T) -> Option<T> {
        if self.chance(percent) {
            Some(f(self))
        } else {
            None
        }
    }

    /// A size of `lo ..= hi` bytes, a whole number of `unit` bytes, log-uniform (small sizes as
    /// likely as large ones).
    pub fn size(&mut self, lo: u64, hi: u64, unit: u64) -> u64 {
        let (lo_u, hi_u) = (lo / unit, hi / unit);
        let bits = 64 - hi_u.leading_zeros() as u64;
        let b = self.range(64 - lo_u.leading_zeros() as u64, bits);
        let v = self.range(1 << (b - 1), (1 << b) - 1).clamp(lo_u, hi_u);
        v * unit
    }
}
