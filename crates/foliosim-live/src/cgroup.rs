//! Our own memory cgroups: `foliosim-<pid>-<name>` under the memory controller's mount, cgroup v2
//! where the unified hierarchy has the memory controller, else v1. We create, fill (with our
//! children only), read and remove them; nothing else.

use crate::settings::{Change, HostGuard};
use anyhow::{bail, Context, Result};
use foliosim::scenario::MemcgSpec;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The scenario's `kernel.cgroup` values name the host's hierarchies too.
pub use foliosim::scenario::CgroupVersion as Version;

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
    /// Create `foliosim-<pid>-<name>` with the spec's limits (memory.max; on v2 also
    /// memory.high, memory.zswap.max, memory.zswap.writeback).
    pub fn create(guard: &mut HostGuard, spec: &MemcgSpec) -> Result<Memcg> {
        let (root, version) = memory_root()?;
        if version == Version::V1 {
            if let Some(field) = v2_only_field(spec) {
                bail!("memcg `{}`: `{field}` exists only on cgroup v2, and this host's memory controller is v1", spec.name);
            }
        }
        let name = &spec.name;
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
        let max_file = match version {
            Version::V2 => "memory.max",
            Version::V1 => "memory.limit_in_bytes",
        };
        let mut files = vec![];
        files.extend(spec.max.map(|b| (max_file, b.0.to_string())));
        files.extend(spec.high.map(|b| ("memory.high", b.0.to_string())));
        files.extend(
            spec.zswap_max
                .map(|b| ("memory.zswap.max", b.0.to_string())),
        );
        if !spec.zswap_writeback {
            files.push(("memory.zswap.writeback", "0".into()));
        }
        for (file, value) in files {
            fs::write(cg.path.join(file), value)
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

/// The first memcg field of the spec that only cgroup v2 has, if any.
pub fn v2_only_field(spec: &MemcgSpec) -> Option<&'static str> {
    if spec.high.is_some() {
        Some("high")
    } else if spec.zswap_max.is_some() {
        Some("zswap_max")
    } else if !spec.zswap_writeback {
        Some("zswap_writeback")
    } else {
        None
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
