//! Two-socket AMD EPYC 7763 (Milan, Zen 3): per socket 8 CCDs of one 8-core CCX each, SMT,
//! bare metal. A CCX is its own LLC (32 MiB L3); lines between CCXs go through the I/O die,
//! between sockets over Infinity Fabric.
//!
//! Line transfers are cited from the published core-to-core matrix of a dual EPYC 7763
//! (KCORES/core-to-core-latency-plus, commit 264ea0a, results/Dual AMD EPYC 7763 64-Core
//! Processor by-fwyzard.csv, 256 CPUs, https://github.com/KCORES/core-to-core-latency-plus).
//! Each cell is a compare-and-swap round trip over 2: one line transfer. The matrix follows
//! Linux's numbering (CPU c and c + 128 are SMT siblings: 10.2 ns in all 128 cells; CPUs
//! 0-63 socket 0, 64-127 socket 1; 8 consecutive cores a CCX); each class's median over its
//! cells is taken. The development VM runs on a Milan core too (AMD family 25 model 1, 32 MiB
//! L3): the cost profile's codec costs, measured there, are of this core.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::{Cited, Estimate};
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "epyc-2s",
    description: "2 x AMD EPYC 7763 (Milan), 8 CCX x 8 cores x 2 threads each, bare metal",
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
            provenance: Cited,
            source: "cited: dual EPYC 7763, median of the 128 SMT-sibling cells, 10.2 ns (KCORES/core-to-core-latency-plus@264ea0a results/Dual AMD EPYC 7763 64-Core Processor by-fwyzard.csv)",
        },
        ProfileCost {
            name: "line_transfer_llc_ns",
            ns: 25,
            provenance: Cited,
            source: "cited: dual EPYC 7763, median of the 1792 cells within a CCX, 24.9 ns (KCORES/core-to-core-latency-plus@264ea0a, same CSV)",
        },
        ProfileCost {
            name: "line_transfer_die_ns",
            ns: 124,
            provenance: Cited,
            source: "cited: dual EPYC 7763, median of the 14336 cells between CCXs of one socket, 124.2 ns (p10 107, p90 134; KCORES/core-to-core-latency-plus@264ea0a, same CSV)",
        },
        ProfileCost {
            name: "line_transfer_socket_ns",
            ns: 304,
            provenance: Cited,
            source: "cited: dual EPYC 7763, median of the 16384 cells between sockets, 303.6 ns (p10 293, p90 323; KCORES/core-to-core-latency-plus@264ea0a, same CSV)",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1200,
            provenance: Estimate,
            source: "estimate: no published shootdown latency of a Milan system was found; a bare-metal round trip as sapphire-rapids-2s-112c. `foliosim calibrate --live --hw-only` measures it on the machine",
        },
        ProfileCost {
            name: "tlb_ipi_extra_cpu_ns",
            ns: 100,
            provenance: Estimate,
            source: "estimate: one x2APIC ICR write per further target; no published per-target figure found",
        },
        ProfileCost {
            name: "tlb_ipi_receive_ns",
            ns: 400,
            provenance: Estimate,
            source: "estimate: interrupt entry and exit with the speculation mitigations, as sapphire-rapids-2s-112c; no published receive-side figure found",
        },
    ],
};
