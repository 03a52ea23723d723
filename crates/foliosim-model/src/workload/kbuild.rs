//! A kernel-build-like mix (`make -jN` in a memcg, seed 003): many short-lived compiler
//! processes of mixed heap sizes, `jobs_concurrent` at a time. Each job maps its heap, writes
//! it, then computes in phases, re-touching a random tenth of the heap in each phase (what
//! reclaim took meanwhile swaps back in), and exits. One task per make job slot runs its
//! share of the jobs back to back; each job's end is a mark, so the report has the swap-out
//! fallback rate over time.

use super::{
    kbuild_cc1, mthp_swpout_counts, FallbackPoint, Op, TaskMarks, TaskSpec, WorkloadResult,
};
use crate::engine::rng::SimRng;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::tmpfs::TmpfsSpec;
use crate::scenario::{format_size, Bytes, KbuildCompiler, KbuildSpec, ScenarioError, PAGE_SIZE};

/// Intervals of the fallback-over-time series.
const SERIES_POINTS: u64 = 10;

/// Default object file sizes of a build on tmpfs. Estimate: the .o files of an x86-64
/// defconfig build are mostly tens of KiB to about a MiB (a few, like built-in.a, far more).
pub const OBJECT_SIZE_MIN_BYTES: u64 = crate::scenario::KBUILD_OBJECT_SIZE_MIN_BYTES;
pub const OBJECT_SIZE_MAX_BYTES: u64 = crate::scenario::KBUILD_OBJECT_SIZE_MAX_BYTES;

/// `object_size_min ..= object_size_max`, each 4K ..= 1G.
pub fn validate_objects(field: &str, min: Bytes, max: Bytes) -> Result<(), ScenarioError> {
    let ok = min.0 >= PAGE_SIZE && min <= max && max.0 <= 1 << 30;
    if ok {
        return Ok(());
    }
    Err(ScenarioError::Invalid {
        field: field.into(),
        value: format!("{} ..= {}", format_size(min.0), format_size(max.0)),
        allowed: "object_size_min ..= object_size_max within 4K ..= 1G".into(),
    })
}

/// A log-uniform draw in [lo, hi] pages: many small, a few large.
fn log_uniform(rng: &mut SimRng, lo: u64, hi: u64) -> u32 {
    let (lo, hi) = ((lo as f64).ln(), (hi as f64).ln());
    let u = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
    ((lo + u * (hi - lo)).exp() as u32).max(1)
}

pub fn tasks(spec: &KbuildSpec, seed: u64, tmpfs: &[TmpfsSpec]) -> Vec<TaskSpec> {
    let KbuildSpec {
        jobs,
        jobs_concurrent,
        rss_min,
        rss_max,
        user_ns_per_page,
        phases,
        memcg,
        tmpfs: tmpfs_name,
        object_size_min,
        object_size_max,
        compiler,
        ..
    } = spec;
    // The build tree's mount; absent from `tmpfs` (a backend without it): no files.
    let mount = tmpfs_name
        .as_ref()
        .and_then(|n| tmpfs.iter().position(|m| &m.name == n));
    let mut objects = Vec::new();
    let mut obj_rng = SimRng::stream(seed, "kbuild/objects");
    let mut rng = SimRng::stream(seed, "kbuild");
    let slots = (*jobs_concurrent).min(*jobs);
    let mut programs: Vec<Vec<Op>> = vec![Vec::new(); slots as usize];
    let (lo, hi) = ((rss_min.pages() as f64).ln(), (rss_max.pages() as f64).ln());
    for job in 0..*jobs {
        // Log-uniform heap size: many small compilations, a few huge ones.
        let u = rng.below(1 << 30) as f64 / (1u64 << 30) as f64;
        let pages = ((lo + u * (hi - lo)).exp() as u32).max(1);
        let ops = &mut programs[(job % slots) as usize];
        let compute_ns = user_ns_per_page * pages as u64 / *phases as u64;
        match compiler {
            KbuildCompiler::OneHeap => one_heap(ops, &mut rng, pages, *phases, compute_ns),
            KbuildCompiler::Cc1 => {
                ops.extend(kbuild_cc1::job(&mut rng, pages, *phases, compute_ns))
            }
        }
        if let Some(mount) = mount {
            // The compiler writes its object file into the build tree before it exits.
            let (lo, hi) = (object_size_min.pages(), object_size_max.pages());
            let nr = log_uniform(&mut obj_rng, lo, hi);
            ops.push(Op::ShmemWrite {
                mount: mount as u32,
                file: job,
                first: 0,
                nr,
            });
            objects.push((job, nr));
        }
        if *compiler == KbuildCompiler::OneHeap {
            ops.push(Op::Munmap { vma: 0 });
        }
        ops.push(Op::Mark((job / slots) as usize));
    }
    if !objects.is_empty() {
        link(&mut programs, &objects, jobs.div_ceil(slots) as usize);
    }
    programs
        .into_iter()
        .enumerate()
        .map(|(i, mut ops)| {
            ops.push(Op::Exit);
            TaskSpec {
                name: format!("make-slot-{i}"),
                memcg: memcg.clone(),
                ops,
                shares_mm_with: None,
            }
        })
        .collect()
}

/// The one-heap compiler: map the heap, write it, then in each phase compute and re-touch a
/// random tenth of it (the heap is unmapped after the object file is written).
fn one_heap(ops: &mut Vec<Op>, rng: &mut SimRng, pages: u32, phases: u32, compute_ns: u64) {
    ops.push(Op::Mmap {
        vma: 0,
        nr_pages: pages,
        thp: ThpAdvice::Default,
    });
    ops.push(Op::Touch {
        vma: 0,
        first: 0,
        nr: pages,
        write: true,
    });
    let working_set = (pages / 10).max(1);
    for _ in 0..phases {
        ops.push(Op::Compute { ns: compute_ns });
        let first = rng.below((pages - working_set + 1) as u64) as u32;
        ops.push(Op::Touch {
            vma: 0,
            first,
            nr: working_set,
            write: true,
        });
    }
}

/// Every slot waits for the others; then the first reads every object file (the link) and
/// marks the build's end with mark `end_mark`.
fn link(programs: &mut [Vec<Op>], objects: &[(u32, u32)], end_mark: usize) {
    let parties = programs.len() as u32;
    for ops in programs.iter_mut() {
        ops.push(Op::Barrier { id: 0, parties });
    }
    let first = &mut programs[0];
    first.extend(
        objects
            .iter()
            .map(|&(file, nr)| Op::ShmemRead { file, first: 0, nr }),
    );
    first.push(Op::Mark(end_mark));
}

pub fn report(_spec: &KbuildSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let mut ends: Vec<_> = marks.iter().flatten().flatten().collect();
    ends.sort_by_key(|m| m.at_ns);
    let elapsed_ns = ends.last().map_or(0, |m| m.at_ns);
    // The counters at the last job end inside each tenth of the build.
    let mut fallback_series = Vec::new();
    let mut prev = (0, 0);
    for point in 1..=SERIES_POINTS {
        let until = elapsed_ns * point / SERIES_POINTS;
        let Some(m) = ends.iter().rev().find(|m| m.at_ns <= until) else {
            continue;
        };
        let (out, fb) = mthp_swpout_counts(&m.counters);
        fallback_series.push(FallbackPoint::new(
            point as u32,
            until,
            out - prev.0,
            fb - prev.1,
        ));
        prev = (out, fb);
    }
    WorkloadResult {
        kind: "kbuild".into(),
        elapsed_ns_max: elapsed_ns,
        tasks: marks.len() as u32,
        fallback_series,
        ..WorkloadResult::default()
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    /// A small cc1 build on tmpfs in a tight memcg, 64K mTHP, invariants checked throughout.
    const CC1_BUILD: &str = r#"
seed = 3
check_invariants = true
[machine]
cpus = 2
memory = "256M"
[[machine.swap]]
kind = "ssd"
size = "64M"
[sysfs.hugepages]
"64K" = "always"
[[memcg]]
name = "build"
max = "6M"
[[tmpfs]]
name = "build"
size = "64M"
[[workload]]
kind = "kbuild"
compiler = "cc1"
jobs = 6
jobs_concurrent = 2
rss_min = "1M"
rss_max = "8M"
user_ns_per_page = 1000
phases = 4
memcg = "build"
tmpfs = "build"
"#;

    #[test]
    fn a_cc1_build_on_tmpfs_runs_with_its_partial_frees() {
        let s = Scenario::from_toml_str(CC1_BUILD).unwrap();
        let r = crate::run(&s).unwrap();
        let c = |k: &str| r.counters.get(k).copied().unwrap_or(0);
        // Every job ran to its end and the link read each object file.
        assert_eq!(r.workloads[0].kind, "kbuild");
        assert!(r.oom_kills.is_empty());
        assert!(c("pswpout") > 0 && c("hugepages-64kB/stats/swpout") > 0);
        // 64K folios at fault (the GC and malloc chunks), no 2M (not enabled).
        assert!(c("thp_fault_alloc") == 0 && c("hugepages-64kB/stats/anon_fault_alloc") > 0);
        // The same build with the one-heap compiler differs: the field is used.
        let one = Scenario::from_toml_str(&CC1_BUILD.replace("compiler = \"cc1\"\n", "")).unwrap();
        assert_ne!(crate::run(&one).unwrap().counters, r.counters);
    }

    #[test]
    fn an_unknown_compiler_is_refused_naming_the_values() {
        let bad = CC1_BUILD.replace("\"cc1\"", "\"clang\"");
        let e = Scenario::from_toml_str(&bad).unwrap_err().to_string();
        assert!(
            e.contains("clang") && e.contains("cc1") && e.contains("one-heap"),
            "{e}"
        );
    }
}
