//! The bad-input catalogue: every case under tests/bad_input/ is fed to the `foliosim` binary
//! and must fail, within a time limit, with its expected message and without a panic.
//!
//! A case is one file, `NAME.case`:
//!
//! ```text
//! # what the case is about (comment lines start with #)
//! args: run {dir}/s.toml --sample-interval 1ns
//! expect: --sample-interval
//! ulimit_as_mib: 2048        (optional: RLIMIT_AS for the run)
//! === s.toml
//! ...the file's content...
//! === t.trace
//! ...
//! ```
//!
//! Each `=== NAME` section is written to a fresh directory `{dir}` (also the working
//! directory); `args` are split on spaces after `{dir}` is replaced.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const TIME_LIMIT: Duration = Duration::from_secs(60);

struct Case {
    name: String,
    args: String,
    expect: String,
    ulimit_as_mib: Option<u64>,
    files: Vec<(String, String)>,
}

fn parse(name: &str, text: &str) -> Case {
    let (head, body) = match text.find("\n=== ") {
        Some(i) => text.split_at(i + 1),
        None => (text, ""),
    };
    let field = |key: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
    };
    let mut files = vec![];
    for section in body.split("=== ").filter(|s| !s.is_empty()) {
        let (file, content) = section.split_once('\n').unwrap_or((section, ""));
        files.push((file.trim().to_string(), content.to_string()));
    }
    Case {
        name: name.to_string(),
        args: field("args:").unwrap_or_else(|| panic!("case {name}: no `args:` line")),
        expect: field("expect:").unwrap_or_else(|| panic!("case {name}: no `expect:` line")),
        ulimit_as_mib: field("ulimit_as_mib:").map(|v| v.parse().expect("ulimit_as_mib: MiB")),
        files,
    }
}

/// Run the case; None when it passed, else why it did not.
/// A backtrace, a second `Error:`, or a long line of the message repeated: the error is not
/// said once.
fn said_twice(stderr: &str) -> Option<String> {
    if stderr.contains("backtrace") {
        return Some("a backtrace".into());
    }
    if stderr.matches("Error:").count() > 1 {
        return Some("Error:".into());
    }
    // A line within an earlier one or the other way round: a cause repeated under a prefix
    // (`scenario: TOML parse error ...`, then `TOML parse error ...`).
    let long: Vec<&str> = stderr
        .lines()
        .map(|l| l.trim().trim_end_matches(':'))
        .filter(|l| l.len() > 30)
        .collect();
    long.iter()
        .enumerate()
        .find(|(i, l)| long[..*i].iter().any(|e| e.contains(*l) || l.contains(*e)))
        .map(|(_, l)| l.to_string())
}

fn check(case: &Case, dir: &Path) -> Option<String> {
    std::fs::create_dir_all(dir).unwrap();
    for (file, content) in &case.files {
        std::fs::write(dir.join(file), content).unwrap();
    }
    let args = case.args.replace("{dir}", &dir.display().to_string());
    let mut cmd = crate::common::foliosim();
    cmd.args(args.split_whitespace())
        .current_dir(dir)
        // Set for other programs; the CLI must still print no backtrace unless asked.
        .env("RUST_BACKTRACE", "1")
        .env_remove("FOLIOSIM_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(mib) = case.ulimit_as_mib {
        use std::os::unix::process::CommandExt;
        let bytes = mib << 20;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("foliosim runs");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > TIME_LIMIT {
            child.kill().ok();
            child.wait().ok();
            return Some(format!("hung: still running after {TIME_LIMIT:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("panicked") {
        return Some(format!("panicked:\n{stderr}"));
    }
    if status.success() {
        return Some(format!("succeeded; expected an error\n{stdout}"));
    }
    if !stderr.contains(&case.expect) {
        return Some(format!(
            "the error does not contain `{}`:\n{stderr}",
            case.expect
        ));
    }
    if let Some(twice) = said_twice(&stderr) {
        return Some(format!("the error says `{twice}` twice:\n{stderr}"));
    }
    if std::env::var_os("SHOW_ERRORS").is_some() {
        eprintln!("{}: {}", case.name, stderr.trim());
    }
    None
}

#[test]
fn every_bad_input_fails_with_its_message() {
    let cases_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&cases_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "case"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "{} cases", names.len());
    let work = std::env::temp_dir().join(format!("foliosim-bad-input-{}", std::process::id()));
    let mut failures = vec![];
    for path in &names {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let case = parse(&name, &std::fs::read_to_string(path).unwrap());
        if let Some(why) = check(&case, &work.join(&name)) {
            failures.push(format!("{name}: {why}"));
        }
    }
    std::fs::remove_dir_all(&work).ok();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n\n")
    );
}
