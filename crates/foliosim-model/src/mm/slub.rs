//! SLUB (mm/slub.c) for the few caches whose pages matter to fragmentation, when kernel
//! memory is modelled (mm/kmem.rs): each cache carves slabs of `PAGE_SIZE << order` (its order
//! from calculate_order) into objects; allocation takes the first slab of the node's partial
//! list or a new slab from the buddy allocator; a free that empties a slab gives its pages back
//! once the partial list holds min_partial slabs. Objects are placed slab by slab, so freeing
//! them in another order (the dcache's LRU) leaves slabs partly used: pages that stay
//! allocated, unmovable or reclaimable, in their pageblocks.
//!
//! The dcache and inode cache (fs/dcache.c, fs/inode.c) are grown by file lookups and shrunk by
//! the superblock shrinker (super_cache_scan) from shrink_slab: an unused dentry and its inode
//! go together, oldest first; a file with page-cache pages or mappings keeps both (the inode
//! shrinker's invalidation of clean page cache is left out: such inodes are rotated).
//!
//! Simplifications: no per-CPU slabs or per-CPU partial lists (the node's partial list serves
//! every CPU), one node, a slab never falls back to its minimum order, no cost of its own.

use super::folio::NIL;
use super::gfp::Gfp;
use super::kmem::alloc_kernel_pages;
use super::vmstat::VmEvent;
use super::{Kernel, MmError};
use crate::engine::Ctx;
use std::collections::VecDeque;

/// slub_max_order: PAGE_ALLOC_COSTLY_ORDER.
const SLUB_MAX_ORDER: u32 = 3;
/// MIN_PARTIAL and MAX_PARTIAL: bounds of a cache's min_partial.
const MIN_PARTIAL: u32 = 5;
const MAX_PARTIAL: u32 = 10;
/// DEFAULT_SEEKS, and a superblock shrinker's batch (alloc_super: s_shrink->batch = 1024).
const DEFAULT_SEEKS: u64 = 2;
const SB_SHRINK_BATCH: u64 = 1024;

/// The caches modelled, by index into [`Slabs::caches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    Dentry = 0,
    Inode = 1,
    TaskStruct = 2,
    MmStruct = 3,
    VmAreaStruct = 4,
}

/// (name, object size in bytes as /proc/slabinfo's objsize shows it, SLAB_RECLAIM_ACCOUNT).
/// The sizes are estimates from a typical x86-64 6.x distribution kernel's slabinfo (they
/// vary with the config): dentry 192, ext4_inode_cache 1192, task_struct 9792 (with its
/// thread_struct), mm_struct 1344, vm_area_struct 184. Only the dentry and inode caches are
/// reclaimable (dcache_init, ext4's inode cache).
const CACHES: [(&str, u32, bool); 5] = [
    ("dentry", 192, true),
    ("ext4_inode_cache", 1192, true),
    ("task_struct", 9792, false),
    ("mm_struct", 1344, false),
    ("vm_area_struct", 184, false),
];

#[derive(Debug, Clone, Copy)]
struct Slab {
    pfn: u32,
    inuse: u32,
    /// Bumped when the id is reused, so stale partial-list entries are told apart.
    gen: u32,
    on_partial: bool,
}

/// struct kmem_cache with its one kmem_cache_node.
#[derive(Debug, Clone)]
pub struct KmemCache {
    pub name: &'static str,
    pub object_size_bytes: u32,
    pub reclaimable: bool,
    /// oo's order and objects.
    pub order: u32,
    pub objects_per_slab: u32,
    pub min_partial: u32,
    slabs: Vec<Slab>,
    free_ids: Vec<u32>,
    /// n->partial: (slab id, gen), first used first; entries of slabs since discarded or
    /// filled are skipped lazily.
    partial: VecDeque<(u32, u32)>,
    nr_partial: u32,
    /// Slabs allocated, and objects in use.
    pub nr_slabs: u64,
    pub nr_objects: u64,
}

/// order_objects.
fn order_objects(order: u32, size: u32) -> u32 {
    (4096u32 << order) / size
}

/// get_order of a size in bytes.
fn get_order(bytes: u32) -> u32 {
    bytes.div_ceil(4096).next_power_of_two().trailing_zeros()
}

/// calculate_order (mm/slub.c): the smallest order holding min_objects (4 x (fls(cpus) + 1))
/// with at most 1/16 of the slab left over, else 1/8, then 1/4, up to slub_max_order.
pub fn calculate_order(size: u32, nr_cpus: u32) -> u32 {
    let fls = u32::BITS - nr_cpus.leading_zeros();
    let max_objects = order_objects(SLUB_MAX_ORDER, size).max(1);
    let min_objects = (4 * (fls + 1)).min(max_objects);
    let min_order = get_order(min_objects * size);
    for fraction in [16, 8, 4, 2] {
        // calc_slab_order
        let fits = (min_order..=SLUB_MAX_ORDER).find(|&o| {
            let slab_size = 4096u32 << o;
            slab_size % size <= slab_size / fraction
        });
        if let Some(order) = fits {
            return order;
        }
    }
    get_order(size)
}

impl KmemCache {
    fn new(name: &'static str, size: u32, reclaimable: bool, nr_cpus: u32) -> KmemCache {
        let order = calculate_order(size, nr_cpus);
        // set_min_partial: ilog2(size) / 2, clamped.
        let min_partial =
            ((u32::BITS - 1 - size.leading_zeros()) / 2).clamp(MIN_PARTIAL, MAX_PARTIAL);
        KmemCache {
            name,
            object_size_bytes: size,
            reclaimable,
            order,
            objects_per_slab: order_objects(order, size),
            min_partial,
            slabs: Vec::new(),
            free_ids: Vec::new(),
            partial: VecDeque::new(),
            nr_partial: 0,
            nr_slabs: 0,
            nr_objects: 0,
        }
    }

    /// allocate_slab's gfp: GFP_KERNEL plus the cache's allocflags (__GFP_RECLAIMABLE for
    /// SLAB_RECLAIM_ACCOUNT caches); __GFP_COMP for orders above 0 does not change the lists.
    fn gfp(&self) -> Gfp {
        if self.reclaimable {
            Gfp::GFP_KERNEL.union(Gfp::RECLAIMABLE)
        } else {
            Gfp::GFP_KERNEL
        }
    }

    /// get_partial_node: an object from the first partial slab that has one.
    fn alloc_from_partial(&mut self) -> Option<u32> {
        while let Some(&(id, gen)) = self.partial.front() {
            let s = &mut self.slabs[id as usize];
            if s.gen != gen || !s.on_partial {
                self.partial.pop_front();
                continue;
            }
            s.inuse += 1;
            if s.inuse == self.objects_per_slab {
                s.on_partial = false;
                self.nr_partial -= 1;
                self.partial.pop_front();
            }
            self.nr_objects += 1;
            return Some(id);
        }
        None
    }

    /// A new slab at `pfn` with its first object taken.
    fn new_slab(&mut self, pfn: u32) -> u32 {
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.slabs.push(Slab {
                    pfn: NIL,
                    inuse: 0,
                    gen: 0,
                    on_partial: false,
                });
                self.slabs.len() as u32 - 1
            }
        };
        let s = &mut self.slabs[id as usize];
        s.gen = s.gen.wrapping_add(1);
        s.pfn = pfn;
        s.inuse = 1;
        s.on_partial = self.objects_per_slab > 1;
        if s.on_partial {
            self.partial.push_front((id, s.gen));
            self.nr_partial += 1;
        }
        self.nr_slabs += 1;
        self.nr_objects += 1;
        id
    }

    /// __slab_free of one object of slab `id`: a full slab goes to the partial list's tail;
    /// an empty one is discarded (its pfn returned) once min_partial slabs are partial.
    fn free_object(&mut self, id: u32) -> Option<u32> {
        let s = &mut self.slabs[id as usize];
        debug_assert!(
            s.inuse > 0 && s.pfn != NIL,
            "{}: free of a free object",
            self.name
        );
        s.inuse -= 1;
        self.nr_objects -= 1;
        if !s.on_partial && s.inuse > 0 {
            s.on_partial = true;
            self.partial.push_back((id, s.gen));
            self.nr_partial += 1;
            return None;
        }
        if s.inuse > 0 || self.nr_partial < self.min_partial {
            if !s.on_partial {
                s.on_partial = true;
                self.partial.push_back((id, s.gen));
                self.nr_partial += 1;
            }
            return None;
        }
        // slab_empty: off the partial list, the pages back to the buddy allocator.
        if s.on_partial {
            s.on_partial = false;
            self.nr_partial -= 1;
        }
        let pfn = std::mem::replace(&mut s.pfn, NIL);
        self.free_ids.push(id);
        self.nr_slabs -= 1;
        Some(pfn)
    }
}

/// An unused dentry on the superblock's LRU, with its inode; `file` is the scenario file it
/// names (NIL: one of the aging prelude's, never in the page cache).
#[derive(Debug, Clone, Copy)]
struct DentryEntry {
    dentry: u32,
    inode: u32,
    file: u32,
}

/// The caches and the dcache LRU.
#[derive(Debug, Clone, Default)]
pub struct Slabs {
    pub caches: Vec<KmemCache>,
    /// s_dentry_lru, oldest first.
    lru: VecDeque<DentryEntry>,
    /// By scenario file id: its dentry and inode are cached.
    file_cached: Vec<bool>,
    /// The shrinker's nr_deferred.
    nr_deferred: u64,
}

impl Slabs {
    pub fn new(nr_cpus: u32) -> Slabs {
        Slabs {
            caches: CACHES
                .iter()
                .map(|&(n, size, recl)| KmemCache::new(n, size, recl, nr_cpus))
                .collect(),
            ..Default::default()
        }
    }

    /// (NR_SLAB_RECLAIMABLE_B, NR_SLAB_UNRECLAIMABLE_B) in pages.
    pub fn nr_pages(&self) -> (u64, u64) {
        let (mut recl, mut unrecl) = (0, 0);
        for c in &self.caches {
            let pages = c.nr_slabs << c.order;
            if c.reclaimable {
                recl += pages;
            } else {
                unrecl += pages;
            }
        }
        (recl, unrecl)
    }

    /// Unused dentries on the LRU.
    pub fn nr_unused_dentries(&self) -> u64 {
        self.lru.len() as u64
    }

    /// Every slab's first pfn and order.
    pub fn held_blocks(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.caches.iter().flat_map(|c| {
            c.slabs
                .iter()
                .filter(|s| s.pfn != NIL)
                .map(move |s| (s.pfn, c.order))
        })
    }

    /// Objects in use equal the slabs' counts; partial counts match.
    pub fn check(&self) -> Result<(), String> {
        for c in &self.caches {
            let live = c.slabs.iter().filter(|s| s.pfn != NIL);
            let objects: u64 = live.clone().map(|s| s.inuse as u64).sum();
            let partial = live.clone().filter(|s| s.on_partial).count() as u32;
            if objects != c.nr_objects || live.count() as u64 != c.nr_slabs {
                return Err(format!(
                    "slab cache {}: objects or slabs miscounted",
                    c.name
                ));
            }
            if partial != c.nr_partial {
                return Err(format!(
                    "slab cache {}: nr_partial {} but {partial} partial slabs",
                    c.name, c.nr_partial
                ));
            }
        }
        let pairs = self.lru.len() as u64;
        let (d, i) = (
            &self.caches[Cache::Dentry as usize],
            &self.caches[Cache::Inode as usize],
        );
        if d.nr_objects < pairs || i.nr_objects < pairs {
            return Err(format!(
                "{pairs} dentries on the LRU but {} dentries, {} inodes allocated",
                d.nr_objects, i.nr_objects
            ));
        }
        Ok(())
    }
}

/// kmem_cache_alloc: one object of `cache`; returns its slab's id, the handle to free it by.
pub fn kmem_cache_alloc(k: &mut Kernel, ctx: &mut Ctx, cache: Cache) -> Result<u32, MmError> {
    let c = cache as usize;
    if let Some(id) = k.kmem.slabs.caches[c].alloc_from_partial() {
        return Ok(id);
    }
    let (gfp, order) = (k.kmem.slabs.caches[c].gfp(), k.kmem.slabs.caches[c].order);
    let pfn = alloc_kernel_pages(k, ctx, gfp, order)?;
    Ok(k.kmem.slabs.caches[c].new_slab(pfn))
}

/// kmem_cache_free of an object by its slab's id.
pub fn kmem_cache_free(k: &mut Kernel, ctx: &mut Ctx, cache: Cache, id: u32) {
    let c = &mut k.kmem.slabs.caches[cache as usize];
    let order = c.order;
    if let Some(pfn) = c.free_object(id) {
        k.free_pages(ctx, pfn, order);
    }
}

/// d_alloc + an inode (iget): a new dentry and inode, put unused on the LRU (the lookup's
/// reference dropped at once: the model has no open files).
pub fn d_alloc(k: &mut Kernel, ctx: &mut Ctx, file: u32) -> Result<(), MmError> {
    let dentry = kmem_cache_alloc(k, ctx, Cache::Dentry)?;
    let inode = match kmem_cache_alloc(k, ctx, Cache::Inode) {
        Ok(i) => i,
        Err(e) => {
            kmem_cache_free(k, ctx, Cache::Dentry, dentry);
            return Err(e);
        }
    };
    k.kmem.slabs.lru.push_back(DentryEntry {
        dentry,
        inode,
        file,
    });
    Ok(())
}

/// A path lookup of scenario file `file` (open, stat): its dentry and inode are allocated
/// unless cached.
pub fn lookup_file(k: &mut Kernel, ctx: &mut Ctx, file: u32) -> Result<(), MmError> {
    let cached = &mut k.kmem.slabs.file_cached;
    if cached.len() <= file as usize {
        cached.resize(file as usize + 1, false);
    }
    if cached[file as usize] {
        return Ok(());
    }
    d_alloc(k, ctx, file)?;
    k.kmem.slabs.file_cached[file as usize] = true;
    Ok(())
}

/// prune_dcache_sb + prune_icache_sb for `nr_to_scan` objects (a dentry and its inode are
/// two): the oldest unused dentries go with their inodes; one whose file has cached pages or
/// mappings is rotated. Returns the objects freed.
pub fn prune_sb(k: &mut Kernel, ctx: &mut Ctx, nr_to_scan: u64) -> u64 {
    let mut freed = 0;
    for _ in 0..nr_to_scan.div_ceil(2) {
        let Some(e) = k.kmem.slabs.lru.pop_front() else {
            break;
        };
        let busy = e.file != NIL
            && k.pagecache
                .file(e.file)
                .is_ok_and(|f| f.nr_cached > 0 || !f.i_mmap.is_empty());
        if busy {
            k.kmem.slabs.lru.push_back(e);
            continue;
        }
        if e.file != NIL {
            k.kmem.slabs.file_cached[e.file as usize] = false;
        }
        kmem_cache_free(k, ctx, Cache::Dentry, e.dentry);
        kmem_cache_free(k, ctx, Cache::Inode, e.inode);
        freed += 2;
    }
    freed
}

/// The superblock shrinker through do_shrink_slab (mm/shrinker.c) at reclaim `priority`:
/// freeable is the unused dentries and inodes (super_cache_count), seeks DEFAULT_SEEKS, the
/// work owed and deferred as for every shrinker. Returns the objects freed.
pub fn super_cache_shrink(k: &mut Kernel, ctx: &mut Ctx, priority: u32) -> u64 {
    let freeable = 2 * k.kmem.slabs.lru.len() as u64;
    if freeable == 0 {
        return 0;
    }
    let nr = std::mem::take(&mut k.kmem.slabs.nr_deferred);
    let delta = (freeable >> priority) * 4 / DEFAULT_SEEKS;
    let mut total_scan = ((nr >> priority) + delta).min(2 * freeable);
    let (mut freed, mut scanned) = (0, 0);
    while total_scan >= SB_SHRINK_BATCH || total_scan >= freeable {
        let nr_to_scan = SB_SHRINK_BATCH.min(total_scan);
        freed += prune_sb(k, ctx, nr_to_scan);
        k.vmstat.count(VmEvent::SlabsScanned, nr_to_scan);
        total_scan -= nr_to_scan;
        scanned += nr_to_scan;
        if nr_to_scan == 0 {
            break;
        }
    }
    k.kmem.slabs.nr_deferred = (nr + delta).saturating_sub(scanned).min(2 * freeable);
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calculate_order_matches_slabinfo_geometry() {
        // dentry: 21 objects in an order-0 slab; task_struct: 3 in an order-3 one.
        assert_eq!(calculate_order(192, 4), 0);
        assert_eq!(order_objects(0, 192), 21);
        assert_eq!(calculate_order(9792, 4), 3);
        assert_eq!(order_objects(3, 9792), 3);
        assert_eq!(calculate_order(1192, 4), 3);
    }

    #[test]
    fn an_emptied_slab_is_discarded_only_past_min_partial() {
        let mut c = KmemCache::new("t", 1024, false, 1);
        assert_eq!(c.objects_per_slab, 4 << c.order);
        let ids: Vec<u32> = (0..8).map(|i| c.new_slab(1000 + i * 8)).collect();
        // Eight partial slabs of one object each: freeing them discards down to min_partial.
        let discarded = ids
            .iter()
            .filter(|&&id| c.free_object(id).is_some())
            .count();
        assert_eq!(discarded as u32, 8 - c.min_partial + 1);
        assert_eq!(c.nr_slabs as u32, 8 - discarded as u32);
    }
}
