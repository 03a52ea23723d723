//! `foliosim sweep` into a directory holding another sweep: refused with what differs unless
//! --force; a sweep with more seeds resumes it. `compare` prints human units.

use std::path::{Path, PathBuf};

fn foliosim(args: &[&str], out: &Path) -> (bool, String, String) {
    let repo = crate::common::repo();
    let o = crate::common::foliosim()
        .args(args)
        .arg(out)
        .current_dir(repo)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run foliosim");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.success(), text(&o.stdout), text(&o.stderr))
}

fn sweep(seeds: &str, extra: &[&str], out: &Path) -> (bool, String, String) {
    let mut args = vec![
        "sweep",
        "scenarios/seed000-usemem-small.toml",
        "--set",
        "kernel.version=6.9,6.10",
        "--jobs",
        "1",
        "--seeds",
        seeds,
    ];
    args.extend(extra);
    args.push("--out");
    foliosim(&args, out)
}

#[test]
fn fewer_seeds_are_refused_unless_forced_and_more_resume() {
    let out: PathBuf =
        std::env::temp_dir().join(format!("foliosim-cli-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let (ok, _, err) = sweep("2", &[], &out);
    assert!(ok, "{err}");
    let (ok, _, err) = sweep("1", &[], &out);
    assert!(!ok);
    assert!(
        err.contains(&out.display().to_string())
            && err.contains("2 of its 4 runs are not in this sweep")
            && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.matches("Error").count(), 1, "{err}");
    let (ok, stdout, err) = sweep("1", &["--force"], &out);
    assert!(
        ok && err.contains("replacing") && stdout.contains("2 already done"),
        "{err}"
    );
    let (ok, stdout, err) = sweep("2", &[], &out);
    assert!(ok && stdout.contains("4 already done"), "{err}");
    let (ok, table, err) = foliosim(&["compare"], &out);
    assert!(ok, "{err}");
    assert!(
        table.contains(" GiB/s") && table.contains(" ms "),
        "{table}"
    );
    std::fs::remove_dir_all(out).unwrap();
}
