//! A costs file with provenance: `[costs]` holds every cost of the profile as the fit used it
//! (load with `--costs FILE`), `[source]` says where each number came from: fitted (on which
//! rows of which table, with its uncertainty and prior), cited (a public measurement), or the
//! profile's own (measured here, fit, or an estimate, as engine/cost.rs documents it).

use super::{Fit, FitError};
use crate::engine::cost::CostModel;
use std::collections::BTreeMap;
use std::path::Path;

fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The costs file of a fit; `cited` are the table's cited costs (name -> source).
pub fn render(fit: &Fit, cited: &BTreeMap<String, String>) -> Result<String, FitError> {
    let profile = CostModel::profile(&fit.profile).ok_or_else(|| {
        FitError::Invalid(format!("profile `{}` of the table is unknown", fit.profile))
    })?;
    let mut out = String::new();
    out.push_str(&format!(
        "# foliosim costs: profile {} with {} cost(s) fitted by `foliosim fit` on table {}.\n\
         # Load with `foliosim reproduce 000 --costs FILE` or `foliosim run --costs FILE`.\n\
         # [source] says where every number comes from. A fitted number is a property of the\n\
         # model and the rows it was fitted on, not a measurement: see docs/fit.md.\n\n",
        fit.profile,
        fit.free.len(),
        fit.table
    ));
    out.push_str("[provenance]\n");
    out.push_str(&format!(
        "fitted_by = {}\n",
        q(&format!("foliosim fit {}", env!("CARGO_PKG_VERSION")))
    ));
    out.push_str(&format!("table = {}\n", q(&fit.table)));
    out.push_str(&format!("table_path = {}\n", q(&fit.table_path)));
    out.push_str(&format!(
        "table_source = {}\n",
        q(&one_line(&fit.table_source))
    ));
    out.push_str(&format!("profile = {}\n", q(&fit.profile)));
    out.push_str(&format!("split = {}\n", q(&fit.split)));
    out.push_str(&format!(
        "fitted_rows = [{}]\n",
        fit.fit_rows
            .iter()
            .map(|r| q(r))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(s) = fit.scale {
        out.push_str(&format!("scale = {s}\n"));
    }
    out.push_str(&format!("seeds = {}\n", fit.seeds));
    out.push_str(&format!("chi2 = {:.4}\n", fit.chi2));
    out.push_str(&format!("prior_penalty = {:.4}\n", fit.prior_penalty));
    out.push_str(&format!("converged = {}\n", fit.converged));
    out.push_str("\n[costs]\n");
    let mut values = BTreeMap::new();
    for name in CostModel::NAMES {
        let v = fit
            .costs
            .get(*name)
            .copied()
            .unwrap_or_else(|| profile.get(name).expect("a profile cost") as f64);
        values.insert(*name, v);
    }
    for (name, v) in &values {
        out.push_str(&format!("{name} = {}\n", toml::Value::Float(v.round())));
    }
    out.push_str("\n[source]\n");
    let rows = fit.fit_rows.join(", ");
    for name in CostModel::NAMES {
        let text = if let Some(f) = fit.free.iter().find(|f| f.cost == *name) {
            let sd = f
                .factor
                .map_or("flat: not identified by these rows".into(), |k| {
                    format!("×/÷ {k:.2} (1 sd from the curvature)")
                });
            let prior = match (f.prior, f.prior_factor) {
                (Some(p), Some(k)) => format!("; prior {p} ns ×/÷ {k}"),
                _ => String::new(),
            };
            let bound = f.at_bound.as_ref().map_or(String::new(), |b| {
                format!("; AT ITS {b} BOUND (implausible)")
            });
            format!(
                "fitted on rows {rows} of table {} ({}): {:.1} ns {sd}; bounds {} ..= {} ns{prior}{bound}. {}",
                fit.table,
                one_line(&fit.table_source),
                f.value,
                f.low,
                f.high,
                one_line(&f.source)
            )
        } else if let Some(src) = cited.get(*name) {
            format!("cited: {}", one_line(src))
        } else {
            format!(
                "profile {} (engine/cost.rs), unchanged: {}",
                fit.profile,
                one_line(CostModel::doc(name).unwrap_or(""))
            )
        };
        out.push_str(&format!("{name} = {}\n", q(&text)));
    }
    Ok(out)
}

/// The `[costs]` table of a costs file (`foliosim fit` or `foliosim calibrate`), checked
/// against the model's cost names.
pub fn load(path: &Path) -> Result<BTreeMap<String, f64>, FitError> {
    let text = crate::footprint::read_toml(path).map_err(|e| FitError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    parse(&text).map_err(|e| match e {
        FitError::Table { field, message } => FitError::Table {
            field: format!("{}: {field}", path.display()),
            message,
        },
        e => e,
    })
}

pub fn parse(text: &str) -> Result<BTreeMap<String, f64>, FitError> {
    #[derive(serde::Deserialize)]
    struct File {
        costs: BTreeMap<String, f64>,
    }
    let f: File = toml::from_str(text).map_err(|e| FitError::Table {
        field: "costs".into(),
        message: format!("expected a [costs] table of NAME = ns: {e}"),
    })?;
    for name in f.costs.keys() {
        super::table::check_cost_name(&format!("costs.{name}"), name)?;
    }
    Ok(f.costs)
}
