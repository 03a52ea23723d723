//! NUMA nodes (mm/numa.c, mm/memory-tiers.c): node 0 holds `machine.memory` and every CPU;
//! nodes 1.. are memory-only (`[[machine.node]]`), each one memory tier below node 0, and
//! node 0's demotion target is node 1 (next_demotion_node). Pfns are numbered node after node:
//! node n spans [start_pfn[n], start_pfn[n + 1]).
//!
//! Every node's zone, kswapd and kcompactd state is in `Kernel::pgdat` (mm/mmzone.rs); nodes
//! with CPUs are reclaimed and compacted, memory-only ones are not. Lower nodes' pages are allocated (a fallback of the zonelist, or a
//! demotion target) and freed, and sit on their memcg's per-node LRU lists, but nothing
//! reclaims or compacts a lower node: the seeds never put one under pressure, and a lower node
//! that runs out of memory makes the allocation fall back or fail (docs/model.md).

use super::page_alloc::AllocFlags;
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
    /// node_state(nid, N_CPU): the node has CPUs (node 0 holds every CPU for now).
    pub has_cpus: Vec<bool>,
    /// cpu_to_node of every CPU (all node 0's for now).
    pub cpu_nid: Vec<usize>,
    /// Each node's zonelist (node_zonelists[ZONELIST_FALLBACK]): the node itself, then the
    /// others nearest first (build_zonelists; the lower tiers in node order).
    pub zonelist: Vec<Vec<usize>>,
    /// /sys/kernel/mm/numa/demotion_enabled.
    pub demotion_enabled: bool,
}

impl Nodes {
    pub fn new(scenario: &Scenario, node0_pages: u32) -> Nodes {
        let mut start_pfn = vec![0, node0_pages];
        let mut latency_ns = vec![LOCAL_DRAM_LATENCY_NS];
        for n in &scenario.machine.nodes {
            let start = *start_pfn.last().unwrap();
            start_pfn.push(start + n.memory.pages() as u32);
            latency_ns.push(n.latency_ns.unwrap_or(crate::scenario::CXL_LATENCY_NS));
        }
        let nr_nodes = start_pfn.len() - 1;
        let has_cpus = (0..nr_nodes).map(|nid| nid == 0).collect();
        // Distance order: the lower tiers are all one tier below node 0, ties by node id.
        let zonelist = (0..nr_nodes)
            .map(|nid| {
                std::iter::once(nid)
                    .chain((0..nr_nodes).filter(|&n| n != nid))
                    .collect()
            })
            .collect();
        Nodes {
            node0_end_pfn: start_pfn[1],
            start_pfn,
            latency_ns,
            has_cpus,
            cpu_nid: vec![0; scenario.machine.cpus as usize],
            zonelist,
            demotion_enabled: scenario.sysfs.numa.demotion_enabled.unwrap_or(false),
        }
    }

    pub fn nr_nodes(&self) -> usize {
        self.start_pfn.len() - 1
    }

    /// Every pfn of every node.
    pub fn total_pages(&self) -> u32 {
        *self.start_pfn.last().unwrap()
    }

    /// Node `nid`'s pages.
    pub fn node_pages(&self, nid: usize) -> u32 {
        self.start_pfn[nid + 1] - self.start_pfn[nid]
    }

    /// page_to_nid.
    #[inline]
    pub fn nid(&self, pfn: u32) -> usize {
        if pfn < self.node0_end_pfn {
            return 0;
        }
        self.start_pfn.partition_point(|&s| s <= pfn) - 1
    }

    /// cpu_to_node(cpu).
    #[inline]
    pub fn cpu_to_node(&self, cpu: usize) -> usize {
        self.cpu_nid[cpu]
    }

    /// numa_node_id() for a caller without its CPU at hand: the one node with CPUs. Every use
    /// marks a place that assumes one CPU node (docs/numa-tiering.md, "What is left out").
    #[inline]
    pub fn cpu_node(&self) -> usize {
        debug_assert_eq!(self.has_cpus.iter().filter(|&&c| c).count(), 1);
        0
    }

    /// node_is_toptier: a node with CPUs.
    pub fn is_toptier(&self, nid: usize) -> bool {
        self.has_cpus[nid]
    }

    /// next_demotion_node: one tier down, for a node with CPUs (memory-only nodes are the
    /// bottom tier).
    pub fn next_demotion_node(&self, nid: usize) -> Option<usize> {
        (self.has_cpus[nid] && self.nr_nodes() > 1)
            .then(|| (0..self.nr_nodes()).find(|&n| !self.has_cpus[n]))
            .flatten()
    }

    /// The zonelist of `nid` as an allocation with `gfp` walks it: `nid` alone with
    /// __GFP_THISNODE.
    pub fn zonelist_of(&self, nid: usize, gfp: super::gfp::Gfp) -> &[usize] {
        let list = &self.zonelist[nid];
        if gfp.contains(super::gfp::Gfp::THISNODE) {
            &list[..1]
        } else {
            list
        }
    }

    /// The zones of that zonelist that reclaim and compaction work on: those of nodes with
    /// CPUs (a memory-only node is never reclaimed or compacted, docs/numa-tiering.md).
    pub fn reclaim_zonelist(
        &self,
        nid: usize,
        gfp: super::gfp::Gfp,
    ) -> impl Iterator<Item = usize> + '_ {
        self.zonelist_of(nid, gfp)
            .iter()
            .copied()
            .filter(|&n| self.has_cpus[n])
    }

    /// [`Nodes::reclaim_zonelist`], collected (for callers that change the kernel per zone).
    pub fn reclaim_zonelist_vec(&self, nid: usize, gfp: super::gfp::Gfp) -> Vec<usize> {
        self.reclaim_zonelist(nid, gfp).collect()
    }
}

impl Kernel {
    /// __free_pages to the zone the block belongs to.
    pub fn free_pages(&mut self, ctx: &mut Ctx, pfn: u32, order: u32) {
        let nid = self.nodes.nid(pfn);
        self.pgdat[nid].zone.free(ctx, pfn, order);
    }

    /// numa_node_id() of the CPU of `ctx`.
    #[inline]
    pub fn numa_node_id(&self, ctx: &Ctx) -> usize {
        self.nodes.cpu_to_node(ctx.cpu)
    }
}

/// get_page_from_freelist over the zonelist of node `nid` (preferred_zoneref): each zone with
/// its fragmenting fallbacks before the next (locality first), only `nid` with
/// __GFP_THISNODE. As in the kernel, the fallback to another node does not wake its kswapd
/// from the fast path: only nodes with CPUs have one here.
pub fn get_page_from_freelist(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let mut page = None;
    for i in 0..k.nodes.zonelist_of(nid, gfp).len() {
        let zone_nid = k.nodes.zonelist[nid][i];
        page = alloc_on_node(k, ctx, zone_nid, gfp, order, alloc_flags);
        if page.is_some() {
            let local_nid = k.numa_node_id(ctx);
            k.zone_statistics(nid, zone_nid, local_nid);
            break;
        }
    }
    // prep_new_page: a page that left the free lists with a MIGRC tag is flushed for first.
    super::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
    page
}

/// get_page_from_freelist restricted to node `nid`'s zone. A memory-only node has no kswapd,
/// so a boost or a failed watermark there wakes nobody.
pub fn alloc_on_node(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let pgdat = &mut k.pgdat[nid];
    if pgdat.has_kthreads {
        return pgdat.zone.get_page_from_freelist(
            &mut pgdat.kswapd,
            &k.folios,
            ctx,
            gfp,
            order,
            alloc_flags,
        );
    }
    let mut no_kswapd = super::vmscan::kswapd::KswapdState::default();
    pgdat
        .zone
        .get_page_from_freelist(&mut no_kswapd, &k.folios, ctx, gfp, order, alloc_flags)
}
