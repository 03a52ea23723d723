//! `foliosim sweep` and `foliosim compare`: argument handling, progress and output. The
//! sweep itself (axes, plan, runs, results table, compare) is foliosim_lab::sweep.

use crate::Format;
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use foliosim_lab::sweep::{self, axes, compare, Plan};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Backend {
    /// Threads on this machine's cores.
    Local,
    /// A Ray cluster, through the Python package (python/foliosim/ray_backend.py; needs
    /// `pip install ray` and the foliosim package on every node).
    Ray,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The base scenario (TOML); every run is it with one value of each axis.
    scenario: PathBuf,
    /// An axis: KEY=V1,V2,… with KEY a scenario key in TOML dotted form
    /// (`kernel.version=6.9,6.10`, `sysfs.hugepages."64K"=always,never`, `workload.0.nproc=4,8`).
    /// Repeatable: the sweep runs the cartesian product.
    #[arg(long = "set", value_name = "KEY=V1,V2")]
    set: Vec<String>,
    /// Axes from a TOML file (`[[axis]]` tables; see the README), before the --set axes.
    #[arg(long, value_name = "FILE")]
    axes: Option<PathBuf>,
    /// Runs per configuration: seeds 1..=N (default: the axes file's `seeds`, else 5).
    #[arg(long)]
    seeds: Option<u32>,
    /// Output directory: plan.json, runs/<id>.json (one per finished run), sweep.parquet.
    /// Rerunning with the same directory skips the runs already finished; a sweep that
    /// extends the stored one (more seeds or values) resumes it, any other is refused
    /// unless --force.
    #[arg(long, default_value = "sweep-results")]
    out: PathBuf,
    /// Replace a different sweep stored under --out (its plan and table; finished runs
    /// stay and are reused where they match).
    #[arg(long)]
    force: bool,
    /// Also write sweep.csv.
    #[arg(long)]
    csv: bool,
    /// Runs at a time on the local backend (default: every core).
    #[arg(long)]
    jobs: Option<usize>,
    #[arg(long, value_enum, default_value = "local")]
    backend: Backend,
    /// Ray: the cluster to join (default: RAY_ADDRESS, else a local Ray started for the sweep).
    #[arg(long, value_name = "ADDRESS")]
    ray_address: Option<String>,
    /// Ray: the Python interpreter that has foliosim and ray (default: $FOLIOSIM_PYTHON or
    /// python3).
    #[arg(long)]
    python: Option<String>,
    /// Check the model's invariants in every run (slow).
    #[arg(long)]
    check_invariants: bool,
    /// Print the runs the sweep would make and exit.
    #[arg(long)]
    dry_run: bool,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

#[derive(Args)]
pub struct CompareArgs {
    /// A sweep's output directory, or its sweep.parquet.
    results: PathBuf,
    /// A metric or counter column to compare (repeatable; default: every
    /// `*.throughput_bytes_per_s` and `simulated_ns`).
    #[arg(long = "metric", value_name = "NAME")]
    metrics: Vec<String>,
    /// An axis whose values make the columns (repeatable; default: every axis). The other
    /// axes split the rows.
    #[arg(long = "columns", value_name = "AXIS")]
    columns: Vec<String>,
    /// The column the others are compared with (default: the first).
    #[arg(long)]
    baseline: Option<String>,
    /// Keep only the runs with AXIS=VALUE (repeatable).
    #[arg(long = "where", value_name = "AXIS=VALUE")]
    filters: Vec<String>,
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

pub fn sweep(args: SweepArgs) -> Result<()> {
    let text = foliosim::footprint::read_toml(&args.scenario)
        .with_context(|| format!("reading {}", args.scenario.display()))?;
    let mut base = foliosim::Scenario::from_toml_str(&text)
        .with_context(|| format!("in {}", args.scenario.display()))?;
    base.check_invariants |= args.check_invariants;
    let mut all_axes = vec![];
    let mut file_seeds = None;
    if let Some(path) = &args.axes {
        let text = foliosim::footprint::read_toml(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let file =
            axes::AxesFile::from_toml_str(&text).with_context(|| path.display().to_string())?;
        file_seeds = file.seeds;
        all_axes.extend(file.axes().with_context(|| path.display().to_string())?);
    }
    for s in &args.set {
        all_axes.push(axes::parse_set_on(s, &base)?);
    }
    let seeds = args.seeds.or(file_seeds).unwrap_or(5);
    if seeds == 0 {
        bail!("sweep: --seeds 0; allowed: 1 or more");
    }
    // Bounded before the seeds or the runs are expanded.
    foliosim_lab::sweep::plan::check_size(&all_axes, seeds as u64)?;
    // Every run is expanded and checked before any starts.
    let plan = Plan::new(&base, &all_axes, &sweep::seeds(seeds))?;
    if args.dry_run {
        if args.format == Format::Json {
            println!("{}", serde_json::to_string_pretty(&plan)?);
        } else {
            for r in &plan.runs {
                println!("{}  {}", r.id, foliosim_lab::sweep::record::describe(r));
            }
        }
        return Ok(());
    }
    let out = &args.out;
    if out.exists() && !out.is_dir() {
        bail!(
            "sweep: --out {}: not a directory; allowed: a directory (made if missing)",
            out.display()
        );
    }
    if let sweep::Existing::Replaced(what) = plan.check_replaces(out, args.force)? {
        eprintln!(
            "sweep: replacing the sweep under {} (--force): {}",
            out.display(),
            what.join("; ")
        );
    }
    plan.store(out)?;
    let pending = plan.pending(out);
    let reused = plan.runs.len() - pending.len();
    let bar = crate::progress::Progress::new("sweep", "runs", plan.runs.len() as u64);
    bar.skip(reused as u64);
    let wall = Instant::now();
    run_pending(&args, &plan, &pending, &bar, reused)?;
    bar.clear();
    let (_, outcome) = sweep::write_results(&plan, out, args.csv, pending.len())?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&outcome)?),
        Format::Table => {
            println!(
                "sweep: {} runs ({} axes x {} seeds): {} ran, {} already done",
                outcome.runs,
                plan.axes.len(),
                seeds,
                outcome.ran,
                outcome.reused
            );
            println!(
                "wrote {} ({} columns)",
                outcome.parquet.display(),
                outcome.columns
            );
            if let Some(csv) = &outcome.csv {
                println!("wrote {}", csv.display());
            }
            println!("compare: foliosim compare {}", out.display());
        }
    }
    eprintln!("wall time {:.1} s", wall.elapsed().as_secs_f64());
    Ok(())
}

/// The runs not done yet, on the chosen backend (`reused` of the plan's runs are done).
fn run_pending(
    args: &SweepArgs,
    plan: &Plan,
    pending: &[sweep::RunSpec],
    bar: &crate::progress::Progress,
    reused: usize,
) -> Result<()> {
    let out = &args.out;
    match args.backend {
        Backend::Local => {
            let jobs = crate::jobs_or_all_cores("sweep", args.jobs)?;
            let mut done = reused;
            let total = plan.runs.len();
            sweep::local::run_pending(out, pending, jobs, &mut |run, wall_s| {
                done += 1;
                bar.finished(done, total, &sweep::record::describe(run), wall_s);
            })
            .with_context(|| resume_hint(out))?;
        }
        Backend::Ray => {
            if args.jobs.is_some() {
                bail!(
                    "sweep: --jobs is for --backend local; Ray places runs on the cluster's CPUs"
                );
            }
            if !pending.is_empty() {
                run_ray(args, plan, bar)?;
            }
        }
    }
    Ok(())
}

fn resume_hint(out: &Path) -> String {
    format!(
        "finished runs are kept under {}; run the same command again to resume",
        out.join("runs").display()
    )
}

/// Runs the pending runs on Ray through `python -m foliosim.ray_backend`, which stores each
/// record as it arrives; the bar follows the records appearing under `out`.
fn run_ray(args: &SweepArgs, plan: &Plan, bar: &crate::progress::Progress) -> Result<()> {
    let python = args
        .python
        .clone()
        .or_else(|| std::env::var("FOLIOSIM_PYTHON").ok())
        .unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "foliosim.ray_backend", "--out"])
        .arg(&args.out);
    if let Some(a) = &args.ray_address {
        cmd.args(["--address", a]);
    }
    // Ray's and Python's chatter goes to stderr: stdout is ours (--format json).
    cmd.stdout(std::io::stderr());
    let mut child = cmd.spawn().with_context(|| {
        format!("--backend ray: starting `{python} -m foliosim.ray_backend` (install the Python package: ./setup.sh)")
    })?;
    let mut last = usize::MAX;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let done = plan
            .runs
            .iter()
            .filter(|r| foliosim_lab::sweep::record::is_stored(&args.out, r))
            .count();
        if done != last {
            bar.count(done, plan.runs.len());
            last = done;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    if !status.success() {
        bail!(
            "--backend ray: `{python} -m foliosim.ray_backend` failed ({status}; it needs `pip install ray` \
             and the foliosim package on every node); {}",
            resume_hint(&args.out)
        );
    }
    Ok(())
}

pub fn compare(args: CompareArgs) -> Result<()> {
    let path = if args.results.is_dir() {
        args.results.join("sweep.parquet")
    } else {
        args.results.clone()
    };
    let table = sweep::parquet_io::read(&path)?;
    let filters = args
        .filters
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .with_context(|| format!("--where `{f}`: expected AXIS=VALUE"))
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = compare::CompareOptions {
        metrics: args.metrics,
        columns: (!args.columns.is_empty()).then_some(args.columns),
        baseline: args.baseline,
        filters,
    };
    let c = compare::compare(&table, &opts)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&c)?),
        Format::Table => print!("{}", c.rendered),
    }
    Ok(())
}
