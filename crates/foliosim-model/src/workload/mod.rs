//! Workloads: generators of memory operations per task. One definition serves every backend.

pub mod aging;
pub mod file_read;
pub mod kbuild;
pub mod kbuild_cc1;
pub mod thp_swap_allocator_test;
pub mod thpscale;
pub mod tlb_shootdown;
pub mod trace;
pub mod usemem;
pub mod xsbench;

// Workloads a scenario names as `kind = "registered"`, `name = "..."`: one file each, one
// word here (docs/extending.md). The built-in kinds above are WorkloadSpec variants.
crate::registry::registry!(WORKLOADS: WorkloadEntry =
    #[cfg(test)]
    strided_write, // docs/extending.md's worked example: test builds only
);

use crate::engine::cost::CostModel;
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::{FileSpec, Machine, Scenario, WorkloadSpec};
use serde::Serialize;
use std::collections::BTreeMap;

/// One operation of a task's program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// mmap an anonymous private region as VMA `vma`, with MADV_(NO)HUGEPAGE applied.
    Mmap {
        vma: u32,
        nr_pages: u32,
        thp: ThpAdvice,
    },
    /// Access pages [first, first + nr) in order, storing if `write`.
    Touch {
        vma: u32,
        first: u32,
        nr: u32,
        write: bool,
    },
    Madvise {
        vma: u32,
        first: u32,
        nr: u32,
        advice: Advice,
    },
    Munmap {
        vma: u32,
    },
    /// munmap of pages [first, first + nr) of `vma`: the VMA keeps its other pages (the model
    /// leaves holes in place of the split VMAs, mm/mmap.rs).
    MunmapRange {
        vma: u32,
        first: u32,
        nr: u32,
    },
    /// Run in user space for this long (CPU time, no memory traffic modelled).
    Compute {
        ns: u64,
    },
    /// sleep(): off the CPU for this long (nanosleep; neither user nor system time).
    Sleep {
        ns: u64,
    },
    /// Record the time and every counter under a workload-defined mark (e.g. the start of a
    /// measured phase, or the end of an iteration).
    Mark(usize),
    /// exit(): the task ends; the last task of its mm unmaps everything.
    Exit,
    // Timed sections and synchronisation (thpscale's fault timing, pthread barriers).
    /// pthread_barrier_wait: sleep until `parties` tasks have reached barrier `id`.
    Barrier {
        id: u32,
        parties: u32,
    },
    /// gettimeofday() at the start of a timed section.
    TimerStart,
    /// mincore() of one page: remember whether it is resident, for the next RecordLatency.
    Mincore {
        vma: u32,
        index: u32,
    },
    /// End the timed section: its latency becomes a sample of series `if_resident` when the
    /// last Mincore found its page resident, else of `otherwise` (thpscale's huge and base).
    RecordLatency {
        if_resident: u8,
        otherwise: u8,
    },
    // Pins and compaction (mm/gup.rs, mm/compaction/).
    /// pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM) of pages [first, first + nr), faulting
    /// in those not present, as io_uring's fixed buffers or a DMA driver pin user memory. The
    /// pins last until Unpin, or until the pages are unmapped.
    Pin {
        vma: u32,
        first: u32,
        nr: u32,
    },
    /// unpin_user_pages of pages [first, first + nr).
    Unpin {
        vma: u32,
        first: u32,
        nr: u32,
    },
    /// `echo 1 > /proc/sys/vm/compact_memory`: compact the whole zone, synchronously.
    CompactMemory,
    // Files (mm/filemap/); a file id is its `[[file]]` index, or what CreateFile made.
    /// Create file `file` of `nr_pages` on the disk: written, not cached (a file written,
    /// then dropped from the cache).
    CreateFile {
        file: u32,
        nr_pages: u32,
    },
    /// mmap pages [offset_pages, offset_pages + nr_pages) of `file` as VMA `vma`, MAP_SHARED
    /// (stores dirty the page cache) or MAP_PRIVATE (stores copy the page). Touch reads or
    /// writes it.
    MmapFile {
        vma: u32,
        file: u32,
        offset_pages: u32,
        nr_pages: u32,
        shared: bool,
    },
    /// read(2) of pages [first, first + nr) of `file` into a buffer (nothing mapped).
    ReadFile {
        file: u32,
        first: u32,
        nr: u32,
    },
    /// `echo 1 > /proc/sys/vm/drop_caches`: drop clean, unmapped page cache.
    DropCaches,
    // tmpfs (mm/shmem.rs); a tmpfs file id is the workload's own number, shared by all tasks.
    /// write(2) of pages [first, first + nr) of tmpfs file `file` on `[[tmpfs]]` number
    /// `mount`, creating the file at its first write and extending it.
    ShmemWrite {
        mount: u32,
        file: u32,
        first: u32,
        nr: u32,
    },
    /// read(2) of pages [first, first + nr) of tmpfs file `file`.
    ShmemRead {
        file: u32,
        first: u32,
        nr: u32,
    },
    /// unlink(2) of tmpfs file `file` (its last name: the inode is evicted).
    ShmemUnlink {
        file: u32,
    },
    // User accesses through the TLB model (mm/access.rs, hw/tlb_cache.rs).
    /// `count` loads (stores if `write`) at uniformly random pages of [first, first + nr) of
    /// `vma`, `mlp` of them in flight at once (1: each waits for the one before, as a binary
    /// search). Costs user time from the TLB and cache model; pages not present fault in.
    Access {
        vma: u32,
        first: u32,
        nr: u32,
        count: u64,
        write: bool,
        mlp: u32,
    },
    /// From here on the task's code, stack and hot data span these many pages: its TLB hot
    /// set, refilled after every flush of its CPU's TLB (hw/tlb_cache.rs).
    TlbHotSet {
        code_pages: u32,
        load_pages: u32,
        store_pages: u32,
    },
    /// mprotect(2) of all of `vma`.
    Mprotect {
        vma: u32,
        prot: crate::mm::mprotect::Prot,
    },
}

pub struct TaskSpec {
    pub name: String,
    pub memcg: Option<String>,
    pub ops: Vec<Op>,
    /// A thread of the process of task `i` of the same workload (an earlier one): the two
    /// share one mm (CLONE_VM), scheduled as separate tasks. None: a process of its own.
    pub shares_mm_with: Option<usize>,
}

/// What a task saw at one of its marks.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at_ns: u64,
    /// Every counter, kernel names (system-wide, as a live run reads them).
    pub counters: BTreeMap<String, u64>,
}

/// Marks recorded by one task: index = mark id.
pub type TaskMarks = Vec<Option<Mark>>;

/// An empty mark table for a task running `ops`: one slot per mark index they record.
pub fn empty_marks(ops: &[Op]) -> TaskMarks {
    let nr_marks = ops
        .iter()
        .filter_map(|op| match op {
            Op::Mark(m) => Some(m + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    vec![None; nr_marks]
}

/// One row of a per-iteration (or per-interval) series of swap-out outcomes for one size.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FallbackPoint {
    pub iteration: u32,
    pub at_ns: u64,
    pub swpout: u64,
    pub swpout_fallback: u64,
    /// 100 * swpout_fallback / (swpout + swpout_fallback); 0 when both are 0.
    pub fallback_percent: f64,
}

impl FallbackPoint {
    pub fn new(iteration: u32, at_ns: u64, swpout: u64, swpout_fallback: u64) -> FallbackPoint {
        let total = swpout + swpout_fallback;
        FallbackPoint {
            iteration,
            at_ns,
            swpout,
            swpout_fallback,
            fallback_percent: if total == 0 {
                0.0
            } else {
                100.0 * swpout_fallback as f64 / total as f64
            },
        }
    }
}

/// Large-folio swpout and swpout_fallback at a mark, summed over every size.
pub fn mthp_swpout_counts(counters: &BTreeMap<String, u64>) -> (u64, u64) {
    let sum = |stat: &str| {
        counters
            .iter()
            .filter(|(name, _)| name.starts_with("hugepages-") && name.ends_with(stat))
            .map(|(_, v)| v)
            .sum::<u64>()
    };
    (sum("/stats/swpout"), sum("/stats/swpout_fallback"))
}

/// What a workload reports, in its own terms (usemem: bytes per second).
#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct WorkloadResult {
    pub kind: String,
    /// Sum over tasks of bytes written / measured time, as vm-scalability sums usemem's lines.
    pub throughput_bytes_per_s: f64,
    /// The longest measured phase of any task.
    pub elapsed_ns_max: u64,
    pub tasks: u32,
    /// thp_swap_allocator_test: swpout / swpout_fallback of the test's size per iteration.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallback_series: Vec<FallbackPoint>,
    /// thpscale: fault latency summaries and % huge.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thpscale: Option<thpscale::ThpscaleResult>,
    /// XSBench: lookups, runtime, lookups/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xsbench: Option<xsbench::XsbenchResult>,
    /// usemem: its own output lines. Left out of the JSON, which keeps the shape it had
    /// (the table report prints them; sweep and fit read them as metrics).
    #[serde(skip)]
    pub usemem: Option<usemem::UsememResult>,
}

/// What one task left for its workload's report.
#[derive(Clone, Copy)]
pub struct TaskOutput<'a> {
    pub workload: usize,
    pub marks: &'a TaskMarks,
    /// (series, ns) samples of its timed sections (Op::RecordLatency).
    pub latencies: &'a [(u8, u64)],
}

/// A registered workload's task builder (WorkloadEntry::tasks).
pub type TasksFn =
    fn(params: &toml::Table, memcg: Option<&str>, seed: u64) -> Result<Vec<TaskSpec>, String>;

/// What the registry knows of one registered workload.
pub struct WorkloadEntry {
    /// `name`'s spelling in a `kind = "registered"` workload.
    pub name: &'static str,
    pub doc: &'static str,
    /// Its tasks from its `params` (an error names the param and what it allows), in `memcg`,
    /// with `seed` for any random choice.
    pub tasks: TasksFn,
    /// Its result from each task's marks (`throughput_report` for a mark 0 .. mark 1 phase).
    pub report: fn(params: &toml::Table, marks: &[TaskMarks]) -> WorkloadResult,
}

impl crate::registry::Entry for WorkloadEntry {
    const WHAT: &'static str = "workload";
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn all() -> &'static [&'static Self] {
        WORKLOADS
    }
}

/// A registered workload, chosen by name.
pub type WorkloadKind = crate::registry::Choice<WorkloadEntry>;

/// The result of a workload whose tasks each move `bytes_per_task` between marks 0 and 1:
/// throughput summed over tasks, as usemem's is.
pub fn throughput_report(kind: &str, bytes_per_task: u64, marks: &[TaskMarks]) -> WorkloadResult {
    let mut throughput = 0.0;
    let mut elapsed_max = 0;
    for m in marks {
        if let (Some(Some(start)), Some(Some(end))) = (m.first(), m.get(1)) {
            let elapsed = (end.at_ns - start.at_ns).max(1);
            throughput += bytes_per_task as f64 * 1e9 / elapsed as f64;
            elapsed_max = elapsed_max.max(elapsed);
        }
    }
    WorkloadResult {
        kind: kind.into(),
        throughput_bytes_per_s: throughput,
        elapsed_ns_max: elapsed_max,
        tasks: marks.len() as u32,
        ..WorkloadResult::default()
    }
}

/// The tasks of a workload; `seed` drives any random choices it makes (its own stream).
/// A workload reading a `[[file]]` has none here (it needs the scenario's files: `tasks_for`).
pub fn tasks(spec: &WorkloadSpec, seed: u64) -> Vec<TaskSpec> {
    let cost = CostModel::profile(Machine::default().cost_profile.as_str()).expect("a profile");
    tasks_with(spec, seed, &[], &[], &cost)
}

/// The tasks of workload `spec` of `scenario` (its seed, `[[file]]`s and costs).
pub fn tasks_for(spec: &WorkloadSpec, scenario: &Scenario) -> Vec<TaskSpec> {
    let cost = CostModel::of_scenario(scenario);
    tasks_with(spec, scenario.seed, &scenario.files, &scenario.tmpfs, &cost)
}

fn tasks_with(
    spec: &WorkloadSpec,
    seed: u64,
    files: &[FileSpec],
    tmpfs: &[crate::scenario::tmpfs::TmpfsSpec],
    cost: &CostModel,
) -> Vec<TaskSpec> {
    match spec {
        WorkloadSpec::FileRead(w) => file_read::tasks(w, files),
        WorkloadSpec::Usemem(w) => usemem::tasks(w),
        WorkloadSpec::ThpSwapAllocatorTest(w) => thp_swap_allocator_test::tasks(w, seed),
        WorkloadSpec::Kbuild(w) => kbuild::tasks(w, seed, tmpfs),
        WorkloadSpec::Thpscale(w) => thpscale::tasks(w, files),
        WorkloadSpec::Trace(w) => trace::tasks(w),
        WorkloadSpec::Xsbench(w) => xsbench::tasks(w, cost),
        WorkloadSpec::TlbShootdown(w) => tlb_shootdown::tasks(w),
        WorkloadSpec::Registered(w) => (w.name.entry().tasks)(&w.params, w.memcg.as_deref(), seed)
            .expect("scenario validation built these tasks once"),
    }
}

/// Give workload `w`'s barrier ids a namespace of their own (its index above
/// `trace::MAX_BARRIERS`), so two workloads never meet at one barrier. Every backend calls it
/// on each workload's tasks.
pub fn namespace_barriers(w: usize, tasks: &mut [TaskSpec]) {
    for t in tasks {
        for op in &mut t.ops {
            if let Op::Barrier { id, .. } = op {
                *id = *id % trace::MAX_BARRIERS + (w as u32 % 256) * trace::MAX_BARRIERS;
            }
        }
    }
}

/// Every op of every task of the scenario's workloads.
pub fn all_ops(scenario: &Scenario) -> impl Iterator<Item = Op> + '_ {
    scenario
        .workloads
        .iter()
        .flat_map(|w| tasks_for(w, scenario))
        .flat_map(|t| t.ops)
}

pub fn report(spec: &WorkloadSpec, outputs: &[TaskOutput], files: &[FileSpec]) -> WorkloadResult {
    let marks: Vec<TaskMarks> = outputs.iter().map(|o| o.marks.clone()).collect();
    let marks = &marks[..];
    match spec {
        WorkloadSpec::Thpscale(w) => {
            let latencies: Vec<&[(u8, u64)]> = outputs.iter().map(|o| o.latencies).collect();
            thpscale::report(w, &latencies)
        }
        WorkloadSpec::Usemem(w) => usemem::report(w, marks),
        WorkloadSpec::ThpSwapAllocatorTest(w) => thp_swap_allocator_test::report(w, marks),
        WorkloadSpec::Kbuild(w) => kbuild::report(w, marks),
        WorkloadSpec::FileRead(w) => file_read::report(w, marks, files),
        WorkloadSpec::Trace(w) => trace::report(w, marks),
        WorkloadSpec::Xsbench(w) => xsbench::report(w, marks),
        WorkloadSpec::TlbShootdown(w) => tlb_shootdown::report(w, marks),
        WorkloadSpec::Registered(w) => (w.name.entry().report)(&w.params, marks),
    }
}

/// Every workload's result from what its tasks left. `files` are the scenario's `[[file]]`s.
pub fn report_all<'a>(
    specs: &[WorkloadSpec],
    files: &[FileSpec],
    tasks: impl Iterator<Item = TaskOutput<'a>> + Clone,
) -> Vec<WorkloadResult> {
    specs
        .iter()
        .enumerate()
        .map(|(w, spec)| {
            let outputs: Vec<TaskOutput> = tasks.clone().filter(|o| o.workload == w).collect();
            report(spec, &outputs, files)
        })
        .collect()
}
