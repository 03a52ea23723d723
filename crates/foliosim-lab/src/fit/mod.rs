//! `foliosim fit`: fit named costs to a published table measured on a machine we do not have,
//! and predict the rows left out (docs/fit.md).
//!
//! The objective is the sum of squared relative residuals of the fitted rows, each divided by
//! the row's published relative spread (a chi-square), plus a log-normal prior penalty per free
//! cost that has a prior. The optimiser is argmin's Nelder-Mead in log(cost) (solve.rs). The
//! uncertainty is the curvature at the optimum: a Gauss-Newton Fisher matrix from central
//! finite differences of the weighted residuals in log(cost) (curvature.rs), so "×/÷ 1.3"
//! means the chi-square rises by 1 when the cost moves by that factor (others re-fitted), and
//! "alone" by that factor with the others held. Predictions carry the same curvature
//! propagated to each row, and the seed-to-seed spread of the simulator.

pub mod costs_file;
pub mod curvature;
pub mod evaluate;
pub mod report;
pub mod solve;
pub mod table;

pub use evaluate::{Batch, Costs, Evaluator, Figure};
pub use table::{Free, Row, Table, Weights};

use serde::Serialize;

#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error("fit table: `{field}`: {message}")]
    Table { field: String, message: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("fit: row `{row}` failed to run: {message}")]
    Run { row: String, message: String },
    #[error("fit: {0}")]
    Invalid(String),
    #[error("fit: optimiser: {0}")]
    Solver(String),
}

/// Which rows to fit.
#[derive(Debug, Clone, PartialEq)]
pub enum Split {
    /// The table's `[split] fit` rows (by default the baseline group's).
    Default,
    /// Fit on the baseline group's rows, predict the proposal's: a patch reviewer's question.
    BaselineToProposal,
    /// The other way round.
    ProposalToBaseline,
    /// These row ids.
    Rows(Vec<String>),
}

impl Split {
    pub fn parse(text: &str) -> Result<Split, FitError> {
        match text {
            "default" => Ok(Split::Default),
            "baseline-to-proposal" | "baseline" => Ok(Split::BaselineToProposal),
            "proposal-to-baseline" | "proposal" => Ok(Split::ProposalToBaseline),
            _ => Err(FitError::Invalid(format!(
                "split `{text}`; allowed: default, baseline-to-proposal, proposal-to-baseline \
                 (or --fit-rows ID,ID,...)"
            ))),
        }
    }

    fn name(&self) -> String {
        match self {
            Split::Default => "default".into(),
            Split::BaselineToProposal => "baseline-to-proposal".into(),
            Split::ProposalToBaseline => "proposal-to-baseline".into(),
            Split::Rows(ids) => format!("rows {}", ids.join(",")),
        }
    }
}

#[derive(Debug, Clone)]
pub struct FitOptions {
    pub split: Split,
    /// Threads running scenarios (default: all local cores).
    pub jobs: usize,
    /// Nelder-Mead iteration limit.
    pub max_iters: u64,
    /// Start from the best point of a 3-per-axis grid (n <= 3 free costs).
    pub grid_start: bool,
    /// Also run leave-one-out over the rows.
    pub loo: bool,
    /// Finite-difference step in log(cost) for the curvature (0.1: ±10 %).
    pub step_ln: f64,
}

impl Default for FitOptions {
    fn default() -> FitOptions {
        FitOptions {
            split: Split::Default,
            jobs: crate::sweep::local::default_jobs(),
            max_iters: 80,
            grid_start: true,
            loo: false,
            step_ln: 0.1,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FreeResult {
    pub cost: String,
    pub value: f64,
    pub low: f64,
    pub high: f64,
    pub prior: Option<f64>,
    pub prior_factor: Option<f64>,
    pub source: String,
    /// One standard deviation as a factor (×/÷), the other free costs re-fitted; None: the
    /// fit is flat along this cost (not identified by these rows).
    pub factor: Option<f64>,
    /// The same with the other costs held at their fitted values.
    pub factor_alone: Option<f64>,
    /// "low" / "high" when the optimum sits at a bound: the rows want a value the bounds call
    /// implausible, a failure of the model rather than a success of the fit.
    pub at_bound: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowResult {
    pub id: String,
    pub group: String,
    /// Fitted (its residual is in the objective) or predicted.
    pub fitted: bool,
    pub published: Option<f64>,
    pub published_std: Option<f64>,
    pub predicted: f64,
    /// Seed-to-seed std of the simulator's figure.
    pub sim_std: f64,
    /// The fit's uncertainty propagated to this row (one std, same unit).
    pub fit_spread: Option<f64>,
    /// predicted - published.
    pub error: Option<f64>,
    /// Is the prediction within the published std of the published value?
    pub inside_spread: Option<bool>,
    /// error / sqrt(published_std² + fit_spread²).
    pub z: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fit {
    pub table: String,
    pub table_path: String,
    pub table_source: String,
    pub profile: String,
    pub split: String,
    pub fit_rows: Vec<String>,
    pub seeds: u32,
    pub scale: Option<f64>,
    pub free: Vec<FreeResult>,
    pub rows: Vec<RowResult>,
    /// Weighted sum of squared relative residuals of the fitted rows, and the prior penalty.
    pub chi2: f64,
    pub prior_penalty: f64,
    pub iterations: u64,
    pub converged: bool,
    pub warnings: Vec<String>,
    /// Every cost the fit used that is not the profile's (fitted and cited), ns.
    pub costs: Costs,
}

#[derive(Debug, Clone, Serialize)]
pub struct LooRow {
    pub left_out: String,
    pub published: f64,
    pub published_std: Option<f64>,
    pub predicted: f64,
    pub fit_spread: Option<f64>,
    pub error: f64,
    pub inside_spread: Option<bool>,
    /// The free costs fitted without this row.
    pub costs: Costs,
    pub at_bound: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub fit: Fit,
    pub loo: Vec<LooRow>,
    /// Simulator runs made (cache misses).
    pub runs: usize,
}

/// The row indices a split fits.
pub fn split_rows(table: &Table, split: &Split) -> Result<Vec<usize>, FitError> {
    let group = |g: &Option<String>, name: &str| -> Result<Vec<String>, FitError> {
        let g = g.as_ref().ok_or_else(|| {
            FitError::Invalid(format!(
                "split {name}: the table names no [split] {name} group"
            ))
        })?;
        Ok(table
            .rows
            .iter()
            .filter(|r| &r.group == g && r.value.is_some())
            .map(|r| r.id.clone())
            .collect())
    };
    let ids = match split {
        Split::Default => table.default_fit.clone(),
        Split::BaselineToProposal => group(&table.baseline_group, "baseline")?,
        Split::ProposalToBaseline => group(&table.proposal_group, "proposal")?,
        Split::Rows(ids) => ids.clone(),
    };
    table.check_ids("fit rows", &ids)
}

/// One residual's weighted value (residual / relative spread) at `predicted`.
fn weighted_residual(table: &Table, r: &Row, predicted: f64) -> f64 {
    let m = r.value.expect("fitted rows have values");
    let scale = if r.relative_to.is_some() {
        100.0 + m
    } else {
        m.abs().max(f64::MIN_POSITIVE)
    };
    let sigma = match (table.weights, r.std) {
        (Weights::Std, Some(s)) if s > 0.0 => s / scale,
        _ => table.default_rel_std,
    };
    (predicted - m) / scale / sigma
}

/// Free costs' values at normalised log coordinates `z` (0 = low, 1 = high).
pub fn costs_at(free: &[Free], z: &[f64]) -> Costs {
    free.iter()
        .zip(z)
        .map(|(f, &z)| {
            let (a, b) = (f.low.ln(), f.high.ln());
            (f.cost.clone(), (a + z * (b - a)).exp())
        })
        .collect()
}

fn z_of(f: &Free, value: f64) -> f64 {
    let (a, b) = (f.low.ln(), f.high.ln());
    if b > a {
        ((value.ln() - a) / (b - a)).clamp(0.0, 1.0)
    } else {
        0.5
    }
}

/// The prior penalty of free costs at `costs`: sum of (ln(value / prior) / ln(factor))².
fn prior_penalty(free: &[Free], costs: &Costs) -> f64 {
    free.iter()
        .filter_map(|f| {
            let (p, k) = (f.prior?, f.prior_factor?);
            Some(((costs[&f.cost] / p).ln() / k.ln()).powi(2))
        })
        .fold(0.0, |a, b| a + b)
}

struct TableObjective<'a, 't> {
    eval: &'a Evaluator<'t>,
    free: &'a [Free],
    fit: &'a [usize],
}

impl TableObjective<'_, '_> {
    fn chi2(&self, figures: &[Option<Figure>]) -> f64 {
        let t = self.eval.table;
        self.fit
            .iter()
            .map(|&i| {
                weighted_residual(t, &t.rows[i], figures[i].expect("fit row run").mean).powi(2)
            })
            .sum()
    }
}

impl solve::Objective for TableObjective<'_, '_> {
    fn batch(&self, zs: &[Vec<f64>]) -> Result<Vec<f64>, FitError> {
        let points: Vec<Costs> = zs.iter().map(|z| costs_at(self.free, z)).collect();
        let figs = self.eval.figures(&points, self.fit)?;
        Ok(points
            .iter()
            .zip(&figs)
            .map(|(c, f)| self.chi2(f) + prior_penalty(self.free, c))
            .collect())
    }
}

/// Fit `free` on rows `fit` of the evaluator's table; predict every row.
pub fn fit_rows(
    eval: &Evaluator,
    free: &[Free],
    fit: &[usize],
    split: &str,
    opts: &FitOptions,
) -> Result<Fit, FitError> {
    let t = eval.table;
    check_fit_shape(free, fit)?;
    let objective = TableObjective { eval, free, fit };
    let start: Vec<f64> = free
        .iter()
        .map(|f| f.prior.map_or(0.5, |p| z_of(f, p)))
        .collect();
    let sol = solve::minimise(&objective, &start, opts.grid_start, opts.max_iters)?;
    let best = costs_at(free, &sol.z);
    let curv = curvature::at(eval, free, fit, &best, opts.step_ln, |r, p| {
        weighted_residual(t, &t.rows[r], p)
    })?;
    let figs = &curv.center;
    let mut chi2 = 0.0;
    for &i in fit {
        chi2 += weighted_residual(t, &t.rows[i], figs[i].expect("run").mean).powi(2);
    }
    let mut warnings = vec![];
    let free_results: Vec<FreeResult> = free
        .iter()
        .enumerate()
        .map(|(j, f)| free_result(f, sol.z[j], best[&f.cost], &curv, j, &mut warnings))
        .collect();
    if !sol.converged {
        warnings.push(format!(
            "Nelder-Mead stopped at its iteration limit ({}) before its tolerance",
            sol.iterations
        ));
    }
    let rows = (0..t.rows.len())
        .map(|i| row_result(&t.rows[i], fit.contains(&i), figs[i], curv.spread[i]))
        .collect();
    let mut costs: Costs = t.cited.iter().map(|c| (c.cost.clone(), c.value)).collect();
    costs.extend(best.clone());
    Ok(Fit {
        table: t.name.clone(),
        table_path: t.path.clone(),
        table_source: t.source.clone(),
        profile: t.profile.clone(),
        split: split.to_string(),
        fit_rows: fit.iter().map(|&i| t.rows[i].id.clone()).collect(),
        seeds: t.seeds,
        scale: match &t.experiment {
            table::Experiment::Seed000 { scale } => Some(*scale),
            table::Experiment::Base { .. } => None,
        },
        free: free_results,
        rows,
        chi2,
        prior_penalty: prior_penalty(free, &best),
        iterations: sol.iterations,
        converged: sol.converged,
        warnings,
        costs,
    })
}

/// At least one free cost, fewer than the fitted rows, each within its bounds.
fn check_fit_shape(free: &[Free], fit: &[usize]) -> Result<(), FitError> {
    if free.is_empty() {
        return Err(FitError::Invalid(
            "no free costs; allowed: one or more [[free]] (or --free NAME=LOW:HIGH)".into(),
        ));
    }
    if free.len() + 1 > fit.len() {
        return Err(FitError::Invalid(format!(
            "{} free costs but {} fitted rows: at most rows - 1 = {} may be free \
             (fewer rows than free costs leave the fit flat)",
            free.len(),
            fit.len(),
            fit.len().saturating_sub(1)
        )));
    }
    for (i, f) in free.iter().enumerate() {
        table::check_free(&format!("free[{i}]"), f)?;
    }
    Ok(())
}

/// Free cost `j` (`f`) at the optimum: its value (`z` across its bounds) and uncertainty,
/// with a warning when it sits at a bound.
fn free_result(
    f: &Free,
    z: f64,
    value: f64,
    curv: &curvature::Curvature,
    j: usize,
    warnings: &mut Vec<String>,
) -> FreeResult {
    let at_bound = if z <= 0.005 {
        Some("low".to_string())
    } else if z >= 0.995 {
        Some("high".to_string())
    } else {
        None
    };
    if let Some(b) = &at_bound {
        warnings.push(format!(
            "{} = {:.4} ns sits at its {b} bound: the rows want a value the bounds call \
             implausible (a mechanism the model lacks, not a calibration)",
            f.cost, value
        ));
    }
    FreeResult {
        cost: f.cost.clone(),
        value,
        low: f.low,
        high: f.high,
        prior: f.prior,
        prior_factor: f.prior_factor,
        source: f.source.clone(),
        factor: curv.sigma_ln[j].map(f64::exp),
        factor_alone: curv.sigma_ln_alone[j].map(f64::exp),
        at_bound,
    }
}

/// A row's prediction at the optimum against its published figure.
fn row_result(r: &Row, fitted: bool, figure: Option<Figure>, spread: Option<f64>) -> RowResult {
    let f = figure.expect("every row run at the optimum");
    let error = r.value.map(|m| f.mean - m);
    RowResult {
        id: r.id.clone(),
        group: r.group.clone(),
        fitted,
        published: r.value,
        published_std: r.std,
        predicted: f.mean,
        sim_std: f.std,
        fit_spread: spread,
        error,
        inside_spread: match (error, r.std) {
            (Some(e), Some(s)) => Some(e.abs() <= s),
            _ => None,
        },
        z: match (error, r.std) {
            (Some(e), Some(s)) => {
                let d = (s * s + spread.unwrap_or(0.0).powi(2)).sqrt();
                (d > 0.0).then(|| e / d)
            }
            _ => None,
        },
    }
}

/// Leave-one-out: for each row with a published value (not a row relative to itself), fit on
/// the others and predict it.
pub fn leave_one_out(
    eval: &Evaluator,
    free: &[Free],
    opts: &FitOptions,
) -> Result<Vec<LooRow>, FitError> {
    let t = eval.table;
    let pool: Vec<usize> = (0..t.rows.len())
        .filter(|&i| t.rows[i].value.is_some())
        .collect();
    let mut out = vec![];
    for &i in &pool {
        if t.is_own_reference(i) {
            continue;
        }
        let rest: Vec<usize> = pool.iter().copied().filter(|&k| k != i).collect();
        let f = fit_rows(
            eval,
            free,
            &rest,
            &format!("leave out {}", t.rows[i].id),
            opts,
        )?;
        let r = &f.rows[i];
        out.push(LooRow {
            left_out: r.id.clone(),
            published: r.published.expect("pool rows have values"),
            published_std: r.published_std,
            predicted: r.predicted,
            fit_spread: r.fit_spread,
            error: r.error.expect("pool rows have values"),
            inside_spread: r.inside_spread,
            costs: f.free.iter().map(|x| (x.cost.clone(), x.value)).collect(),
            at_bound: f
                .free
                .iter()
                .filter(|x| x.at_bound.is_some())
                .map(|x| x.cost.clone())
                .collect(),
        });
    }
    Ok(out)
}

/// Fit a table as `opts` says (and leave-one-out if asked).
pub fn fit(table: &Table, opts: &FitOptions) -> Result<FitReport, FitError> {
    fit_with_progress(table, opts, Box::new(|_| {}))
}

/// As [`fit`], telling `progress` of every batch of simulator runs.
pub fn fit_with_progress<'t>(
    table: &'t Table,
    opts: &FitOptions,
    progress: evaluate::BatchProgress<'t>,
) -> Result<FitReport, FitError> {
    let eval = Evaluator::new(table, opts.jobs).with_progress(progress);
    let rows = split_rows(table, &opts.split)?;
    let fit = fit_rows(&eval, &table.free, &rows, &opts.split.name(), opts)?;
    let loo = if opts.loo {
        leave_one_out(&eval, &table.free, opts)?
    } else {
        vec![]
    };
    Ok(FitReport {
        fit,
        loo,
        runs: eval.runs.load(std::sync::atomic::Ordering::Relaxed),
    })
}
