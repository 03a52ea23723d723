//! Engine speed on the seed-000 scenario: criterion timing at scale 0.05, then one full-scale
//! run per folio size reporting steps per second and simulated seconds per wall second
//! (skip the full-scale part with FOLIOSIM_BENCH_QUICK=1).

use criterion::{criterion_group, Criterion};
use foliosim::scenario::Release;
use foliosim_lab::reproduce::seed000::scenario;
use std::time::Instant;

fn scaled(c: &mut Criterion) {
    let mut group = c.benchmark_group("seed000_scale_0.05");
    group.sample_size(10);
    for size in ["4K", "64K", "2M"] {
        let s = scenario(Release::V6_10, size, 0.05, 1);
        group.bench_function(size, |b| b.iter(|| foliosim::run(&s).unwrap()));
    }
    group.finish();
}

fn full_scale() {
    if std::env::var_os("FOLIOSIM_BENCH_QUICK").is_some() {
        return;
    }
    for kernel in [Release::V6_9, Release::V6_10] {
        for size in ["4K", "64K", "2M"] {
            let s = scenario(kernel, size, 1.0, 1);
            let wall = Instant::now();
            let r = foliosim::run(&s).unwrap();
            println!(
                "seed000 full scale kernel {} {size:>3}: {}",
                kernel.name(),
                r.speed_line(wall.elapsed().as_secs_f64())
            );
        }
    }
}

criterion_group!(benches, scaled);

fn main() {
    benches();
    full_scale();
    Criterion::default().configure_from_args().final_summary();
}
