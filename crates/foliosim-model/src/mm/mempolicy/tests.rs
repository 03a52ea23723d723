//! The era rules on a machine of two nodes (node 1 memory without CPUs): a usemem larger than
//! node 0 with THP always; the task policies on two sockets; the rule on one node.

use crate::mm::mmzone::NumaStat;
use crate::scenario::Scenario;
use std::collections::BTreeMap;

/// The run's counters for `version` and `defrag`.
fn run(version: &str, defrag: &str) -> BTreeMap<String, u64> {
    let text = format!(
        r#"
[machine]
cpus = 2
memory = "256M"
[[machine.node]]
memory = "512M"
latency_ns = 140
[kernel]
version = "{version}"
[sysfs]
thp_enabled = "always"
defrag = "{defrag}"
[[workload]]
kind = "usemem"
nproc = 1
size = "384M"
"#
    );
    let s = Scenario::from_toml_str(&text).unwrap();
    crate::run(&s).unwrap().counters
}

fn get(c: &BTreeMap<String, u64>, key: &str) -> u64 {
    *c.get(key)
        .unwrap_or_else(|| panic!("no counter `{key}` in {:?}", c.keys()))
}

// usemem's VMA is not MADV_HUGEPAGE: defrag=always gives GFP_TRANSHUGE | __GFP_NORETRY, so a
// local attempt gives up after compaction is skipped, without reclaim. Its memory is freed at
// exit, so the per-node THP gauges read 0 at the end: the evidence is in the event counters.

#[test]
fn a_4x_thp_fault_stays_on_its_node_and_falls_back_to_base_pages() {
    let c = run("4.19", "always");
    // Node 0 full: the THP faults fall back; their base pages come from node 1.
    let fallbacks = get(&c, "thp_fault_fallback");
    assert!(fallbacks > 0, "{c:?}");
    assert_eq!(get(&c, "node1 numa_miss"), fallbacks * 512, "{c:?}");
    assert_eq!(
        get(&c, "node0 numa_hit"),
        get(&c, "thp_fault_alloc"),
        "{c:?}"
    );
    assert_eq!(get(&c, "numa_miss"), get(&c, "numa_foreign"));
}

#[test]
fn a_6x_thp_fault_falls_back_to_the_remote_node_when_it_may_reclaim() {
    let c = run("6.18", "always");
    let old = run("4.19", "always");
    // No fallback: the THPs node 0 could not hold came from node 1 (one miss per THP).
    assert_eq!(get(&c, "thp_fault_fallback"), 0, "{c:?}");
    let remote = get(&c, "node1 numa_miss");
    assert!(remote > 0, "{c:?}");
    assert_eq!(
        get(&c, "thp_fault_alloc"),
        get(&old, "thp_fault_alloc") + remote
    );
}

#[test]
fn a_6x_thp_fault_that_may_not_reclaim_stays_local() {
    // defrag=madvise, VMA not madvised: GFP_TRANSHUGE_LIGHT, no direct reclaim, no retry.
    let c = run("6.18", "madvise");
    assert!(get(&c, "thp_fault_fallback") > 0, "{c:?}");
}

#[test]
fn one_node_takes_the_rule_without_numa_counters() {
    // 6.18 on one node: the fault goes through alloc_pages_mpol's two attempts (one node is
    // still a CONFIG_NUMA kernel), and no per-node counters are shown.
    let text = "[machine]\ncpus = 1\nmemory = \"64M\"\n[sysfs]\nthp_enabled = \"always\"\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"16M\"";
    let c = crate::run(&Scenario::from_toml_str(text).unwrap())
        .unwrap()
        .counters;
    assert!(get(&c, "thp_fault_alloc") > 0);
    assert!(!c.contains_key("numa_hit"), "no NUMA counters on one node");
}

/// A 6.x THP fault on a madvised VMA whose second (any-node) attempt stops in direct reclaim to
/// give up the CPU resumes in that attempt. It used to make the local attempt again on every
/// resume, which restarted the second one from scratch; with a short slice and another task
/// waiting it stopped again before reclaiming, for ever (soak case 3004354 ran for over 10
/// minutes). Both nodes are full, so the second attempt reaches reclaim.
#[test]
fn a_6x_thp_fault_stopped_in_its_second_attempt_resumes_there() {
    let text = r#"
[machine]
cpus = 1
memory = "64M"
sched_slice_ns = 10000
[[machine.node]]
memory = "64M"
latency_ns = 140
[[machine.swap]]
kind = "loop"
size = "64M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "always"
defrag = "madvise"
[[workload]]
kind = "usemem"
nproc = 2
size = "64M"
madv_hugepage = true
"#;
    let s = Scenario::from_toml_str(text).unwrap();
    // About 600 steps with the fix; the livelock ran into this bound.
    let opts = crate::RunOptions {
        max_steps: Some(100_000),
        ..Default::default()
    };
    let c = crate::run_with(&s, &opts, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"))
        .result
        .counters;
    assert!(
        get(&c, "allocstall_movable") > 0,
        "no direct reclaim: {c:?}"
    );
    assert!(get(&c, "node1 numa_miss") > 0, "no remote THP: {c:?}");
}

/// The counters of a usemem of `size` on two sockets of 128M (CPU 0 on node 0, CPU 1 on
/// node 1), every user task with the policy `mempolicy` (a TOML table body).
fn two_sockets(mempolicy: &str, size: &str, thp: &str) -> BTreeMap<String, u64> {
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = 2
memory = "128M"
[machine.topology]
sockets = 2
[[machine.node]]
memory = "128M"
socket = 1
[sysfs]
thp_enabled = "{thp}"
[mempolicy]
{mempolicy}
[[workload]]
kind = "usemem"
nproc = 1
size = "{size}"
"#
    );
    let s = Scenario::from_toml_str(&text).unwrap();
    crate::run(&s).unwrap().counters
}

#[test]
fn interleave_puts_a_faults_pages_on_the_nodes_by_offset() {
    let c = two_sockets("mode = \"interleave\"\nnodes = [0, 1]", "32M", "never");
    // 8192 pages, page i on node i % 2: each node gets half, each an interleave hit.
    for nid in 0..2 {
        assert_eq!(
            get(&c, &format!("node{nid} numa_interleave")),
            4096,
            "{c:?}"
        );
        assert_eq!(get(&c, &format!("node{nid} numa_hit")), 4096, "{c:?}");
    }
    assert_eq!(get(&c, "numa_interleave"), 8192);
    assert_eq!(get(&c, "numa_miss"), 0);
    // The task ran on one CPU: one node's pages were local to it, the other's not.
    assert_eq!(get(&c, "numa_local"), 4096, "{c:?}");
}

#[test]
fn bind_keeps_every_page_on_its_nodes_even_from_another_nodes_cpu() {
    let c = two_sockets("mode = \"bind\"\nnodes = [1]", "32M", "never");
    // ac->preferred_zoneref is node 1, the first zone of node 0's zonelist the mask allows:
    // hits there, none on node 0, no interleave.
    assert_eq!(get(&c, "node1 numa_hit"), 8192, "{c:?}");
    assert_eq!(
        get(&c, "node0 numa_hit") + get(&c, "node0 numa_miss"),
        0,
        "{c:?}"
    );
    assert_eq!(get(&c, "numa_interleave"), 0);
    // THP faults from a node the mask excludes skip the local-first rule: node 1's THPs.
    let c = two_sockets("mode = \"bind\"\nnodes = [1]", "32M", "always");
    assert!(get(&c, "thp_fault_alloc") > 0, "{c:?}");
    assert_eq!(
        get(&c, "node0 numa_hit") + get(&c, "node0 numa_miss"),
        0,
        "{c:?}"
    );
}

#[test]
fn preferred_fills_its_node_then_falls_back_along_its_zonelist() {
    let c = two_sockets("mode = \"preferred\"\nnodes = [1]", "160M", "never");
    let spilled = get(&c, "node0 numa_miss");
    assert!(get(&c, "node1 numa_hit") > 16384, "{c:?}");
    assert!(spilled > 0, "{c:?}");
    assert_eq!(get(&c, "node1 numa_foreign"), spilled);
}

#[test]
fn a_policy_that_does_not_fit_the_machine_is_refused_by_field() {
    let field = |policy: &str| {
        let text = format!(
            "[machine]\nmemory = \"64M\"\n[mempolicy]\n{policy}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"4M\"\n"
        );
        match Scenario::from_toml_str(&text) {
            Err(crate::scenario::ScenarioError::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(field("mode = \"bind\"\nnodes = [1]"), "mempolicy.nodes[0]");
    assert_eq!(field("mode = \"preferred\"\nnodes = []"), "mempolicy.nodes");
    assert_eq!(field("mode = \"default\"\nnodes = [0]"), "mempolicy.nodes");
}

/// On one node, 6.18's rule makes a THP fault that fails its __GFP_NORETRY local attempt try
/// again in full: the same run with the single attempt (4.x's rule, which on one node adds
/// only __GFP_THISNODE) must differ, with more compaction stalls (an aged machine, where
/// compaction fails). Fails if the rule were skipped on one node.
#[test]
fn one_node_6x_thp_faults_make_a_second_attempt() {
    let text = r#"
[machine]
cpus = 2
memory = "256M"
[machine.start]
prelude = "churn"
turnover = "2G"
[machine.disk]
kind = "ssd"
size = "1G"
[[file]]
name = "work"
size = "216M"
[kernel]
version = "6.18"
[sysfs]
thp_enabled = "always"
defrag = "always"
[[workload]]
kind = "thpscale"
threads = 2
total_size = "200M"
file = "work"
"#;
    let s = Scenario::from_toml_str(text).unwrap();
    let run = |single: bool| {
        let (mut k, mut tasks) = crate::boot(&s).unwrap();
        if single {
            k.cfg.hugepage_node_policy = &super::thp_node_v4_1::LocalOnly;
        }
        crate::sched::run_tasks(&mut k, &mut tasks, 1, 3_000_000, true, &mut |_, _| {}).unwrap();
        k.vmstat_map(0)
    };
    let (rule, single) = (run(false), run(true));
    let stalls = |c: &BTreeMap<String, u64>| get(c, "compact_stall");
    assert!(
        stalls(&rule) > stalls(&single),
        "rule {} single {}",
        stalls(&rule),
        stalls(&single)
    );
}

/// A fault interleaves by its offset (get_vma_policy's ilx), not by the task's last node:
/// touching every other page of a VMA puts them all on one node; page-cache-like allocations
/// without a VMA go round robin from il_prev.
#[test]
fn interleave_follows_the_offset_for_faults_and_il_prev_otherwise() {
    use crate::content::ContentClass;
    use crate::engine::Ctx;
    use crate::mm::gfp::Gfp;
    use crate::mm::memory::touch;
    use crate::mm::mmap::ThpAdvice;
    use crate::mm::page_alloc::alloc_pages;
    use crate::mm::Kernel;
    let text = "[machine]\ncpus = 2\nmemory = \"64M\"\n[machine.topology]\nsockets = 2\n\
                [[machine.node]]\nmemory = \"64M\"\nsocket = 1\n[mempolicy]\n\
                mode = \"interleave\"\nnodes = [0, 1]\n[[workload]]\nkind = \"usemem\"\n\
                nproc = 1\nsize = \"4M\"\n";
    let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
    k.current.mempolicy = k.task_mempolicy;
    let mut ctx = Ctx::new(0, 0);
    let mm = k.new_mm(0, ContentClass::Usemem);
    k.mms[mm as usize].mmap(0, 64, ThpAdvice::NoHugepage);
    for index in (0..64).step_by(2) {
        touch(&mut k, &mut ctx, mm, 0, index, 64, true).unwrap();
    }
    let nodes = |k: &Kernel| [0, 1].map(|n| k.node(n).numa_stat[NumaStat::Hit as usize]);
    assert_eq!(nodes(&k), [32, 0]);
    assert_eq!(k.current.il_prev, None);
    for _ in 0..4 {
        alloc_pages(&mut k, &mut ctx, Gfp::GFP_HIGHUSER_MOVABLE, 0).unwrap();
    }
    assert_eq!(nodes(&k), [34, 2]);
    assert_eq!(k.current.il_prev, Some(1));
    assert_eq!(k.node(0).numa_stat[NumaStat::InterleaveHit as usize], 34);
}

/// usemem of 160M, more than either node of 128M holds, on two sockets (CPUs on both nodes),
/// THP always, defrag always, under `version`.
fn two_socket_usemem(version: &str) -> BTreeMap<String, u64> {
    let text = format!(
        r#"
check_invariants = true
[machine]
cpus = 2
memory = "128M"
[machine.topology]
sockets = 2
[[machine.node]]
memory = "128M"
socket = 1
[kernel]
version = "{version}"
[sysfs]
thp_enabled = "always"
defrag = "always"
[[workload]]
kind = "usemem"
nproc = 1
size = "160M"
"#
    );
    crate::run(&Scenario::from_toml_str(&text).unwrap())
        .unwrap()
        .counters
}

#[test]
fn two_sockets_4x_falls_back_to_local_base_pages_6x_takes_remote_thps() {
    let (old, new) = (two_socket_usemem("4.19"), two_socket_usemem("6.18"));
    // 4.x: __GFP_THISNODE on every THP fault; once its node is short, the fault falls back
    // and its base pages go remote (node 1's misses), but for those the home node still had.
    let fallbacks = get(&old, "thp_fault_fallback");
    assert!(fallbacks > 0, "{old:?}");
    let (home, away) = if get(&old, "node0 numa_local") >= get(&old, "node1 numa_local") {
        (0, 1)
    } else {
        (1, 0)
    };
    let local_base = get(&old, &format!("node{home} numa_hit")) - get(&old, "thp_fault_alloc");
    assert_eq!(
        get(&old, &format!("node{away} numa_miss")) + local_base,
        fallbacks * 512,
        "{old:?}"
    );
    // 6.x: the first attempt is local and may not reclaim; the second may go remote, so the
    // THPs the home node could not hold come from the other one, one miss per THP.
    assert_eq!(get(&new, "thp_fault_fallback"), 0, "{new:?}");
    let remote = get(&new, &format!("node{away} numa_miss"));
    assert!(remote > 0 && remote < 512, "{new:?}");
    assert_eq!(
        get(&new, "thp_fault_alloc"),
        get(&old, "thp_fault_alloc") + remote
    );
    assert_eq!(
        get(&new, &format!("node{home} numa_foreign")),
        remote,
        "{new:?}"
    );
}
