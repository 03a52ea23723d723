//! Plain-data types of the schema whose behaviour lives in the model: the model's modules
//! re-export them where they are used (content.rs, hw/tlb_cache.rs, workload/xsbench.rs,
//! workload/tlb_shootdown.rs), so the schema names nothing above it.

use super::Bytes;
use serde::{Deserialize, Serialize};

/// What a page holds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum ContentClass {
    /// vm-scalability usemem with -w: every 8-byte word holds its word index in the mapping.
    #[default]
    Usemem,
    /// All zero (never written, or cleared): swap's zeromap and zswap store no data.
    Zero,
    /// One repeated non-zero 8-byte word (zram's and old zswap's same-filled pages).
    SameFilled,
    /// Uniformly random bytes: incompressible (encrypted or already compressed data).
    Random,
    /// English-like ASCII text.
    Text,
    /// Pages of real process memory (a python3 heap) shipped with the crate.
    ProcessSample,
}

/// `[machine.tlb_geometry]`: a preset and overrides of any of its fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbGeometrySpec {
    /// "golden-cove" (x86 server, Sapphire Rapids) or "neoverse-n1"; absent: the one of
    /// `machine.tlb` (x86-ipi: golden-cove, arm64-tlbi: neoverse-n1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d_4k_entries: Option<u32>,
    /// 0: 2 MiB translations share the 4 KiB array (a fully associative L1 dTLB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d_2m_entries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1i_4k_entries: Option<u32>,
    /// The second-level TLB, shared by 4 KiB and 2 MiB translations, code and data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stlb_entries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d_bytes: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bytes: Option<Bytes>,
    /// The last-level cache's share of one CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes_per_cpu: Option<Bytes>,
}

/// `-s`: the H-M benchmark size (io.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum XsbenchSize {
    #[serde(rename = "small")]
    Small,
    #[default]
    #[serde(rename = "large")]
    Large,
    #[serde(rename = "XL")]
    Xl,
}

/// MADV_HUGEPAGE / MADV_NOHUGEPAGE on the grids (XSBench itself advises nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpAdviceSpec {
    #[default]
    Default,
    Hugepage,
    Nohugepage,
}

/// What thread 0 does to the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShootdownOp {
    Munmap,
    Mprotect,
    MadvDontneed,
    MadvPageout,
}
