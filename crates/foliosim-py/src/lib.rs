//! Python bindings of foliosim: the extension module `foliosim._foliosim`.
//!
//! The functions take and return text (TOML or JSON in, JSON out); the Python package `foliosim`
//! (python/foliosim/__init__.py) wraps them in a friendlier API with pandas DataFrames.
//! Scenario errors raise `ValueError`, simulation errors `RuntimeError`, and so does a panic
//! inside the simulator (a bug of foliosim: PyO3 would raise PanicException, which the
//! docstrings do not promise and `except Exception` does not catch). The GIL is released
//! while the simulator runs.

// pyo3 0.22's #[pyfunction] expansion converts each PyResult's PyErr into PyErr.
#![allow(clippy::useless_conversion)]

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

mod sweep;

/// A panic caught in the simulator, as its message.
pub(crate) struct Panic(String);

impl From<Panic> for PyErr {
    fn from(p: Panic) -> PyErr {
        PyRuntimeError::new_err(format!(
            "internal error in foliosim (please report): {}",
            p.0
        ))
    }
}

/// Run `f`, catching a panic (the default hook has printed it, with its location, to stderr).
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Panic> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        Panic(
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into()),
        )
    })
}

/// `f` with the GIL released, a panic in it raised as RuntimeError.
pub(crate) fn without_gil<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> PyResult<T> + Send,
) -> PyResult<T> {
    py.allow_threads(move || catch(f).map_err(|p| p.0))
        .map_err(|msg| PyErr::from(Panic(msg)))?
}

fn parse(scenario_toml: &str) -> PyResult<foliosim::Scenario> {
    catch(|| foliosim::Scenario::from_toml_str(scenario_toml))?
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Objects' null members dropped, recursively: a dict's None leaves the field out (its default
/// applies), as TOML, which has no null, always did.
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// A scenario given as JSON (a Python dict through `json.dumps`), validated.
fn parse_json(scenario_json: &str) -> PyResult<foliosim::Scenario> {
    use serde::Deserialize;
    let mut value: serde_json::Value = serde_json::from_str(scenario_json)
        .map_err(|e| PyValueError::new_err(format!("scenario: not JSON: {e}")))?;
    drop_nulls(&mut value);
    let parsed = catch(|| foliosim::Scenario::deserialize(&value))?;
    let scenario = match parsed {
        Ok(s) => s,
        Err(e) => return Err(PyValueError::new_err(field_error(&value, e))),
    };
    scenario
        .validate()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(scenario)
}

/// The message of a serde error for `value`, naming the field: serde_json's own says neither
/// the field nor (from a Value) the place, so the value is read again as TOML, whose errors
/// quote the offending key and line.
fn field_error(value: &serde_json::Value, e: serde_json::Error) -> String {
    match toml::to_string(value).map(|text| foliosim::Scenario::from_toml_str(&text)) {
        Ok(Err(named)) => named.to_string(),
        _ => format!("scenario: {e}"),
    }
}

/// A scenario given as JSON (a dict), validated, as TOML with every default written out.
///
/// Raises ValueError naming the field if the scenario is invalid.
#[pyfunction]
fn scenario_toml_from_json(scenario_json: &str) -> PyResult<String> {
    let scenario = parse_json(scenario_json)?;
    Ok(catch(|| scenario.to_toml_string())?)
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
    without_gil(py, move || {
        foliosim::run(&scenario)
            .map(|r| r.to_json())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    })
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
    without_gil(py, move || {
        foliosim_live::run(&scenario, &opts)
            .map(|r| r.to_json())
            .map_err(|e| {
                if e.downcast_ref::<foliosim_live::Refusal>().is_some() {
                    pyo3::exceptions::PyPermissionError::new_err(format!("{e:#}"))
                } else {
                    PyRuntimeError::new_err(format!("{e:#}"))
                }
            })
    })
}

/// The seed documents `reproduce_json` takes, as the allowed values of its errors.
const SEEDS_ALLOWED: &str = "\"000\", \"001\", \"002\", \"003\", \"004\" (or the ints 0 ..= 4)";

/// A seed document's number from "000".."004" (leading zeros optional, as the CLI takes them)
/// or an int 0..=4.
fn seed_number(seed: &Bound<'_, PyAny>) -> PyResult<u8> {
    let unknown = |found: String| {
        PyValueError::new_err(format!(
            "seed: unknown seed {found}; allowed: {SEEDS_ALLOWED}"
        ))
    };
    if seed.is_instance_of::<pyo3::types::PyBool>() {
        return Err(unknown(seed.repr()?.to_string()));
    }
    if let Ok(n) = seed.extract::<i64>() {
        return u8::try_from(n)
            .ok()
            .filter(|&n| n <= 4)
            .ok_or_else(|| unknown(n.to_string()));
    }
    if let Ok(text) = seed.extract::<String>() {
        let digits = text.trim_start_matches('0');
        return match digits {
            "" | "1" | "2" | "3" | "4" if (1..=3).contains(&text.len()) => {
                Ok(digits.bytes().next().map_or(0, |d| d - b'0'))
            }
            _ => Err(unknown(format!("{text:?}"))),
        };
    }
    Err(unknown(format!("of type {}", seed.get_type().name()?)))
}

/// Reproduce a seed document's experiment (`seed`: "000" ..= "004" or 0 ..= 4) at `scale` with
/// `seeds` seeds per configuration; return its report (scale, seeds, its tables) as JSON text,
/// the same as `foliosim reproduce <seed> --format json`. `jobs` runs at a time (default: every
/// core); the report is the same whatever the count.
///
/// Raises ValueError for an unknown seed or bad arguments, RuntimeError if a run fails.
#[pyfunction]
#[pyo3(signature = (seed, scale = 1.0, seeds = 1, jobs = None))]
fn reproduce_json(
    py: Python<'_>,
    seed: &Bound<'_, PyAny>,
    scale: f64,
    seeds: u32,
    jobs: Option<usize>,
) -> PyResult<String> {
    let which = seed_number(seed)?;
    foliosim_lab::reproduce::check_scale("scale", u32::from(which), scale)
        .map_err(PyValueError::new_err)?;
    foliosim_lab::reproduce::check_seeds("seeds", seeds).map_err(PyValueError::new_err)?;
    if jobs == Some(0) {
        return Err(PyValueError::new_err(
            "jobs: found 0; allowed: >= 1 (None: every core)",
        ));
    }
    let jobs = jobs.unwrap_or_else(foliosim_lab::sweep::local::default_jobs);
    without_gil(py, move || {
        use foliosim_lab::reproduce::{seed000, seed001, seed002, seed003, seed004};
        let mut runs = foliosim_lab::reproduce::Runs::new(jobs);
        let costs = std::collections::BTreeMap::new();
        // Every seed's reproduce takes the same arguments; its report is Serialize.
        macro_rules! json {
            ($reproduce:path) => {
                $reproduce(scale, seeds, false, &costs, &mut runs)
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))
                    .and_then(|report| {
                        serde_json::to_string(&report)
                            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
                    })
            };
        }
        match which {
            0 => json!(seed000::reproduce_with_costs),
            1 => json!(seed001::reproduce),
            2 => json!(seed002::reproduce),
            3 => json!(seed003::reproduce),
            _ => json!(seed004::reproduce),
        }
    })
}

/// Fit free costs to a published table (TOML text; a `base` scenario path is relative to
/// `table_dir`) and predict the rows left out; return (report JSON, costs file TOML).
/// `free` replaces the table's free costs: (name, low, high, prior, prior_factor) tuples.
///
/// Raises ValueError for a bad table or arguments, RuntimeError if a run fails.
#[pyfunction]
#[pyo3(signature = (table_toml, table_dir = None, split = "default", fit_rows = vec![], free = vec![], loo = false, scale = None, seeds = None, jobs = None, max_iters = 80))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn fit_json(
    py: Python<'_>,
    table_toml: &str,
    table_dir: Option<String>,
    split: &str,
    fit_rows: Vec<String>,
    free: Vec<(String, f64, f64, Option<f64>, Option<f64>)>,
    loo: bool,
    scale: Option<f64>,
    seeds: Option<u32>,
    jobs: Option<usize>,
    max_iters: u64,
) -> PyResult<(String, String)> {
    use foliosim_lab::fit::{self, table::Experiment, FitError, FitOptions, Free, Split, Table};
    let value_err = |e: FitError| PyValueError::new_err(e.to_string());
    let mut table =
        catch(|| Table::from_toml_str(table_toml, table_dir.as_deref().map(std::path::Path::new)))?
            .map_err(value_err)?;
    if let Some(scale) = scale {
        match &mut table.experiment {
            Experiment::Seed000 { scale: s } if scale > 0.0 && scale <= 4.0 => *s = scale,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "scale: {scale}; allowed: 0 < scale <= 4, for builtin experiments"
                )))
            }
        }
    }
    if let Some(seeds) = seeds {
        let max = foliosim_lab::fit::table::MAX_SEEDS;
        if !(1..=max).contains(&seeds) {
            return Err(PyValueError::new_err(format!(
                "seeds: found {seeds}; allowed: 1 ..= {max}"
            )));
        }
        table.seeds = seeds;
    }
    // No worker thread would take the runs: the fit would wait for ever.
    if jobs == Some(0) {
        return Err(PyValueError::new_err(
            "jobs: found 0; allowed: >= 1 (None: every core)",
        ));
    }
    if !free.is_empty() {
        table.free = free
            .into_iter()
            .enumerate()
            .map(|(i, (cost, low, high, prior, prior_factor))| {
                let f = Free {
                    cost,
                    low,
                    high,
                    prior,
                    prior_factor: prior.map(|_| prior_factor.unwrap_or(10.0)),
                    source: "set from Python (foliosim.fit free=)".into(),
                };
                fit::table::check_free(&format!("free[{i}]"), &f).map(|_| f)
            })
            .collect::<Result<_, _>>()
            .map_err(value_err)?;
    }
    let split = if fit_rows.is_empty() {
        Split::parse(split).map_err(value_err)?
    } else {
        Split::Rows(fit_rows)
    };
    let opts = FitOptions {
        split,
        jobs: jobs.unwrap_or_else(foliosim_lab::sweep::local::default_jobs),
        max_iters,
        loo,
        ..FitOptions::default()
    };
    without_gil(py, move || {
        let report = fit::fit(&table, &opts).map_err(|e| match e {
            FitError::Run { .. } | FitError::Solver(_) => PyRuntimeError::new_err(e.to_string()),
            e => PyValueError::new_err(e.to_string()),
        })?;
        let cited = table
            .cited
            .iter()
            .map(|c| (c.cost.clone(), c.source.clone()))
            .collect();
        let costs = fit::costs_file::render(&report.fit, &cited).map_err(value_err)?;
        let json =
            serde_json::to_string(&report).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok((json, costs))
    })
}

/// Parse a scenario and return it as TOML with every default written out.
#[pyfunction]
fn scenario_defaults_toml(scenario_toml: &str) -> PyResult<String> {
    let scenario = parse(scenario_toml)?;
    Ok(catch(|| scenario.to_toml_string())?)
}

/// For the tests of the bindings only (not part of the `foliosim` package): panic with
/// `message` where the simulator would run, to check that a panic reaches Python as
/// RuntimeError.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>, message: String) -> PyResult<()> {
    without_gil(py, move || -> PyResult<()> { panic!("{message}") })
}

#[pymodule]
fn _foliosim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(run_live_json, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_json, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_toml_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_defaults_toml, m)?)?;
    m.add_function(wrap_pyfunction!(fit_json, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    sweep::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
