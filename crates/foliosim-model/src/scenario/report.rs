//! The scenario's `[report]` table: what a run records besides its final counters.
//!
//! ```toml
//! [report]
//! sample_interval = "100ms"   # or "auto"; unset: no time series
//! ```

use super::ScenarioError;
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// Record every counter over simulated time, as `vmstat 1` does (report/timeseries.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval: Option<SampleInterval>,
}

impl ReportSpec {
    pub fn is_default(&self) -> bool {
        *self == ReportSpec::default()
    }

    pub fn validate(&self) -> Result<(), ScenarioError> {
        if let Some(SampleInterval::Every(ns)) = self.sample_interval {
            if !in_range(ns) {
                return Err(ScenarioError::Invalid {
                    field: "report.sample_interval".into(),
                    value: format_duration(ns),
                    allowed: ALLOWED.into(),
                });
            }
        }
        Ok(())
    }
}

const MIN_INTERVAL_NS: u64 = 1_000;
const MAX_INTERVAL_NS: u64 = 3_600_000_000_000;
const ALLOWED: &str = "\"auto\" or 1us ..= 3600s";

/// The one range check, for the TOML field and `--sample-interval` alike.
fn in_range(ns: u64) -> bool {
    (MIN_INTERVAL_NS..=MAX_INTERVAL_NS).contains(&ns)
}

/// How often a time series samples, in simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleInterval {
    Every(u64),
    /// Start fine and coarsen as the run goes on, so that any run gives a few hundred rows
    /// (what `--html` uses when no interval is given).
    Auto,
}

impl SampleInterval {
    /// "100ms", "1.5s", "250us", "5000ns", "auto"; a bare integer is ns.
    pub fn parse(text: &str) -> Result<SampleInterval, String> {
        let t = text.trim();
        if t == "auto" {
            return Ok(SampleInterval::Auto);
        }
        let split = t
            .find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
            .unwrap_or(t.len());
        let (digits, unit) = t.split_at(split);
        let scale = match unit.trim() {
            "" | "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            _ => return Err(bad(t)),
        };
        let value: f64 = digits.trim().parse().map_err(|_| bad(t))?;
        if !(value > 0.0 && value.is_finite()) {
            return Err(bad(t));
        }
        let ns = (value * scale).round().min(u64::MAX as f64) as u64;
        if !in_range(ns) {
            return Err(format!(
                "report.sample_interval: `{t}` is out of range; allowed: {ALLOWED}"
            ));
        }
        Ok(SampleInterval::Every(ns))
    }
}

fn bad(text: &str) -> String {
    format!(
        "report.sample_interval: `{text}` is not a duration like 100ms, 1s, 250us or 5000ns (or \"auto\")"
    )
}

/// 100_000_000 -> "100ms"; the largest unit that divides it.
pub fn format_duration(ns: u64) -> String {
    for (div, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns >= div && ns.is_multiple_of(div) {
            return format!("{}{unit}", ns / div);
        }
    }
    format!("{ns}ns")
}

impl fmt::Display for SampleInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SampleInterval::Every(ns) => f.write_str(&format_duration(*ns)),
            SampleInterval::Auto => f.write_str("auto"),
        }
    }
}

impl Serialize for SampleInterval {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for SampleInterval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(ns) => Ok(SampleInterval::Every(ns)),
            Raw::Text(t) => SampleInterval::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        let p = |t| SampleInterval::parse(t).unwrap();
        assert_eq!(p("100ms"), SampleInterval::Every(100_000_000));
        assert_eq!(p("1.5s"), SampleInterval::Every(1_500_000_000));
        assert_eq!(p("250us"), SampleInterval::Every(250_000));
        assert_eq!(p("5000"), SampleInterval::Every(5000));
        assert_eq!(p("auto"), SampleInterval::Auto);
        assert_eq!(p("100ms").to_string(), "100ms");
        assert_eq!(p("1.5s").to_string(), "1500ms");
        for bad in [
            "",
            "ms",
            "-1s",
            "10 parsecs",
            "1h",
            "1ns",
            "999ns",
            "3601s",
            "1e30s",
        ] {
            let e = SampleInterval::parse(bad).unwrap_err();
            assert!(e.contains("report.sample_interval"), "{e}");
        }
    }
}
