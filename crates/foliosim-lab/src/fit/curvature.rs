//! The fit's uncertainty from the curvature at the optimum: central finite differences in
//! log(cost) of every row's figure (all rows at once, in parallel), a Gauss-Newton Fisher
//! matrix F = JᵀJ + prior from the fitted rows' weighted residuals, its inverse as the
//! covariance of log(cost), and that covariance propagated to every row's prediction.

use super::evaluate::{Costs, Evaluator, Figure};
use super::{FitError, Free};

pub struct Curvature {
    /// Every row's figure at the optimum.
    pub center: Vec<Option<Figure>>,
    /// One std of log(cost), others re-fitted (None: flat, not identified).
    pub sigma_ln: Vec<Option<f64>>,
    /// One std of log(cost) with the others held.
    pub sigma_ln_alone: Vec<Option<f64>>,
    /// One std of each row's prediction from the fit's uncertainty.
    pub spread: Vec<Option<f64>>,
}

/// Inverse of a small symmetric matrix by Gauss-Jordan with partial pivoting; None if singular.
pub fn invert(m: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = m.len();
    let scale = (0..n).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    if scale == 0.0 {
        return None;
    }
    let mut a: Vec<Vec<f64>> = m
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut r = row.clone();
            r.extend((0..n).map(|j| if i == j { 1.0 } else { 0.0 }));
            r
        })
        .collect();
    for c in 0..n {
        let p = (c..n).fold(c, |b, r| if a[r][c].abs() > a[b][c].abs() { r } else { b });
        if a[p][c].abs() < 1e-12 * scale {
            return None;
        }
        a.swap(c, p);
        let d = a[c][c];
        for x in a[c].iter_mut() {
            *x /= d;
        }
        for r in 0..n {
            if r != c {
                let f = a[r][c];
                if f != 0.0 {
                    let pivot = a[c].clone();
                    for (x, p) in a[r].iter_mut().zip(&pivot) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    Some(a.into_iter().map(|r| r[n..].to_vec()).collect())
}

/// Curvature at `best`, stepping each free cost by ×/÷ e^`h`; `resid(row, predicted)` is a
/// fitted row's weighted residual.
pub fn at(
    eval: &Evaluator,
    free: &[Free],
    fit: &[usize],
    best: &Costs,
    h: f64,
    resid: impl Fn(usize, f64) -> f64,
) -> Result<Curvature, FitError> {
    let n = free.len();
    let rows = eval.table.rows.len();
    let mut points = vec![best.clone()];
    for f in free {
        for sign in [1.0, -1.0] {
            let mut p = best.clone();
            *p.get_mut(&f.cost).expect("free cost in best") *= (sign * h).exp();
            points.push(p);
        }
    }
    let all: Vec<usize> = (0..rows).collect();
    let figs = eval.figures(&points, &all)?;
    let mean = |p: usize, r: usize| figs[p][r].expect("all rows run").mean;
    // d(figure)/d(log cost) for every row, and the fitted rows' residual Jacobian.
    let grad: Vec<Vec<f64>> = (0..rows)
        .map(|r| {
            (0..n)
                .map(|j| (mean(1 + 2 * j, r) - mean(2 + 2 * j, r)) / (2.0 * h))
                .collect()
        })
        .collect();
    let jac: Vec<Vec<f64>> = fit
        .iter()
        .map(|&r| {
            (0..n)
                .map(|j| (resid(r, mean(1 + 2 * j, r)) - resid(r, mean(2 + 2 * j, r))) / (2.0 * h))
                .collect()
        })
        .collect();
    let mut fisher = vec![vec![0.0; n]; n];
    for a in 0..n {
        for b in 0..n {
            fisher[a][b] = jac.iter().map(|row| row[a] * row[b]).sum();
        }
        if let (Some(_), Some(k)) = (free[a].prior, free[a].prior_factor) {
            fisher[a][a] += 1.0 / k.ln().powi(2);
        }
    }
    let cov = invert(&fisher);
    // Beyond ×/÷ e^FLAT_SIGMA_LN (a factor of ~1000) the rows say nothing about the cost.
    const FLAT_SIGMA_LN: f64 = 7.0;
    let sigma_ln = (0..n)
        .map(|j| {
            cov.as_ref()
                .map(|c| c[j][j].max(0.0).sqrt())
                .filter(|&s| s < FLAT_SIGMA_LN)
        })
        .collect();
    let sigma_ln_alone = (0..n)
        .map(|j| {
            (fisher[j][j] > 0.0)
                .then(|| 1.0 / fisher[j][j].sqrt())
                .filter(|&s| s < FLAT_SIGMA_LN)
        })
        .collect();
    let spread = (0..rows)
        .map(|r| {
            cov.as_ref().map(|c| {
                let g = &grad[r];
                let mut v = 0.0;
                for a in 0..n {
                    for b in 0..n {
                        v += g[a] * c[a][b] * g[b];
                    }
                }
                v.max(0.0).sqrt()
            })
        })
        .collect();
    Ok(Curvature {
        center: figs[0].clone(),
        sigma_ln,
        sigma_ln_alone,
        spread,
    })
}

#[cfg(test)]
mod tests {
    use super::invert;

    #[test]
    fn inverts_and_detects_singular() {
        let m = vec![vec![4.0, 1.0], vec![1.0, 3.0]];
        let i = invert(&m).unwrap();
        let det = 11.0;
        assert!((i[0][0] - 3.0 / det).abs() < 1e-12 && (i[0][1] + 1.0 / det).abs() < 1e-12);
        assert!(invert(&[vec![1.0, 2.0], vec![2.0, 4.0]]).is_none());
        assert!(invert(&[vec![0.0]]).is_none());
    }
}
