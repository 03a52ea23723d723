//! `reproduce` and `sweep` on several threads: the same bytes whatever `--jobs`, and a progress
//! line per finished run on stderr when it is not a terminal (here: a pipe).

use std::path::{Path, PathBuf};
use std::process::Output;

fn foliosim(args: &[&str]) -> Output {
    let out = crate::common::foliosim()
        .args(args)
        .output()
        .expect("running foliosim");
    assert!(
        out.status.success(),
        "foliosim {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("parallel-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn reproduce(jobs: &str) -> Output {
    let args = ["reproduce", "000", "--scale", "0.02", "--seeds", "2"];
    foliosim(&[&args[..], &["--jobs", jobs, "--format", "json"]].concat())
}

#[test]
fn reproduce_gives_the_same_bytes_on_one_or_two_threads_and_shows_progress() {
    let (one, two) = (reproduce("1"), reproduce("2"));
    assert!(!one.stdout.is_empty());
    assert_eq!(one.stdout, two.stdout, "the report depends on --jobs");
    // 2 kernels x 3 sizes x 2 seeds, one line each, counted in finishing order.
    let stderr = String::from_utf8_lossy(&two.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("reproduce 000: "))
        .collect();
    assert_eq!(lines.len(), 12, "one line per finished run:\n{stderr}");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("reproduce 000: {}/12 done: ", i + 1))
                && line.ends_with(" s)"),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("6.10 64K seed 2")),
        "{stderr}"
    );
}

#[test]
fn jobs_zero_is_refused_with_the_allowed_values() {
    let out = crate::common::foliosim()
        .args(["reproduce", "000", "--scale", "0.02", "--jobs", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--jobs 0; allowed: 1 or more"), "{stderr}");
}

fn sweep(jobs: &str) -> (Vec<u8>, Vec<u8>, String) {
    let out = scratch(&format!("sweep-jobs{jobs}"));
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/seed000-usemem-small.toml"
    );
    let run = foliosim(&[
        "sweep",
        scenario,
        "--set",
        "kernel.version=6.9,6.10",
        "--set",
        "workload.0.nproc=4,8",
        "--seeds",
        "2",
        "--csv",
        "--jobs",
        jobs,
        "--out",
        out.to_str().unwrap(),
    ]);
    (
        std::fs::read(out.join("sweep.parquet")).unwrap(),
        std::fs::read(out.join("sweep.csv")).unwrap(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

#[test]
fn sweep_gives_the_same_table_on_one_or_two_threads_and_shows_progress() {
    let (parquet_1, csv_1, _) = sweep("1");
    let (parquet_2, csv_2, stderr) = sweep("2");
    assert_eq!(parquet_1, parquet_2, "sweep.parquet depends on --jobs");
    assert_eq!(csv_1, csv_2, "sweep.csv depends on --jobs");
    let lines = stderr.lines().filter(|l| l.starts_with("sweep: ")).count();
    assert_eq!(lines, 2 * 2 * 2, "one line per finished run:\n{stderr}");
}
