//! Workloads: generators of memory operations per task. One definition serves every backend.

pub mod usemem;

use crate::mm::madvise::Advice;
use crate::scenario::WorkloadSpec;
use serde::Serialize;

/// One operation of a task's program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// mmap an anonymous private region as VMA `vma` (optionally MADV_HUGEPAGE).
    Mmap {
        vma: u32,
        nr_pages: u32,
        hugepage: bool,
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
    /// Record the time under a workload-defined mark (e.g. the start of a measured phase).
    Mark(usize),
    /// exit(): unmap everything.
    Exit,
}

pub struct TaskSpec {
    pub name: String,
    pub memcg: Option<String>,
    pub ops: Vec<Op>,
}

/// What a workload reports, in its own terms (usemem: bytes per second).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct WorkloadResult {
    pub kind: String,
    /// Sum over tasks of bytes written / measured time, as vm-scalability sums usemem's lines.
    pub throughput_bytes_per_s: f64,
    /// The longest measured phase of any task.
    pub elapsed_ns_max: u64,
    pub tasks: u32,
}

/// Marks recorded by one task: index = mark id.
pub type TaskMarks = Vec<Option<u64>>;

pub fn tasks(spec: &WorkloadSpec) -> Vec<TaskSpec> {
    match spec {
        WorkloadSpec::Usemem { .. } => usemem::tasks(spec),
    }
}

pub fn report(spec: &WorkloadSpec, marks: &[TaskMarks]) -> WorkloadResult {
    match spec {
        WorkloadSpec::Usemem { .. } => usemem::report(spec, marks),
    }
}
