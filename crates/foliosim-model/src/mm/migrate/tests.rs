//! migrate_pages on a small kernel, with targets straight from the allocator.

use super::*;
use crate::content::ContentClass;
use crate::mm::folio::SwapEntry;
use crate::mm::gfp::Gfp;
use crate::mm::gup::{pin_user_pages_fast, unpin_user_pages};
use crate::mm::invariants::check;
use crate::mm::memory::touch;
use crate::mm::mmap::ThpAdvice;
use crate::mm::page_alloc::alloc_pages;
use crate::mm::swap_state::folio_add_to_swap_cache;
use crate::scenario::Scenario;

const SMALL: &str = r#"
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "ssd"
size = "16M"
[kernel]
version = "6.18"
[sysfs.hugepages]
"64K" = "always"
"2M" = "always"
[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
"#;

/// Destinations from the allocator; orders above `max_order` fail (-ENOMEM).
struct FromAllocator {
    max_order: u32,
    allocated: u32,
    freed: u32,
}

impl MigrationTarget for FromAllocator {
    fn alloc(&mut self, k: &mut Kernel, ctx: &mut Ctx, order: u32) -> Option<u32> {
        if order > self.max_order {
            return None;
        }
        self.allocated += 1;
        alloc_pages(k, ctx, Gfp::GFP_HIGHUSER_MOVABLE, order)
    }
    fn free(&mut self, k: &mut Kernel, ctx: &mut Ctx, pfn: u32, order: u32) {
        self.freed += 1;
        k.pgdat[0].zone.free(ctx, pfn, order);
    }
}

fn target() -> FromAllocator {
    FromAllocator {
        max_order: 10,
        allocated: 0,
        freed: 0,
    }
}

/// A kernel with one mm whose VMA 0 (`thp`) has `pages` pages written.
fn setup(thp: ThpAdvice, pages: u32) -> (Kernel, Ctx<'static>, u32) {
    let mut k = Kernel::new(&Scenario::from_toml_str(SMALL).unwrap());
    let mut ctx = Ctx::new(0, 0);
    let mm = k.new_mm(0, ContentClass::Usemem);
    k.mms[mm as usize].mmap(0, pages, thp);
    let mut index = 0;
    while index < pages {
        index += touch(&mut k, &mut ctx, mm, 0, index, pages, true).unwrap();
    }
    (k, ctx, mm)
}

fn pfn_at(k: &Kernel, mm: u32, index: u32) -> u32 {
    k.mms[mm as usize].vma(0).ptes[index as usize].pfn()
}

/// Isolate the folios mapped at `indices` (their heads).
fn isolate(k: &mut Kernel, mm: u32, indices: &[u32]) -> Vec<u32> {
    indices
        .iter()
        .map(|&i| {
            let head = k.folios.head_of(pfn_at(k, mm, i));
            folio_isolate_lru(k, head);
            head
        })
        .collect()
}

#[test]
fn migrated_folios_move_their_ptes_state_and_lru_place() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::NoHugepage, 64);
    let old: Vec<u32> = (0..4).map(|i| pfn_at(&k, mm, i)).collect();
    let mut list = isolate(&mut k, mm, &[0, 1, 2, 3]);
    let (rc, succeeded) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut target(),
        MigrateMode::Async,
        MigrateReason::Compaction,
    );
    assert_eq!((rc, succeeded, list.len()), (Ok(0), 4, 0));
    for (i, &pfn) in old.iter().enumerate() {
        let new = pfn_at(&k, mm, i as u32);
        assert_ne!(new, pfn);
        assert!(k.folios.test(new, flags::LRU | flags::DIRTY));
        assert!(
            !k.folios.test(pfn, flags::ALLOCATED),
            "the old folio is freed"
        );
    }
    assert_eq!(k.vmstat.get(VmEvent::PgmigrateSuccess), 4);
    check(&k).unwrap();
}

#[test]
fn a_pinned_folio_fails_after_the_retries_and_is_left_to_put_back() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::NoHugepage, 16);
    pin_user_pages_fast(&mut k, &mut ctx, mm, 0, 1, 1).unwrap();
    let pinned = pfn_at(&k, mm, 1);
    let mut list = isolate(&mut k, mm, &[0, 1]);
    let mut t = target();
    let (rc, succeeded) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut t,
        MigrateMode::Async,
        MigrateReason::Compaction,
    );
    assert_eq!((rc, succeeded), (Ok(1), 1));
    assert_eq!(list, [pinned]);
    assert_eq!(
        t.allocated - t.freed,
        1,
        "a destination per try, given back"
    );
    assert_eq!(t.freed, NR_MAX_MIGRATE_PAGES_RETRY);
    assert_eq!(k.vmstat.get(VmEvent::PgmigrateFail), 1);
    putback_movable_pages(&mut k, &mut ctx, &list);
    assert_eq!(pfn_at(&k, mm, 1), pinned);
    unpin_user_pages(&mut k, &mut ctx, mm, 0, 1, 1);
    assert!(k.folios.pins.is_empty());
    check(&k).unwrap();
}

#[test]
fn writeback_fails_async_and_is_waited_for_in_full_sync() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::NoHugepage, 16);
    let pfn = pfn_at(&k, mm, 3);
    k.folios.set(pfn, flags::WRITEBACK);
    k.folios.set_writeback_done_ns(pfn, 5_000_000);
    for mode in [MigrateMode::Async, MigrateMode::SyncLight] {
        let mut list = isolate(&mut k, mm, &[3]);
        let (rc, _) = migrate_pages(
            &mut k,
            &mut ctx,
            &mut list,
            &mut target(),
            mode,
            MigrateReason::Compaction,
        );
        assert_eq!(rc, Ok(1), "{mode:?}");
        putback_movable_pages(&mut k, &mut ctx, &list);
    }
    let mut list = isolate(&mut k, mm, &[3]);
    let (rc, _) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut target(),
        MigrateMode::Sync,
        MigrateReason::Compaction,
    );
    assert_eq!(rc, Ok(0));
    assert!(
        ctx.iowait_ns > 0 && ctx.now_ns >= 5_000_000,
        "waited for the write"
    );
    assert_ne!(pfn_at(&k, mm, 3), pfn);
    check(&k).unwrap();
}

#[test]
fn a_folio_in_the_swap_cache_keeps_its_slots_pointing_at_it() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::Default, 32);
    let head = pfn_at(&k, mm, 16);
    assert_eq!(k.folios.order[head as usize], 4, "a 64K folio");
    let entry = k.swap.alloc(&mut ctx, &k.cost, 4).unwrap();
    folio_add_to_swap_cache(&mut k, &mut ctx, head, entry, None);
    let mut list = isolate(&mut k, mm, &[16]);
    let (rc, _) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut target(),
        MigrateMode::Async,
        MigrateReason::Compaction,
    );
    assert_eq!(rc, Ok(0));
    let new = pfn_at(&k, mm, 16);
    assert_ne!(new, head);
    assert!(k.folios.test(new, flags::SWAPCACHE));
    assert_eq!(k.folios.swap_entry(new), entry);
    assert_eq!(
        k.swap
            .lookup(SwapEntry::new(entry.dev(), entry.offset() + 15)),
        Some(new)
    );
    check(&k).unwrap();
}

#[test]
fn a_thp_without_a_destination_is_split_and_its_pages_migrated() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::Hugepage, 512);
    let head = pfn_at(&k, mm, 0);
    assert_eq!(k.folios.order[head as usize], 9);
    let mut list = isolate(&mut k, mm, &[0]);
    let mut t = target();
    t.max_order = 0;
    let (rc, succeeded) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut t,
        MigrateMode::Async,
        MigrateReason::Compaction,
    );
    assert_eq!(rc, Ok(0), "every page of the split THP moved");
    assert_eq!(succeeded, 512);
    let v = &k.vmstat;
    assert_eq!(
        (
            v.get(VmEvent::ThpMigrationSplit),
            v.get(VmEvent::ThpMigrationFail),
            v.get(VmEvent::ThpMigrationSuccess)
        ),
        (1, 1, 0)
    );
    assert!((0..512).all(|i| pfn_at(&k, mm, i) != head + i));
    check(&k).unwrap();
}

#[test]
fn a_thp_migrates_whole_with_its_pmd() {
    let (mut k, mut ctx, mm) = setup(ThpAdvice::Hugepage, 512);
    let head = pfn_at(&k, mm, 0);
    assert!(k.folios.test(head, flags::PMD_MAPPED));
    let mut list = isolate(&mut k, mm, &[0]);
    let (rc, succeeded) = migrate_pages(
        &mut k,
        &mut ctx,
        &mut list,
        &mut target(),
        MigrateMode::Async,
        MigrateReason::Compaction,
    );
    assert_eq!((rc, succeeded), (Ok(0), 512));
    let new = pfn_at(&k, mm, 0);
    assert!(k.folios.test(new, flags::PMD_MAPPED) && k.folios.order[new as usize] == 9);
    assert_eq!(k.vmstat.get(VmEvent::ThpMigrationSuccess), 1);
    check(&k).unwrap();
}
