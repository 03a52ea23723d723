//! The tidy results table of a sweep: one row per run, columns = every axis (its value's
//! label), `seed`, `run_id`, then the run metrics and the counters, each sorted by name.
//! A value a run does not have (a lock another kernel lacks) is null.

use super::plan::RunSpec;
use super::record::{Num, RunRecord};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Cell {
    Int(i64),
    Float(f64),
    Str(String),
    Null,
}

impl Cell {
    /// The cell as a number (None for null and text).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The cell as a label (numbers as written, null as "").
    pub fn label(&self) -> String {
        match self {
            Cell::Int(i) => i.to_string(),
            Cell::Float(f) => f.to_string(),
            Cell::Str(s) => s.clone(),
            Cell::Null => String::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Str,
    Int,
    Float,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Names of the axis columns (the table's first columns).
    pub axes: Vec<String>,
    pub columns: Vec<Column>,
}

impl Table {
    /// The table of the planned runs, in plan order, from their records (same order).
    pub fn from_runs(axes: &[String], plan: &[RunSpec], records: &[RunRecord]) -> Table {
        assert_eq!(plan.len(), records.len(), "one record per planned run");
        let mut columns: Vec<Column> = axes
            .iter()
            .enumerate()
            .map(|(i, name)| Column {
                name: name.clone(),
                kind: Kind::Str,
                cells: plan
                    .iter()
                    .map(|r| Cell::Str(r.axes[i].1.clone()))
                    .collect(),
            })
            .collect();
        columns.push(Column {
            name: "seed".into(),
            kind: Kind::Int,
            cells: plan.iter().map(|r| Cell::Int(r.seed as i64)).collect(),
        });
        columns.push(Column {
            name: "run_id".into(),
            kind: Kind::Str,
            cells: plan.iter().map(|r| Cell::Str(r.id.clone())).collect(),
        });
        // Metrics: float if any run has a float, else integer.
        let mut metric_kinds: BTreeMap<&str, Kind> = BTreeMap::new();
        for r in records {
            for (name, v) in &r.metrics {
                let k = metric_kinds.entry(name).or_insert(Kind::Int);
                if matches!(v, Num::Float(_)) {
                    *k = Kind::Float;
                }
            }
        }
        for (name, kind) in metric_kinds {
            let cells = records
                .iter()
                .map(|r| match (r.metrics.get(name), kind) {
                    (None, _) => Cell::Null,
                    (Some(v), Kind::Float) => Cell::Float(v.as_f64()),
                    (Some(Num::Int(i)), _) => Cell::Int(*i),
                    (Some(Num::Float(f)), _) => Cell::Float(*f),
                })
                .collect();
            columns.push(Column {
                name: name.into(),
                kind,
                cells,
            });
        }
        let counters: std::collections::BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.counters.keys().map(String::as_str))
            .collect();
        for name in counters {
            let cells = records
                .iter()
                .map(|r| {
                    r.counters.get(name).map_or(Cell::Null, |v| {
                        Cell::Int(i64::try_from(*v).unwrap_or(i64::MAX))
                    })
                })
                .collect();
            columns.push(Column {
                name: name.into(),
                kind: Kind::Int,
                cells,
            });
        }
        Table {
            axes: axes.to_vec(),
            columns,
        }
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.cells.len())
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// RFC 4180 CSV with a header; nulls are empty fields, floats in Rust's shortest exact form.
    pub fn to_csv(&self) -> String {
        fn field(s: &str) -> String {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
        let mut out = self
            .columns
            .iter()
            .map(|c| field(&c.name))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for row in 0..self.rows() {
            let line: Vec<String> = self
                .columns
                .iter()
                .map(|c| field(&c.cells[row].label()))
                .collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }
}
