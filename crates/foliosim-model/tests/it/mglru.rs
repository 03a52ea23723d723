//! MGLRU (`[sysfs.lru_gen] enabled = true`) beside the classic two-list LRU: scenario
//! errors, generations kept valid under reclaim (check_invariants), aging by page-table walk,
//! determinism, and the direction of the difference on a hot set plus a one-pass stream.

use crate::common::{parse_shown, run_scenario_tasks};
use foliosim_model::mm::vmscan::lru_gen;
use foliosim_model::mm::Kernel;
use foliosim_model::sched::Task;
use foliosim_model::workload::Op;
use foliosim_model::Scenario;

const MIB_PAGES: u32 = 256;

fn scenario(lru_gen: &str) -> Scenario {
    let text = format!(
        r#"
seed = 7
check_invariants = true
[machine]
cpus = 2
memory = "96M"
[[machine.swap]]
kind = "ramdisk"
size = "512M"
[kernel]
version = "6.18"
[sysfs.lru_gen]
{lru_gen}
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
    );
    parse_shown(&text)
}

/// One task: a hot anonymous set of `hot_mib` written once, then `rounds` rounds of random
/// accesses to it, each followed by writing the next chunk of a stream of `stream_mib`
/// touched once (larger than memory). Returns the kernel after the run.
fn run_hot_and_stream(s: &Scenario, hot_mib: u32, stream_mib: u32, rounds: u32) -> Kernel {
    let mut k = Kernel::new(s);
    let mm = k.new_mm(0, foliosim_model::content::ContentClass::Usemem);
    let (hot, stream) = (hot_mib * MIB_PAGES, stream_mib * MIB_PAGES);
    let nohuge = foliosim_model::mm::mmap::ThpAdvice::NoHugepage;
    let mut ops = vec![
        Op::Mmap {
            vma: 0,
            nr_pages: hot,
            thp: nohuge,
        },
        Op::Mmap {
            vma: 1,
            nr_pages: stream,
            thp: nohuge,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr: hot,
            write: true,
        },
    ];
    let chunk = stream / rounds;
    for r in 0..rounds {
        ops.push(Op::Access {
            vma: 0,
            first: 0,
            nr: hot,
            count: 4 * hot as u64,
            write: false,
            mlp: 1,
        });
        ops.push(Op::Touch {
            vma: 1,
            first: r * chunk,
            nr: chunk,
            write: true,
        });
    }
    ops.push(Op::Exit);
    let mut tasks = vec![Task::new("t".into(), mm, 0, ops)];
    run_scenario_tasks(&mut k, &mut tasks, s);
    k
}

fn counter(k: &Kernel, name: &str) -> u64 {
    k.vm_events().to_map()[name]
}

const SHOWN: [&str; 10] = [
    "pswpin",
    "pswpout",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgscan_anon",
    "pgsteal_anon",
    "pgactivate",
    "pgrefill",
];

fn show(label: &str, k: &Kernel) {
    let (aging, walked, looked) = lru_gen::debug_totals(k);
    let counts: Vec<String> = SHOWN
        .iter()
        .map(|c| format!("{c}={}", counter(k, c)))
        .collect();
    eprintln!(
        "{label}: {} policy={} aging={aging} walked_ptes={walked} look_around_ptes={looked}",
        counts.join(" "),
        k.cfg.lru_policy.name()
    );
}

#[test]
fn bad_lru_gen_values_name_the_field() {
    for (body, field) in [
        ("enabled = \"yes\"", "enabled"),
        ("min_ttl_ms = -1", "min_ttl_ms"),
        ("enable = true", "enable"),
    ] {
        let text = format!("[machine]\ncpus = 1\nmemory = \"64M\"\n[sysfs.lru_gen]\n{body}\n[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n");
        let err = Scenario::from_toml_str(&text)
            .err()
            .unwrap_or_else(|| panic!("`{body}` accepted"))
            .to_string();
        assert!(err.contains(field), "`{body}`: {err}");
    }
    let s = scenario("enabled = true\nmin_ttl_ms = 1000");
    assert_eq!(s.sysfs.lru_gen.enabled, Some(true));
    assert_eq!(s.sysfs.lru_gen.min_ttl_ms, Some(1000));
    assert!(!scenario("").sysfs.lru_gen.enabled());
}

#[test]
fn mglru_keeps_valid_generations_and_ages_by_walking_page_tables() {
    let s = scenario("enabled = true");
    // check_invariants: every LRU folio is on the generation its bits name, within
    // [min_seq, max_seq] of its type, gen sizes add up, 2..=4 generations.
    let k = run_hot_and_stream(&s, 24, 192, 24);
    show("mglru", &k);
    assert_eq!(k.cfg.lru_policy.name(), "mglru");
    let (aging, walked, _) = lru_gen::debug_totals(&k);
    assert!(aging > 0, "the aging never ran");
    assert!(walked > 0, "the aging walked no page tables");
    assert!(counter(&k, "pswpout") > 0, "nothing was reclaimed");
    // pgscan counts what was isolated, pgsteal what was reclaimed of it.
    let scan = counter(&k, "pgscan_kswapd") + counter(&k, "pgscan_direct");
    let steal = counter(&k, "pgsteal_kswapd") + counter(&k, "pgsteal_direct");
    assert!(scan >= steal && steal > 0);
    assert_eq!(counter(&k, "pgscan_anon"), scan);
    for lv in k.memcgs.iter().flat_map(|cg| cg.lruvecs()) {
        let lg = &lv.lrugen;
        assert!(lg.enabled);
        // Classic lists stay empty under MGLRU.
        assert_eq!(lv.nr_pages(), lg.nr_pages());
    }
}

#[test]
fn mglru_runs_are_deterministic() {
    let s = scenario("enabled = true");
    let a = run_hot_and_stream(&s, 16, 128, 16);
    let b = run_hot_and_stream(&s, 16, 128, 16);
    assert_eq!(a.vm_events().to_map(), b.vm_events().to_map());
    let gens = |k: &Kernel| {
        let lg = &k.memcgs[0].lruvec_of(0).lrugen;
        (lg.max_seq, lg.min_seq, lg.nr_pages())
    };
    assert_eq!(gens(&a), gens(&b));
}

/// Documentation/mm/multigen_lru.rst: the aging finds accessed pages by walking page tables
/// in batches, so eviction meets folios whose recency is already known, where the classic
/// LRU learns it on the inactive list: every folio touched once is young on its first trip
/// (folio_check_references keeps it) and taken only on the second. On a one-pass stream
/// larger than memory beside a hot set, MGLRU reclaims the same with fewer pages scanned,
/// and the hot set is refaulted no more than under the classic LRU.
#[test]
fn mglru_reclaims_a_one_pass_stream_with_fewer_scans_than_the_classic_lru() {
    let classic = run_hot_and_stream(&scenario(""), 24, 192, 24);
    let mglru = run_hot_and_stream(&scenario("enabled = true"), 24, 192, 24);
    show("classic", &classic);
    show("mglru", &mglru);
    assert_eq!(classic.cfg.lru_policy.name(), "classic");
    let scan = |k: &Kernel| counter(k, "pgscan_kswapd") + counter(k, "pgscan_direct");
    let steal = |k: &Kernel| counter(k, "pgsteal_kswapd") + counter(k, "pgsteal_direct");
    // Efficiency pgsteal / pgscan, compared without division.
    assert!(
        steal(&mglru) * scan(&classic) > steal(&classic) * scan(&mglru),
        "mglru {}/{} classic {}/{}",
        steal(&mglru),
        scan(&mglru),
        steal(&classic),
        scan(&classic)
    );
    // Only the hot set is ever read back: swap-ins are its refaults.
    assert!(counter(&mglru, "pswpin") <= counter(&classic, "pswpin"));
}

/// scenarios/mglru-vs-classic.toml both ways: the figures of docs/mglru.md.
#[test]
fn the_shipped_scenario_runs_both_ways() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/mglru-vs-classic.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mglru = Scenario::from_toml_str(&text).unwrap();
    let classic =
        Scenario::from_toml_str(&text.replace("enabled = true", "enabled = false")).unwrap();
    let mut runs = Vec::new();
    for (label, s) in [("classic", &classic), ("mglru", &mglru)] {
        let r = foliosim_model::run(s).unwrap_or_else(|e| panic!("{label}: {e}"));
        let line: Vec<String> = [
            "pgscan_kswapd",
            "pgscan_direct",
            "pgsteal_kswapd",
            "pgsteal_direct",
            "pgscan_anon",
            "pgscan_file",
            "pgsteal_anon",
            "pgsteal_file",
            "pswpin",
            "pswpout",
            "pgmajfault",
            "pgactivate",
            "pgdeactivate",
            "pgrefill",
        ]
        .iter()
        .map(|c| format!("{c}={}", r.counters.get(*c).copied().unwrap_or(0)))
        .collect();
        eprintln!(
            "{label}: {} simulated_ms={} sys_ms={} user_ms={} iowait_ms={} kthreads={:?}",
            line.join(" "),
            r.simulated_ns / 1_000_000,
            r.cpu_sys_ns / 1_000_000,
            r.cpu_user_ns / 1_000_000,
            r.cpu_iowait_ns / 1_000_000,
            r.kernel_threads
        );
        runs.push(r);
    }
    let steal = |r: &foliosim_model::report::RunResult| {
        r.counters["pgsteal_kswapd"] + r.counters["pgsteal_direct"]
    };
    assert!(steal(&runs[0]) > 0 && steal(&runs[1]) > 0);
}
