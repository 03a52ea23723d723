//! Our own memory cgroups: `foliosim-<pid>-<name>` under the memory controller's mount, cgroup v2
//! where the unified hierarchy has the memory controller, else v1. We create, fill (with our
//! children only), read and remove them; nothing else.

use crate::settings::{Change, HostGuard};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// The mount with the memory controller.
pub fn memory_root() -> Result<(PathBuf, Version)> {
    for dir in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let controllers = Path::new(dir).join("cgroup.controllers");
        if let Ok(text) = fs::read_to_string(&controllers) {
            if text.split_whitespace().any(|c| c == "memory") {
                return Ok((PathBuf::from(dir), Version::V2));
            }
        }
    }
    let v1 = Path::new("/sys/fs/cgroup/memory");
    if v1.join("memory.limit_in_bytes").exists() {
        return Ok((v1.to_path_buf(), Version::V1));
    }
    bail!("no memory cgroup controller mounted (cgroup v2 with memory, or v1 at /sys/fs/cgroup/memory)")
}

#[derive(Debug, Clone)]
pub struct Memcg {
    /// The scenario's name for it.
    pub name: String,
    pub path: PathBuf,
    pub version: Version,
}

impl Memcg {
    /// Create `foliosim-<pid>-<name>` with memory limit `max_bytes` (None: no limit).
    pub fn create(guard: &mut HostGuard, name: &str, max_bytes: Option<u64>) -> Result<Memcg> {
        let (root, version) = memory_root()?;
        let path = root.join(format!(
            "{}{}-{name}",
            crate::swapdev::PREFIX,
            std::process::id()
        ));
        guard.record(Change::Cgroup {
            path: path.to_string_lossy().into_owned(),
        })?;
        fs::create_dir(&path).with_context(|| format!("creating memcg {}", path.display()))?;
        let cg = Memcg {
            name: name.into(),
            path,
            version,
        };
        if let Some(max) = max_bytes {
            let file = match version {
                Version::V2 => "memory.max",
                Version::V1 => "memory.limit_in_bytes",
            };
            fs::write(cg.path.join(file), max.to_string())
                .with_context(|| format!("setting {}/{file}", cg.path.display()))?;
        }
        Ok(cg)
    }

    /// The file a process writes its pid to, to join.
    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// memory.stat (and v1's usage/limit files, v2's events) as `name -> value`.
    pub fn stats(&self) -> BTreeMap<String, i64> {
        let mut out = BTreeMap::new();
        if let Ok(text) = fs::read_to_string(self.path.join("memory.stat")) {
            out.extend(parse_flat_keyed(&text));
        }
        let extra: &[&str] = match self.version {
            Version::V1 => &[
                "memory.max_usage_in_bytes",
                "memory.failcnt",
                "memory.memsw.max_usage_in_bytes",
            ],
            Version::V2 => &["memory.peak", "memory.swap.peak"],
        };
        for file in extra {
            if let Ok(v) = fs::read_to_string(self.path.join(file)) {
                if let Ok(v) = v.trim().parse() {
                    out.insert(file.to_string(), v);
                }
            }
        }
        if self.version == Version::V2 {
            if let Ok(text) = fs::read_to_string(self.path.join("memory.events")) {
                for (k, v) in parse_flat_keyed(&text) {
                    out.insert(format!("memory.events.{k}"), v);
                }
            }
        }
        out
    }
}

/// `key value` lines (memory.stat, memory.events).
pub fn parse_flat_keyed(text: &str) -> BTreeMap<String, i64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (k, v) = (it.next()?, it.next()?);
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// Remove a memcg we created: SIGKILL what is left in it (only our children ever join), wait
/// for it to empty, rmdir. Charged pages left behind do not keep rmdir from succeeding.
pub fn remove(path: &Path) -> Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    if !name.is_some_and(|n| n.starts_with(crate::swapdev::PREFIX)) {
        bail!(
            "refusing to remove {}: not a foliosim memcg",
            path.display()
        );
    }
    for _ in 0..500 {
        let procs = fs::read_to_string(path.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2); the pid is in a cgroup only our children join.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut last = None;
    for _ in 0..100 {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(last.unwrap()).with_context(|| format!("removing memcg {}", path.display()))
}

/// foliosim memcgs present on the host (there should be none outside a run).
pub fn leftovers() -> Vec<PathBuf> {
    let Ok((root, _)) = memory_root() else {
        return vec![];
    };
    fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.is_dir()
                        && p.file_name().is_some_and(|n| {
                            n.to_string_lossy().starts_with(crate::swapdev::PREFIX)
                        })
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_stat_lines() {
        let m = super::parse_flat_keyed("cache 4096\nrss 123\nbogus\nswap 0\n");
        assert_eq!(m["rss"], 123);
        assert_eq!(m.len(), 3);
    }
}
