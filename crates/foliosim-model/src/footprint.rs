//! The simulator's own memory for a scenario, estimated before anything is allocated, so that
//! a scenario too big for this host ends with an error naming its fields instead of an abort
//! in the allocator: validation refuses more than [`STATIC_MAX_BYTES`] (a bound that holds on
//! any host), and `run` refuses more than the host's MemAvailable ([`check_host`]).
//!
//! Bytes per page come from the element types of the per-page arrays (`size_of`), so a change
//! of layout changes the estimate; a test fails when one of these structures gains a field,
//! so that it is counted here too. What is counted: per page frame of RAM (the folio table,
//! the buddy allocator's arrays), per swap slot (swap_map, swap cache, slot data, zram's,
//! brd's and zswap's per-slot arrays, an SSD's mapping tables), per page of a file (the page
//! cache index), per page of every VMA the workloads map at once (its PTEs), and per task its
//! program, its marks (each a copy of every counter) and its mm. Not counted: per-cluster and
//! per-pageblock-order bookkeeping (well under 1% of the above), the zsmalloc pools and the
//! page cache's contents (they grow with what the run stores, as the kernel's would).

use crate::mm::folio::FolioTable;
use crate::mm::mmap::{MmStruct, Pte};
use crate::mm::page_alloc::FreeArea;
use crate::mm::swapfile::SwapMap;
use crate::mm::vmstat::VmStat;
use crate::mm::zram::Zram;
use crate::mm::zswap::Zswap;
use crate::scenario::{
    format_size, FileReadSpec, KbuildCompiler, KbuildSpec, Scenario, SwapDeviceKind,
    ThpSwapAllocatorTestSpec, ThpscaleSpec, TlbShootdownSpec, UsememSpec, WorkloadSpec,
    XsbenchSpec,
};
use crate::sched::Task;
use crate::workload::{thpscale::Geometry, Op};
use std::mem::size_of;

/// The most simulator memory any scenario may need, whatever the host: 1 TiB.
pub const STATIC_MAX_BYTES: u64 = 1 << 40;

/// size_of the elements of the Vec a field accessor returns (no instance needed).
fn elem<S, T>(_: fn(&S) -> &Vec<T>) -> usize {
    size_of::<T>()
}

/// One part of the estimate: the scenario field that decides it, and what it pays for.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The field, e.g. `machine.memory` or `workload[0].nproc x size`.
    pub field: String,
    /// Its value as the scenario has it, e.g. `4T` or `256 x 4G`.
    pub value: String,
    pub what: &'static str,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    pub parts: Vec<Part>,
}

impl Footprint {
    pub fn total_bytes(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |sum, p| sum.saturating_add(p.bytes))
    }

    /// The largest part.
    pub fn largest(&self) -> Option<&Part> {
        self.parts.iter().max_by_key(|p| p.bytes)
    }

    /// The parts of at least 1% of the total, largest first, as `field = value: size (what)`.
    pub fn summary(&self) -> String {
        let total = self.total_bytes().max(1);
        let mut parts: Vec<&Part> = self
            .parts
            .iter()
            .filter(|p| p.bytes >= total / 100)
            .collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        parts
            .iter()
            .map(|p| {
                format!(
                    "{} = {}: {} ({})",
                    p.field,
                    p.value,
                    human_bytes(p.bytes),
                    p.what
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// 1536 -> "1.5 KiB".
pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < units.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[unit])
    }
}

/// Simulator bytes per page frame of RAM, at most: the order and flags bytes of each pfn, a
/// folio record per pfn as if every folio were a base page, and deferred split links as if
/// every folio were of order 2, the smallest queued (records are per folio, in the table of
/// its order: with 64K folios a sixteenth of that is touched, mm/per_order.rs).
pub fn bytes_per_ram_page() -> f64 {
    let folios = elem(|f: &FolioTable| f.order.as_vec())
        + elem(|f: &FolioTable| &f.flags)
        + size_of::<crate::mm::folio::FolioRec>()
        + size_of::<[u32; 2]>() / 4;
    // Writeback completion times are kept per folio under I/O (a few thousand), not per pfn.
    folios as f64 + FreeArea::bytes_per_pfn()
}

/// Simulator bytes per slot of a swap device of `kind`, zswap's included when it is on.
pub fn bytes_per_swap_slot(kind: SwapDeviceKind, zswap: bool, ftl: bool) -> f64 {
    // The memcg each slot is charged to (swap_cgroup, a u16 per slot).
    let map = elem(|m: &SwapMap| &m.swap_map)
        + elem(|m: &SwapMap| &m.swap_cache)
        + elem(|m: &SwapMap| &m.data)
        + size_of::<u16>();
    let store = match kind {
        SwapDeviceKind::Zram => Zram::bytes_per_slot(),
        // brd: the pfn holding each slot's page.
        SwapDeviceKind::Ramdisk => size_of::<u32>(),
        _ => 0,
    };
    let zswap = if zswap { Zswap::bytes_per_slot() } else { 0 };
    let ftl = if ftl {
        crate::hw::ssd_ftl::Ftl::bytes_per_logical_page()
    } else {
        0.0
    };
    (map + store + zswap) as f64 + ftl
}

fn pages_bytes(pages: u64, per_page: f64) -> u64 {
    (pages as f64 * per_page).min(u64::MAX as f64) as u64
}

/// Bytes of one mark: a copy of every counter (name and value) in a B-tree map, whose nodes
/// are taken as about two-thirds full (estimate).
fn bytes_per_mark() -> u64 {
    let counters = VmStat::default().to_map();
    let entry = (size_of::<String>() + size_of::<u64>()) as u64 * 3 / 2;
    let names: u64 = counters.keys().map(|k| k.len() as u64).sum();
    counters.len() as u64 * entry + names + size_of::<Option<crate::workload::Mark>>() as u64
}

/// What a workload maps, runs and records, in counts.
struct WorkloadCounts {
    field: &'static str,
    value: String,
    /// Pages of the VMAs mapped at once (their PTE arrays).
    mapped_pages: u64,
    ops: u64,
    marks: u64,
    /// Latency samples (thpscale).
    samples: u64,
    tasks: u64,
    processes: u64,
}

fn counts(s: &Scenario, w: &WorkloadSpec) -> WorkloadCounts {
    match w {
        WorkloadSpec::Usemem(u) => usemem_counts(u),
        WorkloadSpec::ThpSwapAllocatorTest(a) => thp_swap_allocator_test_counts(s, a),
        WorkloadSpec::Kbuild(b) => kbuild_counts(b),
        WorkloadSpec::Thpscale(t) => thpscale_counts(t),
        WorkloadSpec::Trace(t) => trace_counts(s, w, &t.path),
        WorkloadSpec::FileRead(f) => file_read_counts(s, f),
        WorkloadSpec::Xsbench(x) => xsbench_counts(s, w, x),
        WorkloadSpec::Registered(r) => registered_counts(s, w, r.name.name()),
        WorkloadSpec::TlbShootdown(t) => tlb_shootdown_counts(t),
    }
}

/// A product that saturates: a huge scenario's estimate stays a huge number.
fn sat_mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// The pages an op list maps with Mmap (anonymous mappings only).
fn anon_mapped_pages<'a>(ops: impl Iterator<Item = &'a Op>) -> u64 {
    ops.map(|op| match op {
        Op::Mmap { nr_pages, .. } => *nr_pages as u64,
        _ => 0,
    })
    .sum()
}

/// usemem: every process, and every thread (`-t`) of it, maps its own `size`.
fn usemem_counts(u: &UsememSpec) -> WorkloadCounts {
    let UsememSpec {
        nproc,
        size,
        threads,
        sleep_s,
        repeat,
        ..
    } = *u;
    let n = nproc as u64;
    let tasks = sat_mul(n, threads.max(1) as u64);
    let ops = 5 + repeat.max(0) as u64 + (sleep_s > 0) as u64 + (threads > 0) as u64;
    WorkloadCounts {
        field: "nproc x size",
        value: format!("{nproc} x {}", format_size(size.0)),
        mapped_pages: sat_mul(tasks, size.pages()),
        ops: sat_mul(tasks, ops),
        marks: sat_mul(tasks, 2),
        samples: 0,
        tasks,
        processes: n,
    }
}

/// thp_swap_allocator_test: the program grows linearly with the iterations, so measure one
/// and two and extrapolate.
fn thp_swap_allocator_test_counts(s: &Scenario, a: &ThpSwapAllocatorTestSpec) -> WorkloadCounts {
    let iterations = a.iterations;
    let program = |iterations: u32| -> (u64, u64) {
        let one = WorkloadSpec::ThpSwapAllocatorTest(ThpSwapAllocatorTestSpec {
            iterations,
            ..a.clone()
        });
        let tasks = crate::workload::tasks(&one, s.seed);
        let ops = tasks.iter().flat_map(|t| &t.ops);
        (ops.clone().count() as u64, anon_mapped_pages(ops))
    };
    let ((ops_one, mapped), (ops_two, _)) = (program(1), program(2));
    let per_iteration = ops_two - ops_one;
    WorkloadCounts {
        field: "iterations",
        value: iterations.to_string(),
        mapped_pages: mapped,
        ops: ops_one.saturating_add(sat_mul(
            (iterations as u64).saturating_sub(1),
            per_iteration,
        )),
        marks: iterations as u64 + 1,
        samples: 0,
        tasks: 1,
        processes: 1,
    }
}

/// kbuild: `jobs_concurrent` compiler slots at once, each up to `rss_max`.
fn kbuild_counts(b: &KbuildSpec) -> WorkloadCounts {
    let KbuildSpec {
        jobs,
        jobs_concurrent,
        rss_max,
        phases,
        compiler,
        ..
    } = *b;
    let slots = jobs_concurrent.min(jobs) as u64;
    let (job_pages, job_ops) = match compiler {
        KbuildCompiler::OneHeap => (rss_max.pages(), 2 * phases as u64 + 4),
        KbuildCompiler::Cc1 => {
            use crate::workload::kbuild_cc1::{mapped_pages_max, ops_max};
            let pages = rss_max.pages();
            (mapped_pages_max(pages), ops_max(pages, phases as u64) + 4)
        }
    };
    WorkloadCounts {
        field: "jobs x phases",
        value: format!("{jobs} x {phases}"),
        mapped_pages: sat_mul(slots, job_pages),
        ops: sat_mul(jobs as u64, job_ops).saturating_add(slots),
        marks: jobs as u64,
        samples: 0,
        tasks: slots,
        processes: slots,
    }
}

/// thpscale: each thread's share of the total, its fragmenting mappings, and a latency sample
/// per huge page.
fn thpscale_counts(t: &ThpscaleSpec) -> WorkloadCounts {
    let (threads, total_size) = (t.threads, t.total_size);
    let g = Geometry::new(threads, total_size.0);
    let t = threads as u64;
    let per_thread = g.thread_pages as u64;
    WorkloadCounts {
        field: "total_size",
        value: format_size(total_size.0),
        mapped_pages: sat_mul(t, per_thread + per_thread / 2 + 512 + per_thread / 4),
        ops: sat_mul(t, 16 + per_thread / 512 + 5 * g.nr_hpages as u64),
        marks: 0,
        samples: sat_mul(t, g.nr_hpages as u64),
        tasks: t,
        processes: 1,
    }
}

/// A trace replay: its own tasks (the trace is parsed once and cached), what they map, summed
/// (an upper bound: VMAs unmapped on the way are counted too).
fn trace_counts(s: &Scenario, w: &WorkloadSpec, path: &str) -> WorkloadCounts {
    let tasks = crate::workload::tasks_for(w, s);
    let ops = tasks.iter().flat_map(|t| &t.ops);
    WorkloadCounts {
        field: "path",
        value: path.to_string(),
        mapped_pages: ops
            .clone()
            .map(|op| match op {
                Op::Mmap { nr_pages, .. } | Op::MmapFile { nr_pages, .. } => *nr_pages as u64,
                _ => 0,
            })
            .sum(),
        ops: ops.count() as u64,
        marks: tasks.len() as u64,
        samples: 0,
        tasks: tasks.len() as u64,
        processes: tasks.iter().filter(|t| t.shares_mm_with.is_none()).count() as u64,
    }
}

/// A registered workload: count what its program does; every mapping is live at once (an
/// upper bound).
fn registered_counts(s: &Scenario, w: &WorkloadSpec, name: &str) -> WorkloadCounts {
    let tasks = crate::workload::tasks_for(w, s);
    let nr_tasks = tasks.len() as u64;
    WorkloadCounts {
        field: "name",
        value: name.into(),
        mapped_pages: anon_mapped_pages(tasks.iter().flat_map(|t| &t.ops)),
        ops: tasks.iter().map(|t| t.ops.len() as u64).sum(),
        marks: sat_mul(nr_tasks, 2),
        samples: 0,
        tasks: nr_tasks,
        processes: tasks.iter().filter(|t| t.shares_mm_with.is_none()).count() as u64,
    }
}

/// file_read: `nproc` readers over the file, `passes` times, one op per step of
/// `step_pages` (one op per reader per pass when an mmap reader touches every page).
fn file_read_counts(s: &Scenario, f: &FileReadSpec) -> WorkloadCounts {
    let FileReadSpec {
        ref file,
        nproc,
        mmap,
        stride_pages,
        passes,
        read_pages,
        ..
    } = *f;
    let step_pages = if mmap {
        stride_pages as u64
    } else {
        read_pages as u64 * stride_pages as u64
    };
    let one_page_steps = mmap && stride_pages == 1;
    let file_pages = s
        .files
        .iter()
        .find(|f| f.name == *file)
        .map_or(0, |f| f.size.pages());
    let n = nproc as u64;
    let per_pass = if one_page_steps {
        n
    } else {
        file_pages.div_ceil(step_pages.max(1)) + n
    };
    WorkloadCounts {
        field: "passes",
        value: passes.to_string(),
        mapped_pages: if mmap { file_pages } else { 0 },
        ops: sat_mul(passes as u64, per_pass).saturating_add(sat_mul(n, 8)),
        marks: sat_mul(n, 2),
        samples: 0,
        tasks: n,
        processes: n,
    }
}

/// XSBench: the grid its first task maps, with the PTEs and the special sets of the accessed
/// ranges (5 bytes a page).
fn xsbench_counts(s: &Scenario, w: &WorkloadSpec, x: &XsbenchSpec) -> WorkloadCounts {
    let (lookups, threads) = (x.lookups, x.threads);
    let tasks = crate::workload::tasks_for(w, s);
    let t = threads as u64;
    let mapped = anon_mapped_pages(tasks[0].ops.iter());
    WorkloadCounts {
        field: "size",
        value: format!("{lookups} lookups"),
        mapped_pages: mapped + mapped * 5 / 8,
        ops: tasks.iter().map(|t| t.ops.len() as u64).sum(),
        marks: sat_mul(t, 2),
        samples: 0,
        tasks: t,
        processes: 1,
    }
}

/// tlb_shootdown: two mappings of `pages`, and each iteration's ops and barriers.
fn tlb_shootdown_counts(spec: &TlbShootdownSpec) -> WorkloadCounts {
    let TlbShootdownSpec {
        threads,
        iterations,
        ops_per_iteration,
        pages,
        ..
    } = *spec;
    let t = threads as u64;
    WorkloadCounts {
        field: "iterations",
        value: iterations.to_string(),
        mapped_pages: 2 * pages as u64,
        ops: sat_mul(iterations as u64, 3 * ops_per_iteration as u64 + 3 * t),
        marks: sat_mul(t, 2),
        samples: 0,
        tasks: t,
        processes: 1,
    }
}

/// The simulator memory `s` needs, part by part.
pub fn estimate(s: &Scenario) -> Footprint {
    let mut parts = Vec::new();
    let mach = &s.machine;
    parts.push(Part {
        field: "machine.memory".into(),
        value: format_size(mach.memory.0),
        what: "per-page state of RAM",
        bytes: pages_bytes(mach.memory.pages(), bytes_per_ram_page()),
    });
    for (i, dev) in mach.swap_devices.iter().enumerate() {
        let per_slot =
            bytes_per_swap_slot(dev.kind, s.sysfs.zswap.enabled, dev.erase_block.is_some());
        parts.push(Part {
            field: format!("machine.swap[{i}].size"),
            value: format_size(dev.size.0),
            what: "per-slot state of swap",
            bytes: pages_bytes(dev.size.pages(), per_slot),
        });
    }
    let cache_index = elem(|f: &crate::mm::filemap::File| &f.pages) as f64;
    for (i, f) in s.files.iter().enumerate() {
        parts.push(Part {
            field: format!("file[{i}].size"),
            value: format_size(f.size.0),
            what: "page cache index of the file",
            bytes: pages_bytes(f.size.pages(), cache_index),
        });
    }
    let mark = bytes_per_mark();
    let cpus = mach.cpus as u64;
    let per_process = size_of::<MmStruct>() as u64 + cpus * size_of::<Option<u64>>() as u64;
    for (i, w) in s.workloads.iter().enumerate() {
        let c = counts(s, w);
        let bytes = [
            c.mapped_pages.saturating_mul(size_of::<Pte>() as u64),
            c.ops.saturating_mul(size_of::<Op>() as u64),
            c.marks.saturating_mul(mark),
            c.samples.saturating_mul(size_of::<(u8, u64)>() as u64),
            c.tasks.saturating_mul(size_of::<Task>() as u64),
            c.processes.saturating_mul(per_process),
        ]
        .iter()
        .fold(0u64, |sum, b| sum.saturating_add(*b));
        parts.push(Part {
            field: format!("workload[{i}].{}", c.field),
            value: c.value,
            what: "page tables, programs and marks of its tasks",
            bytes,
        });
    }
    Footprint { parts }
}

/// The largest TOML input (scenario, costs, fit table, axes file) read: 16 MiB.
pub const MAX_TOML_BYTES: u64 = 16 << 20;
/// The largest trace read: 1 GiB (the parsed trace is held in memory).
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// The bytes of an input file, refused unless it is a regular file of at most `max_bytes`:
/// a device or FIFO (`/dev/zero`, `/dev/stdin`) would be read forever.
pub fn read_input(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, FIFO or directory); allowed: a regular file",
        ));
    }
    let too_big = |len: u64| {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} is too big; allowed: at most {}",
                human_bytes(len),
                human_bytes(max_bytes)
            ),
        )
    };
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    // Read at most one byte past the limit: a file that grows while read is refused too.
    let mut bytes = Vec::new();
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_input`] of a TOML file, as UTF-8 text.
pub fn read_toml(path: &std::path::Path) -> std::io::Result<String> {
    String::from_utf8(read_input(path, MAX_TOML_BYTES)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// MemAvailable of /proc/meminfo, in bytes; None where it cannot be read.
pub fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// One bound on the memory this process may still take, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct HostLimit {
    pub bytes: u64,
    /// e.g. "MemAvailable in /proc/meminfo" or "RLIMIT_AS (ulimit -v) less this process's VmSize".
    pub source: String,
}

impl HostLimit {
    pub fn mem_available(bytes: u64) -> HostLimit {
        HostLimit {
            bytes,
            source: "MemAvailable in /proc/meminfo".into(),
        }
    }
}

/// The soft limit of `name` (e.g. "Max address space") in /proc/self/limits text, in bytes;
/// None when unlimited or absent.
pub fn parse_rlimit(limits: &str, name: &str) -> Option<u64> {
    let rest = limits.lines().find_map(|l| l.strip_prefix(name))?;
    rest.split_whitespace().next()?.parse().ok()
}

/// A `Key:   N kB` field of /proc/self/status, in bytes.
pub fn parse_status_bytes(status: &str, key: &str) -> Option<u64> {
    let rest = status.lines().find_map(|l| l.strip_prefix(key))?;
    let kib: u64 = rest
        .trim_start_matches(':')
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The ulimits: RLIMIT_AS less the address space mapped now (VmSize), RLIMIT_DATA less the
/// data segment now (VmData), as setrlimit(2) counts them.
fn rlimit_headroom(limits: &str, status: &str) -> Vec<HostLimit> {
    let mut out = vec![];
    for (name, rlimit, used) in [
        ("Max address space", "RLIMIT_AS (ulimit -v)", "VmSize"),
        ("Max data size", "RLIMIT_DATA (ulimit -d)", "VmData"),
    ] {
        if let Some(limit) = parse_rlimit(limits, name) {
            let used_bytes = parse_status_bytes(status, used).unwrap_or(0);
            out.push(HostLimit {
                bytes: limit.saturating_sub(used_bytes),
                source: format!("{rlimit} less this process's {used}"),
            });
        }
    }
    out
}

/// The memory cgroup limits of this process under `root` (/sys/fs/cgroup), from the text of
/// /proc/self/cgroup: cgroup v2's memory.max less memory.current, and v1's
/// memory.limit_in_bytes less memory.usage_in_bytes, for its cgroup and every ancestor.
pub fn cgroup_headroom(root: &std::path::Path, proc_cgroup: &str) -> Vec<HostLimit> {
    let mut out = vec![];
    for line in proc_cgroup.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (dir, max_file, used_file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        // The cgroup and its ancestors, each of which caps it.
        let mut cg = std::path::PathBuf::from(path.trim());
        loop {
            let at = dir.join(cg.strip_prefix("/").unwrap_or(&cg));
            let read = |f: &str| std::fs::read_to_string(at.join(f)).ok();
            // "max" (v2) or a huge page-rounded number (v1) when unlimited.
            let max = read(max_file).and_then(|t| t.trim().parse::<u64>().ok());
            if let Some(max) = max.filter(|&m| m < 1 << 62) {
                let used = read(used_file)
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                out.push(HostLimit {
                    bytes: max.saturating_sub(used),
                    source: format!("{} less {used_file}", at.join(max_file).display()),
                });
            }
            if !cg.pop() {
                break;
            }
        }
    }
    out
}

/// Every bound on the memory this process may take that can be read: MemAvailable, the
/// ulimits, the memory cgroup's limits.
pub fn host_limits() -> Vec<HostLimit> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let mut out: Vec<HostLimit> = host_available_bytes()
        .map(HostLimit::mem_available)
        .into_iter()
        .collect();
    out.extend(rlimit_headroom(
        &read("/proc/self/limits"),
        &read("/proc/self/status"),
    ));
    out.extend(cgroup_headroom(
        std::path::Path::new("/sys/fs/cgroup"),
        &read("/proc/self/cgroup"),
    ));
    out
}

/// The smallest of [`host_limits`]; None when none can be read.
pub fn host_limit() -> Option<HostLimit> {
    host_limits().into_iter().min_by_key(|l| l.bytes)
}

/// The scenario needs more memory than the host can give.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error(
    "the scenario needs about {} of simulator memory, more than the {} this process may take ({}): {}; make {} smaller",
    human_bytes(*estimate_bytes),
    human_bytes(*available_bytes),
    limit,
    summary,
    fields
)]
pub struct TooBig {
    pub estimate_bytes: u64,
    pub available_bytes: u64,
    /// The limit that refused it.
    pub limit: String,
    /// The largest parts of the estimate.
    pub summary: String,
    /// The fields that decide most of it.
    pub fields: String,
}

/// Refuse a scenario that needs more than `limit` (when None, the smallest of the host's
/// limits that can be read: MemAvailable, RLIMIT_AS, RLIMIT_DATA, the cgroup's memory.max;
/// no check when none can).
pub fn check_host(s: &Scenario, limit: Option<HostLimit>) -> Result<Footprint, TooBig> {
    let f = estimate(s);
    let Some(limit) = limit.or_else(host_limit) else {
        return Ok(f);
    };
    if f.total_bytes() <= limit.bytes {
        return Ok(f);
    }
    let total = f.total_bytes();
    let mut big: Vec<&Part> = f.parts.iter().filter(|p| p.bytes >= total / 10).collect();
    big.sort_by_key(|p| std::cmp::Reverse(p.bytes));
    Err(TooBig {
        estimate_bytes: total,
        available_bytes: limit.bytes,
        limit: limit.source,
        summary: f.summary(),
        fields: big
            .iter()
            .map(|p| p.field.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
    })
}

/// Host memory could not be had for a table the estimate counts (the allocator refused it
/// though the pre-flight passed: another process took the memory, or overcommit is off).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("the host refused {} of simulator memory for {what}; free memory or make the scenario smaller", human_bytes(*bytes))]
pub struct AllocFailed {
    pub bytes: u64,
    pub what: &'static str,
}

/// A zero-filled Vec of `len`, or an error instead of bytemuck's panic when the host refuses.
pub fn try_zeroed_vec<T: bytemuck::Zeroable>(
    len: usize,
    what: &'static str,
) -> Result<Vec<T>, AllocFailed> {
    bytemuck::allocation::try_zeroed_vec(len).map_err(|()| AllocFailed {
        bytes: (len as u64).saturating_mul(size_of::<T>() as u64),
        what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A structure whose per-page arrays are counted here gained or lost a field: count it.
    #[test]
    fn the_counted_structures_have_the_fields_counted() {
        let vec = size_of::<Vec<u8>>();
        assert_eq!(
            size_of::<FolioTable>(),
            4 * vec + 3 * size_of::<BTreeMap<u32, u32>>(),
            "FolioTable changed: update bytes_per_ram_page"
        );
    }

    #[test]
    fn bytes_per_page_come_from_the_types() {
        let ram = bytes_per_ram_page();
        assert!((40.0..100.0).contains(&ram), "{ram}");
        let plain = bytes_per_swap_slot(SwapDeviceKind::Ssd, false, false);
        assert_eq!(
            plain, 8.0,
            "swap_map u8, swap_cache u32, data u8, swap_cgroup u16"
        );
        assert!(bytes_per_swap_slot(SwapDeviceKind::Zram, true, false) > plain + 8.0);
    }

    #[test]
    fn ulimits_and_cgroup_limits_are_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
            Max data size             unlimited            unlimited            bytes\n\
            Max address space         4294967296           unlimited            bytes\n";
        let status = "VmPeak:\t 2000 kB\nVmSize:\t    1024 kB\nVmData:\t 512 kB\n";
        let got = rlimit_headroom(limits, status);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].bytes, (4 << 30) - (1 << 20));
        assert!(got[0].source.contains("RLIMIT_AS"));

        let root = std::env::temp_dir().join(format!("foliosim-cg-{}", std::process::id()));
        let job = root.join("user.slice/job");
        std::fs::create_dir_all(&job).unwrap();
        std::fs::write(root.join("user.slice/memory.max"), "max\n").unwrap();
        std::fs::write(job.join("memory.max"), "1073741824\n").unwrap();
        std::fs::write(job.join("memory.current"), "73741824\n").unwrap();
        let v1 = root.join("memory/box");
        std::fs::create_dir_all(&v1).unwrap();
        std::fs::write(v1.join("memory.limit_in_bytes"), "2147483648\n").unwrap();
        std::fs::write(v1.join("memory.usage_in_bytes"), "0\n").unwrap();
        let got = cgroup_headroom(&root, "0::/user.slice/job\n4:memory:/box\n3:cpu:/x\n");
        std::fs::remove_dir_all(&root).unwrap();
        let bytes: Vec<u64> = got.iter().map(|l| l.bytes).collect();
        assert_eq!(bytes, [1_000_000_000, 2 << 30], "{got:?}");
        assert!(got[0]
            .source
            .ends_with("job/memory.max less memory.current"));
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
