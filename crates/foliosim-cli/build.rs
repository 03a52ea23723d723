//! The commit the binary is built from, for `--html` reports (FOLIOSIM_GIT_REV; unset outside
//! a git checkout). Rebuilt when HEAD moves.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    if let Some(rev) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=FOLIOSIM_GIT_REV={rev}");
        // HEAD, and the branch file it points to, change when a commit is made.
        for path in [
            git(&["rev-parse", "--git-path", "HEAD"]),
            git(&["symbolic-ref", "-q", "HEAD"])
                .and_then(|r| git(&["rev-parse", "--git-path", &r])),
        ]
        .into_iter()
        .flatten()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
