//! Python bindings of foliosim: the extension module `foliosim._foliosim`.
//!
//! The functions take and return text (TOML in, JSON out); the Python package `foliosim`
//! (python/foliosim/__init__.py) wraps them in a friendlier API with pandas DataFrames.
//! Scenario errors raise `ValueError`, simulation errors `RuntimeError`. The GIL is released
//! while the simulator runs.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod sweep;

fn parse(scenario_toml: &str) -> PyResult<foliosim::Scenario> {
    foliosim::Scenario::from_toml_str(scenario_toml)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Run a scenario given as TOML text; return the run's result as JSON text. `sample_interval`
/// ("100ms", "auto") overrides the scenario's `[report] sample_interval` (time series).
///
/// Raises ValueError if the scenario is invalid, RuntimeError if the simulation fails.
#[pyfunction]
#[pyo3(signature = (scenario_toml, sample_interval = None))]
fn run_json(
    py: Python<'_>,
    scenario_toml: &str,
    sample_interval: Option<&str>,
) -> PyResult<String> {
    let mut scenario = parse(scenario_toml)?;
    if let Some(text) = sample_interval {
        scenario.report.sample_interval = Some(
            foliosim::report::spec::SampleInterval::parse(text).map_err(PyValueError::new_err)?,
        );
        scenario
            .validate()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    }
    py.allow_threads(move || foliosim::run(&scenario).map(|r| r.to_json()))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Run a scenario on the live kernel (root only; `allow_live` must be true; `enable_zswap`
/// allows turning zswap on); return the live result as JSON text. The host's settings are restored before this returns.
///
/// Raises PermissionError when refused (no opt-in, not root, not enough memory), RuntimeError
/// when the run fails.
#[pyfunction]
#[pyo3(signature = (scenario_toml, allow_live = false, enable_zswap = false))]
fn run_live_json(
    py: Python<'_>,
    scenario_toml: &str,
    allow_live: bool,
    enable_zswap: bool,
) -> PyResult<String> {
    let scenario = parse(scenario_toml)?;
    let opts = foliosim_live::LiveOptions {
        allow_live,
        timeout: None,
        enable_zswap,
    };
    py.allow_threads(move || foliosim_live::run(&scenario, &opts).map(|r| r.to_json()))
        .map_err(|e| {
            if e.downcast_ref::<foliosim_live::Refusal>().is_some() {
                pyo3::exceptions::PyPermissionError::new_err(format!("{e:#}"))
            } else {
                PyRuntimeError::new_err(format!("{e:#}"))
            }
        })
}

/// Reproduce seed 000 (usemem, 6.9 vs 6.10, 4K..2M) at `scale` with `seeds` seeds per cell;
/// return the report (scale, seeds, rows) as JSON text.
#[pyfunction]
#[pyo3(signature = (scale = 1.0, seeds = 1))]
fn reproduce_000_json(py: Python<'_>, scale: f64, seeds: u32) -> PyResult<String> {
    if !(scale > 0.0) || !scale.is_finite() {
        return Err(PyValueError::new_err(format!(
            "scale: found {scale}; allowed: a finite number > 0"
        )));
    }
    if seeds == 0 {
        return Err(PyValueError::new_err("seeds: found 0; allowed: >= 1"));
    }
    let report = py
        .allow_threads(move || {
            foliosim::reproduce::seed000::reproduce(scale, seeds, false, &mut |_, _| {})
        })
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// Parse a scenario and return it as TOML with every default written out.
#[pyfunction]
fn scenario_defaults_toml(scenario_toml: &str) -> PyResult<String> {
    Ok(parse(scenario_toml)?.to_toml_string())
}

#[pymodule]
fn _foliosim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(run_live_json, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_000_json, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_defaults_toml, m)?)?;
    sweep::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
