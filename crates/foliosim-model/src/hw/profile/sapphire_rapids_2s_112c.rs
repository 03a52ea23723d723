//! Two-socket Sapphire Rapids, 56 cores per socket with SMT (Xeon Platinum 8480+ class), bare
//! metal: seed 003's kind of box. One LLC per socket (sub-NUMA clustering off, the default).
//! The core-to-core figures are estimates of the order the published tables give (Chips and
//! Cheese, "Core to Core Latency Data on Large Systems", 2023-11-07,
//! https://chipsandcheese.com/2023/11/07/core-to-core-latency-data-on-large-systems/); they
//! were not re-read against that table here, so they stay estimates until someone does, or
//! `foliosim calibrate` measures them on the machine.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::Estimate;
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "sapphire-rapids-2s-112c",
    description: "2 x Xeon Sapphire Rapids, 56 cores x 2 threads each, bare metal",
    topology: Some(TopologySpec {
        sockets: 2,
        llcs_per_socket: 1,
        cores_per_llc: 56,
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
            ns: 70,
            provenance: Estimate,
            source: "estimate: one socket's mesh across its 4 tiles, 50-90 ns in the Chips and Cheese core-to-core table (module doc)",
        },
        ProfileCost {
            name: "line_transfer_socket_ns",
            ns: 150,
            provenance: Estimate,
            source: "estimate: across UPI, about twice the in-socket figure, as the Chips and Cheese two-socket tables show (module doc)",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: this VM's measured 12 us guest shootdown is ~10x bare metal (x86-server cost profile); a remote ack takes over 1000 cycles (Amit et al., \"Don't shoot down TLB shootdowns!\", EuroSys 2020)",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one x2APIC ICR write (an MSR write) per further target, as the x86-server cost profile",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: interrupt entry and exit with the speculation mitigations (PTI/IBRS entry code), ~1200 cycles at 3 GHz",
        },
    ],
};
