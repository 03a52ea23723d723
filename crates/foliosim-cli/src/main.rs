//! `foliosim`: run scenarios and reproduce the seed documents' tables. No model logic here.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use foliosim::Scenario;
use foliosim_lab::reproduce::seed000;
use indicatif::{ProgressBar, ProgressStyle};

mod fit;
mod progress;
mod record;
mod report_out;
mod reproduce;
mod run;
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
    Run(run::RunArgs),
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
    /// Measure the cost model on the live kernel and write a machine profile / costs file the
    /// sim can load (`run --machine-profile FILE`, or `--costs FILE` for the costs alone).
    Calibrate {
        /// Required: allow the live measurements (root only, unless --hw-only).
        #[arg(long)]
        live: bool,
        /// Where to write the profile TOML.
        #[arg(long, default_value = "costs/calibrated.toml")]
        output: std::path::PathBuf,
        /// Only the CPU-to-CPU costs (line transfers, lock handoffs, IPIs): pinned threads,
        /// no host setting changed, no root needed.
        #[arg(long)]
        hw_only: bool,
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
        /// Smaller regions, fewer repetitions (seconds instead of a minute; noisier).
        #[arg(long)]
        quick: bool,
    },
    /// Write this host's memory state (/proc/buddyinfo, pagetypeinfo, meminfo, zoneinfo) to
    /// stdout as a snapshot for `[machine.start] snapshot`. Reads /proc only (root: the
    /// kernel lets only root read /proc/pagetypeinfo).
    Snapshot {
        /// Required: read this host.
        #[arg(long)]
        live: bool,
    },
    /// Undo the settings of a live run that was killed (normally done by the next live start).
    Restore {
        /// Required: allow touching the host (root only).
        #[arg(long)]
        live: bool,
    },
    /// Run a seed document's experiment and print its table beside ours.
    Reproduce(reproduce::ReproduceArgs),
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
    let mut s = Scenario::from_toml_str(&text).with_context(|| format!("in {}", path.display()))?;
    // A host snapshot start: its file, relative to the scenario's directory.
    if let Some(start) = s.machine.start.as_mut() {
        if let Some(file) = &start.snapshot {
            let at = path
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(file);
            let text = std::fs::read_to_string(&at).with_context(|| {
                format!(
                    "machine.start.snapshot: reading {} (from {})",
                    at.display(),
                    path.display()
                )
            })?;
            start.snapshot_text = Some(text);
        }
    }
    Ok(s)
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
    let mut probe = seed000::scenario(foliosim::scenario::Release::V6_10, "4K", 0.05, 1);
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
    // What was said, unindented: a multi-line cause is indented in `text`, so a later cause
    // repeating it would not be found there.
    let mut said = text.clone();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        let cause = cause.trim();
        if said.contains(cause) {
            continue;
        }
        said.push_str(cause);
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
        Command::Run(args) => return run::run(args),
        Command::Reproduce(args) => return reproduce::reproduce(args),
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
            hw_only,
            format,
            quick,
        } => {
            let opts = foliosim_live::LiveOptions {
                allow_live: live,
                timeout: None,
                ..Default::default()
            };
            let report = foliosim_live::calibrate::calibrate(&opts, quick, hw_only, &mut |msg| {
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
        Command::Snapshot { live } => {
            if !live {
                bail!("snapshot: pass --live to read this host's /proc");
            }
            print!("{}", foliosim_live::snapshot::capture()?);
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
        eprint!("{}", error_text(&e));
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

/// `repeat` live runs of scenario `s` (from `path`), after the preflight checks.
fn live_runs(
    s: &Scenario,
    opts: &foliosim_live::LiveOptions,
    repeat: u32,
    path: &std::path::Path,
    bar: &ProgressBar,
) -> Result<Vec<foliosim_live::LiveResult>> {
    foliosim_live::preflight(s, opts)?;
    let mut results = vec![];
    for i in 0..repeat {
        bar.set_message(format!("{} live {}/{repeat}", path.display(), i + 1));
        results.push(foliosim_live::run(s, opts).map_err(exit_on_interrupt)?);
        bar.inc(1);
    }
    Ok(results)
}

/// The sim set up as the host ran the live runs (mTHP swap-in, defrag, cgroup version); the
/// notes say what was changed.
fn configure_sim_like_host(
    s: &mut Scenario,
    swapin_probe: Option<&foliosim_live::probe::SwapinMthpProbe>,
) -> Vec<String> {
    // The live runs restored the host, so this is the value they ran with when the
    // scenario leaves defrag unset.
    let host_defrag =
        foliosim_live::settings::read_knob(&format!("{}/defrag", foliosim_live::counters::THP_DIR))
            .ok()
            .and_then(|v| foliosim::scenario::ThpDefrag::from_name(&v));
    foliosim_live::validate::configure_sim_like_host(
        s,
        swapin_probe,
        host_defrag,
        foliosim_live::cgroup::memory_root().ok().map(|(_, v)| v),
    )
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
        let mut live_result = live_runs(&s, opts, repeat, &path, &bar)?;
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
        let notes = configure_sim_like_host(&mut s, swapin_probe.as_ref());
        live_result[0].notes.extend(notes);
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

/// An output file named on the command line, checked before the work it would hold: an
/// existing directory or device there is refused now, not after a long run.
fn check_output_file(flag: &str, path: Option<&std::path::Path>) -> Result<()> {
    match path {
        Some(p) if p.exists() && !p.is_file() => bail!(
            "{flag} {}: not a regular file (a directory or device); allowed: a file to write",
            p.display()
        ),
        _ => Ok(()),
    }
}

/// The longest time a duration flag takes (about 31 years): a `Duration` of more panics.
const MAX_FLAG_SECONDS: f64 = 1e9;

/// A clap value parser for a time in seconds: a finite number in (0, MAX_FLAG_SECONDS].
fn seconds(text: &str) -> std::result::Result<f64, String> {
    let s: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if s > 0.0 && s <= MAX_FLAG_SECONDS {
        Ok(s)
    } else {
        Err(format!(
            "allowed: a number of seconds > 0, at most {MAX_FLAG_SECONDS:e}"
        ))
    }
}

/// [`seconds`] for a flag in minutes.
fn minutes(text: &str) -> std::result::Result<f64, String> {
    seconds(text)
        .ok()
        .filter(|m| m * 60.0 <= MAX_FLAG_SECONDS)
        .ok_or_else(|| {
            format!(
                "allowed: a number of minutes > 0, at most {:e}",
                MAX_FLAG_SECONDS / 60.0
            )
        })
}
