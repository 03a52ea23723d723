//! The scenario: what machine, which kernel, which knobs, which workloads.
//!
//! Every field has a default; `Scenario::from_toml_str` parses and validates. This file is the one
//! place where the defaults are written down (see the `default_*` functions and `Default` impls).
//! Errors name the field, the value found and what is allowed.

mod lru_gen;
mod numa;
#[cfg(test)]
mod plain_data_test;
pub mod releases;
pub mod report;
pub mod resolved;
mod spec_types;
pub mod tmpfs;
mod workload_spec;
pub use lru_gen::LruGenKnobs;
pub use releases::{MmChange, Release, ReleaseError};
pub use report::ReportSpec;
pub use spec_types::{ContentClass, ShootdownOp, ThpAdviceSpec, TlbGeometrySpec, XsbenchSize};
pub use workload_spec::{
    FileReadSpec, KbuildCompiler, KbuildSpec, RegisteredSpec, ThpSwapAllocatorTestSpec,
    ThpscaleSpec, TlbShootdownSpec, TraceSpec, UsememSpec, WorkloadSpec, XsbenchSpec,
    KBUILD_OBJECT_SIZE_MAX_BYTES, KBUILD_OBJECT_SIZE_MIN_BYTES,
};

use crate::engine::cost::CostModel;
pub use numa::{
    KernelSysctl, MempolicySpec, MigrateTlbFlush, MpolMode, NodeSpec, NumaKnobs, PromotedPte,
    CXL_LATENCY_NS, LOCAL_DISTANCE, LOCAL_DRAM_LATENCY_NS, REMOTE_DISTANCE,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub use crate::engine::arch::{PAGE_SIZE, PMD_ORDER};
/// THP_ORDERS_ALL_ANON: the orders an anonymous THP may have, 2..=PMD_ORDER. Order 0 is not
/// huge; an order-1 folio has no third struct page for its deferred split list entry, so the
/// kernel never allocates one (deferred_split_folio could not queue it when partially unmapped).
pub const THP_ORDERS_ALL_ANON: u32 = ((1 << (PMD_ORDER + 1)) - 1) & !0b11;

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("scenario: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("scenario field `{field}`: found {value}; allowed: {allowed}")]
    Invalid {
        field: String,
        value: String,
        allowed: String,
    },
}

/// The largest time a scenario may give one operation (1000 s): simulated time is u64 ns, and
/// a run must not overflow it however many operations add up.
/// The most `[[memcg]]` tables: the kernel's MEM_CGROUP_ID_MAX (65535) ids less the root's.
pub const MAX_MEMCGS: usize = 65_534;
pub const MAX_TIME_NS: u64 = 1_000_000_000_000;

/// A time field of the scenario, bounded by MAX_TIME_NS.
fn check_time_ns(field: &str, value: Option<u64>) -> Result<(), ScenarioError> {
    match value {
        Some(ns) if ns > MAX_TIME_NS => Err(invalid(
            field,
            ns,
            "0 ..= 1000000000000 ns (1000 s: more would overflow simulated time)",
        )),
        _ => Ok(()),
    }
}

pub(crate) fn invalid(
    field: impl Into<String>,
    value: impl fmt::Display,
    allowed: impl Into<String>,
) -> ScenarioError {
    ScenarioError::Invalid {
        field: field.into(),
        value: value.to_string(),
        allowed: allowed.into(),
    }
}

/// A byte count written as an integer or as a string with a K/M/G/T suffix (binary units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(into = "String")]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn parse(text: &str) -> Result<Bytes, String> {
        let text = text.trim();
        let (digits, shift) = match text.char_indices().last() {
            Some((i, c)) if c.is_ascii_alphabetic() => {
                let shift = match c.to_ascii_uppercase() {
                    'K' => 10,
                    'M' => 20,
                    'G' => 30,
                    'T' => 40,
                    _ => return Err(format!("`{text}`: unknown suffix `{c}` (use K, M, G or T)")),
                };
                (&text[..i], shift)
            }
            _ => (text, 0),
        };
        let value: f64 = digits
            .trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a size like 64K, 1.5G or 4096"))?;
        if !value.is_finite() || value < 0.0 {
            return Err(format!("`{text}` must be a non-negative size"));
        }
        Ok(Bytes((value * (1u64 << shift) as f64).round() as u64))
    }
    pub fn pages(self) -> u64 {
        self.0 / PAGE_SIZE
    }
}

impl From<Bytes> for String {
    fn from(b: Bytes) -> String {
        format_size(b.0)
    }
}

/// 4096 -> "4K", 2097152 -> "2M"; falls back to plain bytes.
pub fn format_size(bytes: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{}", bytes >> shift, suffix);
        }
    }
    bytes.to_string()
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Float(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(v) => Ok(Bytes(v)),
            Raw::Float(v) if v >= 0.0 => Ok(Bytes(v as u64)),
            Raw::Float(v) => Err(serde::de::Error::custom(format!(
                "size {v} must be non-negative"
            ))),
            Raw::Text(s) => Bytes::parse(&s).map_err(serde::de::Error::custom),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Seed of every random stream in the run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub machine: Machine,
    #[serde(default)]
    pub kernel: Kernel,
    #[serde(default)]
    pub sysfs: Sysfs,
    /// `/proc/sys` knobs (`[sysctl.vm]`).
    #[serde(default, skip_serializing_if = "Sysctl::is_default")]
    pub sysctl: Sysctl,
    /// Memory cgroups (cgroup v2 names); workloads name the one they run in.
    #[serde(default, rename = "memcg")]
    pub memcgs: Vec<MemcgSpec>,
    #[serde(default, rename = "workload")]
    pub workloads: Vec<WorkloadSpec>,
    /// Files on `machine.disk` at the start, written and not cached (`[[file]]`); their ids
    /// are their order here.
    #[serde(default, rename = "file", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSpec>,
    /// tmpfs mounts (`[[tmpfs]]`, mm/shmem.rs); workloads name the one they write to.
    #[serde(default, rename = "tmpfs", skip_serializing_if = "Vec::is_empty")]
    pub tmpfs: Vec<tmpfs::TmpfsSpec>,
    /// Overrides of individual costs of the machine's cost profile, by name (ns).
    #[serde(default)]
    pub costs: BTreeMap<String, f64>,
    /// Check the model's invariants while running (slow; on in tests).
    #[serde(default)]
    pub check_invariants: bool,
    /// What the run records besides its final counters (`[report]`: time series).
    #[serde(default, skip_serializing_if = "ReportSpec::is_default")]
    pub report: ReportSpec,
    /// `[mempolicy]`: every user task's NUMA memory policy (set_mempolicy, as `numactl` in
    /// front of the workload); absent: the default local policy.
    #[serde(default, skip_serializing_if = "MempolicySpec::is_default")]
    pub mempolicy: MempolicySpec,
}

fn default_seed() -> u64 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    #[serde(default = "default_cpus")]
    pub cpus: u32,
    #[serde(default = "default_memory")]
    pub memory: Bytes,
    /// Named set of per-operation costs (see engine/cost.rs).
    #[serde(default = "default_cost_profile")]
    pub cost_profile: String,
    #[serde(default, rename = "swap")]
    pub swap_devices: Vec<SwapDeviceSpec>,
    /// Scheduler time slice. EEVDF's base slice is 0.75 ms x (1 + log2 CPUs), 3 ms for 8 CPUs.
    #[serde(default = "default_sched_slice_ns")]
    pub sched_slice_ns: u64,
    /// How the CPUs invalidate each other's TLBs (mm/tlb/): "x86-ipi" | "arm64-tlbi".
    #[serde(default)]
    pub tlb: TlbKind,
    /// Per-CPU TLB and cache sizes for the TLB model of user accesses (hw/tlb_cache.rs):
    /// `preset` ("golden-cove" | "neoverse-n1"; default: the one of `tlb`) and overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb_geometry: Option<TlbGeometrySpec>,
    /// Memory bandwidth shared by all CPUs (hw/membw.rs), bytes/s; 0 means unlimited.
    #[serde(default = "default_memory_bandwidth")]
    pub memory_bandwidth_bytes_per_s: u64,
    /// Intel IAA compression accelerators (hw/iaa.rs), for zswap's `deflate-iaa`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iaa: Option<IaaSpec>,
    /// The filesystem's disk, holding the `[[file]]`s (mm/filemap/).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskSpec>,
    /// Nodes 1, 2, ... beside node 0 (`memory`, socket 0's CPUs): `[[machine.node]]`,
    /// memory-only or a socket's.
    #[serde(default, rename = "node", skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeSpec>,
    /// The node distance table (ACPI SLIT, node_distance): row i, column j from node i's CPUs
    /// to node j's memory. Default: 10 to itself, 20 to any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_distance: Option<Vec<Vec<u32>>>,
    /// A named machine (hw/profile/): its topology and the costs it changes, each with its
    /// source. None is `this-vm`: no topology, the cost profile unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Sockets, LLC domains, cores and SMT threads (hw/topology.rs); default: the profile's
    /// (none for `this-vm`: one flat lock handoff cost, no IPI spread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologySpec>,
    /// The machine is a KVM guest of a host with the profile's (bare-metal) costs: every IPI
    /// exits to the host on both sides (hw/ipi.rs). Not with `this-vm`, whose costs were
    /// measured inside its guest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kvm_guest: bool,
    /// Slab caches, page tables and kernel stacks allocated from the buddy allocator
    /// (mm/kmem.rs). Off by default; an aged start turns it on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_memory: bool,
    /// `[machine.start]`: an aged start (workload/aging.rs) instead of a fresh boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartSpec>,
}

/// `[machine.topology]`: the CPUs as sockets x LLC domains x cores x SMT threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    #[serde(default = "one")]
    pub sockets: u32,
    /// Last-level-cache domains per socket (CCXs, dies; 1 for a monolithic mesh).
    #[serde(default = "one")]
    pub llcs_per_socket: u32,
    #[serde(default = "one")]
    pub cores_per_llc: u32,
    #[serde(default = "one")]
    pub threads_per_core: u32,
}

fn one() -> u32 {
    1
}

impl TopologySpec {
    pub fn cpus(&self) -> u32 {
        self.sockets
            .saturating_mul(self.llcs_per_socket)
            .saturating_mul(self.cores_per_llc)
            .saturating_mul(self.threads_per_core)
    }

    /// Each count 1 ..= 1024, and at most 1024 CPUs in all.
    pub fn check(&self) -> Result<(), ScenarioError> {
        let t = self;
        let fields = [
            ("sockets", t.sockets),
            ("llcs_per_socket", t.llcs_per_socket),
            ("cores_per_llc", t.cores_per_llc),
            ("threads_per_core", t.threads_per_core),
        ];
        for (name, value) in fields {
            if value == 0 || value > 1024 {
                return Err(invalid(
                    format!("machine.topology.{name}"),
                    value,
                    "1 ..= 1024",
                ));
            }
        }
        if t.cpus() > 1024 {
            return Err(invalid(
                "machine.topology",
                t.cpus(),
                "at most 1024 CPUs (sockets x llcs_per_socket x cores_per_llc x threads_per_core)",
            ));
        }
        Ok(())
    }
}

impl Machine {
    /// Kernel memory is modelled: asked for, or implied by an aged start.
    pub fn kernel_memory_on(&self) -> bool {
        self.kernel_memory
            || self
                .start
                .as_ref()
                .is_some_and(|s| s.prelude != "fresh" || s.snapshot.is_some())
    }
}

/// `[machine.start]`: the aging prelude run before the workload (workload/aging.rs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartSpec {
    /// "fresh" (boot state: nothing run) or "churn" (process, file and slab churn).
    #[serde(default = "default_prelude")]
    pub prelude: String,
    /// A host snapshot file (`foliosim snapshot --live`, mm/snapshot/) to start from instead
    /// of a prelude; relative to the scenario file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// The snapshot file's text, read by whoever loads the scenario file (the schema does no
    /// I/O).
    #[serde(skip)]
    pub snapshot_text: Option<String>,
    /// Anonymous memory the churn's processes fault in over the prelude, in total.
    #[serde(default = "default_turnover")]
    pub turnover: Bytes,
    /// Memory the churn's live processes use at most, % of `machine.memory`.
    #[serde(default = "default_resident_percent")]
    pub resident_percent: u32,
    /// Memory of the processes still running when the workload starts (long-running
    /// services), % of `machine.memory`; at most `resident_percent`.
    #[serde(default = "default_keep_percent")]
    pub keep_percent: u32,
    /// Files each churn process looks up (a dentry and an inode each).
    #[serde(default = "default_files_per_process")]
    pub files_per_process: u32,
    /// Unused dentries and inodes the slab churn shrinks at the end of the prelude, %.
    #[serde(default = "default_slab_shrink_percent")]
    pub slab_shrink_percent: u32,
}

fn default_prelude() -> String {
    "fresh".into()
}
fn default_turnover() -> Bytes {
    Bytes(4 << 30)
}
fn default_resident_percent() -> u32 {
    70
}
fn default_keep_percent() -> u32 {
    5
}
fn default_files_per_process() -> u32 {
    512
}
fn default_slab_shrink_percent() -> u32 {
    50
}

impl StartSpec {
    /// The prelude's fields in range, each error naming the field and what it allows.
    pub fn validate(&self, memory: Bytes) -> Result<(), ScenarioError> {
        if !matches!(self.prelude.as_str(), "fresh" | "churn") {
            return Err(invalid(
                "machine.start.prelude",
                &self.prelude,
                "fresh, churn",
            ));
        }
        if self.snapshot.is_some() && self.prelude != "fresh" {
            return Err(invalid(
                "machine.start.prelude",
                &self.prelude,
                "fresh (machine.start.snapshot is the start)",
            ));
        }
        if self.turnover.0 > 1 << 44 {
            return Err(invalid(
                "machine.start.turnover",
                format_size(self.turnover.0),
                "0 ..= 16T",
            ));
        }
        if self.prelude == "churn" && self.turnover.0 < memory.0 / 16 {
            return Err(invalid(
                "machine.start.turnover",
                format_size(self.turnover.0),
                format!(
                    "at least 1/16 of machine.memory ({}) for prelude = \"churn\"",
                    format_size(memory.0 / 16)
                ),
            ));
        }
        if !(5..=90).contains(&self.resident_percent) {
            return Err(invalid(
                "machine.start.resident_percent",
                self.resident_percent,
                "5 ..= 90",
            ));
        }
        if self.keep_percent > self.resident_percent {
            return Err(invalid(
                "machine.start.keep_percent",
                self.keep_percent,
                format!("0 ..= resident_percent ({})", self.resident_percent),
            ));
        }
        if self.files_per_process > 100_000 {
            return Err(invalid(
                "machine.start.files_per_process",
                self.files_per_process,
                "0 ..= 100000",
            ));
        }
        if self.slab_shrink_percent > 100 {
            return Err(invalid(
                "machine.start.slab_shrink_percent",
                self.slab_shrink_percent,
                "0 ..= 100",
            ));
        }
        Ok(())
    }
}

/// The block device under the filesystem that holds the files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskSpec {
    /// "ssd", "hdd" or "ramdisk"; timed as the swap device of that kind (hw/blockdev.rs).
    pub kind: SwapDeviceKind,
    pub size: Bytes,
    /// Per-request latency; default depends on `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<u64>,
    /// Sustained bandwidth; default depends on `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bytes_per_s: Option<u64>,
    /// `/sys/block/<dev>/queue/read_ahead_kb`: the largest readahead window (default 128).
    #[serde(default = "default_read_ahead_kb")]
    pub read_ahead_kb: u32,
}

fn default_read_ahead_kb() -> u32 {
    128
}

/// A file on the disk at the start of the run (`[[file]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// What workloads call it.
    pub name: String,
    pub size: Bytes,
}

/// IAA devices of the machine and how iaa_crypto drives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IaaSpec {
    #[serde(default = "default_iaa_sockets")]
    pub sockets: u32,
    #[serde(default = "default_iaa_devices_per_socket")]
    pub devices_per_socket: u32,
    /// iaa_crypto `verify_compress`: decompress every compressed page on the device and
    /// compare (seed 002 runs with it on).
    #[serde(default = "default_true")]
    pub verify_compress: bool,
    /// The IAA batching series: a folio's pages go to the device together, up to 8 in flight,
    /// instead of one synchronous job per page (the RFC).
    #[serde(default)]
    pub batch: bool,
}

fn default_iaa_sockets() -> u32 {
    2
}
fn default_iaa_devices_per_socket() -> u32 {
    4
}

/// The TLB invalidation mechanism of the machine's architecture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlbKind {
    /// x86: flush_tlb_multi sends an IPI to every other CPU in mm_cpumask and waits.
    #[default]
    #[serde(rename = "x86-ipi")]
    X86Ipi,
    /// arm64: broadcast TLBI instructions, completed by a DSB; contpte blocks.
    #[serde(rename = "arm64-tlbi")]
    Arm64Tlbi,
}

/// The development VM's (x86-64, 2 vCPUs) copy bandwidth with both vCPUs streaming: measured
/// 25-31 GB/s read+written (docs/membw.md, tools/microbench/membw.c).
pub const DEFAULT_MEMORY_BANDWIDTH_BYTES_PER_S: u64 = 28_000_000_000;

fn default_memory_bandwidth() -> u64 {
    DEFAULT_MEMORY_BANDWIDTH_BYTES_PER_S
}

fn default_sched_slice_ns() -> u64 {
    3_000_000
}

fn default_cpus() -> u32 {
    8
}
fn default_memory() -> Bytes {
    Bytes(16 << 30)
}
fn default_cost_profile() -> String {
    "vm-6.18-2cpu".into()
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            cpus: default_cpus(),
            memory: default_memory(),
            cost_profile: default_cost_profile(),
            swap_devices: vec![],
            sched_slice_ns: default_sched_slice_ns(),
            tlb: TlbKind::default(),
            tlb_geometry: None,
            memory_bandwidth_bytes_per_s: default_memory_bandwidth(),
            iaa: None,
            disk: None,
            nodes: vec![],
            node_distance: None,
            profile: None,
            topology: None,
            kvm_guest: false,
            kernel_memory: false,
            start: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwapDeviceKind {
    /// brd-like RAM block device: synchronous, non-rotational.
    Ramdisk,
    /// Non-rotational block device with queueing latency and bandwidth.
    Ssd,
    /// Rotational block device: no swap clusters before 6.12.
    Hdd,
    /// zram: compressed RAM block device, synchronous like a RAM disk (SWP_SYNCHRONOUS_IO).
    /// The sim charges the submitting CPU the measured lzo-rle rate (hw/blockdev.rs); live
    /// configures a zram device with `sysfs.zram.comp_algorithm`.
    Zram,
    /// A swap file on the host's filesystem: timed as `ssd`; not a block device, so it never
    /// stores a large folio whole (every one is split, counted as swpout_fallback).
    File,
    /// A loop block device over a file. The sim models it as `ssd`.
    Loop,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapDeviceSpec {
    pub kind: SwapDeviceKind,
    pub size: Bytes,
    /// swapon priority; higher is used first.
    #[serde(default = "default_swap_priority")]
    pub priority: i32,
    /// Per-request latency; default depends on `kind` (see hw/blockdev.rs).
    #[serde(default)]
    pub latency_ns: Option<u64>,
    /// Sustained write/read bandwidth; default depends on `kind`.
    #[serde(default)]
    pub bandwidth_bytes_per_s: Option<u64>,
    /// `swapon --discard`: freed clusters are discarded before reuse (SWP_PAGE_DISCARD).
    /// Only for `ssd`.
    #[serde(default)]
    pub discard: bool,
    /// Model the SSD's flash translation layer with erase blocks of this size and report the
    /// write amplification factor of the allocator's write pattern. Only for `ssd`.
    #[serde(default)]
    pub erase_block: Option<Bytes>,
    /// Share of the device's clusters reserved for large folios (order > 0): order-0
    /// allocation may neither take nor steal from them (seed 003's proposal; not upstream).
    /// Only with the cluster-lists allocators.
    #[serde(default)]
    pub mthp_reserve_percent: u32,
    /// The timing of an asynchronous device (hw/blockdev_profile.rs): "nvme" | "sata-ssd" |
    /// "hdd" | "virtio-blk-vm". Default: "virtio-blk-vm" for ssd, file and loop, "hdd" for
    /// hdd; not for ramdisk or zram (synchronous). `latency_ns` / `bandwidth_bytes_per_s`
    /// override both directions of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<DeviceProfile>,
    /// /sys/block/<dev>/queue/nr_requests: requests in flight before a submitter sleeps;
    /// default the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u32>,
    /// /sys/block/<dev>/queue/wbt_lat_usec: writeback throttling's read latency target in µs
    /// (hw/blk_wbt.rs); 0 turns wbt off. Default the kernel's: 75000 when the profile is
    /// rotational, 2000 when not (wbt_default_latency_nsec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wbt_lat_usec: Option<u64>,
    /// /sys/block/<dev>/queue/max_sectors_kb: the largest request (hw/blk_limits.rs);
    /// default the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sectors_kb: Option<u64>,
    /// /sys/block/<dev>/queue/max_segments: the most segments one request carries; default
    /// the profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_segments: Option<u32>,
    /// /sys/block/<dev>/queue/max_segment_size in bytes: the largest segment; default the
    /// profile's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_segment_size: Option<u64>,
}

/// Published or measured timings of an asynchronous block device (hw/blockdev_profile.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceProfile {
    /// A PCIe NVMe SSD (Samsung 980 1TB datasheet figures).
    Nvme,
    /// A SATA SSD (Samsung 850/870 EVO datasheet figures).
    SataSsd,
    /// A 7200 rpm disk (estimate).
    Hdd,
    /// The calibration VM's virtio-blk disk, measured with fio (docs/calibration-vm.md).
    VirtioBlkVm,
}

/// max_sectors_kb, max_segments and max_segment_size of a queued device, within what the
/// block layer accepts (queue_max_sectors_store: at least a page; blk_validate_limits:
/// max_segment_size at least BLK_MIN_SEGMENT_SIZE; nr_phys_segments is an unsigned short).
fn check_queue_limits(
    i: usize,
    dev: &SwapDeviceSpec,
    synchronous: bool,
) -> Result<(), ScenarioError> {
    let fields = [
        ("max_sectors_kb", dev.max_sectors_kb, 4, 4 << 20),
        ("max_segments", dev.max_segments.map(u64::from), 1, 65_535),
        (
            "max_segment_size",
            dev.max_segment_size,
            4096,
            u32::MAX as u64,
        ),
    ];
    for (name, value, min, max) in fields {
        let Some(v) = value else { continue };
        let field = format!("machine.swap[{i}].{name}");
        if synchronous {
            return Err(invalid(
                field,
                format!("{v} on a {:?} device", dev.kind).to_lowercase(),
                format!("{name} only for kind = \"ssd\", \"hdd\", \"file\" or \"loop\""),
            ));
        }
        if !(min..=max).contains(&v) {
            return Err(invalid(field, v, format!("{min} ..= {max}")));
        }
    }
    Ok(())
}

/// The largest wbt_lat_usec accepted (1000 s): a bound so that µs -> ns cannot overflow.
const MAX_WBT_LAT_USEC: u64 = 1_000_000_000;

/// swapon(2)'s largest priority (include/linux/swap.h).
const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;

fn default_swap_priority() -> i32 {
    -2
}

impl SwapDeviceSpec {
    /// A device of `kind` and `size` with every other field at its default.
    pub fn new(kind: SwapDeviceKind, size: Bytes) -> SwapDeviceSpec {
        SwapDeviceSpec {
            kind,
            size,
            priority: default_swap_priority(),
            latency_ns: None,
            bandwidth_bytes_per_s: None,
            discard: false,
            erase_block: None,
            mthp_reserve_percent: 0,
            profile: None,
            nr_requests: None,
            wbt_lat_usec: None,
            max_sectors_kb: None,
            max_segments: None,
            max_segment_size: None,
        }
    }
}

/// Which reclaim-list policy the kernel runs: a name from the registry (mm/vmscan/).
pub use crate::registry::LruPolicyKind;
/// Which swap slot allocator the kernel runs (mm/swapfile.c): a name from the registry,
/// one file each under mm/swap_alloc/.
pub use crate::registry::SwapAllocatorKind;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    #[serde(default = "default_kernel_version")]
    pub version: Release,
    /// Override of the release's swap allocator.
    #[serde(default)]
    pub swap_allocator: Option<SwapAllocatorKind>,
    /// Override of the reclaim-list policy (mm/vmscan/ `registry!`): a registered name whose
    /// `lru_gen` matches `sysfs.lru_gen.enabled`. Default: `mglru` when that is on, else
    /// `classic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lru_policy: Option<LruPolicyKind>,
    /// Swap a large folio back in whole on a fault (alloc_swap_folio, 6.13+, synchronous
    /// devices only). Default: the release's (on from 6.13, the release table).
    #[serde(default)]
    pub swapin_mthp: Option<bool>,
    /// Override of how zswap treats a large folio (mm/zswap_store/): `reject` (<= 6.12: the
    /// whole folio goes to the swap device), `per-page-rfc` (seed 002's RFC on 6.10: stored
    /// page by page, same-filled pages kept as a value), `per-page` (6.13+ as merged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zswap_large_folios: Option<ZswapLargeFolios>,
    /// What add_to_swap does when no free range of slots fits a large folio: `split` it and
    /// swap its pages out one by one (every kernel), or keep it whole on `non-contiguous`
    /// order-0 slots (seed 003's idea; not upstream).
    #[serde(default)]
    pub swapout_fallback: SwapoutFallbackKind,
    /// The memory controller's hierarchy. On v1, zswap charges its compressed bytes to no
    /// memcg (obj_cgroup_charge_zswap returns early unless on the default hierarchy), and
    /// memory.high and memory.zswap.* do not exist.
    #[serde(default)]
    pub cgroup: CgroupVersion,
    /// Who allocates a fault's PMD THP (mm/thp_fault_alloc/): `direct` (mainline: the fault
    /// itself) or `thp-avail-nodes` (seed 001's RFC: the fault tries only where khugepaged
    /// found THPs available, and wakes khugepaged when it cannot).
    #[serde(default)]
    pub thp_fault_alloc: ThpFaultAllocKind,
    /// What an out-of-memory situation does (mm/oom_kill.rs): `kill` a task as the kernel's
    /// OOM killer does and go on (the default), or `fail`: end the run with an error.
    #[serde(default, skip_serializing_if = "OomPolicy::is_default")]
    pub oom: OomPolicy,
    /// How migration flushes the TLB (mm/migrate/flush/): `eager` (mainline) or `migrc`
    /// (seed 004's deferral).
    #[serde(default)]
    pub migrate_tlb_flush: MigrateTlbFlush,
    /// The PTE a NUMA-hint promotion leaves (a model parameter, scenario/numa.rs).
    #[serde(default)]
    pub numa_promoted_pte: PromotedPte,
    /// CONFIG_THP_SWAP: `false` is a kernel built without it, where every large folio is
    /// split before it gets swap slots (counted as swpout_fallback).
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub thp_swap: bool,
}

/// `kernel.oom`: the OOM killer, or an error where the kernel would kill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OomPolicy {
    #[default]
    Kill,
    Fail,
}

impl OomPolicy {
    fn is_default(&self) -> bool {
        *self == OomPolicy::Kill
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThpFaultAllocKind {
    #[default]
    Direct,
    ThpAvailNodes,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapoutFallbackKind {
    #[default]
    Split,
    NonContiguous,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    #[default]
    V2,
}

/// How zswap_store treats a large folio; one file each under mm/zswap_store/.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZswapLargeFolios {
    Reject,
    PerPageRfc,
    PerPage,
}

fn default_kernel_version() -> Release {
    Release::V6_10
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel {
            version: default_kernel_version(),
            swap_allocator: None,
            lru_policy: None,
            swapin_mthp: None,
            zswap_large_folios: None,
            swapout_fallback: SwapoutFallbackKind::Split,
            cgroup: CgroupVersion::V2,
            thp_fault_alloc: ThpFaultAllocKind::Direct,
            oom: OomPolicy::Kill,
            migrate_tlb_flush: MigrateTlbFlush::Eager,
            numa_promoted_pte: PromotedPte::Clean,
            thp_swap: true,
        }
    }
}

impl Kernel {
    /// The scenario's allocator, else the release's (the release table).
    pub fn swap_allocator(&self) -> SwapAllocatorKind {
        self.swap_allocator
            .unwrap_or(self.version.swap_allocator().0)
    }

    pub fn zswap_large_folios(&self) -> ZswapLargeFolios {
        self.zswap_large_folios
            .unwrap_or(self.version.zswap_large_folios())
    }

    /// Whole large-folio swap-in: the scenario's choice, else the release's (6.13+).
    pub fn swapin_mthp(&self) -> bool {
        self.swapin_mthp
            .unwrap_or(self.version.has(MmChange::SwapinMthp))
    }
}

/// `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/enabled` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpEnabled {
    Always,
    Madvise,
    Inherit,
    Never,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sysfs {
    /// Top-level `transparent_hugepage/enabled` (what `inherit` resolves to).
    #[serde(default = "default_thp_top")]
    pub thp_enabled: ThpEnabled,
    /// Per-size `enabled`, keyed by size ("16K" … "2M"). Unlisted sizes: "never", except 2M which
    /// defaults to "inherit" as in the kernel. "4K" is accepted and means nothing to set.
    #[serde(default)]
    pub hugepages: BTreeMap<String, ThpEnabled>,
    /// `transparent_hugepage/defrag`; absent leaves the host's value (live) and is the kernel's
    /// default in the sim (`madvise`; `always` for 4.1, which has no `defer` modes). It sets the gfp of large folio faults
    /// (vma_thp_gfp_mask), which decides whether their allocation and memcg charge may reclaim:
    /// `always` (one round unless MADV_HUGEPAGE), `madvise` and `defer+madvise` (MADV_HUGEPAGE
    /// VMAs only), and whether a failing allocation wakes kswapd (`defer`, `defer+madvise`);
    /// otherwise it fails and the fault falls back to a smaller order. Direct reclaim comes
    /// with direct compaction (mm/compaction/).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defrag: Option<ThpDefrag>,
    /// `transparent_hugepage/khugepaged/*`; absent fields leave the host's value live and are
    /// the kernel's defaults in the sim (mm/khugepaged.rs).
    #[serde(default)]
    pub khugepaged: KhugepagedKnobs,
    /// `/sys/module/zswap/parameters/*`. The sim has no zswap yet (seed 002): it treats zswap as
    /// off, so a scenario with zswap on validates only its policy-independent rows.
    #[serde(default)]
    pub zswap: ZswapKnobs,
    /// Settings of every `zram` swap device.
    #[serde(default)]
    pub zram: ZramKnobs,
    /// `/sys/kernel/mm/numa/*`.
    #[serde(default)]
    pub numa: NumaKnobs,
    /// `transparent_hugepage/shmem_enabled` (mm/shmem.rs): only `deny` and `force` act on
    /// tmpfs mounts.
    #[serde(default, skip_serializing_if = "tmpfs::ShmemEnabled::is_default")]
    pub shmem_enabled: tmpfs::ShmemEnabled,
    /// Per-size `hugepages-<size>kB/shmem_enabled` (6.11+), keyed by size ("8K" … "2M").
    /// shmem_allowable_huge_orders applies them to anonymous shmem VMAs only: tmpfs write(2)
    /// takes its orders from `huge=` (mm/shmem.rs), so they change no modelled allocation.
    /// Unlisted sizes: the kernel's defaults (2M inherit, others never), written live only when
    /// the scenario lists a size.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hugepages_shmem: BTreeMap<String, tmpfs::ShmemSizeEnabled>,
    /// `/sys/kernel/mm/lru_gen/*`: MGLRU or the classic LRU.
    #[serde(default)]
    pub lru_gen: LruGenKnobs,
}

/// `transparent_hugepage/defrag` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpDefrag {
    Always,
    Defer,
    #[serde(rename = "defer+madvise")]
    DeferMadvise,
    Madvise,
    Never,
}

impl ThpDefrag {
    pub const ALL: [ThpDefrag; 5] = [
        ThpDefrag::Always,
        ThpDefrag::Defer,
        ThpDefrag::DeferMadvise,
        ThpDefrag::Madvise,
        ThpDefrag::Never,
    ];

    /// The value as sysfs spells it (`defer+madvise`), None for anything else.
    pub fn from_name(name: &str) -> Option<ThpDefrag> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            ThpDefrag::Always => "always",
            ThpDefrag::Defer => "defer",
            ThpDefrag::DeferMadvise => "defer+madvise",
            ThpDefrag::Madvise => "madvise",
            ThpDefrag::Never => "never",
        }
    }

    /// The value is one the release's `defrag` file accepts (the release table).
    pub fn exists_in(self, version: Release) -> bool {
        match self {
            ThpDefrag::Defer => version.has(MmChange::ThpDefragMadvise),
            ThpDefrag::DeferMadvise => version.has(MmChange::ThpDefragDeferMadvise),
            ThpDefrag::Always | ThpDefrag::Madvise | ThpDefrag::Never => true,
        }
    }
}

/// `transparent_hugepage/khugepaged/<name>`; `None` leaves the host's value (live) and is the
/// kernel's default in the sim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KhugepagedKnobs {
    /// `defrag` (default true): the collapse allocation may reclaim and compact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defrag: Option<bool>,
    /// `pages_to_scan` (>= 1, default 4096): PTEs scanned per pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages_to_scan: Option<u32>,
    /// `scan_sleep_millisecs` (default 10000): sleep between passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_sleep_millisecs: Option<u32>,
    /// `alloc_sleep_millisecs` (default 60000): sleep after a failed huge page allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc_sleep_millisecs: Option<u32>,
    /// `max_ptes_none` (0 ..= 511, default 511): empty PTEs a collapsed range may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ptes_none: Option<u32>,
    /// `max_ptes_swap` (0 ..= 511, default 64): swap PTEs a collapse swaps in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ptes_swap: Option<u32>,
    /// `max_ptes_shared` (0 ..= 511, default 256): pages mapped by other processes too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ptes_shared: Option<u32>,
}

/// `/proc/sys` knobs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sysctl {
    #[serde(default)]
    pub vm: VmSysctl,
    /// `/proc/sys/kernel/*` (NUMA balancing).
    #[serde(default)]
    pub kernel: KernelSysctl,
}

impl Sysctl {
    fn is_default(&self) -> bool {
        *self == Sysctl::default()
    }
}

/// `/proc/sys/vm/*`: the page allocator's watermarks. `None` leaves the host's value (live) and
/// is the kernel's own value in the sim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmSysctl {
    /// `watermark_scale_factor` (1 ..= 3000, default 10): the min-to-low and low-to-high
    /// watermark distances, in 1/10000 of memory (at least a quarter of min).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_scale_factor: Option<u32>,
    /// `watermark_boost_factor` (default 15000, 0 disables): how far a fragmenting fallback may
    /// raise the watermarks, in 1/10000 of the high watermark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_boost_factor: Option<u32>,
    /// `min_free_kbytes`: the min watermark. Absent: the kernel's boot value, sqrt(16 x memory
    /// in KiB) within 128 KiB ..= 256 MiB, raised by khugepaged when PMD THP is enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_free_kbytes: Option<u64>,
    // Compaction (mm/compaction/).
    /// `extfrag_threshold` (0 ..= 1000, default 500): costly-order compaction runs only when
    /// the fragmentation index is above it (below, a failure is for lack of memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extfrag_threshold: Option<u32>,
    /// `compaction_proactiveness` (0 ..= 100, default 20): kcompactd compacts in the
    /// background while the node's fragmentation score is above 100 minus this; 0 disables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_proactiveness: Option<u32>,
    /// `compact_unevictable_allowed` (0 or 1, default 1): may compaction migrate unevictable
    /// (mlocked) folios. The model has none yet, so this changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_unevictable_allowed: Option<u32>,
    /// `swappiness` (0 ..= 200, default 60): reclaim's anon/file balance (get_scan_count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swappiness: Option<u32>,
    /// `page-cluster` (0 ..= 31, default 3): swap readahead reads up to 2^page_cluster pages
    /// around a swap fault on a device without SWP_SYNCHRONOUS_IO (VMA readahead caps it at
    /// 2^5); 0 turns swap readahead off.
    #[serde(
        default,
        alias = "page-cluster",
        skip_serializing_if = "Option::is_none"
    )]
    pub page_cluster: Option<u32>,
}

/// Compressors the kernel's crypto API commonly offers (zram `comp_algorithm`, zswap `compressor`).
/// `deflate-iaa` is Intel IAA's hardware deflate (iaa_crypto); it needs `machine.iaa`.
pub const COMPRESSORS: &[&str] = &[
    "lzo",
    "lzo-rle",
    "lz4",
    "lz4hc",
    "zstd",
    "deflate",
    "deflate-iaa",
];

/// zswap module parameters. Live, `enabled = false` (the default) turns zswap off for the run;
/// `true` is refused on a host where zswap is off (enabling it disables mTHP swap-in until reboot).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZswapKnobs {
    #[serde(default)]
    pub enabled: bool,
    /// `compressor`; absent leaves the host's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressor: Option<String>,
    /// `max_pool_percent` (1..=100); absent leaves the host's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pool_percent: Option<u32>,
    /// `accept_threshold_percent` (0..=100): once full, zswap refuses stores until the pool
    /// shrinks below this share of its limit; absent leaves the host's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_threshold_percent: Option<u32>,
    /// `shrinker_enabled`: the memory shrinker writes cold entries back under reclaim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shrinker_enabled: Option<bool>,
}

impl ZswapKnobs {
    /// The sim's values where the scenario leaves a knob to the host: the kernel's defaults
    /// (CONFIG_ZSWAP_COMPRESSOR_DEFAULT lzo, 20%, 90%, CONFIG_ZSWAP_SHRINKER_DEFAULT_ON=n).
    pub fn compressor_or_default(&self) -> &str {
        self.compressor.as_deref().unwrap_or("lzo")
    }
    pub fn max_pool_percent_or_default(&self) -> u32 {
        self.max_pool_percent.unwrap_or(20)
    }
    pub fn accept_threshold_percent_or_default(&self) -> u32 {
        self.accept_threshold_percent.unwrap_or(90)
    }
}

/// Settings of zram swap devices (`/sys/block/zramN/*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZramKnobs {
    /// `comp_algorithm`; the kernel's default is lzo-rle.
    #[serde(default = "default_zram_comp")]
    pub comp_algorithm: String,
}

fn default_zram_comp() -> String {
    "lzo-rle".into()
}

impl Default for ZramKnobs {
    fn default() -> Self {
        ZramKnobs {
            comp_algorithm: default_zram_comp(),
        }
    }
}

impl Scenario {
    /// The reclaim-list policy: `kernel.lru_policy`, else what `sysfs.lru_gen.enabled` picks.
    pub fn lru_policy(&self) -> LruPolicyKind {
        self.kernel
            .lru_policy
            .unwrap_or(LruPolicyKind::of_lru_gen(self.sysfs.lru_gen.enabled()))
    }

    /// `[machine.disk]` and the `[[file]]`s on it.
    fn validate_files(&self) -> Result<(), ScenarioError> {
        if let Some(disk) = &self.machine.disk {
            if !matches!(
                disk.kind,
                SwapDeviceKind::Ssd | SwapDeviceKind::Hdd | SwapDeviceKind::Ramdisk
            ) {
                return Err(invalid(
                    "machine.disk.kind",
                    format!("{:?}", disk.kind).to_lowercase(),
                    "ssd, hdd, ramdisk",
                ));
            }
            if disk.size.0 < 1 << 20 || disk.size.0 > 1 << 42 {
                return Err(invalid(
                    "machine.disk.size",
                    format_size(disk.size.0),
                    "1M ..= 4T",
                ));
            }
            if disk.bandwidth_bytes_per_s == Some(0) {
                return Err(invalid("machine.disk.bandwidth_bytes_per_s", 0, "> 0"));
            }
            check_time_ns("machine.disk.latency_ns", disk.latency_ns)?;
            if disk.read_ahead_kb > 1 << 20 || disk.read_ahead_kb % 4 != 0 {
                return Err(invalid(
                    "machine.disk.read_ahead_kb",
                    disk.read_ahead_kb,
                    "0 ..= 1048576, a multiple of 4 (whole pages)",
                ));
            }
        }
        let mut used = 0u64;
        let mut seen = std::collections::BTreeSet::new();
        for (i, f) in self.files.iter().enumerate() {
            let Some(disk) = &self.machine.disk else {
                return Err(invalid(
                    format!("file[{i}]"),
                    format!("`{}` without a disk", f.name),
                    "files only with a [machine.disk] table",
                ));
            };
            if f.name.is_empty() || !seen.insert(f.name.as_str()) {
                return Err(invalid(
                    format!("file[{i}].name"),
                    format!("`{}`", f.name),
                    "a unique non-empty name",
                ));
            }
            if f.size.0 < PAGE_SIZE || f.size.0 % PAGE_SIZE != 0 {
                return Err(invalid(
                    format!("file[{i}].size"),
                    format_size(f.size.0),
                    "a whole number of 4K pages, at least 4K",
                ));
            }
            let before = used;
            used = used.saturating_add(f.size.0);
            if used > disk.size.0 {
                return Err(invalid(
                    format!("file[{i}].size"),
                    format_size(f.size.0),
                    format!(
                        "at most {} (what machine.disk.size = {} leaves after the files before it)",
                        format_size(disk.size.0 - before),
                        format_size(disk.size.0)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The knobs the live backend writes to the host: zram/zswap compressors, zswap pool,
    /// khugepaged. Ranges are the kernel's own.
    pub(crate) fn validate_host_knobs(&self) -> Result<(), ScenarioError> {
        let sysfs = &self.sysfs;
        let compressors = COMPRESSORS.join(", ");
        if !COMPRESSORS.contains(&sysfs.zram.comp_algorithm.as_str()) {
            return Err(invalid(
                "sysfs.zram.comp_algorithm",
                format!("`{}`", sysfs.zram.comp_algorithm),
                compressors,
            ));
        }
        if let Some(c) = &sysfs.zswap.compressor {
            if !COMPRESSORS.contains(&c.as_str()) {
                return Err(invalid(
                    "sysfs.zswap.compressor",
                    format!("`{c}`"),
                    compressors,
                ));
            }
        }
        if let Some(p) = sysfs.zswap.max_pool_percent {
            if p == 0 || p > 100 {
                return Err(invalid("sysfs.zswap.max_pool_percent", p, "1 ..= 100"));
            }
        }
        if let Some(p) = sysfs.zswap.accept_threshold_percent {
            if p > 100 {
                return Err(invalid(
                    "sysfs.zswap.accept_threshold_percent",
                    p,
                    "0 ..= 100",
                ));
            }
        }
        let k = &sysfs.khugepaged;
        for (name, value) in [
            ("max_ptes_none", k.max_ptes_none),
            ("max_ptes_swap", k.max_ptes_swap),
            ("max_ptes_shared", k.max_ptes_shared),
        ] {
            if let Some(v) = value.filter(|v| *v >= 1 << PMD_ORDER) {
                return Err(invalid(format!("sysfs.khugepaged.{name}"), v, "0 ..= 511"));
            }
        }
        if k.pages_to_scan == Some(0) {
            return Err(invalid("sysfs.khugepaged.pages_to_scan", 0, ">= 1"));
        }
        // The kernel's proc_dointvec_minmax ranges (an int, >= 0 unless said).
        let vm = &self.sysctl.vm;
        if let Some(v) = vm
            .watermark_scale_factor
            .filter(|v| !(1..=3000).contains(v))
        {
            return Err(invalid("sysctl.vm.watermark_scale_factor", v, "1 ..= 3000"));
        }
        if let Some(v) = vm.page_cluster.filter(|&v| v > 31) {
            return Err(invalid("sysctl.vm.page_cluster", v, "0 ..= 31"));
        }
        if let Some(v) = vm.swappiness.filter(|&v| v > 200) {
            return Err(invalid("sysctl.vm.swappiness", v, "0 ..= 200"));
        }
        if let Some(v) = vm.watermark_boost_factor.filter(|&v| v > i32::MAX as u32) {
            return Err(invalid(
                "sysctl.vm.watermark_boost_factor",
                v,
                "0 ..= 2147483647 (0 disables boosting)",
            ));
        }
        for (name, value, max) in [
            ("extfrag_threshold", vm.extfrag_threshold, 1000),
            ("compaction_proactiveness", vm.compaction_proactiveness, 100),
            (
                "compact_unevictable_allowed",
                vm.compact_unevictable_allowed,
                1,
            ),
        ] {
            if let Some(v) = value.filter(|&v| v > max) {
                return Err(invalid(
                    format!("sysctl.vm.{name}"),
                    v,
                    format!("0 ..= {max}"),
                ));
            }
        }
        if let Some(v) = vm.min_free_kbytes {
            // The kernel takes any int; a min watermark of half the machine or more leaves
            // nothing to run in.
            let limit_kbytes = self.machine.memory.0 / 1024 / 2;
            if v >= limit_kbytes.min(i32::MAX as u64 + 1) {
                return Err(invalid(
                    "sysctl.vm.min_free_kbytes",
                    v,
                    format!(
                        "0 ..= {} (less than half of machine.memory, {})",
                        limit_kbytes.min(i32::MAX as u64 + 1) - 1,
                        format_size(self.machine.memory.0)
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn default_thp_top() -> ThpEnabled {
    ThpEnabled::Never
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs {
            thp_enabled: default_thp_top(),
            hugepages: BTreeMap::new(),
            defrag: None,
            khugepaged: KhugepagedKnobs::default(),
            zswap: ZswapKnobs::default(),
            zram: ZramKnobs::default(),
            numa: NumaKnobs::default(),
            shmem_enabled: Default::default(),
            hugepages_shmem: BTreeMap::new(),
            lru_gen: LruGenKnobs::default(),
        }
    }
}

impl Sysfs {
    /// `defrag` as the sim applies it: the scenario's value, else the release's default
    /// (the release table: `madvise` since 4.6, `always` before).
    pub fn thp_defrag(&self, version: Release) -> ThpDefrag {
        self.defrag.unwrap_or(version.thp_defrag())
    }

    /// Only the given large size enabled ("always"); "4K" leaves all large sizes off.
    pub fn only_size(size: &str) -> Sysfs {
        let mut hugepages = BTreeMap::new();
        hugepages.insert("2M".to_string(), ThpEnabled::Never);
        if size != "4K" {
            hugepages.insert(size.to_string(), ThpEnabled::Always);
        }
        Sysfs {
            thp_enabled: ThpEnabled::Never,
            hugepages,
            ..Sysfs::default()
        }
    }

    /// Per order in THP_ORDERS_ALL_ANON (2..=PMD_ORDER): is that size allowed at fault for a
    /// VMA (madvised or not)? Keys are compared by the size they spell ("64K", "64k" and
    /// "65536" are one key).
    pub fn orders_enabled(&self, vma_hugepage: bool) -> u32 {
        let setting_of = |order: u32| {
            let by_key = self
                .hugepages
                .iter()
                .find(|(key, _)| Bytes::parse(key).is_ok_and(|b| b.0 == PAGE_SIZE << order));
            by_key.map(|(_, v)| *v).unwrap_or(if order == PMD_ORDER {
                ThpEnabled::Inherit
            } else {
                ThpEnabled::Never
            })
        };
        let mut mask = 0u32;
        for order in (0..=PMD_ORDER).filter(|o| THP_ORDERS_ALL_ANON & 1 << o != 0) {
            let setting = setting_of(order);
            let effective = if setting == ThpEnabled::Inherit {
                self.thp_enabled
            } else {
                setting
            };
            let on = match effective {
                ThpEnabled::Always => true,
                ThpEnabled::Madvise => vma_hugepage,
                ThpEnabled::Never | ThpEnabled::Inherit => false,
            };
            if on {
                mask |= 1 << order;
            }
        }
        mask
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemcgSpec {
    pub name: String,
    /// The parent memcg's name (cgroup v2's nesting, v1 with use_hierarchy); absent = the root.
    /// A parent is declared before its children.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// memory.max; absent means no limit.
    #[serde(default)]
    pub max: Option<Bytes>,
    /// memory.high: above it, a task reclaims on its way back to user space and is throttled
    /// while reclaim cannot bring the memcg back under (mem_cgroup_handle_over_high).
    #[serde(default)]
    pub high: Option<Bytes>,
    /// memory.zswap.max: compressed bytes this memcg may keep in zswap; absent = no limit.
    #[serde(default)]
    pub zswap_max: Option<Bytes>,
    /// memory.zswap.writeback: may zswap write this memcg's entries back to the swap device
    /// (and store incompressible pages uncompressed)?
    #[serde(default = "default_true")]
    pub zswap_writeback: bool,
    /// memory.oom.group (cgroup v2): an OOM kill of one task of this memcg kills all of them
    /// (except those with oom_score_adj = -1000).
    #[serde(default, skip_serializing_if = "is_false")]
    pub oom_group: bool,
    /// memory.min (cgroup v2): memory reclaim never takes while the memcg is within its
    /// effective protection; absent = 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Bytes>,
    /// memory.low (cgroup v2): best-effort protection, given up only when reclaim can make no
    /// progress otherwise; absent = 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<Bytes>,
    /// memory.swap.max (cgroup v2): swap slots the memcg and its descendants may hold;
    /// absent = no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_max: Option<Bytes>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

fn is_one_i64(v: &i64) -> bool {
    *v == 1
}

fn default_usemem_repeat() -> i64 {
    1
}

fn default_true() -> bool {
    true
}

impl MemcgSpec {
    /// A memcg with only memory.max set.
    pub fn with_max(name: &str, max: Option<Bytes>) -> MemcgSpec {
        MemcgSpec {
            name: name.into(),
            max,
            high: None,
            zswap_max: None,
            zswap_writeback: true,
            oom_group: false,
            parent: None,
            min: None,
            low: None,
            swap_max: None,
        }
    }
}

impl Scenario {
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("a scenario always serializes")
    }

    // The field checks below are the schema's steps of `Scenario::validate` (validate.rs),
    // which runs them in order with the checks that need the model in between.

    /// `[report]` and `[machine]`'s own fields: time slice, CPUs, memory, nodes.
    pub(crate) fn check_machine_fields(&self) -> Result<(), ScenarioError> {
        self.report.validate()?;
        let m = &self.machine;
        if m.sched_slice_ns < 10_000 || m.sched_slice_ns > 1_000_000_000 {
            return Err(invalid(
                "machine.sched_slice_ns",
                m.sched_slice_ns,
                "10000 ..= 1000000000 (10 µs to 1 s)",
            ));
        }
        if m.cpus == 0 || m.cpus > 1024 {
            return Err(invalid("machine.cpus", m.cpus, "1 ..= 1024"));
        }
        if let Some(start) = &m.start {
            start.validate(m.memory)?;
        }
        let bw = m.memory_bandwidth_bytes_per_s;
        if bw != 0 && !(100_000_000..=100_000_000_000_000).contains(&bw) {
            return Err(invalid(
                "machine.memory_bandwidth_bytes_per_s",
                bw,
                "0 (unlimited) or 100000000 ..= 100000000000000 (0.1 GB/s to 100 TB/s)",
            ));
        }
        let min_memory = 16 << 20;
        let whole_pages = m.memory.0.is_multiple_of(PAGE_SIZE);
        if m.memory.0 < min_memory || m.memory.0 > 1 << 42 || !whole_pages {
            return Err(invalid(
                "machine.memory",
                format_size(m.memory.0),
                "16M ..= 4T, a whole number of 4K pages",
            ));
        }
        numa::validate(&m.nodes, m.node_distance.as_deref(), &self.sysctl.kernel)?;
        self.mempolicy.validate(m.nodes.len() + 1)?;
        // Page frame numbers are 31 bits: a cache slot tells a pfn from a shadow entry by bit 31
        // (mm/workingset.rs).
        let total_memory: u64 = m.memory.0 + m.nodes.iter().map(|n| n.memory.0).sum::<u64>();
        if total_memory > 1 << 43 {
            return Err(invalid(
                "machine.node",
                format_size(total_memory),
                "machine.memory plus every node's memory at most 8T",
            ));
        }
        Ok(())
    }

    /// `[machine.iaa]`, the compressors that need it, and `machine.cost_profile`.
    pub(crate) fn check_accelerators(&self) -> Result<(), ScenarioError> {
        let m = &self.machine;
        if let Some(iaa) = &m.iaa {
            if iaa.sockets == 0 || iaa.sockets > m.cpus || iaa.devices_per_socket == 0 {
                return Err(invalid(
                    "machine.iaa",
                    format!(
                        "{} sockets x {} devices",
                        iaa.sockets, iaa.devices_per_socket
                    ),
                    "1 ..= machine.cpus sockets, at least 1 device per socket",
                ));
            }
        }
        if self.sysfs.zswap.compressor.as_deref() == Some("deflate-iaa") && m.iaa.is_none() {
            return Err(invalid(
                "sysfs.zswap.compressor",
                "`deflate-iaa`",
                "a software compressor, or deflate-iaa with a [machine.iaa] table",
            ));
        }
        if self.sysfs.zram.comp_algorithm == "deflate-iaa" {
            return Err(invalid(
                "sysfs.zram.comp_algorithm",
                "`deflate-iaa`",
                "a software compressor (zram does not drive IAA here)",
            ));
        }
        CostModel::profile(&m.cost_profile).ok_or_else(|| {
            invalid(
                "machine.cost_profile",
                &m.cost_profile,
                CostModel::PROFILES.join(", "),
            )
        })?;
        Ok(())
    }

    /// One `[[machine.swap]]` device's fields, after its size (checked against the swap map's
    /// clusters above the schema).
    pub(crate) fn check_swap_device(
        &self,
        i: usize,
        dev: &SwapDeviceSpec,
    ) -> Result<(), ScenarioError> {
        if dev.bandwidth_bytes_per_s == Some(0) {
            return Err(invalid(
                format!("machine.swap[{i}].bandwidth_bytes_per_s"),
                0,
                "> 0",
            ));
        }
        // swapon(2) takes 0 ..= SWAP_FLAG_PRIO_MASK; the kernel keeps a signed short.
        if !(i16::MIN as i32..=SWAP_FLAG_PRIO_MASK).contains(&dev.priority) {
            return Err(invalid(
                format!("machine.swap[{i}].priority"),
                dev.priority,
                "0 ..= 32767 (swapon -p), or -32768 ..= -1 (the kernel assigns it)",
            ));
        }
        check_time_ns(&format!("machine.swap[{i}].latency_ns"), dev.latency_ns)?;
        let synchronous = matches!(dev.kind, SwapDeviceKind::Zram | SwapDeviceKind::Ramdisk);
        if let Some(profile) = dev.profile.filter(|_| synchronous) {
            return Err(invalid(
                format!("machine.swap[{i}].profile"),
                format!("{profile:?} on a {:?} device", dev.kind).to_lowercase(),
                "a profile only for kind = \"ssd\", \"hdd\", \"file\" or \"loop\"",
            ));
        }
        if dev.nr_requests.is_some_and(|n| n == 0 || n > 65_536) {
            return Err(invalid(
                format!("machine.swap[{i}].nr_requests"),
                dev.nr_requests.unwrap_or(0),
                "1 ..= 65536",
            ));
        }
        if let Some(us) = dev.wbt_lat_usec {
            if synchronous {
                return Err(invalid(
                    format!("machine.swap[{i}].wbt_lat_usec"),
                    format!("{us} on a {:?} device", dev.kind).to_lowercase(),
                    "wbt_lat_usec only for kind = \"ssd\", \"hdd\", \"file\" or \"loop\"",
                ));
            }
            if us > MAX_WBT_LAT_USEC {
                return Err(invalid(
                    format!("machine.swap[{i}].wbt_lat_usec"),
                    us,
                    "0 (wbt off) ..= 1000000000",
                ));
            }
        }
        check_queue_limits(i, dev, synchronous)?;
        if dev.discard && dev.kind != SwapDeviceKind::Ssd {
            return Err(invalid(
                format!("machine.swap[{i}].discard"),
                format!("true on a {:?} device", dev.kind).to_lowercase(),
                "true only for kind = \"ssd\"",
            ));
        }
        if let Some(eb) = dev.erase_block {
            let ok = eb.0.is_power_of_two() && eb.0 >= 64 << 10 && eb.0 <= 64 << 20;
            if dev.kind != SwapDeviceKind::Ssd || !ok {
                return Err(invalid(
                    format!("machine.swap[{i}].erase_block"),
                    format_size(eb.0),
                    "a power of two 64K ..= 64M, on kind = \"ssd\" only",
                ));
            }
        }
        if dev.mthp_reserve_percent > 0 {
            let takes_reserve = self.kernel.swap_allocator().entry().mthp_reserve;
            if dev.mthp_reserve_percent > 90 || !takes_reserve {
                return Err(invalid(
                    format!("machine.swap[{i}].mthp_reserve_percent"),
                    dev.mthp_reserve_percent,
                    "0 ..= 90, with a cluster-lists allocator (kernel 6.12 / 6.18)",
                ));
            }
        }
        Ok(())
    }

    /// `[costs]`: known names, values that cannot overflow simulated time.
    pub(crate) fn check_costs(&self) -> Result<(), ScenarioError> {
        for name in self.costs.keys() {
            if !CostModel::NAMES.contains(&name.as_str()) {
                return Err(invalid(
                    format!("costs.{name}"),
                    name,
                    CostModel::NAMES.join(", "),
                ));
            }
        }
        for (name, value) in &self.costs {
            if value.is_nan() || *value < 0.0 || *value > MAX_TIME_NS as f64 {
                return Err(invalid(
                    format!("costs.{name}"),
                    value,
                    "a number of ns in 0 ..= 1e12 (1000 s: more would overflow simulated time)",
                ));
            }
        }
        Ok(())
    }

    /// `[sysfs.hugepages_shmem]`: sizes of shmem's orders (order 1 included, as
    /// THP_ORDERS_ALL_FILE_DEFAULT), each once, from 6.11.
    fn check_hugepages_shmem(&self) -> Result<(), ScenarioError> {
        let version = self.kernel.version;
        let mut seen = std::collections::BTreeSet::new();
        for size in self.sysfs.hugepages_shmem.keys() {
            let field = format!("sysfs.hugepages_shmem.\"{size}\"");
            let allowed = "8K, 16K, 32K, 64K, 128K, 256K, 512K, 1M, 2M, each once";
            let bytes = Bytes::parse(size).map_err(|e| invalid(&field, e, allowed))?;
            let valid = bytes.0.is_power_of_two()
                && bytes.0 > PAGE_SIZE
                && bytes.0 <= PAGE_SIZE << PMD_ORDER;
            if !valid || !seen.insert(bytes.0) {
                return Err(invalid(&field, size, allowed));
            }
            if !version.has(MmChange::ShmemPerSizeEnabled) {
                return Err(invalid(
                    &field,
                    size,
                    format!(
                        "no per-size shmem_enabled with kernel.version = \"{version}\" (6.11+)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[sysfs]` against the kernel release: per-size mTHP, MGLRU, the defrag modes.
    pub(crate) fn check_sysfs(&self) -> Result<(), ScenarioError> {
        let mut sizes_seen = std::collections::BTreeSet::new();
        for size in self.sysfs.hugepages.keys() {
            let bytes = Bytes::parse(size)
                .map_err(|e| invalid(format!("sysfs.hugepages.{size}"), e, "16K, 32K, … 2M"))?;
            let valid = bytes.0.is_power_of_two()
                && bytes.0 >= PAGE_SIZE
                && bytes.0 <= PAGE_SIZE << PMD_ORDER;
            if !valid {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    "16K, 32K, 64K, 128K, 256K, 512K, 1M, 2M",
                ));
            }
            // There is no hugepages-4kB/enabled: base pages are what every size falls back to,
            // so a "4K" key would be read and ignored.
            if bytes.0 == PAGE_SIZE {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    "16K, 32K, … 2M (4K is the base page: with every size `never`, faults map 4K)",
                ));
            }
            // No hugepages-8kB/enabled: anonymous THP has no order 1 (THP_ORDERS_ALL_ANON).
            if bytes.0 == PAGE_SIZE << 1 {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    "16K, 32K, … 2M (no anonymous 8K THP in any kernel: an order-1 folio has no room for the deferred split list)",
                ));
            }
            if !sizes_seen.insert(bytes.0) {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    "each size once (it is listed under another spelling too)",
                ));
            }
            // Per-size mTHP arrived in 6.8; before, the PMD size alone.
            let version = self.kernel.version;
            if !version.has(MmChange::AnonMthp) && bytes.0 != PAGE_SIZE << PMD_ORDER {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    format!(
                        "2M only with kernel.version = \"{version}\" (no per-size mTHP before 6.8)"
                    ),
                ));
            }
        }
        self.check_hugepages_shmem()?;
        let version = self.kernel.version;
        if self.sysfs.lru_gen.enabled() && !version.has(MmChange::LruGen) {
            return Err(invalid(
                "sysfs.lru_gen.enabled",
                "true",
                format!("false with kernel.version = \"{version}\" (MGLRU arrived in 6.1)"),
            ));
        }
        if let Some(d) = self.sysfs.defrag {
            if !d.exists_in(version) {
                let known: Vec<&str> = ThpDefrag::ALL
                    .iter()
                    .filter(|d| d.exists_in(version))
                    .map(|d| d.name())
                    .collect();
                return Err(invalid(
                    "sysfs.defrag",
                    d.name(),
                    format!(
                        "{} with kernel.version = \"{version}\" (defer arrived in 4.6, \
                         defer+madvise in 4.11)",
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[[memcg]]`: how many, unique names, v2-only files on v1, parents, limits.
    pub(crate) fn check_memcgs(&self) -> Result<(), ScenarioError> {
        // mem_cgroup_alloc_id: ids 1 ..= MEM_CGROUP_ID_MAX (65535, a u16), the root's included.
        if self.memcgs.len() > MAX_MEMCGS {
            return Err(invalid(
                "memcg",
                format!("{} [[memcg]] tables", self.memcgs.len()),
                format!("at most {MAX_MEMCGS} (the kernel's MEM_CGROUP_ID_MAX = 65535 ids, one the root's)"),
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, cg) in self.memcgs.iter().enumerate() {
            if cg.name.is_empty() || cg.name.contains('/') || !seen.insert(cg.name.as_str()) {
                return Err(invalid(
                    format!("memcg[{i}].name"),
                    format!("`{}`", cg.name),
                    "a unique non-empty name without `/`",
                ));
            }
            if self.kernel.cgroup == CgroupVersion::V1 {
                let v2_only = [
                    ("high", cg.high.is_some()),
                    ("zswap_max", cg.zswap_max.is_some()),
                    ("zswap_writeback", !cg.zswap_writeback),
                    ("oom_group", cg.oom_group),
                    ("min", cg.min.is_some()),
                    ("low", cg.low.is_some()),
                    ("swap_max", cg.swap_max.is_some()),
                ];
                if let Some((name, _)) = v2_only.iter().find(|(_, set)| *set) {
                    return Err(invalid(
                        format!("memcg[{i}].{name}"),
                        "set",
                        "unset with kernel.cgroup = \"v1\" (a cgroup v2 file)",
                    ));
                }
            }
            if let Some(parent) = &cg.parent {
                // Children come after their parent, so the tree has no cycles. `seen` holds
                // the names declared before this one, and this one's.
                if parent == &cg.name || !seen.contains(parent.as_str()) {
                    let earlier: Vec<&str> =
                        self.memcgs[..i].iter().map(|c| c.name.as_str()).collect();
                    let why = if parent == &cg.name {
                        "a memcg cannot be its own parent (a cycle); name a memcg declared before it"
                    } else if self.memcgs.iter().any(|c| &c.name == parent) {
                        "a memcg declared before this one (a parent comes before its children)"
                    } else {
                        "the name of a [[memcg]] declared before this one, or absent for the root"
                    };
                    return Err(invalid(
                        format!("memcg[{i}].parent"),
                        format!("`{parent}`"),
                        format!(
                            "{why}; declared before: {}",
                            if earlier.is_empty() {
                                "none".to_string()
                            } else {
                                earlier.join(", ")
                            }
                        ),
                    ));
                }
            }
            for (name, limit) in [("max", cg.max), ("high", cg.high)] {
                if let Some(limit) = limit.filter(|l| l.0 < 1 << 20) {
                    return Err(invalid(
                        format!("memcg[{i}].{name}"),
                        format_size(limit.0),
                        ">= 1M",
                    ));
                }
            }
        }
        Ok(())
    }

    /// `[[file]]`s, and at least one `[[workload]]`.
    pub(crate) fn check_files_and_workloads(&self) -> Result<(), ScenarioError> {
        self.validate_files()?;
        tmpfs::validate(&self.tmpfs, self.sysfs.lru_gen.enabled())?;
        if self.workloads.is_empty() {
            return Err(invalid(
                "workload",
                "none",
                "at least one [[workload]] table",
            ));
        }
        Ok(())
    }
    /// The `[[file]]` named `name`, or an error naming `field` and the files there are.
    fn file_spec(&self, name: &str, field: String) -> Result<&FileSpec, ScenarioError> {
        self.files.iter().find(|f| f.name == name).ok_or_else(|| {
            let names: Vec<_> = self.files.iter().map(|f| f.name.as_str()).collect();
            invalid(
                field,
                format!("`{name}`"),
                format!(
                    "a [[file]] name: {}",
                    if names.is_empty() {
                        "(none defined)".into()
                    } else {
                        names.join(", ")
                    }
                ),
            )
        })
    }

    /// What every `[[workload]]` has: its OOM score and the memcg it names.
    pub(crate) fn check_workload_refs(
        &self,
        i: usize,
        w: &WorkloadSpec,
    ) -> Result<(), ScenarioError> {
        let field = |name: &str| format!("workload[{i}].{name}");
        let adj = w.oom_score_adj();
        if !(-1000..=1000).contains(&adj) {
            return Err(invalid(
                field("oom_score_adj"),
                adj,
                "-1000 ..= 1000 (-1000: never OOM-killed)",
            ));
        }
        if let Some(name) = w.memcg() {
            if !self.memcgs.iter().any(|cg| cg.name == name) {
                let names: Vec<_> = self.memcgs.iter().map(|c| c.name.as_str()).collect();
                return Err(invalid(
                    field("memcg"),
                    format!("`{name}`"),
                    format!(
                        "a [[memcg]] name: {}",
                        if names.is_empty() {
                            "(none defined)".into()
                        } else {
                            names.join(", ")
                        }
                    ),
                ));
            }
        }
        Ok(())
    }
}
