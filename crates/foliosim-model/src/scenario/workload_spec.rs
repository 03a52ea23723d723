//! `[[workload]]`: one struct per kind, each with its own field checks; the enum picks the
//! kind by `kind = "..."`. Checks that need the model (a trace's file, a registered
//! workload's parameters, xsbench's grid size) run above the schema (validate.rs).

use super::MAX_TIME_NS;
use super::{
    check_time_ns, default_true, default_usemem_repeat, format_size, invalid, is_one_i64,
    is_zero_i32, is_zero_i64, tmpfs, Bytes, Scenario, ScenarioError, PAGE_SIZE,
};
use super::{ContentClass, ShootdownOp, ThpAdviceSpec, XsbenchSize};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSpec {
    Usemem(UsememSpec),
    ThpSwapAllocatorTest(ThpSwapAllocatorTestSpec),
    FileRead(FileReadSpec),
    Thpscale(ThpscaleSpec),
    Kbuild(KbuildSpec),
    Xsbench(XsbenchSpec),
    TlbShootdown(TlbShootdownSpec),
    Trace(TraceSpec),
    Registered(RegisteredSpec),
}

/// vm-scalability `usemem --init-time -w -O -n N SIZE`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsememSpec {
    /// Number of processes (`-n`).
    pub nproc: u32,
    /// Anonymous memory each process maps and writes.
    pub size: Bytes,
    /// memcg the processes run in; absent = root.
    #[serde(default)]
    pub memcg: Option<String>,
    /// MADV_HUGEPAGE the mapping (for `madvise` sysfs settings).
    #[serde(default)]
    pub madv_hugepage: bool,
    /// MADV_PAGEOUT the whole mapping once written (an extra step some tests use).
    #[serde(default)]
    pub pageout_after_write: bool,
    /// What the tasks write into their pages (decides compressibility); absent = the
    /// workload's own pattern (WorkloadSpec::content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentClass>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
    /// `-t`: threads per process sharing its mm, each mapping and writing its own `size`;
    /// 0: the process does the job itself.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub threads: i64,
    /// `-s`: seconds each task sleeps once written, holding its memory, before it frees
    /// it and exits.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub sleep_s: i64,
    /// `-r`: passes of the store loop over the mapping (all inside the timed phase).
    #[serde(default = "default_usemem_repeat", skip_serializing_if = "is_one_i64")]
    pub repeat: i64,
}

/// tools/mm/thp_swap_allocator_test.c (spec-swap.md §14): 60 MiB of 64 KiB mTHP paged out,
/// then per iteration random swap-ins, random 64 KiB MADV_DONTNEED + refault, page-out
/// again; reports the 64 KiB swpout fallback % per iteration. Run it with a 64 MiB
/// synchronous swap device (the tool's zram) and 64K `enabled`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThpSwapAllocatorTestSpec {
    /// `-a`: swap in 64 KiB-aligned 64 KiB chunks instead of single 4 KiB pages.
    #[serde(default)]
    pub aligned_swapin: bool,
    /// `-s`: also page out a 4 MiB area of small (order-0, MADV_NOHUGEPAGE) folios.
    #[serde(default)]
    pub small_folios: bool,
    /// What the tasks write into their pages (decides compressibility); absent = the
    /// workload's own pattern (WorkloadSpec::content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentClass>,
    #[serde(default = "default_allocator_test_iterations")]
    pub iterations: u32,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// Read a `[[file]]`: `nproc` tasks each read their share of it `passes` times, page by
/// page `stride_pages` apart, through a mapping (`mmap`: a load, or a store with `write`,
/// from each page; `shared` or private) or with read(2) of `read_pages` pages at a time.
/// Throughput is the file bytes each task covers over its time.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileReadSpec {
    /// A `[[file]]` name.
    pub file: String,
    #[serde(default = "default_one")]
    pub nproc: u32,
    #[serde(default = "default_true")]
    pub mmap: bool,
    #[serde(default = "default_true")]
    pub shared: bool,
    #[serde(default)]
    pub write: bool,
    #[serde(default = "default_one")]
    pub stride_pages: u32,
    #[serde(default = "default_one")]
    pub passes: u32,
    /// read(2) request size in pages (without `mmap`).
    #[serde(default = "default_file_read_pages")]
    pub read_pages: u32,
    /// `echo 1 > /proc/sys/vm/drop_caches` once the tasks are done (the first task).
    #[serde(default)]
    pub drop_caches_after: bool,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// mmtests' thpscale (workload/thpscale.rs): `threads` threads of one process fragment
/// memory with anonymous and file pages, then time 2 MiB faults (fault-base / fault-huge
/// latency, % huge). The `[[file]]` named `file` must hold `total_size` + 16 MiB.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThpscaleSpec {
    #[serde(default = "default_one")]
    pub threads: u32,
    /// THPSCALE_MAPSIZE: the anonymous memory of all threads (mmtests: 80% of RAM).
    pub total_size: Bytes,
    /// The work file, a `[[file]]` name.
    pub file: String,
    /// MADV_HUGEPAGE the faulted region (thpscale's last argument).
    #[serde(default)]
    pub madv_hugepage: bool,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// A kernel-build-like mix (`make -jN`): `jobs` compiler processes run `jobs_concurrent` at
/// a time; each maps an anonymous heap of a size drawn log-uniformly from
/// [rss_min, rss_max], writes it, then computes in `phases` phases, re-touching a random
/// tenth of its heap in each (the working set that swaps back in), and exits.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KbuildSpec {
    /// Compiler processes in the whole build.
    pub jobs: u32,
    /// `make -j`: how many run at once.
    pub jobs_concurrent: u32,
    #[serde(default = "default_kbuild_rss_min")]
    pub rss_min: Bytes,
    #[serde(default = "default_kbuild_rss_max")]
    pub rss_max: Bytes,
    /// User CPU time per 4 KiB page of heap (cc1: about a second per 100 MiB, ~40 µs).
    #[serde(default = "default_kbuild_user_ns_per_page")]
    pub user_ns_per_page: u64,
    #[serde(default = "default_kbuild_phases")]
    pub phases: u32,
    /// The `[[tmpfs]]` the build tree is on: each job writes its object file there (sized
    /// log-uniformly in [object_size_min, object_size_max]) and the last slot reads them
    /// all (the link). Absent: no files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmpfs: Option<String>,
    #[serde(default = "default_kbuild_object_size_min")]
    pub object_size_min: Bytes,
    #[serde(default = "default_kbuild_object_size_max")]
    pub object_size_max: Bytes,
    /// How each job's compiler uses memory: `one-heap` (default) or `cc1`, gcc's cc1 as
    /// recorded on this machine (docs/kbuild.md).
    #[serde(default, skip_serializing_if = "KbuildCompiler::is_one_heap")]
    pub compiler: KbuildCompiler,
    /// What the tasks write into their pages (decides compressibility); absent = the
    /// workload's own pattern (WorkloadSpec::content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentClass>,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// XSBench (workload/xsbench.rs, docs/xsbench.md): `threads` threads of one process build
/// the cross-section grids of `size` (thread 0 writes them), then do `lookups` lookups
/// in all (the seed: -p 50000000 x 34 = 1.7e9), uniformly random reads of the grids.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XsbenchSpec {
    /// `-s`: "small" (68 isotopes), "large" (355 x 11303, 5.9 GB) or "XL" (238847 points).
    #[serde(default)]
    pub size: XsbenchSize,
    /// Override the size's isotopes (68, or 355 and more: the material tables need them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isotopes: Option<u32>,
    /// `-g`: gridpoints per nuclide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gridpoints: Option<u32>,
    /// Lookups of all threads (XSBench's default -p 500000 -l 34: 17 million).
    #[serde(default = "default_xsbench_lookups")]
    pub lookups: u64,
    #[serde(default = "default_one")]
    pub threads: u32,
    /// MADV_HUGEPAGE ("hugepage") or MADV_NOHUGEPAGE ("nohugepage") the grids.
    #[serde(default)]
    pub thp: ThpAdviceSpec,
    /// User CPU time of a lookup besides its memory accesses; default: an estimate from
    /// the material's nuclides (docs/xsbench.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookup_compute_ns: Option<u64>,
    /// Lookups per chunk of ops (granularity of the access ops); default: at least 1000,
    /// at most 20000 chunks per thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_lookups: Option<u32>,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// A TLB shootdown microbenchmark (workload/tlb_shootdown.rs): thread 0 of `threads` does
/// `op` on memory the others share, `iterations` x `ops_per_iteration` times, while they
/// run in user space on the other CPUs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbShootdownSpec {
    /// "munmap", "mprotect", "madv_dontneed" or "madv_pageout" (needs swap).
    pub op: ShootdownOp,
    #[serde(default = "default_two")]
    pub threads: u32,
    #[serde(default = "default_shootdown_iterations")]
    pub iterations: u32,
    #[serde(default = "default_shootdown_ops")]
    pub ops_per_iteration: u32,
    /// Pages of the region (at most 33: flush_tlb_mm_range flushes them one by one).
    #[serde(default = "default_shootdown_pages")]
    pub pages: u32,
    /// How long the other threads run in user space each iteration.
    #[serde(default = "default_shootdown_spin_ns")]
    pub spin_ns: u64,
    /// How long thread 0 waits (in user space) before its operations each iteration.
    #[serde(default = "default_shootdown_lead_ns")]
    pub lead_ns: u64,
    #[serde(default)]
    pub memcg: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// Replay a trace recorded by `foliosim record` (workload/trace.rs, docs/trace-format.md):
/// each recorded process becomes tasks, its VMAs and page faults operations.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The trace file (gzipped or not); a relative path is tried from the current
    /// directory and then from each of its ancestors.
    pub path: String,
    /// Multiply every size (VMAs, touched and unmapped ranges); CPU time is not scaled.
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Replay the whole trace this many times, one after the other.
    #[serde(default = "default_one")]
    pub repeat: u32,
    /// MADV_HUGEPAGE every VMA (for `madvise` sysfs settings).
    #[serde(default)]
    pub madv_hugepage: bool,
    /// Replay the recorded CPU time between events as user-space computing.
    #[serde(default = "default_true")]
    pub compute: bool,
    /// What the tasks write into their pages; absent = real process memory
    /// (process-sample).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentClass>,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

/// A workload from the registry (workload/mod.rs `registry!`, docs/extending.md):
/// `name` picks it; `params` are its own fields, which it checks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisteredSpec {
    pub name: crate::registry::WorkloadKind,
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub params: toml::Table,
    #[serde(default)]
    pub memcg: Option<String>,
    /// /proc/PID/oom_score_adj of its processes: -1000 (never OOM-killed) ..= 1000.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub oom_score_adj: i32,
}

fn default_scale() -> f64 {
    1.0
}
fn default_xsbench_lookups() -> u64 {
    17_000_000
}
fn default_two() -> u32 {
    2
}
fn default_shootdown_iterations() -> u32 {
    200
}
fn default_shootdown_ops() -> u32 {
    10
}
fn default_shootdown_pages() -> u32 {
    16
}
fn default_shootdown_spin_ns() -> u64 {
    2_000_000
}
fn default_shootdown_lead_ns() -> u64 {
    100_000
}
fn default_allocator_test_iterations() -> u32 {
    100
}
fn default_one() -> u32 {
    1
}
fn default_file_read_pages() -> u32 {
    32
}
fn default_kbuild_rss_min() -> Bytes {
    Bytes(8 << 20)
}
fn default_kbuild_rss_max() -> Bytes {
    Bytes(256 << 20)
}
fn default_kbuild_user_ns_per_page() -> u64 {
    40_000
}
fn default_kbuild_phases() -> u32 {
    4
}

/// How a kbuild job's compiler maps, writes and frees memory (workload/kbuild.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KbuildCompiler {
    /// One anonymous heap, written whole, re-touched by tenths, unmapped whole at the end.
    #[default]
    OneHeap,
    /// gcc 12's cc1 as `foliosim record` saw it (workload/kbuild_cc1.rs, docs/kbuild.md): a brk
    /// heap that grows and is trimmed, 2 MiB GC chunks, small mmaps that get only order-0
    /// folios, and malloc's large chunks, a third of them freed soon after use.
    Cc1,
}

impl KbuildCompiler {
    fn is_one_heap(&self) -> bool {
        *self == KbuildCompiler::OneHeap
    }
}

/// kbuild on tmpfs: the default range of an object file's size (an estimate, docs/shmem.md).
pub const KBUILD_OBJECT_SIZE_MIN_BYTES: u64 = 16 << 10;
pub const KBUILD_OBJECT_SIZE_MAX_BYTES: u64 = 1 << 20;

fn default_kbuild_object_size_min() -> Bytes {
    Bytes(KBUILD_OBJECT_SIZE_MIN_BYTES)
}

fn default_kbuild_object_size_max() -> Bytes {
    Bytes(KBUILD_OBJECT_SIZE_MAX_BYTES)
}

impl WorkloadSpec {
    /// The page content the workload writes: usemem stores each word's index (p[i] = i),
    /// thp_swap_allocator_test memsets 0x11, a compiler's heap is real process memory.
    pub fn content(&self) -> ContentClass {
        match self {
            WorkloadSpec::Usemem(w) => w.content.unwrap_or(ContentClass::Usemem),
            WorkloadSpec::ThpSwapAllocatorTest(w) => w.content.unwrap_or(ContentClass::SameFilled),
            WorkloadSpec::Kbuild(w) => w.content.unwrap_or(ContentClass::ProcessSample),
            WorkloadSpec::Trace(w) => w.content.unwrap_or(ContentClass::ProcessSample),
            WorkloadSpec::FileRead(_)
            | WorkloadSpec::Thpscale(_)
            | WorkloadSpec::Xsbench(_)
            | WorkloadSpec::TlbShootdown(_)
            | WorkloadSpec::Registered(_) => ContentClass::Usemem,
        }
    }

    /// The fields every kind has: the memcg its processes run in and their oom_score_adj.
    fn common(&self) -> (&Option<String>, i32) {
        match self {
            WorkloadSpec::Usemem(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::ThpSwapAllocatorTest(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::Kbuild(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::FileRead(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::Thpscale(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::Xsbench(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::TlbShootdown(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::Trace(w) => (&w.memcg, w.oom_score_adj),
            WorkloadSpec::Registered(w) => (&w.memcg, w.oom_score_adj),
        }
    }

    pub fn memcg(&self) -> Option<&str> {
        self.common().0.as_deref()
    }

    /// oom_score_adj of the workload's processes (-1000 ..= 1000; -1000: never OOM-killed).
    pub fn oom_score_adj(&self) -> i32 {
        self.common().1
    }
}

impl Scenario {
    /// One `[[workload]]`'s own fields, by kind; xsbench's grid size and a trace's file are
    /// checked above the schema (validate.rs), then `check_workload_refs`.
    pub(crate) fn check_workload_fields(
        &self,
        i: usize,
        w: &WorkloadSpec,
    ) -> Result<(), ScenarioError> {
        let field = |name: &str| format!("workload[{i}].{name}");
        match w {
            WorkloadSpec::Usemem(u) => u.check(&field),
            WorkloadSpec::ThpSwapAllocatorTest(t) => {
                if t.iterations == 0 || t.iterations > 100_000 {
                    return Err(invalid(field("iterations"), t.iterations, "1 ..= 100000"));
                }
                Ok(())
            }
            WorkloadSpec::Kbuild(b) => b.check(self, &field),
            WorkloadSpec::Thpscale(t) => t.check(self, &field),
            WorkloadSpec::Xsbench(x) => x.check(&field),
            WorkloadSpec::TlbShootdown(t) => t.check(&field),
            // Checked above the schema, where the trace's reader and the registered workloads'
            // generators are (validate.rs).
            WorkloadSpec::Trace(_) | WorkloadSpec::Registered(_) => Ok(()),
            WorkloadSpec::FileRead(f) => f.check(self, &field),
        }
    }
}

impl UsememSpec {
    /// usemem: processes, the size each maps, threads, the sleep and the store passes.
    pub(super) fn check(&self, field: &dyn Fn(&str) -> String) -> Result<(), ScenarioError> {
        let UsememSpec {
            nproc,
            size,
            threads,
            sleep_s,
            repeat,
            ..
        } = self;
        if *nproc == 0 || *nproc > 100_000 {
            return Err(invalid(field("nproc"), nproc, "1 ..= 100000"));
        }
        if size.0 < PAGE_SIZE || size.0 > 1 << 42 {
            return Err(invalid(field("size"), format_size(size.0), "4K ..= 4T"));
        }
        if !(0..=4096).contains(threads) || *nproc as i64 * (*threads).max(1) > 100_000 {
            return Err(invalid(
                field("threads"),
                threads,
                "0 ..= 4096, with nproc x threads at most 100000",
            ));
        }
        if !(0..=(MAX_TIME_NS / 1_000_000_000) as i64).contains(sleep_s) {
            return Err(invalid(
                field("sleep_s"),
                sleep_s,
                "0 ..= 1000 seconds (usemem's -1, for ever, never ends the run)",
            ));
        }
        if !(1..=10_000).contains(repeat) {
            return Err(invalid(field("repeat"), repeat, "1 ..= 10000"));
        }
        Ok(())
    }
}

impl KbuildSpec {
    /// kbuild: jobs, their concurrency, RSS range and phases, and the tmpfs it builds on.
    pub(super) fn check(
        &self,
        s: &Scenario,
        field: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        let KbuildSpec {
            jobs,
            jobs_concurrent,
            rss_min,
            rss_max,
            phases,
            user_ns_per_page,
            tmpfs,
            ..
        } = self;
        check_time_ns(&field("user_ns_per_page"), Some(*user_ns_per_page))?;
        if *jobs == 0 || *jobs > 1_000_000 {
            return Err(invalid(field("jobs"), jobs, "1 ..= 1000000"));
        }
        if *jobs_concurrent == 0 || *jobs_concurrent > 4096 {
            return Err(invalid(
                field("jobs_concurrent"),
                jobs_concurrent,
                "1 ..= 4096",
            ));
        }
        if rss_min.0 < PAGE_SIZE || rss_min.0 > 1 << 36 {
            return Err(invalid(
                field("rss_min"),
                format_size(rss_min.0),
                "4K ..= 64G",
            ));
        }
        if rss_max < rss_min || rss_max.0 > 1 << 36 {
            return Err(invalid(
                field("rss_max"),
                format_size(rss_max.0),
                format!("rss_min ({}) ..= 64G", format_size(rss_min.0)),
            ));
        }
        if *phases == 0 || *phases > 1000 {
            return Err(invalid(field("phases"), phases, "1 ..= 1000"));
        }
        if let Some(name) = tmpfs {
            // The object sizes are checked above the schema (validate.rs).
            tmpfs::find(&s.tmpfs, &field("tmpfs"), name)?;
        }
        Ok(())
    }
}

impl ThpscaleSpec {
    /// thpscale: threads, a total of at least 2M per thread, and a file big enough for it.
    pub(super) fn check(
        &self,
        s: &Scenario,
        field: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        let ThpscaleSpec {
            threads,
            total_size,
            file,
            ..
        } = self;
        let spec = s.file_spec(file, field("file"))?;
        if *threads == 0 || *threads > 4096 {
            return Err(invalid(field("threads"), threads, "1 ..= 4096"));
        }
        // thpscale exits when a thread's share rounds down to no 2 MiB.
        let min = *threads as u64 * (2 << 20);
        if total_size.0 < min || total_size.0 > 1 << 42 {
            return Err(invalid(
                field("total_size"),
                format_size(total_size.0),
                format!("{} (2M per thread) ..= 4T", format_size(min)),
            ));
        }
        let needed = total_size.0 + (16 << 20);
        if spec.size.0 < needed {
            return Err(invalid(
                format!("file `{file}` size"),
                format_size(spec.size.0),
                format!(
                    "at least total_size + 16M = {} (thpscale maps a quarter of each thread's share at its offset)",
                    format_size(needed)
                ),
            ));
        }
        Ok(())
    }
}

impl XsbenchSpec {
    /// XSBench: its problem's isotopes and gridpoints, lookups, threads and their pacing.
    pub(super) fn check(&self, field: &dyn Fn(&str) -> String) -> Result<(), ScenarioError> {
        let XsbenchSpec {
            isotopes,
            gridpoints,
            lookups,
            threads,
            chunk_lookups,
            lookup_compute_ns,
            ..
        } = self;
        if let Some(n) = isotopes.filter(|&n| n != 68 && !(355..=100_000).contains(&n)) {
            return Err(invalid(
                field("isotopes"),
                n,
                "68 (H-M small's fuel) or 355 ..= 100000 (H-M large's material table names isotopes up to 354)",
            ));
        }
        if let Some(g) = gridpoints.filter(|&g| g == 0 || g > 10_000_000) {
            return Err(invalid(field("gridpoints"), g, "1 ..= 10000000"));
        }
        if *lookups == 0 || *lookups > 1 << 40 {
            return Err(invalid(field("lookups"), lookups, "1 ..= 2^40"));
        }
        if *threads == 0 || *threads > 4096 {
            return Err(invalid(field("threads"), threads, "1 ..= 4096"));
        }
        if chunk_lookups == &Some(0) {
            return Err(invalid(field("chunk_lookups"), 0, ">= 1"));
        }
        check_time_ns(&field("lookup_compute_ns"), *lookup_compute_ns)?;
        Ok(())
    }
}

impl TlbShootdownSpec {
    /// tlb_shootdown: threads, iterations, ops per iteration, pages and the timing.
    pub(super) fn check(&self, field: &dyn Fn(&str) -> String) -> Result<(), ScenarioError> {
        let TlbShootdownSpec {
            threads,
            iterations,
            ops_per_iteration,
            pages,
            spin_ns,
            lead_ns,
            ..
        } = self;
        if *threads < 2 || *threads > 1024 {
            return Err(invalid(field("threads"), threads, "2 ..= 1024"));
        }
        for (name, v, max) in [
            ("iterations", *iterations, 1_000_000),
            ("ops_per_iteration", *ops_per_iteration, 10_000),
            ("pages", *pages, 33),
        ] {
            if v == 0 || v > max {
                return Err(invalid(field(name), v, format!("1 ..= {max}")));
            }
        }
        check_time_ns(&field("spin_ns"), Some(*spin_ns))?;
        check_time_ns(&field("lead_ns"), Some(*lead_ns))?;
        Ok(())
    }
}

impl FileReadSpec {
    /// file_read: readers (each with a page of the file at least), stride, passes, read size.
    pub(super) fn check(
        &self,
        s: &Scenario,
        field: &dyn Fn(&str) -> String,
    ) -> Result<(), ScenarioError> {
        let FileReadSpec {
            file,
            nproc,
            stride_pages,
            passes,
            read_pages,
            ..
        } = self;
        let pages = s.file_spec(file, field("file"))?.size.pages();
        // Each task maps or reads its own share of the file: at least a page.
        if *nproc as u64 > pages {
            return Err(invalid(
                field("nproc"),
                nproc,
                format!(
                    "1 ..= {pages} (each task reads a share of the {pages} pages of file `{file}`)"
                ),
            ));
        }
        for (name, v, max) in [
            ("nproc", *nproc, 4096),
            ("stride_pages", *stride_pages, 1 << 20),
            ("passes", *passes, 1000),
            ("read_pages", *read_pages, 1 << 20),
        ] {
            if v == 0 || v > max {
                return Err(invalid(field(name), v, format!("1 ..= {max}")));
            }
        }
        Ok(())
    }
}
