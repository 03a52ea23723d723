//! Counters over simulated time, as `vmstat 1` prints them: every /proc/vmstat and per-size
//! mTHP counter (kernel names), free memory, each memcg's usage, lock wait and CPU time, sampled
//! every `[report] sample_interval` of simulated time (`--sample-interval`).
//!
//! The sampler is a scheduler observer (sched/observe.rs): it reads the kernel when the next
//! step starts at or past a sample time, so a sample at `t` holds every step that started
//! before `t` (a step runs atomically: one that started before `t` and ends after it is in
//! whole). It changes nothing, so a run gives the same results sampled or not.

use crate::mm::Kernel;
use crate::report::spec::SampleInterval;
use crate::sched::{RunObserver, Task};
use serde::Serialize;
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
#[derive(Debug, Clone, Serialize, PartialEq)]
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

/// Every value a row holds, by name (kernel names for the kernel's counters).
pub fn sample(k: &Kernel, tasks: &[Task], now_ns: u64) -> BTreeMap<String, u64> {
    let mut m = k.vmstat_map(now_ns);
    m.insert("nr_free_pages".into(), k.zone.nr_free_pages());
    for cg in &k.memcgs {
        m.insert(format!("memcg/{}/usage_pages", cg.name), cg.usage_pages);
    }
    let mut total = 0;
    // Every lock the run reports, waits summed by kernel name (e.g. all ci->lock as one).
    let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
    by_name.insert("mmap_lock".into(), 0);
    for l in crate::lock_reports(k) {
        *by_name.entry(l.name).or_default() += l.stats.wait_ns_total;
    }
    for (name, ns) in by_name {
        total += ns;
        m.insert(format!("lock_wait_ns/{name}"), ns);
    }
    m.insert("lock_wait_ns".into(), total);
    let users = || tasks.iter().filter(|t| t.program().is_some());
    m.insert("cpu_user_ns".into(), users().map(|t| t.user_ns).sum());
    m.insert("cpu_sys_ns".into(), users().map(|t| t.sys_ns).sum());
    m.insert("cpu_iowait_ns".into(), users().map(|t| t.iowait_ns).sum());
    m.insert(
        "kthread_sys_ns".into(),
        tasks
            .iter()
            .filter(|t| t.kthread_kind().is_some())
            .map(|t| t.sys_ns)
            .sum(),
    );
    m
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
}

impl Sampler {
    pub fn new(interval: SampleInterval) -> Sampler {
        let (interval_ns, max_rows) = match interval {
            SampleInterval::Every(ns) => (ns.max(1), MAX_ROWS),
            SampleInterval::Auto => (AUTO_START_NS, AUTO_MAX_ROWS),
        };
        Sampler {
            requested: interval,
            interval_ns,
            max_rows,
            next_ns: 0,
            names: Vec::new(),
            index: BTreeMap::new(),
            t_ns: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn push(&mut self, t_ns: u64, values: &BTreeMap<String, u64>) {
        for name in values.keys() {
            if !self.index.contains_key(name) {
                // A name first seen now: zero before (none appear late today; kept safe).
                self.index.insert(name.clone(), self.names.len());
                self.names.push(name.clone());
                for r in &mut self.rows {
                    r.push(0);
                }
            }
        }
        let mut row = vec![0; self.names.len()];
        for (name, &v) in values {
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

    /// The last row, at the end of the run; then the series.
    pub fn finish(mut self, k: &Kernel, tasks: &[Task], end_ns: u64) -> TimeSeries {
        if self.t_ns.last() != Some(&end_ns) {
            let values = sample(k, tasks, end_ns);
            self.push(end_ns, &values);
        }
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
}

impl RunObserver for Sampler {
    fn at(&mut self, k: &Kernel, tasks: &[Task], now_ns: u64) -> u64 {
        let values = sample(k, tasks, now_ns);
        // One row per sample time passed: nothing ran in between when several are.
        while self.next_ns <= now_ns {
            self.push(self.next_ns, &values);
            self.next_ns += self.interval_ns;
            if self.rows.len() >= self.max_rows {
                self.coarsen();
            }
        }
        self.next_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarsening_keeps_rows_on_the_doubled_interval() {
        let mut s = Sampler::new(SampleInterval::Every(10));
        s.max_rows = 4;
        let v = BTreeMap::from([("x".to_string(), 1u64)]);
        while s.next_ns <= 100 {
            s.push(s.next_ns, &v);
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
