//! Two-socket AMD EPYC (Milan class, 7763): per socket 8 CCDs of one 8-core CCX each, SMT,
//! bare metal. A CCX is its own LLC (32 MiB L3); lines between CCXs go through the I/O die,
//! between sockets over Infinity Fabric. Figures of the order the published core-to-core
//! tables give (Chips and Cheese, module doc of sapphire-rapids-2s-112c), not re-read here.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::Estimate;
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "epyc-2s",
    description: "2 x AMD EPYC (Milan), 8 CCX x 8 cores x 2 threads each, bare metal",
    topology: Some(TopologySpec {
        sockets: 2,
        llcs_per_socket: 8,
        cores_per_llc: 8,
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
            ns: 25,
            provenance: Estimate,
            source: "estimate: within one CCX's L3, the low tens of ns of the published Zen 3 tables",
        },
        ProfileCost {
            name: "line_transfer_die_ns",
            ns: 110,
            provenance: Estimate,
            source: "estimate: CCX to CCX through the I/O die, about 100 ns or more in the published Zen 2/3 tables",
        },
        ProfileCost {
            name: "line_transfer_socket_ns",
            ns: 200,
            provenance: Estimate,
            source: "estimate: socket to socket over Infinity Fabric, about twice CCX to CCX",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: a bare-metal shootdown round trip, as sapphire-rapids-2s-112c",
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
