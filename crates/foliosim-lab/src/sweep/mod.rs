//! `foliosim sweep` and `foliosim compare`: a base scenario run over the cartesian product of
//! axes (scenario keys and their values) times seeds, one tidy results table (Parquet, CSV),
//! and mmtests-style compare tables over it. Shared by the CLI and the Python bindings.
//!
//! A sweep's output directory holds `plan.json` (every run: its axis values, seed, scenario
//! and id), `runs/<id>.json` (one file per finished run, written as it finishes), and the
//! merged `sweep.parquet` (and `sweep.csv`). A rerun skips every run whose file is there, so
//! an interrupted sweep loses nothing it finished. Runs can come from any backend (local
//! threads, Ray workers): the table is merged from the run files, in plan order, so it is the
//! same, byte for byte, whichever backend ran them.

pub mod axes;
pub mod compare;
pub mod local;
pub mod parquet_io;
pub mod plan;
pub mod record;
pub mod table;

pub use axes::{Axis, AxisValue};
pub use plan::RunSpec;
pub use record::RunRecord;
pub use table::Table;

use crate::Scenario;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("sweep axis `{axis}`: {message}")]
    Axis { axis: String, message: String },
    #[error("sweep: {0}")]
    Invalid(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("sweep run {run} failed: {message}")]
    Run { run: String, message: String },
}

impl SweepError {
    pub fn axis(axis: impl Into<String>, message: impl Into<String>) -> SweepError {
        SweepError::Axis {
            axis: axis.into(),
            message: message.into(),
        }
    }
}

/// Write `bytes` to `path` through a temporary file in the same directory, renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |source| SweepError::Io { path: p, source }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// A planned sweep: the axis names and every run, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub axes: Vec<String>,
    pub runs: Vec<RunSpec>,
}

/// What an output directory held before a sweep took it ([`Plan::check_replaces`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Existing {
    /// No sweep.
    None,
    /// The same sweep, or one this sweep extends: its finished runs are reused.
    Extended,
    /// Another sweep, replaced by `--force`; what differed.
    Replaced(Vec<String>),
}

/// Seeds 1..=n, as `reproduce` numbers them.
pub fn seeds(n: u32) -> Vec<u64> {
    (1..=n as u64).collect()
}

impl Plan {
    /// Expand and check every run (see [`plan::plan`]); nothing runs.
    pub fn new(base: &Scenario, axes: &[Axis], seeds: &[u64]) -> Result<Plan, SweepError> {
        Ok(Plan {
            axes: axes.iter().map(|a| a.name.clone()).collect(),
            runs: plan::plan(base, axes, seeds)?,
        })
    }

    /// The runs with no stored record under `out` (or a stale or broken one).
    pub fn pending(&self, out: &Path) -> Vec<RunSpec> {
        let mut seen = std::collections::BTreeSet::new();
        self.runs
            .iter()
            // Two axis values may give one scenario (one id): run it once.
            .filter(|r| seen.insert(r.id.clone()) && record::load(out, r).is_none())
            .cloned()
            .collect()
    }

    /// Write `plan.json` under `out` (what the sweep is; the Ray backend reads its runs).
    pub fn store(&self, out: &Path) -> Result<PathBuf, SweepError> {
        let path = out.join("plan.json");
        let text = serde_json::to_string_pretty(self).expect("plans serialize");
        write_atomic(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Whether this plan may take over `out`: yes when nothing is there, the same sweep is
    /// (resume), or this one extends it (more seeds or values over the same base: every stored
    /// run is one of ours). Anything else would replace the table of another sweep without a
    /// word, so it is refused unless `force`.
    pub fn check_replaces(&self, out: &Path, force: bool) -> Result<Existing, SweepError> {
        if !out.join("plan.json").exists() {
            return Ok(Existing::None);
        }
        let differences = match Plan::load(out) {
            Ok(old) => self.differences_from(&old),
            Err(e) => vec![format!("its plan cannot be read ({e})")],
        };
        if differences.is_empty() {
            return Ok(Existing::Extended);
        }
        if force {
            return Ok(Existing::Replaced(differences));
        }
        Err(SweepError::Invalid(format!(
            "{} holds a different sweep: {}; this one would replace its plan and table. Use \
             another --out, or --force (Python: force=True) to replace it (finished runs stay \
             under {})",
            out.display(),
            differences.join("; "),
            record::runs_dir(out).display()
        )))
    }

    /// What `old` has that this plan would lose: empty when this plan is `old` or a superset.
    pub fn differences_from(&self, old: &Plan) -> Vec<String> {
        if self.axes != old.axes {
            let names = |p: &Plan| {
                if p.axes.is_empty() {
                    "(none)".to_string()
                } else {
                    p.axes.join(", ")
                }
            };
            return vec![format!(
                "its axes are {}, this sweep's {}",
                names(old),
                names(self)
            )];
        }
        // Runs by (axis values, seed): the id also hashes the foliosim version, which alone
        // changes nothing a user chose.
        let ours: std::collections::BTreeMap<_, _> = self
            .runs
            .iter()
            .map(|r| ((&r.axes, r.seed), &r.scenario_toml))
            .collect();
        let mut out = vec![];
        let dropped: Vec<&RunSpec> = old
            .runs
            .iter()
            .filter(|r| !ours.contains_key(&(&r.axes, r.seed)))
            .collect();
        if !dropped.is_empty() {
            let seeds = |p: &Plan| -> std::collections::BTreeSet<u64> {
                p.runs.iter().map(|r| r.seed).collect()
            };
            let (old_seeds, new_seeds) = (seeds(old), seeds(self));
            let lost: Vec<String> = old_seeds
                .difference(&new_seeds)
                .map(u64::to_string)
                .collect();
            let mut what = format!(
                "{} of its {} runs are not in this sweep (first: {})",
                dropped.len(),
                old.runs.len(),
                record::describe(dropped[0])
            );
            if !lost.is_empty() {
                what.push_str(&format!("; seeds {} dropped", lost.join(", ")));
            }
            out.push(what);
        }
        let changed: Vec<&RunSpec> = old
            .runs
            .iter()
            .filter(|r| {
                ours.get(&(&r.axes, r.seed))
                    .is_some_and(|s| **s != r.scenario_toml)
            })
            .collect();
        if let Some(first) = changed.first() {
            out.push(format!(
                "{} of its runs have another scenario here (another base scenario or \
                 defaults; first: {})",
                changed.len(),
                record::describe(first)
            ));
        }
        out
    }

    pub fn load(out: &Path) -> Result<Plan, SweepError> {
        let path = out.join("plan.json");
        let text = std::fs::read_to_string(&path).map_err(|source| SweepError::Io {
            path: path.display().to_string(),
            source,
        })?;
        serde_json::from_str(&text)
            .map_err(|e| SweepError::Invalid(format!("{}: {e}", path.display())))
    }

    /// The results table from the stored records; an error names the runs that are missing.
    pub fn merge(&self, out: &Path) -> Result<Table, SweepError> {
        let mut records = Vec::with_capacity(self.runs.len());
        let mut missing = vec![];
        for r in &self.runs {
            match record::load(out, r) {
                Some(rec) => records.push(rec),
                None => missing.push(record::describe(r)),
            }
        }
        if !missing.is_empty() {
            return Err(SweepError::Invalid(format!(
                "{} of {} runs have no result under {} (rerun the sweep to finish them): {}",
                missing.len(),
                self.runs.len(),
                record::runs_dir(out).display(),
                missing.join("; ")
            )));
        }
        Ok(Table::from_runs(&self.axes, &self.runs, &records))
    }
}

/// What a finished sweep wrote.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub runs: usize,
    /// Runs this invocation ran; the others were found finished under the output directory.
    pub ran: usize,
    pub reused: usize,
    pub parquet: PathBuf,
    pub csv: Option<PathBuf>,
    pub columns: usize,
}

/// Merge the records into `sweep.parquet` (and `sweep.csv`) under `out`.
pub fn write_results(
    plan: &Plan,
    out: &Path,
    csv: bool,
    ran: usize,
) -> Result<(Table, Outcome), SweepError> {
    let table = plan.merge(out)?;
    let parquet = out.join("sweep.parquet");
    parquet_io::write(&table, &parquet)?;
    let csv = if csv {
        let path = out.join("sweep.csv");
        write_atomic(&path, table.to_csv().as_bytes())?;
        Some(path)
    } else {
        None
    };
    let outcome = Outcome {
        runs: plan.runs.len(),
        ran,
        reused: plan.runs.len() - ran,
        parquet,
        csv,
        columns: table.columns.len(),
    };
    Ok((table, outcome))
}
