//! The optimiser: argmin's Nelder-Mead over the free costs in normalised log coordinates
//! (0 = low bound, 1 = high bound), started from the best point of a coarse grid (run in
//! parallel) or from the priors.

use super::FitError;
use argmin::core::{
    CostFunction, Error as ArgminError, Executor, State, TerminationReason, TerminationStatus,
};
use argmin::solver::neldermead::NelderMead;

/// What the solver minimises: `f(z)` for `z` in [0,1]^n, and a batch of points at once.
pub trait Objective: Sync {
    fn batch(&self, zs: &[Vec<f64>]) -> Result<Vec<f64>, FitError>;
}

struct Problem<'a, O: Objective> {
    objective: &'a O,
    /// The first error of a run: argmin would only see a string.
    error: &'a std::sync::Mutex<Option<FitError>>,
}

/// Outside [0,1] the point is clamped and pays this much per unit squared: the simplex comes
/// back inside without the objective jumping.
const OUTSIDE_PENALTY: f64 = 1e4;

pub fn clamp01(z: &[f64]) -> (Vec<f64>, f64) {
    let mut out = Vec::with_capacity(z.len());
    let mut pen = 0.0;
    for &x in z {
        let c = x.clamp(0.0, 1.0);
        pen += OUTSIDE_PENALTY * (x - c) * (x - c);
        out.push(c);
    }
    (out, pen)
}

impl<O: Objective> CostFunction for Problem<'_, O> {
    type Param = Vec<f64>;
    type Output = f64;

    fn cost(&self, z: &Vec<f64>) -> Result<f64, ArgminError> {
        let (c, pen) = clamp01(z);
        match self.objective.batch(&[c]) {
            Ok(v) => Ok(v[0] + pen),
            Err(e) => {
                let msg = e.to_string();
                self.error.lock().unwrap().get_or_insert(e);
                Err(ArgminError::msg(msg))
            }
        }
    }
}

pub struct Solution {
    pub z: Vec<f64>,
    pub value: f64,
    pub iterations: u64,
    /// Nelder-Mead stopped on its tolerance (not on the iteration limit).
    pub converged: bool,
}

/// Minimise from `start` (or the best of a 3-per-axis grid when `grid` and n <= 3).
pub fn minimise<O: Objective>(
    objective: &O,
    start: &[f64],
    grid: bool,
    max_iters: u64,
) -> Result<Solution, FitError> {
    let n = start.len();
    let mut x0 = start.to_vec();
    if grid && (1..=3).contains(&n) {
        let levels = [0.2, 0.5, 0.8];
        let mut pts: Vec<Vec<f64>> = vec![x0.clone()];
        for idx in 0..levels.len().pow(n as u32) {
            let mut p = vec![0.0; n];
            let mut k = idx;
            for slot in p.iter_mut() {
                *slot = levels[k % 3];
                k /= 3;
            }
            pts.push(p);
        }
        let vals = objective.batch(&pts)?;
        // Ties go to the earlier point (the start): deterministic.
        let best = (0..pts.len()).fold(0, |b, i| if vals[i] < vals[b] { i } else { b });
        x0 = pts[best].clone();
    }
    // Initial simplex: x0 and one step of 0.15 along each axis, inward at the bounds.
    let mut simplex = vec![x0.clone()];
    for j in 0..n {
        let mut p = x0.clone();
        p[j] = if p[j] + 0.15 <= 1.0 {
            p[j] + 0.15
        } else {
            p[j] - 0.15
        };
        simplex.push(p);
    }
    let error = std::sync::Mutex::new(None);
    let problem = Problem {
        objective,
        error: &error,
    };
    let solver = NelderMead::new(simplex)
        .with_sd_tolerance(1e-4)
        .map_err(|e| FitError::Solver(e.to_string()))?;
    let res = Executor::new(problem, solver)
        .configure(|s| s.max_iters(max_iters))
        .run();
    if let Some(e) = error.lock().unwrap().take() {
        return Err(e);
    }
    let res = res.map_err(|e| FitError::Solver(e.to_string()))?;
    let state = res.state();
    let z = state
        .get_best_param()
        .cloned()
        .ok_or_else(|| FitError::Solver("no best point".into()))?;
    let (z, _) = clamp01(&z);
    Ok(Solution {
        z,
        value: state.get_best_cost(),
        iterations: state.get_iter(),
        converged: matches!(
            state.get_termination_status(),
            TerminationStatus::Terminated(TerminationReason::SolverConverged)
        ),
    })
}
