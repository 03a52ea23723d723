//! The trace file (docs/trace-format.md): a versioned, line-based text file, optionally gzipped.
//! Parsing checks every line and the semantics of the whole trace (tasks start before they act,
//! VMAs are mapped before they are touched, nothing touches an unmapped page), so a replay of a
//! parsed trace never faults outside a mapping. Errors name the line and what was expected.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

pub const MAGIC: &str = "foliosim-trace";
pub const FORMAT_VERSION: u32 = 1;
pub const PAGE_SIZE: u64 = 4096;
/// The largest VMA a trace may map (pages): 1 TiB.
pub const MAX_VMA_PAGES: u32 = 1 << 28;
/// The latest event time, and the most CPU time a task may have in all, in ns: 10^13 (about
/// 2.8 hours). A replay steps a task's CPU time a scheduler slice at a time, so more would
/// take hours to simulate, and sums near 2^64 would wrap.
pub const MAX_TRACE_NS: u64 = 10_000_000_000_000;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// `key value` lines between the magic line and `begin`, in file order.
    pub header: Vec<(String, String)>,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Since the start of the recording.
    pub t_ns: u64,
    /// A thread of the recorded program, numbered from 1 in order of appearance.
    pub task: u32,
    pub kind: EventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmaKind {
    /// MAP_PRIVATE | MAP_ANONYMOUS (and brk, the stack, what exec set up without a file).
    Anon,
    /// MAP_SHARED | MAP_ANONYMOUS.
    SharedAnon,
    /// MAP_PRIVATE of a file: reads come from the page cache, stores copy the page (anon).
    File,
    /// MAP_SHARED of a file.
    SharedFile,
}

impl VmaKind {
    pub const ALL: [VmaKind; 4] = [
        VmaKind::Anon,
        VmaKind::SharedAnon,
        VmaKind::File,
        VmaKind::SharedFile,
    ];
    pub fn name(self) -> &'static str {
        match self {
            VmaKind::Anon => "anon",
            VmaKind::SharedAnon => "shared-anon",
            VmaKind::File => "file",
            VmaKind::SharedFile => "shared-file",
        }
    }
    pub fn is_file(self) -> bool {
        matches!(self, VmaKind::File | VmaKind::SharedFile)
    }
}

/// The madvise advices a trace keeps (others do not change what the model tracks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceAdvice {
    Dontneed,
    Free,
    Pageout,
    Cold,
    Hugepage,
    Nohugepage,
}

impl TraceAdvice {
    pub const ALL: [TraceAdvice; 6] = [
        TraceAdvice::Dontneed,
        TraceAdvice::Free,
        TraceAdvice::Pageout,
        TraceAdvice::Cold,
        TraceAdvice::Hugepage,
        TraceAdvice::Nohugepage,
    ];
    pub fn name(self) -> &'static str {
        match self {
            TraceAdvice::Dontneed => "dontneed",
            TraceAdvice::Free => "free",
            TraceAdvice::Pageout => "pageout",
            TraceAdvice::Cold => "cold",
            TraceAdvice::Hugepage => "hugepage",
            TraceAdvice::Nohugepage => "nohugepage",
        }
    }
    /// Linux's MADV_* value (include/uapi/asm-generic/mman-common.h).
    pub fn from_linux(value: u64) -> Option<TraceAdvice> {
        Some(match value {
            4 => TraceAdvice::Dontneed,
            8 => TraceAdvice::Free,
            21 => TraceAdvice::Pageout,
            20 => TraceAdvice::Cold,
            14 => TraceAdvice::Hugepage,
            15 => TraceAdvice::Nohugepage,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The task starts a new program image: a fresh mm (the root task's first event).
    Exec {
        name: String,
    },
    /// A new process forked from `parent`'s: it starts with the parent's mappings.
    Fork {
        parent: u32,
    },
    /// A new thread of `parent`'s process (CLONE_VM | CLONE_THREAD).
    Clone {
        parent: u32,
    },
    /// A new mapping, `vma` (unique in the trace), of `pages`.
    Mmap {
        vma: u32,
        pages: u32,
        kind: VmaKind,
    },
    Munmap {
        vma: u32,
        first: u32,
        nr: u32,
    },
    Madvise {
        vma: u32,
        first: u32,
        nr: u32,
        advice: TraceAdvice,
    },
    /// Pages [first, first + nr) faulted in this order (a load, or a store with `write`).
    Touch {
        vma: u32,
        first: u32,
        nr: u32,
        write: bool,
    },
    /// CPU time the task spent since its previous event (on a CPU, user and kernel).
    Cpu {
        ns: u64,
    },
    /// The task reaped `child`'s process (wait4 returned it).
    Wait {
        child: u32,
    },
    Exit,
}

const OPS: &str = "exec, fork, clone, mmap, munmap, madvise, touch, cpu, wait, exit";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {msg}")]
pub struct TraceError {
    pub line: usize,
    pub msg: String,
}

fn err<T>(line: usize, msg: impl Into<String>) -> Result<T, TraceError> {
    Err(TraceError {
        line,
        msg: msg.into(),
    })
}

impl Trace {
    pub fn header_value(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The trace as its text form (what `parse` reads back).
    pub fn to_text(&self) -> String {
        let mut out = format!("{MAGIC} {FORMAT_VERSION}\n");
        for (k, v) in &self.header {
            let _ = writeln!(out, "{k} {v}");
        }
        out.push_str("begin\n");
        for e in &self.events {
            let _ = writeln!(out, "{e}");
        }
        let _ = writeln!(out, "end {}", self.events.len());
        out
    }

    /// Parse a trace, gzipped or not (decided by the gzip magic).
    pub fn parse_bytes(bytes: &[u8]) -> Result<Trace, TraceError> {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            match super::gzip::decompress(bytes) {
                Ok(text) => Trace::parse(&String::from_utf8_lossy(&text)),
                Err((partial, why)) => {
                    // Parse what came out: a bad line in it is the first problem; if it is
                    // fine, the stream's end is.
                    let text = String::from_utf8_lossy(&partial);
                    let complete = match text.rfind('\n') {
                        Some(i) => &text[..=i],
                        None => "",
                    };
                    let lines = complete.lines().count();
                    match Trace::parse(complete) {
                        Err(e) if e.line <= lines => Err(e),
                        _ => err(
                            lines + 1,
                            format!("truncated: the gzip stream ends here ({why})"),
                        ),
                    }
                }
            }
        } else {
            match std::str::from_utf8(bytes) {
                Ok(text) => Trace::parse(text),
                Err(e) => {
                    let line = bytes[..e.valid_up_to()]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count()
                        + 1;
                    err(line, "not UTF-8 text (nor gzip)")
                }
            }
        }
    }

    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end()));
        let mut trace = Trace::default();
        let magic_line = parse_magic(&mut lines)?;
        let begin_line = trace.parse_header(&mut lines, magic_line)?;
        let last = trace.parse_events(&mut lines, begin_line)?;
        if let Some((n, line)) = lines.find(|(_, l)| !l.is_empty() && !l.starts_with('#')) {
            return err(n, format!("expected nothing after `end`, found `{line}`"));
        }
        if trace.events.is_empty() {
            return err(
                last,
                "the trace has no events (expected at least an `exec`)",
            );
        }
        Ok(trace)
    }

    /// Header lines up to `begin`; returns the `begin` line's number.
    fn parse_header<'a>(
        &mut self,
        lines: &mut impl Iterator<Item = (usize, &'a str)>,
        magic_line: usize,
    ) -> Result<usize, TraceError> {
        let mut last = magic_line;
        loop {
            let Some((n, line)) = lines.next() else {
                return err(
                    last + 1,
                    "truncated: expected header lines and then `begin`, found the end of the file",
                );
            };
            last = n;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line == "begin" {
                return Ok(n);
            }
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            if key == "page_size" && value.trim() != PAGE_SIZE.to_string() {
                return err(
                    n,
                    format!(
                        "header `page_size`: found `{}`; allowed: {PAGE_SIZE}",
                        value.trim()
                    ),
                );
            }
            self.header
                .push((key.to_string(), value.trim().to_string()));
        }
    }

    /// Events up to `end N`, each checked against the ones before; returns the `end` line's
    /// number.
    fn parse_events<'a>(
        &mut self,
        lines: &mut impl Iterator<Item = (usize, &'a str)>,
        begin_line: usize,
    ) -> Result<usize, TraceError> {
        let mut check = Checker::default();
        let mut last = begin_line;
        for (n, line) in lines.by_ref() {
            last = n;
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(count) = line.strip_prefix("end") {
                check_end_count(n, line, count.trim(), self.events.len())?;
                return Ok(n);
            }
            let event = parse_event(n, line)?;
            if let Some(prev) = self.events.last() {
                if event.t_ns < prev.t_ns {
                    return err(
                        n,
                        format!(
                            "time {} ns is before the previous event's {} ns (events must be in time order)",
                            event.t_ns, prev.t_ns
                        ),
                    );
                }
            }
            check.apply(n, &event)?;
            self.events.push(event);
        }
        err(
            last + 1,
            "truncated: expected an event or `end N`, found the end of the file",
        )
    }
}

/// The magic line, `foliosim-trace VERSION`; returns its line number.
fn parse_magic<'a>(
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
) -> Result<usize, TraceError> {
    let (n, first) = lines.next().unwrap_or((1, ""));
    let mut words = first.split_whitespace();
    if words.next() != Some(MAGIC) {
        return err(
            n,
            format!("expected `{MAGIC} {FORMAT_VERSION}` (a foliosim trace), found `{first}`"),
        );
    }
    match words.next().map(str::parse::<u32>) {
        Some(Ok(FORMAT_VERSION)) if words.next().is_none() => Ok(n),
        Some(Ok(v)) => err(
            n,
            format!("trace format version {v}; this foliosim reads version {FORMAT_VERSION}"),
        ),
        _ => err(
            n,
            format!("expected `{MAGIC} {FORMAT_VERSION}`, found `{first}`"),
        ),
    }
}

/// `end N`: N must be the number of events read.
fn check_end_count(n: usize, line: &str, count: &str, events: usize) -> Result<(), TraceError> {
    match count.parse::<usize>() {
        Ok(c) if c == events => Ok(()),
        Ok(c) => err(
            n,
            format!("`end {c}` but the trace has {events} events: lines are missing or extra"),
        ),
        Err(_) => err(
            n,
            format!("expected `end N` (N: the number of events), found `{line}`"),
        ),
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.t_ns, self.task)?;
        match &self.kind {
            EventKind::Exec { name } => write!(f, "exec {name}"),
            EventKind::Fork { parent } => write!(f, "fork {parent}"),
            EventKind::Clone { parent } => write!(f, "clone {parent}"),
            EventKind::Mmap { vma, pages, kind } => {
                write!(f, "mmap {vma} {pages} {}", kind.name())
            }
            EventKind::Munmap { vma, first, nr } => write!(f, "munmap {vma} {first} {nr}"),
            EventKind::Madvise {
                vma,
                first,
                nr,
                advice,
            } => write!(f, "madvise {vma} {first} {nr} {}", advice.name()),
            EventKind::Touch {
                vma,
                first,
                nr,
                write,
            } => write!(
                f,
                "touch {vma} {first} {nr} {}",
                if *write { "w" } else { "r" }
            ),
            EventKind::Cpu { ns } => write!(f, "cpu {ns}"),
            EventKind::Wait { child } => write!(f, "wait {child}"),
            EventKind::Exit => write!(f, "exit"),
        }
    }
}

// One arm per event keyword with its field checks: a table reads better whole.
#[allow(clippy::too_many_lines)]
fn parse_event(n: usize, line: &str) -> Result<Event, TraceError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 3 {
        return err(
            n,
            format!("expected `TIME_NS TASK OP ARGS...` (OP one of {OPS}), found `{line}`"),
        );
    }
    let num = |i: usize, what: &str| -> Result<u64, TraceError> {
        words[i].parse::<u64>().or_else(|_| {
            err(
                n,
                format!(
                    "field {} ({what}): expected an unsigned integer, found `{}`",
                    i + 1,
                    words[i]
                ),
            )
        })
    };
    let num32 = |i: usize, what: &str| -> Result<u32, TraceError> {
        let v = num(i, what)?;
        u32::try_from(v).or_else(|_| {
            err(
                n,
                format!(
                    "field {} ({what}): {v} is too large (at most {})",
                    i + 1,
                    u32::MAX
                ),
            )
        })
    };
    let t_ns = num(0, "time in ns")?;
    if t_ns > MAX_TRACE_NS {
        return err(
            n,
            format!("field 1 (time in ns): {t_ns} is too large; allowed: 0 ..= {MAX_TRACE_NS}"),
        );
    }
    let task = num32(1, "task")?;
    if task == 0 {
        return err(n, "field 2 (task): tasks are numbered from 1, found 0");
    }
    let op = words[2];
    let args: &[&str] = match op {
        "exec" => &["name"],
        "fork" | "clone" => &["parent task"],
        "mmap" => &["vma", "pages", "kind"],
        "munmap" => &["vma", "first page", "pages"],
        "madvise" => &["vma", "first page", "pages", "advice"],
        "touch" => &["vma", "first page", "pages", "r or w"],
        "cpu" => &["ns"],
        "wait" => &["child task"],
        "exit" => &[],
        _ => {
            return err(
                n,
                format!("field 3 (op): expected one of {OPS}, found `{op}`"),
            )
        }
    };
    if words.len() != 3 + args.len() {
        return err(
            n,
            format!(
                "`{op}` takes {} argument(s) ({}), found {}: `{line}`",
                args.len(),
                if args.is_empty() {
                    "none".to_string()
                } else {
                    args.join(", ")
                },
                words.len() - 3
            ),
        );
    }
    let nonzero = |i: usize, what: &str| -> Result<u32, TraceError> {
        let v = num32(i, what)?;
        if v == 0 {
            return err(n, format!("field {} ({what}): must be at least 1", i + 1));
        }
        Ok(v)
    };
    let kind = match op {
        "exec" => EventKind::Exec {
            name: words[3].to_string(),
        },
        "fork" => EventKind::Fork {
            parent: num32(3, "parent task")?,
        },
        "clone" => EventKind::Clone {
            parent: num32(3, "parent task")?,
        },
        "mmap" => {
            let pages = nonzero(4, "pages")?;
            if pages > MAX_VMA_PAGES {
                return err(
                    n,
                    format!("field 5 (pages): {pages} pages; allowed: at most {MAX_VMA_PAGES} (1 TiB)"),
                );
            }
            EventKind::Mmap {
                vma: num32(3, "vma")?,
                pages,
                kind: VmaKind::ALL
                    .into_iter()
                    .find(|k| k.name() == words[5])
                    .map_or_else(
                        || {
                            err(
                                n,
                                format!(
                                    "field 6 (kind): expected one of anon, shared-anon, file, shared-file, found `{}`",
                                    words[5]
                                ),
                            )
                        },
                        Ok,
                    )?,
            }
        }
        "munmap" => EventKind::Munmap {
            vma: num32(3, "vma")?,
            first: num32(4, "first page")?,
            nr: nonzero(5, "pages")?,
        },
        "madvise" => EventKind::Madvise {
            vma: num32(3, "vma")?,
            first: num32(4, "first page")?,
            nr: nonzero(5, "pages")?,
            advice: TraceAdvice::ALL
                .into_iter()
                .find(|a| a.name() == words[6])
                .map_or_else(
                    || {
                        err(
                            n,
                            format!(
                                "field 7 (advice): expected one of dontneed, free, pageout, cold, hugepage, nohugepage, found `{}`",
                                words[6]
                            ),
                        )
                    },
                    Ok,
                )?,
        },
        "touch" => EventKind::Touch {
            vma: num32(3, "vma")?,
            first: num32(4, "first page")?,
            nr: nonzero(5, "pages")?,
            write: match words[6] {
                "w" => true,
                "r" => false,
                other => {
                    return err(
                        n,
                        format!("field 7: expected `r` (load) or `w` (store), found `{other}`"),
                    )
                }
            },
        },
        "cpu" => EventKind::Cpu {
            ns: match num(3, "ns")? {
                ns if ns > MAX_TRACE_NS => {
                    return err(
                        n,
                        format!("field 4 (cpu ns): {ns} is too large; allowed: 0 ..= {MAX_TRACE_NS}"),
                    )
                }
                ns => ns,
            },
        },
        "wait" => EventKind::Wait {
            child: num32(3, "child task")?,
        },
        _ => EventKind::Exit,
    };
    Ok(Event { t_ns, task, kind })
}

/// Unmapped page ranges of a VMA: sorted, disjoint, [start, end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holes(pub Vec<(u32, u32)>);

impl Holes {
    pub fn add(&mut self, start: u32, end: u32) {
        let mut merged = Vec::with_capacity(self.0.len() + 1);
        let (mut s, mut e) = (start, end);
        for &(a, b) in &self.0 {
            if b < s || a > e {
                merged.push((a, b));
            } else {
                s = s.min(a);
                e = e.max(b);
            }
        }
        merged.push((s, e));
        merged.sort_unstable();
        self.0 = merged;
    }

    /// The first hole overlapping [start, end).
    pub fn overlap(&self, start: u32, end: u32) -> Option<(u32, u32)> {
        self.0.iter().copied().find(|&(a, b)| a < end && b > start)
    }

    /// [start, end) less the holes, as ranges.
    pub fn mapped_parts(&self, start: u32, end: u32) -> Vec<(u32, u32)> {
        let mut out = vec![];
        let mut at = start;
        for &(a, b) in &self.0 {
            if b <= at || a >= end {
                continue;
            }
            if a > at {
                out.push((at, a));
            }
            at = at.max(b);
        }
        if at < end {
            out.push((at, end));
        }
        out
    }

    pub fn covers(&self, start: u32, end: u32) -> bool {
        self.mapped_parts(start, end).is_empty()
    }
}

/// A VMA as the checker (and the replay) track it.
#[derive(Debug, Clone)]
pub struct VmaState {
    pub pages: u32,
    pub kind: VmaKind,
    pub holes: Holes,
}

#[derive(Debug, Clone, Default)]
struct Image {
    vmas: BTreeMap<u32, VmaState>,
    threads: BTreeSet<u32>,
}

#[derive(Debug, Clone)]
struct TaskState {
    image: usize,
    exited: bool,
    /// Started a process (exec or fork), so it can be waited for.
    leader: bool,
}

/// The semantic checks of a trace, line by line.
#[derive(Default)]
struct Checker {
    tasks: BTreeMap<u32, TaskState>,
    images: Vec<Image>,
    /// Line of each VMA's mmap.
    vma_lines: BTreeMap<u32, usize>,
    waited: BTreeSet<u32>,
    /// CPU time of each task so far (`cpu` lines summed).
    cpu_ns: BTreeMap<u32, u64>,
}

impl Checker {
    fn running(&self, n: usize, task: u32, what: &str) -> Result<usize, TraceError> {
        match self.tasks.get(&task) {
            None => err(
                n,
                format!("{what} task {task}, which has not started (expected an `exec`, `fork` or `clone` line for it first)"),
            ),
            Some(t) if t.exited => err(n, format!("{what} task {task}, which has exited")),
            Some(t) => Ok(t.image),
        }
    }

    fn start(&mut self, n: usize, task: u32, image: usize, leader: bool) -> Result<(), TraceError> {
        if self.tasks.contains_key(&task) {
            return err(
                n,
                format!("task {task} started twice (task numbers are not reused)"),
            );
        }
        self.images[image].threads.insert(task);
        self.tasks.insert(
            task,
            TaskState {
                image,
                exited: false,
                leader,
            },
        );
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn vma<'a>(
        images: &'a mut [Image],
        n: usize,
        task: u32,
        image: usize,
        vma: u32,
        first: u32,
        nr: u32,
        what: &str,
    ) -> Result<&'a mut VmaState, TraceError> {
        let Some(v) = images[image].vmas.get_mut(&vma) else {
            return err(
                n,
                format!("{what} of vma {vma}, which task {task}'s process has not mapped (or has unmapped)"),
            );
        };
        let end = first as u64 + nr as u64;
        if end > v.pages as u64 {
            return err(
                n,
                format!(
                    "{what} of pages {first}..{end} of vma {vma}, which has {} pages",
                    v.pages
                ),
            );
        }
        Ok(v)
    }

    // One arm per event kind with its checks: a table reads better whole.
    #[allow(clippy::too_many_lines)]
    fn apply(&mut self, n: usize, e: &Event) -> Result<(), TraceError> {
        let task = e.task;
        match &e.kind {
            EventKind::Exec { .. } => match self.tasks.get(&task) {
                None => {
                    self.images.push(Image::default());
                    self.start(n, task, self.images.len() - 1, true)?;
                }
                Some(_) => {
                    let old = self.running(n, task, "exec of")?;
                    if self.images[old].threads.len() > 1 {
                        return err(
                                n,
                                format!("exec of task {task} while other threads of its process run (expected their `exit` lines first)"),
                            );
                    }
                    self.images[old].threads.clear();
                    self.images[old].vmas.clear();
                    self.images.push(Image::default());
                    let new = self.images.len() - 1;
                    self.images[new].threads.insert(task);
                    let t = self.tasks.get_mut(&task).unwrap();
                    t.image = new;
                    t.leader = true;
                }
            },
            EventKind::Fork { parent } | EventKind::Clone { parent } => {
                let image = self.running(n, *parent, "fork or clone from")?;
                if let EventKind::Fork { .. } = e.kind {
                    let copy = Image {
                        vmas: self.images[image].vmas.clone(),
                        threads: BTreeSet::new(),
                    };
                    self.images.push(copy);
                    self.start(n, task, self.images.len() - 1, true)?;
                } else {
                    self.start(n, task, image, false)?;
                }
            }
            EventKind::Mmap { vma, pages, kind } => {
                let image = self.running(n, task, "mmap by")?;
                if let Some(l) = self.vma_lines.get(vma) {
                    return err(
                        n,
                        format!("vma {vma} mapped again (first at line {l}; vma numbers are not reused)"),
                    );
                }
                self.vma_lines.insert(*vma, n);
                self.images[image].vmas.insert(
                    *vma,
                    VmaState {
                        pages: *pages,
                        kind: *kind,
                        holes: Holes::default(),
                    },
                );
            }
            EventKind::Munmap { vma, first, nr } => {
                let image = self.running(n, task, "munmap by")?;
                let v = Self::vma(
                    &mut self.images,
                    n,
                    task,
                    image,
                    *vma,
                    *first,
                    *nr,
                    "munmap",
                )?;
                v.holes.add(*first, first + nr);
                if v.holes.covers(0, v.pages) {
                    self.images[image].vmas.remove(vma);
                }
            }
            EventKind::Madvise { vma, first, nr, .. } | EventKind::Touch { vma, first, nr, .. } => {
                let what = if matches!(e.kind, EventKind::Touch { .. }) {
                    "touch"
                } else {
                    "madvise"
                };
                let image = self.running(n, task, &format!("{what} by"))?;
                let v = Self::vma(&mut self.images, n, task, image, *vma, *first, *nr, what)?;
                if let Some((a, b)) = v.holes.overlap(*first, first + nr) {
                    return err(
                        n,
                        format!(
                            "{what} of pages {first}..{} of vma {vma}: pages {a}..{b} are unmapped",
                            first + nr
                        ),
                    );
                }
            }
            EventKind::Cpu { ns } => {
                self.running(n, task, "cpu time of")?;
                let total = self.cpu_ns.entry(task).or_default();
                *total += ns; // each at most MAX_TRACE_NS, and so is the sum before it
                if *total > MAX_TRACE_NS {
                    return err(
                        n,
                        format!("cpu time of task {task}: its `cpu` lines sum to {total} ns; allowed: at most {MAX_TRACE_NS} ns in all"),
                    );
                }
            }
            EventKind::Wait { child } => {
                self.running(n, task, "wait by")?;
                match self.tasks.get(child) {
                    Some(c) if c.exited && c.leader => {}
                    Some(c) if !c.leader => {
                        return err(
                            n,
                            format!("wait for task {child}, a thread (wait takes a process: a task that forked or exec'd)"),
                        )
                    }
                    _ => {
                        return err(
                            n,
                            format!("wait for task {child}, which has not exited (expected its `exit` line first)"),
                        )
                    }
                }
                if !self.waited.insert(*child) {
                    return err(n, format!("task {child} waited for twice"));
                }
            }
            EventKind::Exit => {
                let image = self.running(n, task, "exit of")?;
                self.images[image].threads.remove(&task);
                if self.images[image].threads.is_empty() {
                    self.images[image].vmas.clear();
                }
                self.tasks.get_mut(&task).unwrap().exited = true;
            }
        }
        Ok(())
    }
}
