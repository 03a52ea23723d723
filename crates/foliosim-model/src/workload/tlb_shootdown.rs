//! A TLB shootdown microbenchmark, for `foliosim validate` (scenarios/validate/tlb-*.toml):
//! `threads` threads of one process; thread 0 unmaps or write-protects memory while the others
//! run in user space on the other CPUs, so each of its operations interrupts each of them once
//! (flush_tlb_mm_range -> flush_tlb_multi; /proc/interrupts "TLB shootdowns").
//!
//! Per iteration: all threads meet at a barrier; the others touch the shared region and spin
//! `spin_ns`; thread 0 spins `lead_ns` (so the others are surely back in user space), then
//! `ops_per_iteration` times writes the region and does its operation on it:
//! - `munmap`: map a fresh region, write it, munmap it (one flush);
//! - `mprotect`: write the region, mprotect it read-only, then read-write again (two flushes
//!   on x86, which flushes on any change of the writable bit; one on arm64);
//! - `madv_dontneed`: write the region (refaulting it), MADV_DONTNEED it (one flush);
//! - `madv_pageout` (needs swap): write the region (swapping it in), MADV_PAGEOUT it: reclaim
//!   unmaps each page with a batched flush and flushes before writing each dirty page out
//!   (try_to_unmap_flush_dirty), and the next walk of the mm flushes it once more for the batch
//!   it cannot tell was flushed (flush_tlb_batched_pending): `pages + 1` flushes from the
//!   second operation on.
//!
//! The others store to the region, except under `mprotect` (a store racing the read-only
//! window would fault; they load) and `madv_pageout` (they only spin). A load of a zapped
//! page would map the shared zero page live, and thread 0's store would then break its COW
//! with one more flush; the sim has no zero page.

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::mm::mprotect::Prot;
use crate::scenario::TlbShootdownSpec;

const MARK_START: usize = 0;
const MARK_END: usize = 1;
const VMA_SHARED: u32 = 0;
const VMA_FRESH: u32 = 1;

/// `op`: plain data of the schema (scenario/spec_types.rs).
pub use crate::scenario::ShootdownOp;

pub fn tasks(spec: &TlbShootdownSpec) -> Vec<TaskSpec> {
    let TlbShootdownSpec {
        op,
        threads,
        iterations,
        ops_per_iteration,
        pages,
        spin_ns,
        lead_ns,
        ..
    } = spec;
    let memcg = spec.memcg.clone();
    let (pages, threads) = (*pages, *threads);
    let mmap = |vma| Op::Mmap {
        vma,
        nr_pages: pages,
        thp: ThpAdvice::NoHugepage,
    };
    let touch = |vma, write| Op::Touch {
        vma,
        first: 0,
        nr: pages,
        write,
    };
    (0..threads)
        .map(|t| {
            let mut ops = Vec::new();
            if t == 0 {
                ops.extend([mmap(VMA_SHARED), touch(VMA_SHARED, true)]);
            }
            ops.push(Op::Barrier {
                id: 0,
                parties: threads,
            });
            ops.push(Op::Mark(MARK_START));
            for i in 0..*iterations {
                ops.push(Op::Barrier {
                    id: 1 + i % 2,
                    parties: threads,
                });
                if t > 0 {
                    // Under madv_pageout the others leave the region alone: a swap-in fault
                    // of theirs would park the folio in their CPU's lru_add batch, where
                    // thread 0's MADV_PAGEOUT (lru_add_drain of its own CPU) skips it.
                    if *op != ShootdownOp::MadvPageout {
                        ops.push(touch(VMA_SHARED, *op != ShootdownOp::Mprotect));
                    }
                    ops.push(Op::Compute { ns: *spin_ns });
                    continue;
                }
                ops.push(Op::Compute { ns: *lead_ns });
                for _ in 0..*ops_per_iteration {
                    match op {
                        ShootdownOp::Munmap => ops.extend([
                            mmap(VMA_FRESH),
                            touch(VMA_FRESH, true),
                            Op::Munmap { vma: VMA_FRESH },
                        ]),
                        ShootdownOp::Mprotect => ops.extend([
                            touch(VMA_SHARED, true),
                            Op::Mprotect {
                                vma: VMA_SHARED,
                                prot: Prot::Read,
                            },
                            Op::Mprotect {
                                vma: VMA_SHARED,
                                prot: Prot::ReadWrite,
                            },
                        ]),
                        ShootdownOp::MadvDontneed | ShootdownOp::MadvPageout => ops.extend([
                            touch(VMA_SHARED, true),
                            Op::Madvise {
                                vma: VMA_SHARED,
                                first: 0,
                                nr: pages,
                                advice: if *op == ShootdownOp::MadvPageout {
                                    Advice::Pageout
                                } else {
                                    Advice::Dontneed
                                },
                            },
                        ]),
                    }
                }
            }
            ops.push(Op::Barrier {
                id: 3,
                parties: threads,
            });
            ops.push(Op::Mark(MARK_END));
            ops.push(Op::Exit);
            TaskSpec {
                name: format!("tlb-shootdown-{t}"),
                memcg: memcg.clone(),
                ops,
                shares_mm_with: (t > 0).then_some(0),
            }
        })
        .collect()
}

/// The flushes thread 0's operations make (x86), times the other threads each interrupts:
/// the shootdowns to expect.
pub fn expected_shootdowns(spec: &TlbShootdownSpec) -> u64 {
    let TlbShootdownSpec {
        op,
        threads,
        iterations,
        ops_per_iteration,
        pages,
        ..
    } = spec;
    let nr_ops = (*iterations as u64) * (*ops_per_iteration as u64);
    let flushes = match op {
        ShootdownOp::Munmap | ShootdownOp::MadvDontneed => nr_ops,
        ShootdownOp::Mprotect => 2 * nr_ops,
        // A flush per dirty page, and one per operation after the first for the batch.
        ShootdownOp::MadvPageout => nr_ops * (*pages as u64 + 1) - 1,
    };
    flushes * (threads - 1) as u64
}

pub fn report(spec: &TlbShootdownSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let TlbShootdownSpec { threads, .. } = spec;
    let elapsed = marks
        .iter()
        .filter_map(|m| {
            let s = m.get(MARK_START)?.as_ref()?.at_ns;
            let e = m.get(MARK_END)?.as_ref()?.at_ns;
            Some(e.saturating_sub(s))
        })
        .max()
        .unwrap_or(0);
    WorkloadResult {
        kind: "tlb_shootdown".into(),
        tasks: *threads,
        elapsed_ns_max: elapsed,
        ..WorkloadResult::default()
    }
}
