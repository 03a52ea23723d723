//! A run's per-CPU activity as a Chrome trace-event file (JSON), which Perfetto's UI
//! (ui.perfetto.dev, "Open trace file") and chrome://tracing open: `foliosim run --timeline`.
//!
//! Tracks: process "CPUs" has one thread per CPU (tid = CPU number); on it, a slice per task
//! that ran (named after the task: `usemem-3`, `kswapd0`, ...), and inside it what the CPU did:
//! `user`, `page fault`, `kernel` (other system calls and exits), `TLB shootdown IPI received`,
//! and the spans the model's probes record (engine/trace.rs: `direct reclaim`, `memcg reclaim`,
//! `direct compaction`, `lock wait` with the lock's name, `TLB flush`). Process "tasks" has one
//! thread per task: `running` (with the CPU) and its off-CPU waits, `iowait` and `sleep`.
//!
//! Placement: a step is atomic and the scheduler books its CPU work first, its waits after
//! (sched/mod.rs), so a step shows as its CPU work followed by its waits on the task's track;
//! probe spans are clipped into the step's CPU work. Adjacent slices of the same kind on a
//! track are merged (args.n counts the steps), which keeps a long run's file small; past
//! `max_events` recording stops and the file says where (`otherData.capped`, and an instant
//! event at that time). The bytes depend only on the scenario and seed.

use crate::engine::trace::{self, Span};
use crate::mm::vmstat::VmEvent;
use crate::mm::Kernel;
use crate::sched::{RunObserver, StepTrace, Task};
use std::fmt::Write as _;

pub const DEFAULT_MAX_EVENTS: usize = 200_000;

#[derive(Debug, Clone, Copy)]
pub struct TimelineOptions {
    /// Stop recording past this many events (a bound on the file: about 100 bytes each).
    pub max_events: usize,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

const PID_CPUS: u32 = 1;
const PID_TASKS: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    /// The task's name.
    Task(u32),
    Static(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arg {
    None,
    Detail(&'static str),
    Cpu(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pid: u32,
    tid: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    name: Name,
    cat: &'static str,
    arg: Arg,
    /// Steps merged into this slice.
    n: u32,
}

/// The recorded timeline of one run.
#[derive(Debug, Clone)]
pub struct Timeline {
    ncpus: usize,
    task_names: Vec<String>,
    events: Vec<Event>,
    /// Recording stopped at this simulated time (the event cap was reached).
    capped_at_ns: Option<u64>,
    max_events: usize,
    /// What ran: "scenario seed N, kernel K" (for otherData).
    pub title: String,
}

/// Where the last slices of a track are, for merging.
#[derive(Clone, Copy, Default)]
struct TrackTail {
    top: Option<usize>,
    child: Option<usize>,
}

/// Records the timeline as the run goes (a scheduler observer).
pub struct TimelineRecorder {
    tl: Timeline,
    cpu_tail: Vec<TrackTail>,
    task_tail: Vec<TrackTail>,
    kthread: Vec<bool>,
    last_pgfault: u64,
    spans: Vec<Span>,
    _recording: trace::Recording,
}

impl TimelineRecorder {
    pub fn new(opts: TimelineOptions) -> TimelineRecorder {
        TimelineRecorder {
            tl: Timeline {
                ncpus: 0,
                task_names: Vec::new(),
                events: Vec::new(),
                capped_at_ns: None,
                max_events: opts.max_events.max(1),
                title: String::new(),
            },
            cpu_tail: Vec::new(),
            task_tail: Vec::new(),
            kthread: Vec::new(),
            last_pgfault: 0,
            spans: Vec::new(),
            _recording: trace::Recording::start(),
        }
    }

    pub fn finish(self) -> Timeline {
        self.tl
    }

    /// Add a slice, or extend the previous one of `tail` when it is the same and adjacent.
    /// Past the cap nothing is added.
    fn add(&mut self, ev: Event, tail_of: TailOf, level: Level) {
        if self.tl.capped_at_ns.is_some() || ev.end_ns <= ev.start_ns {
            return;
        }
        let tail = match tail_of {
            TailOf::Cpu(c) => &mut self.cpu_tail[c],
            TailOf::Task(t) => &mut self.task_tail[t],
        };
        let last = match level {
            Level::Top => tail.top,
            Level::Child => tail.child,
            Level::Probe => None,
        };
        if let Some(i) = last {
            let e = &mut self.tl.events[i];
            if e.name == ev.name && e.arg == ev.arg && e.end_ns == ev.start_ns {
                e.end_ns = ev.end_ns;
                e.n += 1;
                return;
            }
        }
        if self.tl.events.len() >= self.tl.max_events {
            self.tl.capped_at_ns = Some(ev.start_ns);
            return;
        }
        let i = self.tl.events.len();
        self.tl.events.push(ev);
        match level {
            Level::Top => {
                tail.top = Some(i);
                tail.child = None;
            }
            Level::Child => tail.child = Some(i),
            Level::Probe => {}
        }
    }
}

#[derive(Clone, Copy)]
enum TailOf {
    Cpu(usize),
    Task(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Child,
    Probe,
}

impl RunObserver for TimelineRecorder {
    fn start(&mut self, tasks: &[Task], ncpus: usize) {
        self.tl.ncpus = ncpus;
        self.tl.task_names = tasks.iter().map(|t| t.name.clone()).collect();
        self.kthread = tasks.iter().map(|t| t.kthread_kind().is_some()).collect();
        self.cpu_tail = vec![TrackTail::default(); ncpus];
        self.task_tail = vec![TrackTail::default(); tasks.len()];
    }

    fn wants_steps(&self) -> bool {
        true
    }

    fn step(&mut self, k: &Kernel, s: &StepTrace) {
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        trace::drain_into(&mut spans);
        self.step_spans(k, s, &spans);
        self.spans = spans;
    }
}

impl TimelineRecorder {
    /// A step ran, with the probe spans it recorded (drained by the caller).
    pub(crate) fn step_spans(&mut self, k: &Kernel, s: &StepTrace, spans: &[Span]) {
        let pgfault = k.vmstat.get(VmEvent::Pgfault);
        let faulted = pgfault != self.last_pgfault;
        self.last_pgfault = pgfault;
        if self.tl.capped_at_ns.is_some() {
            return;
        }
        let (cpu, tid) = (s.cpu as u32, s.tid as u32);
        let kthread = self.kthread[s.tid];
        let on_cpu =
            |start_ns, end_ns, name, cat, arg| cpu_event(cpu, start_ns, end_ns, name, cat, arg);
        let cpu_tail = TailOf::Cpu(s.cpu);
        let cat = if kthread { "kthread" } else { "user task" };
        self.add(
            on_cpu(s.begin_ns, s.release_ns, Name::Task(tid), cat, Arg::None),
            cpu_tail,
            Level::Top,
        );
        if s.irq_ns > 0 {
            self.add(
                on_cpu(
                    s.begin_ns,
                    s.busy_from_ns,
                    Name::Static("TLB shootdown IPI received"),
                    "irq",
                    Arg::None,
                ),
                cpu_tail,
                Level::Child,
            );
        }
        // The step's CPU work: user time first, then the kernel's.
        let kernel_from_ns = (s.busy_from_ns + s.user_ns).min(s.release_ns);
        if !kthread {
            self.add(
                on_cpu(
                    s.busy_from_ns,
                    kernel_from_ns,
                    Name::Static("user"),
                    "user",
                    Arg::None,
                ),
                cpu_tail,
                Level::Child,
            );
            let what = if faulted { "page fault" } else { "kernel" };
            self.add(
                on_cpu(
                    kernel_from_ns,
                    s.release_ns,
                    Name::Static(what),
                    "kernel",
                    Arg::None,
                ),
                cpu_tail,
                Level::Child,
            );
        }
        self.probe_spans(s, spans, kernel_from_ns);
        self.task_track(s);
    }

    /// Probe spans, clipped into the kernel part of the step (clipping keeps them nested).
    fn probe_spans(&mut self, s: &StepTrace, spans: &[Span], kernel_from_ns: u64) {
        for sp in spans {
            let (a, b) = (
                sp.start_ns.clamp(kernel_from_ns, s.release_ns),
                sp.end_ns.clamp(kernel_from_ns, s.release_ns),
            );
            let arg = if sp.detail.is_empty() {
                Arg::None
            } else {
                Arg::Detail(sp.detail)
            };
            let e = cpu_event(s.cpu as u32, a, b, Name::Static(sp.name), "kernel", arg);
            self.add(e, TailOf::Cpu(s.cpu), Level::Probe);
        }
    }

    /// The task's own track: running, then its waits.
    fn task_track(&mut self, s: &StepTrace) {
        let (cpu, tid) = (s.cpu as u32, s.tid as u32);
        let on_task = |start_ns, end_ns, name, arg| Event {
            pid: PID_TASKS,
            tid,
            start_ns,
            end_ns,
            name: Name::Static(name),
            cat: "task",
            arg,
            n: 1,
        };
        let task_tail = TailOf::Task(s.tid);
        self.add(
            on_task(s.begin_ns, s.release_ns, "running", Arg::Cpu(cpu)),
            task_tail,
            Level::Top,
        );
        let io_end_ns = s.release_ns + s.iowait_ns;
        self.add(
            on_task(s.release_ns, io_end_ns, "iowait", Arg::None),
            task_tail,
            Level::Top,
        );
        self.add(
            on_task(io_end_ns, s.end_ns, "sleep", Arg::None),
            task_tail,
            Level::Top,
        );
    }
}

/// An event on CPU `cpu`'s track.
fn cpu_event(
    cpu: u32,
    start_ns: u64,
    end_ns: u64,
    name: Name,
    cat: &'static str,
    arg: Arg,
) -> Event {
    Event {
        pid: PID_CPUS,
        tid: cpu,
        start_ns,
        end_ns,
        name,
        cat,
        arg,
        n: 1,
    }
}

fn ts(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

impl Timeline {
    pub fn events(&self) -> usize {
        self.events.len()
    }

    pub fn capped_at_ns(&self) -> Option<u64> {
        self.capped_at_ns
    }

    /// The Chrome trace-event JSON (one event per line, deterministic bytes).
    pub fn to_chrome_json(&self) -> String {
        let mut out = String::from("{\"traceEvents\":[\n");
        let mut lines = self.metadata_lines();
        lines.extend(self.events.iter().map(|e| self.event_line(e)));
        if let Some(at) = self.capped_at_ns {
            lines.push(format!(
                "{{\"ph\":\"i\",\"s\":\"g\",\"pid\":{PID_CPUS},\"tid\":0,\"ts\":{},\"name\":\"timeline capped: {} events; nothing recorded after this\"}}",
                ts(at),
                self.max_events
            ));
        }
        out.push_str(&lines.join(",\n"));
        out.push_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{");
        let _ = write!(
            out,
            "\"generator\":\"foliosim {}\",\"run\":{},\"events\":{}",
            env!("CARGO_PKG_VERSION"),
            json_str(&self.title),
            self.events.len()
        );
        if let Some(at) = self.capped_at_ns {
            let _ = write!(
                out,
                ",\"capped\":{}",
                json_str(&format!(
                    "recording stopped at {} simulated s after {} events (--timeline-max-events)",
                    at as f64 / 1e9,
                    self.max_events
                ))
            );
        }
        out.push_str("}}\n");
        out
    }

    /// The metadata events: the two processes (CPUs, tasks), a thread per CPU and per task,
    /// their names and order.
    fn metadata_lines(&self) -> Vec<String> {
        let meta = |pid: u32, tid: Option<u32>, name: &str, args: String| {
            let tid = tid.map_or(String::new(), |t| format!(",\"tid\":{t}"));
            format!("{{\"ph\":\"M\",\"pid\":{pid}{tid},\"name\":\"{name}\",\"args\":{args}}}")
        };
        let process = |pid: u32, name: &str, sort_index: u32| {
            [
                meta(
                    pid,
                    None,
                    "process_name",
                    format!("{{\"name\":\"{name}\"}}"),
                ),
                meta(
                    pid,
                    None,
                    "process_sort_index",
                    format!("{{\"sort_index\":{sort_index}}}"),
                ),
            ]
        };
        let mut lines: Vec<String> = process(PID_CPUS, "CPUs", 0).into();
        for cpu in 0..self.ncpus {
            lines.push(meta(
                PID_CPUS,
                Some(cpu as u32),
                "thread_name",
                format!("{{\"name\":\"CPU {cpu}\"}}"),
            ));
            lines.push(meta(
                PID_CPUS,
                Some(cpu as u32),
                "thread_sort_index",
                format!("{{\"sort_index\":{cpu}}}"),
            ));
        }
        lines.extend(process(PID_TASKS, "tasks", 1));
        for (tid, name) in self.task_names.iter().enumerate() {
            lines.push(meta(
                PID_TASKS,
                Some(tid as u32),
                "thread_name",
                format!("{{\"name\":{}}}", json_str(name)),
            ));
        }
        lines
    }

    /// A complete ("X") event with its args.
    fn event_line(&self, e: &Event) -> String {
        let name = match e.name {
            Name::Task(t) => self.task_names[t as usize].as_str(),
            Name::Static(s) => s,
        };
        let mut args = String::new();
        match e.arg {
            Arg::None => {}
            Arg::Detail(d) => {
                let _ = write!(args, "\"what\":{}", json_str(d));
            }
            Arg::Cpu(c) => {
                let _ = write!(args, "\"cpu\":{c}");
            }
        }
        if e.n > 1 {
            if !args.is_empty() {
                args.push(',');
            }
            let _ = write!(args, "\"n\":{}", e.n);
        }
        let args = if args.is_empty() {
            String::new()
        } else {
            format!(",\"args\":{{{args}}}")
        };
        format!(
            "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"{}\"{args}}}",
            e.pid,
            e.tid,
            ts(e.start_ns),
            ts(e.end_ns - e.start_ns),
            json_str(name),
            e.cat
        )
    }
}
