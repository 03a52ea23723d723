//! Engine speed on the seed-002 scenario (usemem under memory.high): zram vs zswap. Criterion
//! timing at scale 0.02, then one full-scale 64K run per configuration reporting steps per
//! second, simulated seconds per wall second and the zswap/zram wall-time ratio (the goal: a
//! zswap run at least half the speed of the zram run). FOLIOSIM_BENCH_QUICK=1 skips full scale.

use criterion::{criterion_group, Criterion};
use foliosim_lab::reproduce::seed002::{scenario, Config};
use std::time::Instant;

fn scaled(c: &mut Criterion) {
    let mut group = c.benchmark_group("seed002_scale_0.02");
    group.sample_size(10);
    for config in Config::ALL {
        let s = scenario(config, "64K", 0.02, 1);
        group.bench_function(config.name(), |b| b.iter(|| foliosim::run(&s).unwrap()));
    }
    group.finish();
}

fn full_scale() {
    if std::env::var_os("FOLIOSIM_BENCH_QUICK").is_some() {
        return;
    }
    let mut wall_s = Vec::new();
    for config in Config::ALL {
        let s = scenario(config, "64K", 1.0, 1);
        let wall = Instant::now();
        let r = foliosim::run(&s).unwrap();
        let w = wall.elapsed().as_secs_f64();
        wall_s.push(w);
        println!(
            "seed002 full scale {:<22}: {}",
            config.name(),
            r.speed_line(w)
        );
    }
    println!(
        "seed002 full scale: zswap lz4 runs at {:.2}x the zram run's speed (wall {:.1} s vs {:.1} s)",
        wall_s[0] / wall_s[1],
        wall_s[1],
        wall_s[0]
    );
}

criterion_group!(benches, scaled);

fn main() {
    benches();
    full_scale();
    Criterion::default().configure_from_args().final_summary();
}
