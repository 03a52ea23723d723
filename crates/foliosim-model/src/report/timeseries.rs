//! Counters over simulated time, as `vmstat 1` prints them: every /proc/vmstat and per-size
//! mTHP counter (kernel names), free memory, each memcg's usage, lock wait and CPU time, sampled
//! every `[report] sample_interval` of simulated time (`--sample-interval`).
//!
//! The sampler is a scheduler observer (sched/observe.rs): it reads the kernel when the next
//! step starts at or past a sample time. Counters of events (`pgfault`, `pswpout`, ...) are
//! booked when their step starts, so a sample at `t` holds every step that started before `t`
//! (a step runs atomically). Time is spread instead: each step's CPU time, spinlock wait,
//! I/O wait and mmap_lock sleep are split over the sample intervals the step covers, pro rata
//! by overlap (CPU work and spinning over its time on the CPU, the waits over its time off
//! it), so a rate in "CPUs" never exceeds the machine's CPUs. Time booked outside a step (an
//! OOM victim's exit) lands at the next sample. It changes nothing, so a run gives the same
//! results sampled or not.

use crate::engine::trace::Span;
use crate::mm::folio::NIL;
use crate::mm::Kernel;
use crate::report::spec::SampleInterval;
use crate::sched::{StepTrace, Task};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `SampleInterval::Auto` starts here and doubles to stay under `AUTO_MAX_ROWS`.
const AUTO_START_NS: u64 = 1_000_000;
const AUTO_MAX_ROWS: usize = 400;
/// Past this many rows a fixed interval doubles too (the result says so), bounding memory.
const MAX_ROWS: usize = 100_000;

/// Cumulative values at each sample time, one column per name. Rows are at `t_ns` = 0,
/// `interval_ns`, 2 x `interval_ns`, ... and a last one at the end of the run (the run's final
/// counters). Counters are cumulative since the start: a rate is the difference of two rows.
/// Gauges (`nr_free_pages`, `nr_*_anon`, `memcg/<name>/usage_pages`) are the value then.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimeSeries {
    /// The interval asked for ("100ms", "auto").
    pub requested_interval: String,
    /// The interval of the rows: the one asked for, or larger when the run was long enough to
    /// need coarsening (auto, or more than 100000 rows).
    pub interval_ns: u64,
    pub t_ns: Vec<u64>,
    pub columns: BTreeMap<String, Vec<u64>>,
}

impl TimeSeries {
    pub fn column(&self, name: &str) -> Option<&[u64]> {
        self.columns.get(name).map(Vec::as_slice)
    }

    /// A `vmstat`-like table: per interval, the change of a few counters and the gauges.
    pub fn to_table(&self) -> String {
        let delta = |name: &str, i: usize| -> u64 {
            self.column(name)
                .map_or(0, |c| c[i].saturating_sub(c[i - 1]))
        };
        let sum_delta = |suffix: &str, i: usize| -> u64 {
            self.columns
                .iter()
                .filter(|(n, _)| n.starts_with("hugepages-") && n.ends_with(suffix))
                .map(|(_, c)| c[i].saturating_sub(c[i - 1]))
                .sum()
        };
        let mut out = format!(
            "time series every {} (asked {}): changes per interval; free memory at its end\n",
            crate::report::spec::format_duration(self.interval_ns),
            self.requested_interval
        );
        out.push_str(&format!(
            "{:>10} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11} {:>10} {:>9}\n",
            "t_s",
            "pgfault",
            "pswpin",
            "pswpout",
            "mthp_swpo",
            "swpo_fallb",
            "free_MiB",
            "lockwt_ms",
            "sys_ms"
        ));
        for i in 1..self.t_ns.len() {
            let free = self.column("nr_free_pages").map_or(0, |c| c[i]);
            out.push_str(&format!(
                "{:>10.3} {:>9} {:>9} {:>9} {:>10} {:>10} {:>11.1} {:>10.3} {:>9.3}\n",
                self.t_ns[i] as f64 / 1e9,
                delta("pgfault", i),
                delta("pswpin", i),
                delta("pswpout", i),
                sum_delta("/stats/swpout", i),
                sum_delta("/stats/swpout_fallback", i),
                free as f64 * 4096.0 / (1 << 20) as f64,
                delta("lock_wait_ns", i) as f64 / 1e6,
                (delta("cpu_sys_ns", i) + delta("kthread_sys_ns", i)) as f64 / 1e6,
            ));
        }
        out
    }
}

/// Every event counter and gauge a row holds, by name (kernel names for the kernel's
/// counters), read now. Time columns are [`SPREAD`]'s, filled by the sampler.
pub fn sample(k: &Kernel, now_ns: u64) -> BTreeMap<String, u64> {
    let mut m = k.vmstat_map(now_ns);
    m.insert(
        "nr_free_pages".into(),
        k.node_zone(k.nodes.cpu_node()).nr_free_pages(),
    );
    // si->inuse_pages summed over the devices: swap in use (what `swapon -s` shows).
    let swap_inuse: u64 = k
        .swap
        .devices
        .iter()
        .map(|d| d.map.inuse_pages as u64)
        .sum();
    m.insert("swap_inuse_pages".into(), swap_inuse);
    for cg in &k.memcgs {
        m.insert(format!("memcg/{}/usage_pages", cg.name), cg.usage_pages);
    }
    m
}

/// The time columns: spread over the intervals each step covers (the module's doc). Every
/// lock adds `lock_wait_ns/<kernel name>`; `lock_wait_ns` is their sum.
pub const SPREAD: [&str; 4] = [
    "cpu_user_ns",
    "cpu_sys_ns",
    "cpu_iowait_ns",
    "kthread_sys_ns",
];
const LOCK_PREFIX: &str = "lock_wait_ns/";

/// The time columns' totals so far, as the run's results count them: user tasks' CPU and I/O
/// wait, kernel threads' CPU, each lock's wait (summed by kernel name, e.g. all ci->lock).
fn time_totals(k: &Kernel, tasks: &[Task]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    m.insert(format!("{LOCK_PREFIX}mmap_lock"), 0);
    for l in crate::lock_reports(k) {
        *m.entry(format!("{LOCK_PREFIX}{}", l.name)).or_default() += l.stats.wait_ns_total;
    }
    let users = || tasks.iter().filter(|t| t.program().is_some());
    m.insert("cpu_user_ns".into(), users().map(|t| t.user_ns).sum());
    m.insert("cpu_sys_ns".into(), users().map(|t| t.sys_ns).sum());
    m.insert("cpu_iowait_ns".into(), users().map(|t| t.iowait_ns).sum());
    let kthreads = tasks.iter().filter(|t| t.kthread_kind().is_some());
    m.insert("kthread_sys_ns".into(), kthreads.map(|t| t.sys_ns).sum());
    m
}

/// What a task's steps book: user tasks' CPU and waits, or kernel threads' CPU.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskKind {
    User,
    Kthread,
    Other,
}

/// Amounts of time per column, each booked as a spread over a span of simulated time and read
/// as the cumulative value at a sample time. A spread is a closed form (its share up to `t` is
/// pro rata by overlap), so booking costs O(1) however many sample intervals the span covers;
/// a spread is folded into its columns' totals once a sample time reaches its end.
#[derive(Default)]
struct Spreads {
    index: BTreeMap<String, usize>,
    names: Vec<String>,
    /// Booked so far per column, every spread.
    booked: Vec<u64>,
    /// Per column, the spreads that ended at or before the last sample time read.
    folded: Vec<u64>,
    /// Spreads still running at the last sample time read.
    pending: Vec<Spread>,
}

/// `total_ns` over [a, end) pro rata, `part_ns` of it to `c_part` and the rest to `c_rest`.
struct Spread {
    c_part: usize,
    c_rest: usize,
    part_ns: u64,
    total_ns: u64,
    a: u64,
    /// The span's end, at least `a + 1`: an empty span books everything just after `a`.
    end: u64,
}

impl Spread {
    /// (part, rest) booked before `t`: integer shares that reach `total_ns` at the end and
    /// never put a nanosecond more in an interval than it overlaps the span.
    fn shares_before(&self, t: u64) -> (u64, u64) {
        let total = if t <= self.a {
            0
        } else if t >= self.end {
            self.total_ns
        } else {
            let span = (self.end - self.a) as u128;
            (self.total_ns as u128 * (t - self.a) as u128 / span) as u64
        };
        let part = (self.part_ns as u128 * total as u128 / self.total_ns as u128) as u64;
        (part, total - part)
    }
}

impl Spreads {
    fn column(&mut self, name: &str) -> usize {
        if let Some(&c) = self.index.get(name) {
            return c;
        }
        let c = self.names.len();
        self.index.insert(name.to_string(), c);
        self.names.push(name.to_string());
        self.booked.push(0);
        self.folded.push(0);
        c
    }

    /// Book `ns` of column `c` at time `t`.
    fn add(&mut self, c: usize, t: u64, ns: u64) {
        self.spread(c, ns, t, t);
    }

    /// Spread `ns` of column `c` over [a, b) pro rata; an empty span books it at `a`.
    fn spread(&mut self, c: usize, ns: u64, a: u64, b: u64) {
        self.spread_split((c, c), 0, ns, a, b);
    }

    /// Spread `part_ns` to column `c_part` and `total_ns - part_ns` to `c_rest` over [a, b)
    /// as one spread of `total_ns`: rounding each column apart could put a nanosecond more in
    /// an interval than the span has (user and sys of one step).
    fn spread_split(
        &mut self,
        (c_part, c_rest): (usize, usize),
        part_ns: u64,
        total_ns: u64,
        a: u64,
        b: u64,
    ) {
        if total_ns == 0 {
            return;
        }
        self.booked[c_part] += part_ns;
        self.booked[c_rest] += total_ns - part_ns;
        let end = b.max(a + 1);
        self.pending.push(Spread {
            c_part,
            c_rest,
            part_ns,
            total_ns,
            a,
            end,
        });
    }

    /// Each column's value at `t` (time booked before it); `t` never decreases between calls.
    fn value_at(&mut self, t: u64) -> impl Iterator<Item = (&String, u64)> {
        let folded = &mut self.folded;
        self.pending.retain(|s| {
            if s.end > t {
                return true;
            }
            folded[s.c_part] += s.part_ns;
            folded[s.c_rest] += s.total_ns - s.part_ns;
            false
        });
        let mut values = self.folded.clone();
        for s in &self.pending {
            let (part, rest) = s.shares_before(t);
            values[s.c_part] += part;
            values[s.c_rest] += rest;
        }
        self.names.iter().zip(values)
    }
}

/// Builds a [`TimeSeries`] while the run goes.
pub struct Sampler {
    requested: SampleInterval,
    interval_ns: u64,
    max_rows: usize,
    next_ns: u64,
    names: Vec<String>,
    index: BTreeMap<String, usize>,
    t_ns: Vec<u64>,
    rows: Vec<Vec<u64>>,
    time: Spreads,
    kinds: Vec<TaskKind>,
    task_mm: Vec<u32>,
    /// mmap_lock wait of each mm as last seen, to find a step's share.
    mmap_wait_ns: Vec<u64>,
}

impl Sampler {
    pub fn new(interval: SampleInterval) -> Sampler {
        let (interval_ns, max_rows) = match interval {
            SampleInterval::Every(ns) => (ns.max(1), MAX_ROWS),
            SampleInterval::Auto => (AUTO_START_NS, AUTO_MAX_ROWS),
        };
        let mut time = Spreads::default();
        for name in SPREAD {
            time.column(name);
        }
        Sampler {
            requested: interval,
            interval_ns,
            max_rows,
            next_ns: 0,
            names: Vec::new(),
            index: BTreeMap::new(),
            t_ns: Vec::new(),
            rows: Vec::new(),
            time,
            kinds: Vec::new(),
            task_mm: Vec::new(),
            mmap_wait_ns: Vec::new(),
        }
    }

    /// A row at `t_ns`: `values` and the time columns up to bin `upto`.
    fn push(&mut self, t_ns: u64, values: &BTreeMap<String, u64>, upto_ns: u64) {
        let mut values = values.clone();
        let mut lock_total = 0;
        for (name, v) in self.time.value_at(upto_ns) {
            if name.starts_with(LOCK_PREFIX) {
                lock_total += v;
            }
            values.insert(name.clone(), v);
        }
        values.insert("lock_wait_ns".into(), lock_total);
        for name in values.keys() {
            if !self.index.contains_key(name) {
                // A name first seen now (a lock first contended): zero before.
                self.index.insert(name.clone(), self.names.len());
                self.names.push(name.clone());
                for r in &mut self.rows {
                    r.push(0);
                }
            }
        }
        let mut row = vec![0; self.names.len()];
        for (name, &v) in &values {
            row[self.index[name]] = v;
        }
        self.t_ns.push(t_ns);
        self.rows.push(row);
    }

    /// Keep every other interval's row: the same series at twice the interval.
    fn coarsen(&mut self) {
        self.interval_ns *= 2;
        let keep: Vec<bool> = self
            .t_ns
            .iter()
            .map(|t| t % self.interval_ns == 0)
            .collect();
        let mut i = 0;
        self.t_ns.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        let mut i = 0;
        self.rows.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        self.next_ns = self.next_ns.next_multiple_of(self.interval_ns);
    }

    /// Book what the run counted but no step did (an OOM victim's exit) at `now_ns`.
    fn book_residue(&mut self, k: &Kernel, tasks: &[Task], now_ns: u64) {
        for (name, total) in time_totals(k, tasks) {
            let c = self.time.column(&name);
            let booked = self.time.booked[c];
            debug_assert!(booked <= total, "{name}: {booked} booked of {total}");
            if total > booked {
                self.time.add(c, now_ns, total - booked);
            }
        }
    }

    /// The last row, at the end of the run; then the series.
    pub fn finish(mut self, k: &Kernel, tasks: &[Task], end_ns: u64) -> TimeSeries {
        self.book_residue(k, tasks, end_ns.saturating_sub(1));
        if self.t_ns.last() == Some(&end_ns) {
            // Steps that ran on past the last sample: the row at the end holds them.
            self.t_ns.pop();
            self.rows.pop();
        }
        let values = sample(k, end_ns);
        self.push(end_ns, &values, u64::MAX);
        let mut columns = BTreeMap::new();
        for (c, name) in self.names.iter().enumerate() {
            columns.insert(name.clone(), self.rows.iter().map(|r| r[c]).collect());
        }
        TimeSeries {
            requested_interval: self.requested.to_string(),
            interval_ns: self.interval_ns,
            t_ns: self.t_ns,
            columns,
        }
    }

    pub fn start(&mut self, tasks: &[Task]) {
        self.kinds = tasks
            .iter()
            .map(
                |t| match (t.program().is_some(), t.kthread_kind().is_some()) {
                    (true, _) => TaskKind::User,
                    (_, true) => TaskKind::Kthread,
                    _ => TaskKind::Other,
                },
            )
            .collect();
        self.task_mm = tasks.iter().map(|t| t.mm).collect();
    }

    /// The next step starts at `now_ns`: rows for every sample time passed. Returns when it
    /// wants to be called next.
    pub fn at(&mut self, k: &Kernel, tasks: &[Task], now_ns: u64) -> u64 {
        if self.next_ns > now_ns {
            return self.next_ns;
        }
        self.book_residue(k, tasks, now_ns);
        let values = sample(k, now_ns);
        // One row per sample time passed: nothing ran in between when several are.
        while self.next_ns <= now_ns {
            self.push(self.next_ns, &values, self.next_ns);
            self.next_ns += self.interval_ns;
            if self.rows.len() >= self.max_rows {
                self.coarsen();
            }
        }
        self.next_ns
    }

    /// A step ran, with the probe spans it recorded (its spinlock waits).
    pub fn step(&mut self, k: &Kernel, s: &StepTrace, spans: &[Span]) {
        // A step reaching past the rows' bound coarsens now (the rows would, once there).
        while s.end_ns / self.interval_ns >= self.max_rows as u64 {
            self.coarsen();
        }
        let kind = self.kinds.get(s.tid).copied().unwrap_or(TaskKind::Other);
        let on_cpu = (s.busy_from_ns, s.release_ns);
        let off_cpu = (s.release_ns, s.end_ns);
        let busy_ns = s.release_ns - s.busy_from_ns;
        match kind {
            TaskKind::User => {
                let (a, b) = on_cpu;
                self.time.spread_split((0, 1), s.user_ns, busy_ns, a, b);
            }
            TaskKind::Kthread => self.book(3, busy_ns - s.user_ns, on_cpu),
            TaskKind::Other => {}
        }
        if kind == TaskKind::User {
            self.book(2, s.iowait_ns, off_cpu);
        }
        // Spinning is CPU time of the step: spread with it, never more CPUs than run. One
        // spread per lock: a step that scans a full swap device waits thousands of times.
        let mut waits: Vec<(&str, u64)> = Vec::new();
        for sp in spans.iter().filter(|sp| sp.name == "lock wait") {
            match waits.iter_mut().find(|(lock, _)| *lock == sp.detail) {
                Some((_, ns)) => *ns += sp.end_ns - sp.start_ns,
                None => waits.push((sp.detail, sp.end_ns - sp.start_ns)),
            }
        }
        for (lock, ns) in waits {
            let c = self.lock_column(lock);
            self.book(c, ns, on_cpu);
        }
        self.book_mmap_lock_waits(k, s, off_cpu);
    }

    fn lock_column(&mut self, name: &str) -> usize {
        self.time.column(&format!("{LOCK_PREFIX}{name}"))
    }

    fn book(&mut self, c: usize, ns: u64, (a, b): (u64, u64)) {
        self.time.spread(c, ns, a, b);
    }

    /// mmap_lock waits are sleeps of the step (off its CPU). Only the step's own mm can have
    /// waited, or any mm when a kernel thread ran (khugepaged collapses others' mms).
    fn book_mmap_lock_waits(&mut self, k: &Kernel, s: &StepTrace, off_cpu: (u64, u64)) {
        if self.mmap_wait_ns.len() < k.mms.len() {
            self.mmap_wait_ns.resize(k.mms.len(), 0);
        }
        let mm = self.task_mm.get(s.tid).copied().unwrap_or(NIL);
        let mms = if mm != NIL {
            mm as usize..mm as usize + 1
        } else {
            0..k.mms.len()
        };
        let mut waited = 0;
        for m in mms {
            let now = k.mms[m].mmap_lock.stats.wait_ns_total;
            waited += now - self.mmap_wait_ns[m];
            self.mmap_wait_ns[m] = now;
        }
        if waited > 0 {
            let c = self.lock_column("mmap_lock");
            self.book(c, waited, off_cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Booking costs the same however many intervals a span covers (soak case 7000493:
    /// steps waiting on an HDD, sampled every 100 us, hung spreading bin by bin).
    #[test]
    fn a_spread_over_a_long_span_is_read_pro_rata() {
        let mut spreads = Spreads::default();
        let (sys, user) = (spreads.column("sys"), spreads.column("user"));
        spreads.spread_split((user, sys), 300, 1_000, 0, 1_000_000_000_000_000);
        let at = |spreads: &mut Spreads, t| spreads.value_at(t).map(|(_, v)| v).collect::<Vec<_>>();
        assert_eq!(at(&mut spreads, 0), [0, 0]);
        assert_eq!(at(&mut spreads, 500_000_000_000_000), [350, 150]);
        assert_eq!(spreads.pending.len(), 1);
        assert_eq!(at(&mut spreads, u64::MAX), [700, 300]);
        assert!(
            spreads.pending.is_empty(),
            "a spread past its end is folded"
        );
    }

    /// Each interval gets at most its overlap with the span (rates never exceed the CPUs),
    /// and the shares add up to the amount.
    #[test]
    fn shares_never_exceed_the_overlap() {
        let mut spreads = Spreads::default();
        let c = spreads.column("x");
        spreads.spread(c, 997, 13, 1_010);
        spreads.add(c, 1_500, 5);
        let mut before = 0;
        for t in (0..=2_000).step_by(10) {
            let v = spreads.value_at(t).next().unwrap().1;
            let overlap = t.clamp(13, 1_010) - t.saturating_sub(10).clamp(13, 1_010);
            let added = if t == 1_510 { 5 } else { 0 };
            assert!(v - before <= overlap + added, "t {t}: {}", v - before);
            before = v;
        }
        assert_eq!(before, 1_002);
    }

    #[test]
    fn coarsening_keeps_rows_on_the_doubled_interval() {
        let mut s = Sampler::new(SampleInterval::Every(10));
        s.max_rows = 4;
        let v = BTreeMap::from([("x".to_string(), 1u64)]);
        while s.next_ns <= 100 {
            s.push(s.next_ns, &v, 0);
            s.next_ns += s.interval_ns;
            if s.rows.len() >= s.max_rows {
                s.coarsen();
            }
        }
        assert!(
            s.t_ns.iter().all(|t| t % s.interval_ns == 0),
            "{:?}",
            s.t_ns
        );
        assert!(s.rows.len() < 4);
        assert_eq!(s.t_ns[0], 0);
        assert!(s.interval_ns >= 40);
    }
}
