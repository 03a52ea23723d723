//! `foliosim reproduce`: a seed document's experiment, its table beside ours.

use crate::{jobs_or_all_cores, parse_costs, progress, report_out, Format};
use anyhow::{bail, Context, Result};
use foliosim_lab::reproduce::seed000;
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// Which seed: 000 (swap-out mTHP without splitting), 001 (THP faults left to
    /// khugepaged: thpscale), 002 (zswap stores mTHP), 003 (the mTHP swap allocator) or
    /// 004 (MIGRC: deferred TLB flushes of tiering migrations, XSBench; --scale scales
    /// its lookups, not its memory).
    pub seed_doc: String,
    /// Multiply every size of the experiment (memory per process, memcg limit, swap).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Runs per configuration, seeds 1..=N.
    #[arg(long, default_value_t = 5)]
    pub seeds: u32,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    #[arg(long)]
    pub check_invariants: bool,
    /// Override a named cost of the profile, e.g. --cost tlb_flush_ipi_ns=0 (repeatable).
    #[arg(long = "cost", value_name = "NAME=NS")]
    pub costs: Vec<String>,
    /// Load named costs from a costs file (`foliosim fit --output`, `foliosim calibrate`);
    /// `--cost` pairs override it.
    #[arg(long = "costs", value_name = "FILE")]
    pub costs_file: Option<std::path::PathBuf>,
    /// Record the counters of each configuration's seed-1 run every DURATION of simulated
    /// time (e.g. 100ms, or auto); JSON output gets a `timeseries` list.
    #[arg(long, value_name = "DURATION")]
    pub sample_interval: Option<String>,
    /// Write a self-contained HTML report: the seed's table beside ours, plots, the
    /// scenarios and versions (samples time series with `auto` unless told otherwise).
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Runs at a time (default: every core); the output is the same whatever N.
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Run every configuration on this machine profile (`machine.profile`: this-vm,
    /// sapphire-rapids-2s-112c, ampere-altra-80c, intel-4c-2015, epyc-2s, or a profile file
    /// that `foliosim calibrate --live` wrote).
    #[arg(long, value_name = "NAME|FILE")]
    pub machine_profile: Option<String>,
}

pub fn reproduce(args: ReproduceArgs) -> Result<()> {
    let ReproduceArgs {
        seed_doc,
        scale,
        seeds,
        format,
        check_invariants,
        costs,
        costs_file,
        sample_interval,
        html,
        jobs,
        machine_profile,
    } = args;
    let mut interval = sample_interval
        .as_deref()
        .map(report_out::parse_interval)
        .transpose()?;
    if html.is_some() && interval.is_none() {
        interval = Some(foliosim::report::spec::SampleInterval::Auto);
    }
    crate::check_output_file("--html", html.as_deref())?;
    let which = seed_number(&seed_doc)?;
    foliosim_lab::reproduce::check_scale("reproduce: --scale", which, scale)
        .map_err(anyhow::Error::msg)?;
    foliosim_lab::reproduce::check_seeds("reproduce: --seeds", seeds)
        .map_err(anyhow::Error::msg)?;
    let jobs = jobs_or_all_cores("reproduce", jobs)?;
    let bar = progress::Progress::new(&format!("reproduce {which:03}"), "runs", 0);
    let mut runs = foliosim_lab::reproduce::Runs::new(jobs)
        .with_progress(|f| bar.finished(f.done, f.total, f.label, f.wall_s))
        .with_machine_profile(machine_profile);
    let wall = Instant::now();
    let costs = named_costs(&costs, costs_file.as_deref())?;
    // Every seed's reproduce takes the same arguments; its report is Serialize and
    // prints its own table.
    // The seed-1 run of each configuration is kept for time series and the report.
    macro_rules! rendered {
        ($reproduce:path) => {{
            let (report, runs) = foliosim_lab::reproduce::capture::capturing(interval, || {
                $reproduce(scale, seeds, check_invariants, &costs, &mut runs)
            });
            let report = report?;
            let json = if sample_interval.is_some() {
                serde_json::to_string_pretty(&report_out::WithTimeseries {
                    report: &report,
                    timeseries: &runs,
                })?
            } else {
                serde_json::to_string_pretty(&report)?
            };
            (
                json,
                serde_json::to_value(&report)?,
                report.to_table(),
                runs,
            )
        }};
    }
    let (json, value, table, captured) = match which {
        0 => rendered!(seed000::reproduce_with_costs),
        1 => rendered!(foliosim_lab::reproduce::seed001::reproduce),
        2 => rendered!(foliosim_lab::reproduce::seed002::reproduce),
        3 => rendered!(foliosim_lab::reproduce::seed003::reproduce),
        _ => rendered!(foliosim_lab::reproduce::seed004::reproduce),
    };
    bar.clear();
    if let Some(path) = &html {
        write_html(path, which, &value, &table, &captured)?;
    }
    match format {
        Format::Json => println!("{json}"),
        // The header: which machine profile, and where its costs come from.
        Format::Table => print!("{}{table}", runs.machine_header()),
    }
    eprintln!("wall time {:.1} s", wall.elapsed().as_secs_f64());
    Ok(())
}

/// `000` ... `004` (leading zeros optional).
fn seed_number(seed_doc: &str) -> Result<u32> {
    Ok(match seed_doc.trim_start_matches('0') {
        "" => 0,
        "1" => 1,
        "2" => 2,
        "3" => 3,
        "4" => 4,
        _ => {
            bail!("reproduce: seed `{seed_doc}` is not available; allowed: 000, 001, 002, 003, 004")
        }
    })
}

/// `--cost` pairs over the `--costs` file's, checked on a small seed-000 scenario.
fn named_costs(
    pairs: &[String],
    costs_file: Option<&std::path::Path>,
) -> Result<BTreeMap<String, f64>> {
    let mut costs = parse_costs(pairs)?;
    if let Some(path) = costs_file {
        for (name, value) in foliosim_lab::fit::costs_file::load(path)? {
            costs.entry(name).or_insert(value);
        }
        let mut probe = seed000::scenario(foliosim::scenario::Release::V6_10, "4K", 0.05, 1);
        probe.costs = costs.clone();
        probe
            .validate()
            .with_context(|| format!("costs from {}", path.display()))?;
    }
    Ok(costs)
}

fn write_html(
    path: &std::path::Path,
    which: u32,
    value: &serde_json::Value,
    table: &str,
    captured: &[foliosim_lab::reproduce::capture::CapturedRun],
) -> Result<()> {
    let seed_doc = format!("{which:03}");
    let cover = foliosim_lab::reproduce::cover_figures(&seed_doc, value);
    let page = foliosim::report::html::reproduce_report(
        &seed_doc,
        value,
        &cover,
        table,
        captured,
        &report_out::versions(),
    );
    report_out::write(path, &page, "HTML report")
}
