//! Per-node invariants (pglist_data, mm/mmzone.rs), called from invariants::check with the
//! free-page map it built: the nodes tile the pfns, each node's free pages are its zone's,
//! only nodes with kswapd threads ever have one woken or are scanned by reclaim, each node's
//! reclaim steals no more than it scans, zone_statistics's counters agree, every CPU is on a
//! node with CPUs, and each zonelist is its node then every other node once.

use super::mmzone::{NumaStat, PgData};
use super::vmstat::VmEvent;
use super::Kernel;

pub fn check(k: &Kernel, free: &[bool]) -> Result<(), String> {
    if k.nr_nodes() != k.nodes.nr_nodes() {
        return Err(format!(
            "{} pglist_data for {} nodes",
            k.nr_nodes(),
            k.nodes.nr_nodes()
        ));
    }
    check_cpus_and_zonelists(k)?;
    let (mut miss, mut foreign) = (0u64, 0u64);
    for (nid, p) in k.online_pgdats().enumerate() {
        check_span(k, nid)?;
        let span = p.zone.start_pfn as usize..p.end_pfn() as usize;
        let nr_free = free[span].iter().filter(|&&f| f).count() as u64;
        let counted = p.zone.nr_free_pages() + p.zone.nr_pcp_pages();
        if nr_free != counted {
            return Err(format!(
                "node {nid}: {nr_free} free pages in its span, its zone counts {counted}"
            ));
        }
        if !p.has_kthreads && (p.kswapd.woken || p.kcompactd.woken) {
            return Err(format!(
                "node {nid} has no kswapd or kcompactd, yet one was woken"
            ));
        }
        check_reclaim_counts(p)?;
        let s = &p.numa_stat;
        let placed = s[NumaStat::Hit as usize] + s[NumaStat::Miss as usize];
        let by_cpu = s[NumaStat::Local as usize] + s[NumaStat::Other as usize];
        if placed != by_cpu {
            return Err(format!(
                "node {nid}: numa_hit + numa_miss = {placed}, numa_local + numa_other = {by_cpu}"
            ));
        }
        // An interleave hit is a block on the node its policy preferred: a numa_hit too.
        if s[NumaStat::InterleaveHit as usize] > s[NumaStat::Hit as usize] {
            return Err(format!("node {nid}: numa_interleave above numa_hit"));
        }
        miss += s[NumaStat::Miss as usize];
        foreign += s[NumaStat::Foreign as usize];
    }
    if miss != foreign {
        return Err(format!(
            "numa_miss {miss} != numa_foreign {foreign} over the nodes"
        ));
    }
    Ok(())
}

/// cpu_to_node names a node with CPUs (and kswapd); node_zonelists[nid] starts at `nid`
/// and holds each node once.
fn check_cpus_and_zonelists(k: &Kernel) -> Result<(), String> {
    let nodes = &k.nodes;
    if let Some(cpu) = (0..nodes.cpu_nid.len())
        .find(|&c| !nodes.has_cpus[nodes.cpu_nid[c]] || !k.pgdat[nodes.cpu_nid[c]].has_kthreads)
    {
        return Err(format!(
            "CPU {cpu} is on node {}, a node without CPUs or kswapd",
            nodes.cpu_nid[cpu]
        ));
    }
    for (nid, list) in nodes.zonelist.iter().enumerate() {
        let mut sorted = list.clone();
        sorted.sort_unstable();
        if list.first() != Some(&nid) || !sorted.iter().copied().eq(0..nodes.nr_nodes()) {
            return Err(format!("node {nid}'s zonelist {list:?}"));
        }
    }
    Ok(())
}

/// A node's reclaim counters: nothing scanned on a node without kswapd (memory-only nodes are
/// never reclaimed), and no more stolen than scanned, per reclaimer and per type.
fn check_reclaim_counts(p: &PgData) -> Result<(), String> {
    let ev = |e| p.zone.events.get(e);
    let nid = p.node_id;
    let scanned = ev(VmEvent::PgscanAnon) + ev(VmEvent::PgscanFile);
    if !p.has_kthreads && scanned > 0 {
        return Err(format!(
            "node {nid} has no kswapd, yet reclaim scanned {scanned} pages"
        ));
    }
    for (scan, steal) in [
        (VmEvent::PgscanKswapd, VmEvent::PgstealKswapd),
        (VmEvent::PgscanDirect, VmEvent::PgstealDirect),
        (VmEvent::PgscanKhugepaged, VmEvent::PgstealKhugepaged),
        (VmEvent::PgscanAnon, VmEvent::PgstealAnon),
        (VmEvent::PgscanFile, VmEvent::PgstealFile),
    ] {
        if ev(steal) > ev(scan) {
            return Err(format!(
                "node {nid}: {} {} above {} {}",
                steal.name(),
                ev(steal),
                scan.name(),
                ev(scan)
            ));
        }
    }
    Ok(())
}

/// Node `nid` is NODE_DATA(nid) and spans exactly its pfns in mm/numa.rs's numbering.
fn check_span(k: &Kernel, nid: usize) -> Result<(), String> {
    let p = k.node(nid);
    let (start, end) = (k.nodes.start_pfn[nid], k.nodes.start_pfn[nid + 1]);
    if p.node_id != nid || p.zone.start_pfn != start || p.end_pfn() != end {
        return Err(format!(
            "pgdat {nid} (node_id {}) spans {}..{}, the node {start}..{end}",
            p.node_id,
            p.zone.start_pfn,
            p.end_pfn()
        ));
    }
    Ok(())
}
