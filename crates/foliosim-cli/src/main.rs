//! `foliosim`: run scenarios and reproduce the seed documents' tables. No model logic here.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use foliosim::Scenario;
use foliosim_lab::reproduce::seed000;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

mod fit;
mod progress;
mod record;
mod report_out;
mod soak;
mod sweep;

#[derive(Parser)]
#[command(
    name = "foliosim",
    version,
    about = "Deterministic simulator of Linux memory management for large folios (mTHP)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Table,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario (TOML) and print its counters.
    Run {
        scenario: std::path::PathBuf,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Check the model's invariants while running (slow).
        #[arg(long)]
        check_invariants: bool,
        /// Run on the live kernel instead of the sim (root only; changes and then restores
        /// sysfs knobs, swap devices and memcgs).
        #[arg(long)]
        live: bool,
        /// Live: kill the workload and restore the host after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<f64>,
        /// Live: allow turning zswap on for scenarios that enable it. zswap is off again after
        /// the run, but the host then swaps mTHP in as order 0 until reboot.
        #[arg(long)]
        enable_zswap: bool,
        /// Sim: load named costs from a file written by `foliosim calibrate`.
        #[arg(long, value_name = "FILE")]
        costs: Option<std::path::PathBuf>,
        /// Record every counter every DURATION of simulated time (e.g. 100ms, or auto), as
        /// `vmstat 1` does; kept in the JSON (`timeseries`) and printed after the table.
        #[arg(long, value_name = "DURATION")]
        sample_interval: Option<String>,
        /// Write the run's per-CPU activity as Chrome trace-event JSON (Perfetto opens it).
        #[arg(long, value_name = "FILE")]
        timeline: Option<std::path::PathBuf>,
        /// Stop recording the timeline past this many events (bounds the file).
        #[arg(long, value_name = "N", default_value_t = foliosim::report::timeline::DEFAULT_MAX_EVENTS)]
        timeline_max_events: usize,
        /// Write a self-contained HTML report (tables, plots, the scenario, versions).
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
    },
    /// Run scenarios on the sim and on the live kernel and compare their counters side by side.
    /// Where the host's state decides what a scenario leaves open, the sim is run like the host
    /// and the scenario's output says so: mTHP swap-in (probed once: 6.18 loses it for good
    /// once zswap has been enabled since boot) and `defrag` when the scenario does not set it.
    Validate {
        /// Scenario files, or directories of them (e.g. scenarios/validate).
        #[arg(required = true)]
        scenarios: Vec<std::path::PathBuf>,
        /// Required: allow the live run (root only).
        #[arg(long)]
        live: bool,
        /// Largest relative difference of a policy counter that still passes.
        #[arg(long, default_value_t = 0.10)]
        tolerance: f64,
        /// Counts below this on both sides are noise and are not checked.
        #[arg(long, default_value_t = foliosim_live::validate::DEFAULT_MIN_COUNT)]
        min_count: u64,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Sim: load named costs from a file written by `foliosim calibrate`.
        #[arg(long, value_name = "FILE")]
        costs: Option<std::path::PathBuf>,
        /// Live runs per scenario: throughput is their median, and the ordering is judged only
        /// between scenarios whose live ranges do not overlap.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Live: allow turning zswap on for scenarios that enable it. zswap is off again after
        /// the run, but the host then swaps mTHP in as order 0 until reboot.
        #[arg(long)]
        enable_zswap: bool,
    },
    /// Measure the cost model on the live kernel and write a costs file the sim can load.
    Calibrate {
        /// Required: allow the live measurements (root only).
        #[arg(long)]
        live: bool,
        /// Where to write the costs TOML.
        #[arg(long, default_value = "costs/calibrated.toml")]
        output: std::path::PathBuf,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Smaller regions, fewer repetitions (seconds instead of a minute; noisier).
        #[arg(long)]
        quick: bool,
    },
    /// Undo the settings of a live run that was killed (normally done by the next live start).
    Restore {
        /// Required: allow touching the host (root only).
        #[arg(long)]
        live: bool,
    },
    /// Run a seed document's experiment and print its table beside ours.
    Reproduce {
        /// Which seed: 000 (swap-out mTHP without splitting), 001 (THP faults left to
        /// khugepaged: thpscale), 002 (zswap stores mTHP), 003 (the mTHP swap allocator) or
        /// 004 (MIGRC: deferred TLB flushes of tiering migrations, XSBench; --scale scales
        /// its lookups, not its memory).
        seed_doc: String,
        /// Multiply every size of the experiment (memory per process, memcg limit, swap).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Runs per configuration, seeds 1..=N.
        #[arg(long, default_value_t = 5)]
        seeds: u32,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        #[arg(long)]
        check_invariants: bool,
        /// Override a named cost of the profile, e.g. --cost tlb_flush_ipi_ns=0 (repeatable).
        #[arg(long = "cost", value_name = "NAME=NS")]
        costs: Vec<String>,
        /// Load named costs from a costs file (`foliosim fit --output`, `foliosim calibrate`);
        /// `--cost` pairs override it.
        #[arg(long = "costs", value_name = "FILE")]
        costs_file: Option<std::path::PathBuf>,
        /// Record the counters of each configuration's seed-1 run every DURATION of simulated
        /// time (e.g. 100ms, or auto); JSON output gets a `timeseries` list.
        #[arg(long, value_name = "DURATION")]
        sample_interval: Option<String>,
        /// Write a self-contained HTML report: the seed's table beside ours, plots, the
        /// scenarios and versions (samples time series with `auto` unless told otherwise).
        #[arg(long, value_name = "FILE")]
        html: Option<std::path::PathBuf>,
        /// Runs at a time (default: every core); the output is the same whatever N.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Run every configuration on this machine profile (`machine.profile`: this-vm,
        /// sapphire-rapids-2s-112c, ampere-altra-80c, intel-4c-2015, epyc-2s).
        #[arg(long, value_name = "NAME")]
        machine_profile: Option<String>,
    },
    /// Print a scenario with every default filled in, then (as `#` lines) the release table's
    /// switches and every resolved default with what chose it. `--kernel 6.6` alone: a release.
    #[command(arg_required_else_help = true)]
    Show {
        scenario: Option<std::path::PathBuf>,
        /// A release from 4.1 to 6.18 (replaces the scenario's `kernel.version`).
        #[arg(long, value_name = "X.Y")]
        kernel: Option<String>,
    },
    /// Run a base scenario over axes (cartesian product) x seeds, in parallel (local cores or
    /// Ray); one results table as Parquet (and CSV). Resumable: rerun to finish.
    Sweep(sweep::SweepArgs),
    /// mmtests-style compare table over a sweep's results (Min, Amean, Stddev, CoeffVar, Max,
    /// % against a baseline, Welch's t-test over the seeds).
    Compare(sweep::CompareArgs),
    /// Run a program on this machine (root) and record what it does to memory (mmap, munmap,
    /// madvise, brk, fork, exec, exit, page faults) as a trace for `kind = "trace"`.
    Record(record::RecordArgs),
    /// Fit named costs to a published table (rows = scenarios with measured figures) and
    /// predict the rows left out; writes a costs file saying where every number came from.
    Fit(fit::FitArgs),
    /// Random valid scenarios and traces, every policy, invariants checked (docs/fuzz-and-soak.md).
    Soak(soak::SoakArgs),
    /// The engine's speed and memory on the seed scenarios and a 1 TiB machine (docs/speed.md):
    /// steps/s, simulated s per wall s, simulator bytes per simulated base page, wall s.
    Bench {
        /// Scaled-down scenarios that run in seconds.
        #[arg(long)]
        quick: bool,
        /// Only the rows whose name contains this (e.g. `1TiB`, `seed000`).
        #[arg(long)]
        only: Option<String>,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
}

fn load(path: &std::path::Path) -> Result<Scenario> {
    let text = foliosim::footprint::read_toml(path)
        .with_context(|| format!("reading {}", path.display()))?;
    Scenario::from_toml_str(&text).with_context(|| format!("in {}", path.display()))
}

/// `foliosim show`: the scenario (unless a bare release was asked for) and what it resolves to.
fn show(path: Option<&std::path::Path>, kernel: Option<String>) -> Result<String> {
    let release = kernel
        .map(|text| foliosim::scenario::Release::parse(&text))
        .transpose()?;
    let Some(path) = path else {
        // A bare release: every other field at its default (no workload to validate).
        let mut scenario: Scenario = serde_json::from_str("{}")?;
        scenario.kernel.version = release.context("`show` needs a scenario or --kernel")?;
        return Ok(foliosim::scenario::resolved::render(&scenario));
    };
    let mut scenario = load(path)?;
    if let Some(release) = release {
        scenario.kernel.version = release;
        scenario.validate()?;
    }
    Ok(scenario.to_toml_string() + &foliosim::scenario::resolved::render(&scenario))
}

/// `NAME=NS` pairs, checked against the cost model's names through scenario validation.
fn parse_costs(pairs: &[String]) -> Result<std::collections::BTreeMap<String, f64>> {
    let mut costs = std::collections::BTreeMap::new();
    for pair in pairs {
        let Some((name, value)) = pair.split_once('=') else {
            bail!("--cost `{pair}`: expected NAME=NS")
        };
        let value: f64 = value
            .trim()
            .parse()
            .with_context(|| format!("--cost `{pair}`: `{value}` is not a number of ns"))?;
        costs.insert(name.trim().to_string(), value);
    }
    let mut probe = seed000::scenario(foliosim::scenario::KernelVersion::V6_10, "4K", 0.05, 1);
    probe.costs = costs.clone();
    probe.validate().context("--cost")?;
    Ok(costs)
}

/// `foliosim bench`: one row per case, printed as it finishes.
fn bench(quick: bool, only: Option<&str>, format: Format) -> Result<()> {
    use foliosim_lab::bench;
    let cases: Vec<_> = bench::cases(quick)
        .into_iter()
        .filter(|c| only.is_none_or(|o| c.name.contains(o)))
        .collect();
    if cases.is_empty() {
        bail!("--only {}: no bench row matches", only.unwrap_or(""));
    }
    if format == Format::Table {
        println!("{}", bench::header());
    }
    for case in &cases {
        let row = bench::run_case(case).with_context(|| case.name.clone())?;
        match format {
            Format::Table => println!("{}", bench::format_row(&row)),
            Format::Json => println!("{}", serde_json::to_string(&row)?),
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run_command() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", error_text(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// An error as a user reads it, once: the message, then each cause that says something the
/// text so far does not (a wrapped TOML error repeats its source word for word), on the same
/// line when it is one line. A backtrace only when asked with FOLIOSIM_BACKTRACE=1
/// (RUST_BACKTRACE is often set for other programs).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = format!("Error: {e}");
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        let cause = cause.trim();
        if text.contains(cause) {
            continue;
        }
        if cause.contains('\n') {
            text.push_str(":\n");
            for line in cause.lines() {
                text.push_str(&format!("  {line}\n"));
            }
            text.pop();
        } else {
            text.push_str(&format!(": {cause}"));
        }
    }
    text.push('\n');
    if std::env::var_os("FOLIOSIM_BACKTRACE").is_some_and(|v| v != "0") {
        text.push_str(&format!("{}\n", e.backtrace()));
    }
    text
}

fn run_command() -> Result<()> {
    match Cli::parse().command {
        Command::Run {
            scenario,
            format,
            seed,
            check_invariants,
            live,
            timeout,
            enable_zswap,
            costs,
            sample_interval,
            timeline,
            timeline_max_events,
            html,
        } => {
            let mut s = load(&scenario)?;
            if let Some(text) = &sample_interval {
                s.report.sample_interval = Some(report_out::parse_interval(text)?);
            }
            if html.is_some() && s.report.sample_interval.is_none() {
                s.report.sample_interval = Some(foliosim::report::spec::SampleInterval::Auto);
            }
            if let Some(seed) = seed {
                s.seed = seed;
            }
            s.check_invariants |= check_invariants;
            if live {
                let opts = foliosim_live::LiveOptions {
                    allow_live: true,
                    timeout: timeout.map(std::time::Duration::from_secs_f64),
                    enable_zswap,
                };
                return run_live(&s, &opts, format);
            }
            if let Some(path) = costs {
                apply_costs_file(&mut s, &path)?;
            }
            let bar = ProgressBar::new_spinner();
            bar.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap());
            let wall = Instant::now();
            let opts = foliosim::RunOptions {
                timeline: timeline.is_some().then_some(
                    foliosim::report::timeline::TimelineOptions {
                        max_events: timeline_max_events,
                    },
                ),
                ..Default::default()
            };
            let run = foliosim::run_with(&s, &opts, &mut |steps, sim_ns| {
                bar.set_message(format!(
                    "{steps} steps, {:.2} simulated s",
                    sim_ns as f64 / 1e9
                ));
                bar.tick();
            })?;
            bar.finish_and_clear();
            let wall_s = wall.elapsed().as_secs_f64();
            let result = run.result;
            match format {
                Format::Json => println!("{}", result.to_json()),
                Format::Table => {
                    print!("{}", result.to_table());
                    if let Some(ts) = &result.timeseries {
                        print!("\n{}", ts.to_table());
                    }
                }
            }
            if let (Some(path), Some(tl)) = (&timeline, &run.timeline) {
                report_out::write_timeline(path, tl)?;
            }
            if let Some(path) = &html {
                let text = foliosim::footprint::read_toml(&scenario)?;
                let page = foliosim::report::html::run_report(
                    &scenario.display().to_string(),
                    &text,
                    &s.to_toml_string(),
                    &s.machine.cost_profile,
                    &result,
                    &report_out::versions(),
                );
                report_out::write(path, &page, "HTML report")?;
            }
            // Wall-clock figures go to stderr: they are not results and vary run to run.
            eprintln!("engine: {}", result.speed_line(wall_s));
        }
        Command::Reproduce {
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
        } => {
            let mut interval = sample_interval
                .as_deref()
                .map(report_out::parse_interval)
                .transpose()?;
            if html.is_some() && interval.is_none() {
                interval = Some(foliosim::report::spec::SampleInterval::Auto);
            }
            let which = match seed_doc.trim_start_matches('0') {
                "" => 0,
                "1" => 1,
                "2" => 2,
                "3" => 3,
                "4" => 4,
                _ => bail!(
                    "reproduce: seed `{seed_doc}` is not available; allowed: 000, 001, 002, 003, 004"
                ),
            };
            foliosim_lab::reproduce::check_scale("reproduce: --scale", scale)
                .map_err(anyhow::Error::msg)?;
            if seeds == 0 {
                bail!("reproduce: --seeds must be at least 1");
            }
            let jobs = jobs_or_all_cores("reproduce", jobs)?;
            let bar = progress::Progress::new(&format!("reproduce {which:03}"), "runs", 0);
            let mut runs = foliosim_lab::reproduce::Runs::new(jobs)
                .with_progress(|f| bar.finished(f.done, f.total, f.label, f.wall_s))
                .with_machine_profile(machine_profile);
            let wall = Instant::now();
            let mut costs = parse_costs(&costs)?;
            if let Some(path) = &costs_file {
                for (name, value) in foliosim_lab::fit::costs_file::load(path)? {
                    costs.entry(name).or_insert(value);
                }
                let mut probe =
                    seed000::scenario(foliosim::scenario::KernelVersion::V6_10, "4K", 0.05, 1);
                probe.costs = costs.clone();
                probe
                    .validate()
                    .with_context(|| format!("costs from {}", path.display()))?;
            }
            // Every seed's reproduce takes the same arguments; its report is Serialize and
            // prints its own table.
            // The seed-1 run of each configuration is kept for time series and the report.
            macro_rules! rendered {
                ($reproduce:path) => {{
                    let (report, runs) =
                        foliosim_lab::reproduce::capture::capturing(interval, || {
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
                let seed_doc = format!("{which:03}");
                let cover = foliosim_lab::reproduce::cover_figures(&seed_doc, &value);
                let page = foliosim::report::html::reproduce_report(
                    &seed_doc,
                    &value,
                    &cover,
                    &table,
                    &captured,
                    &report_out::versions(),
                );
                report_out::write(path, &page, "HTML report")?;
            }
            match format {
                Format::Json => println!("{json}"),
                // The header: which machine profile, and where its costs come from.
                Format::Table => print!("{}{table}", runs.machine_header()),
            }
            eprintln!("wall time {:.1} s", wall.elapsed().as_secs_f64());
        }
        Command::Show { scenario, kernel } => print!("{}", show(scenario.as_deref(), kernel)?),
        Command::Sweep(args) => return sweep::sweep(args),
        Command::Compare(args) => return sweep::compare(args),
        Command::Record(args) => return record::record(args),
        Command::Fit(args) => return fit::fit(args),
        Command::Soak(args) => return soak::soak(args),
        Command::Bench {
            quick,
            only,
            format,
        } => return bench(quick, only.as_deref(), format),
        Command::Validate {
            scenarios,
            live,
            tolerance,
            min_count,
            format,
            costs,
            repeat,
            enable_zswap,
        } => {
            let opts = foliosim_live::LiveOptions {
                allow_live: live,
                timeout: Some(std::time::Duration::from_secs(300)),
                enable_zswap,
            };
            return validate(
                scenarios, &opts, tolerance, min_count, format, costs, repeat,
            );
        }
        Command::Calibrate {
            live,
            output,
            format,
            quick,
        } => {
            let opts = foliosim_live::LiveOptions {
                allow_live: live,
                timeout: None,
                ..Default::default()
            };
            let report = foliosim_live::calibrate::calibrate(&opts, quick, &mut |msg| {
                eprintln!("calibrate: {msg}")
            })?;
            if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&output, report.to_toml())
                .with_context(|| format!("writing {}", output.display()))?;
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                Format::Table => print!("{}", report.to_table()),
            }
            eprintln!("wrote {}", output.display());
        }
        Command::Restore { live } => {
            if !live {
                bail!("{}", foliosim_live::Refusal::NotAllowed);
            }
            let done = foliosim_live::settings::recover()?;
            if done.is_empty() {
                println!("nothing to restore: no journal of a killed live run");
            }
            for d in done {
                println!("restored: {d}");
            }
        }
    }
    Ok(())
}

/// Exit status of a live run stopped by a signal (as a shell reports SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

fn exit_on_interrupt(e: anyhow::Error) -> anyhow::Error {
    if foliosim_live::settings::interrupted() {
        eprintln!("Error: {e:#}");
        std::process::exit(EXIT_INTERRUPTED);
    }
    e
}

fn run_live(s: &Scenario, opts: &foliosim_live::LiveOptions, format: Format) -> Result<()> {
    let result = foliosim_live::run(s, opts).map_err(exit_on_interrupt)?;
    for r in &result.recovered {
        eprintln!("restored from a killed run's journal: {r}");
    }
    match format {
        Format::Json => println!("{}", result.to_json()),
        Format::Table => print!("{}", result.to_table()),
    }
    Ok(())
}

/// Merge the `[costs]` table of a `foliosim calibrate` file into the scenario's overrides
/// (the scenario's own `[costs]` win).
fn apply_costs_file(s: &mut Scenario, path: &std::path::Path) -> Result<()> {
    let costs = foliosim_live::calibrate::load_costs(path)?;
    for (name, value) in costs {
        s.costs.entry(name).or_insert(value);
    }
    s.validate()
        .with_context(|| format!("costs from {}", path.display()))?;
    Ok(())
}

fn scenario_files(paths: Vec<std::path::PathBuf>) -> Result<Vec<std::path::PathBuf>> {
    let mut out = vec![];
    for p in paths {
        if p.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(&p)
                .with_context(|| format!("reading {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                .collect();
            files.sort();
            if files.is_empty() {
                bail!("{}: no .toml scenarios", p.display());
            }
            out.extend(files);
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

fn validate(
    paths: Vec<std::path::PathBuf>,
    opts: &foliosim_live::LiveOptions,
    tolerance: f64,
    min_count: u64,
    format: Format,
    costs: Option<std::path::PathBuf>,
    repeat: u32,
) -> Result<()> {
    if repeat == 0 {
        bail!("validate: --repeat 0; allowed: 1 or more live runs per scenario");
    }
    if !(tolerance >= 0.0 && tolerance.is_finite()) {
        bail!("validate: --tolerance {tolerance}; allowed: a finite number >= 0 (0.10 = 10%)");
    }
    let files = scenario_files(paths)?;
    // One step per live run and one per sim run of each scenario.
    let bar = ProgressBar::new(files.len() as u64 * (repeat as u64 + 1));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs {elapsed} {msg}").unwrap(),
    );
    let say = |msg: String| bar.suspend(|| eprintln!("{msg}"));
    let mut runs = vec![];
    let mut skipped = vec![];
    // The host's mTHP swap-in, probed once, when the first scenario's profile needs it.
    let mut swapin_probe: Option<foliosim_live::probe::SwapinMthpProbe> = None;
    for path in files {
        let mut s = load(&path)?;
        let enables_zswap = s.sysfs.zswap.enabled && !foliosim_live::run::zswap_enabled_on_host();
        if enables_zswap && !opts.enable_zswap {
            say(format!(
                "validate: {} skipped: it turns zswap on (pass --enable-zswap to allow)",
                path.display()
            ));
            skipped.push(path.display().to_string());
            bar.inc(repeat as u64 + 1);
            continue;
        }
        let mut live_result = {
            foliosim_live::preflight(&s, opts)?;
            let mut results = vec![];
            for i in 0..repeat {
                bar.set_message(format!("{} live {}/{repeat}", path.display(), i + 1));
                results.push(foliosim_live::run(&s, opts).map_err(exit_on_interrupt)?);
                bar.inc(1);
            }
            results
        };
        if enables_zswap {
            // The host lost mTHP swap-in for this boot: probe again when next needed.
            swapin_probe = None;
        }
        let live_throughputs = live_result
            .iter()
            .map(|r| r.workloads.iter().map(|w| w.throughput_bytes_per_s).sum())
            .collect();
        if swapin_probe.is_none() && foliosim_live::validate::sim_swaps_in_mthp(&s) {
            bar.set_message("probing the host's mTHP swap-in");
            let probe = foliosim_live::probe::swapin_mthp(opts).map_err(exit_on_interrupt)?;
            say(format!("validate: {}", probe.describe()));
            swapin_probe = Some(probe);
        }
        // The live runs restored the host, so this is the value they ran with when the
        // scenario leaves defrag unset.
        let host_defrag = foliosim_live::settings::read_knob(&format!(
            "{}/defrag",
            foliosim_live::counters::THP_DIR
        ))
        .ok()
        .and_then(|v| foliosim::scenario::ThpDefrag::from_name(&v));
        live_result[0]
            .notes
            .extend(foliosim_live::validate::configure_sim_like_host(
                &mut s,
                swapin_probe.as_ref(),
                host_defrag,
                foliosim_live::cgroup::memory_root().ok().map(|(_, v)| v),
            ));
        if let Some(c) = &costs {
            apply_costs_file(&mut s, c)?;
        }
        bar.set_message(format!("{} sim", path.display()));
        let sim = foliosim::run(&s)?;
        bar.inc(1);
        let mut comparison = foliosim_live::validate::compare(
            &path.display().to_string(),
            &s,
            &sim,
            &live_result,
            tolerance,
            min_count,
        );
        comparison.set_live_runs(live_throughputs);
        runs.push(comparison);
    }
    bar.finish_and_clear();
    let report = foliosim_live::validate::Report::new(runs, tolerance, min_count);
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Table => print!("{}", report.to_table()),
    }
    if !skipped.is_empty() {
        eprintln!(
            "validate: {} scenario(s) skipped (they turn zswap on; pass --enable-zswap): {}",
            skipped.len(),
            skipped.join(", ")
        );
    }
    if !report.pass {
        eprintln!(
            "validate: {} checked row(s) differ by more than {:.0}%",
            report.misses,
            tolerance * 100.0
        );
        std::process::exit(1);
    }
    Ok(())
}

/// `--jobs`: at least 1; unset, every core.
fn jobs_or_all_cores(command: &str, jobs: Option<usize>) -> Result<usize> {
    match jobs {
        Some(0) => bail!("{command}: --jobs 0; allowed: 1 or more (default: every core)"),
        Some(n) => Ok(n),
        None => Ok(foliosim_lab::sweep::local::default_jobs()),
    }
}
