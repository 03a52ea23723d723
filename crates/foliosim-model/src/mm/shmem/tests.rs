//! Unit tests of shmem: allocation orders, swap-out and swap-in, truncation.

use super::*;
use crate::mm::invariants;
use crate::mm::vmscan::{putback_folios, shrink_folio_list, Reclaim};

fn kernel(version: &str, huge: &str, swap: &str) -> (Kernel, Ctx<'static>) {
    kernel_with(version, huge, swap, "")
}

/// `kernel` with `extra` TOML (a `[sysfs…]` table) appended.
fn kernel_with(version: &str, huge: &str, swap: &str, extra: &str) -> (Kernel, Ctx<'static>) {
    let text = format!(
        r#"
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "ssd"
size = "{swap}"
profile = "nvme"
[kernel]
version = "{version}"
[[tmpfs]]
name = "t"
size = "8M"
huge = "{huge}"
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
{extra}"#
    );
    let k = Kernel::new(&Scenario::from_toml_str(&text).unwrap());
    (k, Ctx::new(0, 0))
}

fn target(inode: u32) -> WriteTarget {
    WriteTarget {
        mount: 0,
        inode,
        memcg: 0,
        content: ContentClass::Usemem,
    }
}

fn write(k: &mut Kernel, ctx: &mut Ctx, inode: u32, nr: u32) {
    let mut done = 0;
    while done < nr {
        done += shmem_write_step(k, ctx, target(inode), done, nr).unwrap();
    }
}

/// Reclaim the folio at `pfn` as shrink_inactive_list would, then let its write complete.
fn reclaim(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> u64 {
    let nid = k.nodes.nid(pfn);
    k.memcgs[0].lruvec_mut(nid).del_folio(&mut k.folios, pfn);
    let r = shrink_folio_list(k, ctx, vec![pfn], Reclaim::Global, 0);
    putback_folios(k, ctx, &r.putback, true);
    ctx.now_ns += 1_000_000_000;
    r.nr_pageout
}

#[test]
fn huge_always_on_6_18_tries_the_pmd_size_first_and_within_size_follows_i_size() {
    let (mut k, mut ctx) = kernel("6.18", "always", "16M");
    write(&mut k, &mut ctx, 0, 3);
    let pfn = k.shmem.inode(0).unwrap().folios[0];
    assert_eq!(k.folios.order[pfn as usize] as u32, PMD_ORDER);
    assert_eq!(k.shmem.stats.thp_file_alloc, 1);
    assert_eq!((k.shmem.nr_pages, k.shmem.nr_thp_pages), (512, 512));
    invariants::check(&k).unwrap();

    let (mut k, mut ctx) = kernel("6.18", "within_size", "16M");
    // 20 pages: the largest order whose aligned end is within i_size is 16 pages (64K).
    write(&mut k, &mut ctx, 0, 20);
    let i = k.shmem.inode(0).unwrap();
    assert_eq!(k.folios.order[i.folios[0] as usize], 4);
    assert_eq!(k.folios.order[i.folios[16] as usize], 2);
    assert_eq!(k.shmem.stats.get_mthp(4, "shmem_alloc"), 1);
    invariants::check(&k).unwrap();
}

#[test]
fn per_size_shmem_enabled_does_not_change_what_a_tmpfs_write_allocates() {
    // shmem_allowable_huge_orders: without an anonymous shmem VMA, the mount's huge= decides.
    let always_64k = "[sysfs.hugepages_shmem]\n\"64K\" = \"always\"\n";
    let (mut k, mut ctx) = kernel_with("6.18", "never", "16M", always_64k);
    write(&mut k, &mut ctx, 0, 32);
    let i = k.shmem.inode(0).unwrap();
    assert!(i.folios[..32]
        .iter()
        .all(|&p| k.folios.order[p as usize] == 0));
    assert_eq!(k.shmem.stats.get_mthp(4, "shmem_alloc"), 0);

    let never_64k = "[sysfs.hugepages_shmem]\n\"64K\" = \"never\"\n\"2M\" = \"never\"\n";
    let (mut k, mut ctx) = kernel_with("6.18", "within_size", "16M", never_64k);
    write(&mut k, &mut ctx, 0, 20);
    let i = k.shmem.inode(0).unwrap();
    assert_eq!(k.folios.order[i.folios[0] as usize], 4);
    assert_eq!(k.shmem.stats.get_mthp(4, "shmem_alloc"), 1);
    invariants::check(&k).unwrap();
}

#[test]
fn before_6_14_huge_always_is_pmd_only_and_never_gives_order_0() {
    let (mut k, mut ctx) = kernel("6.12", "within_size", "16M");
    write(&mut k, &mut ctx, 0, 20);
    let i = k.shmem.inode(0).unwrap();
    assert_eq!(
        k.folios.order[i.folios[0] as usize], 0,
        "20 pages < the PMD size"
    );
    let (mut k, mut ctx) = kernel("6.18", "never", "16M");
    write(&mut k, &mut ctx, 0, 600);
    assert_eq!(k.shmem.nr_thp_pages, 0);
    assert_eq!(k.memcgs[0].usage_pages, 600);
}

#[test]
fn a_large_folio_swaps_out_whole_and_reads_back_a_page_at_a_time() {
    let (mut k, mut ctx) = kernel("6.18", "within_size", "16M");
    write(&mut k, &mut ctx, 0, 16);
    let pfn = k.shmem.inode(0).unwrap().folios[0];
    assert_eq!(reclaim(&mut k, &mut ctx, pfn), 16);
    assert_eq!(k.vmstat.get_mthp(4, crate::mm::vmstat::MthpStat::Swpout), 1);
    let i = k.shmem.inode(0).unwrap();
    assert_eq!((i.nr_pages, i.swapped, k.shmem.nr_pages), (0, 16, 0));
    invariants::check(&k).unwrap();
    // A second look frees the written folio; the inode's entries hold the slots.
    let nid = k.nodes.nid(pfn);
    k.memcgs[0]
        .lruvec_mut(nid)
        .end_writeback(&mut k.folios, ctx.now_ns);
    if k.folios.test(pfn, flags::SWAPCACHE) {
        reclaim(&mut k, &mut ctx, pfn);
    }
    assert_eq!(k.swap.devices[0].map.inuse_pages, 16);
    invariants::check(&k).unwrap();
    let mut read = 0;
    while read < 16 {
        read += shmem_read_step(&mut k, &mut ctx, 0, 0, read, 16).unwrap();
    }
    let i = k.shmem.inode(0).unwrap();
    assert_eq!((i.nr_pages, i.swapped), (16, 0));
    assert_eq!(
        k.swap.devices[0].map.inuse_pages, 0,
        "swap-in frees the slots"
    );
    invariants::check(&k).unwrap();
}

#[test]
fn without_slots_for_the_whole_folio_it_splits_and_6_18_counts_no_fallback() {
    // memory.swap.max of 32K: the 64K folio gets no slots, its pages get one each.
    let text = r#"
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "ssd"
size = "16M"
[kernel]
version = "6.18"
[[memcg]]
name = "m"
swap_max = "32K"
[[tmpfs]]
name = "t"
huge = "within_size"
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
memcg = "m"
"#;
    let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
    let mut ctx = Ctx::new(0, 0);
    let w = WriteTarget {
        memcg: 1,
        ..target(0)
    };
    shmem_write_step(&mut k, &mut ctx, w, 0, 16).unwrap();
    let pfn = k.shmem.inode(0).unwrap().folios[0];
    assert_eq!(k.folios.order[pfn as usize], 4);
    k.memcgs[1].lruvec_mut(0).del_folio(&mut k.folios, pfn);
    let r = shrink_folio_list(&mut k, &mut ctx, vec![pfn], Reclaim::Memcg, 1);
    putback_folios(&mut k, &mut ctx, &r.putback, true);
    use crate::mm::vmstat::MthpStat;
    assert_eq!(k.vmstat.get_mthp(4, MthpStat::Split), 1, "split to order 0");
    assert_eq!(
        k.vmstat.get_mthp(4, MthpStat::SwpoutFallback),
        0,
        "6.18 counts none"
    );
    let i = k.shmem.inode(0).unwrap();
    // The tails join reclaim's list: pages go to swap until swap.max (8 pages) is reached.
    assert_eq!((i.swapped, i.nr_pages), (8, 8));
    invariants::check(&k).unwrap();
}

#[test]
fn unlink_frees_folios_swap_entries_and_the_mounts_blocks() {
    let (mut k, mut ctx) = kernel("6.18", "never", "16M");
    write(&mut k, &mut ctx, 0, 8);
    let pfn = k.shmem.inode(0).unwrap().folios[3];
    reclaim(&mut k, &mut ctx, pfn);
    assert_eq!(k.shmem.mounts[0].used_pages, 8);
    shmem_unlink(&mut k, &mut ctx, 0).unwrap();
    assert_eq!((k.shmem.nr_pages, k.shmem.mounts[0].used_pages), (0, 0));
    // The page under writeback stays in the swap cache until reclaim meets it again.
    assert_eq!(k.memcgs[0].usage_pages, 1);
    invariants::check(&k).unwrap();
}

#[test]
fn a_full_mount_refuses_the_write() {
    let (mut k, mut ctx) = kernel("6.18", "never", "16M");
    let e = (0..3000)
        .try_for_each(|x| shmem_write_step(&mut k, &mut ctx, target(0), x, x + 1).map(|_| ()));
    assert_eq!(e, Err(MmError::TmpfsFull { mount: 0 }));
    assert_eq!(k.shmem.mounts[0].used_pages, 2048);
}
