//! `foliosim`: run scenarios and reproduce the seed documents' tables. No model logic here.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use foliosim::reproduce::seed000;
use foliosim::Scenario;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;

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
    },
    /// Run a seed document's experiment and print its table beside ours.
    Reproduce {
        /// Which seed: 000 (swap-out mTHP without splitting).
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
    },
    /// Print a scenario with every default filled in (the documented defaults).
    Show { scenario: std::path::PathBuf },
}

fn load(path: &std::path::Path) -> Result<Scenario> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Scenario::from_toml_str(&text).with_context(|| format!("in {}", path.display()))
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

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run {
            scenario,
            format,
            seed,
            check_invariants,
        } => {
            let mut s = load(&scenario)?;
            if let Some(seed) = seed {
                s.seed = seed;
            }
            s.check_invariants |= check_invariants;
            let bar = ProgressBar::new_spinner();
            bar.set_style(ProgressStyle::with_template("{spinner} {msg}").unwrap());
            let wall = Instant::now();
            let result = foliosim::run_with_progress(&s, &mut |steps, sim_ns| {
                bar.set_message(format!(
                    "{steps} steps, {:.2} simulated s",
                    sim_ns as f64 / 1e9
                ));
                bar.tick();
            })?;
            bar.finish_and_clear();
            let wall_s = wall.elapsed().as_secs_f64();
            match format {
                Format::Json => println!("{}", result.to_json()),
                Format::Table => print!("{}", result.to_table()),
            }
            // Wall-clock figures go to stderr: they are not results and vary run to run.
            eprintln!(
                "engine: {} steps in {wall_s:.2} s wall = {:.2} M steps/s; {:.3} simulated s per wall s",
                result.steps,
                result.steps as f64 / wall_s / 1e6,
                result.simulated_ns as f64 / 1e9 / wall_s
            );
        }
        Command::Reproduce {
            seed_doc,
            scale,
            seeds,
            format,
            check_invariants,
            costs,
        } => {
            if seed_doc.trim_start_matches('0') != "" && seed_doc != "000" && seed_doc != "0" {
                bail!("reproduce: seed `{seed_doc}` is not available; allowed: 000");
            }
            if !(scale > 0.0 && scale <= 4.0) {
                bail!("reproduce: --scale {scale} out of range; allowed: 0 < scale <= 4");
            }
            if seeds == 0 {
                bail!("reproduce: --seeds must be at least 1");
            }
            let bar = ProgressBar::new(
                (seed000::KERNELS.len() * seed000::SIZES.len()) as u64 * seeds as u64,
            );
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} runs {elapsed}").unwrap(),
            );
            let wall = Instant::now();
            let costs = parse_costs(&costs)?;
            let report = seed000::reproduce_with_costs(
                scale,
                seeds,
                check_invariants,
                &costs,
                &mut |done, _| bar.set_position(done as u64),
            )?;
            bar.finish_and_clear();
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
                Format::Table => print!("{}", report.to_table()),
            }
            eprintln!("wall time {:.1} s", wall.elapsed().as_secs_f64());
        }
        Command::Show { scenario } => print!("{}", load(&scenario)?.to_toml_string()),
    }
    Ok(())
}
