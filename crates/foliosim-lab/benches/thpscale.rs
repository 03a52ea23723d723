//! Engine speed on thpscale at seed 001's size (4 CPUs, 4 GiB, MAPSIZE 80% of memory, the work
//! file on an SSD; reproduce/seed001.rs): criterion timing of one run per (defrag, policy) at
//! 4 threads, then every thread count once, reporting steps per second and simulated seconds
//! per wall second (skip that part with FOLIOSIM_BENCH_QUICK=1).

use criterion::{criterion_group, Criterion};
use foliosim_lab::reproduce::seed001::{scenario, DEFRAGS, POLICIES};
use foliosim_lab::reproduce::seed001_table::THREADS;
use std::time::Instant;

/// The seed's size.
const SCALE: f64 = 1.0;

fn seed_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("thpscale_seed001");
    group.sample_size(10);
    for defrag in DEFRAGS {
        for policy in POLICIES {
            let s = scenario(defrag, policy, 4, SCALE, 1);
            group.bench_function(format!("{defrag:?}-{policy:?}-4threads"), |b| {
                b.iter(|| foliosim::run(&s).unwrap())
            });
        }
    }
    group.finish();
}

fn every_thread_count() {
    if std::env::var_os("FOLIOSIM_BENCH_QUICK").is_some() {
        return;
    }
    for defrag in DEFRAGS {
        for policy in POLICIES {
            for threads in THREADS {
                let s = scenario(defrag, policy, threads, SCALE, 1);
                let wall = Instant::now();
                let r = foliosim::run(&s).unwrap();
                println!(
                    "thpscale seed size {defrag:?} {policy:?} {threads:>2} threads: {}",
                    r.speed_line(wall.elapsed().as_secs_f64())
                );
            }
        }
    }
}

criterion_group!(benches, seed_size);

fn main() {
    benches();
    every_thread_count();
    Criterion::default().configure_from_args().final_summary();
}
