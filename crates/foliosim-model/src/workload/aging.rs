//! The aging prelude of `[machine.start]`: a machine that has run for a while before the
//! workload starts. "churn" forks processes one after another on CPU 0, each with a kernel
//! stack, its task_struct, mm_struct and vm_area_struct, a heap of a size drawn from 64 KiB to
//! 32 MiB (base pages: MADV_NOHUGEPAGE, as most long-running processes' heaps are under THP
//! "madvise") written whole (its page tables with it), and `files_per_process` file lookups
//! (a dentry and an inode each, left unused in the dcache); the oldest processes exit to keep
//! the live heaps under `resident_percent` of memory, until `turnover` of heap was faulted.
//! Then the processes exit down to `keep_percent` of memory (long-running services, which do
//! not run during the workload), and the dcache shrinker frees `slab_shrink_percent` of the
//! unused dentries and inodes, oldest first. The kernel's own mechanisms decide the rest:
//! where each allocation lands, which pageblocks unmovable and reclaimable allocations claim or
//! steal (mm/page_alloc/fallback.rs), what stays allocated in them.
//!
//! The prelude runs from boot (time 0) outside the scheduler; the workload's tasks start when
//! it ends (`Kernel::workload_start_ns`). Its counters are reset, not reported: /proc/vmstat's
//! events, the zones' allocation events and extfrag counts, and the lock statistics start from
//! zero with the workload (gauges such as nr_free_pages and Slab show the state it left).
//! Deterministic: every draw comes from the scenario seed's "aging" stream.

use crate::content::ContentClass;
use crate::engine::rng::SimRng;
use crate::engine::Ctx;
use crate::mm::kmem::{alloc_thread_stack, free_thread_stack};
use crate::mm::memcontrol::ROOT_MEMCG;
use crate::mm::memory::handle_mm_fault;
use crate::mm::mmap::{exit_mmap, ThpAdvice};
use crate::mm::slub::{d_alloc, kmem_cache_alloc, kmem_cache_free, prune_sb, Cache};
use crate::mm::vmstat::VmStat;
use crate::mm::{Kernel, MmError};
use crate::scenario::StartSpec;
use std::collections::VecDeque;

/// Heap sizes: 16 << (0..=MAX_HEAP_SHIFT) pages, 64 KiB to 32 MiB.
const MIN_HEAP_PAGES: u32 = 16;
const MAX_HEAP_SHIFT: u64 = 9;

/// A churn process: its mm, heap size and slab objects (task_struct, mm_struct, its VMA).
struct Proc {
    mm: u32,
    heap_pages: u64,
    objects: [(Cache, u32); 3],
}

/// Run the prelude `start` names; the workload starts when it returns.
pub fn run_prelude(k: &mut Kernel, start: &StartSpec, seed: u64) -> Result<(), MmError> {
    if start.prelude != "churn" {
        return Ok(());
    }
    let mut ctx = Ctx::new(0, 0);
    let mut rng = SimRng::stream(seed, "aging");
    let memory_pages = k.node_zone(k.nodes.cpu_node()).nr_pages as u64;
    let resident_max = memory_pages * start.resident_percent as u64 / 100;
    let turnover_pages = start.turnover.pages();
    let pool = file_pool(k, &mut rng, memory_pages)?;
    let (mut live, mut resident, mut turned) = (VecDeque::new(), 0u64, 0u64);
    while turned < turnover_pages {
        let heap_pages = (MIN_HEAP_PAGES as u64) << rng.below(MAX_HEAP_SHIFT + 1);
        while resident + heap_pages > resident_max {
            let Some(p) = live.pop_front() else { break };
            resident -= exit_proc(k, &mut ctx, p);
        }
        let p = fork_proc(k, &mut ctx, heap_pages, start.files_per_process)?;
        resident += p.heap_pages;
        turned += p.heap_pages;
        if !pool.is_empty() {
            let file = pool[rng.below(pool.len() as u64) as usize];
            turned += rewrite_file(k, &mut ctx, p.mm, file)?;
        }
        live.push_back(p);
    }
    // The newest processes that fit in keep_percent stay (long-running services).
    let mut keep = memory_pages * start.keep_percent as u64 / 100;
    while let Some(p) = live.pop_back() {
        if p.heap_pages <= keep {
            keep -= p.heap_pages;
        } else {
            exit_proc(k, &mut ctx, p);
        }
    }
    let unused = k.kmem.slabs.nr_unused_dentries();
    prune_sb(
        k,
        &mut ctx,
        2 * unused * start.slab_shrink_percent as u64 / 100,
    );
    // The survivors keep their memory; the scheduler sees no task of theirs.
    k.workload_start_ns = ctx.now_ns;
    reset_counters(k);
    Ok(())
}

/// fork + exec of a churn process: its kernel objects and stack, a heap written whole, its
/// file lookups.
fn fork_proc(k: &mut Kernel, ctx: &mut Ctx, heap_pages: u64, files: u32) -> Result<Proc, MmError> {
    let mm = k.new_mm(ROOT_MEMCG, ContentClass::default());
    let objects = [
        (
            Cache::TaskStruct,
            kmem_cache_alloc(k, ctx, Cache::TaskStruct)?,
        ),
        (Cache::MmStruct, kmem_cache_alloc(k, ctx, Cache::MmStruct)?),
        (
            Cache::VmAreaStruct,
            kmem_cache_alloc(k, ctx, Cache::VmAreaStruct)?,
        ),
    ];
    alloc_thread_stack(k, ctx, mm)?;
    k.mms[mm as usize].try_mmap(0, heap_pages as u32, ThpAdvice::NoHugepage)?;
    let mut index = 0;
    while (index as u64) < heap_pages {
        let (start, order) = handle_mm_fault(k, ctx, mm, 0, index, true)?;
        index = start + (1 << order);
    }
    for _ in 0..files {
        d_alloc(k, ctx, crate::mm::folio::NIL)?;
    }
    Ok(Proc {
        mm,
        heap_pages,
        objects,
    })
}

/// The file churn's files, on the scenario's disk after its `[[file]]`s: sizes drawn like
/// the heaps', 64 KiB to 16 MiB, up to twice the memory or 90% of the disk space left. None
/// without a disk.
fn file_pool(k: &mut Kernel, rng: &mut SimRng, memory_pages: u64) -> Result<Vec<u32>, MmError> {
    let Some(disk) = &k.pagecache.disk else {
        return Ok(Vec::new());
    };
    let mut room = ((disk.nr_pages - disk.used_pages) * 9 / 10).min(2 * memory_pages);
    let mut pool = Vec::new();
    loop {
        let pages = (MIN_HEAP_PAGES as u64) << rng.below(MAX_HEAP_SHIFT);
        if pages > room {
            return Ok(pool);
        }
        let id = k.pagecache.files.len() as u32;
        k.pagecache.create(id, pages as u32)?;
        room -= pages;
        pool.push(id);
    }
}

/// A file deleted and written anew, then read whole (cp over it, then a reader): its cached
/// pages are dropped, and the read fills the page cache again (reclaiming older cache as
/// memory runs out). Returns the pages read.
fn rewrite_file(k: &mut Kernel, ctx: &mut Ctx, mm: u32, file: u32) -> Result<u64, MmError> {
    let nr_pages = k.pagecache.file(file)?.nr_pages;
    for index in 0..nr_pages {
        if let Some(pfn) = k.pagecache.file(file)?.lookup(index) {
            crate::mm::filemap::folio_wait_locked(k, ctx, pfn);
            if k.pagecache.file(file)?.lookup(index) == Some(pfn) {
                crate::mm::filemap::filemap_remove_folio(k, ctx, pfn, None);
            }
        }
    }
    crate::mm::slub::lookup_file(k, ctx, file)?;
    let mut index = 0;
    while index < nr_pages {
        index += crate::mm::filemap::read::filemap_read_step(k, ctx, mm, file, index, nr_pages)?;
    }
    Ok(nr_pages as u64)
}

/// A churn process exits: its address space, stack and objects. Returns its heap pages.
fn exit_proc(k: &mut Kernel, ctx: &mut Ctx, p: Proc) -> u64 {
    exit_mmap(k, ctx, p.mm);
    free_thread_stack(k, ctx, p.mm);
    for (cache, id) in p.objects {
        kmem_cache_free(k, ctx, cache, id);
    }
    p.heap_pages
}

/// The prelude's counters are not the workload's: events, extfrag and lock statistics restart.
pub(crate) fn reset_counters(k: &mut Kernel) {
    k.vmstat = VmStat::default();
    for nid in 0..k.nodes.nr_nodes() {
        let z = k.node_zone_mut(nid);
        z.events = VmStat::default();
        z.extfrag = Default::default();
        z.lock.stats = Default::default();
        z.nr_free_stat.folds = 0;
        z.nr_free_stat.transfer_ns = 0;
    }
    k.counter_lines.transfer_ns = 0;
    for cg in &mut k.memcgs {
        for lv in cg.lruvecs_mut() {
            lv.lru_lock.stats = Default::default();
        }
    }
    for m in &mut k.mms {
        m.mmap_lock.stats = Default::default();
        m.mmap_lock.line_ns = 0;
    }
    for bus in [&mut k.membw, &mut k.tlb_bus] {
        bus.busy_ns = Default::default();
        bus.alone_ns = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page_alloc::{MigrateType, PAGEBLOCK_ORDER};
    use crate::Scenario;

    const AGED: &str = r#"
seed = 7
[machine]
cpus = 4
memory = "256M"
[machine.start]
prelude = "churn"
turnover = "1G"
[machine.disk]
kind = "ssd"
size = "1G"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

    fn aged(text: &str) -> Kernel {
        let s = Scenario::from_toml_str(text).unwrap();
        let mut k = Kernel::new(&s);
        run_prelude(&mut k, s.machine.start.as_ref().unwrap(), s.seed).unwrap();
        crate::mm::invariants::check(&k).unwrap();
        k
    }

    fn fresh_of(text: &str) -> Kernel {
        let s = Scenario::from_toml_str(text).unwrap();
        Kernel::new(&s)
    }

    /// Free blocks of pageblock order or more, in pageblocks.
    fn free_pageblocks(k: &Kernel) -> u32 {
        let a = k.pgdat[0].zone.free_area();
        (PAGEBLOCK_ORDER..=crate::mm::page_alloc::MAX_PAGE_ORDER)
            .map(|o| a.nr_free(o) << (o - PAGEBLOCK_ORDER))
            .sum()
    }

    #[test]
    fn the_prelude_is_deterministic() {
        let (a, b) = (aged(AGED), aged(AGED));
        assert_eq!(a.pgdat[0].zone.buddyinfo(), b.pgdat[0].zone.buddyinfo());
        assert_eq!(
            a.pgdat[0].zone.pagetypeinfo(),
            b.pgdat[0].zone.pagetypeinfo()
        );
        assert_eq!(a.kmem.gauges(), b.kmem.gauges());
        assert_eq!(a.workload_start_ns, b.workload_start_ns);
    }

    #[test]
    fn an_aged_machine_has_polluted_pageblocks_and_fewer_free_ones() {
        let fresh = fresh_of(AGED);
        let k = aged(AGED);
        let blocks = k.pgdat[0].zone.free_area().nr_pageblocks;
        assert_eq!(
            fresh.pgdat[0].zone.free_area().nr_pageblocks[MigrateType::Unmovable as usize],
            0
        );
        assert!(blocks[MigrateType::Unmovable as usize] > 0, "{blocks:?}");
        assert!(blocks[MigrateType::Reclaimable as usize] > 0, "{blocks:?}");
        let (f, a) = (free_pageblocks(&fresh), free_pageblocks(&k));
        assert!(a < f / 2, "free pageblocks: aged {a}, fresh {f}");
        // The prelude's counters are gone; its state (kernel memory, page cache) is not.
        assert_eq!(
            k.vm_events().to_map().get("pgfault").copied().unwrap_or(0),
            0
        );
        let g: std::collections::BTreeMap<_, _> = k.kmem.gauges().into_iter().collect();
        assert!(g["PageTables_kB"] > 0 && g["KernelStack_kB"] > 0 && g["SReclaimable_kB"] > 0);
        assert!(k.pagecache.nr_pages > 0 && k.workload_start_ns > 0);
    }

    #[test]
    fn invalid_start_values_name_the_field() {
        let bad = |from: &str, to: &str| {
            let text = AGED.replace(from, to);
            match Scenario::from_toml_str(&text) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{to} accepted"),
            }
        };
        let e = bad("prelude = \"churn\"", "prelude = \"old\"");
        assert!(
            e.contains("machine.start.prelude") && e.contains("fresh, churn"),
            "{e}"
        );
        let e = bad(
            "turnover = \"1G\"",
            "turnover = \"1G\"\nresident_percent = 95",
        );
        assert!(
            e.contains("machine.start.resident_percent") && e.contains("5 ..= 90"),
            "{e}"
        );
        let e = bad("turnover = \"1G\"", "turnover = \"1G\"\nkeep_percent = 80");
        assert!(e.contains("machine.start.keep_percent"), "{e}");
        let e = bad("turnover = \"1G\"", "turnover = \"1M\"");
        assert!(e.contains("machine.start.turnover"), "{e}");
        let e = bad(
            "turnover = \"1G\"",
            "turnover = \"1G\"\nslab_shrink_percent = 101",
        );
        assert!(e.contains("machine.start.slab_shrink_percent"), "{e}");
        let e = bad("turnover = \"1G\"", "turnover = \"1G\"\nage = 3");
        assert!(e.contains("age"), "{e}");
    }
}
