//! Bindings of foliosim_lab::sweep (python/foliosim/sweep.py wraps them): plan a sweep into an
//! output directory, run its pending runs (local threads, or one at a time for a Ray worker),
//! store records, merge the results table, compare. JSON text in and out.

use crate::{catch, without_gil};
use foliosim_lab::sweep::{self, axes, compare, Plan, RunSpec, SweepError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::Path;

fn value_err(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn sweep_err(e: SweepError) -> PyErr {
    match e {
        SweepError::Axis { .. } | SweepError::Invalid(_) => PyValueError::new_err(e.to_string()),
        SweepError::Io { .. } | SweepError::Run { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}

/// Plan a sweep and write its plan.json under `out`; return the plan as JSON and what it
/// replaced (empty unless `force` let it take over another sweep's `out`: Plan::check_replaces).
/// `axes_json` is a JSON list of axes as in an axes file's `[[axis]]` tables; `axes_toml` an
/// axes file's text (its axes come first); `seeds` None: the file's `seeds`, else 5.
#[pyfunction]
#[pyo3(signature = (base_toml, out, axes_json = None, axes_toml = None, seeds = None, check_invariants = false, force = false))]
fn sweep_plan_json(
    base_toml: &str,
    out: &str,
    axes_json: Option<&str>,
    axes_toml: Option<&str>,
    seeds: Option<u32>,
    check_invariants: bool,
    force: bool,
) -> PyResult<(String, Vec<String>)> {
    catch(|| {
        plan_json(
            base_toml,
            out,
            axes_json,
            axes_toml,
            seeds,
            check_invariants,
            force,
        )
    })?
}

fn plan_json(
    base_toml: &str,
    out: &str,
    axes_json: Option<&str>,
    axes_toml: Option<&str>,
    seeds: Option<u32>,
    check_invariants: bool,
    force: bool,
) -> PyResult<(String, Vec<String>)> {
    let mut base = foliosim::Scenario::from_toml_str(base_toml).map_err(value_err)?;
    base.check_invariants |= check_invariants;
    let mut all = vec![];
    let mut file_seeds = None;
    if let Some(text) = axes_toml {
        let file = axes::AxesFile::from_toml_str(text).map_err(sweep_err)?;
        file_seeds = file.seeds;
        all.extend(file.axes().map_err(sweep_err)?);
    }
    if let Some(json) = axes_json {
        let specs: Vec<axes::AxisSpec> =
            serde_json::from_str(json).map_err(|e| value_err(format!("axes: {e}")))?;
        for s in &specs {
            all.push(s.to_axis().map_err(sweep_err)?);
        }
    }
    let seeds = seeds.or(file_seeds).unwrap_or(5);
    if seeds == 0 {
        return Err(value_err("seeds: found 0; allowed: >= 1"));
    }
    let plan = Plan::new(&base, &all, &sweep::seeds(seeds)).map_err(sweep_err)?;
    let replaced = match plan
        .check_replaces(Path::new(out), force)
        .map_err(sweep_err)?
    {
        sweep::Existing::Replaced(what) => what,
        _ => vec![],
    };
    plan.store(Path::new(out)).map_err(sweep_err)?;
    let json = serde_json::to_string(&plan).expect("plans serialize");
    Ok((json, replaced))
}

/// The runs of `out`'s plan that have no stored result yet, as a JSON list.
#[pyfunction]
fn sweep_pending_json(out: &str) -> PyResult<String> {
    catch(|| {
        let plan = Plan::load(Path::new(out)).map_err(sweep_err)?;
        Ok(serde_json::to_string(&plan.pending(Path::new(out))).expect("runs serialize"))
    })?
}

/// Run one planned run (a JSON RunSpec) on the sim; return its record as JSON. For workers.
#[pyfunction]
fn sweep_run_json(py: Python<'_>, run_json: &str) -> PyResult<String> {
    let spec: RunSpec = serde_json::from_str(run_json).map_err(value_err)?;
    without_gil(py, move || {
        sweep::record::run_one(&spec)
            .map(|r| r.to_json())
            .map_err(sweep_err)
    })
}

/// Store a run's record (JSON, from `sweep_run_json`) under `out`.
#[pyfunction]
fn sweep_store_record(out: &str, record_json: &str) -> PyResult<()> {
    let rec: sweep::RunRecord = serde_json::from_str(record_json).map_err(value_err)?;
    catch(|| sweep::record::store(Path::new(out), &rec).map_err(sweep_err))?
}

/// Run the pending runs of `out`'s plan on `jobs` local threads (0: every core); return how
/// many ran.
#[pyfunction]
#[pyo3(signature = (out, jobs = 0))]
fn sweep_run_local(py: Python<'_>, out: &str, jobs: usize) -> PyResult<usize> {
    let out = Path::new(out).to_path_buf();
    let plan = Plan::load(&out).map_err(sweep_err)?;
    let pending = plan.pending(&out);
    let jobs = if jobs == 0 {
        sweep::local::default_jobs()
    } else {
        jobs
    };
    let n = pending.len();
    without_gil(py, move || {
        sweep::local::run_pending(&out, &pending, jobs, &mut |_, _| {}).map_err(sweep_err)
    })?;
    Ok(n)
}

/// Merge `out`'s records into sweep.parquet (and sweep.csv); return what was written as JSON.
#[pyfunction]
#[pyo3(signature = (out, csv = false, ran = 0))]
fn sweep_merge_json(out: &str, csv: bool, ran: usize) -> PyResult<String> {
    catch(|| {
        let plan = Plan::load(Path::new(out)).map_err(sweep_err)?;
        let (_, outcome) =
            sweep::write_results(&plan, Path::new(out), csv, ran).map_err(sweep_err)?;
        Ok(serde_json::to_string(&outcome).expect("outcomes serialize"))
    })?
}

/// Compare a results table (JSON, as foliosim.sweep builds it from a DataFrame; or None and
/// `parquet` a path) with options (JSON: metrics, columns, baseline, filters); return the
/// comparison as JSON.
#[pyfunction]
#[pyo3(signature = (options_json, table_json = None, parquet = None))]
fn compare_json(
    options_json: &str,
    table_json: Option<&str>,
    parquet: Option<&str>,
) -> PyResult<String> {
    catch(|| compare_inner(options_json, table_json, parquet))?
}

fn compare_inner(
    options_json: &str,
    table_json: Option<&str>,
    parquet: Option<&str>,
) -> PyResult<String> {
    let table: sweep::Table = match (table_json, parquet) {
        (Some(t), None) => serde_json::from_str(t).map_err(|e| value_err(format!("table: {e}")))?,
        (None, Some(p)) => sweep::parquet_io::read(Path::new(p)).map_err(sweep_err)?,
        _ => return Err(value_err("compare: give a table or a parquet path")),
    };
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Opts {
        #[serde(default)]
        metrics: Vec<String>,
        #[serde(default)]
        columns: Option<Vec<String>>,
        #[serde(default)]
        baseline: Option<String>,
        #[serde(default)]
        filters: Vec<(String, String)>,
    }
    let o: Opts = serde_json::from_str(options_json).map_err(value_err)?;
    let c = compare::compare(
        &table,
        &compare::CompareOptions {
            metrics: o.metrics,
            columns: o.columns,
            baseline: o.baseline,
            filters: o.filters,
        },
    )
    .map_err(sweep_err)?;
    serde_json::to_string(&c).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sweep_plan_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_pending_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_store_record, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_local, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_merge_json, m)?)?;
    m.add_function(wrap_pyfunction!(compare_json, m)?)?;
    Ok(())
}
