//! What a RAM-backed swap device keeps in memory: zram's compressed store (mm/zram.rs) and a
//! RAM disk's pages (drivers/block/brd.c: one page per sector range written, kept until
//! discard, which swap never sends to brd). Both take their pages from the buddy allocator and
//! charge them to no memcg, so they add global, not memcg, pressure.

use super::folio::FolioTable;
use super::folio::{SwapEntry, NIL};
use super::gfp::Gfp;
use super::page_alloc::{alloc_pages_memalloc, free_pages_memalloc};
use super::zram::Zram;
use super::zsmalloc::ZsPageSource as PageSource;
use super::Kernel;
use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::hw::compressor::size_sample;
use crate::hw::compressor::CodecCost;

pub enum RamStore {
    /// A device whose data lives off the machine's memory (SSD, HDD, file).
    None,
    Zram(Box<Zram>),
    /// brd: the pfn holding each slot's page, NIL until first written.
    Brd(Vec<u32>),
}

impl RamStore {
    /// Pages of machine memory this store holds, for the invariant checker.
    pub fn pfns(&self) -> Vec<u32> {
        match self {
            RamStore::None => Vec::new(),
            RamStore::Zram(z) => z.pool.page_pfns(),
            RamStore::Brd(pages) => pages.iter().copied().filter(|&p| p != NIL).collect(),
        }
    }
}

/// zram's zs_malloc gfp (zram_write_page): GFP_NOIO | __GFP_NOWARN | __GFP_HIGHMEM |
/// __GFP_MOVABLE; zsmalloc pages are movable (migratable zspages).
pub const ZRAM_GFP: Gfp = Gfp(Gfp::GFP_NOIO.0 | Gfp::NOWARN.0 | Gfp::HIGHMEM.0 | Gfp::MOVABLE.0);
/// zswap_compress's zs_malloc gfp: GFP_NOWAIT | __GFP_NORETRY | __GFP_HIGHMEM | __GFP_MOVABLE.
pub const ZSWAP_GFP: Gfp =
    Gfp(Gfp::GFP_NOWAIT.0 | Gfp::NORETRY.0 | Gfp::HIGHMEM.0 | Gfp::MOVABLE.0);
/// brd_insert_page: GFP_NOIO | __GFP_ZERO | __GFP_HIGHMEM, unmovable.
pub const BRD_GFP: Gfp = Gfp(Gfp::GFP_NOIO.0 | Gfp::ZERO.0 | Gfp::HIGHMEM.0);

/// The buddy allocator as a page source for a store working under reclaim: no direct reclaim,
/// but the reserve below the min watermark is open to it (PF_MEMALLOC).
pub struct ZonePages<'a, 'l> {
    /// The allocating CPU's node.
    pub pgdat: &'a mut crate::mm::mmzone::PgData,
    pub folios: &'a FolioTable,
    pub ctx: &'a mut Ctx<'l>,
    pub gfp: Gfp,
}

/// `ZonePages` over `$k`'s zone for `$gfp`: a macro, so the borrows of `$k`'s fields stay
/// disjoint from whatever else of `$k` (a zsmalloc pool) the caller holds.
macro_rules! zone_pages {
    ($k:expr, $ctx:expr, $gfp:expr) => {
        $crate::mm::swap_devstore::ZonePages {
            pgdat: &mut $k.pgdat[$k.nodes.cpu_to_node($ctx.cpu)],
            folios: &$k.folios,
            ctx: $ctx,
            gfp: $gfp,
        }
    };
}
pub(crate) use zone_pages;

impl PageSource for ZonePages<'_, '_> {
    fn alloc_page(&mut self) -> Option<u32> {
        let pgdat = &mut *self.pgdat;
        alloc_pages_memalloc(
            &mut pgdat.zone,
            &mut pgdat.kswapd,
            self.folios,
            self.ctx,
            self.gfp,
            0,
        )
    }
    fn free_page(&mut self, pfn: u32) {
        free_pages_memalloc(&mut self.pgdat.zone, self.ctx, self.gfp, pfn, 0);
    }
}

/// The device's share of a write: zram compresses and stores each page (zram_write_page), brd
/// allocates a page for each slot it has not held yet. False, with nothing kept, when memory
/// ran out.
pub fn store_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    first: SwapEntry,
    contents: &[(ContentClass, u64)],
) -> bool {
    let cost = &k.cost;
    let dev = &mut k.swap.devices[first.dev()];
    let gfp = match dev.store {
        RamStore::Brd(_) => BRD_GFP,
        _ => ZRAM_GFP,
    };
    let mut pages = zone_pages!(k, ctx, gfp);
    match &mut dev.store {
        RamStore::None => true,
        RamStore::Zram(zram) => {
            for (i, &(class, key)) in contents.iter().enumerate() {
                let slot = first.offset() + i as u32;
                let same = class.same_filled(key);
                let (compress_ns, _) = cost.codec_ns(zram.codec, class);
                pages.ctx.spend(
                    CpuCost::ZramCompress,
                    cost.zram_write_page_ns + if same { cost.page_scan_ns } else { compress_ns },
                );
                let len = size_sample(zram.codec, class).compressed_len(key);
                if zram.write_page(slot, class, len, same, &mut pages).is_err() {
                    for undo in first.offset()..slot {
                        zram.free_slot(undo, &mut pages);
                    }
                    return false;
                }
            }
            true
        }
        RamStore::Brd(held) => {
            let range = first.offset() as usize..first.offset() as usize + contents.len();
            // Which slots got a page here, undone if a later one gets none: a bit per slot of
            // the range (no allocation per page written).
            let mut taken = Bits::for_pages(contents.len());
            for (i, slot) in range.clone().enumerate() {
                if held[slot] == NIL {
                    let Some(pfn) = pages.alloc_page() else {
                        for (j, s) in range.enumerate().take(i) {
                            if taken.get(j) {
                                let pfn = std::mem::replace(&mut held[s], NIL);
                                pages.free_page(pfn);
                            }
                        }
                        return false;
                    };
                    held[slot] = pfn;
                    taken.set(i);
                }
            }
            true
        }
    }
}

/// The device's share of a read: zram decompresses each page (zram_read_page).
pub fn load_pages(k: &mut Kernel, ctx: &mut Ctx, first: SwapEntry, nr: u32) {
    let dev = &k.swap.devices[first.dev()];
    if let RamStore::Zram(zram) = &dev.store {
        for slot in first.offset()..first.offset() + nr {
            ctx.spend(
                CpuCost::ZramDecompress,
                k.cost.zram_read_page_ns + zram.read_cost_ns(slot, &k.cost),
            );
        }
    }
}

/// The slots were released: zram drops their data (zram_slot_free_notify; its CPU cost is
/// charged under the freeing lock by swapfile.rs).
pub fn free_slots(k: &mut Kernel, ctx: &mut Ctx, first: SwapEntry, nr: u32) {
    let dev = &mut k.swap.devices[first.dev()];
    if let RamStore::Zram(zram) = &mut dev.store {
        let mut pages = zone_pages!(k, ctx, ZRAM_GFP);
        for slot in first.offset()..first.offset() + nr {
            zram.free_slot(slot, &mut pages);
        }
    }
}

/// A bit per page of a write: one word up to 64 pages (every write but a THP's).
enum Bits {
    Word(u64),
    Words(Vec<u64>),
}

impl Bits {
    fn for_pages(n: usize) -> Bits {
        if n <= 64 {
            Bits::Word(0)
        } else {
            Bits::Words(vec![0; n.div_ceil(64)])
        }
    }

    fn set(&mut self, i: usize) {
        match self {
            Bits::Word(w) => *w |= 1 << i,
            Bits::Words(v) => v[i / 64] |= 1 << (i % 64),
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Bits::Word(w) => *w >> i & 1 != 0,
            Bits::Words(v) => v[i / 64] >> (i % 64) & 1 != 0,
        }
    }
}
