//! Which swap devices take a large folio whole: a swap file on a filesystem never does (it is not
//! SWP_BLKDEV), in every release; a block device does from 6.10 on.

fn usemem(kernel: &str, kind: &str, size: &str) -> foliosim_model::RunResult {
    // 4K is the base page, not a knob: with no size enabled, faults map 4K.
    let enabled = if size == "4K" {
        String::new()
    } else {
        format!("\"{size}\" = \"always\"")
    };
    let toml = format!(
        r#"
seed = 1
[machine]
cpus = 2
memory = "512M"
[[machine.swap]]
kind = "{kind}"
size = "256M"
[kernel]
version = "{kernel}"
[sysfs.hugepages]
{enabled}
[[memcg]]
name = "a"
max = "32M"
[[workload]]
kind = "usemem"
nproc = 1
size = "64M"
memcg = "a"
"#
    );
    crate::common::run(&crate::common::checked(&toml))
}

#[test]
fn a_swap_file_splits_every_large_folio_and_counts_the_fallback() {
    for kernel in ["6.10", "6.12", "6.18"] {
        let c = usemem(kernel, "file", "64K");
        let get = |n: &str| c.counter(n);
        assert_eq!(get("hugepages-64kB/stats/swpout"), 0, "{kernel}");
        let fallback = get("hugepages-64kB/stats/swpout_fallback");
        assert!(fallback > 0, "{kernel}: no fallback");
        assert_eq!(get("hugepages-64kB/stats/split"), fallback, "{kernel}");
        assert!(get("pswpout") >= 16 * fallback, "{kernel}");
    }
}

#[test]
fn a_block_device_takes_them_whole() {
    for kind in ["ssd", "loop"] {
        let c = usemem("6.18", kind, "64K");
        let get = |n: &str| c.counter(n);
        assert!(get("hugepages-64kB/stats/swpout") > 0, "{kind}");
        assert_eq!(get("hugepages-64kB/stats/swpout_fallback"), 0, "{kind}");
    }
}

#[test]
fn an_asynchronous_device_writes_out_only_what_the_limit_needs() {
    // 64 MiB written into a 32 MiB memcg: at least 32 MiB must go out. A folio whose write
    // completed is rotated to the inactive tail and freed by the next scan
    // (folio_rotate_reclaimable), so reclaim does not write extra folios while writes are in
    // flight; live 6.18 wrote 1.009x the minimum in the same situation.
    let min_pages = (32u64 << 20) / 4096;
    let written = usemem("6.18", "ssd", "4K").counter("pswpout");
    assert!(written >= min_pages, "{written}");
    assert!(
        written * 100 <= min_pages * 105,
        "{written} > 1.05 x {min_pages}"
    );
}
