//! NUMA in a scenario: nodes beside node 0 (`[[machine.node]]`: memory-only, or a socket's),
//! the node distance table (`machine.node_distance`), NUMA balancing's
//! sysctls (`[sysctl.kernel]`), the demotion switch (`[sysfs.numa]`), and how migration flushes
//! the TLB (`kernel.migrate_tlb_flush`).

use super::{invalid, Bytes, ScenarioError};
use serde::{Deserialize, Serialize};

/// A node beyond node 0: memory without CPUs (a CXL expander, or a VM's second node with its
/// CPUs elsewhere), a lower memory tier than node 0 (memory_tiers: a CPU-less node of higher
/// abstract distance); or, with `socket`, the memory and CPUs of one socket of the topology.
/// Node 0 holds `machine.memory` and socket 0's CPUs (every CPU without socket nodes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub memory: Bytes,
    /// CPUs on this node: only 0 (a node's CPUs come from its `socket`).
    #[serde(default)]
    pub cpus: u32,
    /// The topology's socket whose CPUs are on this node (1 .. sockets - 1; node 0 holds
    /// socket 0). None: memory-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<u32>,
    /// Load-to-use latency of this node's memory from node 0's CPUs. Default: CXL_LATENCY_NS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
}

/// Default latency of a CPU-less node's memory: CXL Type-3 memory measured at 170-250 ns
/// load-to-use on Sapphire Rapids, about 2x local DRAM (Sun et al., "Demystifying CXL Memory
/// with Genuine CXL-Ready Systems and Devices", MICRO 2023). A VM's remote node (the seed's)
/// is slower than local DRAM by the host's inter-socket latency instead: set it per scenario.
pub const CXL_LATENCY_NS: u64 = 220;
/// Local DRAM load-to-use latency, node 0. Estimate (typical server DDR5, ~100 ns).
pub const LOCAL_DRAM_LATENCY_NS: u64 = 100;
/// node_distance of a node to itself (include/linux/topology.h LOCAL_DISTANCE; ACPI SLIT's
/// normalised local latency).
pub const LOCAL_DISTANCE: u32 = 10;
/// node_distance between two nodes without a SLIT (REMOTE_DISTANCE, the kernel's default).
pub const REMOTE_DISTANCE: u32 = 20;

/// `/proc/sys/kernel/numa_balancing*`. None leaves the host's value (live) and is the kernel's
/// default in the sim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSysctl {
    /// `numa_balancing`: 0 off (default), 1 NUMA_BALANCING_NORMAL, 2 MEMORY_TIERING, 3 both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<u32>,
    /// `numa_balancing_hot_threshold_ms` (default 1000): a slow-tier page faulting sooner than
    /// this after the scanner marked it is hot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing_hot_threshold_ms: Option<u32>,
    /// `numa_balancing_promote_rate_limit_MBps` (default 65536).
    #[serde(
        default,
        rename = "numa_balancing_promote_rate_limit_MBps",
        skip_serializing_if = "Option::is_none"
    )]
    pub numa_balancing_promote_rate_limit_mbps: Option<u64>,
    /// `numa_balancing_scan_delay_ms` (default 1000): first scan after the task starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing_scan_delay_ms: Option<u32>,
    /// `numa_balancing_scan_period_min_ms` (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing_scan_period_min_ms: Option<u32>,
    /// `numa_balancing_scan_size_mb` (default 256): PTEs changed per scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing_scan_size_mb: Option<u32>,
}

/// `/sys/kernel/mm/numa/*`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaKnobs {
    /// `demotion_enabled` (default false): reclaim on a top-tier node migrates folios to the
    /// next lower tier instead of swapping or dropping them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demotion_enabled: Option<bool>,
}

/// How a migration's TLB flush is done (mm/migrate/flush/): `eager`, mainline (one batched
/// flush per migrate_pages_batch before the move), or `migrc` (seed 004: flushes owed for
/// read-only mappings wait until a page they cover is reused or a PTE becomes writable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MigrateTlbFlush {
    #[default]
    Eager,
    Migrc,
}

/// What the PTE that remove_migration_pte installs after a NUMA-hint promotion looks like
/// (spec §11: not read in the kernel, so a model parameter). `clean`: write-protected and
/// clean (the seed's result implies it); `dirty`: write-protected, dirty bit kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromotedPte {
    #[default]
    Clean,
    Dirty,
}

/// A task's memory policy mode (set_mempolicy's MPOL_*; `numactl --membind`, `--preferred`,
/// `--interleave`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MpolMode {
    /// MPOL_DEFAULT: the local node, then its zonelist.
    #[default]
    Default,
    /// MPOL_PREFERRED: one node first, then that node's zonelist.
    Preferred,
    /// MPOL_BIND: only the nodes given (their zonelist order from the local node).
    Bind,
    /// MPOL_INTERLEAVE: page by page (by offset in a VMA, else round robin) over the nodes.
    Interleave,
}

/// `[mempolicy]`: the memory policy of every user task (the kernel's task policy; kernel
/// threads keep the default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MempolicySpec {
    #[serde(default)]
    pub mode: MpolMode,
    /// The policy's nodemask: node ids; empty for `default`, one node for `preferred`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<u32>,
}

impl MempolicySpec {
    pub fn is_default(&self) -> bool {
        *self == MempolicySpec::default()
    }

    /// mpol_new's checks, on a machine of `nr_nodes` nodes.
    pub(super) fn validate(&self, nr_nodes: usize) -> Result<(), ScenarioError> {
        for (i, &n) in self.nodes.iter().enumerate() {
            if n as usize >= nr_nodes {
                return Err(invalid(
                    format!("mempolicy.nodes[{i}]"),
                    n,
                    format!("a node id 0 ..= {}", nr_nodes - 1),
                ));
            }
        }
        let (ok, allowed) = match self.mode {
            MpolMode::Default => (self.nodes.is_empty(), "none: default takes no nodes"),
            MpolMode::Preferred => (self.nodes.len() == 1, "exactly one node for preferred"),
            MpolMode::Bind | MpolMode::Interleave => (
                !self.nodes.is_empty(),
                "one or more nodes for bind and interleave",
            ),
        };
        if !ok {
            return Err(invalid(
                "mempolicy.nodes",
                format!("{:?}", self.nodes),
                allowed,
            ));
        }
        Ok(())
    }
}

/// Checks of the NUMA settings that need no other section.
pub(super) fn validate(
    nodes: &[NodeSpec],
    distance: Option<&[Vec<u32>]>,
    sysctl: &KernelSysctl,
) -> Result<(), ScenarioError> {
    if nodes.len() > 7 {
        return Err(invalid(
            "machine.node",
            nodes.len(),
            "at most 7 nodes beyond node 0",
        ));
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.cpus != 0 {
            return Err(invalid(
                format!("machine.node[{i}].cpus"),
                n.cpus,
                "0 (a node's CPUs are its socket's: machine.node[i].socket)",
            ));
        }
        if n.memory.0 < 16 << 20 || n.memory.0 > 1 << 42 {
            return Err(invalid(
                format!("machine.node[{i}].memory"),
                super::format_size(n.memory.0),
                "16M ..= 4T",
            ));
        }
        if let Some(ns) = n.latency_ns {
            if !(1..=100_000).contains(&ns) {
                return Err(invalid(
                    format!("machine.node[{i}].latency_ns"),
                    ns,
                    "1 ..= 100000",
                ));
            }
        }
    }
    if let Some(d) = distance {
        validate_distance(d, nodes.len() + 1)?;
    }
    if let Some(mode) = sysctl.numa_balancing {
        if mode > 3 {
            return Err(invalid(
                "sysctl.kernel.numa_balancing",
                mode,
                "0 (off), 1 (normal), 2 (memory tiering), 3 (both)",
            ));
        }
        if mode & 1 != 0 {
            return Err(invalid(
                "sysctl.kernel.numa_balancing",
                mode,
                "0 or 2: NUMA_BALANCING_NORMAL (task placement across CPU nodes) is not modelled",
            ));
        }
    }
    let ranges: [(&str, Option<u64>, u64, u64); 5] = [
        (
            "sysctl.kernel.numa_balancing_hot_threshold_ms",
            sysctl.numa_balancing_hot_threshold_ms.map(u64::from),
            1,
            3_600_000,
        ),
        (
            "sysctl.kernel.numa_balancing_promote_rate_limit_MBps",
            sysctl.numa_balancing_promote_rate_limit_mbps,
            1,
            1 << 30,
        ),
        (
            "sysctl.kernel.numa_balancing_scan_delay_ms",
            sysctl.numa_balancing_scan_delay_ms.map(u64::from),
            0,
            3_600_000,
        ),
        (
            "sysctl.kernel.numa_balancing_scan_period_min_ms",
            sysctl.numa_balancing_scan_period_min_ms.map(u64::from),
            1,
            3_600_000,
        ),
        (
            "sysctl.kernel.numa_balancing_scan_size_mb",
            sysctl.numa_balancing_scan_size_mb.map(u64::from),
            1,
            1 << 20,
        ),
    ];
    for (field, value, lo, hi) in ranges {
        if let Some(v) = value {
            if !(lo..=hi).contains(&v) {
                return Err(invalid(field, v, format!("{lo} ..= {hi}")));
            }
        }
    }
    Ok(())
}

/// `machine.node_distance`: one row per node, each of one entry per node; LOCAL_DISTANCE on
/// the diagonal and more elsewhere, below 255 (unreachable): the kernel's acpi slit_valid.
fn validate_distance(d: &[Vec<u32>], nr_nodes: usize) -> Result<(), ScenarioError> {
    if d.len() != nr_nodes {
        return Err(invalid(
            "machine.node_distance",
            format!("{} rows", d.len()),
            format!("{nr_nodes} rows (one per node: node 0 and each [[machine.node]])"),
        ));
    }
    for (i, row) in d.iter().enumerate() {
        if row.len() != nr_nodes {
            return Err(invalid(
                format!("machine.node_distance[{i}]"),
                format!("{} entries", row.len()),
                format!("{nr_nodes} entries (one per node)"),
            ));
        }
        for (j, &v) in row.iter().enumerate() {
            let ok = if i == j {
                v == LOCAL_DISTANCE
            } else {
                (LOCAL_DISTANCE + 1..=254).contains(&v)
            };
            if !ok {
                return Err(invalid(
                    format!("machine.node_distance[{i}][{j}]"),
                    v,
                    "10 from a node to itself, 11 ..= 254 between two nodes (ACPI SLIT)",
                ));
            }
        }
    }
    Ok(())
}
