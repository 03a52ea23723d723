//! NUMA nodes (mm/numa.c, mm/memory-tiers.c): node 0 holds `machine.memory` and every CPU;
//! nodes 1.. are memory-only (`[[machine.node]]`), each one memory tier below node 0, and
//! node 0's demotion target is node 1 (next_demotion_node). Pfns are numbered node after node:
//! node n spans [start_pfn[n], start_pfn[n + 1]).
//!
//! Node 0's zone is `Kernel::zone` (every mechanism that reclaims or compacts works there);
//! lower nodes' zones are here. Their pages are allocated (a fallback of the zonelist, or a
//! demotion target) and freed, and sit on their memcg's per-node LRU lists, but nothing
//! reclaims or compacts a lower node: the seeds never put one under pressure, and a lower node
//! that runs out of memory makes the allocation fall back or fail (docs/model.md).

use super::page_alloc::{AllocFlags, Zone};
use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::{Scenario, LOCAL_DRAM_LATENCY_NS};

pub struct Nodes {
    /// node_start_pfn of every node, and the end of the last one.
    pub start_pfn: Vec<u32>,
    /// start_pfn[1], where node 0 ends: page_to_nid's common answer without a load of the Vec.
    node0_end_pfn: u32,
    /// Load-to-use latency of each node's memory from the CPUs (node 0's first).
    pub latency_ns: Vec<u64>,
    /// The zones of nodes 1.. (`lower[n - 1]`).
    pub lower: Vec<Zone>,
    /// /sys/kernel/mm/numa/demotion_enabled.
    pub demotion_enabled: bool,
}

impl Nodes {
    pub fn new(
        scenario: &Scenario,
        node0_pages: u32,
        ncpus: usize,
    ) -> Result<Nodes, crate::footprint::AllocFailed> {
        let mut start_pfn = vec![0, node0_pages];
        let mut latency_ns = vec![LOCAL_DRAM_LATENCY_NS];
        let mut lower = Vec::new();
        for n in &scenario.machine.nodes {
            let start = *start_pfn.last().unwrap();
            let nr = n.memory.pages() as u32;
            lower.push(Zone::try_new_span(
                start,
                nr,
                ncpus,
                Zone::default_sysctl(nr),
            )?);
            start_pfn.push(start + nr);
            latency_ns.push(n.latency_ns.unwrap_or(crate::scenario::CXL_LATENCY_NS));
        }
        Ok(Nodes {
            node0_end_pfn: start_pfn[1],
            start_pfn,
            latency_ns,
            lower,
            demotion_enabled: scenario.sysfs.numa.demotion_enabled.unwrap_or(false),
        })
    }

    pub fn nr_nodes(&self) -> usize {
        self.start_pfn.len() - 1
    }

    /// Every pfn of every node.
    pub fn total_pages(&self) -> u32 {
        *self.start_pfn.last().unwrap()
    }

    /// page_to_nid.
    #[inline]
    pub fn nid(&self, pfn: u32) -> usize {
        if pfn < self.node0_end_pfn {
            return 0;
        }
        self.start_pfn.partition_point(|&s| s <= pfn) - 1
    }

    /// node_is_toptier: node 0, the node with the CPUs.
    pub fn is_toptier(nid: usize) -> bool {
        nid == 0
    }

    /// next_demotion_node: one tier down, for node 0 only (memory-only nodes are the bottom).
    pub fn next_demotion_node(&self, nid: usize) -> Option<usize> {
        (nid == 0 && self.nr_nodes() > 1).then_some(1)
    }
}

impl Kernel {
    /// The zone of node `nid`.
    pub fn node_zone_mut(&mut self, nid: usize) -> &mut Zone {
        if nid == 0 {
            &mut self.zone
        } else {
            &mut self.nodes.lower[nid - 1]
        }
    }

    pub fn node_zone(&self, nid: usize) -> &Zone {
        if nid == 0 {
            &self.zone
        } else {
            &self.nodes.lower[nid - 1]
        }
    }

    /// __free_pages to the zone the block belongs to.
    pub fn free_pages(&mut self, ctx: &mut Ctx, pfn: u32, order: u32) {
        let nid = self.nodes.nid(pfn);
        self.node_zone_mut(nid).free(ctx, pfn, order);
    }

    /// The zonelist's fallback past node 0: the first lower node with a free block of `order`
    /// above its low watermark (get_page_from_freelist walks the zonelist in distance order).
    pub fn alloc_lower_nodes(
        &mut self,
        ctx: &mut Ctx,
        gfp: super::gfp::Gfp,
        order: u32,
        alloc_flags: AllocFlags,
    ) -> Option<u32> {
        if gfp.contains(super::gfp::Gfp::THISNODE) {
            return None;
        }
        for i in 0..self.nodes.lower.len() {
            if let Some(pfn) = alloc_on_node(self, ctx, i + 1, gfp, order, alloc_flags) {
                return Some(pfn);
            }
        }
        None
    }
}

/// get_page_from_freelist over the zonelist: node 0 (with fragmenting fallbacks before
/// leaving the node: locality first), then the lower nodes unless __GFP_THISNODE.
pub fn get_page_from_freelist(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let page = k
        .zone
        .get_page_from_freelist(&mut k.kswapd, &k.folios, ctx, gfp, order, alloc_flags)
        .or_else(|| {
            if k.nodes.lower.is_empty() {
                None
            } else {
                k.alloc_lower_nodes(ctx, gfp, order, alloc_flags)
            }
        });
    // prep_new_page: a page that left the free lists with a MIGRC tag is flushed for first.
    super::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
    page
}

/// get_page_from_freelist restricted to node `nid` (> 0): lower nodes have no kswapd, so a
/// boost or a failed watermark wakes nobody.
pub fn alloc_on_node(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    debug_assert!(nid > 0);
    let mut no_kswapd = super::vmscan::kswapd::KswapdState::default();
    k.nodes.lower[nid - 1].get_page_from_freelist(
        &mut no_kswapd,
        &k.folios,
        ctx,
        gfp,
        order,
        alloc_flags,
    )
}
