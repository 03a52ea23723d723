//! foliosim's live backend: the same scenario on the running kernel.
//!
//! [`run`] applies the scenario's settings to the host (per-size mTHP `enabled`, `defrag`,
//! khugepaged, zswap, swap devices, memcgs), runs every task of every workload in its own
//! process ([`exec`]), and reports the counter deltas under the sim's names. Every change is
//! journaled and undone on return, error, panic or a caught signal ([`settings`]); a run killed
//! with SIGKILL is undone by the next start. [`validate`] compares against the sim,
//! [`calibrate`] measures the cost model on this host.

pub mod calibrate;
pub mod calibrate_hw;
pub mod calibrate_ipi;
pub mod cgroup;
pub mod counters;
pub mod diskstat;
pub mod exec;
pub mod files;
pub mod interp;
pub mod others;
pub mod probe;
pub mod record;
pub mod run;
pub mod settings;
pub mod shared_barrier;
pub mod snapshot;
pub mod swapdev;
pub mod tmpfs;
pub mod validate;

pub use run::{preflight, run, LiveOptions, LiveResult};

/// Why the live backend refuses to start (distinct from failures while running).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the live backend changes kernel settings and runs processes on this machine; pass --live (CLI) or allow_live=True (Python) to allow it")]
    NotAllowed,
    #[error("the live backend needs root (it writes /sys and creates swap devices and cgroups); running as uid {0}")]
    NotRoot(u32),
    #[error("the scenario needs about {needed_mib} MiB of RAM ({what}) but MemAvailable is {available_mib} MiB; refusing to exhaust the host")]
    NotEnoughMemory {
        needed_mib: u64,
        available_mib: u64,
        what: String,
    },
    #[error("live backend: {0}")]
    Unsupported(String),
}

/// Is a live run possible here at all? `Err(reason)` says why not (tests skip on it).
pub fn live_capable() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(format!("not root (uid {uid})"));
    }
    if !std::path::Path::new(counters::THP_DIR)
        .join("hugepages-64kB/enabled")
        .exists()
    {
        return Err("no per-size mTHP sysfs (hugepages-64kB/enabled)".into());
    }
    if !std::path::Path::new("/sys/class/zram-control").exists()
        && !std::path::Path::new("/sys/block/zram0").exists()
    {
        return Err("no zram (modprobe zram)".into());
    }
    cgroup::memory_root().map_err(|e| e.to_string())?;
    Ok(())
}
