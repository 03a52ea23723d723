//! Named machines (`machine.profile`): a topology and the costs that differ on that machine
//! from the cost profile (`machine.cost_profile`, engine/cost.rs), each with where it comes
//! from. One module per machine; `this-vm` is the development VM as modelled before profiles
//! (no topology, no cost changed), the default. The provenance of the costs a profile does not
//! set is their documentation's (engine::cost::Provenance::of_doc). A profile may also be a
//! file (file.rs), the form `foliosim calibrate --live` writes.

mod ampere_altra_80c;
mod epyc_2s;
mod file;
mod intel_4c_2015;
mod sapphire_rapids_2s_112c;

pub use file::{MachineTable, ProfileFile};

use crate::engine::cost::{CostModel, Provenance};
use crate::scenario::{Machine, TlbKind, TopologySpec};
use std::collections::BTreeMap;

/// One cost a machine profile sets, with its source.
#[derive(Debug, Clone, Copy)]
pub struct ProfileCost {
    /// A `CostModel` name.
    pub name: &'static str,
    pub ns: u64,
    pub provenance: Provenance,
    /// The measurement's command, the reference (URL, paper, vendor document), or the
    /// estimate's basis.
    pub source: &'static str,
}

#[derive(Debug)]
pub struct MachineProfile {
    pub name: &'static str,
    pub description: &'static str,
    pub topology: Option<TopologySpec>,
    /// The TLB invalidation mechanism of its architecture (`machine.tlb` must agree); None:
    /// either (this-vm, as before profiles).
    pub tlb: Option<TlbKind>,
    pub costs: &'static [ProfileCost],
}

pub const DEFAULT: &str = "this-vm";

static THIS_VM: MachineProfile = MachineProfile {
    name: "this-vm",
    description: "the development VM: no topology, the cost profile's costs unchanged",
    topology: None,
    tlb: None,
    costs: &[],
};

static PROFILES: [&MachineProfile; 5] = [
    &THIS_VM,
    &sapphire_rapids_2s_112c::PROFILE,
    &ampere_altra_80c::PROFILE,
    &intel_4c_2015::PROFILE,
    &epyc_2s::PROFILE,
];

/// Every profile name, for error messages.
pub fn names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name).collect()
}

pub fn profile(name: &str) -> Option<&'static MachineProfile> {
    PROFILES.iter().copied().find(|p| p.name == name)
}

/// A built-in profile by name, or a profile file when `name` is a path (ends in `.toml` or
/// has a `/`); the error says which names exist or what is wrong with the file.
pub fn resolve(name: &str) -> Result<&'static MachineProfile, String> {
    if file::is_path(name) {
        return file::load(name);
    }
    profile(name).ok_or_else(|| {
        format!(
            "{}, or a profile file PATH.toml (`foliosim calibrate --live` writes one)",
            names().join(", ")
        )
    })
}

/// Where the schema's `machine.profile` name meets the profiles: here, so the schema names
/// nothing of hw/.
impl Machine {
    /// The machine profile (`this-vm` when none is named); None for an unknown name or a
    /// profile file that does not load (validation reports why: `resolve`).
    pub fn machine_profile(&self) -> Option<&'static MachineProfile> {
        resolve(self.profile.as_deref().unwrap_or(DEFAULT)).ok()
    }

    /// The topology in force: the scenario's table, else the profile's.
    pub fn topology_spec(&self) -> Option<TopologySpec> {
        self.topology
            .or_else(|| self.machine_profile().and_then(|p| p.topology))
    }
}

impl MachineProfile {
    /// The costs it sets, NAME = ns.
    pub fn cost_values(&self) -> Vec<(&'static str, u64)> {
        self.costs.iter().map(|c| (c.name, c.ns)).collect()
    }

    /// How many of a run's costs are measured, cited, fitted or estimated: the profile's
    /// own, the others by their documentation; `overridden` names (a scenario's `[costs]`,
    /// `--cost`) are counted apart, their source being the user's.
    /// `cost_profile` is the run's `machine.cost_profile`.
    pub fn provenance_summary(
        &self,
        cost_profile: &str,
        overridden: &BTreeMap<String, f64>,
    ) -> ProvenanceSummary {
        let mut s = ProvenanceSummary::default();
        for name in CostModel::NAMES {
            if overridden.contains_key(*name) {
                s.overridden += 1;
                continue;
            }
            let p = match self.costs.iter().find(|c| c.name == *name) {
                Some(c) => c.provenance,
                None => CostModel::provenance(cost_profile, name)
                    .expect("every cost states its provenance (engine cost tests)"),
            };
            s.counts[p as usize] += 1;
        }
        s
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvenanceSummary {
    /// By `Provenance` (measured, cited, fitted, estimate).
    pub counts: [u32; 4],
    pub overridden: u32,
}

impl std::fmt::Display for ProvenanceSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = Provenance::ALL
            .iter()
            .map(|&p| format!("{} {}", self.counts[p as usize], p.name()))
            .collect();
        write!(f, "{}", parts.join(", "))?;
        if self.overridden > 0 {
            write!(f, ", {} overridden", self.overridden)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_cost_is_a_cost_with_a_source() {
        for p in PROFILES {
            for c in p.costs {
                assert!(CostModel::NAMES.contains(&c.name), "{}: {}", p.name, c.name);
                assert!(c.source.len() > 20, "{}: {} has no source", p.name, c.name);
                assert!(
                    Provenance::states_basis(c.source),
                    "{}: {} is an estimate without a basis",
                    p.name,
                    c.name
                );
                let word = c.provenance.name();
                assert!(
                    c.source.starts_with(word),
                    "{}: {} is {word}",
                    p.name,
                    c.name
                );
                if c.provenance == Provenance::Cited {
                    assert!(
                        c.source.contains('@'),
                        "{}: {} cites no commit",
                        p.name,
                        c.name
                    );
                }
            }
            let mut names: Vec<_> = p.costs.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), p.costs.len(), "{}: a cost set twice", p.name);
            if let Some(t) = &p.topology {
                assert!(t.cpus() > 1, "{}", p.name);
            }
        }
        assert_eq!(profile(DEFAULT).unwrap().costs.len(), 0);
    }

    #[test]
    fn the_summary_counts_every_cost_once() {
        let none = BTreeMap::new();
        for p in PROFILES {
            let s = p.provenance_summary("vm-6.18-2cpu", &none);
            assert_eq!(
                s.counts.iter().sum::<u32>() as usize,
                CostModel::NAMES.len()
            );
        }
        let vm = profile("this-vm")
            .unwrap()
            .provenance_summary("vm-6.18-2cpu", &none);
        let spr = profile("sapphire-rapids-2s-112c")
            .unwrap()
            .provenance_summary("vm-6.18-2cpu", &none);
        assert_ne!(vm, spr);
        let server = profile("this-vm")
            .unwrap()
            .provenance_summary("x86-server", &none);
        assert_eq!(
            server.counts[3],
            vm.counts[3] + 4,
            "x86-server estimates two IPI costs and the three CPU-to-CPU costs measured here"
        );
        let over = BTreeMap::from([("fault_4k_ns".to_string(), 1.0)]);
        let s = profile("this-vm")
            .unwrap()
            .provenance_summary("vm-6.18-2cpu", &over);
        assert_eq!(s.overridden, 1);
        assert_eq!(s.counts[0], vm.counts[0] - 1, "fault_4k_ns was measured");
        assert!(s.to_string().ends_with("1 overridden"), "{s}");
    }

    fn validate(machine: &str) -> Result<crate::Scenario, String> {
        let text = format!(
            "[machine]\n{machine}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n"
        );
        crate::Scenario::from_toml_str(&text).map_err(|e| e.to_string())
    }

    #[test]
    fn profiles_validate_by_name_architecture_and_size() {
        let s = validate("profile = \"sapphire-rapids-2s-112c\"\ncpus = 48").unwrap();
        assert_eq!(s.machine.topology_spec().unwrap().cpus(), 224);
        assert!(validate("").unwrap().machine.topology_spec().is_none());
        let e = validate("profile = \"nope\"").unwrap_err();
        assert!(
            e.contains("machine.profile") && e.contains("epyc-2s"),
            "{e}"
        );
        let e = validate("profile = \"ampere-altra-80c\"").unwrap_err();
        assert!(e.contains("machine.tlb") && e.contains("arm64-tlbi"), "{e}");
        validate("profile = \"ampere-altra-80c\"\ntlb = \"arm64-tlbi\"").unwrap();
        let e = validate("profile = \"intel-4c-2015\"\ncpus = 16").unwrap_err();
        assert!(e.contains("machine.cpus") && e.contains("1 ..= 8"), "{e}");
        let e = validate("kvm_guest = true").unwrap_err();
        assert!(e.contains("machine.kvm_guest"), "{e}");
        validate("profile = \"epyc-2s\"\nkvm_guest = true").unwrap();
        let e = validate("cpus = 4\n[machine.topology]\nsockets = 0").unwrap_err();
        assert!(e.contains("machine.topology.sockets"), "{e}");
        let s = validate("cpus = 4\n[machine.topology]\ncores_per_llc = 2\nthreads_per_core = 2")
            .unwrap();
        assert_eq!(s.machine.topology_spec().unwrap().cpus(), 4);
    }
}
