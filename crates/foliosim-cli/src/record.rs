//! `foliosim record -- CMD`: argument handling, progress and output. The recorder is
//! foliosim_live::record, the format foliosim::workload::trace.

use crate::Format;
use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(Args)]
pub struct RecordArgs {
    /// The trace to write (gzipped when it ends in .gz). Default: <program>.trace.gz.
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run the program in a memory cgroup of this size (e.g. 256M), with a zram swap device
    /// of ours if the host has none: pages it comes back to were reclaimed and fault again,
    /// so re-touches show in the trace. Created for the recording and removed after.
    #[arg(long, value_name = "SIZE")]
    memcg_limit: Option<String>,
    /// Kill the program after this many seconds (the trace is then not written).
    #[arg(long, value_name = "SECONDS", value_parser = crate::seconds)]
    timeout: Option<f64>,
    /// Ring buffer per CPU in MiB (a power of two); raise it if records were lost. Default:
    /// 32, less with more than 8 CPUs (256 MiB in all, at least 4 per CPU).
    #[arg(long, value_name = "MIB")]
    buffer_mib: Option<usize>,
    /// Summary format on stdout (the program's own stdout goes to stderr with json).
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn record(args: RecordArgs) -> Result<()> {
    let memcg_limit = args
        .memcg_limit
        .as_deref()
        .map(|s| {
            foliosim::scenario::Bytes::parse(s)
                .map_err(|e| anyhow::anyhow!("--memcg-limit `{s}`: {e}"))
                .and_then(|b| {
                    if b.0 < 1 << 20 {
                        bail!("--memcg-limit `{s}`: allowed: 1M or more")
                    }
                    Ok(b.0)
                })
        })
        .transpose()?;
    if let Some(b) = args
        .buffer_mib
        .filter(|b| !b.is_power_of_two() || *b > 1024)
    {
        bail!("--buffer-mib {b}: allowed: a power of two up to 1024");
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let name = std::path::Path::new(&args.command[0])
            .file_name()
            .map_or("trace".into(), |n| n.to_string_lossy().into_owned());
        PathBuf::from(format!("{name}.trace.gz"))
    });
    let opts = foliosim_live::record::RecordOptions {
        allow_live: true,
        memcg_limit,
        buffer_mib: args.buffer_mib,
        timeout: args.timeout.map(std::time::Duration::from_secs_f64),
        stdout_to_stderr: args.format == Format::Json,
    };
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} recording {elapsed} {msg}").unwrap());
    bar.set_message(format!("`{}`", args.command.join(" ")));
    let result = foliosim_live::record::record(&args.command, &opts, &mut |p| {
        bar.set_message(format!(
            "`{}`: ~{} samples ({:.1} MiB)",
            args.command[0],
            p.samples,
            p.bytes as f64 / (1 << 20) as f64
        ));
        bar.tick();
    });
    bar.finish_and_clear();
    let rec = result.map_err(crate::exit_on_interrupt)?;
    let text = rec.trace.to_text();
    let bytes = if out.extension().is_some_and(|e| e == "gz") {
        foliosim::workload::trace::gzip::compress(text.as_bytes())
    } else {
        text.into_bytes()
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    match args.format {
        Format::Json => {
            let mut v = serde_json::to_value(&rec)?;
            v["trace"] = out.display().to_string().into();
            v["trace_bytes"] = bytes.len().into();
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Format::Table => print_summary(&rec, &args.command, &out, bytes.len()),
    }
    if rec.exit_code.is_some_and(|c| c != 0) || rec.signal.is_some() {
        eprintln!("record: the program did not exit with status 0; its trace was written anyway");
    }
    Ok(())
}

/// The recording's summary as a table: exit, wall time, what was seen and kept, the trace.
fn print_summary(
    rec: &foliosim_live::record::Recording,
    command: &[String],
    out: &std::path::Path,
    trace_bytes: usize,
) {
    let s = &rec.stats;
    println!("recorded `{}`", command.join(" "));
    println!(
        "  exit              {}",
        match (rec.exit_code, rec.signal) {
            (Some(c), _) => format!("status {c}"),
            (_, Some(sig)) => format!("signal {sig}"),
            _ => "unknown".into(),
        }
    );
    println!("  wall              {:.3} s", rec.wall_ns as f64 / 1e9);
    println!(
        "  tasks             {} in {} process images",
        s.tasks, s.processes
    );
    println!(
        "  faults            {} ({} kept, {} loads outside any mapping dropped)",
        s.faults, s.faults_kept, s.faults_unknown_loads
    );
    println!("  syscalls          {}", s.syscalls);
    println!(
        "  vmas              {} mapped, {} touched and kept ({} made up for the stack/bss)",
        s.vmas_mapped, s.vmas_kept, s.vmas_synthetic
    );
    println!("  lost records      {}", rec.lost_records);
    println!(
        "  trace             {} ({} events, {:.1} KiB)",
        out.display(),
        rec.events,
        trace_bytes as f64 / 1024.0
    );
    for n in &rec.notes {
        println!("  note: {n}");
    }
}
