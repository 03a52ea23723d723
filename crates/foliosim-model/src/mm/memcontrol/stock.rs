//! The per-CPU charge stock (mm/memcontrol.c memcg_stock_pcp, 6.16+): each CPU keeps up to
//! NR_MEMCG_STOCK memcgs' pre-charged pages. A charge that misses the stock charges a whole
//! MEMCG_CHARGE_BATCH to the page counters and keeps the rest here, so memory.current runs
//! up to a batch per CPU ahead of the folios, and a memcg near memory.max can fail a charge
//! while other CPUs hold its stock (try_charge drains them all after its first reclaim).

use super::page_counter::{self, Counter};
use super::{MemCgroup, MemcgTree, MEMCG_CHARGE_BATCH};

/// NR_MEMCG_STOCK: memcgs cached per CPU (one cache line of pointers).
pub const NR_MEMCG_STOCK: usize = 7;
const EMPTY: u16 = u16::MAX;

#[derive(Debug, Clone)]
struct PcpStock {
    cached: [u16; NR_MEMCG_STOCK],
    nr_pages: [u8; NR_MEMCG_STOCK],
    /// The next slot to evict when all are taken (the kernel picks one at random).
    next_evict: u8,
}

impl Default for PcpStock {
    fn default() -> Self {
        PcpStock {
            cached: [EMPTY; NR_MEMCG_STOCK],
            nr_pages: [0; NR_MEMCG_STOCK],
            next_evict: 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Stock {
    cpus: Vec<PcpStock>,
}

impl Stock {
    pub fn new(ncpus: usize) -> Stock {
        Stock {
            cpus: vec![PcpStock::default(); ncpus],
        }
    }

    /// consume_stock: take `nr_pages` of this CPU's stock of `memcg`, if it holds that many.
    pub fn consume(&mut self, cpu: usize, memcg: u16, nr_pages: u64) -> bool {
        if nr_pages > MEMCG_CHARGE_BATCH {
            return false;
        }
        let s = &mut self.cpus[cpu];
        match s.cached.iter().position(|&c| c == memcg) {
            Some(i) if s.nr_pages[i] as u64 >= nr_pages => {
                s.nr_pages[i] -= nr_pages as u8;
                true
            }
            _ => false,
        }
    }

    /// refill_stock: keep `nr_pages` already charged to `memcg` on this CPU; a stock above
    /// a batch goes back to the counters, and a new memcg takes an empty slot or evicts one.
    /// Returns the memcg whose pages went back to its counters (an uncharge), if any.
    pub fn refill(
        &mut self,
        memcgs: &mut [MemCgroup],
        cpu: usize,
        memcg: u16,
        nr_pages: u64,
    ) -> Option<u16> {
        debug_assert!(nr_pages <= MEMCG_CHARGE_BATCH);
        let s = &mut self.cpus[cpu];
        if let Some(i) = s.cached.iter().position(|&c| c == memcg) {
            let total = s.nr_pages[i] as u64 + nr_pages;
            s.nr_pages[i] = total as u8;
            if total > MEMCG_CHARGE_BATCH {
                return drain_slot(s, memcgs, i);
            }
            return None;
        }
        let (i, drained) = match s.cached.iter().position(|&c| c == EMPTY) {
            Some(i) => (i, None),
            None => {
                let i = s.next_evict as usize;
                s.next_evict = ((i + 1) % NR_MEMCG_STOCK) as u8;
                (i, drain_slot(s, memcgs, i))
            }
        };
        s.cached[i] = memcg;
        s.nr_pages[i] = nr_pages as u8;
        drained
    }

    /// drain_all_stock: every CPU whose stock holds pages of `root`'s subtree gives back all
    /// it holds (drain_local_memcg_stock; the kernel drains other CPUs from a work item, the
    /// model at once).
    pub fn drain_all(&mut self, memcgs: &mut [MemCgroup], tree: &MemcgTree, root: u16) {
        for s in &mut self.cpus {
            let needed = (0..NR_MEMCG_STOCK)
                .any(|i| s.nr_pages[i] > 0 && tree.is_descendant(s.cached[i], root));
            if needed {
                for i in 0..NR_MEMCG_STOCK {
                    drain_slot(s, memcgs, i);
                }
            }
        }
    }

    /// Pages all CPUs hold pre-charged to `memcg` (for the invariants).
    pub fn held_pages(&self, memcg: u16) -> u64 {
        self.cpus
            .iter()
            .flat_map(|s| {
                (0..NR_MEMCG_STOCK)
                    .filter(move |&i| s.cached[i] == memcg)
                    .map(move |i| s.nr_pages[i] as u64)
            })
            .sum()
    }
}

/// drain_stock: give a slot's pages back to its memcg's counters and empty the slot; the
/// memcg uncharged, if it held any.
fn drain_slot(s: &mut PcpStock, memcgs: &mut [MemCgroup], i: usize) -> Option<u16> {
    let memcg = s.cached[i];
    if memcg == EMPTY {
        return None;
    }
    let held = s.nr_pages[i];
    if held > 0 {
        page_counter::uncharge(memcgs, Counter::Memory, memcg, held as u64);
    }
    s.cached[i] = EMPTY;
    s.nr_pages[i] = 0;
    (held > 0).then_some(memcg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stock_above_a_batch_goes_back_and_an_eighth_memcg_evicts_one() {
        let mut memcgs: Vec<MemCgroup> = (0..10)
            .map(|i| MemCgroup::new(format!("{i}"), None))
            .collect();
        let tree = MemcgTree::new(&memcgs);
        for cg in &mut memcgs[1..] {
            cg.usage_pages = 200;
        }
        let mut st = Stock::new(2);
        st.refill(&mut memcgs, 0, 1, 63);
        assert!(st.consume(0, 1, 60));
        assert!(!st.consume(0, 1, 4));
        assert!(!st.consume(1, 1, 1));
        st.refill(&mut memcgs, 0, 1, 63);
        // 66 > 64: all of it back to the counter.
        assert_eq!((st.held_pages(1), memcgs[1].usage_pages), (0, 134));
        for m in 1..=7 {
            st.refill(&mut memcgs, 0, m, 10);
        }
        st.refill(&mut memcgs, 0, 8, 10);
        assert_eq!(st.held_pages(8), 10);
        assert_eq!((1..=8).map(|m| st.held_pages(m)).sum::<u64>(), 70);
        st.drain_all(&mut memcgs, &tree, 3);
        assert_eq!((1..=8).map(|m| st.held_pages(m)).sum::<u64>(), 0);
    }
}
