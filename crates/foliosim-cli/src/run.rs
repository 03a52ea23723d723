//! `foliosim run`: one scenario on the sim (or, with --live, on this kernel).

use crate::{apply_costs_file, load, report_out, run_live, Format};
use anyhow::Result;
use foliosim::Scenario;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

#[derive(clap::Args)]
pub struct RunArgs {
    pub scenario: std::path::PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Check the model's invariants while running (slow).
    #[arg(long, conflicts_with = "live")]
    pub check_invariants: bool,
    /// Run on the live kernel instead of the sim (root only; changes and then restores
    /// sysfs knobs, swap devices and memcgs). The sim-only flags are refused with it.
    #[arg(long)]
    pub live: bool,
    /// Live: kill the workload and restore the host after this many seconds.
    #[arg(long, value_name = "SECONDS", requires = "live", value_parser = crate::seconds)]
    pub timeout: Option<f64>,
    /// Live: allow turning zswap on for scenarios that enable it. zswap is off again after
    /// the run, but the host then swaps mTHP in as order 0 until reboot.
    #[arg(long, requires = "live")]
    pub enable_zswap: bool,
    /// Sim: load named costs from a file written by `foliosim calibrate`.
    #[arg(long, value_name = "FILE", conflicts_with = "live")]
    pub costs: Option<std::path::PathBuf>,
    /// Sim: run on this machine profile (`machine.profile`): a built-in name (this-vm,
    /// sapphire-rapids-2s-112c, ampere-altra-80c, intel-4c-2015, epyc-2s) or a profile file
    /// (`foliosim calibrate --live` writes one).
    #[arg(long, value_name = "NAME|FILE", conflicts_with = "live")]
    pub machine_profile: Option<String>,
    /// Record every counter every DURATION of simulated time (e.g. 100ms, or auto), as
    /// `vmstat 1` does; kept in the JSON (`timeseries`) and printed after the table.
    #[arg(long, value_name = "DURATION", conflicts_with = "live")]
    pub sample_interval: Option<String>,
    /// Write the run's per-CPU activity as Chrome trace-event JSON (Perfetto opens it).
    #[arg(long, value_name = "FILE", conflicts_with = "live")]
    pub timeline: Option<std::path::PathBuf>,
    /// Stop recording the timeline past this many events (bounds the file).
    #[arg(long, value_name = "N", default_value_t = foliosim::report::timeline::DEFAULT_MAX_EVENTS, conflicts_with = "live")]
    pub timeline_max_events: usize,
    /// Write a self-contained HTML report (tables, plots, the scenario, versions).
    #[arg(long, value_name = "FILE", conflicts_with = "live")]
    pub html: Option<std::path::PathBuf>,
}

pub fn run(args: RunArgs) -> Result<()> {
    crate::check_output_file("--timeline", args.timeline.as_deref())?;
    crate::check_output_file("--html", args.html.as_deref())?;
    let mut s = scenario(&args)?;
    if args.live {
        let opts = foliosim_live::LiveOptions {
            allow_live: true,
            timeout: args.timeout.map(std::time::Duration::from_secs_f64),
            enable_zswap: args.enable_zswap,
        };
        return run_live(&s, &opts, args.format);
    }
    if let Some(path) = &args.costs {
        apply_costs_file(&mut s, path)?;
    }
    if let Some(profile) = &args.machine_profile {
        s.machine.profile = Some(profile.clone());
        s.validate()?;
    }
    let wall = Instant::now();
    let run = run_sim(&s, &args)?;
    let wall_s = wall.elapsed().as_secs_f64();
    let result = &run.result;
    match args.format {
        Format::Json => println!("{}", result.to_json()),
        Format::Table => {
            print!("{}", result.to_table());
            if let Some(ts) = &result.timeseries {
                print!("\n{}", ts.to_table());
            }
        }
    }
    if let (Some(path), Some(tl)) = (&args.timeline, &run.timeline) {
        report_out::write_timeline(path, tl)?;
    }
    if let Some(path) = &args.html {
        write_html(path, &args.scenario, &s, result)?;
    }
    // Wall-clock figures go to stderr: they are not results and vary run to run.
    eprintln!("engine: {}", result.speed_line(wall_s));
    Ok(())
}

/// The scenario file with the command line's overrides (seed, invariants, sampling).
fn scenario(args: &RunArgs) -> Result<Scenario> {
    let mut s = load(&args.scenario)?;
    if let Some(text) = &args.sample_interval {
        s.report.sample_interval = Some(report_out::parse_interval(text)?);
    }
    if args.html.is_some() && s.report.sample_interval.is_none() {
        s.report.sample_interval = Some(foliosim::report::spec::SampleInterval::Auto);
    }
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    s.check_invariants |= args.check_invariants;
    Ok(s)
}

/// The sim run, with a spinner on stderr and the timeline when asked for.
fn run_sim(s: &Scenario, args: &RunArgs) -> Result<foliosim::Run> {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap());
    let opts = foliosim::RunOptions {
        timeline: args
            .timeline
            .is_some()
            .then_some(foliosim::report::timeline::TimelineOptions {
                max_events: args.timeline_max_events,
            }),
        ..Default::default()
    };
    let run = foliosim::run_with(s, &opts, &mut |steps, sim_ns| {
        bar.set_message(format!(
            "{steps} steps, {:.2} simulated s",
            sim_ns as f64 / 1e9
        ));
        bar.tick();
    })?;
    bar.finish_and_clear();
    Ok(run)
}

fn write_html(
    path: &std::path::Path,
    scenario: &std::path::Path,
    s: &Scenario,
    result: &foliosim::RunResult,
) -> Result<()> {
    let text = foliosim::footprint::read_toml(scenario)?;
    let page = foliosim::report::html::run_report(
        &scenario.display().to_string(),
        &text,
        &s.to_toml_string(),
        &s.machine.cost_profile,
        result,
        &report_out::versions(),
    );
    report_out::write(path, &page, "HTML report")
}
