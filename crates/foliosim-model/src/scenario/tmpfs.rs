//! tmpfs mounts in a scenario (`[[tmpfs]]`): shmem files workloads write and read
//! (mm/shmem.rs), each mount with its `size=` and `huge=` options.

use super::{format_size, invalid, Bytes, ScenarioError, PAGE_SIZE};
use serde::{Deserialize, Serialize};

/// The `huge=` mount option (mm/shmem.c SHMEM_HUGE_*).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShmemHuge {
    /// No large folios (the tmpfs default: tmpfs_huge is SHMEM_HUGE_NEVER).
    #[default]
    Never,
    /// Large folios for every new page.
    Always,
    /// Large folios only where the folio lies within i_size (or the write's end).
    WithinSize,
    /// Large folios only when madvise()/fadvise() asked: never for write(2).
    Advise,
}

/// `/sys/kernel/mm/transparent_hugepage/shmem_enabled`: besides the mount values (which apply
/// to the internal shm_mnt only), `deny` turns large folios off on every mount and `force`
/// turns PMD-sized ones on everywhere (testing options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShmemEnabled {
    Always,
    WithinSize,
    Advise,
    /// The kernel's default.
    #[default]
    Never,
    Deny,
    Force,
}

impl ShmemEnabled {
    pub fn is_default(&self) -> bool {
        *self == ShmemEnabled::Never
    }
}

/// `/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/shmem_enabled` (6.11+): the orders
/// of anonymous shmem (huge_shmem_orders_*). No `deny`/`force` per size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShmemSizeEnabled {
    Always,
    WithinSize,
    Advise,
    Never,
    /// The top-level `shmem_enabled` (the PMD size's default; other sizes default to never).
    Inherit,
}

impl ShmemSizeEnabled {
    /// As the kernel spells it in sysfs.
    pub fn name(self) -> &'static str {
        match self {
            ShmemSizeEnabled::Always => "always",
            ShmemSizeEnabled::WithinSize => "within_size",
            ShmemSizeEnabled::Advise => "advise",
            ShmemSizeEnabled::Never => "never",
            ShmemSizeEnabled::Inherit => "inherit",
        }
    }
}

/// One tmpfs mount (`[[tmpfs]]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmpfsSpec {
    /// What workloads call it.
    pub name: String,
    /// `size=`: the most the mount's files may hold, memory and swap together (max_blocks).
    /// Default: half of machine.memory, as shmem_default_max_blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
    /// `huge=`.
    #[serde(default)]
    pub huge: ShmemHuge,
}

impl TmpfsSpec {
    /// max_blocks in pages, given the machine's memory.
    pub fn max_pages(&self, memory: Bytes) -> u64 {
        self.size.map_or(memory.pages() / 2, Bytes::pages)
    }
}

/// The mounts' names are distinct and their sizes whole pages within 1 page ..= 4T; not with
/// MGLRU (its page-table aging knows no shmem folio: mm/shmem.rs).
pub fn validate(mounts: &[TmpfsSpec], lru_gen: bool) -> Result<(), ScenarioError> {
    if lru_gen && !mounts.is_empty() {
        return Err(invalid(
            "sysfs.lru_gen.enabled",
            "true",
            "false with a [[tmpfs]] (the model's MGLRU does not age shmem folios yet)",
        ));
    }
    for (i, m) in mounts.iter().enumerate() {
        if m.name.is_empty() || mounts[..i].iter().any(|o| o.name == m.name) {
            return Err(invalid(
                format!("tmpfs[{i}].name"),
                format!("`{}`", m.name),
                "a non-empty name no other [[tmpfs]] has",
            ));
        }
        if let Some(size) = m.size {
            if size.0 < PAGE_SIZE || size.0 > 1 << 42 || !size.0.is_multiple_of(PAGE_SIZE) {
                return Err(invalid(
                    format!("tmpfs[{i}].size"),
                    format_size(size.0),
                    "a multiple of 4K in 4K ..= 4T",
                ));
            }
        }
    }
    Ok(())
}

/// The index of the `[[tmpfs]]` named `name`, or an error naming `field` and the mounts.
pub fn find(mounts: &[TmpfsSpec], field: &str, name: &str) -> Result<usize, ScenarioError> {
    mounts.iter().position(|m| m.name == name).ok_or_else(|| {
        let names: Vec<_> = mounts.iter().map(|m| format!("`{}`", m.name)).collect();
        invalid(
            field,
            format!("`{name}`"),
            format!("the name of a [[tmpfs]]: {}", names.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    fn parse(extra: &str, workload: &str) -> Result<Scenario, String> {
        let text = format!(
            "{extra}\n[[workload]]\nkind = \"kbuild\"\njobs = 2\njobs_concurrent = 1\n{workload}\n"
        );
        Scenario::from_toml_str(&text).map_err(|e| e.to_string())
    }

    #[test]
    fn bad_mounts_and_names_are_refused_naming_the_field() {
        let mount = "[[tmpfs]]\nname = \"b\"\n";
        assert!(parse(mount, "tmpfs = \"b\"").is_ok());
        let e = parse(mount, "tmpfs = \"c\"").unwrap_err();
        assert!(e.contains("tmpfs") && e.contains("`b`"), "{e}");
        let e = parse("[[tmpfs]]\nname = \"b\"\nhuge = \"sometimes\"\n", "").unwrap_err();
        assert!(e.contains("huge") || e.contains("sometimes"), "{e}");
        let e = parse("[[tmpfs]]\nname = \"b\"\nsize = \"6K\"\n", "").unwrap_err();
        assert!(e.contains("tmpfs[0].size"), "{e}");
        let e = parse(&format!("{mount}{mount}"), "").unwrap_err();
        assert!(e.contains("tmpfs[1].name"), "{e}");
        let mglru = format!("{mount}[sysfs.lru_gen]\nenabled = true\n");
        let e = parse(&mglru, "").unwrap_err();
        assert!(e.contains("sysfs.lru_gen.enabled"), "{e}");
        let e = parse(
            mount,
            "tmpfs = \"b\"\nobject_size_min = \"2M\"\nobject_size_max = \"1M\"",
        )
        .unwrap_err();
        assert!(e.contains("object_size_max"), "{e}");
    }

    #[test]
    fn per_size_shmem_enabled_names_its_field_and_the_release() {
        let v618 = "[kernel]\nversion = \"6.18\"\n";
        let ok =
            format!("{v618}[sysfs.hugepages_shmem]\n\"8K\" = \"always\"\n\"2M\" = \"inherit\"\n");
        assert!(parse(&ok, "").is_ok());
        for (bad, want) in [
            ("\"4K\" = \"always\"", "sysfs.hugepages_shmem.\"4K\""),
            ("\"48K\" = \"always\"", "sysfs.hugepages_shmem.\"48K\""),
            ("\"64K\" = \"always\"\n\"65536\" = \"never\"", "each once"),
            ("\"64K\" = \"deny\"", "deny"),
        ] {
            let e = parse(&format!("{v618}[sysfs.hugepages_shmem]\n{bad}\n"), "").unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
        let old = "[kernel]\nversion = \"6.10\"\n[sysfs.hugepages_shmem]\n\"64K\" = \"always\"\n";
        let e = parse(old, "").unwrap_err();
        assert!(e.contains("6.11"), "{e}");
    }
}
