//! `foliosim compare`: an mmtests compare table over a sweep's results. Columns are
//! configurations (the values of the column axes, all axes but the seed by default), the
//! baseline first; rows are Min, Amean, Stddev, CoeffVar and Max of each chosen metric over
//! the seeds, one row per combination of the remaining axes; each value has its % difference
//! from the baseline (positive = better), and Amean differences that Welch's t-test finds
//! significant (two-sided, 5%) are marked `*`. The statistics are stats.rs', as `reproduce`
//! prints them.

use super::table::{Column, Kind, Table};
use super::SweepError;
use crate::stats::{self, Better, CompareTable, Series, Summary, Unit};
use serde::Serialize;

#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Metric or counter columns; empty: every `*.throughput_bytes_per_s` and `simulated_ns`.
    pub metrics: Vec<String>,
    /// Axes whose values make the columns; None: every axis.
    pub columns: Option<Vec<String>>,
    /// The baseline column's label; None: the first configuration.
    pub baseline: Option<String>,
    /// Keep only rows with these (axis, value label) pairs.
    pub filters: Vec<(String, String)>,
}

/// One configuration's statistics of one metric, against the baseline.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub metric: String,
    /// Values of the axes that are not columns (the row group).
    pub group: Vec<(String, String)>,
    pub config: String,
    pub baseline: bool,
    #[serde(flatten)]
    pub summary: Option<Summary>,
    /// % by which the Amean is better than the baseline's (mmtests pdiff / pndiff); null when
    /// undefined: the baseline's Amean is 0 (mmtests would say 100 or -99) or a side has no
    /// samples.
    pub pct_diff: Option<f64>,
    pub higher_is_better: bool,
    /// Welch's t-test against the baseline (None: the baseline itself, fewer than two
    /// samples, or no variance on either side).
    pub t: Option<f64>,
    pub dof: Option<f64>,
    pub p_value: Option<f64>,
    pub significant: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub columns: Vec<String>,
    pub baseline: String,
    pub test: String,
    pub table: CompareTable,
    pub cells: Vec<Cell>,
    /// The table as printed, with a footer naming the test.
    pub rendered: String,
}

pub const TEST_NAME: &str = "Welch's t-test, two-sided, p < 0.05";

/// Throughputs (`*_per_s`) improve upwards, everything else (time, counts) downwards.
pub fn better_of(metric: &str) -> Better {
    if metric.ends_with("_per_s") {
        Better::Higher
    } else {
        Better::Lower
    }
}

fn label_of(values: &[String]) -> String {
    values.join("-")
}

/// Axis names shortened to their last key segment where that stays unambiguous.
fn short_names(axes: &[String]) -> Vec<String> {
    let last = |a: &String| {
        super::axes::parse_key(a)
            .ok()
            .and_then(|k| k.last().cloned())
            .unwrap_or_else(|| a.clone())
    };
    let shorts: Vec<String> = axes.iter().map(last).collect();
    shorts
        .iter()
        .zip(axes)
        .map(|(s, a)| {
            if shorts.iter().filter(|x| *x == s).count() > 1 {
                a.clone()
            } else {
                s.clone()
            }
        })
        .collect()
}

pub fn compare(table: &Table, opts: &CompareOptions) -> Result<Comparison, SweepError> {
    let opts = canonical_options(opts);
    let keep = filtered_rows(table, &opts.filters)?;
    let column_axes = match &opts.columns {
        Some(cols) => {
            for c in cols {
                check_axis(table, c, "--columns")?;
            }
            cols.clone()
        }
        None => table.axes.clone(),
    };
    let (fixed, group_axes) = split_other_axes(table, &column_axes, &keep)?;
    let layout = Layout::of(table, &keep, &column_axes, &group_axes)?;
    let configs = baseline_first(layout.configs.clone(), opts.baseline.as_deref())?;
    let metrics = chosen_metrics(table, &opts.metrics)?;
    let (samples, meta) = collect_samples(table, &metrics, &keep, &layout, &configs)?;
    let series = series_of(&samples, &meta, &group_axes);
    let title = if column_axes.is_empty() {
        "sweep".to_string()
    } else {
        column_axes.join(" ")
    };
    let compare_table = CompareTable::summaries(&title, &configs, &series);
    let cells = cells_of(&samples, &meta, &configs, &group_axes);
    let mut rendered = compare_table.render();
    rendered.push_str(&footer(&column_axes, &configs[0], &fixed, &samples));
    Ok(Comparison {
        columns: configs.clone(),
        baseline: configs[0].clone(),
        test: TEST_NAME.into(),
        table: compare_table,
        cells,
        rendered,
    })
}

/// The options with axis names as the table spells them (the user may quote them:
/// `sysfs.hugepages."64K"`).
fn canonical_options(opts: &CompareOptions) -> CompareOptions {
    let canon = super::axes::canonical;
    CompareOptions {
        metrics: opts.metrics.clone(),
        columns: opts
            .columns
            .as_ref()
            .map(|c| c.iter().map(|a| canon(a)).collect()),
        baseline: opts.baseline.clone(),
        filters: opts
            .filters
            .iter()
            .map(|(a, v)| (canon(a), v.clone()))
            .collect(),
    }
}

/// The table's column `name`, or an error naming the axes.
fn column<'t>(table: &'t Table, name: &str) -> Result<&'t Column, SweepError> {
    table.column(name).ok_or_else(|| {
        SweepError::Invalid(format!(
            "compare: no column `{name}`; axes: {}",
            table.axes.join(", ")
        ))
    })
}

/// `name` (given to option `what`) is an axis of the sweep.
fn check_axis(table: &Table, name: &str, what: &str) -> Result<(), SweepError> {
    if table.axes.iter().any(|a| a == name) {
        Ok(())
    } else {
        Err(SweepError::Invalid(format!(
            "compare: {what} `{name}` is not an axis of the sweep; allowed: {}",
            table.axes.join(", ")
        )))
    }
}

/// The rows kept by the --where filters (each names an axis and one of its values).
fn filtered_rows(table: &Table, filters: &[(String, String)]) -> Result<Vec<usize>, SweepError> {
    let mut keep: Vec<usize> = (0..table.rows()).collect();
    for (axis, value) in filters {
        check_axis(table, axis, "--where")?;
        let c = column(table, axis)?;
        let mut values: Vec<String> = c.cells.iter().map(|x| x.label()).collect();
        values.dedup();
        if !values.iter().any(|v| v == value) {
            let mut allowed = values.clone();
            allowed.sort();
            allowed.dedup();
            return Err(SweepError::Invalid(format!(
                "compare: --where {axis}={value}: no such value; allowed: {}",
                allowed.join(", ")
            )));
        }
        keep.retain(|&r| c.cells[r].label() == *value);
    }
    Ok(keep)
}

/// The axes that are not columns split the rows into groups; one left with a single value (by
/// --where) is only named in the footer. Returns (those fixed as `axis=value`, the group axes).
fn split_other_axes(
    table: &Table,
    column_axes: &[String],
    keep: &[usize],
) -> Result<(Vec<String>, Vec<String>), SweepError> {
    let mut fixed = vec![];
    let mut group_axes = vec![];
    for a in table.axes.iter().filter(|a| !column_axes.contains(a)) {
        let c = column(table, a)?;
        let first = keep.first().map(|&r| c.cells[r].label());
        if keep.iter().all(|&r| Some(c.cells[r].label()) == first) {
            fixed.push(format!("{a}={}", first.unwrap_or_default()));
        } else {
            group_axes.push(a.clone());
        }
    }
    Ok((fixed, group_axes))
}

/// Configurations and groups, in order of first appearance (the plan's order), and each kept
/// row's configuration and group.
struct Layout {
    configs: Vec<String>,
    groups: Vec<Vec<String>>,
    row_config: Vec<String>,
    row_group: Vec<Vec<String>>,
}

impl Layout {
    fn of(
        table: &Table,
        keep: &[usize],
        column_axes: &[String],
        group_axes: &[String],
    ) -> Result<Layout, SweepError> {
        let labels_of = |axes: &[String], row: usize| -> Result<Vec<String>, SweepError> {
            axes.iter()
                .map(|a| Ok(column(table, a)?.cells[row].label()))
                .collect()
        };
        let mut l = Layout {
            configs: vec![],
            groups: vec![],
            row_config: vec![],
            row_group: vec![],
        };
        for &r in keep {
            let c = label_of(&labels_of(column_axes, r)?);
            let g = labels_of(group_axes, r)?;
            if !l.configs.contains(&c) {
                l.configs.push(c.clone());
            }
            if !l.groups.contains(&g) {
                l.groups.push(g.clone());
            }
            l.row_config.push(c);
            l.row_group.push(g);
        }
        if l.configs.is_empty() {
            return Err(SweepError::Invalid("compare: no rows left".into()));
        }
        Ok(l)
    }
}

/// The configurations with the baseline (--baseline, else the first) moved to the front.
fn baseline_first(
    mut configs: Vec<String>,
    baseline: Option<&str>,
) -> Result<Vec<String>, SweepError> {
    if let Some(b) = baseline {
        let Some(i) = configs.iter().position(|c| c == b) else {
            return Err(SweepError::Invalid(format!(
                "compare: --baseline `{b}` is not a column; allowed: {}",
                configs.join(", ")
            )));
        };
        let base = configs.remove(i);
        configs.insert(0, base);
    }
    Ok(configs)
}

/// The metrics compared: those asked for (each a numeric column), else every throughput and
/// the simulated time.
fn chosen_metrics(table: &Table, asked: &[String]) -> Result<Vec<String>, SweepError> {
    let metrics: Vec<String> = if asked.is_empty() {
        table
            .columns
            .iter()
            .filter(|c| c.name.ends_with(".throughput_bytes_per_s") || c.name == "simulated_ns")
            .map(|c| c.name.clone())
            .collect()
    } else {
        asked.to_vec()
    };
    let numeric: Vec<&str> = table
        .columns
        .iter()
        .filter(|c| c.kind != Kind::Str && c.name != "seed")
        .map(|c| c.name.as_str())
        .collect();
    for m in &metrics {
        if !numeric.contains(&m.as_str()) {
            return Err(SweepError::Invalid(format!(
                "compare: --metric `{m}` is not a numeric column; allowed: {}",
                numeric.join(", ")
            )));
        }
    }
    Ok(metrics)
}

/// Samples over the seeds per (metric, group) series and configuration, and each series'
/// (metric, group).
type Samples = Vec<Vec<Vec<f64>>>;
type SeriesKeys = Vec<(String, Vec<String>)>;

fn collect_samples(
    table: &Table,
    metrics: &[String],
    keep: &[usize],
    l: &Layout,
    configs: &[String],
) -> Result<(Samples, SeriesKeys), SweepError> {
    let mut samples: Samples = vec![];
    let mut meta = vec![];
    for m in metrics {
        let c = column(table, m)?;
        for g in &l.groups {
            let per_config: Vec<Vec<f64>> = configs
                .iter()
                .map(|conf| {
                    keep.iter()
                        .enumerate()
                        .filter(|(i, _)| l.row_config[*i] == *conf && l.row_group[*i] == *g)
                        .filter_map(|(_, &r)| c.cells[r].as_f64())
                        .collect()
                })
                .collect();
            samples.push(per_config);
            meta.push((m.clone(), g.clone()));
        }
    }
    Ok((samples, meta))
}

/// The table's rows: each series labelled by its metric and group (axes shortened).
fn series_of<'s>(
    samples: &'s Samples,
    meta: &SeriesKeys,
    group_axes: &[String],
) -> Vec<Series<'s>> {
    let short = short_names(group_axes);
    let group_label = |g: &[String]| -> String {
        short
            .iter()
            .zip(g)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    samples
        .iter()
        .zip(meta)
        .map(|(s, (m, g))| Series {
            label: if g.is_empty() {
                m.clone()
            } else {
                format!("{m} {}", group_label(g))
            },
            better: better_of(m),
            unit: Unit::of_metric(m),
            samples: s.iter().map(Vec::as_slice).collect(),
        })
        .collect()
}

/// One cell per series and configuration: its summary, % better than the baseline, and
/// Welch's t-test against it.
fn cells_of(
    samples: &Samples,
    meta: &SeriesKeys,
    configs: &[String],
    group_axes: &[String],
) -> Vec<Cell> {
    let mut cells = vec![];
    for (s, (m, g)) in samples.iter().zip(meta) {
        let summaries: Vec<Option<Summary>> = s.iter().map(|v| Summary::of(v)).collect();
        let base = summaries[0];
        for (i, (conf, sum)) in configs.iter().zip(&summaries).enumerate() {
            let welch = match (i, &base, sum) {
                (0, _, _) => None,
                (_, Some(b), Some(n)) => stats::welch_test(b, n, stats::ALPHA_PERCENT),
                _ => None,
            };
            cells.push(Cell {
                metric: m.clone(),
                group: group_axes.iter().cloned().zip(g.iter().cloned()).collect(),
                config: conf.clone(),
                baseline: i == 0,
                summary: *sum,
                pct_diff: match (&base, sum) {
                    (Some(b), Some(n)) => {
                        stats::percent_better_defined(n.amean, b.amean, better_of(m))
                    }
                    _ => None,
                },
                higher_is_better: better_of(m) == Better::Higher,
                t: welch.map(|w| w.t),
                dof: welch.map(|w| w.dof),
                p_value: welch.map(|w| w.p_value()),
                significant: welch.is_some_and(|w| w.significant),
            });
        }
    }
    cells
}

/// The footer: the column axes, the baseline, axes fixed for all runs, what % and `*` mean,
/// and the seeds per configuration.
fn footer(column_axes: &[String], baseline: &str, fixed: &[String], samples: &Samples) -> String {
    let seeds: std::collections::BTreeSet<usize> = samples.iter().flatten().map(Vec::len).collect();
    let seeds_text = seeds
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(" or ");
    format!(
        "\ncolumns: {}; baseline {}{}; % = better than the baseline (higher is better for \
         *_per_s, lower for the rest; n/a: the baseline is 0)\n* = Amean differs from the baseline's: {TEST_NAME} ({} \
         seeds per configuration)\n",
        if column_axes.is_empty() {
            "-".into()
        } else {
            column_axes.join(", ")
        },
        baseline,
        if fixed.is_empty() {
            String::new()
        } else {
            format!("; all runs {}", fixed.join(", "))
        },
        seeds_text
    )
}

#[cfg(test)]
mod tests {
    use super::super::table::{Cell as C, Column};
    use super::*;

    /// Two axes (kernel, size) x 4 seeds: 6.10 64K far above 6.9 64K, 4K equal.
    fn table() -> Table {
        let mut kernel = vec![];
        let mut size = vec![];
        let mut seed = vec![];
        let mut tput = vec![];
        for k in ["6.9", "6.10"] {
            for s in ["4K", "64K"] {
                for i in 0..4 {
                    kernel.push(C::Str(k.into()));
                    size.push(C::Str(s.into()));
                    seed.push(C::Int(i + 1));
                    let base = if s == "64K" && k == "6.10" {
                        200.0
                    } else {
                        100.0
                    };
                    tput.push(C::Float(base + i as f64));
                }
            }
        }
        let column = |name: &str, kind, cells| Column {
            name: name.into(),
            kind,
            cells,
        };
        Table {
            axes: vec!["kernel.version".into(), "size".into()],
            columns: vec![
                column("kernel.version", Kind::Str, kernel),
                column("size", Kind::Str, size),
                column("seed", Kind::Int, seed),
                column("usemem.throughput_bytes_per_s", Kind::Float, tput),
            ],
        }
    }

    #[test]
    fn columns_by_axis_rows_by_group_with_significance() {
        let opts = CompareOptions {
            columns: Some(vec!["kernel.version".into()]),
            ..Default::default()
        };
        let c = compare(&table(), &opts).unwrap();
        assert_eq!(c.columns, ["6.9", "6.10"]);
        let cell = |size: &str, conf: &str| {
            c.cells
                .iter()
                .find(|x| x.group[0].1 == size && x.config == conf)
                .unwrap()
                .clone()
        };
        let big = cell("64K", "6.10");
        assert!(big.significant && big.p_value.unwrap() < 0.05, "{big:?}");
        assert!(
            (big.pct_diff.unwrap() - (201.5 / 101.5 * 100.0 - 100.0)).abs() < 1e-9,
            "{big:?}"
        );
        // Equal samples: t = 0, p = 1.
        let same = cell("4K", "6.10");
        assert!(!same.significant && same.p_value.unwrap() > 0.999 && same.pct_diff == Some(0.0));
        assert!(
            cell("4K", "6.9").p_value.is_none(),
            "the baseline is not tested"
        );
        assert!(c
            .rendered
            .contains("Amean    usemem.throughput_bytes_per_s size=64K"));
        assert!(c.rendered.contains("Welch's t-test"));
        // The 64K Amean row carries the mark on the 6.10 column.
        let row = c
            .table
            .rows
            .iter()
            .find(|r| r.stat == "Amean" && r.label.ends_with("size=64K"))
            .unwrap();
        assert_eq!(row.significant, [false, true]);
    }

    #[test]
    fn baseline_filters_and_errors() {
        let t = table();
        let c = compare(
            &t,
            &CompareOptions {
                baseline: Some("6.10-64K".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.columns[0], "6.10-64K");
        assert_eq!(c.columns.len(), 4);
        let f = compare(
            &t,
            &CompareOptions {
                filters: vec![("size".into(), "64K".into())],
                columns: Some(vec!["kernel.version".into()]),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(f.cells.len(), 2);
        let err = |o: CompareOptions| compare(&t, &o).unwrap_err().to_string();
        let e = err(CompareOptions {
            metrics: vec!["pswpot".into()],
            ..Default::default()
        });
        assert!(
            e.contains("pswpot") && e.contains("usemem.throughput_bytes_per_s"),
            "{e}"
        );
        let e = err(CompareOptions {
            baseline: Some("6.11".into()),
            ..Default::default()
        });
        assert!(e.contains("6.9-4K"), "{e}");
        let e = err(CompareOptions {
            filters: vec![("size".into(), "2M".into())],
            ..Default::default()
        });
        assert!(e.contains("4K, 64K"), "{e}");
        let e = err(CompareOptions {
            columns: Some(vec!["kernel".into()]),
            ..Default::default()
        });
        assert!(e.contains("kernel.version, size"), "{e}");
    }

    #[test]
    fn human_units_and_na_for_a_zero_baseline() {
        let mut t = table();
        let n = t.rows();
        let kernel: Vec<String> = t.columns[0].cells.iter().map(|c| c.label()).collect();
        // pswpout: none on 6.9, some on 6.10; simulated_ns around 1.5 s; throughput in MiB/s.
        let pswpout = kernel
            .iter()
            .map(|k| C::Int(if k == "6.9" { 0 } else { 1_234_567 }))
            .collect();
        let ns = (0..n).map(|i| C::Int(1_500_000_000 + i as i64)).collect();
        for c in &mut t.columns[3].cells {
            if let C::Float(v) = c {
                *v *= 1024.0 * 1024.0;
            }
        }
        for (name, kind, cells) in [
            ("pswpout", Kind::Int, pswpout),
            ("simulated_ns", Kind::Int, ns),
        ] {
            t.columns.push(Column {
                name: name.into(),
                kind,
                cells,
            });
        }
        let opts = CompareOptions {
            metrics: vec![
                "usemem.throughput_bytes_per_s".into(),
                "simulated_ns".into(),
                "pswpout".into(),
            ],
            columns: Some(vec!["kernel.version".into()]),
            filters: vec![("size".into(), "64K".into())],
            ..Default::default()
        };
        let c = compare(&t, &opts).unwrap();
        let text = &c.rendered;
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no `{start}` in\n{text}"))
        };
        let tput = line("Amean    usemem.throughput_bytes_per_s");
        assert!(
            tput.contains("101.50 MiB/s") && tput.contains("201.50 MiB/s"),
            "{text}"
        );
        assert!(line("Amean    simulated_ns").contains("1.50 s"), "{text}");
        let swp = line("Amean    pswpout");
        assert!(swp.contains("1,234,567") && swp.contains("n/a"), "{text}");
        for l in text.lines().filter(|l| l.contains("pswpout")) {
            assert!(!l.contains("-99.00%") && !l.contains("100.00%"), "{text}");
        }
        assert!(!text.contains("-0.00%"), "{text}");
        let cell = c
            .cells
            .iter()
            .find(|x| x.metric == "pswpout" && x.config == "6.10")
            .unwrap();
        assert_eq!(cell.pct_diff, None);
        let json = serde_json::to_value(cell).unwrap();
        assert!(json["pct_diff"].is_null(), "{json}");
    }
}
