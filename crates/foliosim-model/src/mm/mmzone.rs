//! The per-node state (include/linux/mmzone.h's pglist_data): every node's zone, kswapd and
//! kcompactd state. `Kernel::pgdat` holds one per node, indexed by nid (NODE_DATA(nid));
//! a node's pfns are [zone.start_pfn, zone.start_pfn + zone.nr_pages) (mm/numa.rs numbers them
//! node after node). The per-memcg LRU lists of a node are in its memcg (mem_cgroup_per_node).

use super::compaction::kcompactd::KcompactdState;
use super::compaction::ZoneCompaction;
use super::page_alloc::Zone;
use super::vmscan::kswapd::KswapdState;
use super::vmstat::VmEvent;
use super::Kernel;

/// enum numa_stat_item, as zone_statistics and alloc_pages_mpol (interleave) count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumaStat {
    /// Allocated on the node the allocation preferred.
    Hit,
    /// Allocated here though another node was preferred.
    Miss,
    /// Preferred here but allocated on another node.
    Foreign,
    /// Allocated here by a CPU of this node.
    Local,
    /// Allocated here by a CPU of another node.
    Other,
    /// NUMA_INTERLEAVE_HIT: an interleaved allocation that got the node it was meant for.
    InterleaveHit,
}

/// The reclaim counters each node keeps (its zone's events; /proc/vmstat sums them).
pub const NODE_RECLAIM_EVENTS: [VmEvent; 10] = [
    VmEvent::PgstealKswapd,
    VmEvent::PgstealDirect,
    VmEvent::PgstealKhugepaged,
    VmEvent::PgstealAnon,
    VmEvent::PgstealFile,
    VmEvent::PgscanKswapd,
    VmEvent::PgscanDirect,
    VmEvent::PgscanKhugepaged,
    VmEvent::PgscanAnon,
    VmEvent::PgscanFile,
];

pub const NR_NUMA_STAT: usize = 6;
pub const NUMA_STAT_NAMES: [&str; NR_NUMA_STAT] = [
    "numa_hit",
    "numa_miss",
    "numa_foreign",
    "numa_local",
    "numa_other",
    "numa_interleave",
];

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
    /// The node's NUMA allocation counters (/sys/devices/system/node/nodeN/numastat).
    pub numa_stat: [u64; NR_NUMA_STAT],
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
            numa_stat: [0; NR_NUMA_STAT],
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

    /// zone_statistics: a block allocated on node `zone_nid` for an allocation that preferred
    /// `preferred_nid`, by a CPU of node `local_nid`.
    #[inline]
    pub fn zone_statistics(&mut self, preferred_nid: usize, zone_nid: usize, local_nid: usize) {
        let local = if zone_nid == local_nid {
            NumaStat::Local
        } else {
            NumaStat::Other
        };
        if zone_nid == preferred_nid {
            self.pgdat[zone_nid].numa_stat[NumaStat::Hit as usize] += 1;
        } else {
            self.pgdat[zone_nid].numa_stat[NumaStat::Miss as usize] += 1;
            self.pgdat[preferred_nid].numa_stat[NumaStat::Foreign as usize] += 1;
        }
        self.pgdat[zone_nid].numa_stat[local as usize] += 1;
    }

    /// /sys/devices/system/node/nodeN/vmstat (the model's part): the NUMA counters, the free
    /// pages of node `nid`, and its share of reclaim's pgscan_* / pgsteal_*. Those are
    /// global vm events in 6.18; counting them per node follows "mm: move pgscan and pgsteal
    /// to node stats" (JP Kobryn, v2, Feb 2026), with 6.18's rule of which reclaim counts.
    pub fn node_vmstat(&self, nid: usize) -> Vec<(&'static str, u64)> {
        let p = &self.pgdat[nid];
        let mut v: Vec<(&'static str, u64)> = NUMA_STAT_NAMES
            .iter()
            .zip(p.numa_stat)
            .map(|(&n, c)| (n, c))
            .collect();
        v.push(("nr_free_pages", p.zone.nr_free_pages()));
        v.push(("nr_anon_transparent_hugepages", self.nr_anon_thps(nid)));
        v.extend(
            NODE_RECLAIM_EVENTS
                .iter()
                .map(|&e| (e.name(), p.zone.events.get(e))),
        );
        v
    }

    /// NR_ANON_THPS of node `nid`: its anonymous folios of PMD order (naturally aligned, so
    /// one look per PMD-sized range of the node).
    fn nr_anon_thps(&self, nid: usize) -> u64 {
        use super::folio::flags;
        let pmd = 1u32 << crate::scenario::PMD_ORDER;
        let p = &self.pgdat[nid];
        (p.zone.start_pfn.div_ceil(pmd) * pmd..p.end_pfn())
            .step_by(pmd as usize)
            .filter(|&pfn| {
                let f = &self.folios;
                f.test(pfn, flags::ALLOCATED)
                    && !f.test(pfn, flags::FILE)
                    && f.order[pfn as usize] as u32 == crate::scenario::PMD_ORDER
            })
            .count() as u64
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
