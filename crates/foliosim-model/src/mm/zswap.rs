//! zswap (mm/zswap.c, spec-swap.md §11): a compressed cache in front of every swap device.
//! A folio leaving memory is stored page by page as entries keyed by swap slot in a zsmalloc
//! pool charged to the folio's memcg; what zswap refuses goes to the device. Entries come back
//! on swap-in (zswap_load), die with their slot (zswap_invalidate), and are written back to the
//! device when the pool is full (by the shrink worker, a kernel thread: mm/kthread.rs), the
//! memcg's zswap.max is reached, or the shrinker asks.

use super::folio::SwapEntry;
use super::kthread::{KthreadKind, KthreadNext};
use super::memcontrol::{zswap_charge, zswap_uncharge};
use super::page_io::write_to_device;
use super::swap_devstore::{zone_pages, ZSWAP_GFP};
use super::swapfile::SlotData;
use super::vmstat::{MthpStat, VmEvent};
use super::zsmalloc::{Handle, ZsConfig, ZsPool};
use super::zswap_store::{policy, ZswapLargeFolioPolicy};
use super::Kernel;
use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::compressor::CodecCost;
use crate::hw::compressor::{size_sample, Codec};
use crate::hw::iaa::IaaMode;
use crate::scenario::{Scenario, ZswapLargeFolios, PAGE_SIZE};
use serde::Serialize;
use std::collections::VecDeque;

/// Per-slot length meaning "no entry".
const NO_ENTRY: u16 = u16::MAX;
/// shrink_worker gives up after this many failed or empty rounds (MAX_RECLAIM_RETRIES).
const MAX_RECLAIM_RETRIES: u32 = 16;

/// /sys/kernel/debug/zswap/*, under the kernel's names.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ZswapStats {
    pub pool_limit_hit: u64,
    pub reject_reclaim_fail: u64,
    pub reject_alloc_fail: u64,
    pub reject_compress_poor: u64,
    pub reject_compress_fail: u64,
    pub written_back_pages: u64,
    /// Bytes of pool memory (zspages).
    pub pool_total_size: u64,
    pub stored_pages: u64,
    pub stored_incompressible_pages: u64,
    /// <= 6.11: entries holding a repeated word instead of compressed data.
    pub same_filled_pages: u64,
}

/// One device's entries (the xarrays of zswap_trees[type]), dense by slot.
struct Tree {
    /// Compressed length; 0 = same-filled value; NO_ENTRY = none.
    len: Vec<u16>,
    handle: Vec<Handle>,
    memcg: Vec<u16>,
    /// Bumped at every store: LRU records of an older generation are stale.
    gen: Vec<u32>,
    /// Second chance for the LRU walk (set at store, cleared when the walk passes).
    referenced: Vec<bool>,
    /// What the page held (content class index, page key): writeback recompresses it for
    /// the device (zram).
    class: Vec<u8>,
    key: Vec<u32>,
}

impl Tree {
    fn new(nr_slots: usize) -> Tree {
        Tree {
            len: vec![NO_ENTRY; nr_slots],
            handle: vec![Handle(0); nr_slots],
            memcg: vec![0; nr_slots],
            gen: vec![0; nr_slots],
            referenced: vec![false; nr_slots],
            class: vec![0; nr_slots],
            key: vec![0; nr_slots],
        }
    }
}

pub struct Zswap {
    pub enabled: bool,
    policy: &'static dyn ZswapLargeFolioPolicy,
    pub codec: Codec,
    max_pool_pages: u64,
    accept_pool_pages: u64,
    pub shrinker_enabled: bool,
    /// zswap_pool_reached_full: stores refused until the pool shrinks to accept_pool_pages.
    reached_full: bool,
    pub pool: ZsPool,
    trees: Vec<Tree>,
    /// Per memcg, oldest first: (entry, generation) as stored (list_lru per memcg).
    lru: Vec<VecDeque<(u32, u32)>>,
    /// shrink_worker's round-robin memcg cursor (zswap_next_shrink); the number of memcgs
    /// stands for NULL, the end of a walk.
    next_shrink: usize,
    /// shrink_worker's locals, kept across the passes of one run of the work item.
    shrink_running: bool,
    shrink_failures: u32,
    shrink_attempts: u32,
    pub stats: ZswapStats,
}

impl Zswap {
    pub fn new(
        scenario: &Scenario,
        large_folios: ZswapLargeFolios,
        device_slots: &[u32],
        nr_memcgs: usize,
    ) -> Zswap {
        let knobs = &scenario.sysfs.zswap;
        let ram_pages = scenario.machine.memory.pages();
        let max_pool_pages = ram_pages * knobs.max_pool_percent_or_default() as u64 / 100;
        let enabled = knobs.enabled;
        Zswap {
            enabled,
            policy: policy(large_folios),
            codec: Codec::from_name(knobs.compressor_or_default()).expect("validated compressor"),
            max_pool_pages,
            accept_pool_pages: max_pool_pages * knobs.accept_threshold_percent_or_default() as u64
                / 100,
            shrinker_enabled: knobs.shrinker_enabled.unwrap_or(false),
            reached_full: false,
            pool: ZsPool::new(ZsConfig::default()).expect("default zsmalloc config"),
            // Trees exist only while zswap is on: a run without zswap pays nothing per slot.
            trees: if enabled {
                device_slots
                    .iter()
                    .map(|&n| Tree::new(n as usize))
                    .collect()
            } else {
                Vec::new()
            },
            lru: vec![VecDeque::new(); nr_memcgs],
            next_shrink: 0,
            shrink_running: false,
            shrink_failures: 0,
            shrink_attempts: 0,
            stats: ZswapStats::default(),
        }
    }

    pub fn has_entry(&self, entry: SwapEntry) -> bool {
        self.trees
            .get(entry.dev())
            .is_some_and(|t| t.len[entry.offset() as usize] != NO_ENTRY)
    }

    fn pool_pages(&self) -> u64 {
        self.pool.zs_get_total_pages()
    }

    /// The debugfs files now (pool_total_size read off the pool, as the kernel's is).
    pub fn debugfs(&self) -> ZswapStats {
        ZswapStats {
            pool_total_size: self.pool_pages() * PAGE_SIZE,
            ..self.stats.clone()
        }
    }

    /// A failure of shrink_worker; true when it is the last one allowed.
    fn count_failure(&mut self) -> bool {
        self.shrink_failures += 1;
        self.shrink_failures >= MAX_RECLAIM_RETRIES
    }

    /// zswap_check_limits: is the global pool full (with hysteresis)?
    fn check_limits(&mut self) -> bool {
        let pages = self.pool_pages();
        if pages >= self.max_pool_pages {
            self.stats.pool_limit_hit += 1;
            self.reached_full = true;
        } else if self.reached_full && pages <= self.accept_pool_pages {
            self.reached_full = false;
        }
        !self.reached_full
    }
}

/// zswap_store: store the folio at `pfn` (locked, in the swap cache) page by page. On any
/// failure every entry at the folio's slots is freed and the caller writes the whole folio to
/// the device; a failure while the pool is full queues the shrink worker. Returns whether
/// zswap holds the folio now.
pub fn zswap_store(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> bool {
    let order = k.folios.order[pfn as usize] as u32;
    let z = &k.zswap;
    if !z.enabled || !z.policy.stores_order(order) {
        invalidate_folio(k, ctx, pfn);
        return false;
    }
    let stored = store_folio(k, ctx, pfn);
    if !stored {
        // queue_work(shrink_wq, &zswap_shrink_work): the worker writes back, not this task.
        if k.zswap.reached_full {
            k.kthreads.wake(KthreadKind::ZswapShrink, ctx.now_ns);
        }
        invalidate_folio(k, ctx, pfn);
    }
    stored
}

/// zswap_store's checks and per-page stores; false at the first refusal.
fn store_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) -> bool {
    let order = k.folios.order[pfn as usize] as u32;
    let nr = 1u32 << order;
    let memcg = k.folios.memcg(pfn as usize);
    // obj_cgroup_may_zswap: over memory.zswap.max, write one of this memcg's entries back.
    let cg = &k.memcgs[memcg as usize];
    if cg.zswap_bytes >= cg.zswap_max_bytes
        && (!shrink_memcg(k, ctx, memcg)
            || k.memcgs[memcg as usize].zswap_bytes >= k.memcgs[memcg as usize].zswap_max_bytes)
    {
        k.zswap.stats.reject_reclaim_fail += 1;
        return false;
    }
    if !k.zswap.check_limits() {
        return false;
    }
    let writeback_ok = k.memcgs[memcg as usize].zswap_writeback;
    offload_compress(k, ctx, nr);
    for i in 0..nr {
        if !store_page(
            k,
            ctx,
            pfn,
            i,
            k.folios.page_swap_entry(pfn, i),
            memcg,
            writeback_ok,
        ) {
            return false;
        }
    }
    k.vmstat.count(VmEvent::Zswpout, nr as u64);
    k.memcgs[memcg as usize].count(VmEvent::Zswpout, nr as u64);
    k.vmstat.count_mthp(order, MthpStat::Zswpout);
    true
}

/// zswap_invalidate over every slot of the folio at `pfn` (in the swap cache).
fn invalidate_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    if k.zswap.trees.is_empty() {
        return;
    }
    for (first, nr) in k.folios.swap_runs(pfn) {
        invalidate_range(k, ctx, first, nr);
    }
}

/// deflate-iaa: the folio's pages go to this CPU's IAA device, one synchronous job per page
/// (the RFC) or batched (the IAA batching series); the CPU polls until they are done. A
/// software compressor's time is charged per page in store_page instead.
fn offload_compress(k: &mut Kernel, ctx: &mut Ctx, nr: u32) {
    if k.zswap.codec != Codec::DeflateIaa {
        return;
    }
    let iaa = k
        .iaa
        .as_mut()
        .expect("deflate-iaa is validated to have machine.iaa");
    let t = iaa
        .submit_compress(
            ctx.now_ns,
            ctx.cpu as u32,
            nr,
            PAGE_SIZE as u32,
            k.cfg.iaa_mode,
        )
        .expect("IAA jobs of a folio's pages");
    ctx.busy_until(CpuCost::IaaPoll, t.done_at_ns);
}

/// zswap_store_page: compress page `i` of the folio and publish its entry.
fn store_page(
    k: &mut Kernel,
    ctx: &mut Ctx,
    pfn: u32,
    i: u32,
    slot: SwapEntry,
    memcg: u16,
    writeback_ok: bool,
) -> bool {
    let (class, key) = k.page_content(pfn, i);
    ctx.spend(CpuCost::ZswapStore, k.cost.zswap_store_page_ns);
    let len = if k.zswap.policy.same_filled_in_zswap() && class.same_filled(key) {
        ctx.spend(CpuCost::ZswapStore, k.cost.page_scan_ns);
        k.zswap.stats.same_filled_pages += 1;
        0
    } else {
        ctx.spend(
            CpuCost::ZswapCompress,
            k.cost.codec_ns(k.zswap.codec, class).0,
        );
        let len = size_sample(k.zswap.codec, class).compressed_len(key);
        if len as u64 >= PAGE_SIZE {
            // Incompressible: kept as is while the memcg may write back (keeps LRU order).
            if !writeback_ok {
                k.zswap.stats.reject_compress_poor += 1;
                return false;
            }
            k.zswap.stats.stored_incompressible_pages += 1;
            PAGE_SIZE as u32
        } else {
            len.max(1)
        }
    };
    let handle = if len > 0 {
        let mut pages = zone_pages!(k, ctx, ZSWAP_GFP);
        let Ok(h) = k.zswap.pool.zs_malloc(len, &mut pages) else {
            k.zswap.stats.reject_alloc_fail += 1;
            return false;
        };
        h
    } else {
        Handle(0)
    };
    let t = &mut k.zswap.trees[slot.dev()];
    let s = slot.offset() as usize;
    debug_assert_eq!(t.len[s], NO_ENTRY, "stale entry left at {slot:?}");
    t.len[s] = len as u16;
    t.handle[s] = handle;
    t.memcg[s] = memcg;
    t.gen[s] = t.gen[s].wrapping_add(1);
    t.referenced[s] = true;
    t.class[s] = class.index();
    t.key[s] = key as u32;
    k.zswap.lru[memcg as usize].push_back((slot.raw(), t.gen[s]));
    k.swap.devices[slot.dev()].map.data[s] = SlotData::Zswap;
    zswap_charge(&mut k.memcgs, memcg, len as u64);
    k.zswap.stats.stored_pages += 1;
    true
}

/// Free one entry (zswap_entry_free): pool memory back to the buddy allocator, uncharged.
fn free_entry(k: &mut Kernel, ctx: &mut Ctx, slot: SwapEntry) {
    let t = &mut k.zswap.trees[slot.dev()];
    let s = slot.offset() as usize;
    let len = t.len[s];
    debug_assert_ne!(len, NO_ENTRY);
    t.len[s] = NO_ENTRY;
    let memcg = t.memcg[s];
    if len == 0 {
        k.zswap.stats.same_filled_pages -= 1;
    } else {
        let mut pages = zone_pages!(k, ctx, ZSWAP_GFP);
        k.zswap
            .pool
            .zs_free(t.handle[s], &mut pages)
            .expect("zswap frees a handle it holds");
        if len as u64 == PAGE_SIZE {
            k.zswap.stats.stored_incompressible_pages -= 1;
        }
    }
    zswap_uncharge(&mut k.memcgs, memcg, len as u64);
    k.zswap.stats.stored_pages -= 1;
    // The LRU keeps stale records until they reach its head; compact when they dominate.
    let lru = &mut k.zswap.lru[memcg as usize];
    if lru.len() > 64 && lru.len() > 2 * k.zswap.stats.stored_pages as usize {
        let trees = &k.zswap.trees;
        lru.retain(|&(raw, gen)| live(trees, raw, gen));
    }
}

fn live(trees: &[Tree], raw: u32, gen: u32) -> bool {
    let e = SwapEntry::from_raw(raw);
    let t = &trees[e.dev()];
    t.len[e.offset() as usize] != NO_ENTRY && t.gen[e.offset() as usize] == gen
}

/// zswap_invalidate over a range: the slots were released or are being rewritten.
#[inline]
pub fn invalidate_range(k: &mut Kernel, ctx: &mut Ctx, first: SwapEntry, nr: u32) {
    // Called for every slot freed: without zswap it must cost no call.
    if !k.zswap.trees.is_empty() {
        invalidate_entries(k, ctx, first, nr);
    }
}

fn invalidate_entries(k: &mut Kernel, ctx: &mut Ctx, first: SwapEntry, nr: u32) {
    for i in 0..nr {
        let slot = SwapEntry::new(first.dev(), first.offset() + i);
        if k.zswap.has_entry(slot) {
            ctx.spend(CpuCost::ZswapInvalidate, k.cost.zswap_invalidate_ns);
            free_entry(k, ctx, slot);
            k.swap.devices[slot.dev()].map.data[slot.offset() as usize] = SlotData::None;
        }
    }
}

/// zswap_load for an order-0 swap-in: decompress the entry into the new folio and free it
/// (zswap keeps no copy). False when the slot has no entry (read the device).
pub fn zswap_load(k: &mut Kernel, ctx: &mut Ctx, slot: SwapEntry, memcg: u16) -> bool {
    if !k.zswap.has_entry(slot) {
        return false;
    }
    ctx.spend(CpuCost::ZswapLoad, k.cost.zswap_load_page_ns);
    decompress_entry(k, ctx, slot);
    free_entry(k, ctx, slot);
    k.swap.devices[slot.dev()].map.data[slot.offset() as usize] = SlotData::None;
    k.vmstat.count(VmEvent::Zswpin, 1);
    k.memcgs[memcg as usize].count(VmEvent::Zswpin, 1);
    true
}

/// zswap_decompress: the entry's data back into a page, on this CPU's IAA device for
/// deflate-iaa, else on the CPU. A same-filled entry is a fill and an incompressible one a
/// copy, both within the per-entry cost.
fn decompress_entry(k: &mut Kernel, ctx: &mut Ctx, slot: SwapEntry) {
    let t = &k.zswap.trees[slot.dev()];
    let s = slot.offset() as usize;
    let (len, class) = (t.len[s], ContentClass::from_index(t.class[s]));
    if len == 0 || len as u64 >= PAGE_SIZE {
        return;
    }
    if k.zswap.codec == Codec::DeflateIaa {
        let iaa = k
            .iaa
            .as_mut()
            .expect("deflate-iaa is validated to have machine.iaa");
        let t = iaa
            .submit_decompress(
                ctx.now_ns,
                ctx.cpu as u32,
                1,
                PAGE_SIZE as u32,
                IaaMode::Sync,
            )
            .expect("one IAA job");
        ctx.busy_until(CpuCost::IaaPoll, t.done_at_ns);
    } else {
        ctx.spend(CpuCost::ZswapLoad, k.cost.codec_ns(k.zswap.codec, class).1);
    }
}

/// zswap_writeback_entry: decompress into a swap-cache page and write it to the device. Fails
/// when the slot is in the swap cache already (a swap-in made it hot).
fn writeback_entry(k: &mut Kernel, ctx: &mut Ctx, slot: SwapEntry) -> bool {
    if k.swap.lookup(slot).is_some() {
        return false;
    }
    let t = &k.zswap.trees[slot.dev()];
    let s = slot.offset() as usize;
    let memcg = t.memcg[s];
    let content = (ContentClass::from_index(t.class[s]), t.key[s] as u64);
    decompress_entry(k, ctx, slot);
    ctx.spend(CpuCost::SubmitBio, k.cost.bio_submit_ns);
    if write_to_device(k, ctx, slot, &[content]).is_none() {
        return false;
    }
    free_entry(k, ctx, slot);
    k.vmstat.count(VmEvent::Pswpout, 1);
    k.memcgs[memcg as usize].count(VmEvent::Pswpout, 1);
    k.vmstat.count(VmEvent::Zswpwb, 1);
    k.memcgs[memcg as usize].count(VmEvent::Zswpwb, 1);
    k.zswap.stats.written_back_pages += 1;
    true
}

/// What one visit of a memcg's zswap LRU head did (list_lru_walk_one with nr_to_walk = 1,
/// shrink_memcg_cb).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// The LRU holds no live entry.
    Empty,
    /// The head was referenced: its bit cleared, rotated to the tail (second chance).
    Rotated,
    WrittenBack,
    /// Writeback failed (the slot is in the swap cache: a swap-in made it hot); rotated.
    Failed,
}

/// Visit the head of `memcg`'s zswap LRU. Stale records (entries freed since) are not on the
/// kernel's list: they are skipped without counting as a visit.
fn walk_one(k: &mut Kernel, ctx: &mut Ctx, memcg: u16) -> Walk {
    loop {
        let Some((raw, gen)) = k.zswap.lru[memcg as usize].pop_front() else {
            return Walk::Empty;
        };
        if !live(&k.zswap.trees, raw, gen) {
            continue;
        }
        let slot = SwapEntry::from_raw(raw);
        let t = &mut k.zswap.trees[slot.dev()];
        if std::mem::take(&mut t.referenced[slot.offset() as usize]) {
            k.zswap.lru[memcg as usize].push_back((raw, gen));
            return Walk::Rotated;
        }
        if writeback_entry(k, ctx, slot) {
            return Walk::WrittenBack;
        }
        if live(&k.zswap.trees, raw, gen) {
            k.zswap.lru[memcg as usize].push_back((raw, gen));
        }
        return Walk::Failed;
    }
}

/// Write back one of `memcg`'s entries, giving referenced ones their second chance on the
/// way (at most as many visits as the LRU has records). Returns whether one was written back.
fn shrink_memcg(k: &mut Kernel, ctx: &mut Ctx, memcg: u16) -> bool {
    for _ in 0..k.zswap.lru[memcg as usize].len() {
        match walk_one(k, ctx, memcg) {
            Walk::Rotated => continue,
            Walk::WrittenBack => return true,
            Walk::Empty | Walk::Failed => return false,
        }
    }
    false
}

/// shrink_memcg as shrink_worker calls it: one LRU visit (0, -ENOENT or -EAGAIN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShrinkOnce {
    WrittenBack,
    /// -ENOENT: nothing to write back in this memcg; not a failure.
    NoCandidate,
    /// -EAGAIN: the visited entry was referenced, or its writeback failed.
    Again,
}

fn shrink_memcg_once(k: &mut Kernel, ctx: &mut Ctx, memcg: u16) -> ShrinkOnce {
    if !k.memcgs[memcg as usize].zswap_writeback {
        return ShrinkOnce::NoCandidate;
    }
    match walk_one(k, ctx, memcg) {
        Walk::Empty => ShrinkOnce::NoCandidate,
        Walk::WrittenBack => ShrinkOnce::WrittenBack,
        Walk::Rotated | Walk::Failed => ShrinkOnce::Again,
    }
}

/// One pass of shrink_worker's loop (follows shrink_worker, mm/zswap.c): the next memcg in
/// the round-robin walk (past the last one, the end of a tree walk) loses one entry. It
/// stops once the pool is back at the accept threshold or after MAX_RECLAIM_RETRIES
/// failures (a failed memcg, or a whole walk with no candidate). The body of the
/// ZswapShrink kernel thread: the kernel runs it from the zswap-shrink workqueue, with a
/// cond_resched() between passes.
pub fn shrink_worker_step(k: &mut Kernel, ctx: &mut Ctx) -> KthreadNext {
    let z = &mut k.zswap;
    if !z.shrink_running {
        z.shrink_running = true;
        z.shrink_failures = 0;
        z.shrink_attempts = 0;
    }
    let nr_memcgs = k.memcgs.len();
    let at = z.next_shrink;
    z.next_shrink = (at + 1) % (nr_memcgs + 1);
    let give_up = if at == nr_memcgs {
        // mem_cgroup_iter returned NULL: a whole walk without a candidate is a failure.
        let failed = z.shrink_attempts == 0;
        z.shrink_attempts = 0;
        failed && z.count_failure()
    } else {
        let result = shrink_memcg_once(k, ctx, at as u16);
        let z = &mut k.zswap;
        if result != ShrinkOnce::NoCandidate {
            z.shrink_attempts += 1;
        }
        result == ShrinkOnce::Again && z.count_failure()
    };
    let z = &mut k.zswap;
    if give_up || z.pool_pages() <= z.accept_pool_pages {
        z.shrink_running = false;
        return KthreadNext::Wait;
    }
    KthreadNext::Run
}

/// The zswap shrinker in memcg reclaim (zswap_shrinker_count/scan): with `shrinker_enabled`,
/// write back up to (entries >> priority) of the memcg's coldest entries, fewer the better
/// they compress (the count is scaled by compressed/uncompressed size).
pub fn shrinker_scan(k: &mut Kernel, ctx: &mut Ctx, memcg: u16, priority: u32) -> u64 {
    if !k.zswap.shrinker_enabled || !k.memcgs[memcg as usize].zswap_writeback {
        return 0;
    }
    let cg = &k.memcgs[memcg as usize];
    if cg.zswapped == 0 {
        return 0;
    }
    // zswap_shrinker_count: entries x (pool pages / entries), i.e. the compressed size in
    // pages (recent disk swap-ins, which the kernel subtracts, are not modelled).
    let mut to_scan = (cg.zswap_bytes / PAGE_SIZE) >> priority;
    let mut written = 0;
    while to_scan > 0 && shrink_memcg(k, ctx, memcg) {
        to_scan -= 1;
        written += 1;
    }
    written
}

impl Zswap {
    /// Simulator bytes per swap slot of zswap's per-slot arrays when it is enabled
    /// (crate::footprint).
    pub fn bytes_per_slot() -> usize {
        fn elem_bytes<T>(_: &[T]) -> usize {
            std::mem::size_of::<T>()
        }
        let t = Tree::new(0);
        elem_bytes(&t.len)
            + elem_bytes(&t.handle)
            + elem_bytes(&t.memcg)
            + elem_bytes(&t.gen)
            + elem_bytes(&t.referenced)
            + elem_bytes(&t.class)
            + elem_bytes(&t.key)
    }
}

#[cfg(test)]
mod tests {
    use crate::mm::swapfile::SlotData;
    use crate::mm::Kernel;
    use crate::sched::{run_tasks, Task};
    use crate::workload::{self, Op};
    use crate::Scenario;

    /// The pool-limit scenario with one usemem process (order-0 pages) on one CPU through a
    /// 32 MiB memcg: the pool fills and the shrink worker writes entries back.
    fn pool_limit_one_task() -> Scenario {
        let text = include_str!("../../../../scenarios/zswap-pool-limit.toml")
            .replace("cpus = 2", "cpus = 1")
            .replace("nproc = 2", "nproc = 1")
            .replace("max = \"64M\"", "max = \"32M\"");
        Scenario::from_toml_str(&text).unwrap()
    }

    #[test]
    fn writeback_takes_the_oldest_entries_first() {
        let s = pool_limit_one_task();
        let mut k = Kernel::new(&s);
        let spec = &s.workloads[0];
        let t = workload::tasks(spec, s.seed).remove(0);
        let memcg = k.memcg_id(t.memcg.as_deref());
        let mm = k.new_mm(memcg, spec.content());
        let ops: Vec<Op> = t.ops.into_iter().filter(|op| *op != Op::Exit).collect();
        let mut tasks = vec![Task::new(t.name, mm, 0, ops)];
        run_tasks(
            &mut k,
            &mut tasks,
            s.seed,
            s.machine.sched_slice_ns,
            true,
            &mut |_, _| {},
        )
        .unwrap();
        // usemem writes its pages in address order and nothing touches them again, so reclaim
        // stores them in that order; the LRU must give back the oldest stores first (their
        // second chance only rotates every entry once).
        let vma = k.mms[mm as usize].vmas[0].as_ref().unwrap();
        let where_: Vec<SlotData> = vma
            .ptes
            .iter()
            .filter(|p| p.is_swap())
            .map(|p| {
                let e = p.swap_entry();
                k.swap.devices[e.dev()].map.data[e.offset() as usize]
            })
            .collect();
        let device = where_.iter().filter(|d| **d == SlotData::Device).count() as u64;
        let first_in_zswap = where_.iter().position(|d| *d == SlotData::Zswap).unwrap();
        let stats = &k.zswap.stats;
        assert!(stats.written_back_pages > 0, "the pool never filled");
        // On the device: entries written back, and pages the full pool refused.
        assert!(device > stats.written_back_pages && stats.pool_limit_hit > 0);
        let device_before_zswap = where_[..first_in_zswap]
            .iter()
            .filter(|d| **d == SlotData::Device)
            .count() as u64;
        assert!(
            device_before_zswap >= stats.written_back_pages,
            "an entry stored after one still in zswap was written back: {device_before_zswap} \
             device pages precede the oldest zswap entry, {} were written back",
            stats.written_back_pages
        );
    }
}
