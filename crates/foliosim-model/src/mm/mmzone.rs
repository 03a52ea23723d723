//! The per-node state (include/linux/mmzone.h's pglist_data): every node's zone, kswapd and
//! kcompactd state. `Kernel::pgdat` holds one per node, indexed by nid (NODE_DATA(nid));
//! a node's pfns are [zone.start_pfn, zone.start_pfn + zone.nr_pages) (mm/numa.rs numbers them
//! node after node). The per-memcg LRU lists of a node are in its memcg (mem_cgroup_per_node).

use super::compaction::kcompactd::KcompactdState;
use super::compaction::ZoneCompaction;
use super::page_alloc::Zone;
use super::vmscan::kswapd::KswapdState;
use super::Kernel;

/// pglist_data: a node.
pub struct PgData {
    /// node_id.
    pub node_id: usize,
    /// node_zones[ZONE_NORMAL]: the model's nodes have one zone each.
    pub zone: Zone,
    /// The zone's compact_* fields (deferral, cached scanner positions).
    pub compact: ZoneCompaction,
    /// kswapd's part of the node.
    pub kswapd: KswapdState,
    /// kcompactd's part of the node.
    pub kcompactd: KcompactdState,
    /// The node runs kswapd and kcompactd threads: nodes with CPUs. A memory-only (lower tier)
    /// node is allocated from and freed to, but never reclaimed or compacted (docs/numa-tiering.md).
    pub has_kthreads: bool,
}

impl PgData {
    pub fn new(node_id: usize, zone: Zone, has_kthreads: bool) -> PgData {
        PgData {
            node_id,
            compact: ZoneCompaction::new(zone.start_pfn, zone.nr_pages),
            zone,
            kswapd: KswapdState::default(),
            kcompactd: KcompactdState::default(),
            has_kthreads,
        }
    }

    /// zone_end_pfn.
    #[inline]
    pub fn end_pfn(&self) -> u32 {
        self.zone.start_pfn + self.zone.nr_pages
    }
}

impl Kernel {
    /// NODE_DATA(nid).
    #[inline]
    pub fn node(&self, nid: usize) -> &PgData {
        &self.pgdat[nid]
    }

    /// NODE_DATA(nid), to change.
    #[inline]
    pub fn node_mut(&mut self, nid: usize) -> &mut PgData {
        &mut self.pgdat[nid]
    }

    /// The zone of node `nid`.
    #[inline]
    pub fn node_zone(&self, nid: usize) -> &Zone {
        &self.pgdat[nid].zone
    }

    #[inline]
    pub fn node_zone_mut(&mut self, nid: usize) -> &mut Zone {
        &mut self.pgdat[nid].zone
    }

    /// page_zone(pfn_to_page(pfn)).
    #[inline]
    pub fn zone_of_pfn(&self, pfn: u32) -> &Zone {
        &self.pgdat[self.nodes.nid(pfn)].zone
    }

    /// Every node, in nid order (for_each_online_pgdat).
    pub fn online_pgdats(&self) -> impl Iterator<Item = &PgData> {
        self.pgdat.iter()
    }

    /// The number of nodes (nr_online_nodes).
    #[inline]
    pub fn nr_nodes(&self) -> usize {
        self.pgdat.len()
    }
}
