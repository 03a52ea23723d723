//! `foliosim calibrate`: placeholder, replaced below.
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    pub costs: BTreeMap<String, f64>,
}

impl CalibrationReport {
    pub fn to_toml(&self) -> String {
        String::new()
    }
    pub fn to_table(&self) -> String {
        String::new()
    }
}

pub fn calibrate(
    _opts: &crate::LiveOptions,
    _quick: bool,
    _progress: &mut dyn FnMut(&str),
) -> Result<CalibrationReport> {
    anyhow::bail!("not yet")
}

pub fn load_costs(path: &std::path::Path) -> Result<BTreeMap<String, f64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    #[derive(serde::Deserialize)]
    struct File {
        costs: BTreeMap<String, f64>,
    }
    let f: File = toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(f.costs)
}
