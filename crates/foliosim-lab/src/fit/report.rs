//! The fit as a human table.

use super::{Fit, FitReport};

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.prec$}"))
}

/// Decimals for a row's figures: one, or four significant digits of a published value under
/// 0.1 (per-lookup counts: seed 004's 0.0126 shootdowns per lookup).
fn decimals(published: Option<f64>) -> usize {
    match published.map(f64::abs) {
        Some(v) if v > 0.0 && v < 0.1 => (3 - v.log10().floor() as i64).clamp(1, 12) as usize,
        _ => 1,
    }
}

impl Fit {
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "fit: table {} ({})\nsplit {}: fitted on {}\n",
            self.table,
            self.table_source
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            self.split,
            self.fit_rows.join(", ")
        );
        out.push_str(&format!(
            "profile {}{}, {} seed(s); Nelder-Mead {} after {} iterations; chi2 {:.3}, prior penalty {:.3}\n\n",
            self.profile,
            self.scale.map_or(String::new(), |s| format!(", scale {s}")),
            self.seeds,
            if self.converged { "converged" } else { "stopped" },
            self.iterations,
            self.chi2,
            self.prior_penalty
        ));
        out.push_str(&format!(
            "{:<26} {:>12} {:>9} {:>9} {:>22} {:>18}\n",
            "free cost", "fitted ns", "×/÷ 1sd", "alone", "bounds ns", "prior ns"
        ));
        for f in &self.free {
            out.push_str(&format!(
                "{:<26} {:>12.1} {:>9} {:>9} {:>22} {:>18}{}\n",
                f.cost,
                f.value,
                f.factor.map_or("flat".into(), |k| format!("{k:.2}")),
                f.factor_alone.map_or("flat".into(), |k| format!("{k:.2}")),
                format!("{} ..= {}", f.low, f.high),
                match (f.prior, f.prior_factor) {
                    (Some(p), Some(k)) => format!("{p} ×/÷ {k}"),
                    _ => "-".into(),
                },
                f.at_bound
                    .as_ref()
                    .map_or(String::new(), |b| format!("  AT {b} BOUND"))
            ));
        }
        out.push_str(&format!(
            "\n{:<12} {:<8} {:<6} {:>17} {:>11} {:>8} {:>9} {:>9} {:>7}  inside?\n",
            "row",
            "group",
            "role",
            "published (std)",
            "predicted",
            "sim std",
            "fit ±",
            "error",
            "z"
        ));
        for r in &self.rows {
            let d = decimals(r.published);
            out.push_str(&format!(
                "{:<12} {:<8} {:<6} {:>17} {:>11.d$} {:>8.d$} {:>9} {:>9} {:>7}  {}\n",
                r.id,
                r.group,
                if r.fitted { "fit" } else { "pred" },
                match (r.published, r.published_std) {
                    (Some(v), Some(s)) => format!("{v:.d$} ({s:.d$})"),
                    (Some(v), None) => format!("{v:.d$}"),
                    _ => "-".into(),
                },
                r.predicted,
                r.sim_std,
                opt(r.fit_spread, d),
                r.error.map_or("-".into(), |e| format!("{e:+.d$}")),
                opt(r.z, 1),
                match r.inside_spread {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

impl FitReport {
    pub fn to_table(&self) -> String {
        let mut out = self.fit.to_table();
        if !self.loo.is_empty() {
            out.push_str("\nleave-one-out: each row predicted from a fit on all the others\n");
            out.push_str(&format!(
                "{:<12} {:>17} {:>11} {:>9} {:>9}  {:<8} free costs fitted without it\n",
                "left out", "published (std)", "predicted", "fit ±", "error", "inside?"
            ));
            for l in &self.loo {
                out.push_str(&format!(
                    "{:<12} {:>17} {:>11.1} {:>9} {:>+9.1}  {:<8} {}{}\n",
                    l.left_out,
                    match l.published_std {
                        Some(s) => format!("{:.1} ({s:.1})", l.published),
                        None => format!("{:.1}", l.published),
                    },
                    l.predicted,
                    opt(l.fit_spread, 1),
                    l.error,
                    match l.inside_spread {
                        Some(true) => "yes",
                        Some(false) => "NO",
                        None => "-",
                    },
                    l.costs
                        .iter()
                        .map(|(k, v)| format!("{k}={v:.0}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    if l.at_bound.is_empty() {
                        String::new()
                    } else {
                        format!("  (at bound: {})", l.at_bound.join(", "))
                    }
                ));
            }
        }
        out.push_str(&format!("\n{} simulator runs\n", self.runs));
        out
    }
}
