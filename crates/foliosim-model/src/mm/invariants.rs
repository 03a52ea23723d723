//! The model's invariants, checked between steps when the scenario asks (always in tests):
//! every physical page is free (on exactly one buddy or per-CPU list, at its order and
//! pageblock type) or in exactly one live folio (so migration conserves pages); every live
//! folio is on its memcg's LRU (none left isolated for migration) and mapped or in the swap
//! cache; pins are on live folios; pageblock skip bits only on the zone's pageblocks; PTEs
//! and mapcounts agree; every swap_map count equals the swap PTEs that reference the slot, and
//! HAS_CACHE equals swap-cache presence; memcg usage and LRU sizes add up; each allocator's
//! cluster bookkeeping matches swap_map; every swapped page not in the swap cache is in
//! exactly one of zswap, the device or the zero map, and pages held by zsmalloc pools and RAM
//! disks are neither free nor in a folio. A PMD-mapped folio (fault or khugepaged collapse) is
//! one whole order-9 folio; each memcg's deferred split queue holds exactly the partially
//! mapped large folios of that memcg. Page-cache folios (check_page_cache): every cached slot
//! holds a live FILE folio whose owner points back and every FILE folio is in its slot; the
//! node's page-cache, mapped, dirty and swap-cache counts match the folios; a file's dirty
//! tags are its dirty pages; i_mmap lists the file VMAs; file PTEs map the page of their file
//! offset. The TLB model's hot sets fit their TLBs and its counters add up; every page of an
//! Access-ed range that is not plainly mapped is in the range's special set.

use super::folio::{flags, NIL};
use super::swap_devstore::RamStore;
use super::swapfile::{swap_count, SlotData, SWAP_HAS_CACHE, SWAP_MAP_BAD};
use super::vmscan::lru_gen;
use super::workingset::{slot_folio, slot_shadow};
use super::Kernel;

/// The ledger's buckets add up to the tasks' CPU time (`user_ns + sys_ns`), and its user
/// buckets to their user time: no CPU time is charged without a bucket, none twice.
pub fn check_cpu_time_booked(
    ledger: &crate::engine::CpuLedger,
    cpu_ns: u64,
    user_ns: u64,
) -> Result<(), String> {
    use crate::cpu_cost::CpuCost;
    let booked_ns = ledger.total_ns();
    let booked_user_ns: u64 = CpuCost::ALL
        .iter()
        .filter(|c| c.is_user())
        .map(|&c| ledger.ns(c.into()))
        .sum();
    if (booked_ns, booked_user_ns) != (cpu_ns, user_ns) {
        return Err(format!(
            "CPU time by bucket {booked_ns} ns (user {booked_user_ns}) != the tasks' {cpu_ns} ns \
             (user {user_ns})"
        ));
    }
    Ok(())
}

pub fn check(k: &Kernel) -> Result<(), String> {
    let free = free_pages(k)?;
    super::invariants_node::check(k, &free)?;
    let held = held_pages(k, &free)?;
    check_io_times(k)?;
    let (owner, memcg_pages) = check_folio_coverage(k, &free, &held)?;
    check_migrc(k, &free)?;
    check_writeback(k)?;
    check_pins(k)?;
    check_memcg_counters(k, &memcg_pages)?;
    check_lru_lists(k, &memcg_pages)?;
    let swap_refs = check_ptes(k, &owner)?;
    check_thp(k)?;
    check_page_cache(k)?;
    super::invariants_shmem::check(k)?;
    check_swap_maps(k, &swap_refs)?;
    check_tlb_and_access(k)?;
    Ok(())
}

/// The allocator's own bookkeeping (buddy lists, pageblock types, pcp lists), and which pages
/// it holds free, node by node.
fn free_pages(k: &Kernel) -> Result<Vec<bool>, String> {
    let mut free = vec![false; k.nodes.total_pages() as usize];
    for nid in 0..k.nodes.nr_nodes() {
        let zone_free = k
            .node_zone(nid)
            .check()
            .map_err(|e| format!("page allocator of node {nid}: {e}"))?;
        let span = k.nodes.start_pfn[nid] as usize..k.nodes.start_pfn[nid + 1] as usize;
        if zone_free
            .iter()
            .enumerate()
            .any(|(p, &fr)| fr && !span.contains(&p))
        {
            return Err(format!(
                "node {nid}'s zone holds a free page outside the node"
            ));
        }
        for p in span {
            free[p] |= zone_free[p];
        }
    }
    Ok(free)
}

/// Pages the kernel holds outside folios: zsmalloc pools (zswap, zram), brd, khugepaged's
/// preallocated THP and kernel memory; each held once and none free.
fn held_pages(k: &Kernel, free: &[bool]) -> Result<Vec<bool>, String> {
    let mut held = vec![false; free.len()];
    k.zswap
        .pool
        .check()
        .map_err(|e| format!("zswap pool: {e}"))?;
    for (d, dev) in k.swap.devices.iter().enumerate() {
        if let RamStore::Zram(z) = &dev.store {
            z.pool.check().map_err(|e| format!("zram {d} pool: {e}"))?;
        }
    }
    // khugepaged's THP kept by the thp-avail-nodes fault policy for its next collapse.
    let prealloc = k
        .thp_avail
        .prealloc
        .map(|p| p..p + (1 << crate::scenario::PMD_ORDER));
    for p in prealloc.into_iter().flatten() {
        held[p as usize] = true;
    }
    let pools = std::iter::once(k.zswap.pool.page_pfns())
        .chain(k.swap.devices.iter().map(|d| d.store.pfns()));
    for pfns in pools {
        for p in pfns {
            if free[p as usize] || std::mem::replace(&mut held[p as usize], true) {
                return Err(format!(
                    "pfn {p} held by a swap store is also free or held twice"
                ));
            }
        }
    }
    // Kernel memory (mm/kmem.rs): slab, page-table and stack pages, each held once.
    k.kmem.check().map_err(|e| format!("kernel memory: {e}"))?;
    for (pfn, order) in k.kmem.held_blocks() {
        for p in pfn..pfn + (1 << order) {
            if free[p as usize] || std::mem::replace(&mut held[p as usize], true) {
                return Err(format!(
                    "pfn {p} held as kernel memory is also free or held twice"
                ));
            }
        }
    }
    Ok(held)
}

/// A completion time exactly for the folios under writeback or read (mm/folio.rs); scattered
/// swap slots only on swap-cache folios, one per page.
fn check_io_times(k: &Kernel) -> Result<(), String> {
    let f = &k.folios;
    let io = flags::WRITEBACK | flags::LOCKED;
    if let Some(p) = f.writeback_done_pfns().find(|&p| !f.test(p, io)) {
        return Err(format!("pfn {p} has a writeback time but is under no I/O"));
    }
    let under_io = f.flags.iter().filter(|&&fl| fl & io != 0).count();
    if under_io != f.writeback_done_pfns().count() {
        return Err(format!(
            "{under_io} folios under writeback or read, {} writeback times",
            f.writeback_done_pfns().count()
        ));
    }
    for (&head, slots) in &f.scattered {
        if !f.test(head, flags::SWAPCACHE) || slots.len() as u32 != f.nr_pages(head) {
            return Err(format!(
                "folio {head} has {} scattered swap slots but is not in the swap cache with as many pages",
                slots.len()
            ));
        }
    }
    Ok(())
}

/// Pages: free, held, or covered by exactly one live folio. Returns each page's folio head
/// (NIL if none) and the pages each memcg's folios hold.
fn check_folio_coverage(
    k: &Kernel,
    free: &[bool],
    held: &[bool],
) -> Result<(Vec<u32>, Vec<u64>), String> {
    let nr = free.len();
    let f = &k.folios;
    let mut owner = vec![NIL; nr];
    let mut memcg_pages = vec![0u64; k.memcgs.len()];
    let mut pfn = 0usize;
    while pfn < nr {
        if f.test(pfn as u32, flags::ALLOCATED) {
            let n = f.nr_pages(pfn as u32) as usize;
            for p in pfn..pfn + n {
                if free[p] || held[p] {
                    return Err(format!("pfn {p} is free and inside folio {pfn}"));
                }
                if p > pfn && f.flags[p] != 0 {
                    return Err(format!(
                        "tail pfn {p} of folio {pfn} carries flags {:#x}",
                        f.flags[p]
                    ));
                }
                owner[p] = pfn as u32;
            }
            memcg_pages[f.memcg(pfn) as usize] += n as u64;
            check_live_folio(k, pfn)?;
            pfn += n;
        } else {
            if !free[pfn] && !held[pfn] {
                return Err(format!("pfn {pfn} is neither free nor in a folio: lost"));
            }
            pfn += 1;
        }
    }
    Ok((owner, memcg_pages))
}

/// A live folio between steps: not isolated, on an LRU, and mapped or cached (else leaked).
fn check_live_folio(k: &Kernel, pfn: usize) -> Result<(), String> {
    let f = &k.folios;
    let fl = f.flags[pfn];
    if fl & flags::ISOLATED != 0 {
        return Err(format!(
            "folio {pfn} is isolated for migration between steps (LRU: {})",
            fl & flags::LRU != 0
        ));
    }
    if fl & flags::LRU == 0 {
        return Err(format!("folio {pfn} is not on an LRU list between steps"));
    }
    if f.mapcount(pfn) == 0
        && fl & (flags::SWAPCACHE | flags::FILE) == 0
        && !super::shmem::is_shmem(k, pfn as u32)
    {
        return Err(format!(
            "folio {pfn} (order {}) is neither mapped nor in the swap cache: leaked",
            f.order[pfn]
        ));
    }
    Ok(())
}

/// Pins are held on live folios only.
fn check_pins(k: &Kernel) -> Result<(), String> {
    let f = &k.folios;
    for (&head, &pins) in &f.pins {
        if !f.test(head, flags::ALLOCATED) || pins == 0 {
            return Err(format!(
                "{pins} pins on pfn {head}, which heads no live folio"
            ));
        }
    }
    Ok(())
}

/// One LRU list as the check sees it: the list, whether it is a file list, whether an
/// active one, its node, and its MGLRU generation (None for the classic lists).
type LruListRef<'a> = (&'a super::lruvec::LruList, bool, bool, usize, Option<usize>);

/// LRU lists hold exactly the live folios of their memcg.
fn check_lru_lists(k: &Kernel, memcg_pages: &[u64]) -> Result<(), String> {
    for (id, cg) in k.memcgs.iter().enumerate() {
        for cg_lv in cg.lruvecs() {
            cg_lv
                .lrugen
                .check()
                .map_err(|e| format!("memcg {}: {e}", cg.name))?;
            if !cg_lv.lrugen.enabled && cg_lv.lrugen.nr_pages() > 0 {
                return Err(format!(
                    "memcg {}: folios on generations with MGLRU off",
                    cg.name
                ));
            }
        }
        let mut lru_pages = 0;
        for list in memcg_lru_lists(cg) {
            lru_pages += check_lru_list(k, id, &cg.name, list)?;
        }
        if lru_pages != memcg_pages[id] {
            return Err(format!(
                "memcg {}: LRU holds {lru_pages} pages, charged {}",
                cg.name, memcg_pages[id]
            ));
        }
    }
    Ok(())
}

/// Every LRU list of a memcg, node by node: the four classic lists, then the MGLRU
/// generations (every folio on a generation list has that generation, so lies between its
/// type's min_seq and max_seq, lru_gen::LruGen::check, and no PG_active).
fn memcg_lru_lists(cg: &super::memcontrol::MemCgroup) -> impl Iterator<Item = LruListRef<'_>> {
    cg.lruvecs().enumerate().flat_map(|(nid, lv)| {
        [
            (&lv.inactive_anon, false, false, nid, None),
            (&lv.active_anon, false, true, nid, None),
            (&lv.inactive_file, true, false, nid, None),
            (&lv.active_file, true, true, nid, None),
        ]
        .into_iter()
        .chain((0..lru_gen::MAX_NR_GENS as usize).flat_map(move |gen| {
            [false, true].map(|file| {
                (
                    &lv.lrugen.folios[gen][file as usize],
                    file,
                    false,
                    nid,
                    Some(gen),
                )
            })
        }))
    })
}

/// One LRU list: each folio belongs to it (memcg, type, activity, node, generation) and the
/// list's page count is right. Returns the pages it holds.
fn check_lru_list(k: &Kernel, id: usize, name: &str, l: LruListRef<'_>) -> Result<u64, String> {
    let f = &k.folios;
    let (list, file, active, nid, gen) = l;
    let mut pages = 0;
    for head in list.iter(f) {
        if f.memcg(head as usize) as usize != id
            || f.test(head, flags::ACTIVE) != active
            || f.test(head, flags::FILE) != file
            || k.nodes.nid(head) != nid
            || lru_gen::folio_lru_gen(f, head) != gen
        {
            return Err(format!(
                "folio {head} is on the wrong LRU list of memcg {name}"
            ));
        }
        pages += f.nr_pages(head) as u64;
    }
    if pages != list.nr_pages {
        return Err(format!(
            "memcg {name} LRU list counts {} pages, holds {pages}",
            list.nr_pages
        ));
    }
    Ok(pages)
}

/// PTEs: present PTEs map the right page of a folio owned here, mapcounts equal the PTEs
/// mapping each folio; swap PTEs are counted per slot (returned for the swap_map check).
fn check_ptes(k: &Kernel, owner: &[u32]) -> Result<Vec<Vec<u8>>, String> {
    let f = &k.folios;
    let mut mapped = vec![0u32; owner.len()];
    let mut swap_refs: Vec<Vec<u8>> = k
        .swap
        .devices
        .iter()
        .map(|d| vec![0u8; d.map.swap_map.len()])
        .collect();
    super::shmem::swap::count_swap_refs(&k.shmem, &mut swap_refs)?;
    for mm_id in 0..k.mms.len() {
        check_mm_ptes(k, mm_id, owner, &mut mapped, &mut swap_refs)?;
    }
    for (h, &ptes) in mapped.iter().enumerate() {
        if f.test(h as u32, flags::ALLOCATED) && f.mapcount(h) as u32 != ptes {
            return Err(format!(
                "folio {h}: mapcount {} but {ptes} PTEs map it",
                f.mapcount(h)
            ));
        }
    }
    Ok(swap_refs)
}

/// One mm's page tables against its rss counters; an exited OOM victim has no VMAs left.
fn check_mm_ptes(
    k: &Kernel,
    mm_id: usize,
    owner: &[u32],
    mapped: &mut [u32],
    swap_refs: &mut [Vec<u8>],
) -> Result<(), String> {
    let mm = &k.mms[mm_id];
    let (mut rss, mut swapents, mut rss_file) = (0u64, 0u64, 0u64);
    for (vma_id, vma) in mm.vmas.iter().enumerate() {
        let Some(vma) = vma else { continue };
        for (index, pte) in vma.ptes.iter().enumerate() {
            if pte.is_present() {
                let at = (mm_id, vma_id, index);
                let is_file = check_present_pte(k, at, pte.pfn() as usize, owner)?;
                mapped[owner[pte.pfn() as usize] as usize] += 1;
                if is_file {
                    rss_file += 1;
                } else {
                    rss += 1;
                }
            } else if pte.is_swap() {
                let e = pte.swap_entry();
                let r = &mut swap_refs[e.dev()][e.offset() as usize];
                *r = r
                    .checked_add(1)
                    .ok_or("more than 255 swap PTEs on one slot")?;
                swapents += 1;
            }
        }
    }
    if rss != mm.rss_anon || swapents != mm.swap_ents || rss_file != mm.rss_file {
        return Err(format!(
            "mm {mm_id}: rss {} / swapents {} / file rss {} but PTEs say {rss} / {swapents} / {rss_file}",
            mm.rss_anon, mm.swap_ents, mm.rss_file
        ));
    }
    // An OOM victim's memory is gone once its mm is (the kill frees it at once).
    if mm.oom_victim && mm.mm_users == 0 && mm.vmas.iter().any(|v| v.is_some()) {
        return Err(format!(
            "mm {mm_id}: OOM-killed and exited, but VMAs remain"
        ));
    }
    Ok(())
}

/// A present PTE at (mm, vma, page index) maps pfn `p`: a page of a live folio whose rmap
/// (anon: mm, vma, index; file: file, offset) points back here. Returns whether it is a
/// file page.
fn check_present_pte(
    k: &Kernel,
    (mm_id, vma_id, index): (usize, usize, usize),
    p: usize,
    owner: &[u32],
) -> Result<bool, String> {
    let f = &k.folios;
    let head = owner[p];
    if head == NIL {
        return Err(format!(
            "mm {mm_id} vma {vma_id} page {index} maps pfn {p}, which is in no folio"
        ));
    }
    let h = head as usize;
    if f.test(head, flags::FILE) {
        let vma_file = k.mms[mm_id].vma_file(vma_id as u32);
        let expect = vma_file.map(|v| (v.file, v.pgoff + index as u32));
        if expect != Some((f.owner_mm(h), f.owner_index(h))) {
            return Err(format!("mm {mm_id} vma {vma_id} page {index} maps page {} of file {}, the VMA maps {expect:?}", f.owner_index(h), f.owner_mm(h)));
        }
        return Ok(true);
    }
    let expect = (
        f.owner_mm(h) as usize,
        f.owner_vma(h) as usize,
        f.owner_index(h) as usize + (p - h),
    );
    if expect != (mm_id, vma_id, index) {
        return Err(format!(
            "pfn {p} mapped at mm {mm_id} vma {vma_id} page {index}, rmap says {expect:?}"
        ));
    }
    Ok(false)
}

/// swap_map against PTEs and the swap cache, device by device, then each allocator's
/// cluster bookkeeping and where each slot's data is.
fn check_swap_maps(k: &Kernel, swap_refs: &[Vec<u8>]) -> Result<(), String> {
    let slot_cached: std::collections::BTreeSet<u32> = k
        .swap
        .slot_cache
        .iter()
        .chain(&k.swap.slots_ret)
        .flatten()
        .map(|e| e.raw())
        .collect();
    for (d, dev) in k.swap.devices.iter().enumerate() {
        let map = &dev.map;
        let mut inuse = 0;
        for (slot, &b) in map.swap_map.iter().enumerate() {
            if b == SWAP_MAP_BAD {
                continue;
            }
            if b != 0 {
                inuse += 1;
            }
            check_swap_slot(k, d, slot, swap_refs[d][slot], &slot_cached)?;
        }
        if inuse != map.inuse_pages {
            return Err(format!(
                "swap {d}: inuse_pages {} but {inuse} slots in use",
                map.inuse_pages
            ));
        }
        dev.allocator
            .check(map)
            .map_err(|e| format!("swap {d} allocator {}: {e}", dev.allocator.name()))?;
        check_slot_data(k, d)?;
    }
    Ok(())
}

/// One swap slot: its swap_map count equals the swap PTEs on it, a free slot holds no shadow,
/// the swap cache points at a folio that owns the slot, and SWAP_HAS_CACHE is set exactly
/// when the slot is in the swap cache or a per-CPU slot cache.
fn check_swap_slot(
    k: &Kernel,
    d: usize,
    slot: usize,
    ptes: u8,
    slot_cached: &std::collections::BTreeSet<u32>,
) -> Result<(), String> {
    let f = &k.folios;
    let map = &k.swap.devices[d].map;
    let b = map.swap_map[slot];
    if swap_count(b) != ptes {
        return Err(format!(
            "swap {d} slot {slot}: swap_map count {} but {} swap PTEs",
            swap_count(b),
            ptes
        ));
    }
    if slot_shadow(map.swap_cache[slot]).is_some() && b == 0 {
        return Err(format!(
            "swap {d} slot {slot}: free but holds a shadow entry"
        ));
    }
    let here = super::folio::SwapEntry::new(d, slot as u32);
    let cached = map.cached_folio(slot as u32).unwrap_or(NIL);
    if cached != NIL {
        let h = cached as usize;
        let ok = f.test(cached, flags::SWAPCACHE)
            && match f.scattered.get(&cached) {
                Some(slots) => slots.contains(&here),
                None => {
                    let e = f.swap_entry(cached);
                    e.dev() == d
                        && (e.offset()..e.offset() + f.nr_pages(cached)).contains(&(slot as u32))
                }
            };
        if !ok {
            return Err(format!(
                "swap {d} slot {slot}: swap cache points at folio {h}, which does not own it"
            ));
        }
    }
    let has_cache = b & SWAP_HAS_CACHE != 0;
    let expect_cache = cached != NIL || slot_cached.contains(&here.raw());
    if has_cache != expect_cache {
        return Err(format!("swap {d} slot {slot}: HAS_CACHE is {has_cache}, swap cache / slot cache presence is {expect_cache}"));
    }
    Ok(())
}

/// The TLB model's sanity (hw/tlb_cache.rs), and every accessed range's special set
/// (mm/access.rs): consistent, and a superset of its pages an access cannot use as mapped.
/// Swap writeback: a folio under writeback is on an LRU (with the list and charge checks
/// below: on exactly one list, charged once), in the swap cache, and every slot it is being
/// written to is allocated and held by the cache. A device queue never holds more requests
/// than its nr_requests.
fn check_writeback(k: &Kernel) -> Result<(), String> {
    let f = &k.folios;
    for pfn in f.writeback_done_pfns() {
        if !f.test(pfn, flags::WRITEBACK) || f.test(pfn, flags::FILE) {
            continue;
        }
        if !f.test(pfn, flags::LRU) || !f.test(pfn, flags::SWAPCACHE) {
            return Err(format!(
                "folio {pfn} under swap writeback is off the LRU or out of the swap cache"
            ));
        }
        for (first, n) in f.swap_runs(pfn) {
            let map = &k.swap.devices[first.dev()].map;
            let range = first.offset() as usize..(first.offset() + n) as usize;
            if let Some(o) = range
                .clone()
                .find(|&o| map.swap_map[o] & SWAP_HAS_CACHE == 0 || map.data[o] != SlotData::Device)
            {
                return Err(format!(
                    "folio {pfn} under writeback to slot {o} of swap {}, which is not allocated to it",
                    first.dev()
                ));
            }
        }
    }
    for (d, dev) in k.swap.devices.iter().enumerate() {
        if let Some(q) = &dev.bdev.queue {
            if q.in_flight_requests() > q.nr_requests as usize {
                return Err(format!(
                    "swap {d}'s queue holds {} requests, nr_requests {}",
                    q.in_flight_requests(),
                    q.nr_requests
                ));
            }
        }
    }
    Ok(())
}

fn check_tlb_and_access(k: &Kernel) -> Result<(), String> {
    k.tlb_cache.check().map_err(|e| format!("TLB model: {e}"))?;
    for (mm, m) in k.mms.iter().enumerate() {
        for (id, vma) in m.vmas.iter().enumerate() {
            let Some(vma) = vma else { continue };
            for set in &vma.special {
                set.check()
                    .map_err(|e| format!("mm {mm} vma {id} special set: {e}"))?;
                for index in set.first..set.first + set.nr {
                    let kinds = super::access::classify(vma.ptes[index as usize]);
                    if kinds & !set.kinds(index) != 0 {
                        return Err(format!(
                            "mm {mm} vma {id}: page {index} is special ({kinds:#x}) but not listed"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Where each slot's data is, against swap_map, the swap cache, zswap and zram. Ranges released
/// in the current step whose data is not freed yet are skipped.
fn check_slot_data(k: &Kernel, d: usize) -> Result<(), String> {
    let dev = &k.swap.devices[d];
    let map = &dev.map;
    let pending = |slot: u32| {
        k.swap
            .released
            .iter()
            .any(|&(e, n)| e.dev() == d && (e.offset()..e.offset() + n).contains(&slot))
    };
    for (slot, &b) in map.swap_map.iter().enumerate() {
        if b == SWAP_MAP_BAD || pending(slot as u32) {
            continue;
        }
        let cached = map.cached_folio(slot as u32).unwrap_or(NIL);
        let data = map.data[slot];
        if b == 0 && data != SlotData::None {
            return Err(format!(
                "swap {d} slot {slot}: free but its data is {data:?}"
            ));
        }
        if swap_count(b) > 0 && cached == NIL && data == SlotData::None {
            return Err(format!(
                "swap {d} slot {slot}: referenced by {} PTEs, not in the swap cache, and its data is nowhere",
                swap_count(b)
            ));
        }
        let entry = super::folio::SwapEntry::new(d, slot as u32);
        if k.zswap.has_entry(entry) != (data == SlotData::Zswap) {
            return Err(format!(
                "swap {d} slot {slot}: data {data:?} but zswap entry {}",
                k.zswap.has_entry(entry)
            ));
        }
        if let RamStore::Zram(z) = &dev.store {
            let holds = z.has_data(slot as u32);
            // zram keeps a slot's last write until the slot is freed (zram_slot_free_notify):
            // a swap-cache folio written to zram, dirtied again and then stored by zswap or
            // found zero-filled (swap_writeout) leaves that write behind, stale but allocated,
            // and so does a later swap-in from zswap (zswap_load frees the entry, the dirty
            // swap-cache folio is the data). A free slot (checked above: data None) holds none.
            let stale = holds && b != 0 && data != SlotData::Device;
            if holds != (data == SlotData::Device) && !stale {
                return Err(format!(
                    "swap {d} slot {slot}: data {data:?} but zram holds data: {}",
                    z.has_data(slot as u32)
                ));
            }
        }
    }
    Ok(())
}

/// PMD mappings and the deferred split queues: a PMD-mapped folio (a THP fault's or a
/// collapse's) is one order-9 folio mapped whole at an aligned index; every queued folio is a
/// partially mapped large folio of that memcg, and every folio flagged partially mapped is
/// queued.
fn check_thp(k: &Kernel) -> Result<(), String> {
    use crate::scenario::PMD_ORDER;
    let f = &k.folios;
    let mut flagged = 0u64;
    for h in 0..k.nodes.total_pages() {
        if !f.test(h, flags::ALLOCATED) {
            continue;
        }
        let (order, mapcount) = (f.order[h as usize] as u32, f.mapcount(h as usize) as u32);
        if f.test(h, flags::PMD_MAPPED)
            && (order != PMD_ORDER
                || mapcount != 1 << PMD_ORDER
                || !f.owner_index(h as usize).is_multiple_of(1 << PMD_ORDER))
        {
            return Err(format!(
                "folio {h} is PMD-mapped with order {order}, mapcount {mapcount}, index {}",
                f.owner_index(h as usize)
            ));
        }
        if f.test(h, flags::PARTIALLY_MAPPED) {
            flagged += 1;
        }
    }
    let mut queued = 0u64;
    for (memcg, q) in k.deferred_split.iter().enumerate() {
        let mut n = 0u64;
        for h in q.iter(f) {
            n += 1;
            if n > q.split_queue_len {
                return Err(format!(
                    "memcg {memcg}: deferred split queue longer than its length {}",
                    q.split_queue_len
                ));
            }
            let (order, mapcount) = (f.order[h as usize] as u32, f.mapcount(h as usize) as u32);
            let ok = f.test(h, flags::ALLOCATED)
                && f.test(h, flags::PARTIALLY_MAPPED)
                && !f.test(h, flags::PMD_MAPPED | flags::SWAPCACHE)
                && order >= 2
                && f.memcg(h as usize) as usize == memcg
                && mapcount > 0
                && mapcount < 1 << order;
            if !ok {
                return Err(format!(
                    "memcg {memcg}: deferred split queue holds folio {h} (order {order}, mapcount {mapcount}, flags {:#x}), not a partially mapped large folio of the memcg",
                    f.flags[h as usize]
                ));
            }
        }
        if n != q.split_queue_len {
            return Err(format!(
                "memcg {memcg}: deferred split queue holds {n} folios, its length says {}",
                q.split_queue_len
            ));
        }
        queued += n;
    }
    if queued != flagged {
        return Err(format!(
            "{flagged} folios are flagged partially mapped but {queued} are queued for deferred split"
        ));
    }
    Ok(())
}

/// The page cache against the folio table and the file VMAs.
fn check_page_cache(k: &Kernel) -> Result<(), String> {
    let (cached, dirty) = check_cached_files(k)?;
    check_file_folios(k, cached, dirty)?;
    check_file_vmas_listed(k)
}

/// Every cached slot holds an order-0 FILE folio of that file and offset, dirty exactly when
/// tagged; nr_cached counts them; i_mmap lists live VMAs mapping the file. Returns the pages
/// cached and the pages tagged dirty, over all files.
fn check_cached_files(k: &Kernel) -> Result<(u64, u64), String> {
    let f = &k.folios;
    let (mut cached, mut dirty) = (0u64, 0u64);
    for (id, file) in k.pagecache.files.iter().enumerate() {
        let Some(file) = file else { continue };
        let mut nr_cached = 0;
        for (index, &raw) in file.pages.iter().enumerate() {
            let Some(pfn) = slot_folio(raw) else {
                continue;
            };
            let ok = f.test(pfn, flags::ALLOCATED)
                && f.test(pfn, flags::FILE)
                && f.order[pfn as usize] == 0
                && f.owner_mm(pfn as usize) as usize == id
                && f.owner_index(pfn as usize) as usize == index;
            if !ok {
                return Err(format!(
                    "file {id} page {index}: cached pfn {pfn} is no order-0 page-cache folio of it"
                ));
            }
            if f.test(pfn, flags::DIRTY) != file.dirty.contains(&(index as u32)) {
                return Err(format!(
                    "file {id} page {index}: dirty flag and dirty tag disagree"
                ));
            }
            nr_cached += 1;
        }
        if nr_cached != file.nr_cached {
            return Err(format!(
                "file {id}: nr_cached {} but {nr_cached} pages cached",
                file.nr_cached
            ));
        }
        if file.dirty.iter().any(|&i| file.lookup(i).is_none()) {
            return Err(format!("file {id}: a dirty tag on an uncached page"));
        }
        dirty += file.dirty.len() as u64;
        cached += nr_cached as u64;
        check_i_mmap(k, id, &file.i_mmap)?;
    }
    Ok((cached, dirty))
}

/// Each i_mmap entry of file `id` is a live VMA mapping that file at that offset and length.
fn check_i_mmap(
    k: &Kernel,
    id: usize,
    i_mmap: &[super::filemap::FileMapping],
) -> Result<(), String> {
    for m in i_mmap {
        let vf = k.mms.get(m.mm as usize).and_then(|mm| {
            mm.vma_file(m.vma)
                .zip(mm.vmas.get(m.vma as usize)?.as_ref())
        });
        let ok = vf.is_some_and(|(v, vma)| {
            v.file as usize == id && v.pgoff == m.pgoff && vma.nr_pages == m.nr_pages
        });
        if !ok {
            return Err(format!(
                "file {id}: i_mmap entry {m:?} is not a live VMA mapping it"
            ));
        }
    }
    Ok(())
}

/// Every FILE folio sits in its file's slot; the node's page-cache, mapped, dirty and
/// swap-cache counters match the folios (`cached` and `dirty` from the files' side).
fn check_file_folios(k: &Kernel, cached: u64, dirty: u64) -> Result<(), String> {
    let f = &k.folios;
    let pc = &k.pagecache;
    let (mut folios, mut mapped, mut swapcache) = (0u64, 0u64, 0u64);
    for pfn in 0..k.nodes.total_pages() {
        if !f.test(pfn, flags::ALLOCATED) {
            continue;
        }
        if f.test(pfn, flags::SWAPCACHE) {
            swapcache += f.nr_pages(pfn) as u64;
        }
        if !f.test(pfn, flags::FILE) {
            continue;
        }
        folios += 1;
        mapped += (f.mapcount(pfn as usize) > 0) as u64;
        let file = f.owner_mm(pfn as usize);
        let in_slot = pc
            .files
            .get(file as usize)
            .and_then(|fl| fl.as_ref())
            .and_then(|fl| fl.lookup(f.owner_index(pfn as usize)))
            == Some(pfn);
        if !in_slot {
            return Err(format!(
                "page-cache folio {pfn} is not in its slot (file {file} page {})",
                f.owner_index(pfn as usize)
            ));
        }
    }
    let counts = [
        ("nr_file_pages (page cache)", pc.nr_pages, cached),
        ("page-cache folios", cached, folios),
        ("nr_mapped", pc.nr_mapped, mapped),
        ("nr_dirty", pc.nr_dirty, dirty),
        ("nr_swapcached", pc.nr_swapcache, swapcache),
    ];
    for (name, counter, actual) in counts {
        if counter != actual {
            return Err(format!("{name}: counter {counter}, actual {actual}"));
        }
    }
    Ok(())
}

/// Every file VMA is live and in its file's i_mmap.
fn check_file_vmas_listed(k: &Kernel) -> Result<(), String> {
    let pc = &k.pagecache;
    for (mm_id, mm) in k.mms.iter().enumerate() {
        for (vma, vf) in mm.vma_files.iter().enumerate() {
            let Some(vf) = vf else { continue };
            let listed = pc
                .files
                .get(vf.file as usize)
                .and_then(|fl| fl.as_ref())
                .is_some_and(|fl| {
                    fl.i_mmap
                        .iter()
                        .any(|m| m.mm as usize == mm_id && m.vma as usize == vma)
                });
            if !listed || mm.vmas.get(vma).is_none_or(|v| v.is_none()) {
                return Err(format!(
                    "mm {mm_id} vma {vma} maps file {} but is not in its i_mmap (or is gone)",
                    vf.file
                ));
            }
        }
    }
    Ok(())
}

/// MIGRC (mm/migrate/flush/migrc.rs): no page is in use while a flush for its stale TLB
/// entries is owed (its tag is taken when it leaves the free lists, and the allocation that
/// took it checks at once); a tag still owed carries the current request's generation.
/// Page conservation up the memcg tree: a memcg's memory.current is its own folios, its
/// zswap pages and the charge stock CPUs hold for it, plus its children's memory.current (the
/// root counts only its own); memory.swap.current is the slots charged to it plus its
/// children's (the root's is never charged).
/// workingset_age_nonresident ages a lruvec and every ancestor's on the same node: no
/// memcg's age on node `nid` is below its children's sum there.
fn check_nonresident_age(k: &Kernel, nid: usize) -> Result<(), String> {
    let mut children_age = vec![0u64; k.memcgs.len()];
    for cg in k.memcgs.iter().filter(|cg| !cg.is_root()) {
        children_age[cg.parent as usize] += cg.lruvec_of(nid).nonresident_age;
    }
    for (id, cg) in k.memcgs.iter().enumerate() {
        let age = cg.lruvec_of(nid).nonresident_age;
        if age < children_age[id] {
            return Err(format!(
                "memcg {} node {nid}: nonresident_age {age} below its children's sum {}",
                cg.name, children_age[id]
            ));
        }
    }
    Ok(())
}

fn check_memcg_counters(k: &Kernel, memcg_pages: &[u64]) -> Result<(), String> {
    let n = k.memcgs.len();
    let slots = k.swap_cgroup.counts(n);
    let mut children_usage = vec![0u64; n];
    let mut children_swap = vec![0u64; n];
    for cg in k.memcgs.iter().filter(|cg| !cg.is_root()) {
        children_usage[cg.parent as usize] += cg.usage_pages;
        children_swap[cg.parent as usize] += cg.swap_usage_pages;
    }
    for nid in 0..k.nr_nodes() {
        check_nonresident_age(k, nid)?;
    }
    for (id, cg) in k.memcgs.iter().enumerate() {
        let own = memcg_pages[id] + cg.zswap_charged_pages() + k.memcg_stock.held_pages(id as u16);
        let (children, children_swap, own_swap) = if cg.is_root() {
            (0, 0, 0)
        } else {
            let charged = if cg.on_dfl { slots[id] } else { 0 };
            (children_usage[id], children_swap[id], charged)
        };
        if cg.usage_pages != own + children {
            return Err(format!(
                "memcg {}: usage {} pages, its folios hold {}, zswap {}, the stock {}, its \
                 children {children}",
                cg.name,
                cg.usage_pages,
                memcg_pages[id],
                cg.zswap_charged_pages(),
                k.memcg_stock.held_pages(id as u16),
            ));
        }
        if cg.swap_usage_pages != own_swap + children_swap {
            return Err(format!(
                "memcg {}: swap.current {} pages, slots charged to it {own_swap}, its children \
                 {children_swap}",
                cg.name, cg.swap_usage_pages
            ));
        }
    }
    Ok(())
}

fn check_migrc(k: &Kernel, free: &[bool]) -> Result<(), String> {
    use super::migrate::flush::migrc::mgen_before;
    if k.migrc.gen == 0 {
        return Ok(());
    }
    let owed = |g: u16| g != 0 && mgen_before(k.migrc.gen_done, g);
    for nid in 0..k.nodes.nr_nodes() {
        let area = k.node_zone(nid).free_area();
        if owed(area.unchecked_mgen()) {
            return Err(format!(
                "node {nid}: pages tagged with MIGRC generation {} were taken without the flush check",
                area.unchecked_mgen()
            ));
        }
        let span = k.nodes.start_pfn[nid]..k.nodes.start_pfn[nid + 1];
        for pfn in span {
            let g = area.mgen_of(pfn);
            if g == 0 {
                continue;
            }
            if !free[pfn as usize] {
                return Err(format!(
                    "pfn {pfn} is in use with MIGRC generation {g} still on it"
                ));
            }
            if owed(g) && g != k.migrc.gen {
                return Err(format!(
                    "free pfn {pfn} owes generation {g}, the current request is {}",
                    k.migrc.gen
                ));
            }
        }
    }
    Ok(())
}
