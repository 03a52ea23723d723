//! Ampere Altra Q80, 80 Neoverse N1 cores, one socket, no SMT, bare metal: seed 000's host
//! (the seed ran in an 8-vCPU VM of it: `machine.cpus = 8` runs on the first 8 of its cores).
//! The cores share the mesh's system-level cache (CMN-600; pairs of cores in DSUs on each
//! cross-point, per AnandTech's Altra Max review,
//! https://www.anandtech.com/show/16979/the-ampere-altra-max-review-pushing-it-to-128-cores-per-socket/3),
//! modelled as one LLC domain. TLB invalidation is broadcast TLBI + DSB (`tlb_dsb_ns`, cited
//! in the cost profile); IPIs remain for tlb_remove_table_sync_one.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::Estimate;
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
            ns: 90,
            provenance: Estimate,
            source: "estimate: a line between two N1 cores crosses the CMN-600 mesh through the SLC's home node, of the order of AnandTech's Altra core-to-core figures (module doc), not re-read",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: a GIC SGI round trip taken of the x86 bare-metal order (sapphire-rapids-2s-112c)",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one more ICC_SGI1R write per target, as an x2APIC ICR write",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: exception entry and exit, as x86's (sapphire-rapids-2s-112c)",
        },
    ],
};
