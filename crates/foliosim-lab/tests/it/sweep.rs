//! Sweeps end to end on a small usemem scenario: runs stored one file each, the results table
//! the same whatever the thread count, Parquet and CSV written and read back, a resumed sweep
//! running only what is missing, bad axes refused before anything runs.

use foliosim::Scenario;
use foliosim_lab::sweep::{self, axes, compare, parquet_io, Plan};
use std::path::{Path, PathBuf};

const BASE: &str = r#"
[machine]
cpus = 2
memory = "256M"
sched_slice_ns = 200000
[[machine.swap]]
kind = "ramdisk"
size = "64M"
[kernel]
version = "6.9"
[sysfs]
defrag = "always"
[sysfs.hugepages]
"2M" = "never"
[[memcg]]
name = "bench"
max = "24M"
[[workload]]
kind = "usemem"
nproc = 4
size = "8M"
memcg = "bench"
"#;

fn tmp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("foliosim-sweep-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn plan(seeds: u32) -> Plan {
    let base = Scenario::from_toml_str(BASE).unwrap();
    let axes = vec![
        axes::parse_set_on("kernel.version=6.9,6.10", &base).unwrap(),
        axes::parse_set_on(r#"sysfs.hugepages."64K"=always,never"#, &base).unwrap(),
    ];
    Plan::new(&base, &axes, &sweep::seeds(seeds)).unwrap()
}

fn run_all(plan: &Plan, out: &Path, jobs: usize) -> Vec<u8> {
    plan.store(out).unwrap();
    let pending = plan.pending(out);
    sweep::local::run_pending(out, &pending, jobs, &mut |_, _| {}).unwrap();
    let (_, outcome) = sweep::write_results(plan, out, true, pending.len()).unwrap();
    std::fs::read(outcome.parquet).unwrap()
}

#[test]
fn a_sweep_is_one_table_the_same_on_any_number_of_threads_and_resumes() {
    let plan = plan(3);
    assert_eq!(plan.runs.len(), 2 * 2 * 3);
    let (a, b) = (tmp("a"), tmp("b"));
    let bytes_a = run_all(&plan, &a, 2);
    let bytes_b = run_all(&plan, &b, 1);
    assert_eq!(bytes_a, bytes_b, "the table depends on scheduling");

    // The table: one row per run in plan order, axes, seed, run id, metrics, counters.
    let t = parquet_io::read(&a.join("sweep.parquet")).unwrap();
    assert_eq!(t, plan.merge(&a).unwrap(), "Parquet round trip");
    assert_eq!(t.rows(), 12);
    assert_eq!(t.axes, ["kernel.version", "sysfs.hugepages.64K"]);
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        &names[..4],
        ["kernel.version", "sysfs.hugepages.64K", "seed", "run_id"]
    );
    for must in [
        "simulated_ns",
        "usemem.throughput_bytes_per_s",
        "pswpout",
        "hugepages-64kB/stats/swpout",
        "cpu_sys_ns",
    ] {
        assert!(names.contains(&must), "no column {must}: {names:?}");
    }
    let cell = |col: &str, row: usize| t.column(col).unwrap().cells[row].as_f64().unwrap();
    // Row 0 is 6.9 / 64K always / seed 1; row 9 is 6.10 / 64K never / seed 1.
    assert_eq!(t.column("kernel.version").unwrap().cells[9].label(), "6.10");
    assert_eq!(cell("seed", 9), 1.0);
    assert!(
        cell("hugepages-64kB/stats/swpout", 6) > 0.0,
        "6.10 64K swaps out whole"
    );
    assert_eq!(
        cell("hugepages-64kB/stats/swpout", 0),
        0.0,
        "6.9 splits 64K"
    );
    assert!(cell("pswpout", 0) > 0.0);
    let csv = std::fs::read_to_string(a.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13);
    assert!(csv.starts_with("kernel.version,sysfs.hugepages.64K,seed,run_id,"));

    // Resume: a lost run and a broken one are run again, the rest are kept.
    let runs = a.join("runs");
    std::fs::remove_file(runs.join(format!("{}.json", plan.runs[4].id))).unwrap();
    std::fs::write(runs.join(format!("{}.json", plan.runs[7].id)), "{ broken").unwrap();
    let pending = plan.pending(&a);
    assert_eq!(
        pending.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [plan.runs[4].id.as_str(), plan.runs[7].id.as_str()]
    );
    assert!(plan
        .merge(&a)
        .unwrap_err()
        .to_string()
        .contains("2 of 12 runs"));
    assert_eq!(run_all(&plan, &a, 2), bytes_a);
    assert!(plan.pending(&a).is_empty());

    // A bigger sweep over the same directory reuses the runs it shares.
    let more = self::plan(4);
    assert_eq!(more.pending(&a).len(), 4);

    // Compare: 64K on 6.10 (whole swap-out) against 6.9 (split).
    let c = compare::compare(
        &t,
        &compare::CompareOptions {
            metrics: vec!["hugepages-64kB/stats/swpout".into()],
            columns: Some(vec!["kernel.version".into()]),
            filters: vec![(r#"sysfs.hugepages."64K""#.into(), "always".into())],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(c.columns, ["6.9", "6.10"]);
    assert!(c.rendered.contains("Welch's t-test"));
    for d in [a, b] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn bad_axes_fail_before_any_run() {
    let base = Scenario::from_toml_str(BASE).unwrap();
    let out = tmp("bad");
    let err = |set: &str| {
        let axis = axes::parse_set_on(set, &base).unwrap();
        Plan::new(&base, &[axis], &[1]).unwrap_err().to_string()
    };
    let e = err("kernel.version=6.10,6.19");
    assert!(
        e.contains("`kernel.version`") && e.contains("`6.19`") && e.contains("`6.18`"),
        "{e}"
    );
    let e = err("kernel.versoin=6.10");
    assert!(
        e.contains("kernel.versoin") && e.contains("`version`"),
        "{e}"
    );
    let e = err(r#"sysfs.hugepages."64K"=sometimes"#);
    assert!(e.contains("sometimes") && e.contains("`always`"), "{e}");
    // A combination the scenario rejects is named by its axis values.
    let combo = [
        axes::parse_set_on("kernel.cgroup=v2,v1", &base).unwrap(),
        axes::parse_set_on("memcg.0.high=20M", &base).unwrap(),
    ];
    let e = Plan::new(&base, &combo, &[1]).unwrap_err().to_string();
    assert!(
        e.contains("kernel.cgroup=v1, memcg.0.high=20M") && e.contains("memcg[0].high"),
        "{e}"
    );
    assert!(!out.exists(), "nothing was written");
}

#[test]
fn the_shipped_axes_file_plans_seed_000_as_a_sweep() {
    let repo = crate::common::repo();
    let base = std::fs::read_to_string(repo.join("scenarios/seed000-usemem-small.toml")).unwrap();
    let base = Scenario::from_toml_str(&base).unwrap();
    let text =
        std::fs::read_to_string(repo.join("scenarios/axes/seed000-kernels-sizes.toml")).unwrap();
    let file = axes::AxesFile::from_toml_str(&text).unwrap();
    let plan = Plan::new(
        &base,
        &file.axes().unwrap(),
        &sweep::seeds(file.seeds.unwrap()),
    )
    .unwrap();
    assert_eq!(plan.axes, ["kernel.version", "size"]);
    assert_eq!(plan.runs.len(), 2 * 3 * 5);
    // The 6.10 64K runs are seed 000's scenario for 6.10 64K at scale 0.05, seed for seed.
    for r in plan
        .runs
        .iter()
        .filter(|r| r.axes[0].1 == "6.10" && r.axes[1].1 == "64K")
    {
        let want = foliosim_lab::reproduce::seed000::scenario(
            foliosim::scenario::Release::V6_10,
            "64K",
            0.05,
            r.seed,
        );
        let got = Scenario::from_toml_str(&r.scenario_toml).unwrap();
        assert_eq!(got.to_toml_string(), want.to_toml_string());
    }
}

#[test]
fn a_different_sweep_is_refused_unless_forced_and_a_bigger_one_resumes() {
    let out = tmp("replace");
    let three = plan(3);
    assert_eq!(
        three.check_replaces(&out, false).unwrap(),
        sweep::Existing::None
    );
    three.store(&out).unwrap();
    // The same sweep, or more seeds: resumed.
    assert_eq!(
        three.check_replaces(&out, false).unwrap(),
        sweep::Existing::Extended
    );
    assert_eq!(
        plan(4).check_replaces(&out, false).unwrap(),
        sweep::Existing::Extended
    );
    // Fewer seeds: refused, naming the directory, what differs and --force.
    let e = plan(2).check_replaces(&out, false).unwrap_err().to_string();
    for want in [
        out.display().to_string().as_str(),
        "4 of its 12 runs",
        "seeds 3 dropped",
        "--force",
    ] {
        assert!(e.contains(want), "no `{want}` in: {e}");
    }
    // Other axes.
    let base = Scenario::from_toml_str(BASE).unwrap();
    let one_axis = Plan::new(
        &base,
        &[axes::parse_set_on("kernel.version=6.9,6.10", &base).unwrap()],
        &sweep::seeds(3),
    )
    .unwrap();
    let e = one_axis
        .check_replaces(&out, false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("its axes are kernel.version, sysfs.hugepages.64K")
            && e.contains("this sweep's kernel.version"),
        "{e}"
    );
    // Another base scenario, same axes and seeds.
    let other = Scenario::from_toml_str(&BASE.replace("24M", "20M")).unwrap();
    let moved = Plan::new(
        &other,
        &[
            axes::parse_set_on("kernel.version=6.9,6.10", &other).unwrap(),
            axes::parse_set_on(r#"sysfs.hugepages."64K"=always,never"#, &other).unwrap(),
        ],
        &sweep::seeds(3),
    )
    .unwrap();
    let e = moved.check_replaces(&out, false).unwrap_err().to_string();
    assert!(e.contains("12 of its runs have another scenario"), "{e}");
    // --force replaces, saying what it replaced.
    match plan(2).check_replaces(&out, true).unwrap() {
        sweep::Existing::Replaced(what) => assert!(what[0].contains("seeds 3 dropped")),
        other => panic!("{other:?}"),
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn sampled_runs_keep_their_time_series_across_a_resume() {
    let sampled = format!("{BASE}\n[report]\nsample_interval = \"1ms\"\n");
    let base = Scenario::from_toml_str(&sampled).unwrap();
    let make = |seeds| {
        let axis = axes::parse_set_on("kernel.version=6.10", &base).unwrap();
        Plan::new(&base, &[axis], &sweep::seeds(seeds)).unwrap()
    };
    let out = tmp("timeseries");
    let one = make(1);
    run_all(&one, &out, 1);
    let first = sweep::record::load(&out, &one.runs[0]).unwrap();
    let ts = first
        .timeseries
        .as_ref()
        .expect("the record keeps the series");
    assert!(ts.t_ns.len() > 1 && ts.column("pswpout").is_some());
    // Resumed with a second seed: the first run is reused, series and all.
    let two = make(2);
    assert_eq!(
        two.check_replaces(&out, false).unwrap(),
        sweep::Existing::Extended
    );
    assert_eq!(two.pending(&out).len(), 1);
    run_all(&two, &out, 1);
    assert_eq!(sweep::record::load(&out, &two.runs[0]).unwrap(), first);
    assert!(sweep::record::load(&out, &two.runs[1])
        .unwrap()
        .timeseries
        .is_some());
    std::fs::remove_dir_all(out).unwrap();
}
