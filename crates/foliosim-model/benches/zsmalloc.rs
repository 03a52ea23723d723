//! zsmalloc pool throughput: zs_malloc + zs_free of zswap-like object sizes, steady state with
//! a large live set (objects per second = elements per second).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use foliosim_model::mm::zsmalloc::{CountingPages, Handle, ZsConfig, ZsPool};

/// Deterministic object lengths spread like compressed 4 KiB pages (300..3900 bytes).
fn lens(n: usize) -> Vec<u32> {
    let mut x = 0x9e37_79b9u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            300 + x % 3600
        })
        .collect()
}

fn alloc_free(c: &mut Criterion) {
    const LIVE: usize = 100_000;
    const OPS: usize = 100_000;
    let mut group = c.benchmark_group("zsmalloc");
    group.throughput(Throughput::Elements(OPS as u64));
    let sizes = lens(LIVE + OPS);
    group.bench_function("malloc_free_100k_live", |b| {
        b.iter_batched(
            || {
                let mut pool = ZsPool::new(ZsConfig::default()).unwrap();
                let mut pages = CountingPages::default();
                let live: Vec<Handle> = sizes[..LIVE]
                    .iter()
                    .map(|&l| pool.zs_malloc(l, &mut pages).unwrap())
                    .collect();
                (pool, pages, live)
            },
            |(mut pool, mut pages, mut live)| {
                // Replace a pseudo-random live object with a new one: free + malloc per op.
                for (i, &len) in sizes[LIVE..].iter().enumerate() {
                    let k = (i * 7919) % LIVE;
                    pool.zs_free(live[k], &mut pages).unwrap();
                    live[k] = pool.zs_malloc(len, &mut pages).unwrap();
                }
                pool.zs_get_total_pages()
            },
            BatchSize::LargeInput,
        )
    });
    // Elements here: the objects compaction has to consider (the 50k left live).
    group.throughput(Throughput::Elements((LIVE / 2) as u64));
    group.bench_function("compact_after_half_freed_100k", |b| {
        b.iter_batched(
            || {
                let mut pool = ZsPool::new(ZsConfig::default()).unwrap();
                let mut pages = CountingPages::default();
                let live: Vec<Handle> = sizes[..LIVE]
                    .iter()
                    .map(|&l| pool.zs_malloc(l, &mut pages).unwrap())
                    .collect();
                for h in live.iter().step_by(2) {
                    pool.zs_free(*h, &mut pages).unwrap();
                }
                (pool, pages)
            },
            |(mut pool, mut pages)| pool.zs_compact(&mut pages),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, alloc_free);
criterion_main!(benches);
