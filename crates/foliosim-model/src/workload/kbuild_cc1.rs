//! A kbuild job's compiler as gcc 12's cc1 used memory when recorded on this machine
//! (`compiler = "cc1"`; docs/kbuild.md: zstd 1.5.7's lib, 40 files, `make -j2`, recorded with
//! `foliosim record` and with `strace -ff`). Every figure below is from those recordings;
//! docs/kbuild.md gives the commands and the tables.
//!
//! A job of `footprint` pages (what it touches) is four kinds of memory, interleaved as the
//! job grows along the recorded growth curve:
//! - the **brk heap** (malloc's main arena): grown in steps, trimmed now and then
//!   (glibc's systrim); the trim is a partial free of the heap's top;
//! - **GC chunks**: 2 MiB mmaps (gcc's ggc-page allocates pages in 2 MiB quires), filled in
//!   order, never returned before exit (no collection ran in the recording);
//! - **small mmaps** of 4K-64K (ggc's objects larger than a page), touched whole, kept until
//!   exit: too small for a 64K folio, so their pages are order-0 folios;
//! - **malloc chunks** of 128K-4M (above glibc's mmap threshold), 70% touched; two in five
//!   are unmapped right after use (median age 0.3% of the job's life), the others at exit.

use super::Op;
use crate::engine::rng::SimRng;
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;

/// Shares of the footprint, percent: medians over the 40 cc1 processes of strace's brk peak,
/// 2 MiB mmaps, mmaps <= 64K and the other anonymous mmaps (docs/kbuild.md, "Shares").
const BRK_PCT: u64 = 27;
const GGC_PCT: u64 = 60;
const SMALL_PCT: u64 = 3;
const MID_PCT: u64 = 10;

/// gcc's GC quire: every GC chunk mapped was 2 MiB (353 of 353).
const GGC_CHUNK_PAGES: u32 = 512;
/// Pages of a GC chunk touched: 95% in the trace (171681 of 181248 pages).
const GGC_TOUCHED_PAGES: u32 = 486;

/// brk growth steps, pages, at quantiles 0, .25, .5, .75, .9, 1 (strace: 1492 growths,
/// 132K 132K 144K 180K 192K 1048K).
const BRK_STEP_PAGES: [(f64, f64); 6] = [
    (0.0, 33.0),
    (0.25, 33.0),
    (0.5, 36.0),
    (0.75, 45.0),
    (0.9, 48.0),
    (1.0, 262.0),
];
/// One trim per this many growths (strace: 248 shrinks to 1492 growths).
const BRK_GROWS_PER_TRIM: u32 = 6;
/// brk trims, pages, at quantiles (strace: 4K 4K 12K 60K 440K 3120K).
const BRK_TRIM_PAGES: [(f64, f64); 6] = [
    (0.0, 1.0),
    (0.25, 1.0),
    (0.5, 3.0),
    (0.75, 15.0),
    (0.9, 110.0),
    (1.0, 780.0),
];

/// Small mmaps by size in pages, with their counts in the recording (4K 40, 8K 597,
/// 16K 866, 32K 121, 52K 40, 64K 54).
const SMALL_PAGES: [(u32, u32); 6] = [(1, 40), (2, 597), (4, 866), (8, 121), (13, 40), (16, 54)];

/// malloc's mmapped chunks, pages, at quantiles 0, .1, .25, .5, .75, .9, 1 (strace: 337
/// chunks, 128K 128K 132K 256K 484K 704K 4096K).
const MID_PAGES: [(f64, f64); 7] = [
    (0.0, 32.0),
    (0.1, 32.0),
    (0.25, 33.0),
    (0.5, 64.0),
    (0.75, 121.0),
    (0.9, 176.0),
    (1.0, 1024.0),
];
/// Percent of a malloc chunk touched (trace: 70% of the 65-511 page VMAs' pages).
const MID_TOUCHED_PCT: u32 = 70;
/// Of 337 malloc chunks, 134 were unmapped before the process exited.
const MID_FREED_EARLY: (u64, u64) = (134, 337);

/// Share of the footprint touched by the end of each tenth of the job's life (median over the
/// 40 cc1 images of the trace, by time).
const GROWTH_BY_TENTH: [f64; 10] = [0.34, 0.49, 0.6, 0.67, 0.74, 0.8, 0.86, 0.9, 0.95, 1.0];

/// Pages of footprint handed out per round of the interleaving: the recording shows the four
/// kinds interleaved throughout a job; this grain (an estimate) only sets how finely.
const ROUND_PAGES: u64 = 64;

/// A value drawn from a recorded distribution given by its quantiles, interpolated
/// log-linearly between them.
fn from_quantiles(rng: &mut SimRng, q: &[(f64, f64)]) -> u32 {
    let u = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
    let i = q.iter().rposition(|&(p, _)| p <= u).unwrap_or(0);
    let (p0, v0) = q[i];
    let Some(&(p1, v1)) = q.get(i + 1) else {
        return v0 as u32;
    };
    let t = (u - p0) / (p1 - p0);
    (v0.ln() + t * (v1.ln() - v0.ln())).exp().round().max(1.0) as u32
}

/// A size drawn from a histogram of (size, count).
fn from_histogram(rng: &mut SimRng, h: &[(u32, u32)]) -> u32 {
    let total: u64 = h.iter().map(|&(_, n)| n as u64).sum();
    let mut pick = rng.below(total);
    for &(size, n) in h {
        if pick < n as u64 {
            return size;
        }
        pick -= n as u64;
    }
    unreachable!("pick < total")
}

/// Share of the footprint touched by `f` (0..=1) of the job's life.
fn growth(f: f64) -> f64 {
    let x = f * 10.0;
    let i = x.floor() as usize;
    let at = |i: usize| if i == 0 { 0.0 } else { GROWTH_BY_TENTH[i - 1] };
    if i >= 10 {
        return 1.0;
    }
    at(i) + (x - i as f64) * (at(i + 1) - at(i))
}

/// One compiler job's memory as it builds its ops.
struct Cc1 {
    ops: Vec<Op>,
    next_vma: u32,
    /// VMAs still mapped, unmapped when the job ends.
    live: Vec<u32>,
    /// Pages owed to each kind and not yet handed out: brk, GC, small, malloc chunks
    /// (hundredths of a page).
    debt: [u64; 4],
    /// The next brk step, small mmap and malloc chunk, drawn once and handed out when their
    /// debt covers them (a redraw would favour the small sizes).
    next: [Option<u32>; 3],
    heap_vma: u32,
    heap_top: u32,
    heap_pages: u32,
    grows: u32,
    /// The GC chunk being filled and how far.
    ggc: Option<(u32, u32)>,
    /// Pages touched so far in each live VMA (for the re-touches).
    touched: Vec<(u32, u32)>,
}

impl Cc1 {
    fn new(footprint: u64) -> Cc1 {
        // The heap VMA spans the brk peak: the share plus the largest step and trim.
        let heap_pages = (footprint * BRK_PCT / 100) as u32 + 262 + 780;
        let mut c = Cc1 {
            ops: Vec::new(),
            next_vma: 0,
            live: Vec::new(),
            debt: [0; 4],
            next: [None; 3],
            heap_vma: 0,
            heap_top: 0,
            heap_pages,
            grows: 0,
            ggc: None,
            touched: Vec::new(),
        };
        c.heap_vma = c.mmap(heap_pages);
        c
    }

    fn mmap(&mut self, nr_pages: u32) -> u32 {
        let vma = self.next_vma;
        self.next_vma += 1;
        self.ops.push(Op::Mmap {
            vma,
            nr_pages,
            thp: ThpAdvice::Default,
        });
        self.live.push(vma);
        vma
    }

    fn touch(&mut self, vma: u32, first: u32, nr: u32) {
        if nr == 0 {
            return;
        }
        self.ops.push(Op::Touch {
            vma,
            first,
            nr,
            write: true,
        });
        match self.touched.iter_mut().find(|(v, _)| *v == vma) {
            Some((_, end)) => *end = (*end).max(first + nr),
            None => self.touched.push((vma, first + nr)),
        }
    }

    /// Hand out `pages` more footprint, split by the recorded shares.
    fn grow(&mut self, rng: &mut SimRng, pages: u64) {
        for (d, pct) in self
            .debt
            .iter_mut()
            .zip([BRK_PCT, GGC_PCT, SMALL_PCT, MID_PCT])
        {
            *d += pages * pct;
        }
        self.brk(rng);
        self.ggc();
        self.small(rng);
        self.mid(rng);
    }

    /// sbrk: grow the heap's top by a step; every BRK_GROWS_PER_TRIM-th growth is followed by
    /// a trim of its top (glibc systrim -> brk shrink, do_brk_munmap). The model keeps the VMA
    /// and zaps the trimmed pages (MADV_DONTNEED): the PTEs end as none, as after the
    /// kernel's unmap and the next growth's fresh mapping.
    fn brk(&mut self, rng: &mut SimRng) {
        loop {
            let step = *self.next[0].get_or_insert_with(|| from_quantiles(rng, &BRK_STEP_PAGES));
            let step = step.min(self.heap_pages - self.heap_top);
            if step == 0 || self.debt[0] < step as u64 * 100 {
                return;
            }
            self.next[0] = None;
            self.debt[0] -= step as u64 * 100;
            self.touch(self.heap_vma, self.heap_top, step);
            self.heap_top += step;
            self.grows += 1;
            if self.grows.is_multiple_of(BRK_GROWS_PER_TRIM) {
                let trim = from_quantiles(rng, &BRK_TRIM_PAGES).min(self.heap_top - 1);
                if trim > 0 {
                    self.heap_top -= trim;
                    self.debt[0] += trim as u64 * 100;
                    self.ops.push(Op::Madvise {
                        vma: self.heap_vma,
                        first: self.heap_top,
                        nr: trim,
                        advice: Advice::Dontneed,
                    });
                }
            }
        }
    }

    /// ggc's alloc_page: the next pages of the current 2 MiB chunk, a new chunk when full.
    fn ggc(&mut self) {
        while self.debt[1] >= 100 {
            let (vma, used) = match self.ggc {
                Some((vma, used)) if used < GGC_TOUCHED_PAGES => (vma, used),
                _ => (self.mmap(GGC_CHUNK_PAGES), 0),
            };
            let nr = ((self.debt[1] / 100) as u32).min(GGC_TOUCHED_PAGES - used);
            self.debt[1] -= nr as u64 * 100;
            self.touch(vma, used, nr);
            self.ggc = Some((vma, used + nr));
        }
    }

    /// ggc's large objects: an mmap of their own size, written, kept until exit.
    fn small(&mut self, rng: &mut SimRng) {
        loop {
            let pages = *self.next[1].get_or_insert_with(|| from_histogram(rng, &SMALL_PAGES));
            if self.debt[2] < pages as u64 * 100 {
                return;
            }
            self.next[1] = None;
            self.debt[2] -= pages as u64 * 100;
            let vma = self.mmap(pages);
            self.touch(vma, 0, pages);
        }
    }

    /// malloc above the mmap threshold: a chunk mapped, 70% written; freed soon after (unmapped
    /// whole) or kept until exit.
    fn mid(&mut self, rng: &mut SimRng) {
        loop {
            let pages = *self.next[2].get_or_insert_with(|| from_quantiles(rng, &MID_PAGES));
            let used = (pages * MID_TOUCHED_PCT / 100).max(1);
            if self.debt[3] < used as u64 * 100 {
                return;
            }
            self.next[2] = None;
            self.debt[3] -= used as u64 * 100;
            let vma = self.mmap(pages);
            self.touch(vma, 0, used);
            if rng.below(MID_FREED_EARLY.1) < MID_FREED_EARLY.0 {
                self.ops.push(Op::Munmap { vma });
                self.live.retain(|&v| v != vma);
                self.touched.retain(|&(v, _)| v != vma);
            }
        }
    }
}

impl Cc1 {
    /// Re-touch a random `1/RETOUCH_DIV` of the pages touched so far, in windows of live VMAs
    /// picked by their size: the kbuild workload's working-set estimate (one tenth, as the
    /// one-heap compiler), spread over this compiler's memory.
    fn retouch(&mut self, rng: &mut SimRng) {
        let total: u64 = self.touched.iter().map(|&(_, n)| n as u64).sum();
        let mut left = total / RETOUCH_DIV;
        for _ in 0..RETOUCH_WINDOWS_MAX {
            if left == 0 {
                return;
            }
            let mut pick = rng.below(total);
            let &(vma, end) = self
                .touched
                .iter()
                .find(|&&(_, n)| {
                    let hit = pick < n as u64;
                    pick = pick.saturating_sub(n as u64);
                    hit
                })
                .expect("pick < total");
            let nr = (left.min(end as u64)) as u32;
            let first = rng.below((end - nr + 1) as u64) as u32;
            self.ops.push(Op::Touch {
                vma,
                first,
                nr,
                write: true,
            });
            left -= nr as u64;
        }
    }

    /// The job's end (exit): every VMA still mapped goes.
    fn exit(mut self) -> Vec<Op> {
        for vma in std::mem::take(&mut self.live) {
            self.ops.push(Op::Munmap { vma });
        }
        self.ops
    }
}

/// Re-touched share of the touched pages per phase: 1/10, the one-heap compiler's estimate.
const RETOUCH_DIV: u64 = 10;
/// At most this many re-touched windows per phase (bounds the ops; windows are picked by
/// size, so the heap and the GC chunks take most of them).
const RETOUCH_WINDOWS_MAX: u64 = 64;

/// The ops of one compiler job of `footprint_pages`: `phases` phases, each handing out its
/// share of the growth curve, then computing `compute_ns`, then re-touching; VMA numbers from
/// 0, all unmapped at the end (before the caller's object-file write, as cc1 exits before as).
pub fn job(rng: &mut SimRng, footprint_pages: u32, phases: u32, compute_ns: u64) -> Vec<Op> {
    let footprint = footprint_pages as u64;
    let mut c = Cc1::new(footprint);
    let mut handed = 0u64;
    for phase in 1..=phases {
        let until = (footprint as f64 * growth(phase as f64 / phases as f64)).round() as u64;
        while handed < until {
            let pages = ROUND_PAGES.min(until - handed);
            c.grow(rng, pages);
            handed += pages;
        }
        c.ops.push(Op::Compute { ns: compute_ns });
        c.retouch(rng);
    }
    c.exit()
}

/// Upper bounds for the footprint estimate: pages mapped at once by one job of
/// `footprint_pages` (shares over their touched fractions, plus one partly filled GC chunk
/// and the heap's slack) and ops (rounds of up to ~8 ops, phases' compute and re-touches).
pub fn mapped_pages_max(footprint_pages: u64) -> u64 {
    footprint_pages * 2 + GGC_CHUNK_PAGES as u64 + 262 + 780
}

pub fn ops_max(footprint_pages: u64, phases: u64) -> u64 {
    footprint_pages / 4 + phases * (RETOUCH_WINDOWS_MAX + 2) + 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Replays `ops` over VMA bounds: every touch, madvise and munmap is of a mapped VMA and
    /// within it, and nothing is left mapped. Returns pages written per VMA size at mapping
    /// (first touches only, by the VMA's size class) and the counts of trims and early frees.
    fn replay(ops: &[Op]) -> (BTreeMap<&'static str, u64>, u32, u32) {
        let mut mapped: BTreeMap<u32, (u32, Vec<bool>)> = BTreeMap::new();
        let mut written = BTreeMap::new();
        let (mut trims, mut frees) = (0, 0);
        let class = |n: u32| match n {
            ..=16 => "small",
            512 => "ggc",
            _ => "other",
        };
        for (i, op) in ops.iter().enumerate() {
            match *op {
                Op::Mmap { vma, nr_pages, .. } => {
                    assert!(nr_pages > 0);
                    let old = mapped.insert(vma, (nr_pages, vec![false; nr_pages as usize]));
                    assert!(old.is_none(), "vma {vma} mapped twice");
                }
                Op::Touch { vma, first, nr, .. } => {
                    let (size, seen) = mapped.get_mut(&vma).expect("touch of a mapped vma");
                    assert!(
                        nr > 0 && first + nr <= *size,
                        "touch {first}+{nr} of {size}"
                    );
                    let new = seen[first as usize..(first + nr) as usize]
                        .iter_mut()
                        .map(|s| !std::mem::replace(s, true))
                        .filter(|&n| n)
                        .count() as u64;
                    *written.entry(class(*size)).or_insert(0) += new;
                }
                Op::Madvise { vma, first, nr, .. } => {
                    let (size, seen) = mapped.get_mut(&vma).expect("madvise of a mapped vma");
                    assert!(nr > 0 && first + nr <= *size);
                    seen[first as usize..(first + nr) as usize].fill(false);
                    trims += 1;
                }
                Op::Munmap { vma } => {
                    assert!(mapped.remove(&vma).is_some(), "munmap of vma {vma}");
                    let rest = &ops[i + 1..];
                    if !rest.iter().all(|op| matches!(op, Op::Munmap { .. })) {
                        frees += 1;
                    }
                }
                Op::Compute { .. } => {}
                ref op => panic!("unexpected op {op:?}"),
            }
        }
        assert!(mapped.is_empty(), "left mapped: {:?}", mapped.keys());
        (written, trims, frees)
    }

    #[test]
    fn a_large_job_has_the_recorded_shares_and_frees() {
        let mut rng = SimRng::stream(1, "cc1-test");
        let footprint = 40_000; // ~156 MiB, the recording's largest cc1
        let ops = job(&mut rng, footprint, 8, 1000);
        let (written, trims, frees) = replay(&ops);
        let pct = |k: &str| 100 * written.get(k).copied().unwrap_or(0) / footprint as u64;
        // GC chunks hold 60% of the footprint; small mmaps 3%; the heap and malloc's chunks
        // (`other`) the rest, plus what the heap re-grows after trims.
        assert!((57..=61).contains(&pct("ggc")), "{written:?}");
        assert!((2..=4).contains(&pct("small")), "{written:?}");
        assert!((35..=45).contains(&pct("other")), "{written:?}");
        // One trim per six heap growths (~300 growths); two in five malloc chunks freed early.
        assert!((30..=80).contains(&trims), "trims {trims}");
        assert!((5..=50).contains(&frees), "early frees {frees}");
    }

    #[test]
    fn growth_follows_the_recorded_curve() {
        assert_eq!(growth(0.0), 0.0);
        assert!((growth(0.1) - 0.34).abs() < 1e-9);
        assert!((growth(0.15) - 0.415).abs() < 1e-9);
        assert_eq!(growth(1.0), 1.0);
        // The pages written before the first of ten phases' compute: 34% of the footprint.
        let mut rng = SimRng::stream(2, "cc1-test");
        let ops = job(&mut rng, 10_000, 10, 1);
        let first_phase = ops.iter().position(|op| matches!(op, Op::Compute { .. }));
        let (written, ..) = replay_prefix(&ops[..first_phase.unwrap()]);
        assert!((3200..=3500).contains(&written), "{written}");
    }

    fn replay_prefix(ops: &[Op]) -> (u64, ()) {
        let mut seen = BTreeMap::new();
        for op in ops {
            if let Op::Touch { vma, first, nr, .. } = *op {
                for p in first..first + nr {
                    seen.insert((vma, p), ());
                }
            }
            if let Op::Madvise { vma, first, nr, .. } = *op {
                for p in first..first + nr {
                    seen.remove(&(vma, p));
                }
            }
        }
        (seen.len() as u64, ())
    }

    #[test]
    fn tiny_jobs_are_well_formed() {
        let mut rng = SimRng::stream(3, "cc1-test");
        for footprint in [1, 2, 15, 16, 100, 700] {
            for phases in [1, 3] {
                replay(&job(&mut rng, footprint, phases, 0));
            }
        }
    }

    #[test]
    fn recorded_distributions_stay_in_their_range() {
        let mut rng = SimRng::stream(4, "cc1-test");
        let mut draws: Vec<u32> = (0..10_000)
            .map(|_| from_quantiles(&mut rng, &MID_PAGES))
            .collect();
        draws.sort();
        assert!(draws[0] >= 32 && draws[9_999] <= 1024);
        assert!((60..=68).contains(&draws[5_000]), "median {}", draws[5_000]);
        let small: Vec<u32> = (0..1000)
            .map(|_| from_histogram(&mut rng, &SMALL_PAGES))
            .collect();
        assert!(small
            .iter()
            .all(|p| SMALL_PAGES.iter().any(|&(s, _)| s == *p)));
        // 16K is the commonest: 866 of 1718.
        let fours = small.iter().filter(|&&p| p == 4).count();
        assert!((450..=560).contains(&fours), "{fours}");
    }
}
