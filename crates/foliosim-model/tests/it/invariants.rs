//! The invariant checker accepts a kernel driven through the public mm functions (faults,
//! memcg reclaim with swap-out, swap-in, zap) and catches each kind of corruption, naming it.

use foliosim_model::engine::Ctx;
use foliosim_model::mm::folio::{flags, SwapEntry, NIL};
use foliosim_model::mm::invariants::check;
use foliosim_model::mm::memory::{touch, zap_range};
use foliosim_model::mm::mmap::{Pte, ThpAdvice};
use foliosim_model::mm::swapfile::{swap_count, SWAPFILE_CLUSTER, SWAP_HAS_CACHE};
use foliosim_model::mm::Kernel;
use foliosim_model::Scenario;

/// 64 MiB machine, 16 MiB ramdisk swap, a 2 MiB memcg; 64K folios for MADV_HUGEPAGE VMAs.
const SMALL: &str = r#"
[machine]
cpus = 2
memory = "64M"

[[machine.swap]]
kind = "ramdisk"
size = "16M"

[kernel]
version = "6.10"

[sysfs.hugepages]
"64K" = "madvise"

[[memcg]]
name = "cg"
max = "2M"

[[workload]]
kind = "usemem"
nproc = 1
size = "4M"
memcg = "cg"
"#;

/// Pages per VMA: 4 MiB each, twice the memcg's limit together and alone.
const VMA_PAGES: u32 = 1024;

struct Sim {
    k: Kernel,
    ctx: Ctx<'static>,
}

impl Sim {
    fn touch_all(&mut self, mm: u32, vma: u32, first: u32, end: u32, check_each_step: bool) {
        let mut index = first;
        while index < end {
            self.ctx.step_start_ns = self.ctx.now_ns;
            self.ctx.cpu = (index as usize / 64) % 2;
            let covered =
                touch(&mut self.k, &mut self.ctx, mm, vma, index, end, true).expect("touch");
            assert!(covered > 0);
            index += covered;
            if check_each_step {
                check(&self.k).unwrap_or_else(|e| {
                    panic!("after touching page {index} of mm {mm} vma {vma}: {e}")
                });
            }
        }
    }
}

/// Two tasks in the memcg: mm 0 writes 4 MiB with 4K folios, mm 1 writes 4 MiB with 64K folios
/// (MADV_HUGEPAGE); the 2 MiB limit swaps most of it out. Then mm 0 reads its first pages back.
fn build(check_each_step: bool) -> Sim {
    let scenario = Scenario::from_toml_str(SMALL).unwrap();
    let mut k = Kernel::new(&scenario);
    let cg = k.memcg_id(Some("cg"));
    let a = k.new_mm(cg, foliosim_model::content::ContentClass::Usemem);
    let b = k.new_mm(cg, foliosim_model::content::ContentClass::Usemem);
    k.mms[a as usize].mmap(0, VMA_PAGES, ThpAdvice::Default);
    k.mms[b as usize].mmap(0, VMA_PAGES, ThpAdvice::Hugepage);
    let mut sim = Sim {
        k,
        ctx: Ctx::new(0, 0),
    };
    check(&sim.k).expect("fresh kernel");
    sim.touch_all(a, 0, 0, VMA_PAGES, check_each_step);
    sim.touch_all(b, 0, 0, VMA_PAGES, check_each_step);
    // Swap-ins of mm 0's first pages (swapped out long ago).
    sim.touch_all(a, 0, 0, 32, check_each_step);
    check(&sim.k).expect("driven kernel");
    sim
}

fn swap_ptes(k: &Kernel) -> Vec<(usize, usize, SwapEntry)> {
    let mut out = Vec::new();
    for (m, mm) in k.mms.iter().enumerate() {
        for (i, pte) in mm.vmas[0].as_ref().unwrap().ptes.iter().enumerate() {
            if pte.is_swap() {
                out.push((m, i, pte.swap_entry()));
            }
        }
    }
    out
}

fn present_ptes(k: &Kernel) -> Vec<(usize, usize, u32)> {
    let mut out = Vec::new();
    for (m, mm) in k.mms.iter().enumerate() {
        for (i, pte) in mm.vmas[0].as_ref().unwrap().ptes.iter().enumerate() {
            if pte.is_present() {
                out.push((m, i, pte.pfn()));
            }
        }
    }
    out
}

fn expect_broken(k: &Kernel, what: &str, needles: &[&str]) {
    let err = check(k)
        .err()
        .unwrap_or_else(|| panic!("corruption `{what}` not detected"));
    for n in needles {
        assert!(
            err.contains(n),
            "corruption `{what}`: message does not mention `{n}`: {err}"
        );
    }
}

#[test]
fn driven_kernel_is_consistent_at_every_step() {
    let sim = build(true);
    let k = &sim.k;
    let dev = &k.swap.devices[0].map;
    assert!(dev.inuse_pages > 0, "nothing swapped out");
    assert!(k.vmstat.to_map()["pswpout"] > 0);
    assert!(k.vmstat.to_map()["pswpin"] > 0, "no swap-in happened");
    assert!(
        k.vmstat.to_map()["hugepages-64kB/stats/swpout"] > 0,
        "no 64K folio swapped out whole"
    );
    assert!(
        k.memcgs[1].usage_pages <= 512,
        "memcg over its limit: {}",
        k.memcgs[1].usage_pages
    );
    let swap = swap_ptes(k);
    let present = present_ptes(k);
    assert!(!swap.is_empty() && !present.is_empty());
    assert_eq!(
        swap.len() as u64,
        k.mms.iter().map(|m| m.swap_ents).sum::<u64>()
    );
    assert_eq!(
        present.len() as u64,
        k.mms.iter().map(|m| m.rss_anon).sum::<u64>()
    );
}

#[test]
fn zapping_everything_leaves_nothing() {
    let mut sim = build(false);
    for mm in 0..2 {
        sim.ctx.step_start_ns = sim.ctx.now_ns;
        zap_range(&mut sim.k, &mut sim.ctx, mm, 0, 0, VMA_PAGES);
        check(&sim.k).unwrap_or_else(|e| panic!("after zapping mm {mm}: {e}"));
    }
    let k = &sim.k;
    assert_eq!(k.memcgs[1].usage_pages, 0);
    // Only slot-cache entries (allocated, or freed and waiting in the return buffer) may
    // still be held.
    let cached: u32 = k
        .swap
        .slot_cache
        .iter()
        .chain(&k.swap.slots_ret)
        .map(|c| c.len() as u32)
        .sum();
    assert_eq!(k.swap.devices[0].map.inuse_pages, cached);
}

#[test]
fn bumped_swap_map_count() {
    let mut sim = build(false);
    let (_, _, e) = swap_ptes(&sim.k)[0];
    sim.k.swap.devices[e.dev()].map.swap_map[e.offset() as usize] += 1;
    expect_broken(
        &sim.k,
        "swap_map count + 1",
        &[
            &format!("slot {}", e.offset()),
            "swap_map count 2",
            "1 swap PTEs",
        ],
    );
}

#[test]
fn lowered_swap_map_count() {
    let mut sim = build(false);
    let (_, _, e) = swap_ptes(&sim.k)[5];
    let b = &mut sim.k.swap.devices[e.dev()].map.swap_map[e.offset() as usize];
    assert_eq!(swap_count(*b), 1);
    *b = SWAP_HAS_CACHE;
    expect_broken(
        &sim.k,
        "swap_map count 1 -> HAS_CACHE",
        &[&format!("slot {}", e.offset()), "swap_map count 0"],
    );
}

#[test]
fn changed_mapcount() {
    for large in [false, true] {
        let mut sim = build(false);
        let f = &sim.k.folios;
        let head = present_ptes(&sim.k)
            .into_iter()
            .map(|(_, _, pfn)| f.head_of(pfn))
            .find(|&h| (f.order[h as usize] > 0) == large)
            .unwrap();
        *sim.k.folios.mapcount_mut(head as usize) += 1;
        expect_broken(
            &sim.k,
            "mapcount + 1",
            &[&format!("folio {head}"), "mapcount"],
        );
    }
}

#[test]
fn changed_memcg_usage() {
    let mut sim = build(false);
    sim.k.memcgs[1].usage_pages -= 1;
    expect_broken(&sim.k, "usage - 1", &["memcg cg", "usage"]);
    let mut sim = build(false);
    sim.k.memcgs[0].usage_pages += 3;
    expect_broken(&sim.k, "root usage + 3", &["memcg /", "usage 3 pages"]);
}

#[test]
fn cleared_present_pte() {
    // The PTE alone: the mm's rss no longer matches its page tables.
    let mut sim = build(false);
    let (m, i, _) = present_ptes(&sim.k)[3];
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::NONE;
    expect_broken(&sim.k, "present PTE cleared", &[&format!("mm {m}"), "rss"]);
    // PTE and rss together: the folio's mapcount no longer matches.
    let mut sim = build(false);
    let (m, i, pfn) = present_ptes(&sim.k)[3];
    let head = sim.k.folios.head_of(pfn);
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::NONE;
    sim.k.mms[m].rss_anon -= 1;
    expect_broken(
        &sim.k,
        "present PTE and rss cleared",
        &[&format!("folio {head}"), "mapcount"],
    );
}

#[test]
fn cleared_swap_pte() {
    let mut sim = build(false);
    let (m, i, e) = swap_ptes(&sim.k)[0];
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::NONE;
    expect_broken(
        &sim.k,
        "swap PTE cleared",
        &[&format!("mm {m}"), "swapents"],
    );
    let mut sim = build(false);
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::NONE;
    sim.k.mms[m].swap_ents -= 1;
    expect_broken(
        &sim.k,
        "swap PTE and swapents cleared",
        &[
            &format!("slot {}", e.offset()),
            "swap_map count 1 but 0 swap PTEs",
        ],
    );
}

#[test]
fn present_pte_to_wrong_page() {
    let mut sim = build(false);
    let present = present_ptes(&sim.k);
    let (m, i, pfn) = present[0];
    let (_, _, other) = *present
        .iter()
        .find(|p| sim.k.folios.head_of(p.2) != sim.k.folios.head_of(pfn))
        .unwrap();
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::present(other);
    expect_broken(
        &sim.k,
        "PTE maps another folio's page",
        &[&format!("pfn {other}"), "rmap"],
    );
}

#[test]
fn pte_to_free_page() {
    let mut sim = build(false);
    let free = sim.k.pgdat[0]
        .zone
        .free_bitmap()
        .iter()
        .position(|&f| f)
        .unwrap() as u32;
    let (m, i, _) = present_ptes(&sim.k)[0];
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::present(free);
    expect_broken(
        &sim.k,
        "PTE maps a free page",
        &[&format!("pfn {free}"), "in no folio"],
    );
}

#[test]
fn inuse_pages_off() {
    let mut sim = build(false);
    sim.k.swap.devices[0].map.inuse_pages += 1;
    expect_broken(&sim.k, "inuse_pages + 1", &["inuse_pages"]);
}

#[test]
fn has_cache_without_cache() {
    let mut sim = build(false);
    let (_, _, e) = swap_ptes(&sim.k)[0];
    let map = &mut sim.k.swap.devices[0].map;
    assert_eq!(
        map.swap_map[e.offset() as usize],
        1,
        "a swapped-out slot left the swap cache"
    );
    map.swap_map[e.offset() as usize] |= SWAP_HAS_CACHE;
    expect_broken(
        &sim.k,
        "stray HAS_CACHE",
        &[&format!("slot {}", e.offset()), "HAS_CACHE"],
    );
}

#[test]
fn swap_cache_points_at_wrong_folio() {
    let mut sim = build(false);
    let (_, _, e) = swap_ptes(&sim.k)[0];
    let (_, _, pfn) = present_ptes(&sim.k)[0];
    let map = &mut sim.k.swap.devices[0].map;
    map.swap_cache[e.offset() as usize] = sim.k.folios.head_of(pfn);
    map.swap_map[e.offset() as usize] |= SWAP_HAS_CACHE;
    expect_broken(
        &sim.k,
        "swap cache -> unrelated folio",
        &[&format!("slot {}", e.offset()), "does not own it"],
    );
}

#[test]
fn folio_off_the_lru() {
    let mut sim = build(false);
    let (_, _, pfn) = present_ptes(&sim.k)[0];
    let head = sim.k.folios.head_of(pfn);
    sim.k.folios.clear(head, flags::LRU);
    expect_broken(
        &sim.k,
        "LRU flag cleared",
        &[&format!("folio {head}"), "LRU"],
    );
}

#[test]
fn leaked_folio() {
    // A folio whose every PTE is gone (rss fixed up) but which was never freed.
    let mut sim = build(false);
    let (m, _, pfn) = present_ptes(&sim.k)[0];
    let head = sim.k.folios.head_of(pfn);
    let (vma, index, nr) = {
        let f = &sim.k.folios;
        (
            f.owner_vma(head as usize) as usize,
            f.owner_index(head as usize) as usize,
            f.nr_pages(head) as usize,
        )
    };
    assert_eq!(vma, 0);
    assert!(!sim.k.folios.test(head, flags::SWAPCACHE));
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[index..index + nr].fill(Pte::NONE);
    sim.k.mms[m].rss_anon -= nr as u64;
    sim.k.folios.set_mapcount(head as usize, 0);
    expect_broken(
        &sim.k,
        "unmapped folio not freed",
        &[&format!("folio {head}"), "leaked"],
    );
}

/// A shadow entry (mm/workingset.rs) left on a slot that was freed: the free should have
/// cleared it (swap_range_free).
#[test]
fn shadow_on_a_free_slot() {
    let mut sim = build(false);
    let map = &mut sim.k.swap.devices[0].map;
    let free = (1..map.max)
        .find(|&s| map.swap_map[s as usize] == 0)
        .unwrap();
    // Bit 31 marks a shadow, bit 0 is clear.
    map.swap_cache[free as usize] = 1 << 31 | 2;
    expect_broken(
        &sim.k,
        "shadow on a free slot",
        &[&format!("slot {free}"), "shadow"],
    );
}

/// A swap PTE moved to a slot in another cluster, swap_map and inuse_pages kept consistent with
/// it: only the allocator's cluster counts can tell, and the checker asks the allocator.
#[test]
fn allocator_bookkeeping_behind_swap_map() {
    let mut sim = build(false);
    let (m, i, e) = swap_ptes(&sim.k)[0];
    let map = &sim.k.swap.devices[0].map;
    assert_eq!(map.swap_map[e.offset() as usize], 1);
    let from_cluster = e.offset() / SWAPFILE_CLUSTER;
    let to = (1..map.max)
        .find(|&s| {
            map.swap_map[s as usize] == 0
                && s / SWAPFILE_CLUSTER != from_cluster
                && map.swap_cache[s as usize] == NIL
        })
        .unwrap();
    let map = &mut sim.k.swap.devices[0].map;
    map.swap_map[e.offset() as usize] = 0;
    map.swap_map[to as usize] = 1;
    // The slot's shadow entry moves with it.
    map.swap_cache.swap(e.offset() as usize, to as usize);
    sim.k.mms[m].vmas[0].as_mut().unwrap().ptes[i] = Pte::swap(SwapEntry::new(0, to));
    expect_broken(
        &sim.k,
        "slot moved behind the allocator's back",
        &["allocator", "cluster"],
    );
}
