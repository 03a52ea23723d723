//! One self-contained HTML report (`--html`): tables, inline SVG plots (svg.rs), the scenarios
//! and the versions, with no script and nothing fetched, so it opens anywhere, offline, and
//! its bytes depend only on what ran (no date in it).
//!
//! For `reproduce`, the tables are the seed module's own report (its JSON, rendered
//! generically: each array of rows becomes a table, a `seed_X` column placed beside our `X`)
//! and its text table as the CLI prints it; nothing is recomputed here.

use super::svg::{self, escape, Series};
use super::timeseries::TimeSeries;
use crate::captured_run::CapturedRun;
use crate::RunResult;
use serde_json::Value;
use std::fmt::Write as _;

/// What produced the report.
#[derive(Debug, Clone)]
pub struct Versions {
    pub foliosim: String,
    /// The commit the binary was built from, when known.
    pub git_rev: Option<String>,
    /// The command line, as typed.
    pub command: String,
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;max-width:1200px;color:#222}\
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}\
h3{font-size:15px}table{border-collapse:collapse;margin:8px 0;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}\
th{background:#f2f2f2}td.l,th.l{text-align:left}th.seed,td.seed{background:#fff3df}\
pre{background:#f7f7f7;padding:8px;font-size:12px;overflow-x:auto}\
.note{color:#555;font-size:13px}.plots svg{display:block;margin:12px 0}\
.cols{columns:3;font-size:13px}.cols div{break-inside:avoid}.scroll{overflow-x:auto}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{}</title><link rel=\"icon\" href=\"data:,\"><style>{STYLE}</style></head>\n\
         <body>\n{body}\n</body></html>\n",
        escape(title)
    )
}

fn versions_table(v: &Versions, profiles: &[String]) -> String {
    let mut s = String::from("<table class=\"meta\">");
    let mut row = |k: &str, val: &str| {
        let _ = write!(
            s,
            "<tr><th class=\"l\">{k}</th><td class=\"l\">{}</td></tr>",
            escape(val)
        );
    };
    row("foliosim", &v.foliosim);
    row(
        "built from commit",
        v.git_rev.as_deref().unwrap_or("unknown"),
    );
    row("command", &v.command);
    for p in profiles {
        row("kernel profile", p);
    }
    s.push_str("</table>");
    s
}

/// A table cell for a JSON scalar.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.to_string(),
            (_, Some(i), _) => i.to_string(),
            (_, _, Some(f)) => fmt_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => escape(s),
        other => escape(&other.to_string()),
    }
}

fn fmt_float(f: f64) -> String {
    let a = f.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{f:.0}")
    } else if a >= 10.0 {
        format!("{f:.1}")
    } else if a >= 0.01 {
        format!("{f:.2}")
    } else {
        format!("{f:.3}")
    }
}

/// A column name that may break after its underscores.
fn header(name: &str) -> String {
    escape(name).replace('_', "_<wbr>")
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn numbers(v: &Value) -> Option<Vec<f64>> {
    match v {
        Value::Array(a) if a.len() >= 2 && a.iter().all(Value::is_number) => {
            Some(a.iter().filter_map(Value::as_f64).collect())
        }
        _ => None,
    }
}

/// A row's name as the seeds' tables write it: the kernel first, its other text fields, then
/// `+flag` for each yes/no field that is on ("6.10 percpu-order +aligned_swapin").
fn row_label(row: &serde_json::Map<String, Value>) -> String {
    let mut parts = Vec::new();
    let mut flags = Vec::new();
    for (k, v) in row {
        match v {
            // Names, not the seed's figures written as text or long notes.
            Value::String(s) if !k.starts_with("seed_") && k != "expected" && s.len() <= 24 => {
                if k == "kernel" {
                    parts.insert(0, s.clone());
                } else {
                    parts.push(s.clone());
                }
            }
            Value::Bool(true) => flags.push(format!("+{k}")),
            _ => {}
        }
    }
    parts.extend(flags);
    parts.join(" ")
}

/// Columns of the scalar fields, each `seed_X` right before our `X`.
fn ordered_columns(rows: &[&serde_json::Map<String, Value>]) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in rows {
        for (k, v) in r.iter() {
            if is_scalar(v) && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    // Names (text, yes/no) first, then the figures.
    let is_name = |k: &String| {
        rows.iter()
            .any(|r| matches!(r.get(k), Some(Value::String(_) | Value::Bool(_))))
    };
    let (names, figures): (Vec<String>, Vec<String>) = keys.into_iter().partition(is_name);
    let keys: Vec<String> = names.into_iter().chain(figures).collect();
    let mut out: Vec<String> = Vec::new();
    for k in &keys {
        if k.starts_with("seed_") && keys.contains(&k["seed_".len()..].to_string()) {
            continue; // placed with ours
        }
        let seed = format!("seed_{k}");
        if keys.contains(&seed) {
            out.push(seed);
        }
        out.push(k.clone());
    }
    out
}

/// The report's arrays of rows, each as a table, with its plots: a bar chart per `seed_X` /
/// `X` pair, a line chart per per-iteration array.
fn report_tables(report: &Value, tables: &mut String, plots: &mut String) {
    let Value::Object(top) = report else { return };
    for (name, value) in top {
        let Value::Array(items) = value else { continue };
        let rows: Vec<&serde_json::Map<String, Value>> =
            items.iter().filter_map(Value::as_object).collect();
        if rows.is_empty() || rows.len() != items.len() {
            continue;
        }
        let cols = ordered_columns(&rows);
        if cols.is_empty() {
            continue;
        }
        tables.push_str(&array_table(name, &rows, &cols));
        let labels: Vec<String> = rows.iter().map(|r| row_label(r)).collect();
        seed_plots(name, &rows, &cols, &labels, plots);
        array_field_plots(name, &rows, &labels, plots);
    }
}

type Row<'a> = &'a serde_json::Map<String, Value>;

/// An array of rows as a table, the seed's columns shaded.
fn array_table(name: &str, rows: &[Row], cols: &[String]) -> String {
    let mut tables = format!("<h3>{}</h3><div class=\"scroll\"><table><tr>", escape(name));
    for c in cols {
        let class = if c.starts_with("seed_") { "seed" } else { "" };
        let _ = write!(tables, "<th class=\"{class}\">{}</th>", header(c));
    }
    tables.push_str("</tr>");
    for r in rows {
        tables.push_str("<tr>");
        for c in cols {
            let v = r.get(c).unwrap_or(&Value::Null);
            let mut class = String::new();
            if c.starts_with("seed_") {
                class.push_str("seed ");
            }
            if v.is_string() {
                class.push('l');
            }
            let _ = write!(tables, "<td class=\"{}\">{}</td>", class.trim(), cell(v));
        }
        tables.push_str("</tr>");
    }
    tables.push_str("</table></div>");
    tables
}

/// A bar chart per `seed_X` column that has figures: the seed's beside our `X`.
fn seed_plots(name: &str, rows: &[Row], cols: &[String], labels: &[String], plots: &mut String) {
    for c in cols.iter().filter(|c| c.starts_with("seed_")) {
        let ours = &c["seed_".len()..];
        let get = |r: &Row, k: &str| r.get(k).and_then(Value::as_f64);
        let seed_vals: Vec<Option<f64>> = rows.iter().map(|r| get(r, c)).collect();
        let our_vals: Vec<Option<f64>> = rows.iter().map(|r| get(r, ours)).collect();
        if seed_vals.iter().all(Option::is_none) {
            continue;
        }
        plots.push_str(&seed_beside_ours(name, ours, labels, seed_vals, our_vals));
    }
}

/// A line chart per field that holds an array of numbers (one per iteration): a line per row.
fn array_field_plots(name: &str, rows: &[Row], labels: &[String], plots: &mut String) {
    let mut array_fields: Vec<&String> = Vec::new();
    for r in rows {
        for (k, v) in r.iter() {
            if numbers(v).is_some() && !array_fields.contains(&k) {
                array_fields.push(k);
            }
        }
    }
    for field in array_fields {
        let series: Vec<Series> = rows
            .iter()
            .zip(labels)
            .filter_map(|(r, label)| {
                let ys = numbers(r.get(field.as_str())?)?;
                Some(Series {
                    label: label.clone(),
                    points: ys
                        .iter()
                        .enumerate()
                        .map(|(i, y)| ((i + 1) as f64, *y))
                        .collect(),
                })
            })
            .collect();
        plots.push_str(&svg::line_chart(
            &format!("{name}: {field}"),
            "position in the series (1 = first)",
            field,
            &series,
        ));
    }
}

/// The largest magnitude among `vals`.
fn magnitude(vals: &[Option<f64>]) -> f64 {
    vals.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// `vals` as % change from the first row that has a non-zero value.
fn relative(vals: &[Option<f64>]) -> Option<Vec<Option<f64>>> {
    let base = vals.iter().flatten().copied().find(|v| *v != 0.0)?;
    Some(
        vals.iter()
            .map(|v| v.map(|v| 100.0 * (v - base) / base.abs()))
            .collect(),
    )
}

/// A bar chart of the seed's figure beside ours. When the two differ in scale by more than 5x
/// (the seed's 303 s against our 1 s), each is drawn as % change from its own first row, or,
/// without a baseline, in two charts with their own axes.
fn seed_beside_ours(
    table: &str,
    ours: &str,
    labels: &[String],
    seed_vals: Vec<Option<f64>>,
    our_vals: Vec<Option<f64>>,
) -> String {
    let x_label = readable_unit(ours);
    let (a, b) = (magnitude(&seed_vals), magnitude(&our_vals));
    let mismatch = a > 0.0 && b > 0.0 && (a / b > 5.0 || b / a > 5.0) && !ours.ends_with("_pct");
    if !mismatch {
        return svg::bar_chart(
            &format!("{table}: {ours}, the seed's and ours"),
            &x_label,
            labels,
            &[
                ("the seed".into(), seed_vals),
                ("foliosim".into(), our_vals),
            ],
        );
    }
    if let (Some(s), Some(o)) = (relative(&seed_vals), relative(&our_vals)) {
        return svg::bar_chart(
            &format!("{table}: {ours}, each as % change from its own first row"),
            &format!("% change from the first row ({x_label}; the seed's scale differs from ours)"),
            labels,
            &[("the seed".into(), s), ("foliosim".into(), o)],
        );
    }
    let mut out = svg::bar_chart(
        &format!("{table}: {ours}, the seed's (own axis)"),
        &x_label,
        labels,
        &[("the seed".into(), seed_vals)],
    );
    out.push_str(&svg::bar_chart(
        &format!("{table}: {ours}, ours (own axis)"),
        &x_label,
        labels,
        &[("foliosim".into(), our_vals)],
    ));
    out
}

/// An axis label for a report field: its unit spelled out (`_pct` %, `_s` s, `_kb_s` KB/s).
fn readable_unit(field: &str) -> String {
    for (suffix, unit) in [
        ("_rel_pct", "% change from the baseline row"),
        ("_pct", "%"),
        ("_mib_s", "MiB/s"),
        ("_kb_s", "KB/s"),
        ("_ms", "ms"),
        ("_us", "µs"),
        ("_s", "s"),
    ] {
        if let Some(stem) = field.strip_suffix(suffix) {
            return format!("{}, {unit}", stem.replace('_', " "));
        }
    }
    field.replace('_', " ")
}

/// Per-interval rates of a time series (x: end of the interval, simulated s).
pub struct Derived {
    pub title: &'static str,
    pub y_label: &'static str,
    pub points: Vec<(f64, f64)>,
}

fn sum_cols(ts: &TimeSeries, pred: impl Fn(&str) -> bool) -> Vec<u64> {
    let mut out = vec![0u64; ts.t_ns.len()];
    for (name, col) in &ts.columns {
        if pred(name) {
            for (o, v) in out.iter_mut().zip(col) {
                *o += v;
            }
        }
    }
    out
}

/// The plots kernel people draw from `vmstat 1`: swap-out fallback %, swap-out rate, mTHP
/// splits, fault fallback %, free memory and lock wait over time (the Python helpers draw the
/// same).
pub fn derived_series(ts: &TimeSeries) -> Vec<Derived> {
    let iv = Intervals {
        ts,
        t_s: ts.t_ns.iter().map(|t| *t as f64 / 1e9).collect(),
        zero: vec![0u64; ts.t_ns.len()],
    };
    let mut out = mthp_swap_series(&iv);
    out.extend(cpu_and_wait_series(&iv));
    // Plots with nothing to show (no swap, no mTHP) are left out.
    out.retain(|p| p.points.iter().any(|(_, y)| y.is_finite() && *y != 0.0));
    out
}

/// A time series seen interval by interval: the deltas of its counters and the interval's
/// length.
struct Intervals<'a> {
    ts: &'a TimeSeries,
    /// Each sample's time, s.
    t_s: Vec<f64>,
    /// The column of a counter the series lacks.
    zero: Vec<u64>,
}

impl Intervals<'_> {
    /// `f` of each interval, at the interval's end.
    fn per_interval(&self, f: &dyn Fn(usize) -> f64) -> Vec<(f64, f64)> {
        (1..self.t_s.len()).map(|i| (self.t_s[i], f(i))).collect()
    }

    /// The counter's increase over interval `i`.
    fn d(c: &[u64], i: usize) -> f64 {
        c[i].saturating_sub(c[i - 1]) as f64
    }

    /// Interval `i`'s length, s.
    fn dt(&self, i: usize) -> f64 {
        (self.ts.t_ns[i] - self.ts.t_ns[i - 1]).max(1) as f64 / 1e9
    }

    fn col(&self, name: &str) -> &[u64] {
        self.ts.column(name).unwrap_or(&self.zero)
    }

    /// The increase of `num`, in % of those of `num` and `den_extra` together (NaN if none).
    fn pct(num: &[u64], den_extra: &[u64], i: usize) -> f64 {
        let (a, b) = (Self::d(num, i), Self::d(den_extra, i));
        if a + b > 0.0 {
            100.0 * a / (a + b)
        } else {
            f64::NAN
        }
    }

    /// A counter's rate in CPUs (or tasks) of the time it counts, over each interval.
    fn busy(&self, cols: &[&str]) -> Vec<(f64, f64)> {
        self.per_interval(&|i| {
            cols.iter().map(|c| Self::d(self.col(c), i)).sum::<f64>() / 1e9 / self.dt(i)
        })
    }
}

/// Swap-out fallback %, swap-out rate, mTHP splits, fault fallback %, free memory.
fn mthp_swap_series(iv: &Intervals) -> Vec<Derived> {
    let ts = iv.ts;
    let mthp = |stat: &str| {
        sum_cols(ts, |n| {
            n.starts_with("hugepages-") && n.ends_with(&format!("/stats/{stat}"))
        })
    };
    let (swpout, swpout_fb) = (mthp("swpout"), mthp("swpout_fallback"));
    let (fault, fault_fb) = (mthp("anon_fault_alloc"), mthp("anon_fault_fallback"));
    let split = mthp("split");
    let d = Intervals::d;
    let mib = (1 << 20) as f64;
    vec![
        Derived {
            title: "mTHP swap-out fallback % per interval",
            y_label: "% of mTHP swap-outs split (swpout_fallback)",
            points: iv.per_interval(&|i| Intervals::pct(&swpout_fb, &swpout, i)),
        },
        Derived {
            title: "Swap-out rate",
            y_label: "MiB/s swapped out (pswpout)",
            points: iv.per_interval(&|i| d(iv.col("pswpout"), i) * 4096.0 / mib / iv.dt(i)),
        },
        Derived {
            title: "mTHP splits",
            y_label: "large folios split per s (split)",
            points: iv.per_interval(&|i| d(&split, i) / iv.dt(i)),
        },
        Derived {
            title: "mTHP fault fallback % per interval",
            y_label: "% of mTHP faults falling back",
            points: iv.per_interval(&|i| Intervals::pct(&fault_fb, &fault, i)),
        },
        Derived {
            title: "Free memory",
            y_label: "free memory, MiB (nr_free_pages)",
            points: (0..iv.t_s.len())
                .map(|i| (iv.t_s[i], iv.col("nr_free_pages")[i] as f64 * 4096.0 / mib))
                .collect(),
        },
    ]
}

/// CPU and system time, spinlock, mmap_lock and I/O wait, as CPUs (or tasks) on average.
fn cpu_and_wait_series(iv: &Intervals) -> Vec<Derived> {
    let spin = sum_cols(iv.ts, |n| {
        n.starts_with("lock_wait_ns/") && n != "lock_wait_ns/mmap_lock"
    });
    vec![
        Derived {
            title: "CPU time",
            y_label: "CPUs busy: user + system + kernel threads",
            points: iv.busy(&["cpu_user_ns", "cpu_sys_ns", "kthread_sys_ns"]),
        },
        Derived {
            title: "System time",
            y_label: "CPUs in the kernel (sys + kernel threads)",
            points: iv.busy(&["cpu_sys_ns", "kthread_sys_ns"]),
        },
        Derived {
            title: "Spinlock wait",
            y_label: "CPUs spinning on a lock (average)",
            points: iv.per_interval(&|i| Intervals::d(&spin, i) / 1e9 / iv.dt(i)),
        },
        Derived {
            title: "mmap_lock wait",
            y_label: "tasks asleep on mmap_lock (average)",
            points: iv.busy(&["lock_wait_ns/mmap_lock"]),
        },
        Derived {
            title: "I/O wait",
            y_label: "tasks waiting for I/O (average)",
            points: iv.busy(&["cpu_iowait_ns"]),
        },
    ]
}

/// The time-series plots of each group of runs (an experiment: runs of one workload), one
/// line per run.
fn timeseries_plots(runs: &[(String, String, &TimeSeries)], plots: &mut String) {
    let mut groups: Vec<&String> = Vec::new();
    for (group, _, _) in runs {
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    for group in &groups {
        let members: Vec<(String, &TimeSeries)> = runs
            .iter()
            .filter(|(g, _, _)| g == *group)
            .map(|(_, label, ts)| (label.clone(), *ts))
            .collect();
        let prefix = if groups.len() > 1 {
            format!("{group}: ")
        } else {
            String::new()
        };
        group_plots(&prefix, &members, plots);
    }
}

fn group_plots(prefix: &str, runs: &[(String, &TimeSeries)], plots: &mut String) {
    if runs.is_empty() {
        return;
    }
    let derived: Vec<Vec<Derived>> = runs.iter().map(|(_, ts)| derived_series(ts)).collect();
    let mut titles: Vec<(&'static str, &'static str)> = Vec::new();
    for d in derived.iter().flatten() {
        if !titles.iter().any(|(t, _)| *t == d.title) {
            titles.push((d.title, d.y_label));
        }
    }
    for (title, y_label) in titles {
        let series: Vec<Series> = runs
            .iter()
            .zip(&derived)
            .filter_map(|((label, _), ds)| {
                let d = ds.iter().find(|d| d.title == title)?;
                Some(Series {
                    label: label.clone(),
                    points: d.points.clone(),
                })
            })
            .collect();
        plots.push_str(&svg::line_chart(
            &format!("{prefix}{title}"),
            "simulated time, s",
            y_label,
            &series,
        ));
    }
}

/// The HTML report of `foliosim reproduce NNN`; `cover` holds the seed's cover-letter
/// figures as SVG (the lab draws them: `reproduce::cover_figures`).
pub fn reproduce_report(
    seed_doc: &str,
    report: &Value,
    cover: &[String],
    table_text: &str,
    runs: &[CapturedRun],
    v: &Versions,
) -> String {
    let mut body = format!(
        "<h1>foliosim reproduce {}</h1><p class=\"note\">The seed document's table beside ours, \
         from one deterministic run of the simulator per configuration and seed.</p>",
        escape(seed_doc)
    );
    body.push_str(&versions_table(v, &run_profiles(runs)));
    if !cover.is_empty() {
        let _ = write!(
            body,
            "<h2>The figures</h2><div class=\"plots\">{}</div>",
            cover.concat()
        );
    }
    let (mut tables, mut plots) = (String::new(), String::new());
    report_tables(report, &mut tables, &mut plots);
    body.push_str("<h2>The seed's table beside ours</h2>");
    if !tables.is_empty() {
        body.push_str(
            "<p class=\"note\">Shaded columns are the seed's published figures; each is \
             followed by ours.</p>",
        );
        body.push_str(&tables);
    }
    let _ = write!(
        body,
        "<h3>As the command prints it</h3><pre>{}</pre>",
        escape(table_text)
    );
    let sampled: Vec<(String, String, &TimeSeries)> = runs
        .iter()
        .filter_map(|r| Some((r.group.clone(), r.label.clone(), r.timeseries.as_ref()?)))
        .collect();
    timeseries_plots(&sampled, &mut plots);
    if !plots.is_empty() {
        body.push_str("<h2>Plots</h2>");
        if !sampled.is_empty() {
            let ts = sampled[0].2;
            let _ = write!(
                body,
                "<p class=\"note\">Time series: the seed-1 run of each configuration, sampled every \
                 {} of simulated time (asked: {}).</p>",
                escape(&super::spec::format_duration(ts.interval_ns)),
                escape(&ts.requested_interval)
            );
        }
        let _ = write!(body, "<div class=\"plots\">{plots}</div>");
    }
    if !runs.is_empty() {
        body.push_str("<h2>Scenarios</h2><p class=\"note\">The seed-1 scenario of each configuration, every default written out (<code>foliosim run</code> takes it as is).</p>");
        for r in runs {
            let _ = write!(
                body,
                "<details><summary>{}: {}</summary><pre>{}</pre></details>",
                escape(&r.group),
                escape(&r.label),
                escape(&r.scenario_toml)
            );
        }
    }
    page(&format!("foliosim reproduce {seed_doc}"), &body)
}

/// The kernel, swap allocator and cost profile of the runs, each once.
fn run_profiles(runs: &[CapturedRun]) -> Vec<String> {
    let mut profiles: Vec<String> = Vec::new();
    for r in runs {
        let cost_profile = r
            .scenario_toml
            .parse::<toml::Value>()
            .ok()
            .and_then(|t| {
                t.get("machine")?
                    .get("cost_profile")?
                    .as_str()
                    .map(String::from)
            })
            .unwrap_or_default();
        let p = format!(
            "kernel {}, swap allocator {}, cost profile {cost_profile}",
            r.kernel, r.swap_allocator
        );
        if !profiles.contains(&p) {
            profiles.push(p);
        }
    }
    profiles
}

/// A JSON array of objects as a table (workloads, locks, kernel threads).
/// The run's CPU time by the work that spent it, the largest first, as perf report would list it.
fn cpu_time_table(r: &RunResult) -> String {
    let total_ns: u64 = r.cpu_time_ns.values().sum();
    let rows: Vec<Value> = r
        .cpu_time_by_time()
        .into_iter()
        .map(|(name, ns)| {
            serde_json::json!({
                "work": name,
                "ms": (ns as f64 / 1e3).round() / 1e3,
                "share %": (1000.0 * ns as f64 / total_ns.max(1) as f64).round() / 10.0,
            })
        })
        .collect();
    json_table(
        "CPU time by the work that spent it (user and sys, kernel threads included)",
        &Value::Array(rows),
    )
}

fn json_table(title: &str, v: &Value) -> String {
    let Value::Array(items) = v else {
        return String::new();
    };
    let rows: Vec<&serde_json::Map<String, Value>> =
        items.iter().filter_map(Value::as_object).collect();
    if rows.is_empty() {
        return String::new();
    }
    let cols = ordered_columns(&rows);
    let mut s = format!(
        "<h3>{}</h3><div class=\"scroll\"><table><tr>",
        escape(title)
    );
    for c in &cols {
        let _ = write!(s, "<th>{}</th>", header(c));
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for c in &cols {
            let v = r.get(c).unwrap_or(&Value::Null);
            let class = if v.is_string() { "l" } else { "" };
            let _ = write!(s, "<td class=\"{class}\">{}</td>", cell(v));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
    s
}

/// The HTML report of `foliosim run SCENARIO`: `scenario_text` as given, `full_toml` with
/// every default.
pub fn run_report(
    name: &str,
    scenario_text: &str,
    full_toml: &str,
    cost_profile: &str,
    r: &RunResult,
    v: &Versions,
) -> String {
    let profile = format!(
        "kernel {}, swap allocator {}, cost profile {cost_profile}",
        r.kernel, r.swap_allocator
    );
    let mut body = format!(
        "<h1>foliosim run {}</h1><p class=\"note\">kernel {} · seed {} · {:.3} simulated s · {} steps · \
         cpu user {:.3} s, sys {:.3} s, iowait {:.3} s</p>",
        escape(name),
        escape(&r.kernel),
        r.seed,
        r.simulated_ns as f64 / 1e9,
        r.steps,
        r.cpu_user_ns as f64 / 1e9,
        r.cpu_sys_ns as f64 / 1e9,
        r.cpu_iowait_ns as f64 / 1e9
    );
    body.push_str(&versions_table(v, &[profile]));
    body.push_str(&run_tables(r));
    let mut plots = per_size_chart(r);
    if let Some(ts) = &r.timeseries {
        let label = format!("kernel {} seed {}", r.kernel, r.seed);
        timeseries_plots(&[(String::new(), label, ts)], &mut plots);
    }
    if !plots.is_empty() {
        body.push_str("<h2>Plots</h2>");
        if let Some(ts) = &r.timeseries {
            let _ = write!(
                body,
                "<p class=\"note\">Time series sampled every {} of simulated time (asked: {}).</p>",
                svg::escape(&super::spec::format_duration(ts.interval_ns)),
                escape(&ts.requested_interval)
            );
        }
        let _ = write!(body, "<div class=\"plots\">{plots}</div>");
    }
    let _ = write!(
        body,
        "<h2>Scenario</h2><pre>{}</pre><details><summary>with every default</summary><pre>{}</pre></details>",
        escape(scenario_text),
        escape(full_toml)
    );
    page(&format!("foliosim run {name}"), &body)
}

/// The run's tables: workloads, OOM kills, kernel threads, contended locks, CPU time, and
/// the non-zero counters.
fn run_tables(r: &RunResult) -> String {
    let json: Value = serde_json::to_value(r).expect("results serialize");
    let mut body = String::from("<h2>Tables</h2>");
    body.push_str(&json_table("workloads", &json["workloads"]));
    if !r.oom_kills.is_empty() {
        body.push_str(&json_table("OOM kills", &json["oom_kills"]));
    }
    body.push_str(&json_table("kernel threads", &json["kernel_threads"]));
    let mut locks = json["locks"].clone();
    if let Value::Array(a) = &mut locks {
        a.retain(|l| l["acquisitions"].as_u64().unwrap_or(0) > 0);
    }
    body.push_str(&json_table("locks (perf lock contention)", &locks));
    body.push_str(&cpu_time_table(r));
    body.push_str(
        "<h3>counters (non-zero; /proc/vmstat and per-size mTHP stats)</h3><div class=\"cols\">",
    );
    for (name, value) in r.counters.iter().filter(|(_, v)| **v > 0) {
        let _ = write!(body, "<div><code>{}</code> {value}</div>", escape(name));
    }
    body.push_str("</div>");
    body
}

/// A bar chart of the non-zero per-size mTHP counters (empty if none).
fn per_size_chart(r: &RunResult) -> String {
    let per_size: Vec<(&String, &u64)> = r
        .counters
        .iter()
        .filter(|(n, v)| n.starts_with("hugepages-") && **v > 0)
        .collect();
    if per_size.is_empty() {
        return String::new();
    }
    svg::bar_chart(
        "Per-size mTHP counters (non-zero; hugepages-<size>/stats/<counter>)",
        "count",
        &per_size
            .iter()
            .map(|(n, _)| n.trim_start_matches("hugepages-").replace("/stats/", " "))
            .collect::<Vec<_>>(),
        &[(
            "count".into(),
            per_size.iter().map(|(_, v)| Some(**v as f64)).collect(),
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_labels_name_flags_that_are_on() {
        let row = |v: Value| v.as_object().unwrap().clone();
        let on = row(
            serde_json::json!({"aligned_swapin": true, "allocator": "percpu-order",
            "expected": "~100% from iteration 1", "kernel": "6.10", "swapin_mthp": false}),
        );
        assert_eq!(row_label(&on), "6.10 percpu-order +aligned_swapin");
        let off = row(serde_json::json!({"aligned_swapin": false, "kernel": "6.12"}));
        assert_eq!(row_label(&off), "6.12");
    }

    #[test]
    fn seed_columns_sit_before_ours() {
        let report = serde_json::json!({
            "scale": 0.1,
            "rows": [
                {"kernel": "6.9", "size": "4K", "mean_rel_pct": 0.0, "seed_mean_rel_pct": 0.0},
                {"kernel": "6.10", "size": "64K", "mean_rel_pct": 300.0, "seed_mean_rel_pct": 44.7},
            ]
        });
        let (mut t, mut p) = (String::new(), String::new());
        report_tables(&report, &mut t, &mut p);
        let seed = t.find(">seed_<wbr>mean_<wbr>rel_<wbr>pct<").unwrap();
        let ours = t.find(">mean_<wbr>rel_<wbr>pct<").unwrap();
        assert!(seed < ours, "{t}");
        assert!(p.contains("<svg") && p.contains("6.10 64K"), "{p}");
    }
}
