//! mmtests' thpscale (shellpack_src/src/thpscale/thpscale.c; spec-thp-migrate.md §8.4): threads
//! of one process fragment memory with anonymous and file pages, then time huge page faults.
//!
//! Per thread, with `thread_size` = total / threads rounded down to 2 MiB:
//! 1. map `thread_size` anonymous and write all of it (THP where the fault gets one);
//! 2. munmap the first 1 MiB of every 2 MiB (partly unmapped THPs wait for deferred split);
//! 3. map a second region of `thread_size / 2 + 2 MiB`, untouched (MADV_HUGEPAGE if asked);
//! 4. map the thread's quarter of the work file (shared, read-only) and read a byte of every
//!    page: clean file pages fill the holes;
//! 5. wait for every thread (pthread barrier);
//! 6. `nr_hpages` times: start a timer, write the first byte of the next 2 MiB of region 2,
//!    mincore() the page 64 pages on (resident: the fault mapped a THP), write the whole 2 MiB,
//!    stop the timer: a fault-huge or fault-base sample.
//! 7. unmap everything.
//!
//! Our mappings start 2 MiB aligned (6.18 aligns anonymous mappings of PMD size or more); the
//! original's unaligned head and tail are left out. The work file (total + 16 MiB of random
//! bytes) is a scenario `[[file]]`: on disk, not cached, as mmtests creates it before
//! `drop_caches`.

use super::{Op, TaskSpec, WorkloadResult};
use crate::mm::mmap::ThpAdvice;
use crate::scenario::{Bytes, FileSpec, ThpscaleSpec, PAGE_SIZE};
use crate::stats::Summary;
use std::collections::BTreeMap;

/// Pages per 2 MiB.
const HPAGE_PAGES: u32 = 512;
/// The series of the latency samples.
pub const SERIES_BASE: u8 = 0;
pub const SERIES_HUGE: u8 = 1;
/// Barrier id: every thread has initialised.
const BARRIER_INIT: u32 = 0;

/// The geometry of one run, as thpscale computes it from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub threads: u32,
    /// Region 1 per thread, pages (2 MiB multiple).
    pub thread_pages: u32,
    /// Faults timed per thread.
    pub nr_hpages: u32,
    /// The work file: total + 16 MiB.
    pub file_pages: u32,
}

impl Geometry {
    pub fn new(threads: u32, total_size_bytes: u64) -> Geometry {
        let hpage_bytes = HPAGE_PAGES as u64 * PAGE_SIZE;
        let per_thread = total_size_bytes / threads as u64;
        Geometry {
            threads,
            thread_pages: ((per_thread & !(hpage_bytes - 1)) / PAGE_SIZE) as u32,
            nr_hpages: (per_thread / hpage_bytes / 2) as u32,
            file_pages: ((total_size_bytes + (16 << 20)) / PAGE_SIZE) as u32,
        }
    }
}

/// The threads; none when `files` lacks the work file (a backend without the scenario's
/// files).
pub fn tasks(spec: &ThpscaleSpec, files: &[FileSpec]) -> Vec<TaskSpec> {
    let ThpscaleSpec {
        threads,
        total_size,
        file,
        madv_hugepage,
        memcg,
        ..
    } = spec;
    let Some(file_id) = files.iter().position(|f| &f.name == file) else {
        return Vec::new();
    };
    let g = Geometry::new(*threads, total_size.0);
    (0..g.threads)
        .map(|idx| TaskSpec {
            name: format!("thpscale-{idx}"),
            memcg: memcg.clone(),
            shares_mm_with: (idx > 0).then_some(0),
            ops: thread_ops(&g, idx, file_id as u32, *madv_hugepage),
        })
        .collect()
}

/// One thread's program; VMA ids 3 * idx + {0: region 1, 1: region 2, 2: file}.
fn thread_ops(g: &Geometry, idx: u32, work_file: u32, madv_hugepage: bool) -> Vec<Op> {
    let (first, second, file) = (3 * idx, 3 * idx + 1, 3 * idx + 2);
    let second_pages = g.thread_pages / 2 + HPAGE_PAGES;
    let file_pages = g.thread_pages / 4;
    let mut ops = Vec::new();
    ops.push(Op::Mmap {
        vma: first,
        nr_pages: g.thread_pages,
        thp: ThpAdvice::Default,
    });
    ops.push(Op::Touch {
        vma: first,
        first: 0,
        nr: g.thread_pages,
        write: true,
    });
    // Punch holes: the first half of every 2 MiB, while a whole half fits before the end.
    let mut start = 0;
    while start + HPAGE_PAGES / 2 < g.thread_pages {
        ops.push(Op::MunmapRange {
            vma: first,
            first: start,
            nr: HPAGE_PAGES / 2,
        });
        start += HPAGE_PAGES;
    }
    ops.push(Op::Mmap {
        vma: second,
        nr_pages: second_pages,
        thp: if madv_hugepage {
            ThpAdvice::Hugepage
        } else {
            ThpAdvice::Default
        },
    });
    ops.push(Op::MmapFile {
        vma: file,
        file: work_file,
        offset_pages: g.thread_pages * idx,
        nr_pages: file_pages,
        shared: true,
    });
    ops.push(Op::Touch {
        vma: file,
        first: 0,
        nr: file_pages,
        write: false,
    });
    ops.push(Op::Barrier {
        id: BARRIER_INIT,
        parties: g.threads,
    });
    for i in 0..g.nr_hpages {
        let at = i * HPAGE_PAGES;
        ops.extend([
            Op::TimerStart,
            Op::Touch {
                vma: second,
                first: at,
                nr: 1,
                write: true,
            },
            Op::Mincore {
                vma: second,
                index: at + 64,
            },
            Op::Touch {
                vma: second,
                first: at,
                nr: HPAGE_PAGES,
                write: true,
            },
            Op::RecordLatency {
                if_resident: SERIES_HUGE,
                otherwise: SERIES_BASE,
            },
        ]);
    }
    ops.extend([
        Op::Munmap { vma: file },
        Op::Munmap { vma: first },
        Op::Munmap { vma: second },
        Op::Exit,
    ]);
    ops
}

/// Per-fault latency of one thpscale run, as mmtests reports it (µs).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ThpscaleResult {
    pub threads: u32,
    pub fault_base_us: Option<Summary>,
    pub fault_huge_us: Option<Summary>,
    /// 100 * huge faults / all timed faults.
    pub percent_huge: f64,
}

/// The latency samples of every thread, by series, in µs (gettimeofday's resolution).
pub fn samples_us(latencies: &[&[(u8, u64)]]) -> BTreeMap<u8, Vec<f64>> {
    let mut by_series: BTreeMap<u8, Vec<f64>> = BTreeMap::new();
    for task in latencies {
        for &(series, ns) in task.iter() {
            by_series
                .entry(series)
                .or_default()
                .push((ns / 1000) as f64);
        }
    }
    by_series
}

pub fn report(spec: &ThpscaleSpec, latencies: &[&[(u8, u64)]]) -> WorkloadResult {
    let ThpscaleSpec { threads, .. } = spec;
    let by_series = samples_us(latencies);
    let count = |s: u8| by_series.get(&s).map_or(0, Vec::len);
    let total = count(SERIES_BASE) + count(SERIES_HUGE);
    WorkloadResult {
        kind: "thpscale".into(),
        tasks: *threads,
        thpscale: Some(ThpscaleResult {
            threads: *threads,
            fault_base_us: by_series.get(&SERIES_BASE).and_then(|v| Summary::of(v)),
            fault_huge_us: by_series.get(&SERIES_HUGE).and_then(|v| Summary::of(v)),
            percent_huge: if total == 0 {
                0.0
            } else {
                100.0 * count(SERIES_HUGE) as f64 / total as f64
            },
        }),
        ..WorkloadResult::default()
    }
}

/// mmtests' THPSCALE_MAPSIZE: 80% of the machine's memory (in whole pages).
pub fn default_total_size(memory: Bytes) -> Bytes {
    Bytes(memory.0 / 5 * 4 / PAGE_SIZE * PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_follows_thpscale_arithmetic() {
        // 4 threads over 3.2 GiB: 800 MiB each, 200 timed faults each.
        let g = Geometry::new(4, 3200 << 20);
        assert_eq!(g.thread_pages, (800 << 20) / 4096);
        assert_eq!(g.nr_hpages, 200);
        // 3 threads: 1066.67 MiB each, rounded down to 1066 MiB.
        let g = Geometry::new(3, 3200 << 20);
        assert_eq!(g.thread_pages as u64 * 4096, 1066 << 20);
        assert_eq!(g.nr_hpages, 266);
    }
}
