//! What the zone looks like from outside: /proc/buddyinfo and /proc/pagetypeinfo as
//! mm/vmstat.c prints them (node 0, zone "Normal"), free blocks per order, and the
//! allocator's own invariants for mm/invariants.rs.

use super::migratetype::{MigrateType, PAGEBLOCK_NR_PAGES, PAGEBLOCK_ORDER};
use super::pcp::{pindex_to_order, NR_PCP_LISTS};
use super::{Zone, MAX_PAGE_ORDER};
use std::fmt::Write as _;

const NODE: u32 = 0;
const ZONE_NAME: &str = "Normal";
/// pagetypeinfo_showfree_print stops counting a list at this many blocks and prints ">".
const PAGETYPEINFO_COUNT_CAP: u64 = 100_000;

impl Zone {
    /// Free blocks per order on the buddy lists (free_area[order].nr_free).
    pub fn free_blocks_by_order(&self) -> Vec<usize> {
        (0..=MAX_PAGE_ORDER)
            .map(|o| self.area.nr_free(o) as usize)
            .collect()
    }

    /// /proc/buddyinfo (frag_show_print).
    pub fn buddyinfo(&self) -> String {
        let mut s = format!("Node {NODE}, zone {ZONE_NAME:>8} ");
        for order in 0..=MAX_PAGE_ORDER {
            write!(s, "{:6} ", self.area.nr_free(order)).unwrap();
        }
        s.push('\n');
        s
    }

    /// /proc/pagetypeinfo (pagetypeinfo_show without page_owner's mixed-block counts), for a
    /// kernel without CONFIG_CMA.
    pub fn pagetypeinfo(&self) -> String {
        let mut s = format!("Page block order: {PAGEBLOCK_ORDER}\n");
        writeln!(s, "Pages per block:  {PAGEBLOCK_NR_PAGES}").unwrap();
        s.push('\n');
        write!(s, "{:<43} ", "Free pages count per migrate type at order").unwrap();
        for order in 0..=MAX_PAGE_ORDER {
            write!(s, "{order:6} ").unwrap();
        }
        s.push('\n');
        for mt in MigrateType::ALL {
            write!(
                s,
                "Node {NODE:4}, zone {ZONE_NAME:>8}, type {:>12} ",
                mt.name()
            )
            .unwrap();
            for order in 0..=MAX_PAGE_ORDER {
                let n = self.area.nr_blocks(order, mt) as u64;
                let overflow = if n >= PAGETYPEINFO_COUNT_CAP { ">" } else { "" };
                write!(s, "{overflow}{:6} ", n.min(PAGETYPEINFO_COUNT_CAP)).unwrap();
            }
            s.push('\n');
        }
        write!(s, "\n{:<23}", "Number of blocks type ").unwrap();
        for mt in MigrateType::ALL {
            write!(s, "{:>12} ", mt.name()).unwrap();
        }
        s.push('\n');
        write!(s, "Node {NODE}, zone {ZONE_NAME:>8} ").unwrap();
        for mt in MigrateType::ALL {
            write!(s, "{:12} ", self.area.nr_pageblocks[mt as usize]).unwrap();
        }
        s.push('\n');
        s
    }

    /// Every free page, on the buddy or the per-CPU lists: a bitmap over pfns.
    pub fn free_bitmap(&self) -> Vec<bool> {
        self.check()
            .unwrap_or_else(|e| panic!("page allocator: {e}"))
    }

    /// The allocator's invariants: the buddy lists' (links, orders, alignment, each block on
    /// its pageblock type's list, nr_free and NR_FREE_PAGES sums, pageblock counts), each pcp
    /// block aligned, on its order's list and in no other free block, and pcp->count. Returns
    /// the bitmap of free pages (buddy or pcp).
    pub fn check(&self) -> Result<Vec<bool>, String> {
        let mut free = self.area.check()?;
        for (cpu, pcp) in self.pcp.iter().enumerate() {
            let mut count = 0;
            for pindex in 0..NR_PCP_LISTS {
                let order = pindex_to_order(pindex);
                for &pfn in &pcp.lists[pindex] {
                    if pfn % (1 << order) != 0
                        || pfn + (1 << order) > self.start_pfn + self.nr_pages
                    {
                        return Err(format!(
                            "cpu {cpu} pcp list {pindex}: order-{order} block at pfn {pfn} is misaligned"
                        ));
                    }
                    for p in pfn..pfn + (1 << order) {
                        if std::mem::replace(&mut free[p as usize], true) {
                            return Err(format!(
                                "pfn {p} is on cpu {cpu}'s pcp list and free elsewhere"
                            ));
                        }
                        if self.area.is_movable_ops(p) {
                            return Err(format!(
                                "pfn {p} on a pcp list is marked as having movable_ops"
                            ));
                        }
                    }
                    count += 1 << order;
                }
            }
            if count != pcp.count {
                return Err(format!(
                    "cpu {cpu}: pcp->count {} but its lists hold {count} pages",
                    pcp.count
                ));
            }
        }
        Ok(free)
    }
}
