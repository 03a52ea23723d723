//! Swap allocator speed per policy (allocations + frees per second on a 1 GiB device in steady
//! state: 64K and order-0 requests, frees of random earlier ranges), and the seed-003
//! kernel-build scenario's simulated seconds per wall second (skip it with
//! FOLIOSIM_BENCH_QUICK=1).

use criterion::{criterion_group, Criterion, Throughput};
use foliosim::engine::cost::CostModel;
use foliosim::engine::rng::SimRng;
use foliosim::engine::Ctx;
use foliosim::mm::swap_alloc::new_allocator;
use foliosim::mm::swapfile::SwapMap;
use foliosim::scenario::{Kernel, Release, SwapAllocatorKind};
use foliosim_lab::reproduce::seed003::kbuild_scenario;
use std::time::Instant;

const OPS: u64 = 100_000;

/// OPS allocations (every fourth at order 4) with frees keeping the device ~90% full.
fn churn(kind: SwapAllocatorKind) {
    let pages = 1u64 << 18;
    let mut map = SwapMap::new(0, pages, true, true, false);
    let mut alloc = new_allocator(kind, &map, 8, 0);
    let cost = CostModel::profile("vm-6.18-2cpu").unwrap();
    let mut rng = SimRng::stream(1, "bench");
    let mut live: Vec<(u32, u32)> = Vec::new();
    let mut out = Vec::new();
    for i in 0..OPS {
        let order = if alloc.swapout_whole(4) && i % 4 == 0 {
            4
        } else {
            0
        };
        let mut ctx = Ctx::new((i % 8) as usize, i * 1000);
        alloc.alloc(&mut map, &mut ctx, &cost, order, 1, &mut out);
        live.extend(out.drain(..).map(|e| (e.offset(), 1u32 << order)));
        while map.free_pages() < (pages / 10) as u32 {
            let (offset, nr) = live.swap_remove(rng.below(live.len() as u64) as usize);
            for s in offset..offset + nr {
                map.swap_map[s as usize] = 0;
            }
            map.inuse_pages -= nr;
            alloc.on_free(&mut map, &mut ctx, &cost, offset, nr);
        }
    }
}

fn allocators(c: &mut Criterion) {
    let mut group = c.benchmark_group("swap_alloc_churn");
    group.sample_size(10);
    group.throughput(Throughput::Elements(OPS));
    for kind in [
        SwapAllocatorKind::Legacy,
        SwapAllocatorKind::PercpuOrder,
        SwapAllocatorKind::ClusterListsC12,
        SwapAllocatorKind::ClusterListsC18,
    ] {
        group.bench_function(format!("{kind:?}"), |b| b.iter(|| churn(kind)));
    }
    group.finish();
}

fn kbuild_speed() {
    if std::env::var_os("FOLIOSIM_BENCH_QUICK").is_some() {
        return;
    }
    for version in [Release::V6_12, Release::V6_18] {
        let kernel = Kernel {
            version,
            ..Kernel::default()
        };
        let s = kbuild_scenario(kernel, "4K", 1.0, 1);
        let wall = Instant::now();
        let r = foliosim::run(&s).unwrap();
        println!(
            "seed003 kbuild make -j96 1G, kernel {}: {}",
            version.name(),
            r.speed_line(wall.elapsed().as_secs_f64())
        );
    }
}

criterion_group!(benches, allocators);

fn main() {
    benches();
    kbuild_speed();
    Criterion::default().configure_from_args().final_summary();
}
