//! Random memcgs, files and workloads: every workload kind, small enough to run in well under
//! a second with the invariant checker on.

use super::gen::Gen;
use crate::content::ContentClass;
use crate::scenario::{
    Bytes, CgroupVersion, FileReadSpec, FileSpec, KbuildSpec, MemcgSpec, ThpSwapAllocatorTestSpec,
    ThpscaleSpec, TraceSpec, UsememSpec, WorkloadSpec,
};

/// Every `kind =` of `[[workload]]`.
pub const KINDS: [&str; 6] = [
    "usemem",
    "thp_swap_allocator_test",
    "file_read",
    "thpscale",
    "kbuild",
    "trace",
];

pub fn memcgs(g: &mut Gen, cgroup: CgroupVersion) -> Vec<MemcgSpec> {
    let v2 = cgroup == CgroupVersion::V2;
    (0..g.pick(&[0, 1, 1, 2, 3]))
        .map(|i| MemcgSpec {
            name: format!("cg{i}"),
            max: g.maybe(60, |g| Bytes(g.size(4 << 20, 64 << 20, 1 << 20))),
            high: if v2 {
                g.maybe(30, |g| Bytes(g.size(2 << 20, 64 << 20, 1 << 20)))
            } else {
                None
            },
            zswap_max: if v2 {
                g.maybe(20, |g| Bytes(g.size(1 << 20, 16 << 20, 1 << 20)))
            } else {
                None
            },
            zswap_writeback: !v2 || g.chance(80),
            oom_group: v2 && g.chance(20),
            ..MemcgSpec::with_max("", None)
        })
        .collect()
}

fn memcg(g: &mut Gen, memcgs: &[MemcgSpec]) -> Option<String> {
    if memcgs.is_empty() || g.chance(30) {
        None
    } else {
        Some(g.pick(memcgs).name)
    }
}

fn content(g: &mut Gen) -> Option<ContentClass> {
    g.maybe(40, |g| g.pick(&ContentClass::ALL))
}

fn oom_score_adj(g: &mut Gen) -> i32 {
    if g.chance(70) {
        0
    } else {
        g.pick(&[-1000, -500, 300, 1000])
    }
}

/// A workload of `kind`; file workloads add the `[[file]]` they read to `files`. `trace_path`
/// is the path of the case's generated trace.
pub fn workload(
    g: &mut Gen,
    kind: &str,
    memcgs: &[MemcgSpec],
    files: &mut Vec<FileSpec>,
    trace_path: &str,
) -> WorkloadSpec {
    let memcg = memcg(g, memcgs);
    let oom_score_adj = oom_score_adj(g);
    let mut file = |bytes: u64| {
        let name = format!("f{}", files.len());
        files.push(FileSpec {
            name: name.clone(),
            size: Bytes(bytes),
        });
        name
    };
    match kind {
        "usemem" => WorkloadSpec::Usemem(UsememSpec {
            nproc: g.u32(1, 4),
            size: Bytes(g.size(4 << 10, 48 << 20, 4 << 10)),
            memcg,
            madv_hugepage: g.chance(40),
            pageout_after_write: g.chance(30),
            content: content(g),
            oom_score_adj,
            // The options as usemem runs without them (a soak draws no more than before).
            threads: 0,
            sleep_s: 0,
            repeat: 1,
        }),
        "thp_swap_allocator_test" => WorkloadSpec::ThpSwapAllocatorTest(ThpSwapAllocatorTestSpec {
            aligned_swapin: g.chance(50),
            small_folios: g.chance(50),
            content: content(g),
            iterations: g.u32(1, 3),
            memcg,
            oom_score_adj,
        }),
        "file_read" => {
            let bytes = g.size(16 << 10, 32 << 20, 4 << 10);
            WorkloadSpec::FileRead(FileReadSpec {
                file: file(bytes),
                nproc: g.u32(1, 3),
                mmap: g.chance(60),
                shared: g.chance(60),
                write: g.chance(30),
                stride_pages: g.pick(&[1, 1, 2, 7, 64]),
                passes: g.u32(1, 2),
                read_pages: g.pick(&[1, 8, 32, 256]),
                drop_caches_after: g.chance(30),
                memcg,
                oom_score_adj,
            })
        }
        "thpscale" => {
            let threads = g.u32(1, 2);
            let total = threads as u64 * (2 << 20) + (g.range(0, 8) << 20);
            WorkloadSpec::Thpscale(ThpscaleSpec {
                threads,
                total_size: Bytes(total),
                file: file(total + (16 << 20)),
                madv_hugepage: g.chance(50),
                memcg,
                oom_score_adj,
            })
        }
        "kbuild" => {
            let rss_min = g.size(64 << 10, 2 << 20, 4 << 10);
            WorkloadSpec::Kbuild(KbuildSpec {
                jobs: g.u32(1, 12),
                jobs_concurrent: g.u32(1, 3),
                rss_min: Bytes(rss_min),
                rss_max: Bytes(rss_min + g.size(4 << 10, 16 << 20, 4 << 10)),
                user_ns_per_page: g.pick(&[0, 100, 5000]),
                phases: g.u32(1, 3),
                tmpfs: None,
                object_size_min: Bytes(foliosim_model::workload::kbuild::OBJECT_SIZE_MIN_BYTES),
                object_size_max: Bytes(foliosim_model::workload::kbuild::OBJECT_SIZE_MAX_BYTES),
                compiler: crate::scenario::KbuildCompiler::OneHeap,
                content: content(g),
                memcg,
                oom_score_adj,
            })
        }
        _ => WorkloadSpec::Trace(TraceSpec {
            path: trace_path.into(),
            scale: g.pick(&[1.0, 1.0, 0.5, 2.0]),
            repeat: g.u32(1, 2),
            madv_hugepage: g.chance(40),
            compute: g.chance(70),
            content: content(g),
            memcg,
            oom_score_adj,
        }),
    }
}
