//! Seeded random streams: one per source of randomness, derived from the scenario seed and a
//! stream name, so adding a stream never shifts another's sequence.

use rand_core::RngCore;
use rand_pcg::Pcg64Mcg;

pub struct SimRng(Pcg64Mcg);

impl SimRng {
    pub fn stream(seed: u64, name: &str) -> SimRng {
        // FNV-1a of the name, mixed with the seed: stable across builds and platforms.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        let mixed = (seed as u128) << 64 | h as u128;
        SimRng(Pcg64Mcg::new(mixed | 1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "SimRng::below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}
