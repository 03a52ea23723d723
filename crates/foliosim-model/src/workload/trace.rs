//! `kind = "trace"`: replay what a real program did to memory (`foliosim record`, format in
//! docs/trace-format.md). Every image of every recorded thread becomes a task: a process's
//! threads share its mm, a fork or an exec starts a task with a fresh mm. The tasks meet at
//! two-party barriers where the program's processes met in time: a child starts when its
//! parent forks it, an exec'd image when the old one ends, and a parent's wait4 returns when
//! the child has exited. VMAs become Mmap / Munmap(Range) / Madvise, faults become Touch, CPU
//! time between events becomes Compute.
//!
//! Approximations (the model has no fork, zero page or VMA merging): a forked child gets fresh
//! copies of the parent's VMAs (mapped when it first uses them, with the parent's holes), not
//! its pages; an anonymous load is replayed as a store (the kernel would map the zero page);
//! loads from file mappings are left out (page-cache hits of binaries and libraries), stores to
//! private file mappings are anonymous stores (the COW copy); shared mappings replay as private
//! anonymous memory; every VMA starts 2 MiB aligned and is never merged with its neighbours.

pub mod format;
pub mod gzip;
#[cfg(test)]
mod tests;

pub use format::{Event, EventKind, Holes, Trace, TraceAdvice, TraceError, VmaKind};

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::{TraceSpec, PAGE_SIZE};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub const MARK_START: usize = 0;
pub const MARK_END: usize = 1;
/// Barrier ids a workload may use: `workload::namespace_barriers` puts the workload's index
/// above them.
pub const MAX_BARRIERS: u32 = 1 << 24;

/// How to replay a trace (the workload's fields).
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub scale: f64,
    pub repeat: u32,
    pub madv_hugepage: bool,
    pub compute: bool,
    pub memcg: Option<String>,
}

/// Where a trace path points: as given (absolute, or relative to the current directory), or,
/// for a relative path not found there, relative to the nearest ancestor of the current
/// directory where it exists (so `scenarios/traces/x.trace.gz` works from inside the tree).
pub fn resolve(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    if p.exists() {
        return Some(p.to_path_buf());
    }
    if p.is_absolute() {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    cwd.ancestors().map(|a| a.join(p)).find(|c| c.exists())
}

type Cache = Mutex<BTreeMap<PathBuf, (std::time::SystemTime, u64, Arc<Trace>)>>;

/// Traces held in memory under a name (`mem:NAME`), for generated scenarios (the soak, the
/// fuzz targets) that run a trace without writing it to a file.
static REGISTERED: Mutex<BTreeMap<String, Arc<Trace>>> = Mutex::new(BTreeMap::new());

/// The prefix of a registered trace's path.
pub const MEM_PREFIX: &str = "mem:";

/// Hold `trace` in memory as path `mem:NAME` (replacing one of that name); returns the path.
pub fn register(name: &str, trace: Trace) -> String {
    let path = format!("{MEM_PREFIX}{name}");
    REGISTERED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.clone(), Arc::new(trace));
    path
}

/// Forget a registered trace.
pub fn unregister(path: &str) {
    REGISTERED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(path);
}

/// Read and parse a trace (memoised per file, until it changes). Errors name the file and,
/// for a bad trace, the line.
pub fn load(path: &str) -> Result<Arc<Trace>, String> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    if path.starts_with(MEM_PREFIX) {
        let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
        return registered
            .get(path)
            .cloned()
            .ok_or_else(|| format!("`{path}`: no trace registered under that name"));
    }
    let Some(file) = resolve(path) else {
        return Err(format!(
            "`{path}`: no such file (relative paths are tried from the current directory and its ancestors)"
        ));
    };
    let meta = std::fs::metadata(&file).map_err(|e| format!("`{}`: {e}", file.display()))?;
    // A device or a FIFO (/dev/zero, /dev/stdin) would be read forever.
    if !meta.is_file() {
        return Err(format!("`{}`: not a regular file", file.display()));
    }
    let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
    let cache = CACHE.get_or_init(Default::default);
    if let Some((m, l, t)) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&file) {
        if (*m, *l) == stamp {
            return Ok(t.clone());
        }
    }
    let bytes = crate::footprint::read_input(&file, crate::footprint::MAX_TRACE_BYTES)
        .map_err(|e| format!("`{}`: {e}", file.display()))?;
    let trace =
        Arc::new(Trace::parse_bytes(&bytes).map_err(|e| format!("`{}` {e}", file.display()))?);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(file, (stamp.0, stamp.1, trace.clone()));
    Ok(trace)
}

fn options(spec: &TraceSpec) -> (&str, ReplayOptions) {
    let TraceSpec {
        path,
        scale,
        repeat,
        madv_hugepage,
        compute,
        memcg,
        ..
    } = spec;
    (
        path,
        ReplayOptions {
            scale: *scale,
            repeat: *repeat,
            madv_hugepage: *madv_hugepage,
            compute: *compute,
            memcg: memcg.clone(),
        },
    )
}

/// Scenario checks: (field, value, allowed) of the first bad field.
pub fn validate(spec: &TraceSpec) -> Result<(), (&'static str, String, String)> {
    let (path, o) = options(spec);
    if !(o.scale > 0.0 && o.scale <= 64.0) {
        return Err(("scale", o.scale.to_string(), "0 < scale <= 64".into()));
    }
    if o.repeat == 0 || o.repeat > 1000 {
        return Err(("repeat", o.repeat.to_string(), "1 ..= 1000".into()));
    }
    let trace = load(path).map_err(|e| {
        (
            "path",
            e,
            "a readable foliosim trace (docs/trace-format.md)".into(),
        )
    })?;
    replay(&trace, &o).map_err(|e| {
        (
            "path",
            format!("`{path}`: {e}"),
            "a trace whose replay fits the limits".into(),
        )
    })?;
    Ok(())
}

/// The tasks; none if the trace cannot be read (scenario validation reports why).
pub fn tasks(spec: &TraceSpec) -> Vec<TaskSpec> {
    let (path, o) = options(spec);
    match load(path).and_then(|t| replay(&t, &o)) {
        Ok(tasks) => tasks,
        Err(e) => {
            eprintln!("trace workload: {e}");
            Vec::new()
        }
    }
}

/// A VMA of a replayed image. `local` is the sim's VMA id once mapped in this image (a forked
/// child maps an inherited VMA when it first uses it).
#[derive(Clone)]
struct RVma {
    pages: u32,
    kind: VmaKind,
    holes: Holes,
    local: Option<u32>,
}

#[derive(Clone)]
struct Image {
    /// The index of its first task (the others share its mm).
    leader: usize,
    vmas: BTreeMap<u32, RVma>,
    next_local: u32,
    name: String,
}

struct Builder<'a> {
    o: &'a ReplayOptions,
    out: Vec<TaskSpec>,
    images: Vec<Image>,
    /// Trace task -> (its current task index, its image).
    running: BTreeMap<u32, (usize, usize)>,
    /// Trace task -> its last task index, once exited.
    exited: BTreeMap<u32, usize>,
    next_barrier: u32,
    copy: u32,
}

impl Builder<'_> {
    fn barrier(&mut self) -> Result<Op, String> {
        self.next_barrier += 1;
        if self.next_barrier >= MAX_BARRIERS {
            return Err(format!(
                "more than {MAX_BARRIERS} forks, execs and waits in the replay"
            ));
        }
        Ok(Op::Barrier {
            id: self.next_barrier,
            parties: 2,
        })
    }

    fn scaled_pages(&self, pages: u32) -> Result<u32, String> {
        let p = (pages as f64 * self.o.scale).round().max(1.0);
        if p > format::MAX_VMA_PAGES as f64 {
            return Err(format!(
                "a VMA of {pages} pages scaled by {} exceeds {} pages (1 TiB)",
                self.o.scale,
                format::MAX_VMA_PAGES
            ));
        }
        Ok(p as u32)
    }

    /// Pages [first, first + nr) scaled: the smallest range covering them, at least a page.
    fn scaled_range(&self, first: u32, nr: u32, pages: u32) -> (u32, u32) {
        let s = self.o.scale;
        let a = ((first as f64 * s).floor() as u32).min(pages);
        let b = (((first as u64 + nr as u64) as f64 * s).ceil() as u32).clamp(a, pages);
        if a == b && a < pages {
            (a, a + 1)
        } else {
            (a, b)
        }
    }

    /// [first, first + nr) of a VMA, scaled, less its (scaled) holes.
    fn mapped_parts(&self, v: &RVma, first: u32, nr: u32) -> Vec<(u32, u32)> {
        let pages = self.scaled_pages(v.pages).unwrap_or(1);
        let (a, b) = self.scaled_range(first, nr, pages);
        let mut holes = Holes::default();
        for &(ha, hb) in &v.holes.0 {
            let (sa, sb) = self.scaled_range(ha, hb - ha, pages);
            holes.add(sa, sb);
        }
        holes.mapped_parts(a, b)
    }

    fn thp(&self) -> ThpAdvice {
        if self.o.madv_hugepage {
            ThpAdvice::Hugepage
        } else {
            ThpAdvice::Default
        }
    }

    fn push(&mut self, t: usize, op: Op) {
        let ops = &mut self.out[t].ops;
        // Coalesce what the recorder split: adjacent stores, back-to-back compute.
        match (ops.last_mut(), &op) {
            (
                Some(Op::Touch {
                    vma,
                    first,
                    nr,
                    write,
                }),
                Op::Touch {
                    vma: v2,
                    first: f2,
                    nr: n2,
                    write: w2,
                },
            ) if vma == v2 && write == w2 && *first + *nr == *f2 => *nr += n2,
            (Some(Op::Compute { ns }), Op::Compute { ns: more }) => *ns = ns.saturating_add(*more),
            _ => ops.push(op),
        }
    }

    fn new_task(&mut self, image: usize, shares: Option<usize>, task: u32) -> usize {
        let name = if self.o.repeat > 1 {
            format!("{}-{task}.{}", self.images[image].name, self.copy)
        } else {
            format!("{}-{task}", self.images[image].name)
        };
        self.out.push(TaskSpec {
            name,
            memcg: self.o.memcg.clone(),
            ops: Vec::new(),
            shares_mm_with: shares,
        });
        self.out.len() - 1
    }

    /// The sim VMA id of `vma` in `image`, mapping it (with its holes) on first use.
    fn local(&mut self, t: usize, image: usize, vma: u32) -> Result<Option<u32>, String> {
        let Some(v) = self.images[image].vmas.get(&vma).cloned() else {
            return Ok(None);
        };
        if let Some(l) = v.local {
            return Ok(Some(l));
        }
        let l = self.images[image].next_local;
        self.images[image].next_local += 1;
        self.images[image].vmas.get_mut(&vma).unwrap().local = Some(l);
        let pages = self.scaled_pages(v.pages)?;
        self.push(
            t,
            Op::Mmap {
                vma: l,
                nr_pages: pages,
                thp: self.thp(),
            },
        );
        let mut holes = Holes::default();
        for &(ha, hb) in &v.holes.0 {
            let (sa, sb) = self.scaled_range(ha, hb - ha, pages);
            holes.add(sa, sb);
        }
        for (a, b) in holes.0 {
            self.push(
                t,
                Op::MunmapRange {
                    vma: l,
                    first: a,
                    nr: b - a,
                },
            );
        }
        Ok(Some(l))
    }

    fn end_task(&mut self, t: usize) {
        self.push(t, Op::Mark(MARK_END));
        self.push(t, Op::Exit);
    }

    // One arm per event kind, each a few lines: a dispatch table reads better whole.
    #[allow(clippy::too_many_lines)]
    fn event(&mut self, e: &Event) -> Result<(), String> {
        let task = e.task;
        let cur = self.running.get(&task).copied();
        match &e.kind {
            EventKind::Exec { name } => {
                let start = match cur {
                    Some((t, _)) => {
                        let b = self.barrier()?;
                        self.push(t, Op::Mark(MARK_END));
                        self.push(t, b.clone());
                        self.push(t, Op::Exit);
                        Some(b)
                    }
                    None => None,
                };
                self.images.push(Image {
                    leader: self.out.len(),
                    vmas: BTreeMap::new(),
                    next_local: 0,
                    name: name.clone(),
                });
                let image = self.images.len() - 1;
                let t = self.new_task(image, None, task);
                if let Some(b) = start {
                    self.push(t, b);
                }
                self.push(t, Op::Mark(MARK_START));
                self.running.insert(task, (t, image));
            }
            EventKind::Fork { parent } | EventKind::Clone { parent } => {
                let &(pt, pimage) = self
                    .running
                    .get(parent)
                    .ok_or("fork of a task not running")?;
                let b = self.barrier()?;
                self.push(pt, b.clone());
                let (image, shares) = if matches!(e.kind, EventKind::Fork { .. }) {
                    let mut copy = self.images[pimage].clone();
                    copy.leader = self.out.len();
                    copy.next_local = 0;
                    for v in copy.vmas.values_mut() {
                        v.local = None;
                    }
                    self.images.push(copy);
                    (self.images.len() - 1, None)
                } else {
                    (pimage, Some(self.images[pimage].leader))
                };
                let t = self.new_task(image, shares, task);
                self.push(t, b);
                self.push(t, Op::Mark(MARK_START));
                self.running.insert(task, (t, image));
            }
            EventKind::Mmap { vma, pages, kind } => {
                let (t, image) = cur.ok_or("mmap by a task not running")?;
                let pages_scaled = self.scaled_pages(*pages)?;
                let img = &mut self.images[image];
                let l = img.next_local;
                img.next_local += 1;
                img.vmas.insert(
                    *vma,
                    RVma {
                        pages: *pages,
                        kind: *kind,
                        holes: Holes::default(),
                        local: Some(l),
                    },
                );
                self.push(
                    t,
                    Op::Mmap {
                        vma: l,
                        nr_pages: pages_scaled,
                        thp: self.thp(),
                    },
                );
            }
            EventKind::Munmap { vma, first, nr } => {
                let (t, image) = cur.ok_or("munmap by a task not running")?;
                let Some(v) = self.images[image].vmas.get(vma).cloned() else {
                    return Ok(());
                };
                let parts = self.mapped_parts(&v, *first, *nr);
                let mut after = v.holes.clone();
                after.add(*first, first + nr);
                let gone = after.covers(0, v.pages);
                if gone {
                    self.images[image].vmas.remove(vma);
                } else {
                    self.images[image].vmas.get_mut(vma).unwrap().holes = after;
                }
                if let Some(l) = v.local {
                    if gone {
                        self.push(t, Op::Munmap { vma: l });
                    } else {
                        for (a, b) in parts {
                            self.push(
                                t,
                                Op::MunmapRange {
                                    vma: l,
                                    first: a,
                                    nr: b - a,
                                },
                            );
                        }
                    }
                }
            }
            EventKind::Madvise {
                vma,
                first,
                nr,
                advice,
            } => {
                let (t, image) = cur.ok_or("madvise by a task not running")?;
                let Some(l) = self.local(t, image, *vma)? else {
                    return Ok(());
                };
                let advice = match advice {
                    // MADV_FREE frees lazily; the model frees at once, as DONTNEED does.
                    TraceAdvice::Dontneed | TraceAdvice::Free => Advice::Dontneed,
                    TraceAdvice::Pageout => Advice::Pageout,
                    TraceAdvice::Cold => Advice::Cold,
                    TraceAdvice::Hugepage => Advice::Hugepage,
                    TraceAdvice::Nohugepage => Advice::Nohugepage,
                };
                let v = self.images[image].vmas[vma].clone();
                for (a, b) in self.mapped_parts(&v, *first, *nr) {
                    self.push(
                        t,
                        Op::Madvise {
                            vma: l,
                            first: a,
                            nr: b - a,
                            advice,
                        },
                    );
                }
            }
            EventKind::Touch {
                vma,
                first,
                nr,
                write,
            } => {
                let (t, image) = cur.ok_or("touch by a task not running")?;
                let Some(v) = self.images[image].vmas.get(vma).cloned() else {
                    return Ok(());
                };
                if v.kind.is_file() && !write {
                    return Ok(());
                }
                let l = self.local(t, image, *vma)?.expect("the vma is mapped");
                for (a, b) in self.mapped_parts(&v, *first, *nr) {
                    self.push(
                        t,
                        Op::Touch {
                            vma: l,
                            first: a,
                            nr: b - a,
                            write: true,
                        },
                    );
                }
            }
            EventKind::Cpu { ns } => {
                let (t, _) = cur.ok_or("cpu time of a task not running")?;
                if self.o.compute && *ns > 0 {
                    self.push(t, Op::Compute { ns: *ns });
                }
            }
            EventKind::Wait { child } => {
                let (t, _) = cur.ok_or("wait by a task not running")?;
                let &c = self.exited.get(child).ok_or("wait for a task not exited")?;
                let b = self.barrier()?;
                self.push(t, b.clone());
                // Before the child's Exit, its last op.
                let ops = &mut self.out[c].ops;
                let at = ops.len().saturating_sub(1);
                ops.insert(at, b);
            }
            EventKind::Exit => {
                let (t, _) = cur.ok_or("exit of a task not running")?;
                self.end_task(t);
                self.running.remove(&task);
                self.exited.insert(task, t);
            }
        }
        Ok(())
    }
}

/// The tasks that replay `trace` as `o` says. The trace was checked when parsed; errors here
/// are limits (sizes after scaling, barrier ids).
pub fn replay(trace: &Trace, o: &ReplayOptions) -> Result<Vec<TaskSpec>, String> {
    let mut b = Builder {
        o,
        out: Vec::new(),
        images: Vec::new(),
        running: BTreeMap::new(),
        exited: BTreeMap::new(),
        next_barrier: 0,
        copy: 0,
    };
    let root = trace.events.first().map_or(1, |e| e.task);
    // The previous copy's root: the next copy starts when it ends.
    let mut chain: Option<usize> = None;
    for copy in 0..o.repeat {
        b.copy = copy;
        b.running.clear();
        b.exited.clear();
        for e in &trace.events {
            let first_of_root = e.task == root
                && matches!(e.kind, EventKind::Exec { .. })
                && !b.running.contains_key(&root)
                && !b.exited.contains_key(&root);
            b.event(e)?;
            if first_of_root {
                if let Some(prev) = chain.take() {
                    let bar = b.barrier()?;
                    let ops = &mut b.out[prev].ops;
                    let at = ops.len().saturating_sub(1);
                    ops.insert(at, bar.clone());
                    let (t, _) = b.running[&root];
                    b.out[t].ops.insert(0, bar);
                }
            }
        }
        // Tasks still running when the recording ended exit now.
        let left: Vec<(u32, usize)> = b.running.iter().map(|(&k, &(t, _))| (k, t)).collect();
        for (task, t) in left {
            b.end_task(t);
            b.running.remove(&task);
            b.exited.insert(task, t);
        }
        chain = b.exited.get(&root).copied();
    }
    Ok(b.out)
}

/// Elapsed: from the first task's start to the last task's end; throughput: the bytes the
/// replay stores to over that time.
pub fn report(spec: &TraceSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let start = marks
        .iter()
        .filter_map(|m| m.get(MARK_START).cloned().flatten())
        .map(|m| m.at_ns)
        .min();
    let end = marks
        .iter()
        .filter_map(|m| m.get(MARK_END).cloned().flatten())
        .map(|m| m.at_ns)
        .max();
    let elapsed = match (start, end) {
        (Some(s), Some(e)) if e > s => e - s,
        _ => 0,
    };
    let bytes: u64 = tasks(spec)
        .iter()
        .flat_map(|t| &t.ops)
        .map(|op| match op {
            Op::Touch { nr, .. } => *nr as u64 * PAGE_SIZE,
            _ => 0,
        })
        .sum();
    WorkloadResult {
        kind: "trace".into(),
        throughput_bytes_per_s: if elapsed > 0 {
            bytes as f64 * 1e9 / elapsed as f64
        } else {
            0.0
        },
        elapsed_ns_max: elapsed,
        tasks: marks.len() as u32,
        ..WorkloadResult::default()
    }
}
