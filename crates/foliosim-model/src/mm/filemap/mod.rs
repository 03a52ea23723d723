//! The page cache (mm/filemap.c): files on the filesystem disk and their cached pages.
//!
//! A file is a size in pages, an extent of the disk, and one slot per page index (the
//! address_space's xarray, a dense Vec<u32>): NIL when not cached, else the pfn of an order-0
//! folio flagged FILE in the folio table, whose owner fields point back (owner_mm = file id,
//! owner_index = page index; folio.rs). Large folios are not put in the page cache: the model's
//! filesystem is one without large folio support (mapping_large_folio_support false, ext4
//! before 6.16), so readahead and faults allocate order 0.
//!
//! Mapped pages are found through the file's i_mmap (the VMAs mapping it, with their file
//! offset; rmap.rs). Faults are in fault.rs, read(2) in read.rs, readahead in
//! mm/readahead.rs, drop_caches in mm/truncate.rs, dirty pages and the flusher in
//! mm/page_writeback.rs, reclaim of file folios in mm/vmscan/file.rs.

pub mod fault;
pub mod read;
pub mod rmap;

use super::folio::{flags, NIL};
use super::gfp::Gfp;
use super::memcontrol::try_charge;
use super::readahead::RaState;
use super::vmstat::VmEvent;
use super::workingset::{slot_folio, slot_shadow, Shadow};
use super::{Kernel, MmError};
use crate::cpu_cost::CpuCost;
use crate::engine::{Ctx, WaitKind};
use crate::hw::blockdev::{BlockDevice, Completion};
use crate::scenario::{Scenario, SwapDeviceSpec, TlbKind, PAGE_SIZE};
use std::collections::BTreeSet;

/// 512-byte sectors per page: /proc/vmstat's pgpgin/pgpgout count KiB (submit_bio counts
/// sectors, vmstat_start halves them), 4 per page.
pub const KIB_PER_PAGE: u64 = PAGE_SIZE / 1024;

/// The filesystem's block device (the scenario's `[machine.disk]`).
pub struct Disk {
    pub bdev: BlockDevice,
    pub nr_pages: u64,
    /// Pages given to files so far: files are laid out one after another.
    pub used_pages: u64,
    /// bdi->ra_pages: `read_ahead_kb` in pages.
    pub ra_pages: u32,
}

/// One VMA mapping a file (an i_mmap entry): file page `pgoff` is the VMA's page 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMapping {
    pub mm: u32,
    pub vma: u32,
    pub pgoff: u32,
    pub nr_pages: u32,
}

impl FileMapping {
    /// The VMA page mapping file page `index`, if this mapping covers it.
    #[inline]
    pub fn vma_index(&self, index: u32) -> Option<u32> {
        (index >= self.pgoff && index - self.pgoff < self.nr_pages).then(|| index - self.pgoff)
    }
}

/// An inode with its address_space and the open file's readahead state.
pub struct File {
    pub nr_pages: u32,
    /// Page index -> pfn of the cached page, NIL when not cached, or the shadow entry reclaim
    /// left of an evicted page (mm/workingset.rs).
    pub pages: Vec<u32>,
    /// First disk page of the file's extent.
    pub disk_start: u64,
    pub nr_cached: u32,
    /// Indices of dirty pages (the xarray's PAGECACHE_TAG_DIRTY), in writeback order.
    pub dirty: BTreeSet<u32>,
    /// inode->dirtied_when: when the file last went from clean to dirty.
    pub dirtied_when_ns: u64,
    /// The VMAs mapping the file (i_mmap).
    pub i_mmap: Vec<FileMapping>,
    /// file->f_ra: one per file (the tasks share one open file, as thpscale's threads do).
    pub ra: RaState,
}

impl File {
    fn new(nr_pages: u32, disk_start: u64, ra_pages: u32) -> File {
        File {
            nr_pages,
            pages: vec![NIL; nr_pages as usize],
            disk_start,
            nr_cached: 0,
            dirty: BTreeSet::new(),
            dirtied_when_ns: 0,
            i_mmap: Vec::new(),
            ra: RaState::new(ra_pages),
        }
    }

    /// filemap_get_folio: the cached page at `index`.
    #[inline]
    pub fn lookup(&self, index: u32) -> Option<u32> {
        slot_folio(*self.pages.get(index as usize)?)
    }
}

/// Every file, the disk, and the node's page-cache counters.
pub struct PageCache {
    /// By file id; None for ids not created (yet).
    pub files: Vec<Option<File>>,
    pub disk: Option<Disk>,
    /// NR_FILE_PAGES of the page cache proper (the swap cache is `nr_swapcache`).
    pub nr_pages: u64,
    /// NR_SWAPCACHE: pages in the swap cache (part of NR_FILE_PAGES in the kernel).
    pub nr_swapcache: u64,
    /// NR_FILE_MAPPED: page-cache pages mapped by at least one PTE.
    pub nr_mapped: u64,
    /// NR_FILE_DIRTY
    pub nr_dirty: u64,
    /// arch_wants_old_prefaulted_pte: arm64 maps fault-around pages old, x86 young.
    pub old_prefaulted_pte: bool,
    /// The flusher's pending work (page_writeback.rs).
    pub wb: super::page_writeback::WbState,
    /// PGDAT_DIRTY / PGDAT_WRITEBACK: kswapd saw only dirty / only writeback file folios at
    /// the LRU tail (shrink_node); cleared when the node is balanced.
    pub pgdat_dirty: bool,
    pub pgdat_writeback: bool,
    /// LRUVEC_NODE_CONGESTED: kswapd met only dirty file folios already written and cycled
    /// back before their write completed; direct reclaimers throttle (mm/vmscan.rs).
    pub lruvec_congested: bool,
}

impl PageCache {
    /// The disk and the scenario's `[[file]]`s, on disk and not cached (validated to fit).
    pub fn new(scenario: &Scenario) -> PageCache {
        let disk = scenario.machine.disk.as_ref().map(|spec| {
            let mut dev = SwapDeviceSpec::new(spec.kind, spec.size);
            dev.latency_ns = spec.latency_ns;
            dev.bandwidth_bytes_per_s = spec.bandwidth_bytes_per_s;
            Disk {
                bdev: BlockDevice::new(&dev),
                nr_pages: spec.size.pages(),
                used_pages: 0,
                ra_pages: (spec.read_ahead_kb as u64 * 1024 / PAGE_SIZE) as u32,
            }
        });
        let mut pc = PageCache {
            files: Vec::new(),
            disk,
            nr_pages: 0,
            nr_swapcache: 0,
            nr_mapped: 0,
            nr_dirty: 0,
            old_prefaulted_pte: scenario.machine.tlb == TlbKind::Arm64Tlbi,
            wb: Default::default(),
            pgdat_dirty: false,
            pgdat_writeback: false,
            lruvec_congested: false,
        };
        for (id, f) in scenario.files.iter().enumerate() {
            pc.create(id as u32, f.size.pages() as u32)
                .expect("validated [[file]] sizes");
        }
        pc
    }

    /// Create file `id` of `nr_pages` on the disk: its content is written there, nothing is
    /// cached (a file written and then dropped from the cache).
    pub fn create(&mut self, id: u32, nr_pages: u32) -> Result<(), MmError> {
        let disk = self.disk.as_mut().ok_or(MmError::NoDisk)?;
        if self.files.get(id as usize).is_some_and(|f| f.is_some()) {
            return Err(MmError::FileExists { file: id });
        }
        let free = disk.nr_pages - disk.used_pages;
        if nr_pages as u64 > free {
            return Err(MmError::NoSpace {
                file: id,
                nr_pages,
                free_pages: free,
            });
        }
        let file = File::new(nr_pages, disk.used_pages, disk.ra_pages);
        disk.used_pages += nr_pages as u64;
        if self.files.len() <= id as usize {
            self.files.resize_with(id as usize + 1, || None);
        }
        self.files[id as usize] = Some(file);
        Ok(())
    }

    pub fn file(&self, id: u32) -> Result<&File, MmError> {
        self.files
            .get(id as usize)
            .and_then(|f| f.as_ref())
            .ok_or(MmError::NoSuchFile { file: id })
    }

    #[inline]
    pub fn file_mut(&mut self, id: u32) -> &mut File {
        self.files[id as usize]
            .as_mut()
            .expect("page-cache folio of a live file")
    }
}

/// Is a read of the page-cache folio at `pfn` still in flight at `now_ns`? A completed one
/// is unlocked on the way (the bio's end_io, observed late).
#[inline]
pub fn folio_read_pending(k: &mut Kernel, pfn: u32, now_ns: u64) -> bool {
    let f = &mut k.folios;
    if !f.test(pfn, flags::LOCKED) {
        return false;
    }
    if f.writeback_done_ns(pfn) > now_ns {
        return true;
    }
    f.clear(pfn, flags::LOCKED);
    false
}

/// folio_lock on a folio being read: sleep (iowait) until the read completes.
pub fn folio_wait_locked(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    if folio_read_pending(k, pfn, ctx.now_ns) {
        let done_ns = k.folios.writeback_done_ns(pfn);
        debug_assert!(done_ns != u64::MAX, "wait on a read never submitted");
        ctx.wait_until(done_ns, WaitKind::Io);
        k.folios.clear(pfn, flags::LOCKED);
    }
}

/// filemap_add_folio: charge the newly allocated order-0 `pfn` to `memcg` (with `gfp`, as
/// mem_cgroup_charge), then put it in file `file`'s slot `index`, locked for the read the
/// caller submits, and on the inactive file LRU, or the active one when the slot's shadow says
/// it refaults recently (workingset_refault; not for a page about to be overwritten,
/// __GFP_WRITE). A failed charge frees the page: false.
pub fn filemap_add_folio(
    k: &mut Kernel,
    ctx: &mut Ctx,
    file: u32,
    index: u32,
    pfn: u32,
    memcg: u16,
    gfp: Gfp,
) -> bool {
    if !try_charge(k, ctx, memcg, 1, gfp) {
        k.free_pages(ctx, pfn, 0);
        return false;
    }
    let f = k.pagecache.file_mut(file);
    let old = std::mem::replace(&mut f.pages[index as usize], pfn);
    debug_assert!(slot_folio(old).is_none(), "slot {index} taken");
    f.nr_cached += 1;
    k.pagecache.nr_pages += 1;
    k.folios.init(pfn, 0, memcg, (file, NIL, index));
    k.folios.set(pfn, flags::FILE | flags::LOCKED);
    k.folios.set_writeback_done_ns(pfn, u64::MAX);
    ctx.spend(CpuCost::FilemapAddFolio, k.cost.filemap_add_folio_ns);
    if let Some(shadow) = slot_shadow(old).filter(|_| !gfp.contains(Gfp::WRITE)) {
        super::workingset::workingset_refault(k, pfn, shadow);
    }
    k.folio_add_lru(ctx, pfn);
    true
}

/// __filemap_remove_folio + free: a clean, unmapped, unlocked page-cache folio leaves the
/// cache, leaving `shadow` in its slot when reclaim evicted it, and goes back to the allocator
/// (off its LRU, uncharged).
pub fn filemap_remove_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, shadow: Option<Shadow>) {
    let fl = &k.folios;
    debug_assert!(fl.test(pfn, flags::FILE));
    debug_assert!(!fl.test(pfn, flags::DIRTY | flags::WRITEBACK | flags::LOCKED));
    let (file, index) = (fl.owner_mm(pfn as usize), fl.owner_index(pfn as usize));
    let f = k.pagecache.file_mut(file);
    debug_assert_eq!(f.pages[index as usize], pfn);
    f.pages[index as usize] = shadow.map_or(NIL, Shadow::raw);
    f.nr_cached -= 1;
    k.pagecache.nr_pages -= 1;
    ctx.spend(CpuCost::FilemapRemoveFolio, k.cost.filemap_remove_folio_ns);
    k.folio_free(ctx, pfn);
}

/// Submit one read bio for the folios `pfns` (consecutive indices of one file, just added
/// and locked): the disk transfers them; each stays locked until the read completes.
/// Counts pgpgin. A synchronous device (brd) has copied them on return.
pub fn read_pages(k: &mut Kernel, ctx: &mut Ctx, pfns: &[u32]) {
    if pfns.is_empty() {
        return;
    }
    let nr = pfns.len() as u64;
    ctx.spend(CpuCost::SubmitBio, k.cost.bio_submit_ns);
    let disk = k.pagecache.disk.as_mut().expect("files live on the disk");
    let done_ns = match disk.bdev.read(ctx, &mut k.membw, nr * PAGE_SIZE) {
        Completion::At(t) => t,
        Completion::Sync => ctx.now_ns,
    };
    k.vmstat.count(VmEvent::Pgpgin, nr * KIB_PER_PAGE);
    for &pfn in pfns {
        k.folios.set_writeback_done_ns(pfn, done_ns);
        if done_ns <= ctx.now_ns {
            k.folios.clear(pfn, flags::LOCKED);
        }
    }
}

/// folio_mark_accessed: the reclaim-list policy's (classic: inactive,unreferenced ->
/// inactive,referenced -> active,unreferenced; MGLRU: lru_gen_inc_refs).
pub fn folio_mark_accessed(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let policy = k.cfg.lru_policy;
    policy.folio_mark_accessed(k, ctx, pfn);
}

/// folio_activate (lru_activate): an inactive folio on the LRU moves to its active list.
pub fn folio_activate(k: &mut Kernel, ctx: &mut Ctx, pfn: u32) {
    let f = &mut k.folios;
    if f.test(pfn, flags::ACTIVE) || !f.test(pfn, flags::LRU) {
        return;
    }
    let memcg = f.memcg(pfn as usize) as usize;
    let nr = f.nr_pages(pfn) as u64;
    let nid = k.nodes.nid(pfn);
    let cg = &mut k.memcgs[memcg];
    cg.lruvec_mut(nid).del_folio(&mut k.folios, pfn);
    k.folios.set(pfn, flags::ACTIVE);
    cg.lruvec_mut(nid).add_folio(&mut k.folios, pfn);
    cg.count(VmEvent::Pgactivate, nr);
    k.vmstat.count(VmEvent::Pgactivate, nr);
    cg.lruvec_mut(nid).lru_lock.hold(ctx, k.cost.lru_move_ns);
}

/// Map file page `index` (the cached folio `pfn`) at page `vma_index` of `vma` in `mm`:
/// the PTE, the mapcount, NR_FILE_MAPPED and MM_FILEPAGES (folio_add_file_rmap_ptes).
pub fn map_file_pte(k: &mut Kernel, mm: u32, vma: u32, vma_index: u32, pfn: u32, young: bool) {
    let m = &mut k.mms[mm as usize];
    let pte = &mut m.vma_mut(vma).ptes[vma_index as usize];
    debug_assert!(pte.is_none());
    *pte = super::mmap::Pte::present(pfn);
    m.rss_file += 1;
    let mc = k.folios.mapcount_mut(pfn as usize);
    *mc += 1;
    if *mc == 1 {
        k.pagecache.nr_mapped += 1;
    }
    if young {
        k.folios.set(pfn, flags::YOUNG);
    }
}

/// mmap of `nr_pages` of file `file` from page `offset_pages` as VMA `vma` of `mm`
/// (vma_link into i_mmap). Pages beyond the end of the file may be mapped; touching them is
/// SIGBUS.
pub fn mmap_file(
    k: &mut Kernel,
    mm: u32,
    vma: u32,
    file: u32,
    offset_pages: u32,
    nr_pages: u32,
    shared: bool,
) -> Result<(), MmError> {
    k.pagecache.file(file)?;
    k.mms[mm as usize].mmap_file(
        vma,
        nr_pages,
        super::mmap::VmaFile {
            file,
            pgoff: offset_pages,
            shared,
        },
    );
    k.pagecache.file_mut(file).i_mmap.push(FileMapping {
        mm,
        vma,
        pgoff: offset_pages,
        nr_pages,
    });
    Ok(())
}

/// The file side of munmap, after its PTEs are zapped: the VMA leaves i_mmap.
pub fn unlink_file_vma(k: &mut Kernel, mm: u32, vma: u32) {
    let Some(vf) = k.mms[mm as usize].vma_file(vma) else {
        return;
    };
    k.mms[mm as usize].vma_files[vma as usize] = None;
    let f = k.pagecache.file_mut(vf.file);
    f.i_mmap.retain(|m| !(m.mm == mm && m.vma == vma));
}

/// The vmstat gauges of the page cache and the LRU lists at `now_ns`, under /proc/vmstat's
/// names (include/linux/mmzone.h node_stat_item).
pub fn gauges(k: &Kernel, now_ns: u64) -> [(&'static str, u64); 9] {
    let pc = &k.pagecache;
    let sum = |list: fn(&super::lruvec::Lruvec) -> u64| -> u64 {
        k.memcgs.iter().flat_map(|cg| cg.lruvecs()).map(list).sum()
    };
    let writeback: u64 = k
        .memcgs
        .iter()
        .flat_map(|cg| cg.lruvecs())
        .map(|lv| lv.writeback_in_flight(&k.folios, now_ns))
        .sum();
    [
        ("nr_inactive_anon", sum(|l| l.lru_pages(false, false))),
        ("nr_active_anon", sum(|l| l.lru_pages(false, true))),
        ("nr_inactive_file", sum(|l| l.lru_pages(true, false))),
        ("nr_active_file", sum(|l| l.lru_pages(true, true))),
        ("nr_file_pages", pc.nr_pages + pc.nr_swapcache),
        ("nr_mapped", pc.nr_mapped),
        ("nr_dirty", pc.nr_dirty),
        ("nr_writeback", writeback),
        ("nr_swapcached", pc.nr_swapcache),
    ]
}
