//! What a run records besides its final counters: the time series (`[report]
//! sample_interval`), the timeline (Chrome trace JSON) and the HTML report. Watching a run must
//! not change it.

use foliosim::report::spec::SampleInterval;
use foliosim::report::timeline::TimelineOptions;
use foliosim::{RunOptions, RunResult, Scenario};
use serde_json::Value;
use std::collections::BTreeMap;

use crate::common::shipped_scenario as scenario;

fn run_opts(s: &Scenario, timeline: Option<usize>) -> foliosim::Run {
    let opts = RunOptions {
        timeline: timeline.map(|max_events| TimelineOptions { max_events }),
        ..RunOptions::default()
    };
    foliosim::run_with(s, &opts, &mut |_, _| {}).unwrap()
}

fn without_timeseries(r: &RunResult) -> String {
    let mut r = r.clone();
    r.timeseries = None;
    r.to_json()
}

#[test]
fn sampling_and_timelines_change_no_result() {
    for file in ["usemem-64k-small.toml", "page-cache-pressure.toml"] {
        let mut s = scenario(file);
        s.check_invariants = true;
        let plain = crate::common::run(&s);
        assert!(plain.timeseries.is_none());
        let timeline = run_opts(&s, Some(1_000_000));
        assert_eq!(
            timeline.result.to_json(),
            plain.to_json(),
            "{file}: timeline on"
        );
        s.report.sample_interval = Some(SampleInterval::Every(1_000_000));
        let sampled = crate::common::run(&s);
        assert_eq!(
            without_timeseries(&sampled),
            plain.to_json(),
            "{file}: sampled"
        );
        // The last row is the end of the run: the final counters.
        let ts = sampled.timeseries.as_ref().unwrap();
        let last = ts.t_ns.len() - 1;
        assert_eq!(ts.t_ns[last], sampled.simulated_ns);
        for (name, value) in &sampled.counters {
            assert_eq!(ts.columns[name][last], *value, "{file}: {name}");
        }
    }
}

#[test]
fn time_series_rows_sit_on_the_interval_and_counters_only_grow() {
    let mut s = scenario("usemem-64k-small.toml");
    s.report.sample_interval = Some(SampleInterval::Every(5_000_000));
    let r = crate::common::run(&s);
    let ts = r.timeseries.unwrap();
    assert_eq!(ts.interval_ns, 5_000_000);
    assert_eq!(ts.requested_interval, "5ms");
    let n = ts.t_ns.len();
    assert!(n >= 10, "{n} rows for {} simulated ns", r.simulated_ns);
    for (i, t) in ts.t_ns[..n - 1].iter().enumerate() {
        assert_eq!(*t, i as u64 * 5_000_000);
    }
    for name in [
        "pgfault",
        "pswpout",
        "hugepages-64kB/stats/swpout",
        "lock_wait_ns",
    ] {
        let c = &ts.columns[name];
        assert!(
            c.windows(2).all(|w| w[0] <= w[1]),
            "{name} decreases: {c:?}"
        );
        assert!(c[n - 1] > 0, "{name} stays 0");
    }
    let free = &ts.columns["nr_free_pages"];
    assert!(free.iter().min() < free.first(), "free memory never fell");
    assert!(ts.columns.contains_key("memcg/bench/usage_pages"));
    // The JSON carries it; a run without sampling has no such key.
    let json: Value = serde_json::from_str(&crate::common::run(&s).to_json()).unwrap();
    assert_eq!(json["timeseries"]["t_ns"].as_array().unwrap().len(), n);
}

#[test]
fn auto_interval_keeps_a_few_hundred_rows() {
    let mut s = scenario("thp-swap-allocator-test.toml");
    s.report.sample_interval = Some(SampleInterval::Auto);
    let r = crate::common::run(&s);
    let ts = r.timeseries.unwrap();
    assert!(ts.t_ns.len() <= 401, "{} rows", ts.t_ns.len());
    assert!(ts.t_ns.len() >= 100, "{} rows", ts.t_ns.len());
    assert!(ts.t_ns[..ts.t_ns.len() - 1]
        .iter()
        .all(|t| t % ts.interval_ns == 0));
}

#[test]
fn a_bad_sample_interval_names_the_field() {
    for (value, expect) in [
        ("\"10 parsecs\"", "report.sample_interval"),
        ("\"1ns\"", "report.sample_interval"),
    ] {
        let text = format!("[report]\nsample_interval = {value}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"4M\"\n");
        let e = Scenario::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(expect), "{value}: {e}");
    }
    let ok = Scenario::from_toml_str(
        "[report]\nsample_interval = \"100ms\"\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"4M\"\n",
    )
    .unwrap();
    assert_eq!(
        ok.report.sample_interval,
        Some(SampleInterval::Every(100_000_000))
    );
    assert!(ok.to_toml_string().contains("sample_interval = \"100ms\""));
}

/// (pid, tid) -> [(start_ns, end_ns, name, event)]
type Tracks = BTreeMap<(u64, u64), Vec<(u64, u64, String, Value)>>;

fn ns(v: &Value) -> u64 {
    // "ts" is µs with three decimals: exact ns.
    let s = v.to_string();
    let (int, frac) = s.split_once('.').unwrap_or((&s, "0"));
    int.parse::<u64>().unwrap() * 1000 + format!("{frac:0<3}")[..3].parse::<u64>().unwrap()
}

fn tracks(json: &Value) -> Tracks {
    let mut t: Tracks = BTreeMap::new();
    for e in json["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            let start = ns(&e["ts"]);
            let end = start + ns(&e["dur"]);
            assert!(end > start, "empty slice {e}");
            t.entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
                .or_default()
                .push((start, end, e["name"].as_str().unwrap().into(), e.clone()));
        }
    }
    t
}

#[test]
fn timeline_is_chrome_trace_json_with_nested_slices_per_cpu() {
    let s = scenario("page-cache-pressure.toml");
    let run = run_opts(&s, Some(1_000_000));
    let text = run.timeline.as_ref().unwrap().to_chrome_json();
    assert_eq!(
        text,
        run_opts(&s, Some(1_000_000))
            .timeline
            .unwrap()
            .to_chrome_json(),
        "the bytes depend only on the scenario"
    );
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    assert!(json["otherData"].get("capped").is_none());
    let names: BTreeMap<(u64, u64), String> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ncpus = s.machine.cpus as u64;
    for cpu in 0..ncpus {
        assert_eq!(names[&(1, cpu)], format!("CPU {cpu}"));
    }
    let t = tracks(&json);
    let mut running_ns = 0;
    let mut irq_ns = 0;
    // When each task ran, from the CPU tracks' top-level slices.
    let mut on_cpu: BTreeMap<String, Vec<(u64, u64, u64)>> = BTreeMap::new();
    for ((pid, tid), slices) in &t {
        let mut slices = slices.clone();
        slices.sort_by_key(|(s, e, _, _)| (*s, std::cmp::Reverse(*e)));
        // Slices on a track nest or follow one another, never overlap.
        let mut stack: Vec<u64> = Vec::new();
        for (start, end, name, _) in &slices {
            while stack.last().is_some_and(|&e| e <= *start) {
                stack.pop();
            }
            if let Some(&parent_end) = stack.last() {
                assert!(
                    *end <= parent_end,
                    "({pid},{tid}) {name} overlaps its parent"
                );
            } else if *pid == 1 {
                on_cpu
                    .entry(name.clone())
                    .or_default()
                    .push((*start, *end, *tid));
            }
            stack.push(*end);
            if *pid == 1 && name == "TLB shootdown IPI received" {
                irq_ns += end - start;
            }
            if *pid == 2 && name == "running" {
                running_ns += end - start;
            }
        }
        if *pid == 1 {
            assert!(*tid < ncpus, "a CPU track {tid} beyond {ncpus} CPUs");
        }
    }
    // The CPU tracks' task slices name the tasks, and a task is never on two CPUs at once.
    let tasks: Vec<&String> = names
        .iter()
        .filter(|((pid, _), _)| *pid == 2)
        .map(|(_, n)| n)
        .collect();
    assert!(on_cpu.contains_key("kswapd0"), "{:?}", on_cpu.keys());
    for (task, mut slices) in on_cpu {
        assert!(tasks.contains(&&task), "{task} is no task");
        slices.sort();
        for w in slices.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "{task} on CPUs {} and {} at once",
                w[0].2,
                w[1].2
            );
        }
    }
    // Every ns of CPU time the scheduler booked is on the timeline, plus the interrupts.
    let r = &run.result;
    let kthreads: u64 = r.kernel_threads.iter().map(|t| t.sys_ns).sum();
    assert_eq!(running_ns - irq_ns, r.cpu_user_ns + r.cpu_sys_ns + kthreads);
    let all: Vec<&String> = t.values().flatten().map(|(_, _, n, _)| n).collect();
    for kind in ["page fault", "lock wait", "iowait"] {
        assert!(all.iter().any(|n| *n == kind), "no {kind} slice");
    }
}

#[test]
fn a_capped_timeline_says_so() {
    let s = scenario("usemem-64k-small.toml");
    let run = run_opts(&s, Some(500));
    let tl = run.timeline.unwrap();
    assert_eq!(tl.events(), 500);
    assert!(tl.capped_at_ns().is_some());
    let json: Value = serde_json::from_str(&tl.to_chrome_json()).unwrap();
    assert!(json["otherData"]["capped"]
        .as_str()
        .unwrap()
        .contains("--timeline-max-events"));
    assert!(json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["ph"] == "i"));
    assert_eq!(
        run.result.to_json(),
        crate::common::run(&s).to_json(),
        "capping changes nothing either"
    );
}

#[test]
fn run_report_is_one_self_contained_page() {
    let mut s = scenario("usemem-64k-small.toml");
    s.report.sample_interval = Some(SampleInterval::Auto);
    let r = crate::common::run(&s);
    let v = foliosim::report::html::Versions {
        foliosim: "test".into(),
        git_rev: None,
        command: "foliosim run x.toml --html r.html".into(),
    };
    let page = foliosim::report::html::run_report(
        "x.toml",
        "seed = 1",
        &s.to_toml_string(),
        &s.machine.cost_profile,
        &r,
        &v,
    );
    assert!(page.starts_with("<!DOCTYPE html>"));
    for needed in [
        "<svg",
        "Swap-out rate",
        "Free memory",
        "pswpout",
        "cost profile",
    ] {
        assert!(page.contains(needed), "no {needed}");
    }
    assert_no_fetch(&page);
    let again = foliosim::report::html::run_report(
        "x.toml",
        "seed = 1",
        &s.to_toml_string(),
        &s.machine.cost_profile,
        &crate::common::run(&s),
        &v,
    );
    assert_eq!(page, again, "deterministic bytes");
}

#[test]
fn reproduce_capture_keeps_seed_one_runs_and_changes_no_table() {
    use foliosim_lab::reproduce::{capture, seed000};
    let plain = seed000::reproduce(
        0.02,
        2,
        false,
        &mut foliosim_lab::reproduce::Runs::all_cores(),
    )
    .unwrap();
    let (captured, runs) = capture::capturing(Some(SampleInterval::Auto), || {
        seed000::reproduce(
            0.02,
            2,
            false,
            &mut foliosim_lab::reproduce::Runs::all_cores(),
        )
    });
    let captured = captured.unwrap();
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        serde_json::to_string(&captured).unwrap()
    );
    assert_eq!(runs.len(), 6, "one per (kernel, size)");
    assert!(runs.iter().all(|r| r.seed == 1 && r.timeseries.is_some()));
    // Labelled as the seed's table names the row.
    assert_eq!(runs[0].label, "6.9 4K");
    assert!(runs.iter().all(|r| r.group == "usemem"));
    let labels: std::collections::BTreeSet<&String> = runs.iter().map(|r| &r.label).collect();
    assert_eq!(labels.len(), 6, "labels tell the configurations apart");
    let value = serde_json::to_value(&captured).unwrap();
    let cover = foliosim_lab::reproduce::cover_figures("000", &value);
    let page = foliosim::report::html::reproduce_report(
        "000",
        &value,
        &cover,
        &captured.to_table(),
        &runs,
        &foliosim::report::html::Versions {
            foliosim: "test".into(),
            git_rev: Some("abc".into()),
            command: "foliosim reproduce 000".into(),
        },
    );
    for needed in [
        "seed_<wbr>mean_<wbr>rel_<wbr>pct",
        "rows: mean_rel_pct, the seed",
        "<svg",
        "Swap-out rate",
        "[machine]",
    ] {
        assert!(page.contains(needed), "no {needed}");
    }
    assert_no_fetch(&page);
    // Outside a capture nothing is kept.
    let (_, none) = capture::capturing(None, || ());
    assert!(none.is_empty());
}

/// No external resource: no src/href to another document, no url(), no http(s) but the
/// SVG namespace.
fn assert_no_fetch(page: &str) {
    assert!(!page.contains("src="), "a src attribute");
    assert!(!page.contains("url("), "a CSS url()");
    assert!(!page.contains("<script"), "a script");
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    for href in page.match_indices("href=\"").map(|(i, _)| &page[i + 6..]) {
        assert!(
            href.starts_with("data:"),
            "href to {}",
            &href[..30.min(href.len())]
        );
    }
}

/// Per-interval rates of a time column, in "how many at once" (ns per ns of the interval).
fn rates(ts: &foliosim::report::timeseries::TimeSeries, names: &[&str]) -> Vec<f64> {
    (1..ts.t_ns.len())
        .map(|i| {
            let dt = (ts.t_ns[i] - ts.t_ns[i - 1]) as f64;
            let d: u64 = names
                .iter()
                .map(|n| ts.columns.get(*n).map_or(0, |c| c[i] - c[i - 1]))
                .sum();
            d as f64 / dt
        })
        .collect()
}

#[test]
fn time_series_rates_never_exceed_the_cpus() {
    // Many tasks contending on few CPUs, sampled far finer than a step lasts.
    let mut s = scenario("usemem-64k-small.toml");
    s.machine.cpus = 3;
    if let foliosim::scenario::WorkloadSpec::Usemem(u) = &mut s.workloads[0] {
        u.nproc = 24;
        u.size = foliosim::scenario::Bytes(16 << 20);
    }
    s.report.sample_interval = Some(SampleInterval::Every(2_000));
    let r = crate::common::run(&s);
    let ts = r.timeseries.as_ref().unwrap();
    let cpus = s.machine.cpus as f64;
    let tasks = 24.0;
    let spin: Vec<&str> = ts
        .columns
        .keys()
        .filter(|n| n.starts_with("lock_wait_ns/") && *n != "lock_wait_ns/mmap_lock")
        .map(String::as_str)
        .collect();
    let eps = 1e-6;
    let check = |what: &str, names: &[&str], bound: f64| {
        let rs = rates(ts, names);
        let max = rs.iter().cloned().fold(0.0, f64::max);
        assert!(
            max <= bound + eps,
            "{what}: {max:.3} > {bound} at some interval"
        );
        max
    };
    let cpu = check(
        "CPU time",
        &["cpu_user_ns", "cpu_sys_ns", "kthread_sys_ns"],
        cpus,
    );
    assert!(cpu > 0.5, "the CPUs were busy: {cpu}");
    let lock = check("spinlock wait", &spin, cpus);
    assert!(lock > 0.0, "no lock contention to check: {spin:?}");
    check("I/O wait", &["cpu_iowait_ns"], tasks);
    check("every lock wait", &["lock_wait_ns"], tasks + cpus);
    // Spread, not lost: the last row is the run's totals.
    let last = ts.t_ns.len() - 1;
    assert_eq!(ts.columns["cpu_sys_ns"][last], r.cpu_sys_ns);
    assert_eq!(ts.columns["cpu_user_ns"][last], r.cpu_user_ns);
    assert_eq!(ts.columns["cpu_iowait_ns"][last], r.cpu_iowait_ns);
    let waits: u64 = r.locks.iter().map(|l| l.stats.wait_ns_total).sum();
    assert_eq!(ts.columns["lock_wait_ns"][last], waits);
}
