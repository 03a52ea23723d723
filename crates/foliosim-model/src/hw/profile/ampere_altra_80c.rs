//! Ampere Altra Q80, 80 Neoverse N1 cores, one socket, no SMT, bare metal: seed 000's host
//! (the seed ran in an 8-vCPU VM of it: `machine.cpus = 8` runs on the first 8 of its cores).
//! The cores share the mesh's system-level cache (CMN-600; pairs of cores in DSUs on each
//! cross-point, per AnandTech's Altra Max review,
//! https://www.anandtech.com/show/16979/the-ampere-altra-max-review-pushing-it-to-128-cores-per-socket/3),
//! modelled as one LLC domain. TLB invalidation is broadcast TLBI + DSB (`tlb_dsb_ns`, cited
//! in the cost profile); IPIs remain for tlb_remove_table_sync_one.
//!
//! The line transfer is cited from a published core-to-core matrix of a dual Altra Q80-30
//! (KCORES/core-to-core-latency-plus, commit 264ea0a, results/Dual Ampere Altra Processor
//! Q80-30 CPU 3.0GHz by-zeroping.csv; https://github.com/KCORES/core-to-core-latency-plus):
//! its 80 CPUs are one socket (no cell above 211 ns, no cross-socket mode). Each cell is a
//! compare-and-swap round trip over 2: one line transfer. The 40 pairs of a DSU (cells (1,0),
//! (3,2), ...) take 83 ns, the other pairs 157 ns; one LLC class takes the median of all.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::{Cited, Estimate};
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "ampere-altra-80c",
    description: "Ampere Altra, 80 Neoverse N1 cores, one socket, bare metal",
    topology: Some(TopologySpec {
        sockets: 1,
        llcs_per_socket: 1,
        cores_per_llc: 80,
        threads_per_core: 1,
    }),
    tlb: Some(TlbKind::Arm64Tlbi),
    costs: &[
        ProfileCost {
            name: "line_transfer_llc_ns",
            ns: 156,
            provenance: Cited,
            source: "cited: Altra Q80-30, median of all 3160 core pairs of one socket, 156.3 ns (p10 135, p90 181; KCORES/core-to-core-latency-plus@264ea0a results/Dual Ampere Altra Processor Q80-30 CPU 3.0GHz by-zeroping.csv)",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: no published SGI round-trip figure of the Altra was found; taken of the x86 bare-metal order (sapphire-rapids-2s-112c)",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one more ICC_SGI1R write per target, as an x2APIC ICR write; no published figure found",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: exception entry and exit, as x86's (sapphire-rapids-2s-112c); no published figure found",
        },
    ],
};
