//! The scenario: what machine, which kernel, which knobs, which workloads.
//!
//! Every field has a default; `Scenario::from_toml_str` parses and validates. This file is the one
//! place where the defaults are written down (see the `default_*` functions and `Default` impls).
//! Errors name the field, the value found and what is allowed.

use crate::engine::cost::CostModel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

pub const PAGE_SIZE: u64 = 4096;
/// Orders a per-size `hugepages-<size>kB/enabled` knob exists for (x86-64/arm64 with 4 KiB pages).
pub const PMD_ORDER: u32 = 9;

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

fn invalid(
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
        if !(value >= 0.0) || !value.is_finite() {
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
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
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
    /// Memory cgroups (cgroup v2 names); workloads name the one they run in.
    #[serde(default, rename = "memcg")]
    pub memcgs: Vec<MemcgSpec>,
    #[serde(default, rename = "workload")]
    pub workloads: Vec<WorkloadSpec>,
    /// Overrides of individual costs of the machine's cost profile, by name (ns).
    #[serde(default)]
    pub costs: BTreeMap<String, f64>,
    /// Check the model's invariants while running (slow; on in tests).
    #[serde(default)]
    pub check_invariants: bool,
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
}

fn default_swap_priority() -> i32 {
    -2
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KernelVersion {
    #[serde(rename = "6.9")]
    V6_9,
    #[serde(rename = "6.10")]
    V6_10,
}

impl KernelVersion {
    pub fn name(self) -> &'static str {
        match self {
            KernelVersion::V6_9 => "6.9",
            KernelVersion::V6_10 => "6.10",
        }
    }
}

/// Which swap slot allocator the kernel runs (mm/swapfile.c); one file each under mm/swap_alloc/.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwapAllocatorKind {
    /// <= 6.9: per-CPU order-0 clusters, PMD-only huge clusters; mTHP split before swap-out.
    Legacy,
    /// 6.10 (Ryan Roberts v4): per-CPU, per-order next offset; any order swapped whole.
    PercpuOrder,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    #[serde(default = "default_kernel_version")]
    pub version: KernelVersion,
    /// Override of the release's swap allocator.
    #[serde(default)]
    pub swap_allocator: Option<SwapAllocatorKind>,
}

fn default_kernel_version() -> KernelVersion {
    KernelVersion::V6_10
}

impl Default for Kernel {
    fn default() -> Self {
        Kernel {
            version: default_kernel_version(),
            swap_allocator: None,
        }
    }
}

impl Kernel {
    pub fn swap_allocator(&self) -> SwapAllocatorKind {
        self.swap_allocator.unwrap_or(match self.version {
            KernelVersion::V6_9 => SwapAllocatorKind::Legacy,
            KernelVersion::V6_10 => SwapAllocatorKind::PercpuOrder,
        })
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
}

fn default_thp_top() -> ThpEnabled {
    ThpEnabled::Never
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs {
            thp_enabled: default_thp_top(),
            hugepages: BTreeMap::new(),
        }
    }
}

impl Sysfs {
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
        }
    }

    /// Per order 1..=PMD_ORDER: is that size allowed at fault for a VMA (madvised or not)?
    /// Keys are compared by the size they spell ("64K", "64k" and "65536" are one key).
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
        for order in 1..=PMD_ORDER {
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
    /// memory.max; absent means no limit.
    #[serde(default)]
    pub max: Option<Bytes>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// vm-scalability `usemem --init-time -w -O -n N SIZE`.
    Usemem {
        /// Number of processes (`-n`).
        nproc: u32,
        /// Anonymous memory each process maps and writes.
        size: Bytes,
        /// memcg the processes run in; absent = root.
        #[serde(default)]
        memcg: Option<String>,
        /// MADV_HUGEPAGE the mapping (for `madvise` sysfs settings).
        #[serde(default)]
        madv_hugepage: bool,
        /// MADV_PAGEOUT the whole mapping once written (an extra step some tests use).
        #[serde(default)]
        pageout_after_write: bool,
    },
}

impl Scenario {
    pub fn from_toml_str(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        scenario.validate()?;
        Ok(scenario)
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("a scenario always serializes")
    }

    /// Checks what serde's types cannot: ranges, cross references, known names.
    pub fn validate(&self) -> Result<(), ScenarioError> {
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
        let min_memory = 16 << 20;
        if m.memory.0 < min_memory || m.memory.0 > 1 << 42 {
            return Err(invalid(
                "machine.memory",
                format_size(m.memory.0),
                "16M ..= 4T",
            ));
        }
        CostModel::profile(&m.cost_profile).ok_or_else(|| {
            invalid(
                "machine.cost_profile",
                &m.cost_profile,
                CostModel::PROFILES.join(", "),
            )
        })?;
        if m.swap_devices.len() > crate::mm::swapfile::MAX_SWAPFILES {
            return Err(invalid(
                "machine.swap",
                m.swap_devices.len(),
                "at most 16 devices",
            ));
        }
        for (i, dev) in m.swap_devices.iter().enumerate() {
            let clusters = dev.size.0 / (PAGE_SIZE * crate::mm::swapfile::SWAPFILE_CLUSTER as u64);
            if clusters < 2 || dev.size.0 > 1 << 40 {
                return Err(invalid(
                    format!("machine.swap[{i}].size"),
                    format_size(dev.size.0),
                    "4M ..= 1T (at least two 2 MiB swap clusters)",
                ));
            }
            if dev.bandwidth_bytes_per_s == Some(0) {
                return Err(invalid(
                    format!("machine.swap[{i}].bandwidth_bytes_per_s"),
                    0,
                    "> 0",
                ));
            }
        }
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
            if !(*value >= 0.0) || !value.is_finite() {
                return Err(invalid(
                    format!("costs.{name}"),
                    value,
                    "a finite number of ns >= 0",
                ));
            }
        }
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
                    "4K, 8K, 16K, 32K, 64K, 128K, 256K, 512K, 1M, 2M",
                ));
            }
            if !sizes_seen.insert(bytes.0) {
                return Err(invalid(
                    format!("sysfs.hugepages.\"{size}\""),
                    size,
                    "each size once (it is listed under another spelling too)",
                ));
            }
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
            if let Some(max) = cg.max {
                if max.0 < 1 << 20 {
                    return Err(invalid(
                        format!("memcg[{i}].max"),
                        format_size(max.0),
                        ">= 1M",
                    ));
                }
            }
        }
        if self.workloads.is_empty() {
            return Err(invalid(
                "workload",
                "none",
                "at least one [[workload]] table",
            ));
        }
        for (i, w) in self.workloads.iter().enumerate() {
            match w {
                WorkloadSpec::Usemem {
                    nproc, size, memcg, ..
                } => {
                    if *nproc == 0 || *nproc > 100_000 {
                        return Err(invalid(
                            format!("workload[{i}].nproc"),
                            nproc,
                            "1 ..= 100000",
                        ));
                    }
                    if size.0 < PAGE_SIZE || size.0 > 1 << 42 {
                        return Err(invalid(
                            format!("workload[{i}].size"),
                            format_size(size.0),
                            "4K ..= 4T",
                        ));
                    }
                    if let Some(name) = memcg {
                        if !self.memcgs.iter().any(|cg| &cg.name == name) {
                            let names: Vec<_> =
                                self.memcgs.iter().map(|c| c.name.as_str()).collect();
                            return Err(invalid(
                                format!("workload[{i}].memcg"),
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
                }
            }
        }
        Ok(())
    }
}
