//! Expanding a base scenario and its axes into runs: the cartesian product of the axes' values
//! (the first axis outermost) times the seeds, every run checked before any starts.

use super::axes::{canonical_key, set_path, Axis};
use super::SweepError;
use crate::Scenario;
use serde::{Deserialize, Serialize};

/// One run of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSpec {
    /// Stable hash of the foliosim version and the run's full scenario (seed included): the
    /// name of its result file, so a rerun finds what is done.
    pub id: String,
    /// (axis name, value label), in axis order.
    pub axes: Vec<(String, String)>,
    pub seed: u64,
    /// The run's scenario with every default written out.
    pub scenario_toml: String,
}

/// FNV-1a, 64 bits: stable across builds, platforms and Rust versions (std's hasher is not).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The run id: two FNV-1a hashes (of the text and of it reversed), 32 hex digits.
pub fn run_id(scenario_toml: &str) -> String {
    let text = format!("foliosim {}\n{scenario_toml}", env!("CARGO_PKG_VERSION"));
    let rev: Vec<u8> = text.bytes().rev().collect();
    format!("{:016x}{:016x}", fnv1a64(text.as_bytes()), fnv1a64(&rev))
}

/// Parse a scenario from its TOML tree and validate it.
fn scenario_of(tree: toml::Value) -> Result<Scenario, String> {
    let s: Scenario = tree
        .try_into()
        .map_err(|e: toml::de::Error| format!("scenario: {}", e.message().trim()))?;
    s.validate().map_err(|e| e.to_string())?;
    Ok(s)
}

/// Apply one value of each axis (by index) to the base tree.
fn apply(base: &toml::Value, axes: &[Axis], pick: &[usize]) -> Result<toml::Value, SweepError> {
    let mut tree = base.clone();
    for (axis, &i) in axes.iter().zip(pick) {
        for (path, value) in &axis.values[i].set {
            set_path(&mut tree, path, value.clone()).map_err(|e| {
                SweepError::axis(&axis.name, format!("key `{}`: {e}", canonical_key(path)))
            })?;
        }
    }
    Ok(tree)
}

/// The most runs a sweep may plan: each run holds its scenario's text in the plan (a few KiB),
/// and each takes seconds to minutes; more is a mistake in the axes, not an experiment.
pub const MAX_PLAN_RUNS: u64 = 100_000;

/// The number of runs `axes` x `seeds` make, refused above [`MAX_PLAN_RUNS`] before any
/// is expanded.
pub fn check_size(axes: &[Axis], seeds: u64) -> Result<u64, SweepError> {
    let runs = axes
        .iter()
        .try_fold(seeds, |n, a| n.checked_mul(a.values.len() as u64));
    match runs {
        Some(n) if n <= MAX_PLAN_RUNS => Ok(n),
        _ => Err(SweepError::Invalid(format!(
            "the sweep would plan {} runs ({} axes of {} values x {seeds} seeds); allowed: at most {MAX_PLAN_RUNS} runs (fewer values or --seeds)",
            runs.map_or("more than 2^64".into(), |n| n.to_string()),
            axes.len(),
            axes.iter()
                .map(|a| a.values.len().to_string())
                .collect::<Vec<_>>()
                .join(" x "),
        ))),
    }
}

/// Every run of the sweep, in order: axes as an odometer (the last axis fastest), then seeds.
/// Errors, before anything runs: an axis without values, two axes of one name or key, `seed`
/// as an axis, a value the scenario rejects (naming the axis, the value, the field and what
/// is allowed), a combination the scenario rejects.
pub fn plan(base: &Scenario, axes: &[Axis], seeds: &[u64]) -> Result<Vec<RunSpec>, SweepError> {
    if seeds.is_empty() {
        return Err(SweepError::Invalid(
            "no seeds: --seeds must be at least 1".into(),
        ));
    }
    check_size(axes, seeds.len() as u64)?;
    check_axes(axes)?;
    let base_tree = toml::Value::try_from(base)
        .map_err(|e| SweepError::Invalid(format!("base scenario: {e}")))?;
    check_each_value_alone(&base_tree, axes)?;
    let mut runs = vec![];
    let mut pick = vec![0usize; axes.len()];
    loop {
        let tree = apply(&base_tree, axes, &pick)?;
        let labels: Vec<(String, String)> = axes
            .iter()
            .zip(&pick)
            .map(|(a, &i)| (a.name.clone(), a.values[i].label.clone()))
            .collect();
        let scenario = scenario_of(tree).map_err(|e| {
            let combo: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            SweepError::Invalid(format!(
                "the combination {} is rejected: {e}",
                combo.join(", ")
            ))
        })?;
        for &seed in seeds {
            let mut s = scenario.clone();
            s.seed = seed;
            let scenario_toml = s.to_toml_string();
            runs.push(RunSpec {
                id: run_id(&scenario_toml),
                axes: labels.clone(),
                seed,
                scenario_toml,
            });
        }
        if !odometer_step(&mut pick, axes) {
            return Ok(runs);
        }
    }
}

/// Turn the odometer of value indices one step, the last axis fastest; false once it has
/// come round to all zeros.
fn odometer_step(pick: &mut [usize], axes: &[Axis]) -> bool {
    for i in (0..axes.len()).rev() {
        pick[i] += 1;
        if pick[i] < axes[i].values.len() {
            return true;
        }
        pick[i] = 0;
    }
    false
}

const SEED_NOT_AN_AXIS: &str = "`seed` is not an axis; use --seeds N (seeds 1..=N)";

/// The axes' names and keys: no axis without values, none named `seed` or `run_id`, no name
/// twice, no value label twice within an axis, no key set by two axes.
fn check_axes(axes: &[Axis]) -> Result<(), SweepError> {
    let mut names = std::collections::BTreeSet::new();
    let mut keys = std::collections::BTreeMap::new();
    for a in axes {
        if a.values.is_empty() {
            return Err(SweepError::axis(&a.name, "no values"));
        }
        if a.name == "seed" {
            return Err(SweepError::axis(&a.name, SEED_NOT_AN_AXIS));
        }
        if a.name == "run_id" {
            return Err(SweepError::axis(
                &a.name,
                "is a column of the results; name the axis otherwise",
            ));
        }
        if !names.insert(a.name.clone()) {
            return Err(SweepError::axis(
                &a.name,
                "given twice; allowed: one axis per key (list all its values in one: KEY=V1,V2)",
            ));
        }
        check_axis_values(a, &mut keys)?;
    }
    Ok(())
}

/// One axis's values: labels unique, no `seed` key, no key another axis (in `keys`) sets.
fn check_axis_values(
    a: &Axis,
    keys: &mut std::collections::BTreeMap<String, String>,
) -> Result<(), SweepError> {
    let mut labels = std::collections::BTreeSet::new();
    for v in &a.values {
        if !labels.insert(v.label.as_str()) {
            return Err(SweepError::axis(
                &a.name,
                format!("value `{}` given twice", v.label),
            ));
        }
        for (path, _) in &v.set {
            let key = canonical_key(path);
            if key == "seed" {
                return Err(SweepError::axis(&a.name, SEED_NOT_AN_AXIS));
            }
            if let Some(other) = keys.insert(key.clone(), a.name.clone()) {
                if other != a.name {
                    return Err(SweepError::axis(
                        &a.name,
                        format!("key `{key}` is also set by axis `{other}`"),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Each value alone on the base first, so the error names the value at fault.
fn check_each_value_alone(base_tree: &toml::Value, axes: &[Axis]) -> Result<(), SweepError> {
    for a in axes {
        for v in &a.values {
            let mut tree = base_tree.clone();
            for (path, value) in &v.set {
                set_path(&mut tree, path, value.clone()).map_err(|e| {
                    SweepError::axis(&a.name, format!("key `{}`: {e}", canonical_key(path)))
                })?;
            }
            scenario_of(tree).map_err(|e| {
                SweepError::axis(&a.name, format!("value `{}` rejected: {e}", v.label))
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::axes::parse_set;
    use super::*;

    const BASE: &str = r#"
[machine]
cpus = 2
memory = "256M"
[[machine.swap]]
kind = "ramdisk"
size = "64M"
[kernel]
version = "6.10"
[[memcg]]
name = "bench"
max = "32M"
[[workload]]
kind = "usemem"
nproc = 2
size = "16M"
memcg = "bench"
"#;

    fn base() -> (Scenario, toml::Value) {
        let s = Scenario::from_toml_str(BASE).unwrap();
        let t = toml::Value::try_from(&s).unwrap();
        (s, t)
    }

    #[test]
    fn product_of_axes_times_seeds_in_odometer_order() {
        let (s, t) = base();
        let axes = vec![
            parse_set("kernel.version=6.9,6.10,6.18", &t).unwrap(),
            parse_set(r#"sysfs.hugepages."64K"=always,never"#, &t).unwrap(),
        ];
        let runs = plan(&s, &axes, &[1, 2]).unwrap();
        assert_eq!(runs.len(), 3 * 2 * 2);
        let first: Vec<_> = runs[..4]
            .iter()
            .map(|r| (r.axes[1].1.as_str(), r.seed))
            .collect();
        assert_eq!(
            first,
            [("always", 1), ("always", 2), ("never", 1), ("never", 2)]
        );
        assert_eq!(runs[4].axes[0], ("kernel.version".into(), "6.10".into()));
        let parsed = Scenario::from_toml_str(&runs[5].scenario_toml).unwrap();
        assert_eq!(parsed.kernel.version.name(), "6.10");
        assert_eq!(parsed.seed, 2);
        assert_eq!(parsed.sysfs.orders_enabled(false) & (1 << 4), 1 << 4);
        // Ids: distinct per run, the same on a second plan.
        let ids: std::collections::BTreeSet<_> = runs.iter().map(|r| &r.id).collect();
        assert_eq!(ids.len(), runs.len());
        assert_eq!(plan(&s, &axes, &[1, 2]).unwrap(), runs);
        // No axes: one run per seed of the base.
        assert_eq!(plan(&s, &[], &[1, 2, 3]).unwrap().len(), 3);
    }

    #[test]
    fn bad_axes_are_errors_naming_the_key_and_what_is_allowed() {
        let (s, t) = base();
        let err = |arg: &str| {
            plan(&s, &[parse_set(arg, &t).unwrap()], &[1])
                .unwrap_err()
                .to_string()
        };
        let e = err("kernel.version=6.9,6.19");
        assert!(
            e.contains("kernel.version") && e.contains("6.19") && e.contains("6.18"),
            "{e}"
        );
        let e = err("kernel.verison=6.9");
        assert!(
            e.contains("kernel.verison") && e.contains("unknown field") && e.contains("`version`"),
            "{e}"
        );
        let e = err(r#"sysfs.hugepages."65K"=always"#);
        assert!(e.contains("sysfs.hugepages") && e.contains("65K"), "{e}");
        let e = err("machine.cpus=0");
        assert!(
            e.contains("machine.cpus") && e.contains("1 ..= 1024"),
            "{e}"
        );
        let e = err("workload.3.nproc=1");
        assert!(e.contains("array of 1"), "{e}");
        let e = err("seed=1,2");
        assert!(e.contains("--seeds"), "{e}");
        let twice = vec![
            parse_set("kernel.version=6.9", &t).unwrap(),
            parse_set("kernel.version=6.10", &t).unwrap(),
        ];
        assert!(plan(&s, &twice, &[1]).is_err());
        assert!(plan(&s, &[], &[]).is_err());
    }
}
