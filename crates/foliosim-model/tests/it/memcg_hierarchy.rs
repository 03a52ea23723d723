//! cgroup v2 memcg hierarchy: a parent's memory.max binds its children jointly, memory.low
//! and memory.min protect a sibling from the parent's reclaim, memory.swap.max stops a memcg's
//! swap-out, and the per-CPU charge stock makes a charge hit the limit while other CPUs hold
//! pre-charged pages. Small runs, invariants on (page conservation up the tree).

use foliosim_model::{RunResult, Scenario};

fn run(memcgs: &str, workloads: &str, cpus: u32) -> RunResult {
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = {cpus}
memory = "512M"
[[machine.swap]]
kind = "ramdisk"
size = "256M"
[kernel]
version = "6.18"
[sysfs.hugepages]
"2M" = "never"
"64K" = "never"
{memcgs}
{workloads}
"#
    );
    let s = Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}"));
    foliosim_model::run(&s).unwrap_or_else(|e| panic!("{e}"))
}

fn usemem(memcg: &str, nproc: u32, size: &str) -> String {
    format!(
        "[[workload]]\nkind = \"usemem\"\nnproc = {nproc}\nsize = \"{size}\"\nmemcg = \"{memcg}\"\n"
    )
}

/// A 2-level tree under a 32 MiB parent `p`: `a` (`a_extra` settings) writes 14 MiB while
/// two processes of `b` (`b_extra`) write `b_size` each, all at once.
fn siblings(a_extra: &str, b_extra: &str, b_size: &str) -> RunResult {
    let memcgs = format!(
        "[[memcg]]\nname = \"p\"\nmax = \"32M\"\n\
         [[memcg]]\nname = \"a\"\nparent = \"p\"\n{a_extra}\n\
         [[memcg]]\nname = \"b\"\nparent = \"p\"\n{b_extra}\n"
    );
    let workloads = usemem("a", 1, "14M") + &usemem("b", 2, b_size);
    run(&memcgs, &workloads, 3)
}

fn stat(r: &RunResult, memcg: &str, name: &str) -> u64 {
    r.memcg_stats[memcg][name]
}

/// Pages reclaim took from a memcg (its own memory.stat pgsteal).
fn stolen(r: &RunResult, memcg: &str) -> u64 {
    stat(r, memcg, "pgsteal_direct") + stat(r, memcg, "pgsteal_kswapd")
}

#[test]
fn a_parents_max_binds_its_children_jointly() {
    let r = siblings("", "", "20M");
    // Neither child has a limit; 54 MiB written under a 32 MiB parent: both are reclaimed.
    assert!(
        stolen(&r, "a") > 0 && stolen(&r, "b") > 0,
        "{:?}",
        r.memcg_stats
    );
    assert!(stat(&r, "b", "pswpout") > 0);
    // The limit hit is the parent's: memory.events `max` counts there, not in the children.
    assert!(stat(&r, "p", "memory.events.max") > 0);
    assert_eq!(stat(&r, "a", "memory.events.max"), 0);
    assert_eq!(stat(&r, "b", "memory.events.max"), 0);
    // The parent's events and swap count its children's.
    assert_eq!(r.counter("oom_kill"), 0);
    // Global memory was plentiful: no global reclaim.
    assert_eq!(r.counter("pgsteal_kswapd") + r.counter("pgsteal_direct"), 0);
}

#[test]
fn memory_low_protects_a_sibling_and_counts_low_when_breached() {
    // a within its low: the parent's reclaim takes everything from b.
    let r = siblings("low = \"16M\"", "", "20M");
    assert_eq!(stolen(&r, "a"), 0, "{:?}", r.memcg_stats["a"]);
    assert!(stolen(&r, "b") > 0);
    assert_eq!(stat(&r, "a", "memory.events.low"), 0);
    // Both within their low and the parent full: reclaim breaks into low (memory.events
    // `low`, counted up to the parent) rather than fail.
    let r = siblings("low = \"24M\"", "low = \"24M\"", "12M");
    let low = stat(&r, "a", "memory.events.low") + stat(&r, "b", "memory.events.low");
    assert!(low > 0, "{:?}", r.memcg_stats);
    assert_eq!(stat(&r, "p", "memory.events.low"), low);
    assert!(stolen(&r, "a") + stolen(&r, "b") > 0);
    assert_eq!(r.counter("oom_kill"), 0);
}

#[test]
fn memory_min_is_never_broken() {
    let r = siblings("min = \"16M\"", "", "20M");
    assert_eq!(stolen(&r, "a"), 0);
    assert!(stolen(&r, "b") > 0);
    // Both within min and the parent full: nothing may be reclaimed, the parent OOMs.
    let r = siblings("min = \"24M\"", "min = \"24M\"", "12M");
    assert_eq!(stolen(&r, "a") + stolen(&r, "b"), 0, "{:?}", r.memcg_stats);
    assert!(stat(&r, "p", "memory.events.oom") > 0);
    assert!(r.counter("oom_kill") > 0);
}

fn swap_limited(swap_max: &str) -> RunResult {
    let memcgs = format!("[[memcg]]\nname = \"s\"\nmax = \"8M\"\nswap_max = \"{swap_max}\"\n");
    run(&memcgs, &usemem("s", 1, "16M"), 2)
}

#[test]
fn swap_max_zero_stops_the_memcgs_swap_out() {
    let r = swap_limited("0");
    // No swap left for the memcg: anon is not even scanned (get_scan_count), the memcg OOMs.
    assert_eq!(stat(&r, "s", "pswpout"), 0);
    assert_eq!(
        stat(&r, "s", "pgscan_direct"),
        0,
        "{:?}",
        r.memcg_stats["s"]
    );
    assert_eq!(stat(&r, "s", "memory.swap.current"), 0);
    assert!(stat(&r, "s", "memory.events.oom") > 0);
    assert_eq!(r.counter("pswpout"), 0);
}

#[test]
fn a_small_swap_max_stops_swap_out_at_that_size() {
    let r = swap_limited("4M");
    let out = stat(&r, "s", "pswpout");
    // It swaps up to its 1024 pages of swap (slots freed by swap-ins go round again), then
    // the memcg has no swap left and OOMs.
    assert!((1024..2048).contains(&out), "{out}");
    assert!(stat(&r, "s", "memory.events.oom") > 0);
    // Without the limit the same run swaps out the 8 MiB it needs and finishes.
    let free = swap_limited("1G");
    assert_eq!(stat(&free, "s", "memory.events.oom"), 0);
    assert!(stat(&free, "s", "pswpout") >= 2048);
}

#[test]
fn the_charge_stock_makes_a_charge_hit_the_limit_while_other_cpus_hold_pages() {
    // A 1000-page limit (not a whole number of 64-page batches) on `m`, two children.
    let memcgs = "[[memcg]]\nname = \"m\"\nmax = \"4000K\"\n\
                  [[memcg]]\nname = \"c1\"\nparent = \"m\"\n\
                  [[memcg]]\nname = \"c2\"\nparent = \"m\"\n";
    // One task writing 992 pages: near the limit the batch charge fails and the charge falls
    // back to the pages it needs (try_charge_memcg: batch = nr_pages); no reclaim.
    let one = run(memcgs, &usemem("c2", 1, "3968K"), 2);
    assert_eq!(stat(&one, "m", "memory.events.max"), 0);
    assert_eq!(stat(&one, "c2", "pgscan_direct"), 0);
    // The same beside a task of the sibling that wrote one page and exited: the stock keeps
    // the other 63 pages of its batch charged (to c1, so no use to c2), and the writer hits
    // the limit 63 pages early: reclaim, after which drain_all_stock gives them back.
    let workloads = usemem("c1", 1, "4K") + &usemem("c2", 1, "3968K");
    let two = run(memcgs, &workloads, 2);
    assert!(
        stat(&two, "m", "memory.events.max") > 0,
        "{:?}",
        two.memcg_stats
    );
    assert!(stat(&two, "c2", "pgscan_direct") > 0);
}

#[test]
fn a_parent_must_be_declared_first() {
    let bad = |memcgs: &str| {
        let text = format!(
            "[machine]\ncpus = 1\nmemory = \"64M\"\n{memcgs}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n"
        );
        Scenario::from_toml_str(&text).unwrap_err().to_string()
    };
    let e = bad("[[memcg]]\nname = \"a\"\nparent = \"b\"\n[[memcg]]\nname = \"b\"\n");
    assert!(
        e.contains("memcg[0].parent") && e.contains("declared before"),
        "{e}"
    );
    let e = bad("[[memcg]]\nname = \"a\"\nparent = \"a\"\n");
    assert!(e.contains("memcg[0].parent") && e.contains("cycle"), "{e}");
    let e = bad("[[memcg]]\nname = \"a\"\nparent = \"nope\"\n");
    assert!(e.contains("memcg[0].parent") && e.contains("`nope`"), "{e}");
}

#[test]
fn a_parents_memory_high_reclaims_from_its_children() {
    let memcgs =
        "[[memcg]]\nname = \"p\"\nhigh = \"16M\"\n[[memcg]]\nname = \"c\"\nparent = \"p\"\n";
    let r = run(memcgs, &usemem("c", 1, "32M"), 2);
    // The child has no memory.high; its charges take the parent over its own, and the task
    // reclaims from the parent's subtree on its way back to user space.
    assert!(
        stat(&r, "p", "memory.events.high") > 0,
        "{:?}",
        r.memcg_stats
    );
    assert_eq!(stat(&r, "c", "memory.events.high"), 0);
    assert!(stat(&r, "c", "pgsteal_direct") > 0);
}

#[test]
fn global_reclaim_walks_the_tree_and_respects_memory_min() {
    // 256 MiB machine: `a` (memory.min 128M) writes 100 MiB beside 2 x 160 MiB in `big`;
    // the walk (pre-order) reaches `a` before `big`.
    let text = r#"
check_invariants = true
[machine]
cpus = 3
memory = "256M"
[[machine.swap]]
kind = "ramdisk"
size = "512M"
[kernel]
version = "6.18"
[sysfs.hugepages]
"2M" = "never"
"64K" = "never"
[[memcg]]
name = "p"
[[memcg]]
name = "a"
parent = "p"
min = "128M"
[[memcg]]
name = "big"
[[workload]]
kind = "usemem"
nproc = 1
size = "100M"
memcg = "a"
[[workload]]
kind = "usemem"
nproc = 2
size = "160M"
memcg = "big"
"#;
    let r = foliosim_model::run(&Scenario::from_toml_str(text).unwrap()).unwrap();
    assert!(r.counter("pgsteal_kswapd") + r.counter("pgsteal_direct") > 0);
    // `a`'s effective min is 0: its parent `p` has none to hand down (effective_protection).
    assert!(stolen(&r, "a") > 0, "{:?}", r.memcg_stats["a"]);
    // With the protection at the top level, global reclaim leaves it alone.
    let top = text.replace(
        "[[memcg]]\nname = \"p\"\n",
        "[[memcg]]\nname = \"p\"\nmin = \"128M\"\n",
    );
    let r = foliosim_model::run(&Scenario::from_toml_str(&top).unwrap()).unwrap();
    assert_eq!(stolen(&r, "a"), 0, "{:?}", r.memcg_stats["a"]);
    assert!(r.counter("pgsteal_kswapd") + r.counter("pgsteal_direct") > 0);
}
