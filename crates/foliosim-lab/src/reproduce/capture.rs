//! Keeping the seed-1 run of each configuration of a reproduction, with its time series, for
//! `reproduce --sample-interval` and `--html`: the runs are the reproduction's own (not
//! re-run), so the tables are the same with or without it.
//!
//! The seeds' `reproduce` functions build and run their scenarios themselves (through
//! `Runs::run_all`); a capture set up around the call (`capturing`) is seen through this
//! thread's state: `run_all` prepares every scenario and keeps every result on the calling
//! thread, in plan order, whichever worker threads ran them.

use crate::report::spec::SampleInterval;
use crate::{RunResult, Scenario};
pub use foliosim_report::captured_run::CapturedRun;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

struct Capture {
    sample_interval: Option<SampleInterval>,
    runs: Vec<CapturedRun>,
}

thread_local! {
    static CAPTURE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// Run `f` (a seed's reproduce) keeping the seed-1 run of each configuration, sampled every
/// `sample_interval` if given.
pub fn capturing<R>(
    sample_interval: Option<SampleInterval>,
    f: impl FnOnce() -> R,
) -> (R, Vec<CapturedRun>) {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            CAPTURE.with(|c| c.borrow_mut().take());
        }
    }
    CAPTURE.with(|c| {
        *c.borrow_mut() = Some(Capture {
            sample_interval,
            runs: Vec::new(),
        })
    });
    let reset = Reset;
    let out = f();
    let mut runs = CAPTURE
        .with(|c| c.borrow_mut().take())
        .map_or_else(Vec::new, |c| c.runs);
    drop(reset);
    label_runs(&mut runs);
    (out, runs)
}

/// Before a run of a reproduction: sample it if a capture asks for that.
pub(crate) fn prepare(s: &mut Scenario) {
    CAPTURE.with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            if s.seed == 1 && c.sample_interval.is_some() {
                s.report.sample_interval = c.sample_interval;
            }
        }
    })
}

/// After a run of a reproduction: keep it if a capture is on and it is a seed-1 run.
pub(crate) fn keep(s: &Scenario, r: &RunResult) {
    CAPTURE.with(|c| {
        if let Some(c) = c.borrow_mut().as_mut() {
            if s.seed == 1 {
                let kinds: Vec<String> = s
                    .workloads
                    .iter()
                    .map(|w| {
                        toml::Value::try_from(w)
                            .ok()
                            .and_then(|v| v.get("kind")?.as_str().map(String::from))
                            .unwrap_or_else(|| "workload".into())
                    })
                    .collect();
                c.runs.push(CapturedRun {
                    group: kinds.join("+"),
                    label: String::new(),
                    seed: s.seed,
                    kernel: r.kernel.clone(),
                    swap_allocator: r.swap_allocator.clone(),
                    simulated_ns: r.simulated_ns,
                    scenario_toml: s.to_toml_string(),
                    timeseries: r.timeseries.clone(),
                });
            }
        }
    })
}

/// Flatten a TOML value to `path=value` pairs.
fn flatten(prefix: &str, v: &toml::Value, out: &mut BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&p, v, out);
            }
        }
        toml::Value::Array(a) if a.iter().any(|x| x.is_table()) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, out);
            }
        }
        toml::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// A dotted key's last part: `aligned_swapin` of `workload[0].aligned_swapin`.
fn last(key: &str) -> &str {
    key.rsplit('.').next().unwrap_or(key)
}

/// A differing scenario field as the seeds' tables name it ("6.10", "64K", "defrag=never",
/// "16 threads"); None for a field that says nothing by itself (an mTHP size left off, the
/// accelerator's details beside its compressor's name).
fn readable(key: &str, value: &str) -> Option<String> {
    let last = last(key);
    Some(match key {
        "kernel.version" => value.to_string(),
        _ if key.starts_with("sysfs.hugepages.") => match value {
            "never" | "-" => return None,
            _ => last.to_string(),
        },
        _ if key.starts_with("machine.iaa.") => return None,
        "sysfs.zswap.enabled" => match value {
            "false" => "no zswap".into(),
            _ => return None,
        },
        "sysfs.zswap.compressor"
        | "kernel.thp_fault_alloc"
        | "kernel.zswap_large_folios"
        | "kernel.migrate_tlb_flush" => match value {
            "-" => return None,
            _ => value.to_string(),
        },
        _ if key.ends_with(".threads") || key.ends_with(".nproc") => format!("{value} {last}"),
        _ => format!("{last}={value}"),
    })
}

/// Label each run by the fields in which the runs of its group differ (a field unset in one
/// run shows as `-`).
fn label_runs(runs: &mut [CapturedRun]) {
    let mut groups: Vec<String> = Vec::new();
    for r in runs.iter() {
        if !groups.contains(&r.group) {
            groups.push(r.group.clone());
        }
    }
    for g in groups {
        let mut members: Vec<CapturedRun> = runs.iter().filter(|r| r.group == g).cloned().collect();
        label_group(&mut members);
        let mut labelled = members.into_iter();
        for r in runs.iter_mut().filter(|r| r.group == g) {
            *r = labelled.next().expect("the same members");
        }
    }
}

fn label_group(runs: &mut [CapturedRun]) {
    let flat: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|r| {
            let mut m = BTreeMap::new();
            if let Ok(v) = r.scenario_toml.parse::<toml::Value>() {
                flatten("", &v, &mut m);
            }
            m.remove("seed");
            m.remove("report.sample_interval");
            m
        })
        .collect();
    let keys: BTreeSet<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let first = flat.first().and_then(|m| m.get(*k));
            flat.iter().any(|m| m.get(*k) != first)
        })
        .collect();
    // A yes/no field (true or false where set) reads `+name` where it is on (seed 003's
    // "6.18 +swapin_mthp"), unless that leaves two runs with one label: then `name=value`.
    let flags: BTreeSet<&String> = differing
        .iter()
        .copied()
        .filter(|k| {
            let generic = readable(k, "true").as_deref() == Some(&format!("{}=true", last(k)));
            generic
                && flat
                    .iter()
                    .all(|m| matches!(m.get(*k).map(String::as_str), None | Some("true" | "false")))
        })
        .collect();
    let labels = |explicit: bool| -> Vec<String> {
        let flags = if explicit {
            BTreeSet::new()
        } else {
            flags.clone()
        };
        flat.iter()
            .map(|m| run_label(&differing, &flags, m))
            .collect()
    };
    let mut names = labels(false);
    if names.iter().collect::<BTreeSet<_>>().len() < names.len() {
        names = labels(true);
    }
    for (r, name) in runs.iter_mut().zip(names) {
        r.label = name;
        if r.label.is_empty() {
            r.label = format!("kernel {}", r.kernel);
        }
    }
}

/// One run's label from its values `m` of the `differing` fields: readable fields first,
/// then `+name` for each of the yes/no fields `flags` that is on.
fn run_label(
    differing: &[&String],
    flags: &BTreeSet<&String>,
    m: &BTreeMap<String, String>,
) -> String {
    let (mut parts, mut on): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for k in differing {
        let value = m.get(*k).map_or("-", String::as_str);
        if flags.contains(k) {
            if value == "true" {
                on.push(format!("+{}", last(k)));
            }
        } else if let Some(p) = readable(k, value) {
            if !parts.contains(&p) {
                parts.push(p);
            }
        }
    }
    let any_size = differing.iter().any(|k| k.starts_with("sysfs.hugepages."));
    if any_size && !parts.iter().any(|p| p.ends_with('K') || p.ends_with('M')) {
        // Every mTHP size off: base pages only, as the seeds' tables say.
        parts.push("4K".into());
    }
    parts.extend(on);
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(toml: &str) -> CapturedRun {
        CapturedRun {
            group: "thp_swap_allocator_test".into(),
            label: String::new(),
            seed: 1,
            kernel: String::new(),
            swap_allocator: String::new(),
            simulated_ns: 0,
            scenario_toml: toml.into(),
            timeseries: None,
        }
    }

    /// Seed 003's allocator test: yes/no fields read `+name` where on, after the kernel.
    #[test]
    fn flags_read_as_plus_name_and_labels_stay_unique() {
        let run = |version: &str, swapin: Option<bool>, aligned: bool| {
            let swapin = swapin.map_or(String::new(), |on| format!("swapin_mthp = {on}\n"));
            captured(&format!(
                "[kernel]\nversion = \"{version}\"\n{swapin}[[workload]]\naligned_swapin = {aligned}\n"
            ))
        };
        let mut runs = vec![
            run("6.10", None, false),
            run("6.10", None, true),
            run("6.18", Some(false), false),
            run("6.18", Some(true), true),
        ];
        label_runs(&mut runs);
        let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "6.10",
                "6.10 +aligned_swapin",
                "6.18",
                "6.18 +swapin_mthp +aligned_swapin"
            ]
        );
        // Unset and false read alike: where that makes two labels one, every flag is named.
        let mut runs = vec![run("6.18", None, false), run("6.18", Some(false), false)];
        label_runs(&mut runs);
        assert_eq!(runs[0].label, "swapin_mthp=-");
        assert_eq!(runs[1].label, "swapin_mthp=false");
    }
}
