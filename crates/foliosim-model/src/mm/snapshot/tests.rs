use super::*;
use crate::Scenario;

/// A small host: one 128 MiB zone, 64 pageblocks (a few unmovable and reclaimable), free
/// blocks of every kind the layout places.
const HOST: &str = "# test host
== /proc/buddyinfo ==
Node 0, zone   Normal     60      6      4     10      0      0      0      0      0      2      2
== /proc/pagetypeinfo ==
Page block order: 9
Free pages count per migrate type at order       0      1      2      3      4      5      6      7      8      9     10
Node    0, zone   Normal, type    Unmovable      0      6      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Movable     40      0      0     10      0      0      0      0      0      2      2
Node    0, zone   Normal, type  Reclaimable     20      0      4      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0      0      0      0      0      0
Node    0, zone   Normal, type      Isolate      0      0      0      0      0      0      0      0      0      0      0

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate
Node 0, zone   Normal            4           56            4            0            0
== /proc/meminfo ==
MemTotal:         131072 kB
MemFree:           26000 kB
== /proc/zoneinfo ==
Node 0, zone   Normal
  pages free     6500
        managed  32768
";

const SCENARIO: &str = r#"
seed = 1
[machine]
cpus = 2
memory = "64M"
[machine.start]
snapshot = "host.snap"
[machine.disk]
kind = "ssd"
size = "256M"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

fn loaded() -> Kernel {
    let s = Scenario::from_toml_str(SCENARIO).unwrap();
    let mut k = Kernel::new(&s);
    load(&mut k, "host.snap", HOST).unwrap();
    crate::mm::invariants::check(&k).unwrap();
    k
}

#[test]
fn a_snapshot_loads_scaled_free_lists_and_pageblock_types() {
    let k = loaded();
    let a = k.node_zone(0).free_area();
    // 64 MiB of the host's 128 MiB: half of every count.
    assert_eq!(a.nr_pageblocks[..3], [2, 28, 2]);
    let (u, m, r) = (
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
    );
    let want = [
        (m, 10, 1),
        (m, 9, 1),
        (m, 3, 5),
        (m, 0, 20),
        (u, 1, 3),
        (r, 0, 10),
        (r, 2, 2),
    ];
    for (mt, order, n) in want {
        assert_eq!(a.nr_blocks(order, mt), n, "{mt:?} order {order}");
    }
    let free: u64 = want.iter().map(|&(_, o, n)| (n as u64) << o).sum();
    assert_eq!(k.node_zone(0).nr_free_pages(), free);
    // The rest is in use: movable pageblocks' pages as page cache, the others' as kernel pages.
    let kernel = k.kmem.snapshot_pages.len() as u64;
    assert_eq!(kernel, 4 * 512 - (3 * 2 + 10 + 2 * 4));
    assert_eq!(k.pagecache.nr_pages, 16384 - free - kernel);
    assert_eq!(
        k.vm_events()
            .to_map()
            .get("pgalloc_normal")
            .copied()
            .unwrap_or(0),
        0
    );
}

#[test]
fn a_snapshot_start_is_deterministic() {
    let (a, b) = (loaded(), loaded());
    assert_eq!(a.node_zone(0).buddyinfo(), b.node_zone(0).buddyinfo());
    assert_eq!(a.kmem.snapshot_pages, b.kmem.snapshot_pages);
}

#[test]
fn parse_errors_name_the_file_line_and_field() {
    let e = HostSnapshot::parse("h.snap", &HOST.replace("Movable     40", "Movable     4x"))
        .unwrap_err();
    assert!(e.starts_with("h.snap:8: pagetypeinfo.free:"), "{e}");
    let e = HostSnapshot::parse("h.snap", &HOST.replace("managed  32768", "managed  lots"))
        .unwrap_err();
    assert!(e.starts_with("h.snap:21: zoneinfo.managed:"), "{e}");
    let e = HostSnapshot::parse(
        "h.snap",
        &HOST.replace("== /proc/meminfo ==", "== /proc/slabinfo =="),
    )
    .unwrap_err();
    assert!(
        e.contains("h.snap:15: section") && e.contains("allowed buddyinfo"),
        "{e}"
    );
    let s = Scenario::from_toml_str(SCENARIO).unwrap();
    let mut k = Kernel::new(&s);
    let e = load(
        &mut k,
        "h.snap",
        &HOST.replace("MemTotal:         131072", "MemTotal:         1"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("meminfo.MemTotal"), "{e}");
}

#[test]
fn a_capped_pagetypeinfo_count_comes_from_buddyinfo() {
    // pagetypeinfo prints ">100000" above 100000; buddyinfo has the zone's total.
    let big = HOST
        .replace("Normal     60 ", "Normal 150060 ")
        .replace("Movable     40 ", "Movable >100000 ")
        .replace("managed  32768", "managed  232768")
        .replace("131072 kB", "931072 kB");
    let s = HostSnapshot::parse("h.snap", &big).unwrap();
    assert_eq!(s.free_blocks[MigrateType::Movable as usize][0], 150040);
}
