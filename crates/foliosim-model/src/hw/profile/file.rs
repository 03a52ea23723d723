//! Machine profiles from a file (`machine.profile = "PATH.toml"`, `--machine-profile PATH`):
//! what `foliosim calibrate --live` writes, so a user's own machine is a profile like the
//! built-in ones. The format is TOML:
//!
//! ```toml
//! [machine]
//! name = "calibrated-myhost"
//! description = "..."
//! tlb = "x86-ipi"               # optional: x86-ipi | arm64-tlbi
//! [machine.topology]            # optional, as a scenario's [machine.topology]
//! sockets = 1
//! [costs]                       # NAME = ns, as a costs file (`--costs` reads this table too)
//! line_transfer_llc_ns = 25.0
//! [sources]                     # NAME = where the number comes from; its first provenance
//! line_transfer_llc_ns = "measured: ..."   # word (measured, cited, fit, estimate) counts
//! ```
//!
//! Other tables (`[provenance]`, `[measured]`) are for people and not read. Loaded profiles
//! live for the process (they are leaked once per path, so `machine_profile()` can hand out
//! `&'static` like the built-in ones).

use super::{MachineProfile, ProfileCost};
use crate::engine::cost::{CostModel, Provenance};
use crate::scenario::{TlbKind, TopologySpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A profile file's contents, owned (the writer's form and the reader's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    pub machine: MachineTable,
    pub costs: BTreeMap<String, f64>,
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineTable {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb: Option<TlbKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologySpec>,
}

impl ProfileFile {
    /// Parse and check: every cost a `CostModel` name with a finite value >= 0 and a source
    /// stating its provenance; the topology's counts in range. Errors name the key.
    pub fn parse(text: &str) -> Result<ProfileFile, String> {
        let f: ProfileFile = toml::from_str(text).map_err(|e| {
            format!(
                "expected [machine] (name, description, tlb, topology), [costs] and [sources]: {e}"
            )
        })?;
        if f.machine.name.trim().is_empty() {
            return Err("machine.name: empty; allowed: any non-empty name".into());
        }
        if let Some(t) = &f.machine.topology {
            t.check().map_err(|e| e.to_string())?;
        }
        for (name, ns) in &f.costs {
            if !CostModel::NAMES.contains(&name.as_str()) {
                return Err(format!(
                    "costs.{name}: no such cost; allowed: {}",
                    CostModel::NAMES.join(", ")
                ));
            }
            if !ns.is_finite() || *ns < 0.0 || *ns > u64::MAX as f64 {
                return Err(format!(
                    "costs.{name} = {ns}: allowed: a finite number of ns >= 0"
                ));
            }
            let source = f.sources.get(name).ok_or_else(|| {
                format!("sources.{name}: missing; every cost says where it comes from")
            })?;
            if Provenance::of_doc(source).is_none() {
                return Err(format!(
                    "sources.{name} = {source:?}: states no provenance; allowed: a text whose first provenance word is measured, cited, fit or estimate"
                ));
            }
        }
        Ok(f)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a profile file serializes")
    }

    /// The profile, its strings leaked (call once per file: `load` caches).
    fn leak(self) -> &'static MachineProfile {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let costs: Vec<ProfileCost> = self
            .costs
            .iter()
            .map(|(name, ns)| {
                let source = self.sources[name].clone();
                ProfileCost {
                    name: CostModel::NAMES
                        .iter()
                        .copied()
                        .find(|n| n == name)
                        .expect("checked in parse"),
                    ns: ns.round() as u64,
                    provenance: Provenance::of_doc(&source).expect("checked in parse"),
                    source: leak(source),
                }
            })
            .collect();
        Box::leak(Box::new(MachineProfile {
            name: leak(self.machine.name),
            description: leak(self.machine.description),
            topology: self.machine.topology,
            tlb: self.machine.tlb,
            costs: Box::leak(costs.into_boxed_slice()),
        }))
    }
}

/// Whether `machine.profile` names a file rather than a built-in profile.
pub fn is_path(name: &str) -> bool {
    name.ends_with(".toml") || name.contains('/')
}

static LOADED: Mutex<BTreeMap<String, &'static MachineProfile>> = Mutex::new(BTreeMap::new());

/// The profile in file `path` (relative to the working directory), read once per process.
pub fn load(path: &str) -> Result<&'static MachineProfile, String> {
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = loaded.get(path) {
        return Ok(p);
    }
    let text = crate::footprint::read_toml(std::path::Path::new(path))
        .map_err(|e| format!("reading {path}: {e}"))?;
    let profile = ProfileFile::parse(&text)
        .map_err(|e| format!("{path}: {e}"))?
        .leak();
    loaded.insert(path.to_string(), profile);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ProfileFile {
        ProfileFile {
            machine: MachineTable {
                name: "calibrated-test".into(),
                description: "a test machine".into(),
                tlb: Some(TlbKind::X86Ipi),
                topology: Some(TopologySpec {
                    sockets: 1,
                    llcs_per_socket: 2,
                    cores_per_llc: 4,
                    threads_per_core: 2,
                }),
            },
            costs: BTreeMap::from([
                ("line_transfer_llc_ns".into(), 24.6),
                ("tlb_flush_ipi_ns".into(), 1800.0),
            ]),
            sources: BTreeMap::from([
                ("line_transfer_llc_ns".into(), "measured: ping-pong".into()),
                ("tlb_flush_ipi_ns".into(), "cited: a paper, table 2".into()),
            ]),
        }
    }

    #[test]
    fn a_profile_file_round_trips_and_loads() {
        let f = sample();
        let text = f.to_toml();
        assert_eq!(ProfileFile::parse(&text).unwrap(), f);
        let dir = std::env::temp_dir().join(format!("foliosim-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.toml");
        std::fs::write(&path, &text).unwrap();
        let p = load(path.to_str().unwrap()).unwrap();
        assert_eq!(p.name, "calibrated-test");
        assert_eq!(p.topology.unwrap().cpus(), 16);
        assert_eq!(
            p.cost_values(),
            vec![("line_transfer_llc_ns", 25), ("tlb_flush_ipi_ns", 1800)]
        );
        assert_eq!(p.costs[0].provenance, Provenance::Measured);
        assert_eq!(p.costs[1].provenance, Provenance::Cited);
        // Cached: the same profile, even after the file is gone.
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(std::ptr::eq(load(path.to_str().unwrap()).unwrap(), p));
    }

    #[test]
    fn bad_profile_files_name_the_key() {
        let with = |edit: &dyn Fn(&mut ProfileFile)| {
            let mut f = sample();
            edit(&mut f);
            ProfileFile::parse(&f.to_toml()).unwrap_err()
        };
        let e = with(&|f| {
            f.costs.insert("nope_ns".into(), 1.0);
        });
        assert!(
            e.starts_with("costs.nope_ns") && e.contains("fault_4k_ns"),
            "{e}"
        );
        let e = with(&|f| {
            f.sources.remove("tlb_flush_ipi_ns");
        });
        assert!(e.starts_with("sources.tlb_flush_ipi_ns"), "{e}");
        let e = with(&|f| {
            f.sources
                .insert("tlb_flush_ipi_ns".into(), "a guess".into());
        });
        assert!(e.contains("states no provenance"), "{e}");
        let e = with(&|f| {
            f.costs.insert("tlb_flush_ipi_ns".into(), -1.0);
        });
        assert!(e.contains("costs.tlb_flush_ipi_ns"), "{e}");
        let e = with(&|f| f.machine.topology.as_mut().unwrap().sockets = 0);
        assert!(e.contains("sockets"), "{e}");
        let e = ProfileFile::parse("[costs]\n").unwrap_err();
        assert!(e.contains("[machine]"), "{e}");
        assert!(load("/nonexistent/p.toml").unwrap_err().contains("reading"));
    }
}
