//! Snapshots of the kernel's counters under the names the sim uses: /proc/vmstat lines bare
//! (`pswpout`), per-size mTHP stats as `hugepages-64kB/stats/swpout`; plus zram's mm_stat and
//! io_stat fields. Deltas split monotonic event counters from gauges (nr_* levels).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

pub const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// Every counter value at one instant.
pub type Snapshot = BTreeMap<String, u64>;

pub fn parse_vmstat(text: &str) -> Snapshot {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// /proc/vmstat plus every hugepages-*/stats/* file, khugepaged's counters and the "TLB
/// shootdowns" line of /proc/interrupts.
pub fn snapshot() -> Snapshot {
    let mut out = fs::read_to_string("/proc/vmstat")
        .map(|t| parse_vmstat(&t))
        .unwrap_or_default();
    read_mthp_stats(Path::new(THP_DIR), &mut out);
    read_khugepaged_stats(Path::new(THP_DIR), &mut out);
    if let Ok(t) = fs::read_to_string("/proc/interrupts") {
        out.extend(parse_tlb_interrupts(&t));
    }
    out
}

/// Name of the all-CPU total of /proc/interrupts' "TLB shootdowns" line; `TLB_IRQ/cpuN` per
/// CPU.
pub const TLB_IRQ: &str = "interrupts/TLB shootdowns";

/// The x86 "TLB:" line of /proc/interrupts: one count per CPU (IPIs received), then the
/// description. Absent (arm64 has none): nothing.
pub fn parse_tlb_interrupts(text: &str) -> Snapshot {
    let mut out = Snapshot::new();
    let Some(line) = text.lines().find(|l| l.trim_start().starts_with("TLB:")) else {
        return out;
    };
    let counts: Vec<u64> = line
        .trim_start()
        .trim_start_matches("TLB:")
        .split_whitespace()
        .map_while(|f| f.parse().ok())
        .collect();
    for (cpu, c) in counts.iter().enumerate() {
        out.insert(format!("{TLB_IRQ}/cpu{cpu}"), *c);
    }
    out.insert(TLB_IRQ.to_string(), counts.iter().sum());
    out
}

/// Adds `khugepaged/pages_collapsed` and `khugepaged/full_scans`.
pub fn read_khugepaged_stats(thp_dir: &Path, out: &mut Snapshot) {
    for name in ["pages_collapsed", "full_scans"] {
        let path = thp_dir.join("khugepaged").join(name);
        if let Some(v) = fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            out.insert(format!("khugepaged/{name}"), v);
        }
    }
}

/// Adds `hugepages-<size>kB/stats/<stat>` for every size directory under `thp_dir`.
pub fn read_mthp_stats(thp_dir: &Path, out: &mut Snapshot) {
    let Ok(dirs) = fs::read_dir(thp_dir) else {
        return;
    };
    for dir in dirs.flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        if !name.starts_with("hugepages-") {
            continue;
        }
        let Ok(stats) = fs::read_dir(dir.path().join("stats")) else {
            continue;
        };
        for stat in stats.flatten() {
            let stat_name = stat.file_name().to_string_lossy().into_owned();
            if let Some(v) = fs::read_to_string(stat.path())
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                out.insert(format!("{name}/stats/{stat_name}"), v);
            }
        }
    }
}

/// Levels rather than events: their delta can be negative and is reported apart.
pub fn is_gauge(name: &str) -> bool {
    let stat = name.rsplit('/').next().unwrap_or(name);
    if name.starts_with("hugepages-") {
        return stat.starts_with("nr_");
    }
    // nr_tlb_* are events; nr_dirtied / nr_written are cumulative.
    stat.starts_with("nr_")
        && !stat.starts_with("nr_tlb_")
        && stat != "nr_dirtied"
        && stat != "nr_written"
}

/// (event counter deltas, gauge deltas) between two snapshots.
pub fn delta(
    before: &Snapshot,
    after: &Snapshot,
) -> (BTreeMap<String, u64>, BTreeMap<String, i64>) {
    let mut events = BTreeMap::new();
    let mut gauges = BTreeMap::new();
    for (name, &a) in after {
        let b = before.get(name).copied().unwrap_or(0);
        if is_gauge(name) {
            gauges.insert(name.clone(), a as i64 - b as i64);
        } else {
            events.insert(name.clone(), a.saturating_sub(b));
        }
    }
    (events, gauges)
}

/// Field names of /sys/block/zramN/mm_stat, in file order.
pub const ZRAM_MM_STAT: &[&str] = &[
    "orig_data_size",
    "compr_data_size",
    "mem_used_total",
    "mem_limit",
    "mem_used_max",
    "same_pages",
    "pages_compacted",
    "huge_pages",
    "huge_pages_since",
];
/// Field names of /sys/block/zramN/io_stat.
pub const ZRAM_IO_STAT: &[&str] = &["failed_reads", "failed_writes", "invalid_io", "notify_free"];

/// Whitespace-separated fields named in order; missing trailing fields are left out.
pub fn parse_fields(text: &str, names: &[&str], prefix: &str) -> BTreeMap<String, i64> {
    names
        .iter()
        .zip(text.split_whitespace())
        .filter_map(|(n, v)| Some((format!("{prefix}{n}"), v.parse().ok()?)))
        .collect()
}

/// zram's own statistics (a fresh device, so values are totals of the run).
pub fn zram_stats(id: u32) -> BTreeMap<String, i64> {
    let dir = format!("/sys/block/zram{id}");
    let mut out = BTreeMap::new();
    if let Ok(t) = fs::read_to_string(format!("{dir}/mm_stat")) {
        out.extend(parse_fields(&t, ZRAM_MM_STAT, "mm_stat/"));
    }
    if let Ok(t) = fs::read_to_string(format!("{dir}/io_stat")) {
        out.extend(parse_fields(&t, ZRAM_IO_STAT, "io_stat/"));
    }
    // /sys/block/<dev>/stat: reads and writes completed, sectors.
    if let Ok(t) = fs::read_to_string(format!("{dir}/stat")) {
        out.extend(parse_fields(
            &t,
            &[
                "stat/read_ios",
                "stat/read_merges",
                "stat/read_sectors",
                "stat/read_ticks",
                "stat/write_ios",
                "stat/write_merges",
                "stat/write_sectors",
            ],
            "",
        ));
    }
    out
}

/// MemAvailable from /proc/meminfo, bytes.
pub fn mem_available_bytes() -> Option<u64> {
    meminfo_bytes(&fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable")
}

pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmstat_lines() {
        let s =
            parse_vmstat("nr_free_pages 5901402\npswpout 12\nthp_swpout_fallback 0\nbad line\n");
        assert_eq!(s["pswpout"], 12);
        assert_eq!(s["nr_free_pages"], 5901402);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn mthp_stats_are_named_like_the_sim() {
        let dir = std::env::temp_dir().join(format!("foliosim-live-test-{}", std::process::id()));
        let stats = dir.join("hugepages-64kB/stats");
        fs::create_dir_all(&stats).unwrap();
        fs::write(stats.join("swpout"), "17\n").unwrap();
        fs::write(stats.join("nr_anon"), "3\n").unwrap();
        fs::create_dir_all(dir.join("khugepaged")).unwrap();
        fs::write(dir.join("khugepaged/pages_collapsed"), "5\n").unwrap();
        let mut s = Snapshot::new();
        read_mthp_stats(&dir, &mut s);
        assert_eq!(s["hugepages-64kB/stats/swpout"], 17);
        assert_eq!(s.len(), 2);
        read_khugepaged_stats(&dir, &mut s);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(s["khugepaged/pages_collapsed"], 5);
        assert!(!is_gauge("khugepaged/pages_collapsed"));
        // The sim's names are a subset of the kernel's.
        let sim = foliosim::mm::vmstat::VmStat::default().to_map();
        assert!(sim.contains_key("hugepages-64kB/stats/swpout"));
        assert!(sim.contains_key("khugepaged/pages_collapsed"));
    }

    #[test]
    fn deltas_split_events_and_gauges() {
        let before = parse_vmstat("pswpout 10\nnr_free_pages 100\nnr_tlb_remote_flush 5\n");
        let after = parse_vmstat("pswpout 25\nnr_free_pages 40\nnr_tlb_remote_flush 9\n");
        let (ev, g) = delta(&before, &after);
        assert_eq!(ev["pswpout"], 15);
        assert_eq!(ev["nr_tlb_remote_flush"], 4);
        assert_eq!(g["nr_free_pages"], -60);
        assert!(is_gauge("hugepages-64kB/stats/nr_anon"));
        assert!(!is_gauge("hugepages-64kB/stats/swpout"));
    }

    #[test]
    fn tlb_shootdowns_per_cpu() {
        let t = "           CPU0       CPU1\n  NMI:          0          0   Non-maskable interrupts\n TLB:    1579880    1604401   TLB shootdowns\n";
        let s = parse_tlb_interrupts(t);
        assert_eq!(s[&format!("{TLB_IRQ}/cpu1")], 1604401);
        assert_eq!(s[TLB_IRQ], 1579880 + 1604401);
        assert!(parse_tlb_interrupts("  NMI: 0 0\n").is_empty());
        assert!(!is_gauge(TLB_IRQ));
    }

    #[test]
    fn zram_and_meminfo_fields() {
        let z = parse_fields("4096 1024 8192 0 8192 1 0 0 0\n", ZRAM_MM_STAT, "mm_stat/");
        assert_eq!(z["mm_stat/compr_data_size"], 1024);
        assert_eq!(z["mm_stat/same_pages"], 1);
        let m = "MemTotal:       24576000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(meminfo_bytes(m, "MemAvailable"), Some(20_000_000 * 1024));
        assert_eq!(meminfo_bytes(m, "SwapTotal"), None);
    }
}
