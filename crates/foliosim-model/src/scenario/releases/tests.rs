use super::*;

fn r(text: &str) -> Release {
    Release::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn table_is_indexed_by_change_and_oldest_first() {
    for (i, row) in TABLE.iter().enumerate() {
        assert_eq!(row.change as usize, i, "{}", row.name);
        assert_eq!(row.change.row().name, row.name);
    }
    assert!(TABLE.windows(2).all(|w| w[0].release <= w[1].release));
    assert!(TABLE.iter().all(|row| row.release.is_known()));
}

/// Each row is off in the release before it landed and on in the release it landed in.
#[test]
fn each_row_switches_at_its_release() {
    let all: Vec<Release> = Release::all().collect();
    for row in &TABLE {
        let at = all.iter().position(|r| *r == row.release).unwrap();
        assert!(all[at].has(row.change), "{} at {}", row.name, row.release);
        if at > 0 {
            assert!(
                !all[at - 1].has(row.change),
                "{} before {}",
                row.name,
                all[at - 1]
            );
        }
    }
}

#[test]
fn parses_every_real_release_in_range() {
    for text in [
        "4.1", "4.4", "4.20", "5.0", "5.4", "5.19", "6.0", "6.6", "6.7", "6.11", "6.14",
    ] {
        assert_eq!(r(text).to_string(), text);
    }
    assert_eq!(r("6.10"), Release::V6_10);
    assert_eq!((r("5.15").major(), r("5.15").minor()), (5, 15));
    assert_eq!(Release::all().count(), 20 + 20 + 19);
    assert_eq!(Release::all().next(), Some(Release::MIN));
    assert_eq!(Release::all().last(), Some(Release::MAX));
}

#[test]
fn refuses_what_is_not_a_release_in_range() {
    for text in [
        "3.10", "4.0", "4.21", "5.20", "6.19", "7.0", "abc", "", "6", "6.", ".9", "6.9.1", "6.-1",
        "+6.9", "06.9x", "300.1",
    ] {
        let e = Release::parse(text).unwrap_err().to_string();
        assert!(
            e.contains("kernel.version") && e.contains(&format!("`{text}`")) && e.contains("6.18"),
            "{text}: {e}"
        );
    }
}

#[test]
fn orders_by_major_then_minor() {
    assert!(r("6.9") < r("6.10"));
    assert!(r("4.20") < r("5.0"));
    assert!(r("5.19") < r("6.0"));
    assert!(Release::V4_1 < Release::V6_9 && Release::V6_12 < Release::V6_18);
}

#[derive(serde::Serialize, serde::Deserialize)]
struct K {
    version: Release,
}

#[test]
fn serializes_as_the_string_it_was_written_as() {
    let k: K = toml::from_str("version = \"6.10\"").unwrap();
    assert_eq!(k.version, Release::V6_10);
    assert_eq!(toml::to_string(&k).unwrap(), "version = \"6.10\"\n");
    assert_eq!(serde_json::to_string(&k).unwrap(), r#"{"version":"6.10"}"#);
    let e = toml::from_str::<K>("version = 6.10")
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("kernel.version") && e.contains("\"6.10\""),
        "{e}"
    );
    let e = toml::from_str::<K>("version = \"6.19\"")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("kernel.version") && e.contains("6.19"), "{e}");
}

/// The profiles the model had before the table, unchanged at its five releases.
#[test]
fn derived_defaults_at_the_old_releases() {
    type A = SwapAllocatorKind;
    let alloc = |v: Release| v.swap_allocator().0;
    assert_eq!(alloc(Release::V4_1), A::Legacy);
    assert_eq!(alloc(Release::V6_9), A::Legacy);
    assert_eq!(alloc(Release::V6_10), A::PercpuOrder);
    assert_eq!(alloc(Release::V6_12), A::ClusterListsC12);
    assert_eq!(alloc(Release::V6_18), A::ClusterListsC18);
    assert_eq!(alloc(r("6.13")), A::ClusterListsC12);
    assert_eq!(alloc(r("6.14")), A::ClusterListsC12);
    assert_eq!(alloc(r("6.15")), A::ClusterListsC18);
    assert_eq!(
        Release::V6_12.zswap_large_folios(),
        ZswapLargeFolios::Reject
    );
    assert_eq!(
        Release::V6_18.zswap_large_folios(),
        ZswapLargeFolios::PerPage
    );
    assert_eq!(Release::V4_1.thp_defrag(), ThpDefrag::Always);
    assert_eq!(Release::V6_9.thp_defrag(), ThpDefrag::Madvise);
    // Every row is off at 4.1 and on at 6.18, except those at 6.13+ which are off before 6.18.
    for row in &TABLE {
        assert!(!Release::V4_1.has(row.change), "{}", row.name);
        assert!(Release::V6_18.has(row.change), "{}", row.name);
    }
}
