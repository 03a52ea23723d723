//! Engine speed on XSBench (scenarios/xsbench-small.toml: -s small, 2 threads, 200 000
//! lookups): criterion timing of one run, then one run reporting steps per second, lookups
//! simulated per wall second and simulated seconds per wall second.

use criterion::{criterion_group, Criterion};
use foliosim_model::Scenario;
use std::time::Instant;

const SMALL: &str = include_str!("../../../scenarios/xsbench-small.toml");

fn small(c: &mut Criterion) {
    let s = Scenario::from_toml_str(SMALL).unwrap();
    let mut group = c.benchmark_group("xsbench");
    group.sample_size(10);
    group.bench_function("small-2threads-200k", |b| {
        b.iter(|| foliosim_model::run(&s).unwrap())
    });
    group.finish();
}

fn speed_line() {
    let s = Scenario::from_toml_str(SMALL).unwrap();
    let wall = Instant::now();
    let r = foliosim_model::run(&s).unwrap();
    let wall_s = wall.elapsed().as_secs_f64();
    let lookups = r.workloads[0].xsbench.as_ref().map_or(0, |x| x.lookups);
    println!(
        "xsbench-small: {}; {:.2} M lookups per wall s",
        r.speed_line(wall_s),
        lookups as f64 / wall_s / 1e6
    );
}

criterion_group!(benches, small);

fn main() {
    benches();
    speed_line();
    Criterion::default().configure_from_args().final_summary();
}
