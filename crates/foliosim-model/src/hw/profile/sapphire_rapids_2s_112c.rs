//! Two-socket Sapphire Rapids, 56 cores per socket with SMT (Xeon Platinum 8480+ class), bare
//! metal: seed 003's kind of box. One LLC per socket (sub-NUMA clustering off, the default).
//!
//! Cited line transfers are from published core-to-core matrices (each cell a compare-and-swap
//! round trip over 2: one line transfer; the class median taken):
//! - in a socket: a Xeon W9-3475X, the same four-tile Sapphire Rapids XCC silicon and mesh as
//!   the 8480+ (KCORES/core-to-core-latency-plus, commit 264ea0a, results/Intel Xeon W9-3475X
//!   2.2GHz 36Cores 2023-Q2 by-ReinForce-II.csv, 36 cores, one thread each;
//!   https://github.com/KCORES/core-to-core-latency-plus);
//! - SMT siblings: a Core i9-12900K's P-cores, the same Golden Cove core (nviennot/
//!   core-to-core-latency, commit 96a943a, README "Hyper-threads" table, 4.3 ns;
//!   https://github.com/nviennot/core-to-core-latency).
//!
//! No published two-socket Sapphire Rapids matrix was within reach (Chips and Cheese's "Core to
//! Core Latency Data on Large Systems", 2023-11-07, has one, but its numbers could not be read
//! here), so the cross-socket figure stays an estimate from the previous generation.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::{Cited, Estimate};
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
            ns: 4,
            provenance: Cited,
            source: "cited: Golden Cove SMT siblings (i9-12900K P-cores), 4.3 ns (nviennot/core-to-core-latency@96a943a README Hyper-threads table)",
        },
        ProfileCost {
            name: "line_transfer_llc_ns",
            ns: 55,
            provenance: Cited,
            source: "cited: Xeon W9-3475X (SPR XCC), median of all 630 core pairs, 55.3 ns (min 36, max 72; KCORES/core-to-core-latency-plus@264ea0a results/Intel Xeon W9-3475X 2.2GHz 36Cores 2023-Q2 by-ReinForce-II.csv)",
        },
        ProfileCost {
            name: "line_transfer_socket_ns",
            ns: 110,
            provenance: Estimate,
            source: "estimate: no two-socket SPR matrix within reach; the previous generation over UPI, two-socket Ice Lake-SP, measured 110.9 ns (median of 1024 cross-socket cells, KCORES@264ea0a results/Dual Intel Xeon Platinum 8358 CPU 2.60GHz by-leavelet.csv) and 108 ns (8375C, nviennot@96a943a README Dual sockets table), taken as SPR's",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: no published shootdown latency of SPR was found; this VM's measured 12 us guest shootdown is ~10x bare metal (x86-server cost profile); a remote ack takes over 1000 cycles (Amit et al., \"Don't shoot down TLB shootdowns!\", EuroSys 2020). `foliosim calibrate --live --hw-only` measures it on the machine",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one x2APIC ICR write (an MSR write) per further target, as the x86-server cost profile; no published per-target figure found",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: interrupt entry and exit with the speculation mitigations (PTI/IBRS entry code), ~1200 cycles at 3 GHz; no published receive-side figure found",
        },
    ],
};
