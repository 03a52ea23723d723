//! `foliosim fit`: fit named costs to a published table and predict the rows left out.

use anyhow::{bail, Context, Result};
use foliosim_lab::fit::{self, table::Experiment, FitOptions, Free, Split, Table};

#[derive(clap::Args)]
pub struct FitArgs {
    /// The table (TOML, docs/fit.md), e.g. tables/seed000.toml.
    table: std::path::PathBuf,
    /// Which rows to fit: default (the table's [split] fit), baseline-to-proposal (fit the
    /// baseline kernel's rows, predict the proposal's) or proposal-to-baseline.
    #[arg(long, default_value = "default")]
    split: String,
    /// Fit these row ids instead of a named split (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "ID,ID")]
    fit_rows: Vec<String>,
    /// Free this cost instead of the table's [[free]] list (repeatable):
    /// NAME=LOW:HIGH or NAME=LOW:HIGH:PRIOR:FACTOR (log-normal prior, 1 sd = ×/÷ FACTOR).
    #[arg(long = "free", value_name = "NAME=LOW:HIGH[:PRIOR:FACTOR]")]
    free: Vec<String>,
    /// Also leave each row out in turn, fit on the others and predict it.
    #[arg(long)]
    loo: bool,
    /// Override the table's experiment scale (builtin experiments).
    #[arg(long)]
    scale: Option<f64>,
    /// Override the table's seeds per row.
    #[arg(long)]
    seeds: Option<u32>,
    /// Scenario runs in parallel (default: all local cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Nelder-Mead iteration limit.
    #[arg(long, default_value_t = 80)]
    max_iters: u64,
    /// Write the fitted costs file (with provenance of every number) here.
    #[arg(long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    format: crate::Format,
}

/// `NAME=LOW:HIGH[:PRIOR:FACTOR]`.
fn parse_free(text: &str) -> Result<Free> {
    let Some((name, rest)) = text.split_once('=') else {
        bail!("--free `{text}`: expected NAME=LOW:HIGH or NAME=LOW:HIGH:PRIOR:FACTOR")
    };
    let nums: Vec<f64> = rest
        .split(':')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .with_context(|| format!("--free `{text}`: `{x}` is not a number of ns"))
        })
        .collect::<Result<_>>()?;
    let (low, high, prior, factor) = match nums[..] {
        [l, h] => (l, h, None, None),
        [l, h, p, k] => (l, h, Some(p), Some(k)),
        _ => bail!("--free `{text}`: expected NAME=LOW:HIGH or NAME=LOW:HIGH:PRIOR:FACTOR"),
    };
    let f = Free {
        cost: name.trim().to_string(),
        low,
        high,
        prior,
        prior_factor: factor,
        source: "set on the command line (--free)".into(),
    };
    fit::table::check_free("--free", &f)?;
    Ok(f)
}

pub fn fit(args: FitArgs) -> Result<()> {
    crate::check_output_file("--output", args.output.as_deref())?;
    let mut table = Table::load(&args.table)?;
    if let Some(scale) = args.scale {
        match &mut table.experiment {
            Experiment::Seed000 { scale: s } if scale > 0.0 && scale <= 4.0 => *s = scale,
            Experiment::Seed000 { .. } => {
                bail!("fit: --scale {scale} out of range; allowed: 0 < scale <= 4")
            }
            Experiment::Base { .. } => {
                bail!("fit: --scale only applies to builtin experiments (this table has a base)")
            }
        }
    }
    if let Some(seeds) = args.seeds {
        let max = fit::table::MAX_SEEDS;
        if !(1..=max).contains(&seeds) {
            bail!("fit: --seeds {seeds}; allowed: 1 ..= {max}");
        }
        table.seeds = seeds;
    }
    if !args.free.is_empty() {
        table.free = args
            .free
            .iter()
            .map(|f| parse_free(f))
            .collect::<Result<_>>()?;
    }
    let split = if args.fit_rows.is_empty() {
        Split::parse(&args.split)?
    } else {
        Split::Rows(args.fit_rows.clone())
    };
    let opts = FitOptions {
        split,
        jobs: crate::jobs_or_all_cores("fit", args.jobs)?,
        max_iters: args.max_iters,
        loo: args.loo,
        ..FitOptions::default()
    };
    let wall = std::time::Instant::now();
    let bar = crate::progress::Progress::spinner("fit");
    let report = fit::fit_with_progress(
        &table,
        &opts,
        Box::new(|b| {
            bar.note(&format!(
                "batch {}: {} cost points, {} runs ({:.1} s); {} runs so far, {:.0} s",
                b.batch,
                b.points,
                b.runs,
                b.wall_s,
                b.runs_total,
                wall.elapsed().as_secs_f64()
            ))
        }),
    );
    bar.clear();
    let report = report?;
    if let Some(path) = &args.output {
        let cited = table
            .cited
            .iter()
            .map(|c| (c.cost.clone(), c.source.clone()))
            .collect();
        let text = fit::costs_file::render(&report.fit, &cited)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    match args.format {
        crate::Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        crate::Format::Table => print!("{}", report.to_table()),
    }
    eprintln!("wall time {:.1} s", wall.elapsed().as_secs_f64());
    Ok(())
}
