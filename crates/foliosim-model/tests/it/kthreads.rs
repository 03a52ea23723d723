//! Kernel threads and sleeping waits, end to end: zswap's shrink worker runs as a kernel
//! thread on its own CPU time; a task waiting for a swap-in read gives its CPU to another and
//! its wait is iowait, not sys time; runs stay deterministic.

use foliosim_model::{run, RunResult, Scenario};

/// zswap with a pool of 2% of 256M in front of zram: the pool fills and stores fail, which
/// queues the shrink worker.
const POOL_LIMIT: &str = include_str!("../../../../scenarios/zswap-pool-limit.toml");

/// Two kernel-build jobs on one CPU in a memcg too small for both: their phases swap out to
/// an SSD and read back from it.
const SSD_ONE_CPU: &str = r#"
check_invariants = true
[machine]
cpus = 1
memory = "512M"
[[machine.swap]]
kind = "ssd"
size = "256M"
[kernel]
version = "6.18"
[[memcg]]
name = "m"
max = "12M"
[[workload]]
kind = "kbuild"
jobs = 8
jobs_concurrent = 2
rss_min = "8M"
rss_max = "8M"
user_ns_per_page = 10000
phases = 6
memcg = "m"
"#;

fn go(text: &str) -> RunResult {
    run(&Scenario::from_toml_str(text).unwrap()).unwrap()
}

#[test]
fn zswaps_shrink_worker_is_a_kernel_thread_with_its_own_cpu_time() {
    let r = go(POOL_LIMIT);
    let z = r.zswap.as_ref().unwrap();
    assert!(z.written_back_pages > 0, "{z:?}");
    let names: Vec<&str> = r.kernel_threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["kswapd0", "kcompactd0", "kworker/u+zswap-shrink"]);
    let w = &r.kernel_threads[2];
    assert!(w.wakeups > 0, "{w:?}");
    assert!(w.sys_ns > 0, "{w:?}");
    // The report's CPU breakdown covers the workload's time and the thread's.
    let total: u64 = r.cpu_time_ns.values().sum();
    let threads_ns: u64 = r.kernel_threads.iter().map(|t| t.sys_ns).sum();
    assert_eq!(total, r.cpu_user_ns + r.cpu_sys_ns + threads_ns);
    // Without zswap there is no such thread; kswapd and kcompactd are always there.
    let off = go(&POOL_LIMIT.replace("enabled = true", "enabled = false"));
    let names: Vec<&str> = off.kernel_threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["kswapd0", "kcompactd0"]);
}

#[test]
fn a_task_waiting_for_a_swap_in_read_frees_its_cpu_and_counts_iowait() {
    let r = go(SSD_ONE_CPU);
    assert!(
        r.counter("pswpin") > 0,
        "the jobs read pages back from the SSD"
    );
    assert!(r.cpu_iowait_ns > 0);
    // One CPU: were waits spent on it, the run would last at least user + sys + iowait.
    let serial = r.cpu_user_ns + r.cpu_sys_ns + r.cpu_iowait_ns;
    assert!(
        r.simulated_ns < serial,
        "simulated {} >= user + sys + iowait {serial}",
        r.simulated_ns
    );
    // The other job computed meanwhile: the CPU was busy for most of the run.
    assert!(
        (r.cpu_user_ns + r.cpu_sys_ns) as f64 > 0.9 * r.simulated_ns as f64,
        "{r:?}"
    );
}

#[test]
fn a_synchronous_device_has_no_iowait() {
    let r = go(&SSD_ONE_CPU.replace("kind = \"ssd\"", "kind = \"ramdisk\""));
    assert!(r.counter("pswpin") > 0);
    assert_eq!(r.cpu_iowait_ns, 0);
}

#[test]
fn kernel_threads_and_sleeping_waits_keep_runs_deterministic() {
    for text in [POOL_LIMIT, SSD_ONE_CPU] {
        assert_eq!(go(text).to_json(), go(text).to_json());
    }
}
