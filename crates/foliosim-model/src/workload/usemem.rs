//! vm-scalability `usemem --init-time -w -O -n N SIZE`: N processes each mmap SIZE of anonymous
//! memory and store to every word of it once. The measured phase is the store loop (the mmap
//! is init time, excluded); throughput is the sum of each process's SIZE / its loop time.

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::WorkloadSpec;

const MARK_START: usize = 0;
const MARK_END: usize = 1;

pub fn tasks(spec: &WorkloadSpec) -> Vec<TaskSpec> {
    let WorkloadSpec::Usemem {
        nproc,
        size,
        memcg,
        madv_hugepage,
        pageout_after_write,
        ..
    } = spec
    else {
        unreachable!("usemem::tasks of another workload")
    };
    let nr_pages = size.pages() as u32;
    (0..*nproc)
        .map(|i| {
            let mut ops = vec![
                Op::Mmap {
                    vma: 0,
                    nr_pages,
                    thp: if *madv_hugepage {
                        ThpAdvice::Hugepage
                    } else {
                        ThpAdvice::Default
                    },
                },
                Op::Mark(MARK_START),
                Op::Touch {
                    vma: 0,
                    first: 0,
                    nr: nr_pages,
                    write: true,
                },
                Op::Mark(MARK_END),
            ];
            if *pageout_after_write {
                ops.push(Op::Madvise {
                    vma: 0,
                    first: 0,
                    nr: nr_pages,
                    advice: Advice::Pageout,
                });
            }
            ops.push(Op::Exit);
            TaskSpec {
                name: format!("usemem-{i}"),
                memcg: memcg.clone(),
                ops,
                shares_mm_with: None,
            }
        })
        .collect()
}

pub fn report(spec: &WorkloadSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let WorkloadSpec::Usemem { size, .. } = spec else {
        unreachable!("usemem::report of another workload")
    };
    let mut throughput = 0.0;
    let mut elapsed_max = 0;
    for m in marks {
        let (Some(start), Some(end)) = (&m[MARK_START], &m[MARK_END]) else {
            continue;
        };
        let elapsed = (end.at_ns - start.at_ns).max(1);
        throughput += size.0 as f64 * 1e9 / elapsed as f64;
        elapsed_max = elapsed_max.max(elapsed);
    }
    WorkloadResult {
        kind: "usemem".into(),
        throughput_bytes_per_s: throughput,
        elapsed_ns_max: elapsed_max,
        tasks: marks.len() as u32,
        ..WorkloadResult::default()
    }
}
