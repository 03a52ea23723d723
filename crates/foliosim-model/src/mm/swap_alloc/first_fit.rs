//! docs/extending.md's worked example: a first-fit swap allocator. Every allocation scans
//! swap_map from the lowest free slot for the first naturally aligned free range, under
//! si->lock, as scan_swap_map did before swap clusters (2.6.x, lowest_bit and a linear
//! scan). Not an upstream kernel of any release this model covers: it is here to show what a
//! policy is made of, and it is registered only in test builds (mod.rs `registry!`).

use super::{SwapAllocator, SwapAllocatorEntry};
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::SwapMap;

/// The registry's row: the scenario spells it `swap_allocator = "first-fit"`.
pub const ENTRY: SwapAllocatorEntry = SwapAllocatorEntry {
    name: "first-fit",
    doc: "example (test builds only): lowest free aligned range, linear scan under si->lock",
    mthp_reserve: false,
    new: |map, _ncpus, _reserve| Box::new(FirstFit::new(map)),
};

pub struct FirstFit {
    /// si->lowest_bit: no slot below it is free.
    lowest_free: u32,
}

impl FirstFit {
    pub fn new(map: &SwapMap) -> FirstFit {
        FirstFit {
            lowest_free: first_free(map, 1).unwrap_or(map.max),
        }
    }

    /// The first 2^order-aligned free range at or above `lowest_free`, counting the
    /// candidates probed.
    fn find(&self, map: &SwapMap, nr: u32, probes: &mut u64) -> Option<u32> {
        let mut offset = self.lowest_free.next_multiple_of(nr);
        while offset + nr <= map.max {
            *probes += 1;
            if map.range_free(offset, nr) {
                return Some(offset);
            }
            offset += nr;
        }
        None
    }
}

/// The first free slot at or above `from`.
fn first_free(map: &SwapMap, from: u32) -> Option<u32> {
    (from..map.max).find(|&s| map.swap_map[s as usize] == 0)
}

impl SwapAllocator for FirstFit {
    fn name(&self) -> &'static str {
        ENTRY.name
    }

    /// No per-CPU slot cache: every order-0 allocation scans, as before swap_slots.c.
    fn uses_slot_cache(&self) -> bool {
        false
    }

    /// scan_swap_map_slots without clusters: cost as the cluster scanners charge it.
    fn alloc(
        &mut self,
        map: &mut SwapMap,
        ctx: &mut Ctx,
        cost: &CostModel,
        order: u32,
        n: usize,
        out: &mut Vec<SwapEntry>,
    ) {
        let nr = 1u32 << order;
        let mut probes = 0u64;
        let mut taken = 0u64;
        while (taken as usize) < n {
            let Some(offset) = self.find(map, nr, &mut probes) else {
                break;
            };
            map.take_range(offset, nr);
            out.push(SwapEntry::new(map.id, offset));
            taken += 1;
            if offset == self.lowest_free {
                self.lowest_free = first_free(map, offset + nr).unwrap_or(map.max);
            }
        }
        map.lock.hold(
            ctx,
            cost.swap_alloc_ns + taken * cost.swap_alloc_range_ns + probes * cost.swap_slot_scan_ns,
        );
    }

    /// swap_range_free: the slots are free again; the lowest free slot may move down.
    fn on_free(&mut self, map: &mut SwapMap, ctx: &mut Ctx, cost: &CostModel, offset: u32, nr: u32) {
        map.lock.hold(ctx, map.swap_range_free_ns(cost, nr));
        self.lowest_free = self.lowest_free.min(offset);
    }

    /// No slot below `lowest_free` is free.
    fn check(&self, map: &SwapMap) -> Result<(), String> {
        match first_free(map, 1) {
            Some(s) if s < self.lowest_free => Err(format!(
                "first-fit: slot {s} is free below lowest_free {}",
                self.lowest_free
            )),
            _ => Ok(()),
        }
    }
}

/// The guide's comparison: thp_swap_allocator_test (scenarios/thp-swap-allocator-test.toml)
/// on 6.10's allocator and on this one.
#[cfg(test)]
mod tests {
    use crate::Scenario;

    /// The 64K swpout fallback % per iteration, and the run's si->lock hold time.
    fn fallback(allocator: &str) -> (Vec<f64>, u64) {
        let text = include_str!("../../../../../scenarios/thp-swap-allocator-test.toml")
            .replace("version = \"6.12\"", &format!("version = \"6.10\"\n{allocator}"));
        let s = Scenario::from_toml_str(&text).unwrap();
        let r = crate::run(&s).unwrap();
        let series = &r.workloads[0].fallback_series;
        let hold_ns = r.locks.iter().filter(|l| l.name == "si->lock");
        let hold_ns = hold_ns.map(|l| l.stats.hold_ns_total).sum();
        (series.iter().map(|p| p.fallback_percent).collect(), hold_ns)
    }

    #[test]
    fn first_fit_against_6_10() {
        let (base, base_hold) = fallback("");
        let (ff, ff_hold) = fallback("swap_allocator = \"first-fit\"");
        println!("iteration  6.10 fallback %  first-fit fallback %");
        for (i, (b, f)) in base.iter().zip(&ff).enumerate() {
            println!("{i:>9}  {b:>15.1}  {f:>20.1}");
        }
        println!("si->lock held: 6.10 {base_hold} ns, first-fit {ff_hold} ns");
        assert_eq!(base.len(), ff.len());
        // First-fit takes any aligned free range on the device, so it falls back only when
        // the device has none; 6.10 looks in its CPU's cluster and the free list only.
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(mean(&ff) < mean(&base), "{ff:?} vs {base:?}");
        // Its linear scans and lack of a slot cache cost si->lock time.
        assert!(ff_hold > base_hold, "{ff_hold} vs {base_hold}");
    }
}
