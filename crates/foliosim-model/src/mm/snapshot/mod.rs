//! A host snapshot's start (`[machine.start] snapshot`): the free lists and pageblock types of
//! a running machine (`foliosim snapshot --live`, parse.rs) scaled to each node's zone and laid
//! out (layout.rs), with every page not free in use as on the host: the used pages of
//! movable pageblocks as clean, unmapped page cache of one file on the scenario's disk (a
//! long-running host's movable memory is mostly page cache; reclaim and compaction treat them
//! as the kernel would), those of the other types as kernel memory held for the whole run.
//! Deterministic: no draw, the layout follows from the counts. The counters restart after it,
//! as after the aging prelude (workload/aging.rs).

pub mod layout;
pub mod parse;

use super::folio::flags;
use super::gfp::Gfp;
use super::memcontrol::ROOT_MEMCG;
use super::page_alloc::buddy::NR_PAGE_ORDERS;
use super::page_alloc::{MigrateType, Zone, PAGEBLOCK_NR_PAGES};
use super::{Kernel, MmError};
use crate::engine::Ctx;
pub use parse::HostSnapshot;

/// Load snapshot `file` (its `text`) into every node; the workload starts when it returns.
pub fn load(k: &mut Kernel, file: &str, text: &str) -> Result<(), MmError> {
    let snap = HostSnapshot::parse(file, text).map_err(MmError::Snapshot)?;
    let mut movable_used = Vec::new();
    for nid in 0..k.nodes.nr_nodes() {
        let zone = k.node_zone_mut(nid);
        let bad = |e: String| MmError::Snapshot(format!("{file}: node {nid}: {e}"));
        if !zone.nr_pages.is_multiple_of(PAGEBLOCK_NR_PAGES)
            || !zone.start_pfn.is_multiple_of(2 * PAGEBLOCK_NR_PAGES)
        {
            return Err(bad(
                "the node's memory must be a multiple of 2 MiB starting on 4 MiB".into(),
            ));
        }
        let blocks = layout::layout(&layout::scale(&snap, zone.nr_pages as u64)).map_err(bad)?;
        let kernel_used = rebuild(zone, &blocks, &mut movable_used);
        k.kmem.snapshot_pages.extend(kernel_used);
    }
    add_page_cache(k, file, &movable_used)?;
    crate::workload::aging::reset_counters(k);
    Ok(())
}

/// The zone's free lists emptied and filled again with the layout's free blocks, its
/// pageblocks retyped. The used pages of movable pageblocks go to `movable_used`; those of
/// the others are returned.
fn rebuild(zone: &mut Zone, blocks: &[layout::Block], movable_used: &mut Vec<u32>) -> Vec<u32> {
    debug_assert_eq!(zone.nr_pcp_pages(), 0, "a snapshot loads at boot");
    let start = zone.start_pfn;
    let area = zone.free_area_mut();
    for order in 0..NR_PAGE_ORDERS as u32 {
        for mt in MigrateType::ALL {
            while let Some(pfn) = area.head(order, mt) {
                area.del_and_account(pfn, order, mt);
            }
        }
    }
    let base = |i: usize| start + i as u32 * PAGEBLOCK_NR_PAGES;
    for (i, b) in blocks.iter().enumerate() {
        area.set_pageblock_mt(base(i), b.mt);
    }
    for (i, b) in blocks.iter().enumerate() {
        for &(offset, order) in &b.holes {
            area.free_one_page(base(i) + offset, order, b.mt, true);
        }
    }
    let free = zone.free_bitmap();
    let mut kernel_used = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let used = (base(i)..base(i + 1)).filter(|&p| !free[p as usize]);
        if b.mt == MigrateType::Movable {
            movable_used.extend(used);
        } else {
            kernel_used.extend(used);
        }
    }
    kernel_used
}

/// The used movable pages as clean, unmapped page cache of one new file (filemap_add_folio
/// with its read already completed), on the inactive file LRU.
fn add_page_cache(k: &mut Kernel, file: &str, pfns: &[u32]) -> Result<(), MmError> {
    let id = k.pagecache.files.len() as u32;
    k.pagecache.create(id, pfns.len() as u32).map_err(|e| {
        MmError::Snapshot(format!(
            "{file}: its {} used movable pages load as page cache of one file on [machine.disk]: {e}",
            pfns.len()
        ))
    })?;
    let mut ctx = Ctx::new(0, 0);
    for (index, &pfn) in pfns.iter().enumerate() {
        let gfp = Gfp::GFP_HIGHUSER_MOVABLE;
        if !super::filemap::filemap_add_folio(k, &mut ctx, id, index as u32, pfn, ROOT_MEMCG, gfp) {
            return Err(MmError::Snapshot(format!(
                "{file}: the root memcg refused page {index}"
            )));
        }
        k.folios.clear(pfn, flags::LOCKED);
    }
    k.workload_start_ns = ctx.now_ns;
    Ok(())
}

#[cfg(test)]
mod tests;
