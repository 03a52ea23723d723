//! Writing what `run` and `reproduce` record besides their tables: timelines (Chrome trace
//! JSON) and HTML reports. The content is built in foliosim::report; this only writes files.

use anyhow::{Context, Result};
use foliosim::report::html::Versions;
use std::path::Path;

pub fn versions() -> Versions {
    Versions {
        foliosim: env!("CARGO_PKG_VERSION").into(),
        git_rev: option_env!("FOLIOSIM_GIT_REV").map(String::from),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    }
}

pub fn write(path: &Path, text: &str, what: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {what} to {}", path.display()))?;
    eprintln!("wrote {what} to {}", path.display());
    Ok(())
}

pub fn parse_interval(text: &str) -> Result<foliosim::report::spec::SampleInterval> {
    foliosim::report::spec::SampleInterval::parse(text).map_err(|e| {
        anyhow::anyhow!(
            "--sample-interval: {}",
            e.trim_start_matches("report.sample_interval: ")
        )
    })
}

/// The timeline file, and a line on stderr saying how big it is and whether it was capped.
pub fn write_timeline(path: &Path, tl: &foliosim::report::timeline::Timeline) -> Result<()> {
    write(path, &tl.to_chrome_json(), "timeline")?;
    eprintln!(
        "timeline: {} events{}; open it in Perfetto's UI (Open trace file) or chrome://tracing",
        tl.events(),
        match tl.capped_at_ns() {
            Some(ns) => format!(
                ", capped: nothing recorded after {:.6} simulated s (raise --timeline-max-events)",
                ns as f64 / 1e9
            ),
            None => String::new(),
        }
    );
    Ok(())
}

/// A seed's report with the time series of its seed-1 runs after its own fields.
#[derive(serde::Serialize)]
pub struct WithTimeseries<'a, T: serde::Serialize> {
    #[serde(flatten)]
    pub report: &'a T,
    pub timeseries: &'a [foliosim_lab::reproduce::capture::CapturedRun],
}
