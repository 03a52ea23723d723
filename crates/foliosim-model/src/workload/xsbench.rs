//! XSBench (github.com/ANL-CESAR/XSBench, openmp-threading; spec-thp-migrate.md §9.8), the
//! history-based unionized-grid event loop as memory accesses (docs/xsbench.md).
//!
//! Data (GridInit.c): the nuclide grid, isotopes x gridpoints points of 48 bytes (an energy and
//! five cross sections); the unionized energy array, a double per point of all nuclides; the
//! index grid, isotopes ints per unionized point. Thread 0 allocates and writes them all
//! (XSBench builds them before its parallel region), the threads meet, then each does its
//! share of the lookups. A lookup (Simulation.c, calculate_macro_xs) draws an energy and a
//! material (pick_mat), binary-searches the unionized array (grid_search), reads that point's
//! row of the index grid and, per nuclide of the material, two adjacent points of the
//! nuclide's grid (calculate_micro_xs). Energies are uniform, so every read past the top of the
//! search tree lands on a uniformly random page of its array.
//!
//! Per lookup, as Access ops over each array in chunks of lookups:
//! - unionized: the search's page-distinct levels, ceil(log2(pages)) + 1, less the top
//!   `HOT_LEVELS` (63 pages every lookup visits: the hot set), one after another (mlp 1);
//!   the ~9 levels inside the last page hit the L1 and are part of the compute time;
//! - index grid: its row, 1 + row bytes / 4096 pages on average (mlp 1: it needs the search);
//! - nuclide grid: one page per nuclide of the material (the two points are adjacent), the
//!   material table's mean: 55.70 nuclides for large (fuel 321 at p 0.140, then 5, 4, 4, 27,
//!   21 x 5, 9, 9 at the pick_mat probabilities of Simulation.c; Materials.c load_num_nucs),
//!   15.52 for small (fuel 34). The nuclides are independent: `NUCLIDE_MLP` in flight.
//!   A Compute op per chunk for the arithmetic (`lookup_compute_ns`).

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::engine::cost::CostModel;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::{XsbenchSpec, PAGE_SIZE};
use serde::Serialize;

const MARK_START: usize = 0;
const MARK_END: usize = 1;
const BARRIER_INIT: u32 = 0;
const BARRIER_DONE: u32 = 1;
const VMA_NUCLIDE: u32 = 0;
const VMA_UNIONIZED: u32 = 1;
const VMA_INDEX: u32 = 2;
/// Bytes of a NuclideGridPoint (XSbench_header.h: six doubles).
const NUCLIDE_POINT_BYTES: u64 = 48;
/// Levels of the binary search every lookup shares (1 + 2 + ... + 32 = 63 pages): TLB-hot.
const HOT_LEVELS: u32 = 6;
/// Nuclide-grid reads in flight at once: the nuclides of a lookup are independent; bounded by
/// the core's page walkers (4 on Golden Cove). estimate.
const NUCLIDE_MLP: u32 = 4;
/// Hot code of the lookup loop and of libm/libgomp it calls. estimate.
const CODE_PAGES: u32 = 8;
/// The stack and per-thread reduction variables. estimate.
const STORE_PAGES: u32 = 2;
/// Sorting during init (qsort of each nuclide grid and of the unionized array), per
/// comparison. estimate.
const SORT_COMPARE_NS: f64 = 5.0;
/// Chunks per thread at most: larger runs take larger chunks (the ops are materialised).
const MAX_CHUNKS_PER_THREAD: u64 = 20_000;

/// `size` and `thp`: plain data of the schema (scenario/spec_types.rs).
pub use crate::scenario::{ThpAdviceSpec, XsbenchSize};

impl ThpAdviceSpec {
    pub fn advice(self) -> ThpAdvice {
        match self {
            ThpAdviceSpec::Default => ThpAdvice::Default,
            ThpAdviceSpec::Hugepage => ThpAdvice::Hugepage,
            ThpAdviceSpec::Nohugepage => ThpAdvice::NoHugepage,
        }
    }
}

/// The data and the per-lookup accesses of one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grids {
    pub isotopes: u32,
    pub gridpoints: u32,
    pub nuclide_grid_bytes: u64,
    pub unionized_bytes: u64,
    pub index_grid_bytes: u64,
    /// Mean nuclides of the material of a lookup.
    pub nuclides_per_lookup: f64,
    /// Random unionized pages read per lookup, one after another.
    pub unionized_reads: u32,
    /// Index-grid pages per lookup (a row may span two).
    pub index_pages_per_lookup: f64,
}

/// Materials.c load_num_nucs: nuclides per material; fuel has 34 in H-M small (68 isotopes),
/// 321 otherwise.
fn num_nucs(isotopes: u32) -> [u32; 12] {
    let fuel = if isotopes == 68 { 34 } else { 321 };
    [fuel, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9]
}

/// Simulation.c pick_mat: the probability of each material.
const MATERIAL_P: [f64; 12] = [
    0.140, 0.052, 0.275, 0.134, 0.154, 0.064, 0.066, 0.055, 0.008, 0.015, 0.025, 0.013,
];

impl Grids {
    /// io.c: small is 68 isotopes, XL 238847 gridpoints; default 355 x 11303. `isotopes` and
    /// `gridpoints` override (-g, and the isotope count the material table needs).
    pub fn new(size: XsbenchSize, isotopes: Option<u32>, gridpoints: Option<u32>) -> Grids {
        let isotopes = isotopes.unwrap_or(match size {
            XsbenchSize::Small => 68,
            _ => 355,
        });
        let gridpoints = gridpoints.unwrap_or(match size {
            XsbenchSize::Xl => 238_847,
            _ => 11_303,
        });
        let points = isotopes as u64 * gridpoints as u64;
        let unionized_bytes = points * 8;
        let union_pages = unionized_bytes.div_ceil(PAGE_SIZE).max(1);
        let levels = 64 - (union_pages - 1).leading_zeros().min(63) + 1;
        let row_bytes = isotopes as u64 * 4;
        Grids {
            isotopes,
            gridpoints,
            nuclide_grid_bytes: points * NUCLIDE_POINT_BYTES,
            unionized_bytes,
            index_grid_bytes: points * row_bytes,
            nuclides_per_lookup: num_nucs(isotopes)
                .iter()
                .zip(MATERIAL_P)
                .map(|(&n, p)| n as f64 * p)
                .sum(),
            unionized_reads: levels.saturating_sub(HOT_LEVELS).max(1),
            index_pages_per_lookup: 1.0 + row_bytes.min(PAGE_SIZE) as f64 / PAGE_SIZE as f64,
        }
    }

    pub fn total_bytes(&self) -> u64 {
        self.nuclide_grid_bytes + self.unionized_bytes + self.index_grid_bytes
    }

    fn pages(bytes: u64) -> u32 {
        bytes.div_ceil(PAGE_SIZE) as u32
    }

    /// The hot set of a lookup thread.
    fn hot_load_pages(&self) -> u32 {
        // The top of the search tree, and the material tables (mats, concs: 12 x 321 x 12 B).
        (1 << HOT_LEVELS) - 1 + 12
    }
}

/// What XSBench prints: lookups, runtime, lookups/s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct XsbenchResult {
    pub threads: u32,
    pub isotopes: u32,
    pub gridpoints: u32,
    /// Allocated data, MB (XSBench: "Allocated %.0lf MB of data").
    pub data_mb: f64,
    pub lookups: u64,
    /// From the first thread's start of lookups to the last one's end (the simulation phase).
    pub runtime_s: f64,
    pub lookups_per_s: f64,
    /// Every counter a mark records (vmstat, perf's TLB events, TLB shootdowns), over the
    /// lookups only: the init phase excluded.
    pub phase_counters: std::collections::BTreeMap<String, u64>,
}

fn spec_fields(spec: &XsbenchSpec) -> (Grids, u64, u32, ThpAdviceSpec, Option<u64>, Option<u32>) {
    let XsbenchSpec {
        size,
        isotopes,
        gridpoints,
        lookups,
        threads,
        thp,
        lookup_compute_ns,
        chunk_lookups,
        ..
    } = spec;
    (
        Grids::new(*size, *isotopes, *gridpoints),
        *lookups,
        *threads,
        *thp,
        *lookup_compute_ns,
        *chunk_lookups,
    )
}

/// The workload's tasks; a lookup's arithmetic costs `lookup_compute_ns` or, by default, the
/// machine's `xsbench_lookup_*` costs.
pub fn tasks(spec: &XsbenchSpec, cost: &CostModel) -> Vec<TaskSpec> {
    let (g, lookups, threads, thp, compute_ns, chunk) = spec_fields(spec);
    let memcg = spec.memcg.clone();
    let compute_ns = compute_ns.unwrap_or(
        (cost.xsbench_lookup_base_ns as f64
            + cost.xsbench_lookup_per_nuclide_ns as f64 * g.nuclides_per_lookup) as u64,
    );
    let vmas = [
        (VMA_NUCLIDE, Grids::pages(g.nuclide_grid_bytes)),
        (VMA_UNIONIZED, Grids::pages(g.unionized_bytes)),
        (VMA_INDEX, Grids::pages(g.index_grid_bytes)),
    ];
    (0..threads)
        .map(|t| {
            let mut ops = Vec::new();
            if t == 0 {
                for (vma, nr_pages) in vmas {
                    ops.push(Op::Mmap {
                        vma,
                        nr_pages,
                        thp: thp.advice(),
                    });
                    ops.push(Op::Touch {
                        vma,
                        first: 0,
                        nr: nr_pages,
                        write: true,
                    });
                }
                // qsort of each nuclide's grid and of the unionized array.
                let n_log_n = |n: f64| n * n.max(2.0).log2();
                let sorts = g.isotopes as f64 * n_log_n(g.gridpoints as f64)
                    + n_log_n(g.isotopes as f64 * g.gridpoints as f64);
                ops.push(Op::Compute {
                    ns: (sorts * SORT_COMPARE_NS) as u64,
                });
            }
            ops.push(Op::Barrier {
                id: BARRIER_INIT,
                parties: threads,
            });
            ops.push(Op::TlbHotSet {
                code_pages: CODE_PAGES,
                load_pages: g.hot_load_pages(),
                store_pages: STORE_PAGES,
            });
            ops.push(Op::Mark(MARK_START));
            let mine = lookups / threads as u64 + u64::from((t as u64) < lookups % threads as u64);
            lookup_ops(&g, mine, chunk, compute_ns, &vmas, &mut ops);
            ops.push(Op::Mark(MARK_END));
            ops.push(Op::Barrier {
                id: BARRIER_DONE,
                parties: threads,
            });
            ops.push(Op::Exit);
            TaskSpec {
                name: format!("xsbench-{t}"),
                memcg: memcg.clone(),
                ops,
                shares_mm_with: (t > 0).then_some(0),
            }
        })
        .collect()
}

/// The ops of `lookups` lookups, in chunks; the fractional accesses carry over.
fn lookup_ops(
    g: &Grids,
    lookups: u64,
    chunk: Option<u32>,
    compute_ns: u64,
    vmas: &[(u32, u32); 3],
    ops: &mut Vec<Op>,
) {
    let chunk = chunk
        .map(u64::from)
        .unwrap_or_else(|| lookups.div_ceil(MAX_CHUNKS_PER_THREAD).max(1000))
        .max(1);
    let mut carry = [0.0f64; 2];
    let mut left = lookups;
    while left > 0 {
        let n = chunk.min(left);
        left -= n;
        let mut take = |i: usize, per_lookup: f64| {
            let exact = n as f64 * per_lookup + carry[i];
            let whole = exact.floor();
            carry[i] = exact - whole;
            whole as u64
        };
        let index = take(0, g.index_pages_per_lookup);
        let nuclide = take(1, g.nuclides_per_lookup);
        for (vma, count, mlp) in [
            (VMA_UNIONIZED, n * g.unionized_reads as u64, 1),
            (VMA_INDEX, index, 1),
            (VMA_NUCLIDE, nuclide, NUCLIDE_MLP),
        ] {
            if count == 0 {
                continue;
            }
            let nr = vmas.iter().find(|v| v.0 == vma).expect("a grid").1;
            ops.push(Op::Access {
                vma,
                first: 0,
                nr,
                count,
                write: false,
                mlp,
            });
        }
        ops.push(Op::Compute { ns: n * compute_ns });
    }
}

pub fn report(spec: &XsbenchSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let (g, lookups, threads, ..) = spec_fields(spec);
    let at = |m: usize| {
        marks
            .iter()
            .filter_map(move |t| t.get(m)?.as_ref().map(|x| x.at_ns))
    };
    let start = at(MARK_START).min();
    let end = at(MARK_END).max();
    // System-wide counters over the lookups (the earliest start to the latest end mark).
    let mark_of = |m: usize, at_ns: Option<u64>| {
        marks
            .iter()
            .filter_map(|t| t.get(m)?.as_ref())
            .find(|x| Some(x.at_ns) == at_ns)
    };
    let phase_counters = match (mark_of(MARK_START, start), mark_of(MARK_END, end)) {
        (Some(a), Some(b)) => b
            .counters
            .iter()
            .map(|(n, v)| {
                (
                    n.clone(),
                    v.saturating_sub(a.counters.get(n).copied().unwrap_or(0)),
                )
            })
            .collect(),
        _ => Default::default(),
    };
    let runtime_ns = match (start, end) {
        (Some(s), Some(e)) if e > s => e - s,
        _ => 0,
    };
    let runtime_s = runtime_ns as f64 / 1e9;
    WorkloadResult {
        kind: "xsbench".into(),
        tasks: threads,
        elapsed_ns_max: runtime_ns,
        xsbench: Some(XsbenchResult {
            threads,
            isotopes: g.isotopes,
            gridpoints: g.gridpoints,
            data_mb: g.total_bytes() as f64 / (1u64 << 20) as f64,
            lookups,
            runtime_s,
            lookups_per_s: if runtime_s > 0.0 {
                lookups as f64 / runtime_s
            } else {
                0.0
            },
            phase_counters,
        }),
        ..WorkloadResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_spec() {
        // -s large: 355 x 11303; 192 MB nuclide grid, 32 MB unionized, 5.7 GB index grid.
        let g = Grids::new(XsbenchSize::Large, None, None);
        assert_eq!((g.isotopes, g.gridpoints), (355, 11303));
        assert_eq!(g.nuclide_grid_bytes, 4_012_565 * 48);
        assert_eq!(g.unionized_bytes, 4_012_565 * 8);
        assert_eq!(g.index_grid_bytes, 4_012_565 * 355 * 4);
        assert!((g.total_bytes() as f64 / 1e9 - 5.92).abs() < 0.01);
        assert!((g.nuclides_per_lookup - 55.70).abs() < 0.01, "{g:?}");
        // 7838 unionized pages: 13 levels across pages + the last page, less 6 hot ones.
        assert_eq!(g.unionized_reads, 8);
        let s = Grids::new(XsbenchSize::Small, None, None);
        assert_eq!(s.isotopes, 68);
        assert!((s.nuclides_per_lookup - 15.52).abs() < 0.01, "{s:?}");
        let xl = Grids::new(XsbenchSize::Xl, None, None);
        assert_eq!(xl.gridpoints, 238_847);
        assert!(xl.total_bytes() > 120_000_000_000);
    }
}
