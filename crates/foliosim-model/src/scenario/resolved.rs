//! What a scenario resolves to and what chose each value (the release table, the scenario, or
//! a default), as `foliosim show` prints it: `# ` lines, so the output stays valid TOML.

use super::releases::{MmChange, Row, TABLE};
use super::{Kernel, Scenario};
use serde::Serialize;
use std::fmt::Write;

/// One resolved setting: its scenario key, its value and what chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub key: &'static str,
    pub value: String,
    pub chosen_by: String,
}

/// "release table: <row> (<release>, <commit>) on|off".
fn by_row(row: &Row, on: bool) -> String {
    let commit = if row.commit.is_empty() {
        String::new()
    } else {
        format!(", {}", row.commit)
    };
    let state = if on { "on" } else { "off" };
    format!(
        "release table: {} ({}{commit}) {state}",
        row.name, row.release
    )
}

fn by_change(s: &Scenario, change: MmChange) -> String {
    by_row(change.row(), s.kernel.version.has(change))
}

/// A serde enum's name as a scenario spells it.
fn spelled<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".into(),
    }
}

/// The scenario's value when it set one, else the release table's.
fn override_or(set: bool, table: String) -> String {
    if set {
        "scenario".into()
    } else {
        table
    }
}

/// "scenario" when the value differs from the schema's default, else "default".
fn set_or_default<T: PartialEq>(value: &T, default: &T) -> String {
    if value == default {
        "default"
    } else {
        "scenario"
    }
    .into()
}

fn swap_allocator(s: &Scenario) -> Resolved {
    let k = &s.kernel;
    let (_, row) = k.version.swap_allocator();
    let table = match row {
        Some(change) => by_change(s, change),
        None => by_change(s, MmChange::SwapAllOrders),
    };
    Resolved {
        key: "kernel.swap_allocator",
        value: spelled(&k.swap_allocator()),
        chosen_by: override_or(k.swap_allocator.is_some(), table),
    }
}

/// Every setting the release or a default decides, resolved for `s`.
pub fn defaults(s: &Scenario) -> Vec<Resolved> {
    let k = &s.kernel;
    let release = k.version;
    let plain = Kernel::default();
    let mut out = vec![swap_allocator(s)];
    let mut push = |key, value: String, chosen_by: String| {
        out.push(Resolved {
            key,
            value,
            chosen_by,
        })
    };
    push(
        "kernel.zswap_large_folios",
        spelled(&k.zswap_large_folios()),
        override_or(
            k.zswap_large_folios.is_some(),
            by_change(s, MmChange::ZswapLargeFolios),
        ),
    );
    let zswap_off = if s.sysfs.zswap.enabled {
        "; off while zswap is enabled"
    } else {
        ""
    };
    push(
        "kernel.swapin_mthp",
        (k.swapin_mthp() && !s.sysfs.zswap.enabled).to_string(),
        override_or(k.swapin_mthp.is_some(), by_change(s, MmChange::SwapinMthp)) + zswap_off,
    );
    push(
        "sysfs.defrag",
        s.sysfs.thp_defrag(release).name().into(),
        override_or(
            s.sysfs.defrag.is_some(),
            by_change(s, MmChange::ThpDefragMadvise),
        ),
    );
    let lru_by = if s.kernel.lru_policy.is_some() {
        "scenario (kernel.lru_policy)"
    } else if s.sysfs.lru_gen.enabled.is_some() {
        "scenario (sysfs.lru_gen.enabled)"
    } else {
        "default"
    };
    push(
        "kernel.lru_policy",
        s.lru_policy().name().into(),
        lru_by.into(),
    );
    let gfp_retry = release.has(MmChange::GfpTranshugeRetry);
    let gfp = if gfp_retry {
        "GFP_TRANSHUGE"
    } else {
        "GFP_TRANSHUGE | __GFP_NORETRY"
    };
    push(
        "thp gfp",
        gfp.into(),
        by_change(s, MmChange::GfpTranshugeRetry),
    );
    let slow = if release.has(MmChange::OomDetectionRework) {
        "4.7+ (6.18's)"
    } else {
        "4.1's"
    };
    push(
        "page allocator slow path",
        slow.into(),
        by_change(s, MmChange::OomDetectionRework),
    );
    let kcompactd = release.has(MmChange::Kcompactd);
    push(
        "kcompactd",
        kcompactd.to_string(),
        by_change(s, MmChange::Kcompactd),
    );
    let fault = &k.thp_fault_alloc;
    push(
        "kernel.thp_fault_alloc",
        spelled(fault),
        set_or_default(fault, &plain.thp_fault_alloc),
    );
    let fallback = &k.swapout_fallback;
    let chosen = set_or_default(fallback, &plain.swapout_fallback);
    push("kernel.swapout_fallback", spelled(fallback), chosen);
    push(
        "kernel.cgroup",
        spelled(&k.cgroup),
        set_or_default(&k.cgroup, &plain.cgroup),
    );
    push(
        "kernel.oom",
        spelled(&k.oom),
        set_or_default(&k.oom, &plain.oom),
    );
    let flush = &k.migrate_tlb_flush;
    let chosen = set_or_default(flush, &plain.migrate_tlb_flush);
    push("kernel.migrate_tlb_flush", spelled(flush), chosen);
    out
}

/// The release's rows and every resolved default, as `# ` comment lines.
pub fn render(s: &Scenario) -> String {
    let release = s.kernel.version;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# kernel.version = \"{release}\": the release table's switches"
    );
    for row in &TABLE {
        let state = if release.has(row.change) {
            "on "
        } else {
            "off"
        };
        let commit = if row.commit.is_empty() {
            "(id n/a)"
        } else {
            row.commit
        };
        let _ = writeln!(
            out,
            "#   {state} {:<5} {commit:<12} {:<32} {}",
            row.release.to_string(),
            row.name,
            row.switches
        );
    }
    let _ = writeln!(out, "# resolved defaults (value: what chose it)");
    for r in defaults(s) {
        let _ = writeln!(out, "#   {} = {}: {}", r.key, r.value, r.chosen_by);
    }
    out + &crate::registry::registered()
}
