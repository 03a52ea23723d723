//! A 2015 Intel desktop, 4 cores with SMT on one ring and one LLC (Skylake client class),
//! bare metal: seed 001's kind of box.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::Estimate;
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "intel-4c-2015",
    description: "Intel client (Skylake class), 4 cores x 2 threads, one LLC, bare metal",
    topology: Some(TopologySpec {
        sockets: 1,
        llcs_per_socket: 1,
        cores_per_llc: 4,
        threads_per_core: 2,
    }),
    tlb: Some(TlbKind::X86Ipi),
    costs: &[
        ProfileCost {
            name: "line_transfer_smt_ns",
            ns: 10,
            provenance: Estimate,
            source: "estimate: a line between SMT siblings stays in the core's L1/L2, ~30 cycles",
        },
        ProfileCost {
            name: "line_transfer_llc_ns",
            ns: 35,
            provenance: Estimate,
            source: "estimate: a short client ring, about half a server mesh's core-to-core time (sapphire-rapids-2s-112c)",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1000,
            provenance: Estimate,
            source: "estimate: a bare-metal shootdown round trip, a little under the server's (sapphire-rapids-2s-112c) on a ring",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one x2APIC ICR write per further target",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: interrupt entry and exit with the speculation mitigations, as sapphire-rapids-2s-112c",
        },
    ],
};
