//! Summary statistics and compare tables as mmtests prints them (bin/lib/MMTests/Stat.pm and
//! its compare scripts), so a table of ours reads like the one in a patch's cover letter:
//! Min, Amean, Stddev (sample, n - 1), CoeffVar, Max per series and configuration, each with its
//! % difference against the first (baseline) column, and Amean differences marked `*` when
//! Welch's t-test rejects equal means at 5%.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Which way a figure improves: it decides the sign of the % difference (mmtests' pdiff for
/// higher-is-better, pndiff for lower-is-better: positive always means better).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Better {
    Lower,
    Higher,
}

/// calc_min / calc_amean / calc_stddev / calc_coeffvar / calc_max over one series of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub min: f64,
    pub amean: f64,
    /// Sample standard deviation (n - 1); NaN with fewer than two samples, as mmtests.
    pub stddev: f64,
    /// 100 * stddev / amean (0 when either is undefined or the mean is 0).
    pub coeffvar: f64,
    pub max: f64,
}

impl Summary {
    /// None for an empty series (mmtests prints NaN).
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let amean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - amean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            f64::NAN
        };
        let coeffvar = if amean != 0.0 && !stddev.is_nan() {
            stddev * 100.0 / amean
        } else {
            0.0
        };
        Some(Summary {
            samples: n,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            amean,
            stddev,
            coeffvar,
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

impl Summary {
    /// One summary of several series' samples, from their summaries (sample-weighted mean,
    /// the pooled sum of squares).
    pub fn pooled(parts: impl Iterator<Item = Summary>) -> Option<Summary> {
        let parts: Vec<Summary> = parts.collect();
        let n: usize = parts.iter().map(|s| s.samples).sum();
        if n == 0 {
            return None;
        }
        let mean = parts
            .iter()
            .map(|s| s.amean * s.samples as f64)
            .sum::<f64>()
            / n as f64;
        // Sum of squares about the pooled mean, from each part's own spread and offset.
        let ss: f64 = parts
            .iter()
            .map(|s| {
                let own = if s.samples > 1 {
                    s.stddev.powi(2) * (s.samples - 1) as f64
                } else {
                    0.0
                };
                own + s.samples as f64 * (s.amean - mean).powi(2)
            })
            .sum();
        let stddev = if n > 1 {
            (ss / (n - 1) as f64).sqrt()
        } else {
            f64::NAN
        };
        Some(Summary {
            samples: n,
            min: parts.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
            amean: mean,
            stddev,
            coeffvar: if mean != 0.0 && !stddev.is_nan() {
                stddev * 100.0 / mean
            } else {
                0.0
            },
            max: parts
                .iter()
                .map(|s| s.max)
                .fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// pdiff: % by which `new` is above `base` (higher is better).
pub fn pdiff(new: f64, base: f64) -> f64 {
    if new == base || new == 0.0 {
        0.0
    } else if base == 0.0 || base.is_nan() {
        100.0
    } else {
        new * 100.0 / base - 100.0
    }
}

/// pndiff: % by which `new` is below `base` (lower is better).
pub fn pndiff(new: f64, base: f64) -> f64 {
    if new == base {
        0.0
    } else if new == 0.0 {
        100.0
    } else if base == 0.0 {
        -99.0
    } else {
        100.0 - new * 100.0 / base
    }
}

/// The % difference of `new` against `base`, positive when better.
pub fn percent_better(new: f64, base: f64, better: Better) -> f64 {
    match better {
        Better::Higher => pdiff(new, base),
        Better::Lower => pndiff(new, base),
    }
}

/// [`percent_better`] where it means something: None when the baseline is 0 (mmtests prints
/// 100 or -99 there) or either side is undefined; equal values are 0.
pub fn percent_better_defined(new: f64, base: f64, better: Better) -> Option<f64> {
    if new.is_nan() || base.is_nan() {
        None
    } else if new == base {
        Some(0.0)
    } else if base == 0.0 {
        None
    } else {
        Some(percent_better(new, base, better))
    }
}

/// How a figure is printed, chosen by its metric name's suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    BytesPerS,
    Ns,
    Bytes,
    /// Counts and other plain figures.
    Plain,
}

impl Unit {
    /// `*_bytes_per_s`, `*_ns` (also `*_ns_total`, `*_ns_max`), `*_bytes`, else plain.
    pub fn of_metric(name: &str) -> Unit {
        let last = name.rsplit(['.', '/']).next().unwrap_or(name);
        if last.ends_with("_bytes_per_s") {
            Unit::BytesPerS
        } else if last.ends_with("_ns") || last.contains("_ns_") {
            Unit::Ns
        } else if last.ends_with("_bytes") {
            Unit::Bytes
        } else {
            Unit::Plain
        }
    }

    /// The scale for figures up to `magnitude`: (divisor, suffix).
    fn scale(self, magnitude: f64) -> (f64, &'static str) {
        const KIB: f64 = 1024.0;
        let binary = |unit: [&'static str; 5]| {
            let mut div = 1.0;
            let mut i = 0;
            while i + 1 < unit.len() && magnitude >= div * KIB {
                div *= KIB;
                i += 1;
            }
            (div, unit[i])
        };
        match self {
            Unit::BytesPerS => binary(["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"]),
            Unit::Bytes => binary(["B", "KiB", "MiB", "GiB", "TiB"]),
            Unit::Ns => [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
                .into_iter()
                .find(|(div, _)| magnitude >= *div)
                .unwrap_or((1.0, "ns")),
            Unit::Plain => [(1e12, "T"), (1e9, "G")]
                .into_iter()
                .find(|(div, _)| magnitude >= *div)
                .unwrap_or((1.0, "")),
        }
    }

    /// Every figure of a row in the scale of its largest, so the row reads across.
    pub fn format_row(self, values: &[f64]) -> Vec<String> {
        let magnitude = values
            .iter()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let (div, suffix) = self.scale(magnitude);
        values
            .iter()
            .map(|&v| {
                if !v.is_finite() {
                    "n/a".into()
                } else if self == Unit::Plain && suffix.is_empty() {
                    plain(v)
                } else {
                    format!("{:.2} {suffix}", v / div)
                }
            })
            .collect()
    }
}

/// A plain figure: thousands separators from 1000 up (rounded), else 2 decimals unless whole.
fn plain(v: f64) -> String {
    if v.abs() < 1000.0 {
        return if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        };
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// Welch's t-test of equal means (calc_welch_test): degrees of freedom rounded down, two-sided.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Welch {
    pub t: f64,
    pub dof: f64,
    /// t_{dof; 1 - alpha/2}.
    pub critical: f64,
    pub alpha_percent: f64,
    /// |t| > critical: the means differ at this significance level.
    pub significant: bool,
}

impl Welch {
    /// Two-sided p-value of `t` on the (floored) degrees of freedom.
    pub fn p_value(&self) -> f64 {
        // The survival function keeps tiny p-values that 1 - cdf rounds to 0.
        StudentsT::new(0.0, 1.0, self.dof).map_or(f64::NAN, |d| 2.0 * d.sf(self.t.abs()))
    }
}

/// None when either side has fewer than two samples or both have no variance.
pub fn welch_test(a: &Summary, b: &Summary, alpha_percent: f64) -> Option<Welch> {
    if a.samples < 2 || b.samples < 2 {
        return None;
    }
    let (m, n) = (a.samples as f64, b.samples as f64);
    let (tsx, tsy) = (a.stddev.powi(2) / m, b.stddev.powi(2) / n);
    if tsx + tsy == 0.0 {
        return None;
    }
    let dof = ((m - 1.0) * (n - 1.0) * (tsx + tsy).powi(2)
        / ((n - 1.0) * tsx.powi(2) + (m - 1.0) * tsy.powi(2)))
    .floor()
    .max(1.0);
    let t = (a.amean - b.amean) / (tsx + tsy).sqrt();
    let critical = StudentsT::new(0.0, 1.0, dof)
        .ok()?
        .inverse_cdf(1.0 - alpha_percent / 200.0);
    Some(Welch {
        t,
        dof,
        critical,
        alpha_percent,
        significant: t.abs() > critical,
    })
}

/// The significance level of the `*` marks in compare tables.
pub const ALPHA_PERCENT: f64 = 5.0;

/// One printed line: a statistic of one series across the configurations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareRow {
    /// "Min", "Amean", ... or "" for a single-valued row.
    pub stat: String,
    pub label: String,
    /// One per column; NaN where a configuration had no sample.
    pub values: Vec<f64>,
    /// How the values print.
    pub unit: Unit,
    /// % better than the first column, one per column (the first is 0); NaN (null in JSON)
    /// where undefined: a baseline of 0, or no sample.
    pub percent_better: Vec<f64>,
    /// Per column: the difference from the first column is significant (Amean rows only).
    pub significant: Vec<bool>,
}

/// An mmtests compare table: configurations as columns, the first the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompareTable {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<CompareRow>,
}

/// One series to summarise: its label and its samples per column.
pub struct Series<'a> {
    pub label: String,
    pub better: Better,
    pub unit: Unit,
    pub samples: Vec<&'a [f64]>,
}

impl CompareTable {
    /// Min, Amean, Stddev, CoeffVar and Max rows for every series, grouped by statistic as
    /// mmtests prints them. Stddev and CoeffVar always count lower as better (stat_compare).
    pub fn summaries(title: &str, columns: &[String], series: &[Series]) -> CompareTable {
        type Stat = fn(&Summary) -> f64;
        // CoeffVar is a percentage whatever the series' unit.
        let stats: [(&str, Stat, Option<Better>, bool); 5] = [
            ("Min", |s| s.min, None, true),
            ("Amean", |s| s.amean, None, true),
            ("Stddev", |s| s.stddev, Some(Better::Lower), true),
            ("CoeffVar", |s| s.coeffvar, Some(Better::Lower), false),
            ("Max", |s| s.max, None, true),
        ];
        let mut rows = Vec::new();
        for (stat, get, fixed_better, in_unit) in stats {
            for s in series {
                let summaries: Vec<Option<Summary>> =
                    s.samples.iter().map(|v| Summary::of(v)).collect();
                let values: Vec<f64> = summaries
                    .iter()
                    .map(|x| x.as_ref().map_or(f64::NAN, get))
                    .collect();
                let significant = summaries
                    .iter()
                    .map(|x| {
                        stat == "Amean"
                            && matches!((&summaries[0], x), (Some(base), Some(new))
                                if welch_test(base, new, ALPHA_PERCENT)
                                    .is_some_and(|w| w.significant))
                    })
                    .collect();
                let mut row = CompareRow::new(
                    stat,
                    &s.label,
                    values,
                    fixed_better.unwrap_or(s.better),
                    significant,
                );
                if in_unit {
                    row.unit = s.unit;
                }
                rows.push(row);
            }
        }
        CompareTable {
            title: title.into(),
            columns: columns.to_vec(),
            rows,
        }
    }

    /// A table of single figures per column (e.g. "Percentage huge-N").
    pub fn values(
        title: &str,
        columns: &[String],
        rows: impl IntoIterator<Item = (String, Vec<f64>)>,
        better: Better,
    ) -> CompareTable {
        CompareTable {
            title: title.into(),
            columns: columns.to_vec(),
            rows: rows
                .into_iter()
                .map(|(label, values)| {
                    let n = values.len();
                    CompareRow::new("", &label, values, better, vec![false; n])
                })
                .collect(),
        }
    }

    /// The table laid out as mmtests' compare-kernels prints it, figures in human units
    /// (MiB/s, ms, thousands separators) and "n/a" where a % difference is undefined.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let label_width = self
            .rows
            .iter()
            .map(|r| r.stat.len() + 1 + r.label.len())
            .max()
            .unwrap_or(0)
            .max(self.title.len());
        let mut out = String::new();
        let _ = write!(out, "{:label_width$}", self.title);
        for c in &self.columns {
            let _ = write!(out, " {c:>24}");
        }
        out.push('\n');
        for r in &self.rows {
            let name = if r.stat.is_empty() {
                r.label.clone()
            } else {
                format!("{:<8} {}", r.stat, r.label)
            };
            let _ = write!(out, "{name:label_width$}");
            let shown = r.unit.format_row(&r.values);
            for ((v, p), sig) in shown.iter().zip(&r.percent_better).zip(&r.significant) {
                let mark = if *sig { '*' } else { ' ' };
                let p = if p.is_nan() {
                    "n/a".to_string()
                } else if p.abs() < 0.005 {
                    // Not "-0.00%".
                    "0.00%".to_string()
                } else {
                    format!("{p:.2}%")
                };
                let _ = write!(out, " {v:>13} {mark}{p:>8}{mark}");
            }
            out.push('\n');
        }
        out
    }
}

impl CompareRow {
    fn new(
        stat: &str,
        label: &str,
        values: Vec<f64>,
        better: Better,
        significant: Vec<bool>,
    ) -> CompareRow {
        let base = values.first().copied().unwrap_or(f64::NAN);
        CompareRow {
            stat: stat.into(),
            label: label.into(),
            percent_better: values
                .iter()
                .map(|&v| percent_better_defined(v, base, better).unwrap_or(f64::NAN))
                .collect(),
            values,
            unit: Unit::Plain,
            significant,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_mmtests_definitions() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.min, s.max, s.amean), (2.0, 9.0, 5.0));
        // Sample standard deviation: sqrt(32 / 7).
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((s.coeffvar - s.stddev * 20.0).abs() < 1e-12);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[3.0]).unwrap().stddev.is_nan());
    }

    #[test]
    fn pooled_summaries_equal_the_summary_of_all_samples() {
        let all = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let whole = Summary::of(&all).unwrap();
        let parts = [
            Summary::of(&all[..3]).unwrap(),
            Summary::of(&all[3..]).unwrap(),
        ];
        let p = Summary::pooled(parts.into_iter()).unwrap();
        assert_eq!((p.samples, p.min, p.max), (8, 2.0, 9.0));
        assert!((p.amean - whole.amean).abs() < 1e-12);
        assert!((p.stddev - whole.stddev).abs() < 1e-12);
        assert!(Summary::pooled(std::iter::empty()).is_none());
    }

    #[test]
    fn percent_differences_read_as_in_the_seed_tables() {
        // Seed 001: Min fault-base-1 1562 -> 1407 is 9.92% better (lower is better).
        assert!((pndiff(1407.0, 1562.0) - 9.92).abs() < 0.01);
        // Percentage huge-3 11.41 -> 35.23 is 208.8% more (higher is better).
        assert!((pdiff(35.23, 11.41) - 208.76).abs() < 0.01);
        assert_eq!(pdiff(5.0, 5.0), 0.0);
        assert_eq!(pndiff(0.0, 5.0), 100.0);
    }

    #[test]
    fn welch_separates_distinct_means_and_not_equal_ones() {
        let a = Summary::of(&[10.0, 11.0, 9.0, 10.5, 9.5]).unwrap();
        let b = Summary::of(&[20.0, 21.0, 19.0, 20.5, 19.5]).unwrap();
        let c = Summary::of(&[10.2, 10.9, 9.1, 10.4, 9.6]).unwrap();
        assert!(welch_test(&a, &b, 5.0).unwrap().significant);
        let w = welch_test(&a, &c, 5.0).unwrap();
        assert!(!w.significant, "{w:?}");
        // Welch's dof for 5 + 5 samples of near-equal variance is just under 8, floored: 7;
        // t_{7; 0.975} = 2.365.
        assert_eq!(w.dof, 7.0);
        assert!((w.critical - 2.365).abs() < 0.001, "{w:?}");
        // p is 0.05 exactly at the critical t.
        let at = Welch { t: w.critical, ..w };
        assert!((at.p_value() - 0.05).abs() < 1e-9, "{}", at.p_value());
        assert!(w.p_value() > 0.05);
        assert!(welch_test(&a, &b, 5.0).unwrap().p_value() < 0.05);
    }

    #[test]
    fn compare_table_groups_rows_by_statistic() {
        let base = [1.0, 2.0, 3.0];
        let new = [1.0, 1.0, 1.5];
        let t = CompareTable::summaries(
            "latency",
            &["a".into(), "b".into()],
            &[Series {
                label: "fault-1".into(),
                better: Better::Lower,
                unit: Unit::Ns,
                samples: vec![&base, &new],
            }],
        );
        let stats: Vec<&str> = t.rows.iter().map(|r| r.stat.as_str()).collect();
        assert_eq!(stats, ["Min", "Amean", "Stddev", "CoeffVar", "Max"]);
        let amean = &t.rows[1];
        assert!((amean.percent_better[1] - pndiff(7.0 / 6.0, 2.0)).abs() < 1e-12);
        assert!(t.render().contains("Amean    fault-1"));
    }

    #[test]
    fn units_by_metric_suffix_scaled_per_row() {
        assert_eq!(
            Unit::of_metric("usemem.throughput_bytes_per_s"),
            Unit::BytesPerS
        );
        assert_eq!(Unit::of_metric("simulated_ns"), Unit::Ns);
        assert_eq!(Unit::of_metric("lock.lru.wait_ns_total"), Unit::Ns);
        assert_eq!(Unit::of_metric("memcg.a.usage_bytes"), Unit::Bytes);
        assert_eq!(Unit::of_metric("hugepages-64kB/stats/swpout"), Unit::Plain);
        assert_eq!(Unit::of_metric("nsproxy_count"), Unit::Plain);
        let row = |u: Unit, v: &[f64]| u.format_row(v);
        assert_eq!(
            row(
                Unit::BytesPerS,
                &[1.5 * 1024.0 * 1024.0, 3.0 * 1024.0 * 1024.0]
            ),
            ["1.50 MiB/s", "3.00 MiB/s"]
        );
        // One scale per row: the largest figure's.
        assert_eq!(
            row(
                Unit::BytesPerS,
                &[512.0 * 1024.0 * 1024.0, 2.0 * 1024.0 * 1024.0 * 1024.0]
            ),
            ["0.50 GiB/s", "2.00 GiB/s"]
        );
        assert_eq!(row(Unit::Ns, &[1.5e6, 2.25e6]), ["1.50 ms", "2.25 ms"]);
        assert_eq!(row(Unit::Ns, &[3.0e9]), ["3.00 s"]);
        assert_eq!(row(Unit::Ns, &[250.0]), ["250.00 ns"]);
        assert_eq!(row(Unit::Bytes, &[4096.0]), ["4.00 KiB"]);
        assert_eq!(
            row(Unit::Plain, &[1234567.0, 12.5, 7.0, -2500.0, f64::NAN]),
            ["1,234,567", "12.50", "7", "-2,500", "n/a"]
        );
        assert_eq!(row(Unit::Plain, &[2.5e9, 1e9]), ["2.50 G", "1.00 G"]);
    }

    #[test]
    fn a_zero_baseline_has_no_percent_difference() {
        assert_eq!(percent_better_defined(5.0, 0.0, Better::Lower), None);
        assert_eq!(percent_better_defined(5.0, 0.0, Better::Higher), None);
        assert_eq!(percent_better_defined(0.0, 0.0, Better::Lower), Some(0.0));
        assert_eq!(percent_better_defined(1.0, f64::NAN, Better::Lower), None);
        assert_eq!(
            percent_better_defined(1407.0, 1562.0, Better::Lower),
            Some(pndiff(1407.0, 1562.0))
        );
        // mmtests' own figures stay for the seed tables.
        assert_eq!(pndiff(5.0, 0.0), -99.0);
        let (zero, some) = ([0.0, 0.0], [3.0, 4.0]);
        let t = CompareTable::summaries(
            "swpout",
            &["base".into(), "new".into()],
            &[Series {
                label: "pswpout".into(),
                better: Better::Lower,
                unit: Unit::Plain,
                samples: vec![&zero, &some],
            }],
        );
        let amean = &t.rows[1];
        assert_eq!(amean.percent_better[0], 0.0);
        assert!(amean.percent_better[1].is_nan());
        let text = t.render();
        let line = text.lines().find(|l| l.starts_with("Amean")).unwrap();
        assert!(line.contains("n/a") && !line.contains("-99"), "{text}");
        assert!(line.contains("0.00%"), "{text}");
    }
}
