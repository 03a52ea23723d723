//! A published table to fit (docs/fit.md): rows = scenarios, each with its measured figure; the
//! costs to free, with bounds and priors; costs cited from public measurements; the named split.

use super::FitError;
use crate::engine::cost::CostModel;
use crate::reproduce::seed000;
use crate::scenario::Release;
use crate::Scenario;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// How a row's scenario is made.
#[derive(Debug, Clone)]
pub enum Experiment {
    /// Seed 000's usemem experiment (reproduce/seed000.rs); rows name `kernel` and `size`.
    Seed000 { scale: f64 },
    /// A scenario file; rows `set` scenario keys on it (sweep's dotted keys).
    Base { scenario: Box<toml::Value> },
}

/// How residuals are weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Weights {
    /// Each relative residual divided by the row's published relative spread (`std`), or by
    /// `default_rel_std` where the row has none.
    Std,
    /// Every row weighs `default_rel_std`: plain sum of squared relative residuals.
    Equal,
}

/// The most runs per row (`experiment.seeds`, `--seeds`).
pub const MAX_SEEDS: u32 = 100;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub group: String,
    /// The published figure and its spread (same unit: % change if `relative_to`).
    pub value: Option<f64>,
    pub std: Option<f64>,
    pub metric: String,
    /// Row id the figure is a % change against (its mean over seeds), or none: absolute.
    pub relative_to: Option<String>,
    #[serde(skip)]
    pub(crate) builder: RowBuilder,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RowBuilder {
    pub kernel: Option<Release>,
    pub size: Option<String>,
    pub set: Vec<(Vec<String>, toml::Value)>,
}

impl Row {
    /// What decides the row's scenario: rows with equal keys run the same scenario (one run
    /// gives each its metric).
    pub fn scenario_key(&self) -> String {
        let b = &self.builder;
        format!("{:?} {:?} {:?}", b.kernel, b.size, b.set)
    }
}

/// A cost left free by the fit.
#[derive(Debug, Clone, Serialize)]
pub struct Free {
    pub cost: String,
    pub low: f64,
    pub high: f64,
    /// Log-normal prior: median and the factor of one standard deviation (×/÷).
    pub prior: Option<f64>,
    pub prior_factor: Option<f64>,
    /// Where the prior or the bounds come from (a citation, or "estimate: ...").
    pub source: String,
}

/// A cost set from a public measurement (not fitted).
#[derive(Debug, Clone, Serialize)]
pub struct Cited {
    pub cost: String,
    pub value: f64,
    pub source: String,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub source: String,
    /// Where it was read from ("" for a table given as text).
    pub path: String,
    pub experiment: Experiment,
    pub seeds: u32,
    pub weights: Weights,
    pub default_rel_std: f64,
    pub rows: Vec<Row>,
    pub free: Vec<Free>,
    pub cited: Vec<Cited>,
    pub baseline_group: Option<String>,
    pub proposal_group: Option<String>,
    /// The rows fitted when no split is named.
    pub default_fit: Vec<String>,
    /// The profile of the experiment's machine (costs not freed nor cited come from it).
    pub profile: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    name: String,
    #[serde(default)]
    source: String,
    experiment: ExperimentFile,
    #[serde(default)]
    split: SplitFile,
    #[serde(default)]
    row: Vec<RowFile>,
    #[serde(default)]
    free: Vec<FreeFile>,
    #[serde(default)]
    cited: Vec<CitedFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    builtin: Option<String>,
    base: Option<String>,
    scale: Option<f64>,
    #[serde(default = "one")]
    seeds: u32,
    metric: String,
    relative_to: Option<String>,
    #[serde(default = "std_weights")]
    weights: Weights,
    #[serde(default = "five_percent")]
    default_rel_std: f64,
}

fn one() -> u32 {
    1
}
fn std_weights() -> Weights {
    Weights::Std
}
fn five_percent() -> f64 {
    0.05
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SplitFile {
    baseline: Option<String>,
    proposal: Option<String>,
    fit: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFile {
    id: String,
    #[serde(default)]
    group: String,
    value: Option<f64>,
    std: Option<f64>,
    metric: Option<String>,
    relative_to: Option<String>,
    kernel: Option<String>,
    size: Option<String>,
    #[serde(default)]
    set: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FreeFile {
    cost: String,
    low: f64,
    high: f64,
    prior: Option<f64>,
    prior_factor: Option<f64>,
    #[serde(default)]
    source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CitedFile {
    cost: String,
    value: f64,
    source: String,
}

/// The largest row figure (value or std) in absolute value: room for absolute metrics such as
/// bytes per second, far from where squared residuals overflow.
const MAX_ROW_FIGURE: f64 = 1e15;

fn bad(field: impl Into<String>, message: impl Into<String>) -> FitError {
    FitError::Table {
        field: field.into(),
        message: message.into(),
    }
}

/// A cost name the model knows, or an error listing them.
pub fn check_cost_name(field: &str, name: &str) -> Result<(), FitError> {
    if CostModel::NAMES.contains(&name) {
        Ok(())
    } else {
        Err(bad(
            field,
            format!(
                "unknown cost `{name}`; allowed: {}",
                CostModel::NAMES.join(", ")
            ),
        ))
    }
}

/// Check one free cost's bounds and prior.
pub fn check_free(field: &str, f: &Free) -> Result<(), FitError> {
    check_cost_name(&format!("{field}.cost"), &f.cost)?;
    if !(f.low > 0.0 && f.low.is_finite()) {
        return Err(bad(
            format!("{field}.low"),
            format!(
                "{}; allowed: a number of ns > 0 (the fit works on log(cost))",
                f.low
            ),
        ));
    }
    if !(f.high.is_finite() && f.high <= 1e12) {
        return Err(bad(
            format!("{field}.high"),
            format!("{}; allowed: a finite number of ns <= 1e12", f.high),
        ));
    }
    if f.low > f.high {
        return Err(bad(
            field,
            format!(
                "bounds of `{}`: low {} > high {}; allowed: low <= high",
                f.cost, f.low, f.high
            ),
        ));
    }
    if let Some(p) = f.prior {
        if !(p >= f.low && p <= f.high) {
            return Err(bad(
                format!("{field}.prior"),
                format!("{p}; allowed: within the bounds {} ..= {}", f.low, f.high),
            ));
        }
    }
    match f.prior_factor {
        Some(k) if !(k > 1.0 && k.is_finite()) => Err(bad(
            format!("{field}.prior_factor"),
            format!("{k}; allowed: a finite factor > 1 (one standard deviation is ×/÷ it)"),
        )),
        Some(_) if f.prior.is_none() => Err(bad(
            format!("{field}.prior_factor"),
            "given without `prior`; allowed: both or neither",
        )),
        _ => Ok(()),
    }
}

impl Table {
    pub fn load(path: &Path) -> Result<Table, FitError> {
        let text = crate::footprint::read_toml(path).map_err(|e| FitError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut t = Table::from_toml_str(&text, path.parent())?;
        t.path = path.display().to_string();
        Ok(t)
    }

    /// Parse a table; a `base` scenario path is relative to `dir`.
    pub fn from_toml_str(text: &str, dir: Option<&Path>) -> Result<Table, FitError> {
        let f: TableFile = toml::from_str(text).map_err(|e| bad("table", e.to_string()))?;
        let e = &f.experiment;
        let experiment = parse_experiment(e, dir)?;
        let rows = parse_rows(&f.row, &experiment, e)?;
        let free = parse_free(&f.free)?;
        let cited = parse_cited(&f.cited, &free)?;
        let default_fit = default_fit(&f.split, &rows)?;
        let profile = experiment_profile(&experiment);
        let t = Table {
            name: f.name,
            source: f.source,
            path: String::new(),
            experiment,
            seeds: e.seeds,
            weights: e.weights,
            default_rel_std: e.default_rel_std,
            rows,
            free,
            cited,
            baseline_group: f.split.baseline,
            proposal_group: f.split.proposal,
            default_fit,
            profile,
        };
        t.check_ids("split.fit", &t.default_fit)?;
        // Every row must build a valid scenario: a bad `set` is an error now, not mid-fit.
        for r in &t.rows {
            t.scenario(r, 1, &BTreeMap::new())?;
        }
        Ok(t)
    }

    /// The row with this id.
    pub fn row(&self, id: &str) -> Option<usize> {
        self.rows.iter().position(|r| r.id == id)
    }

    /// Every id is a row with a published value.
    pub fn check_ids(&self, field: &str, ids: &[String]) -> Result<Vec<usize>, FitError> {
        let all: Vec<&str> = self.rows.iter().map(|r| r.id.as_str()).collect();
        ids.iter()
            .map(|id| {
                let i = self.row(id).ok_or_else(|| {
                    bad(
                        field,
                        format!("`{id}` is not a row; allowed: {}", all.join(", ")),
                    )
                })?;
                if self.rows[i].value.is_none() {
                    return Err(bad(field, format!("row `{id}` has no published value")));
                }
                Ok(i)
            })
            .collect()
    }

    /// Row `r`'s scenario for `seed`, with `costs` overriding the profile (validated).
    pub fn scenario(
        &self,
        r: &Row,
        seed: u64,
        costs: &BTreeMap<String, f64>,
    ) -> Result<Scenario, FitError> {
        let mut s = match &self.experiment {
            Experiment::Seed000 { scale } => seed000::scenario(
                r.builder.kernel.expect("seed000 row has a kernel"),
                r.builder.size.as_deref().expect("seed000 row has a size"),
                *scale,
                seed,
            ),
            Experiment::Base { scenario } => {
                let mut v = (**scenario).clone();
                for (path, value) in &r.builder.set {
                    crate::sweep::axes::set_path(&mut v, path, value.clone())
                        .map_err(|m| bad(format!("row `{}`.set", r.id), m))?;
                }
                let text = toml::to_string(&v)
                    .map_err(|e| bad(format!("row `{}`", r.id), e.to_string()))?;
                let mut s = Scenario::from_toml_str(&text)
                    .map_err(|e| bad(format!("row `{}`.set", r.id), e.to_string()))?;
                s.seed = seed;
                s
            }
        };
        for c in &self.cited {
            s.costs.insert(c.cost.clone(), c.value);
        }
        for (k, v) in costs {
            s.costs.insert(k.clone(), *v);
        }
        s.validate()
            .map_err(|e| bad(format!("row `{}`", r.id), e.to_string()))?;
        Ok(s)
    }

    /// The reference rows (targets of `relative_to`) the given rows need.
    pub fn with_references(&self, rows: &[usize]) -> Vec<usize> {
        let mut out: Vec<usize> = rows.to_vec();
        for &i in rows {
            if let Some(b) = &self.rows[i].relative_to {
                out.push(self.row(b).expect("checked"));
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Is row `i` a reference of a relative figure measured against itself (always 0)?
    pub fn is_own_reference(&self, i: usize) -> bool {
        self.rows[i].relative_to.as_deref() == Some(self.rows[i].id.as_str())
    }
}

/// The experiment every row varies: builtin seed000 (at a scale) or a `base` scenario file;
/// then its seed count and default relative std.
fn parse_experiment(e: &ExperimentFile, dir: Option<&Path>) -> Result<Experiment, FitError> {
    let experiment = match (&e.builtin, &e.base) {
        (Some(b), None) if b == "seed000" => {
            let scale = e.scale.unwrap_or(1.0);
            if !(scale > 0.0 && scale <= 4.0) {
                return Err(bad(
                    "experiment.scale",
                    format!("{scale}; allowed: 0 < scale <= 4"),
                ));
            }
            Experiment::Seed000 { scale }
        }
        (Some(b), None) => {
            return Err(bad(
                "experiment.builtin",
                format!("`{b}`; allowed: seed000 (or `base` = a scenario file)"),
            ))
        }
        (None, Some(p)) => {
            if e.scale.is_some() {
                return Err(bad(
                    "experiment.scale",
                    "only with `builtin`; size a `base` scenario in its file",
                ));
            }
            load_base(p, dir)?
        }
        _ => {
            return Err(bad(
                "experiment",
                "exactly one of `builtin` (seed000) and `base` (a scenario file)",
            ))
        }
    };
    if !(1..=MAX_SEEDS).contains(&e.seeds) {
        return Err(bad(
            "experiment.seeds",
            format!("{}; allowed: 1 ..= {MAX_SEEDS}", e.seeds),
        ));
    }
    if !(e.default_rel_std > 0.0 && e.default_rel_std.is_finite()) {
        return Err(bad(
            "experiment.default_rel_std",
            format!("{}; allowed: a finite number > 0", e.default_rel_std),
        ));
    }
    Ok(experiment)
}

/// A `base` scenario file (relative to the table's directory), validated and kept as TOML.
fn load_base(p: &str, dir: Option<&Path>) -> Result<Experiment, FitError> {
    let path = dir.map_or_else(|| Path::new(p).to_path_buf(), |d| d.join(p));
    let text = crate::footprint::read_toml(&path).map_err(|err| FitError::Io {
        path: path.display().to_string(),
        message: err.to_string(),
    })?;
    let s = Scenario::from_toml_str(&text)
        .map_err(|err| bad("experiment.base", format!("{}: {err}", path.display())))?;
    let value: toml::Value = toml::from_str(&s.to_toml_string())
        .map_err(|err| bad("experiment.base", err.to_string()))?;
    Ok(Experiment::Base {
        scenario: Box::new(value),
    })
}

/// The `[[row]]`s: unique ids, a scenario recipe fitting the experiment, finite figures; then
/// every `relative_to` names a row of the same metric that is not itself relative.
fn parse_rows(
    files: &[RowFile],
    experiment: &Experiment,
    e: &ExperimentFile,
) -> Result<Vec<Row>, FitError> {
    let mut rows: Vec<Row> = vec![];
    for (i, r) in files.iter().enumerate() {
        let field = format!("row[{i}]");
        if r.id.is_empty() || rows.iter().any(|x| x.id == r.id) {
            return Err(bad(
                format!("{field}.id"),
                format!("`{}`; allowed: a non-empty id unique in the table", r.id),
            ));
        }
        let builder = row_builder(&field, r, experiment)?;
        check_row_figures(&field, r)?;
        rows.push(Row {
            id: r.id.clone(),
            group: r.group.clone(),
            value: r.value,
            std: r.std,
            metric: r.metric.clone().unwrap_or_else(|| e.metric.clone()),
            relative_to: r
                .relative_to
                .clone()
                .or_else(|| e.relative_to.clone())
                .filter(|s| !s.is_empty()),
            builder,
        });
    }
    if rows.is_empty() {
        return Err(bad("row", "no rows; allowed: one [[row]] per scenario"));
    }
    check_relative_to(&rows)?;
    Ok(rows)
}

/// How a row builds its scenario: seed000 rows name a kernel and a size, `base` rows `set`
/// scenario keys.
fn row_builder(field: &str, r: &RowFile, experiment: &Experiment) -> Result<RowBuilder, FitError> {
    let mut builder = RowBuilder::default();
    match experiment {
        Experiment::Seed000 { .. } => {
            let k = r.kernel.as_deref().unwrap_or("");
            builder.kernel = Some(*seed000::KERNELS.iter().find(|v| v.name() == k).ok_or_else(
                || {
                    bad(
                        format!("{field}.kernel"),
                        format!("`{k}`; allowed: 6.9, 6.10"),
                    )
                },
            )?);
            let s = r.size.as_deref().unwrap_or("");
            if !seed000::SIZES.contains(&s) {
                return Err(bad(
                    format!("{field}.size"),
                    format!("`{s}`; allowed: {}", seed000::SIZES.join(", ")),
                ));
            }
            builder.size = Some(s.to_string());
            if !r.set.is_empty() {
                return Err(bad(
                    format!("{field}.set"),
                    "only with a `base` scenario; seed000 rows name `kernel` and `size`",
                ));
            }
        }
        Experiment::Base { .. } => {
            if r.kernel.is_some() || r.size.is_some() {
                return Err(bad(
                    field,
                    "`kernel`/`size` are for builtin seed000 rows; use `set` with a base",
                ));
            }
            for (k, v) in &r.set {
                let path = crate::sweep::axes::parse_key(k)
                    .map_err(|err| bad(format!("{field}.set"), err.to_string()))?;
                builder.set.push((path, v.clone()));
            }
        }
    }
    Ok(builder)
}

/// A row's published value and std are finite and in range.
fn check_row_figures(field: &str, r: &RowFile) -> Result<(), FitError> {
    // Residuals are squared: a figure near 1e308 would make the objective infinite.
    if let Some(v) = r.value.filter(|v| v.is_nan() || v.abs() > MAX_ROW_FIGURE) {
        return Err(bad(
            format!("{field}.value"),
            format!("{v}; allowed: a finite number in -1e15 ..= 1e15"),
        ));
    }
    if let Some(s) = r.std.filter(|s| !(*s >= 0.0 && *s <= MAX_ROW_FIGURE)) {
        return Err(bad(
            format!("{field}.std"),
            format!("{s}; allowed: a finite number in 0 ..= 1e15"),
        ));
    }
    Ok(())
}

/// Each `relative_to` names a row id, of the same metric, not relative to a third row.
fn check_relative_to(rows: &[Row]) -> Result<(), FitError> {
    for (i, r) in rows.iter().enumerate() {
        if let Some(base) = &r.relative_to {
            let Some(b) = rows.iter().find(|x| &x.id == base) else {
                return Err(bad(
                    format!("row[{i}].relative_to"),
                    format!("`{base}` is not a row id"),
                ));
            };
            if b.relative_to.is_some() && b.id != r.id && b.relative_to.as_ref() != Some(base) {
                return Err(bad(
                    format!("row[{i}].relative_to"),
                    format!("`{base}` is itself relative to another row"),
                ));
            }
            if b.metric != r.metric {
                return Err(bad(
                    format!("row[{i}].relative_to"),
                    format!("`{base}` measures `{}`, not `{}`", b.metric, r.metric),
                ));
            }
        }
    }
    Ok(())
}

/// The `[[free]]` costs the fit moves: bounds, an optional prior, each cost once.
fn parse_free(files: &[FreeFile]) -> Result<Vec<Free>, FitError> {
    let mut free = vec![];
    for (i, fr) in files.iter().enumerate() {
        let x = Free {
            cost: fr.cost.clone(),
            low: fr.low,
            high: fr.high,
            prior: fr.prior,
            prior_factor: fr.prior.map(|_| fr.prior_factor.unwrap_or(10.0)),
            source: fr.source.clone(),
        };
        if fr.prior_factor.is_some() && fr.prior.is_none() {
            return Err(bad(
                format!("free[{i}].prior_factor"),
                "given without `prior`; allowed: both or neither",
            ));
        }
        check_free(&format!("free[{i}]"), &x)?;
        if free.iter().any(|y: &Free| y.cost == x.cost) {
            return Err(bad(
                format!("free[{i}].cost"),
                format!("`{}` is freed twice", x.cost),
            ));
        }
        free.push(x);
    }
    Ok(free)
}

/// The `[[cited]]` costs held at a published value: named cost, value in range, a source, each
/// cost once and never also freed.
fn parse_cited(files: &[CitedFile], free: &[Free]) -> Result<Vec<Cited>, FitError> {
    let mut cited = vec![];
    for (i, c) in files.iter().enumerate() {
        check_cost_name(&format!("cited[{i}].cost"), &c.cost)?;
        if !(c.value >= 0.0 && c.value <= 1e12) {
            return Err(bad(
                format!("cited[{i}].value"),
                format!("{}; allowed: 0 ..= 1e12 ns", c.value),
            ));
        }
        if cited.iter().any(|y: &Cited| y.cost == c.cost) {
            return Err(bad(
                format!("cited[{i}].cost"),
                format!(
                    "`{}` is cited twice; allowed: one [[cited]] per cost",
                    c.cost
                ),
            ));
        }
        if free.iter().any(|y: &Free| y.cost == c.cost) {
            return Err(bad(
                format!("cited[{i}].cost"),
                format!(
                    "`{}` is also a [[free]] cost; allowed: a cost either cited or freed, not both",
                    c.cost
                ),
            ));
        }
        if c.source.trim().is_empty() {
            return Err(bad(
                format!("cited[{i}].source"),
                "empty; a cited cost names its source",
            ));
        }
        cited.push(Cited {
            cost: c.cost.clone(),
            value: c.value,
            source: c.source.clone(),
        });
    }
    Ok(cited)
}

/// The `[split]`'s groups name row groups; the rows fitted by default are `split.fit`, else the
/// baseline group's published rows, else every published row.
fn default_fit(split: &SplitFile, rows: &[Row]) -> Result<Vec<String>, FitError> {
    let groups: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
    for (name, g) in [
        ("split.baseline", &split.baseline),
        ("split.proposal", &split.proposal),
    ] {
        if let Some(g) = g {
            if !groups.contains(&g.as_str()) {
                return Err(bad(name, format!("`{g}` is no row's group")));
            }
        }
    }
    Ok(match (&split.fit, &split.baseline) {
        (Some(ids), _) => ids.clone(),
        (None, Some(g)) => rows
            .iter()
            .filter(|r| &r.group == g && r.value.is_some())
            .map(|r| r.id.clone())
            .collect(),
        (None, None) => rows
            .iter()
            .filter(|r| r.value.is_some())
            .map(|r| r.id.clone())
            .collect(),
    })
}

/// The cost profile of the experiment's machine.
fn experiment_profile(experiment: &Experiment) -> String {
    match experiment {
        Experiment::Seed000 { .. } => seed000::scenario(Release::V6_9, "4K", 0.05, 1)
            .machine
            .cost_profile
            .clone(),
        Experiment::Base { scenario } => scenario
            .get("machine")
            .and_then(|m| m.get("cost_profile"))
            .and_then(|p| p.as_str())
            .unwrap_or("vm-6.18-2cpu")
            .to_string(),
    }
}
