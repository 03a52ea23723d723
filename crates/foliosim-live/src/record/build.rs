//! From perf records to a trace: follow every task's address space (mmap, munmap, mremap,
//! brk, madvise from the syscalls; what exec mapped from the MMAP2 records between exec and the
//! return of execve), turn each fault into a touch of a VMA page, and account the CPU time
//! between events from context switches. Then keep only the VMAs that were touched, trimmed to
//! the 2 MiB blocks around what was used (a 1 GiB PROT_NONE reservation of which 3 pages are
//! used becomes one 2 MiB VMA).

use super::perf::{RawEvent, RawKind};
use foliosim::workload::trace::{Event, EventKind, TraceAdvice, VmaKind};
use std::collections::{BTreeMap, BTreeSet};

const PAGE: u64 = 4096;
/// A fault in no known mapping starts an anonymous VMA of this block (the stack, the
/// program's bss: what exec set up without telling).
const SYNTHETIC_BLOCK: u64 = 2 << 20;
/// CPU time accumulated before a run of touches is cut to say it.
const CPU_SLICE_NS: u64 = 1_000_000;
/// Less CPU time than this waits for the next event to say it (keeps traces short).
const MIN_CPU_LINE_NS: u64 = 10_000;

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct BuildStats {
    pub faults: u64,
    /// Faults in mappings the trace keeps (not vdso, not unknown loads).
    pub faults_kept: u64,
    /// Loads from addresses in no known mapping (code of the program itself, vdso data).
    pub faults_unknown_loads: u64,
    pub syscalls: u64,
    pub tasks: u32,
    pub processes: u32,
    pub vmas_mapped: u32,
    pub vmas_kept: u32,
    /// Anonymous VMAs made up for stores to memory no record mapped (stack, bss).
    pub vmas_synthetic: u32,
    /// Records of tasks that never started in the trace (their fork was lost).
    pub records_of_unknown_tasks: u64,
}

#[derive(Clone)]
struct Region {
    end: u64,
    /// Trace VMA id; None for special mappings ([vdso], [vvar]) whose faults are dropped.
    vma: Option<u32>,
    /// Address of the VMA's page 0.
    base: u64,
}

#[derive(Clone, Default)]
struct Mm {
    regions: BTreeMap<u64, Region>,
    brk: Option<u64>,
    threads: BTreeSet<u32>,
}

struct Task {
    id: u32,
    pid: u32,
    mm: usize,
    leader: bool,
    alive: bool,
    /// Between exec and execve's return: MMAP2 records are what exec mapped.
    exec_setup: bool,
    enter: Option<(i64, [u64; 6])>,
    on_cpu_since: Option<u64>,
    cpu_ns: u64,
    /// Index in `out` of its last event, while it may still grow (a run of touches).
    last_touch: Option<usize>,
}

struct VmaInfo {
    kind: VmaKind,
    /// Pages currently faulted in (for mremap moving them).
    resident: Vec<u64>,
}

impl VmaInfo {
    fn set(&mut self, page: u32, on: bool) {
        let (w, b) = (page as usize / 64, page % 64);
        if w >= self.resident.len() {
            if !on {
                return;
            }
            self.resident.resize(w + 1, 0);
        }
        if on {
            self.resident[w] |= 1 << b;
        } else {
            self.resident[w] &= !(1 << b);
        }
    }
    fn get(&self, page: u32) -> bool {
        self.resident
            .get(page as usize / 64)
            .is_some_and(|w| w & (1 << (page % 64)) != 0)
    }
}

struct Builder {
    t0: u64,
    out: Vec<Event>,
    tasks: BTreeMap<u32, Task>,
    mms: Vec<Mm>,
    vmas: BTreeMap<u32, VmaInfo>,
    next_task: u32,
    next_vma: u32,
    waited: BTreeSet<u32>,
    root_pid: u32,
    root_name: String,
    stats: BuildStats,
}

fn page_up(x: u64) -> u64 {
    x.div_ceil(PAGE) * PAGE
}

/// Linux's MAP_SHARED / MAP_SHARED_VALIDATE and MAP_ANONYMOUS (asm-generic/mman-common.h).
fn map_kind(flags: u64, anonymous: bool) -> VmaKind {
    let shared = matches!(flags & 3, 1 | 3);
    match (anonymous, shared) {
        (true, false) => VmaKind::Anon,
        (true, true) => VmaKind::SharedAnon,
        (false, false) => VmaKind::File,
        (false, true) => VmaKind::SharedFile,
    }
}

impl Builder {
    fn t(&self, time: u64) -> u64 {
        time.saturating_sub(self.t0)
    }

    /// Charge the task's CPU time up to `time` (it is on a CPU now, as it acts).
    fn account(&mut self, tid: u32, time: u64) {
        if let Some(t) = self.tasks.get_mut(&tid) {
            if let Some(since) = t.on_cpu_since {
                t.cpu_ns += time.saturating_sub(since);
            }
            t.on_cpu_since = Some(time);
        }
    }

    fn emit(&mut self, tid: u32, time: u64, kind: EventKind) {
        let t_ns = self.t(time);
        let task = self.tasks.get_mut(&tid).expect("emit for a known task");
        let id = task.id;
        // Small amounts ride along to the next event, except where tasks meet.
        let meets = matches!(
            kind,
            EventKind::Exit
                | EventKind::Exec { .. }
                | EventKind::Fork { .. }
                | EventKind::Clone { .. }
                | EventKind::Wait { .. }
        );
        if task.cpu_ns >= MIN_CPU_LINE_NS || (meets && task.cpu_ns > 0) {
            let ns = std::mem::take(&mut task.cpu_ns);
            self.out.push(Event {
                t_ns,
                task: id,
                kind: EventKind::Cpu { ns },
            });
        }
        let touch = matches!(kind, EventKind::Touch { .. });
        self.out.push(Event {
            t_ns,
            task: id,
            kind,
        });
        let at = self.out.len() - 1;
        self.tasks.get_mut(&tid).unwrap().last_touch = touch.then_some(at);
    }

    fn touch(&mut self, tid: u32, time: u64, vma: u32, page: u32, write: bool) {
        let task = &self.tasks[&tid];
        if let (Some(i), true) = (task.last_touch, task.cpu_ns < CPU_SLICE_NS) {
            if let EventKind::Touch {
                vma: v,
                first,
                nr,
                write: w,
            } = &mut self.out[i].kind
            {
                if *v == vma && *w == write && *first + *nr == page {
                    *nr += 1;
                    return;
                }
            }
        }
        self.emit(
            tid,
            time,
            EventKind::Touch {
                vma,
                first: page,
                nr: 1,
                write,
            },
        );
    }

    fn new_task(&mut self, tid: u32, pid: u32, mm: usize, leader: bool, since: Option<u64>) {
        self.next_task += 1;
        self.stats.tasks += 1;
        self.mms[mm].threads.insert(tid);
        self.tasks.insert(
            tid,
            Task {
                id: self.next_task,
                pid,
                mm,
                leader,
                alive: true,
                exec_setup: false,
                enter: None,
                on_cpu_since: since,
                cpu_ns: 0,
                last_touch: None,
            },
        );
    }

    fn live(&self, tid: u32) -> bool {
        self.tasks.get(&tid).is_some_and(|t| t.alive)
    }

    /// The root starts with its first record (its exec turned the events on).
    fn ensure_root(&mut self, e: &RawEvent) {
        if e.tid == self.root_pid && !self.tasks.contains_key(&e.tid) {
            self.t0 = e.time;
            self.mms.push(Mm::default());
            self.stats.processes += 1;
            let mm = self.mms.len() - 1;
            self.new_task(e.tid, e.pid, mm, true, Some(e.time));
            let name = match &e.kind {
                RawKind::Exec { comm } => comm.clone(),
                _ => self.root_name.clone(),
            };
            self.tasks.get_mut(&e.tid).unwrap().exec_setup = true;
            self.emit(
                e.tid,
                e.time,
                EventKind::Exec {
                    name: sanitize(&name),
                },
            );
        }
    }

    fn exit(&mut self, tid: u32, time: u64) {
        if !self.live(tid) {
            return;
        }
        self.account(tid, time);
        self.emit(tid, time, EventKind::Exit);
        let t = self.tasks.get_mut(&tid).unwrap();
        t.alive = false;
        let mm = t.mm;
        self.mms[mm].threads.remove(&tid);
    }

    /// Unmap [start, end) of the task's mm: each VMA piece it covers is a munmap.
    fn unmap(&mut self, tid: u32, time: u64, start: u64, end: u64) {
        let mm = self.tasks[&tid].mm;
        let hits: Vec<(u64, Region)> = self.mms[mm]
            .regions
            .range(..end)
            .filter(|(_, r)| r.end > start)
            .map(|(&s, r)| (s, r.clone()))
            .collect();
        for (s, r) in hits {
            let (a, b) = (s.max(start), r.end.min(end));
            let regions = &mut self.mms[mm].regions;
            regions.remove(&s);
            if s < a {
                regions.insert(
                    s,
                    Region {
                        end: a,
                        ..r.clone()
                    },
                );
            }
            if b < r.end {
                regions.insert(b, r.clone());
            }
            if let Some(vma) = r.vma {
                let (first, last) = (((a - r.base) / PAGE) as u32, ((b - r.base) / PAGE) as u32);
                if let Some(v) = self.vmas.get_mut(&vma) {
                    for p in first..last {
                        v.set(p, false);
                    }
                }
                self.emit(
                    tid,
                    time,
                    EventKind::Munmap {
                        vma,
                        first,
                        nr: last - first,
                    },
                );
            }
        }
    }

    /// A new mapping [start, end) in the task's mm (replacing what was there).
    fn map(
        &mut self,
        tid: u32,
        time: u64,
        start: u64,
        end: u64,
        kind: Option<VmaKind>,
    ) -> Option<u32> {
        if end <= start {
            return None;
        }
        self.unmap(tid, time, start, end);
        let mm = self.tasks[&tid].mm;
        let vma = kind.map(|kind| {
            self.next_vma += 1;
            self.stats.vmas_mapped += 1;
            let pages = ((end - start) / PAGE).min(u32::MAX as u64) as u32;
            self.vmas.insert(
                self.next_vma,
                VmaInfo {
                    kind,
                    resident: Vec::new(),
                },
            );
            self.emit(
                tid,
                time,
                EventKind::Mmap {
                    vma: self.next_vma,
                    pages,
                    kind,
                },
            );
            self.next_vma
        });
        self.mms[mm].regions.insert(
            start,
            Region {
                end,
                vma,
                base: start,
            },
        );
        vma
    }

    fn lookup(&self, tid: u32, addr: u64) -> Option<&Region> {
        let mm = self.tasks[&tid].mm;
        self.mms[mm]
            .regions
            .range(..=addr)
            .next_back()
            .map(|(_, r)| r)
            .filter(|r| r.end > addr)
    }

    fn fault(&mut self, tid: u32, time: u64, addr: u64, write: bool) {
        self.stats.faults += 1;
        let addr = addr & !(PAGE - 1);
        let region = match self.lookup(tid, addr) {
            Some(r) => r.clone(),
            None if !write => {
                self.stats.faults_unknown_loads += 1;
                return;
            }
            None => {
                // The gap around the address within its 2 MiB block.
                let mm = self.tasks[&tid].mm;
                let block = addr & !(SYNTHETIC_BLOCK - 1);
                let regions = &self.mms[mm].regions;
                let lo = regions
                    .range(..addr)
                    .next_back()
                    .map_or(block, |(_, r)| r.end.max(block));
                let hi = regions
                    .range(addr..)
                    .next()
                    .map_or(block + SYNTHETIC_BLOCK, |(&s, _)| {
                        s.min(block + SYNTHETIC_BLOCK)
                    });
                self.stats.vmas_synthetic += 1;
                self.map(tid, time, lo, hi, Some(VmaKind::Anon));
                self.lookup(tid, addr).expect("just mapped").clone()
            }
        };
        let Some(vma) = region.vma else {
            return;
        };
        self.stats.faults_kept += 1;
        let page = ((addr - region.base) / PAGE) as u32;
        if let Some(v) = self.vmas.get_mut(&vma) {
            v.set(page, true);
        }
        self.touch(tid, time, vma, page, write);
    }

    fn syscall_exit(&mut self, tid: u32, time: u64, nr: i64, ret: i64) {
        let enter = self.tasks.get_mut(&tid).and_then(|t| t.enter.take());
        if nr == libc::SYS_execve || nr == libc::SYS_execveat {
            // Its entry was in the old image (or before the events were on).
            self.tasks.get_mut(&tid).unwrap().exec_setup = false;
            return;
        }
        let Some((enter_nr, a)) = enter.filter(|(n, _)| *n == nr) else {
            return;
        };
        let _ = enter_nr;
        let failed = (-4095..0).contains(&ret);
        let mm = self.tasks[&tid].mm;
        match nr {
            libc::SYS_mmap if !failed => {
                let start = ret as u64;
                let kind = map_kind(a[3], a[3] & libc::MAP_ANONYMOUS as u64 != 0);
                self.map(tid, time, start, start + page_up(a[1]), Some(kind));
            }
            libc::SYS_munmap if !failed => self.unmap(tid, time, a[0], a[0] + page_up(a[1])),
            libc::SYS_mremap if !failed => self.mremap(tid, time, a, ret as u64),
            libc::SYS_madvise if !failed => {
                let advice = match a[2] {
                    9 | 24 => Some(TraceAdvice::Dontneed), // MADV_REMOVE, MADV_DONTNEED_LOCKED
                    v => TraceAdvice::from_linux(v),
                };
                if let Some(advice) = advice {
                    self.madvise(tid, time, a[0], a[0] + page_up(a[1]), advice);
                }
            }
            libc::SYS_brk => {
                let new = ret as u64;
                match self.mms[mm].brk {
                    Some(old) => {
                        let (o, n) = (page_up(old), page_up(new));
                        if n > o {
                            self.map(tid, time, o, n, Some(VmaKind::Anon));
                        } else if n < o {
                            self.unmap(tid, time, n, o);
                        }
                        self.mms[mm].brk = Some(new);
                    }
                    // The first brk (brk(0) from the C library) says where the heap starts.
                    None => self.mms[mm].brk = (a[0] == 0).then_some(new),
                }
            }
            libc::SYS_wait4 if ret > 0 => {
                let child = ret as u32;
                let leader = self.tasks.get(&child).is_some_and(|t| t.leader);
                if leader && !self.waited.contains(&child) {
                    // Its exit record may have been lost: it has exited by now.
                    self.exit(child, time);
                    self.waited.insert(child);
                    let child_id = self.tasks[&child].id;
                    self.emit(tid, time, EventKind::Wait { child: child_id });
                }
            }
            _ => {}
        }
    }

    fn madvise(&mut self, tid: u32, time: u64, start: u64, end: u64, advice: TraceAdvice) {
        let mm = self.tasks[&tid].mm;
        let hits: Vec<(u64, Region)> = self.mms[mm]
            .regions
            .range(..end)
            .filter(|(_, r)| r.end > start)
            .map(|(&s, r)| (s, r.clone()))
            .collect();
        for (s, r) in hits {
            let Some(vma) = r.vma else { continue };
            let (a, b) = (s.max(start), r.end.min(end));
            let (first, last) = (((a - r.base) / PAGE) as u32, ((b - r.base) / PAGE) as u32);
            if last <= first {
                continue;
            }
            if matches!(advice, TraceAdvice::Dontneed | TraceAdvice::Free) {
                if let Some(v) = self.vmas.get_mut(&vma) {
                    for p in first..last {
                        v.set(p, false);
                    }
                }
            }
            self.emit(
                tid,
                time,
                EventKind::Madvise {
                    vma,
                    first,
                    nr: last - first,
                    advice,
                },
            );
        }
    }

    /// mremap(old, old_len, new_len, flags, new_addr) returned `new`.
    fn mremap(&mut self, tid: u32, time: u64, a: [u64; 6], new: u64) {
        let (old, old_len, new_len) = (a[0], page_up(a[1]), page_up(a[2]));
        let kind = self
            .lookup(tid, old)
            .and_then(|r| r.vma)
            .and_then(|v| self.vmas.get(&v))
            .map_or(VmaKind::Anon, |v| v.kind);
        if new == old {
            if new_len > old_len {
                self.map(tid, time, old + old_len, old + new_len, Some(kind));
            } else if new_len < old_len {
                self.unmap(tid, time, old + new_len, old + old_len);
            }
            return;
        }
        // Moved: its resident pages come along (the kernel moves the page tables).
        let mut moved = vec![];
        let mut at = old;
        while at < old + old_len.min(new_len) {
            if let Some(r) = self.lookup(tid, at).cloned() {
                if let Some(v) = r.vma.and_then(|v| self.vmas.get(&v)) {
                    if v.get(((at - r.base) / PAGE) as u32) {
                        moved.push(((at - old) / PAGE) as u32);
                    }
                }
            }
            at += PAGE;
        }
        let Some(vma) = self.map(tid, time, new, new + new_len, Some(kind)) else {
            return;
        };
        if a[3] & 4 == 0 {
            // Without MREMAP_DONTUNMAP the old range goes.
            self.unmap(tid, time, old, old + old_len);
        }
        for p in moved {
            if let Some(v) = self.vmas.get_mut(&vma) {
                v.set(p, true);
            }
            self.touch(tid, time, vma, p, true);
        }
    }

    fn event(&mut self, e: &RawEvent) {
        self.ensure_root(e);
        let tid = e.tid;
        match &e.kind {
            RawKind::Fork { ppid, ptid } => self.fork(e, *ppid, *ptid),
            RawKind::Exit => self.exit(tid, e.time),
            _ if !self.live(tid) => self.stats.records_of_unknown_tasks += 1,
            RawKind::Exec { comm } => self.exec(tid, e.time, comm),
            RawKind::Mmap {
                addr,
                len,
                flags,
                name,
            } => {
                if !self.tasks[&tid].exec_setup {
                    return; // The syscall's exit maps it (records of merged VMAs overlap).
                }
                let special =
                    name.starts_with('[') && !matches!(name.as_str(), "[heap]" | "[stack]");
                let anonymous =
                    name.is_empty() || name.starts_with("//anon") || name.starts_with('[');
                let kind = (!special).then(|| map_kind(*flags as u64, anonymous));
                self.map(tid, e.time, *addr, addr + page_up(*len), kind);
            }
            RawKind::SysEnter { nr, args } => {
                self.stats.syscalls += 1;
                self.account(tid, e.time);
                self.tasks.get_mut(&tid).unwrap().enter = Some((*nr, *args));
            }
            RawKind::SysExit { nr, ret } => {
                self.account(tid, e.time);
                self.syscall_exit(tid, e.time, *nr, *ret);
            }
            RawKind::Fault { addr, write } => {
                self.account(tid, e.time);
                self.fault(tid, e.time, *addr, *write);
            }
            RawKind::SwitchIn => {
                self.tasks.get_mut(&tid).unwrap().on_cpu_since = Some(e.time);
            }
            RawKind::SwitchOut => {
                self.account(tid, e.time);
                self.tasks.get_mut(&tid).unwrap().on_cpu_since = None;
            }
        }
    }

    /// A new task: a thread of its parent's process, or a process with a copy of its mm.
    fn fork(&mut self, e: &RawEvent, ppid: u32, ptid: u32) {
        let tid = e.tid;
        if self.live(tid) {
            return; // The same fork, seen by another CPU's buffer.
        }
        let parent = if self.live(ptid) {
            ptid
        } else if let Some((&p, _)) = self.tasks.iter().find(|(_, t)| t.alive && t.pid == ppid) {
            p
        } else {
            self.stats.records_of_unknown_tasks += 1;
            return;
        };
        self.account(parent, e.time);
        let parent_id = self.tasks[&parent].id;
        let pmm = self.tasks[&parent].mm;
        if e.pid == ppid {
            self.new_task(tid, e.pid, pmm, false, None);
            self.emit(tid, e.time, EventKind::Clone { parent: parent_id });
        } else {
            let mut copy = self.mms[pmm].clone();
            copy.threads.clear();
            self.mms.push(copy);
            self.stats.processes += 1;
            let mm = self.mms.len() - 1;
            self.new_task(tid, e.pid, mm, true, None);
            self.emit(tid, e.time, EventKind::Fork { parent: parent_id });
        }
    }

    /// execve: the task's other threads exit and it leads a new, empty mm. The exec that
    /// started a task (execve has not returned) only names it.
    fn exec(&mut self, tid: u32, time: u64, comm: &str) {
        if self.tasks[&tid].exec_setup {
            let id = self.tasks[&tid].id;
            if let Some(EventKind::Exec { name }) = self
                .out
                .iter_mut()
                .rev()
                .find(|ev| ev.task == id && matches!(ev.kind, EventKind::Exec { .. }))
                .map(|ev| &mut ev.kind)
            {
                *name = sanitize(comm);
            }
            return;
        }
        self.account(tid, time);
        let mm = self.tasks[&tid].mm;
        let others: Vec<u32> = self.mms[mm]
            .threads
            .iter()
            .copied()
            .filter(|&t| t != tid)
            .collect();
        for t in others {
            self.exit(t, time);
        }
        self.mms[mm].threads.clear();
        self.mms.push(Mm::default());
        self.stats.processes += 1;
        let new = self.mms.len() - 1;
        self.mms[new].threads.insert(tid);
        let t = self.tasks.get_mut(&tid).unwrap();
        t.mm = new;
        t.leader = true;
        t.exec_setup = true;
        self.emit(
            tid,
            time,
            EventKind::Exec {
                name: sanitize(comm),
            },
        );
    }
}

/// A command name as one word of a trace line.
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() {
        "?".into()
    } else {
        s
    }
}

/// The trace events of a recording of process `root_pid` (started as `root_name`).
pub fn build(events: &[RawEvent], root_pid: u32, root_name: &str) -> (Vec<Event>, BuildStats) {
    let mut b = Builder {
        t0: 0,
        out: vec![],
        tasks: BTreeMap::new(),
        mms: vec![],
        vmas: BTreeMap::new(),
        next_task: 0,
        next_vma: 0,
        waited: BTreeSet::new(),
        root_pid,
        root_name: root_name.to_string(),
        stats: BuildStats::default(),
    };
    for e in events {
        if b.tasks.is_empty() && e.tid != root_pid {
            continue; // Before the root's exec (nothing should be there).
        }
        b.event(e);
    }
    // CPU time after the last event of tasks that did not exit is dropped.
    let mut stats = b.stats;
    let out = keep_touched(b.out, &mut stats);
    (out, stats)
}

/// Drop VMAs nobody touched, trim the others to the 2 MiB blocks around their used pages, and
/// number them from 1 in order of mapping.
fn keep_touched(events: Vec<Event>, stats: &mut BuildStats) -> Vec<Event> {
    const BLOCK: u32 = 512;
    let mut used: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for e in &events {
        if let EventKind::Touch { vma, first, nr, .. } = e.kind {
            let r = used.entry(vma).or_insert((first, first + nr));
            r.0 = r.0.min(first);
            r.1 = r.1.max(first + nr);
        }
    }
    for e in &events {
        if let EventKind::Madvise { vma, first, nr, .. } = e.kind {
            if let Some(r) = used.get_mut(&vma) {
                r.0 = r.0.min(first);
                r.1 = r.1.max(first + nr);
            }
        }
    }
    // VMA -> (new id, first page kept, pages kept).
    let mut keep: BTreeMap<u32, (u32, u32, u32)> = BTreeMap::new();
    let mut next = 0;
    let mut out = Vec::with_capacity(events.len());
    for mut e in events {
        let keep_range = |keep: &BTreeMap<u32, (u32, u32, u32)>, vma: u32, first: u32, nr: u32| {
            let &(id, base, pages) = keep.get(&vma)?;
            let (a, b) = (first.max(base), (first + nr).min(base + pages));
            (a < b).then_some((id, a - base, b - a))
        };
        match &mut e.kind {
            EventKind::Mmap { vma, pages, .. } => {
                let Some(&(lo, hi)) = used.get(vma) else {
                    continue;
                };
                let base = lo / BLOCK * BLOCK;
                let end = (hi.div_ceil(BLOCK) * BLOCK).min(*pages);
                next += 1;
                keep.insert(*vma, (next, base, end - base));
                *vma = next;
                *pages = end - base;
            }
            EventKind::Munmap { vma, first, nr }
            | EventKind::Madvise { vma, first, nr, .. }
            | EventKind::Touch { vma, first, nr, .. } => {
                let Some((id, f, n)) = keep_range(&keep, *vma, *first, *nr) else {
                    continue;
                };
                (*vma, *first, *nr) = (id, f, n);
            }
            _ => {}
        }
        out.push(e);
    }
    stats.vmas_kept = next;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim::workload::trace::Trace;

    fn ev(time: u64, pid: u32, tid: u32, kind: RawKind) -> RawEvent {
        RawEvent {
            time,
            pid,
            tid,
            kind,
        }
    }

    fn sys(time: u64, tid: u32, nr: i64, args: [u64; 6], ret: i64) -> [RawEvent; 2] {
        [
            ev(time, tid, tid, RawKind::SysEnter { nr, args }),
            ev(time + 1, tid, tid, RawKind::SysExit { nr, ret }),
        ]
    }

    fn fault(time: u64, tid: u32, addr: u64) -> RawEvent {
        ev(time, tid, tid, RawKind::Fault { addr, write: true })
    }

    #[test]
    fn a_recording_becomes_a_trace_the_parser_accepts() {
        let base = 0x7f00_0000_0000u64;
        let mut e = vec![ev(
            100,
            10,
            10,
            RawKind::Exec {
                comm: "python3".into(),
            },
        )];
        // mmap 1 GiB anon, touch 3 pages, munmap it.
        e.extend(sys(
            200,
            10,
            libc::SYS_mmap,
            [0, 1 << 30, 3, 0x22, u64::MAX, 0],
            base as i64,
        ));
        for (i, p) in [0u64, 1, 2].iter().enumerate() {
            e.push(fault(300 + i as u64, 10, base + p * PAGE + 8));
        }
        // A store to the stack: nothing mapped it.
        e.push(fault(400, 10, 0x7ffd_0000_1000));
        // A load of the program's own code: dropped.
        e.push(ev(
            401,
            10,
            10,
            RawKind::Fault {
                addr: 0x40_1000,
                write: false,
            },
        ));
        // brk(0), then grow by 3 pages, touch one.
        e.extend(sys(500, 10, libc::SYS_brk, [0; 6], 0x60_0000));
        e.extend(sys(
            510,
            10,
            libc::SYS_brk,
            [0x60_3000, 0, 0, 0, 0, 0],
            0x60_3000,
        ));
        e.push(fault(520, 10, 0x60_1000));
        // fork, the child touches the parent's mapping, exits; the parent waits.
        e.push(ev(600, 11, 11, RawKind::Fork { ppid: 10, ptid: 10 }));
        e.push(fault(610, 11, base + 5 * PAGE));
        e.push(ev(620, 11, 11, RawKind::Exit));
        e.extend(sys(630, 10, libc::SYS_wait4, [11, 0, 0, 0, 0, 0], 11));
        e.extend(sys(
            700,
            10,
            libc::SYS_munmap,
            [base, 1 << 30, 0, 0, 0, 0],
            0,
        ));
        e.push(ev(800, 10, 10, RawKind::Exit));
        let (events, stats) = build(&e, 10, "python3");
        let trace = Trace {
            header: vec![("page_size".into(), "4096".into())],
            events,
        };
        let text = trace.to_text();
        let parsed = Trace::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(parsed, trace);
        assert!(text.contains("0 1 exec python3"), "{text}");
        // The 1 GiB VMA is trimmed to its first 2 MiB block, the touches are one line.
        assert!(text.contains(" 1 mmap 1 512 anon"), "{text}");
        assert!(text.contains(" 1 touch 1 0 3 w"), "{text}");
        assert!(text.contains(" 2 fork 1"), "{text}");
        assert!(text.contains(" 2 touch 1 5 1 w"), "{text}");
        assert!(text.contains(" 1 wait 2"), "{text}");
        assert!(text.contains(" 1 munmap 1 0 512"), "{text}");
        assert_eq!(stats.faults, 7);
        assert_eq!(stats.faults_unknown_loads, 1);
        assert_eq!(stats.vmas_synthetic, 1);
        assert_eq!(stats.vmas_kept, 3);
    }

    #[test]
    fn mremap_moves_resident_pages_and_cpu_time_is_accounted() {
        let (old, new) = (0x7f00_0000_0000u64, 0x7f10_0000_0000u64);
        let mut e = vec![ev(0, 5, 5, RawKind::Exec { comm: "a".into() })];
        e.extend(sys(
            10,
            5,
            libc::SYS_mmap,
            [0, 8 * PAGE, 3, 0x22, u64::MAX, 0],
            old as i64,
        ));
        e.push(fault(20, 5, old));
        e.push(fault(21, 5, old + 2 * PAGE));
        e.push(ev(30_000, 5, 5, RawKind::SwitchOut));
        e.push(ev(5_030_000, 5, 5, RawKind::SwitchIn));
        e.extend(sys(
            5_050_000,
            5,
            libc::SYS_mremap,
            [old, 8 * PAGE, 16 * PAGE, 1, 0, 0],
            new as i64,
        ));
        let (events, _) = build(&e, 5, "a");
        let text = Trace {
            header: vec![],
            events,
        }
        .to_text();
        // 30 µs on the CPU before the switch out, 20 µs after the switch in (+1 ns in the
        // syscall): the 5 ms off the CPU are not CPU time.
        assert!(text.contains(" 1 cpu 50001\n"), "{text}");
        assert!(text.contains(" 1 mmap 2 16 anon"), "{text}");
        assert!(text.contains(" 1 munmap 1 0 8"), "{text}");
        assert!(
            text.contains(" 1 touch 2 0 1 w") && text.contains(" 1 touch 2 2 1 w"),
            "{text}"
        );
    }
}
