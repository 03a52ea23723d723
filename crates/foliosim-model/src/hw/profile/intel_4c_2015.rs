//! A 2015 Intel desktop, 4 cores with SMT on one ring and one LLC (Skylake client, Core
//! i7-6700K class), bare metal: seed 001's kind of box.
//!
//! Line transfers are cited from the published core-to-core matrix of an i7-6700K at 4.0 GHz
//! (nviennot/core-to-core-latency, commit 96a943a, results/Intel Core i7-6700K.csv; README
//! tables "Single socket results" 20 ns and "Hyper-threads" 6.9 ns,
//! https://github.com/nviennot/core-to-core-latency). Each cell there is a compare-and-swap
//! round trip over 2: one line transfer. The CSV numbers SMT siblings adjacently (cells
//! (0,1), (2,3), ... are 6.9-7.0 ns); the profile takes each class's median.

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::Provenance::{Cited, Estimate};
use crate::scenario::{TlbKind, TopologySpec};

pub static PROFILE: MachineProfile = MachineProfile {
    name: "intel-4c-2015",
    description: "Intel client (Skylake, i7-6700K class), 4 cores x 2 threads, one LLC, bare metal",
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
            ns: 7,
            provenance: Cited,
            source: "cited: i7-6700K, median of the 4 SMT-sibling cells, 6.9 ns (nviennot/core-to-core-latency@96a943a results/Intel Core i7-6700K.csv; README Hyper-threads table 6.9 ns)",
        },
        ProfileCost {
            name: "line_transfer_llc_ns",
            ns: 20,
            provenance: Cited,
            source: "cited: i7-6700K, median of the 24 cells between cores, 19.7 ns (nviennot/core-to-core-latency@96a943a results/Intel Core i7-6700K.csv; README Single socket table 20 ns)",
        },
        ProfileCost {
            name: "tlb_flush_ipi_ns",
            ns: 1000,
            provenance: Estimate,
            source: "estimate: no published shootdown latency of a Skylake client was found (the papers measure two-socket servers); a bare-metal round trip a little under the server's (sapphire-rapids-2s-112c) on a short ring. `foliosim calibrate --live --hw-only` measures it on the machine",
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
