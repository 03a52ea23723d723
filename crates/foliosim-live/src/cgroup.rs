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

/// The directory of a memcg: `foliosim-<pid>-<name>` under its parent's (the controller's
/// mount for a memcg whose parent is the root), so the scenario's tree is the host's.
pub fn memcg_path(root: &Path, pid: u32, parent: Option<&Path>, name: &str) -> PathBuf {
    parent
        .unwrap_or(root)
        .join(format!("{}{pid}-{name}", crate::swapdev::PREFIX))
}

/// cgroup v2 keeps processes out of a cgroup that hands the memory controller down to
/// children ("no internal processes"): a scenario that runs a workload in a memcg with
/// children cannot run live there.
pub fn check_no_internal_processes(
    specs: &[MemcgSpec],
    workload_memcgs: &[Option<&str>],
) -> Result<()> {
    for (i, w) in workload_memcgs.iter().enumerate() {
        let Some(name) = w else { continue };
        if let Some(child) = specs.iter().find(|c| c.parent.as_deref() == Some(*name)) {
            bail!(
                "workload[{i}].memcg: `{name}` has a child memcg (`{}`), and cgroup v2 allows no processes in a cgroup that delegates memory to children; run the workload in a leaf memcg",
                child.name
            );
        }
    }
    Ok(())
}

impl Memcg {
    /// Create `foliosim-<pid>-<name>` under `parent` (or the mount) with the spec's limits
    /// (memory.max; on v2 also memory.high, memory.low, memory.min, memory.swap.max,
    /// memory.zswap.max, memory.zswap.writeback). On v2 the parent first gets `+memory` in its
    /// cgroup.subtree_control, so the child has the controller's files.
    pub fn create(
        guard: &mut HostGuard,
        spec: &MemcgSpec,
        parent: Option<&Memcg>,
    ) -> Result<Memcg> {
        let (root, version) = memory_root()?;
        if version == Version::V1 {
            if let Some(field) = v2_only_field(spec) {
                bail!("memcg `{}`: `{field}` exists only on cgroup v2, and this host's memory controller is v1", spec.name);
            }
        }
        let name = &spec.name;
        let path = memcg_path(
            &root,
            std::process::id(),
            parent.map(|p| p.path.as_path()),
            name,
        );
        if let (Some(parent), Version::V2) = (parent, version) {
            let control = parent.path.join("cgroup.subtree_control");
            let enabled = fs::read_to_string(&control).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "memory") {
                fs::write(&control, "+memory")
                    .with_context(|| format!("enabling memory in {}", control.display()))?;
            }
        }
        // Never adopt a memcg of our name that is already there: restore would kill its
        // processes and remove it. Journaled after the parent's: undone in reverse, children
        // before their parents; taken back if the name turns out to be taken.
        if fs::symlink_metadata(&path).is_ok() {
            bail!(
                "memcg `{name}`: {} already exists and is not this run's; refusing to use or remove it",
                path.display()
            );
        }
        let change = Change::Cgroup {
            path: path.to_string_lossy().into_owned(),
        };
        guard.record(change.clone())?;
        if let Err(e) = fs::create_dir(&path) {
            guard.unrecord(&change)?;
            return Err(e).with_context(|| format!("creating memcg {}", path.display()));
        }
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
        files.extend(spec.min.map(|b| ("memory.min", b.0.to_string())));
        files.extend(spec.low.map(|b| ("memory.low", b.0.to_string())));
        files.extend(spec.swap_max.map(|b| ("memory.swap.max", b.0.to_string())));
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
            Version::V2 => &[
                "memory.peak",
                "memory.swap.peak",
                "memory.current",
                "memory.swap.current",
            ],
        };
        for file in extra {
            if let Ok(v) = fs::read_to_string(self.path.join(file)) {
                if let Ok(v) = v.trim().parse() {
                    out.insert(file.to_string(), v);
                }
            }
        }
        if self.version == Version::V2 {
            for file in ["memory.events", "memory.swap.events"] {
                if let Ok(text) = fs::read_to_string(self.path.join(file)) {
                    for (k, v) in parse_flat_keyed(&text) {
                        out.insert(format!("{file}.{k}"), v);
                    }
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
    } else if spec.min.is_some() {
        Some("min")
    } else if spec.low.is_some() {
        Some("low")
    } else if spec.swap_max.is_some() {
        Some("swap_max")
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
    use foliosim::scenario::MemcgSpec;
    use std::path::Path;

    #[test]
    fn a_child_is_created_inside_its_parent() {
        let root = Path::new("/sys/fs/cgroup");
        let p = super::memcg_path(root, 7, None, "p");
        assert_eq!(p, Path::new("/sys/fs/cgroup/foliosim-7-p"));
        let c = super::memcg_path(root, 7, Some(&p), "c");
        assert_eq!(c, Path::new("/sys/fs/cgroup/foliosim-7-p/foliosim-7-c"));
    }

    #[test]
    fn a_workload_in_a_memcg_with_children_is_refused() {
        let specs = vec![
            MemcgSpec::with_max("p", None),
            MemcgSpec {
                parent: Some("p".into()),
                ..MemcgSpec::with_max("c", None)
            },
        ];
        assert!(super::check_no_internal_processes(&specs, &[Some("c"), None]).is_ok());
        let e = super::check_no_internal_processes(&specs, &[None, Some("p")]).unwrap_err();
        assert!(format!("{e}").contains("workload[1].memcg"), "{e}");
    }

    #[test]
    fn memory_stat_lines() {
        let m = super::parse_flat_keyed("cache 4096\nrss 123\nbogus\nswap 0\n");
        assert_eq!(m["rss"], 123);
        assert_eq!(m.len(), 3);
    }
}
