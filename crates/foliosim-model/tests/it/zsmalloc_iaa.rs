//! The zsmalloc pool and the IAA offload model through their public APIs.

use foliosim_model::engine::cost::CostModel;
use foliosim_model::hw::iaa::{Iaa, IaaConfig, IaaCosts, IaaMode, IaaTiming};
use foliosim_model::mm::zsmalloc::{CountingPages, ZsConfig, ZsError, ZsPool};

fn costs() -> IaaCosts {
    IaaCosts::from_cost(&CostModel::profile("vm-6.18-2cpu").unwrap())
}

fn iaa(verify: bool) -> Iaa {
    Iaa::new(
        IaaConfig {
            verify_compress: verify,
            ..IaaConfig::default()
        },
        costs(),
    )
    .unwrap()
}

#[test]
fn iaa_one_sync_job_latency() {
    let mut d = iaa(false);
    let c = costs();
    let t = d.submit_compress(1000, 0, 1, 4096, IaaMode::Sync).unwrap();
    // submit + (fixed + 4 KiB at the per-engine rate) + poll, nothing queued.
    let want = c.submit_ns + c.compress_fixed_ns + 4 * c.compress_ns_per_kib + c.poll_ns;
    assert_eq!(t.cpu_busy_ns, want);
    assert_eq!(t.done_at_ns, 1000 + want);
    assert_eq!(t.queue_wait_ns, 0);
    let dec = d
        .submit_decompress(t.done_at_ns, 0, 1, 4096, IaaMode::Sync)
        .unwrap();
    assert_eq!(
        dec.cpu_busy_ns,
        c.submit_ns + c.decompress_fixed_ns + 4 * c.decompress_ns_per_kib + c.poll_ns
    );
    assert!(dec.cpu_busy_ns < t.cpu_busy_ns);
    let s = d.device_stats(0).unwrap();
    assert_eq!((s.comp_calls, s.decomp_calls, s.comp_bytes), (1, 1, 4096));
}

#[test]
fn iaa_cpus_sharing_a_device_queue() {
    // One engine per device so contention shows with few CPUs: CPUs 0..13 share device 0.
    let mut d = Iaa::new(
        IaaConfig {
            engines_per_device: 1,
            verify_compress: false,
            ..IaaConfig::default()
        },
        costs(),
    )
    .unwrap();
    let alone = {
        let mut e = Iaa::new(d.config().clone(), costs()).unwrap();
        e.submit_compress(0, 0, 1, 4096, IaaMode::Sync).unwrap()
    };
    let mut last = IaaTiming::default();
    for cpu in 0..4 {
        last = d.submit_compress(0, cpu, 1, 4096, IaaMode::Sync).unwrap();
        assert_eq!(last.device, 0);
    }
    let service = costs().compress_fixed_ns + 4 * costs().compress_ns_per_kib;
    // The fourth waits for three jobs ahead of it.
    assert_eq!(last.queue_wait_ns, 3 * service);
    assert_eq!(last.cpu_busy_ns, alone.cpu_busy_ns + 3 * service);
    // A CPU on another device is not delayed.
    let other = d.submit_compress(0, 14, 1, 4096, IaaMode::Sync).unwrap();
    assert_eq!((other.device, other.cpu_busy_ns), (1, alone.cpu_busy_ns));
    assert_eq!(d.total_stats().queue_wait_ns, 6 * service);
}

#[test]
fn iaa_wq_depth_limits_outstanding_jobs() {
    let mut d = Iaa::new(
        IaaConfig {
            engines_per_device: 1,
            wq_size: 2,
            verify_compress: false,
            ..IaaConfig::default()
        },
        costs(),
    )
    .unwrap();
    // A batch of 8 into a 2-entry WQ: submissions stall until entries complete.
    let t = d
        .submit_compress(0, 0, 8, 4096, IaaMode::Batch { batch_size: 8 })
        .unwrap();
    let service = costs().compress_fixed_ns + 4 * costs().compress_ns_per_kib;
    assert!(t.cpu_busy_ns >= 8 * service);
}

#[test]
fn iaa_batching_cuts_cpu_wait_for_a_16_page_folio() {
    let mut seq = iaa(false);
    let mut bat = iaa(false);
    let s = seq.submit_compress(0, 0, 16, 4096, IaaMode::Sync).unwrap();
    let b = bat
        .submit_compress(0, 0, 16, 4096, IaaMode::Batch { batch_size: 8 })
        .unwrap();
    // 16 sequential ~4.2 µs jobs vs two sub-batches of 8 overlapped on 8 engines.
    assert!(b.cpu_busy_ns * 5 < s.cpu_busy_ns * 2, "{b:?} vs {s:?}");
    // Same device work either way.
    assert_eq!(seq.total_stats().busy_ns, bat.total_stats().busy_ns);
    assert!(bat
        .submit_compress(0, 0, 16, 4096, IaaMode::Batch { batch_size: 9 })
        .is_err());
}

#[test]
fn iaa_verification_doubles_device_jobs() {
    let mut plain = iaa(false);
    let mut verified = iaa(true);
    let p = plain
        .submit_compress(0, 0, 16, 4096, IaaMode::Sync)
        .unwrap();
    let v = verified
        .submit_compress(0, 0, 16, 4096, IaaMode::Sync)
        .unwrap();
    let (ps, vs) = (plain.total_stats(), verified.total_stats());
    assert_eq!(vs.comp_calls, ps.comp_calls);
    assert_eq!(vs.decomp_calls, vs.comp_calls);
    assert_eq!(vs.verify_calls, 16);
    assert_eq!(
        vs.comp_calls + vs.decomp_calls,
        2 * (ps.comp_calls + ps.decomp_calls)
    );
    let c = costs();
    let verify_job = c.submit_ns + c.decompress_fixed_ns + 4 * c.decompress_ns_per_kib + c.poll_ns;
    assert_eq!(v.cpu_busy_ns, p.cpu_busy_ns + 16 * verify_job);
    assert_eq!(
        vs.busy_ns,
        ps.busy_ns + 16 * (c.decompress_fixed_ns + 4 * c.decompress_ns_per_kib)
    );
}

#[test]
fn iaa_is_deterministic() {
    let run = || {
        let mut d = iaa(true);
        let mut out = Vec::new();
        for i in 0..200u64 {
            let cpu = (i * 7 % 112) as u32;
            let mode = if i % 3 == 0 {
                IaaMode::Sync
            } else {
                IaaMode::Batch { batch_size: 8 }
            };
            out.push(
                d.submit_compress(i * 500, cpu, 1 + (i % 16) as u32, 4096, mode)
                    .unwrap(),
            );
            out.push(
                d.submit_decompress(i * 500 + 250, cpu, 1, 4096, IaaMode::Sync)
                    .unwrap(),
            );
        }
        (out, d.total_stats())
    };
    assert_eq!(run(), run());
}

#[test]
fn iaa_rejects_bad_input() {
    assert!(Iaa::new(
        IaaConfig {
            engines_per_device: 0,
            ..IaaConfig::default()
        },
        costs()
    )
    .is_err());
    let mut d = iaa(true);
    assert!(d.submit_compress(0, 500, 1, 4096, IaaMode::Sync).is_err());
}

#[test]
fn zsmalloc_pool_through_public_api() {
    let mut pool = ZsPool::new(ZsConfig::default()).unwrap();
    let mut pages = CountingPages::with_limit(64);
    let huge = pool.huge_class_size_bytes();
    let h = pool.zs_malloc(huge, &mut pages).unwrap();
    assert_eq!(pool.zs_get_total_pages(), 1);
    let small: Vec<_> = (0..100)
        .map(|i| pool.zs_malloc(500 + i, &mut pages).unwrap())
        .collect();
    pool.check().unwrap();
    assert_eq!(pool.obj_count(), 101);
    assert_eq!(
        pool.compr_bytes(),
        huge as u64 + (0..100).map(|i| 500 + i as u64).sum::<u64>()
    );
    assert!(pool.pool_bytes() >= pool.compr_bytes());
    pool.zs_free(h, &mut pages).unwrap();
    for h in small.iter().step_by(2) {
        pool.zs_free(*h, &mut pages).unwrap();
    }
    pool.zs_compact(&mut pages);
    pool.check().unwrap();
    assert_eq!(pages.held, pool.zs_get_total_pages());
    assert!(pool.debugfs_classes().contains("Total"));
    assert_eq!(pool.zs_malloc(0, &mut pages), Err(ZsError::ZeroSize));
    assert!(ZsPool::new(ZsConfig {
        chain_size: 0,
        ..ZsConfig::default()
    })
    .is_err());
}
