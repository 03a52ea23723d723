//! Registries of the policies a scenario chooses by name (docs/extending.md).
//!
//! Each kind of policy (swap allocator, LRU policy, workload generator) keeps one table of
//! entries, each entry its name as a scenario spells it, a line of documentation and its
//! constructor. The scenario parser, validation messages, `foliosim show` and the docs read
//! the table, so a new policy is one file plus one line in its table.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The registered kinds the schema names: a handle on a table entry (a name, its doc, its
/// constructor), compared and serialised by name. The schema only holds them; every call into
/// an entry happens above it (validate.rs, the run).
pub use crate::mm::swap_alloc::SwapAllocatorKind;
pub use crate::mm::vmscan::lru_policy::LruPolicyKind;
pub use crate::workload::WorkloadKind;

/// An entry of a registry: what the table knows of one policy.
pub trait Entry: Sync + 'static {
    /// What the registry holds, for messages ("swap allocator").
    const WHAT: &'static str;
    /// The scenario's spelling.
    fn name(&self) -> &'static str;
    /// One line for `show` and the docs.
    fn doc(&self) -> &'static str;
    /// Every registered entry, in the table's order.
    fn all() -> &'static [&'static Self];
}

/// A registered policy chosen by name. Compared by name; serialised as its name.
pub struct Choice<E: Entry>(pub &'static E);

impl<E: Entry> Choice<E> {
    /// The entry spelled `name`, or an error listing every allowed name.
    pub fn by_name(name: &str) -> Result<Self, String> {
        E::all()
            .iter()
            .find(|e| e.name() == name)
            .map(|e| Choice(*e))
            .ok_or_else(|| {
                let allowed = match names::<E>() {
                    none if none.is_empty() => {
                        "none: this build registers none (docs/extending.md)".to_string()
                    }
                    some => some.join(", "),
                };
                format!("unknown {} `{name}`: allowed are {allowed}", E::WHAT)
            })
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn entry(self) -> &'static E {
        self.0
    }
}

/// Every registered name, in table order.
pub fn names<E: Entry>() -> Vec<&'static str> {
    E::all().iter().map(|e| e.name()).collect()
}

/// `name: doc` for every entry, one a line (`foliosim show`, docs).
pub fn describe<E: Entry>() -> String {
    E::all()
        .iter()
        .map(|e| format!("  {:<22} {}\n", e.name(), e.doc()))
        .collect()
}

impl<E: Entry> Clone for Choice<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: Entry> Copy for Choice<E> {}

impl<E: Entry> PartialEq for Choice<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl<E: Entry> Eq for Choice<E> {}

impl<E: Entry> fmt::Debug for Choice<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl<E: Entry> fmt::Display for Choice<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl<E: Entry> Serialize for Choice<E> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de, E: Entry> Deserialize<'de> for Choice<E> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Choice::by_name(&name).map_err(de::Error::custom)
    }
}

/// Declares each listed policy file as a module and lists its `ENTRY` in `$table`, in order:
/// `registry!(SWAP_ALLOCATORS: SwapAllocatorEntry = legacy, percpu_order);`. Attributes
/// (`#[cfg(test)]`) apply to both the module and its row.
macro_rules! registry {
    ($table:ident: $entry:ty = $($(#[$attr:meta])* $file:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $file;)*
        /// Every registered entry, in the order `show` and the docs list them.
        pub static $table: &[&$entry] = &[$($(#[$attr])* &$file::ENTRY,)*];
    };
}
pub(crate) use registry;

/// Every name the policy registries accept (docs/extending.md), with its line of doc.
pub fn registered() -> String {
    use crate::mm::swap_alloc::SwapAllocatorEntry;
    use crate::mm::vmscan::lru_policy::LruPolicyEntry;
    use crate::workload::WorkloadEntry;
    use std::fmt::Write;
    let mut out = String::new();
    for (key, rows) in [
        ("kernel.swap_allocator", describe::<SwapAllocatorEntry>()),
        ("kernel.lru_policy", describe::<LruPolicyEntry>()),
        (
            "workload.name (kind = \"registered\")",
            describe::<WorkloadEntry>(),
        ),
    ] {
        let _ = writeln!(out, "# {key}: the registered names");
        for line in rows.lines() {
            let _ = writeln!(out, "#  {line}");
        }
        if rows.is_empty() {
            let _ = writeln!(out, "#    (none)");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::swap_alloc::{SwapAllocatorEntry, SwapAllocatorKind};
    use crate::mm::vmscan::lru_policy::LruPolicyEntry;
    use crate::workload::WorkloadEntry;

    /// Every registered name is documented: shipped ones in the scenario format, the
    /// test-only examples in the extending guide.
    fn documented<E: Entry>() {
        let format = include_str!("../../../docs/scenario-format.md");
        let guide = include_str!("../../../docs/extending.md");
        for e in E::all() {
            let doc = if e.doc().starts_with("example") {
                guide
            } else {
                format
            };
            assert!(
                doc.contains(e.name()),
                "{} `{}` undocumented",
                E::WHAT,
                e.name()
            );
        }
    }

    #[test]
    fn every_registered_name_is_documented() {
        documented::<SwapAllocatorEntry>();
        documented::<LruPolicyEntry>();
        documented::<WorkloadEntry>();
    }

    #[test]
    fn an_unknown_name_lists_the_registered_ones() {
        let e = SwapAllocatorKind::by_name("best-fit").unwrap_err();
        assert!(e.contains("unknown swap allocator `best-fit`"), "{e}");
        for name in names::<SwapAllocatorEntry>() {
            assert!(e.contains(name), "{e}");
        }
        let text = "[kernel]\nswap_allocator = \"best-fit\"\n[[workload]]\nkind = \"usemem\"\n\
                    nproc = 1\nsize = \"1M\"\n";
        let err = crate::Scenario::from_toml_str(text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cluster-lists-c18") && err.contains("best-fit"),
            "{err}"
        );
    }

    #[test]
    fn choices_round_trip_through_their_names() {
        for e in names::<SwapAllocatorEntry>() {
            let k = SwapAllocatorKind::by_name(e).unwrap();
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{e}\""));
            assert_eq!(serde_json::from_str::<SwapAllocatorKind>(&json).unwrap(), k);
        }
    }

    #[test]
    fn a_mismatched_lru_policy_names_the_ones_that_fit() {
        let text = "[kernel]\nversion = \"6.18\"\nlru_policy = \"mglru\"\n[[workload]]\n\
                    kind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n";
        let err = crate::Scenario::from_toml_str(text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("kernel.lru_policy") && err.contains("classic"),
            "{err}"
        );
        let ok = "[kernel]\nversion = \"6.18\"\nlru_policy = \"mglru\"\n[sysfs.lru_gen]\n\
                  enabled = true\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n";
        let s = crate::Scenario::from_toml_str(ok).unwrap();
        assert_eq!(s.lru_policy().name(), "mglru");
    }

    #[test]
    fn a_registered_workload_names_its_bad_param() {
        let text = "[[workload]]\nkind = \"registered\"\nname = \"strided_write\"\n\
                    [workload.params]\nnproc = 1\nsize = \"1M\"\nstride_pages = 0\n";
        let err = crate::Scenario::from_toml_str(text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("workload[0].params") && err.contains("stride_pages"),
            "{err}"
        );
    }
}
