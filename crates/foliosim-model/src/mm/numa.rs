//! NUMA nodes (mm/numa.c, mm/memory-tiers.c): node 0 holds `machine.memory` and socket 0's
//! CPUs (every CPU without socket nodes); a `[[machine.node]]` with a `socket` holds that
//! socket's CPUs, one without is memory-only, one memory tier below the nodes with CPUs, and
//! the nearest memory-only node is a CPU node's demotion target (next_demotion_node). Pfns
//! are numbered node after node: node n spans [start_pfn[n], start_pfn[n + 1]). Zonelists
//! follow the distance table as build_zonelists orders them.
//!
//! Every node's zone, kswapd and kcompactd state is in `Kernel::pgdat` (mm/mmzone.rs); nodes
//! with CPUs are reclaimed and compacted, memory-only ones are not. Lower nodes' pages are allocated (a fallback of the zonelist, or a
//! demotion target) and freed, and sit on their memcg's per-node LRU lists, but nothing
//! reclaims or compacts a lower node: the seeds never put one under pressure, and a lower node
//! that runs out of memory makes the allocation fall back or fail (docs/model.md).

use super::mempolicy::policy::{NodeMask, ALL_NODES};
use super::page_alloc::AllocFlags;
use super::Kernel;
use crate::engine::Ctx;
use crate::hw::topology::Topology;
use crate::scenario::{Scenario, LOCAL_DISTANCE, LOCAL_DRAM_LATENCY_NS, REMOTE_DISTANCE};

pub struct Nodes {
    /// node_start_pfn of every node, and the end of the last one.
    pub start_pfn: Vec<u32>,
    /// start_pfn[1], where node 0 ends: page_to_nid's common answer without a load of the Vec.
    node0_end_pfn: u32,
    /// Load-to-use latency of each node's memory from the CPUs (node 0's first).
    pub latency_ns: Vec<u64>,
    /// node_state(nid, N_CPU): node 0 and the nodes of the topology's other sockets.
    pub has_cpus: Vec<bool>,
    /// cpu_to_node of every CPU: its socket's node (all node 0's without socket nodes).
    pub cpu_nid: Vec<usize>,
    /// node_distance(a, b) at `a * nr_nodes + b` (the SLIT; 10 local, 20 remote by default).
    distance: Vec<u32>,
    /// Each node's zonelist (node_zonelists[ZONELIST_FALLBACK]): the node itself, then the
    /// others in build_zonelists' order.
    pub zonelist: Vec<Vec<usize>>,
    /// /sys/kernel/mm/numa/demotion_enabled.
    pub demotion_enabled: bool,
}

impl Nodes {
    pub fn new(scenario: &Scenario, node0_pages: u32, topology: Option<&Topology>) -> Nodes {
        let mut start_pfn = vec![0, node0_pages];
        let mut latency_ns = vec![LOCAL_DRAM_LATENCY_NS];
        let mut has_cpus = vec![true];
        for n in &scenario.machine.nodes {
            let start = *start_pfn.last().unwrap();
            start_pfn.push(start + n.memory.pages() as u32);
            let socket_node = n.socket.is_some();
            latency_ns.push(match n.latency_ns {
                Some(ns) => ns,
                None if socket_node => LOCAL_DRAM_LATENCY_NS,
                None => crate::scenario::CXL_LATENCY_NS,
            });
            has_cpus.push(socket_node);
        }
        let nr_nodes = start_pfn.len() - 1;
        let distance = distance_table(scenario, nr_nodes);
        let zonelist = build_all_zonelists(&distance, &has_cpus);
        Nodes {
            node0_end_pfn: start_pfn[1],
            start_pfn,
            latency_ns,
            has_cpus,
            cpu_nid: cpu_nids(scenario, topology),
            distance,
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

    /// numa_node_id() for a caller without its CPU at hand: node 0. Every use marks a place
    /// that assumes one CPU node (docs/numa-tiering.md, "What is left out").
    #[inline]
    pub fn cpu_node(&self) -> usize {
        0
    }

    /// node_distance(from, to).
    pub fn node_distance(&self, from: usize, to: usize) -> u32 {
        self.distance[from * self.nr_nodes() + to]
    }

    /// node_is_toptier: a node with CPUs.
    pub fn is_toptier(&self, nid: usize) -> bool {
        self.has_cpus[nid]
    }

    /// next_demotion_node: one tier down, for a node with CPUs (memory-only nodes are the
    /// bottom tier): the nearest memory-only node (establish_demotion_targets), ties to the
    /// lowest id (the kernel picks among them at random).
    pub fn next_demotion_node(&self, nid: usize) -> Option<usize> {
        if !self.has_cpus[nid] {
            return None;
        }
        (0..self.nr_nodes())
            .filter(|&n| !self.has_cpus[n])
            .min_by_key(|&n| self.node_distance(nid, n))
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

    /// The zones of that zonelist in `nodemask` (for_each_zone_zonelist_nodemask) that
    /// reclaim and compaction work on: those of nodes with CPUs (a memory-only node is never
    /// reclaimed or compacted, docs/numa-tiering.md).
    pub fn reclaim_zonelist(
        &self,
        nid: usize,
        gfp: super::gfp::Gfp,
        nodemask: NodeMask,
    ) -> impl Iterator<Item = usize> + '_ {
        self.zonelist_of(nid, gfp)
            .iter()
            .copied()
            .filter(move |&n| self.has_cpus[n] && nodemask >> n & 1 != 0)
    }

    /// [`Nodes::reclaim_zonelist`], collected (for callers that change the kernel per zone).
    pub fn reclaim_zonelist_vec(
        &self,
        nid: usize,
        gfp: super::gfp::Gfp,
        nodemask: NodeMask,
    ) -> Vec<usize> {
        self.reclaim_zonelist(nid, gfp, nodemask).collect()
    }
}

/// The scenario's SLIT, else LOCAL_DISTANCE to itself and REMOTE_DISTANCE to the others.
fn distance_table(scenario: &Scenario, nr_nodes: usize) -> Vec<u32> {
    match &scenario.machine.node_distance {
        Some(rows) => rows.iter().flatten().copied().collect(),
        None => (0..nr_nodes * nr_nodes)
            .map(|i| match i / nr_nodes == i % nr_nodes {
                true => LOCAL_DISTANCE,
                false => REMOTE_DISTANCE,
            })
            .collect(),
    }
}

/// cpu_to_node: each CPU's socket's node (node 0 holds socket 0), or node 0 for every CPU
/// on a machine without socket nodes.
fn cpu_nids(scenario: &Scenario, topology: Option<&Topology>) -> Vec<usize> {
    let ncpus = scenario.machine.cpus as usize;
    let Some(t) = topology.filter(|_| scenario.machine.nodes.iter().any(|n| n.socket.is_some()))
    else {
        return vec![0; ncpus];
    };
    let mut socket_nid = vec![0; t.spec.sockets as usize];
    for (i, n) in scenario.machine.nodes.iter().enumerate() {
        if let Some(sock) = n.socket {
            socket_nid[sock as usize] = i + 1;
        }
    }
    (0..ncpus)
        .map(|cpu| socket_nid[t.place(cpu).socket as usize])
        .collect()
}

/// __build_all_zonelists: build_zonelists for every node in node order, node_load shared
/// (mm/page_alloc.c).
fn build_all_zonelists(distance: &[u32], has_cpus: &[bool]) -> Vec<Vec<usize>> {
    let nr = has_cpus.len();
    let mut node_load = vec![0u32; nr];
    (0..nr)
        .map(|local| {
            let mut order: Vec<usize> = Vec::with_capacity(nr);
            let mut prev = local;
            while let Some(node) =
                find_next_best_node(local, &order, distance, has_cpus, &node_load)
            {
                // The first node of each distance group is penalised: round-robin among equals.
                if distance[local * nr + node] != distance[local * nr + prev] {
                    node_load[node] += 1;
                }
                order.push(node);
                prev = node;
            }
            order
        })
        .collect()
}

/// find_next_best_node: the local node first, then the nearest unused one, a node below
/// `local` or with CPUs a little farther (PENALTY_FOR_NODE_WITH_CPUS), ties to the less
/// loaded and then the lowest id.
fn find_next_best_node(
    local: usize,
    used: &[usize],
    distance: &[u32],
    has_cpus: &[bool],
    node_load: &[u32],
) -> Option<usize> {
    if !used.contains(&local) {
        return Some(local);
    }
    let nr = has_cpus.len();
    (0..nr).filter(|n| !used.contains(n)).min_by_key(|&n| {
        let val = distance[local * nr + n] + u32::from(n < local) + u32::from(has_cpus[n]);
        // MAX_NUMNODES: the load only breaks ties of distance.
        val * MAX_NUMNODES + node_load[n]
    })
}

/// The kernel's node count limit the load term stays below (CONFIG_NODES_SHIFT 10 on
/// x86_64 distro kernels: 1024).
const MAX_NUMNODES: u32 = 1024;

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

    /// The node the allocation in progress prefers (__alloc_pages' preferred_nid): its
    /// policy's (alloc_pages_mpol), else numa_node_id().
    #[inline]
    pub fn alloc_nid(&self, ctx: &Ctx) -> usize {
        match self.alloc_nodes {
            Some(a) => a.nid,
            None => self.numa_node_id(ctx),
        }
    }

    /// The nodemask of the allocation in progress (ac->nodemask; ALL_NODES: none).
    #[inline]
    pub fn alloc_nodemask(&self) -> NodeMask {
        self.alloc_nodes.map_or(ALL_NODES, |a| a.nodemask)
    }
}

/// get_page_from_freelist over the zonelist of node `nid` (preferred_zoneref): each zone of
/// the allocation's nodemask with its fragmenting fallbacks before the next (locality first),
/// only `nid` with __GFP_THISNODE. As in the kernel, the fallback to another node does not
/// wake its kswapd from the fast path: only nodes with CPUs have one here.
pub fn get_page_from_freelist(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    // One node: its zone is the whole zonelist, and zone_statistics is not shown.
    let page = if k.nodes.nr_nodes() == 1 {
        alloc_on_node(k, ctx, 0, gfp, order, alloc_flags)
    } else {
        get_page_from_zonelist(k, ctx, nid, gfp, order, alloc_flags)
    };
    // prep_new_page: a page that left the free lists with a MIGRC tag is flushed for first.
    super::migrate::flush::migrc::check_flush_task_mgen(k, ctx);
    page
}

/// The zonelist walk of [`get_page_from_freelist`] on a machine of several nodes, counting
/// zone_statistics against the first zone the nodemask allows (ac->preferred_zoneref).
fn get_page_from_zonelist(
    k: &mut Kernel,
    ctx: &mut Ctx,
    nid: usize,
    gfp: super::gfp::Gfp,
    order: u32,
    alloc_flags: AllocFlags,
) -> Option<u32> {
    let nodemask = k.alloc_nodemask();
    let mut preferred = None;
    for i in 0..k.nodes.zonelist_of(nid, gfp).len() {
        let zone_nid = k.nodes.zonelist[nid][i];
        if nodemask >> zone_nid & 1 == 0 {
            continue;
        }
        let preferred_nid = *preferred.get_or_insert(zone_nid);
        if let Some(pfn) = alloc_on_node(k, ctx, zone_nid, gfp, order, alloc_flags) {
            let local_nid = k.numa_node_id(ctx);
            k.zone_statistics(preferred_nid, zone_nid, local_nid);
            return Some(pfn);
        }
    }
    None
}

/// get_page_from_freelist restricted to node `nid`'s zone. A memory-only node has no kswapd,
/// so a boost or a failed watermark there wakes nobody.
#[inline]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ContentClass;
    use crate::mm::memory::touch;
    use crate::mm::mmap::ThpAdvice;
    use crate::mm::page_alloc::Wmark;

    fn kernel(machine: &str) -> Kernel {
        let text =
            format!("{machine}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"4M\"\n");
        Kernel::new(&Scenario::from_toml_str(&text).unwrap())
    }

    fn stat(k: &Kernel, nid: usize, name: &str) -> u64 {
        k.node_vmstat(nid)
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1
    }

    /// Two sockets of 2 CPUs, 64M each: CPUs 0 and 2 on node 0, 1 and 3 on node 1.
    const TWO_SOCKETS: &str = r#"
[machine]
cpus = 4
memory = "64M"
[machine.topology]
sockets = 2
cores_per_llc = 2
[[machine.node]]
memory = "64M"
socket = 1
"#;

    #[test]
    fn sockets_are_nodes_with_cpus_kswapd_and_distance_ordered_zonelists() {
        let k = kernel(TWO_SOCKETS);
        assert_eq!(k.nodes.cpu_nid, [0, 1, 0, 1]);
        assert_eq!(k.nodes.has_cpus, [true, true]);
        assert!(k.pgdat[1].has_kthreads);
        assert_eq!(k.nodes.zonelist, [vec![0, 1], vec![1, 0]]);
        assert_eq!(
            (k.nodes.node_distance(0, 1), k.nodes.node_distance(1, 1)),
            (20, 10)
        );
        assert_eq!(k.nodes.next_demotion_node(1), None);
    }

    #[test]
    fn zonelists_follow_the_slit_as_build_zonelists_orders_them() {
        // Two sockets and two CXL nodes, each CXL node behind one socket.
        let text = r#"
[machine]
cpus = 2
memory = "64M"
node_distance = [[10, 21, 14, 24], [21, 10, 24, 14], [14, 24, 10, 26], [24, 14, 26, 10]]
[machine.topology]
sockets = 2
[[machine.node]]
memory = "64M"
socket = 1
[[machine.node]]
memory = "64M"
[[machine.node]]
memory = "64M"
"#;
        let k = kernel(text);
        assert_eq!(
            k.nodes.zonelist,
            [
                vec![0, 2, 1, 3],
                vec![1, 3, 0, 2],
                vec![2, 0, 1, 3],
                vec![3, 1, 0, 2]
            ]
        );
        assert_eq!(k.nodes.next_demotion_node(0), Some(2));
        assert_eq!(k.nodes.next_demotion_node(1), Some(3));
        // Equal distances: a headless node before one with CPUs or a lower id; then the lowest.
        let k = kernel(
            "[machine]\ncpus = 2\nmemory = \"64M\"\n[machine.topology]\nsockets = 2\n\
             [[machine.node]]\nmemory = \"64M\"\nsocket = 1\n[[machine.node]]\nmemory = \"64M\"\n",
        );
        assert_eq!(k.nodes.zonelist[1], [1, 2, 0]);
        assert_eq!(k.nodes.zonelist[2], [2, 0, 1]);
    }

    #[test]
    fn a_task_on_node_1_allocates_there_until_its_watermark_then_from_node_0() {
        let mut k = kernel(TWO_SOCKETS);
        let mut ctx = Ctx::new(1, 0);
        assert_eq!(k.numa_node_id(&ctx), 1);
        let mm = k.new_mm(0, ContentClass::Usemem);
        let pages = k.nodes.node_pages(1);
        k.mms[mm as usize].mmap(0, pages, ThpAdvice::NoHugepage);
        let mut local = 0;
        let mut index = 0;
        while stat(&k, 0, "numa_miss") == 0 {
            let low_ok = k.node_zone(1).watermark_ok(
                0,
                k.node_zone(1).wmark_pages(Wmark::Low),
                AllocFlags(0),
            );
            touch(&mut k, &mut ctx, mm, 0, index, pages, true).unwrap();
            index += 1;
            if stat(&k, 0, "numa_miss") == 0 {
                local += 1;
            } else {
                assert!(
                    !low_ok,
                    "node 0 used while node 1 was above its low watermark"
                );
            }
        }
        // zone_statistics: the node-1 pages are hits and local there; the one from node 0 a
        // miss and other on node 0, a foreign on node 1 (the preferred node).
        assert!(local > pages as u64 / 2, "{local} of {pages}");
        assert_eq!(stat(&k, 1, "numa_hit"), local);
        assert_eq!(stat(&k, 1, "numa_local"), local);
        assert_eq!(stat(&k, 1, "numa_foreign"), 1);
        assert_eq!(stat(&k, 0, "numa_miss"), 1);
        assert_eq!(stat(&k, 0, "numa_other"), 1);
        assert_eq!(stat(&k, 0, "numa_hit") + stat(&k, 0, "numa_local"), 0);
        crate::mm::invariants::check(&k).unwrap();
    }

    #[test]
    fn nodes_and_sockets_that_disagree_are_refused_by_field() {
        let field = |machine: &str| {
            let text =
                format!("{machine}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"4M\"\n");
            match Scenario::from_toml_str(&text) {
                Err(crate::scenario::ScenarioError::Invalid { field, .. }) => field,
                other => panic!("{other:?}"),
            }
        };
        let node = |socket: u32| format!("[[machine.node]]\nmemory = \"64M\"\nsocket = {socket}\n");
        let m = "[machine]\ncpus = 4\nmemory = \"64M\"\n";
        assert_eq!(field(&format!("{m}{}", node(1))), "machine.node[0].socket");
        let topo = |n: u32| format!("{m}[machine.topology]\nsockets = {n}\ncores_per_llc = 2\n");
        assert_eq!(
            field(&format!("{}{}", topo(2), node(2))),
            "machine.node[0].socket"
        );
        assert_eq!(
            field(&format!("{}{}{}", topo(2), node(1), node(1))),
            "machine.node[1].socket"
        );
        assert_eq!(
            field(&format!("{}{}", topo(3), node(1))),
            "machine.topology.sockets"
        );
        let slit = "node_distance = [[10, 20], [20, 9]]\n";
        assert_eq!(
            field(&format!("{m}{slit}{}", node(1))),
            "machine.node_distance[1][1]"
        );
    }
}
