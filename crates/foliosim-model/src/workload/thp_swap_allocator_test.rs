//! tools/mm/thp_swap_allocator_test.c (spec-swap.md §14): how often 64 KiB mTHP swap-out falls
//! back to splitting as the swap device fragments. mem1 (60 MiB, MADV_HUGEPAGE) is written and
//! paged out; then each iteration swaps in random pages (or, with -a, random aligned 64 KiB
//! chunks), zaps and refaults 256 random 64 KiB regions, and pages mem1 out again. With -s a
//! 4 MiB area of small folios (MADV_NOHUGEPAGE) is paged out alongside.
//!
//! The tool draws offsets from glibc's unseeded rand(); we draw from the scenario seed's own
//! stream (the results are statistical, spec-swap.md §14).

use super::{mthp_swpout_counts, FallbackPoint, Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::engine::rng::SimRng;
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::{ThpSwapAllocatorTestSpec, PAGE_SIZE};

const MEM1: u32 = 0;
const MEM2: u32 = 1;
const MEMSIZE_MTHP_PAGES: u32 = (60 << 20) / PAGE_SIZE as u32;
const MEMSIZE_SMALLFOLIO_PAGES: u32 = (4 << 20) / PAGE_SIZE as u32;
const MTHP_PAGES: u32 = (64 << 10) / PAGE_SIZE as u32;
const TOTAL_DONTNEED_MTHP_PAGES: u32 = (16 << 20) / PAGE_SIZE as u32;
const TOTAL_SWAPIN_SMALLFOLIO_PAGES: u32 = (1 << 20) / PAGE_SIZE as u32;

fn write(vma: u32, first: u32, nr: u32) -> Op {
    Op::Touch {
        vma,
        first,
        nr,
        write: true,
    }
}

fn madvise(vma: u32, first: u32, nr: u32, advice: Advice) -> Op {
    Op::Madvise {
        vma,
        first,
        nr,
        advice,
    }
}

/// random_swapin: total/align stores of `align` pages at random aligned offsets.
fn random_swapin(ops: &mut Vec<Op>, rng: &mut SimRng, vma: u32, size: u32, align: u32, total: u32) {
    for _ in 0..total / align {
        let offset = rng.below((size / align) as u64) as u32 * align;
        ops.push(write(vma, offset, align));
    }
}

pub fn tasks(spec: &ThpSwapAllocatorTestSpec, seed: u64) -> Vec<TaskSpec> {
    let ThpSwapAllocatorTestSpec {
        aligned_swapin,
        small_folios,
        iterations,
        memcg,
        ..
    } = spec;
    let mut rng = SimRng::stream(seed, "thp_swap_allocator_test");
    let mut ops = vec![Op::Mmap {
        vma: MEM1,
        nr_pages: MEMSIZE_MTHP_PAGES,
        thp: ThpAdvice::Hugepage,
    }];
    if *small_folios {
        ops.push(Op::Mmap {
            vma: MEM2,
            nr_pages: MEMSIZE_SMALLFOLIO_PAGES,
            thp: ThpAdvice::NoHugepage,
        });
    }
    ops.push(write(MEM1, 0, MEMSIZE_MTHP_PAGES));
    ops.push(madvise(MEM1, 0, MEMSIZE_MTHP_PAGES, Advice::Pageout));
    if *small_folios {
        ops.push(write(MEM2, 0, MEMSIZE_SMALLFOLIO_PAGES));
        ops.push(madvise(MEM2, 0, MEMSIZE_SMALLFOLIO_PAGES, Advice::Pageout));
    }
    ops.push(Op::Mark(0));
    let swapin_align = if *aligned_swapin { MTHP_PAGES } else { 1 };
    for i in 0..*iterations {
        random_swapin(
            &mut ops,
            &mut rng,
            MEM1,
            MEMSIZE_MTHP_PAGES,
            swapin_align,
            TOTAL_DONTNEED_MTHP_PAGES,
        );
        // random_madvise_dontneed: zap a random 64 KiB region, then refault it with a store.
        for _ in 0..TOTAL_DONTNEED_MTHP_PAGES / MTHP_PAGES {
            let offset = rng.below((MEMSIZE_MTHP_PAGES / MTHP_PAGES) as u64) as u32 * MTHP_PAGES;
            ops.push(madvise(MEM1, offset, MTHP_PAGES, Advice::Dontneed));
            ops.push(write(MEM1, offset, MTHP_PAGES));
        }
        if *small_folios {
            random_swapin(
                &mut ops,
                &mut rng,
                MEM2,
                MEMSIZE_SMALLFOLIO_PAGES,
                1,
                TOTAL_SWAPIN_SMALLFOLIO_PAGES,
            );
        }
        ops.push(madvise(MEM1, 0, MEMSIZE_MTHP_PAGES, Advice::Pageout));
        if *small_folios {
            ops.push(madvise(MEM2, 0, MEMSIZE_SMALLFOLIO_PAGES, Advice::Pageout));
        }
        ops.push(Op::Mark(i as usize + 1));
    }
    ops.push(Op::Exit);
    vec![TaskSpec {
        name: "thp_swap_allocator_test".into(),
        memcg: memcg.clone(),
        ops,
        shares_mm_with: None,
    }]
}

pub fn report(_spec: &ThpSwapAllocatorTestSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let marks: Vec<_> = marks[0].iter().map_while(|m| m.as_ref()).collect();
    let fallback_series = marks
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let (out0, fb0) = mthp_swpout_counts(&w[0].counters);
            let (out1, fb1) = mthp_swpout_counts(&w[1].counters);
            FallbackPoint::new(i as u32 + 1, w[1].at_ns, out1 - out0, fb1 - fb0)
        })
        .collect();
    WorkloadResult {
        kind: "thp_swap_allocator_test".into(),
        elapsed_ns_max: marks.last().map_or(0, |m| m.at_ns),
        tasks: 1,
        fallback_series,
        ..WorkloadResult::default()
    }
}
