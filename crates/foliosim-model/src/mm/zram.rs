//! zram's store (drivers/block/zram/zram_drv.c): each 4 KiB page of a write compressed on its
//! own into the device's zsmalloc pool, same-filled pages kept as a value, incompressible
//! ("huge") pages stored whole. Its pool pages come from the buddy allocator and are charged to
//! no memcg: this is what makes zram's memory invisible to a memcg limit (seed 002).

use super::zsmalloc::{Handle, ZsConfig, ZsError, ZsPageSource as PageSource, ZsPool};
use crate::content::ContentClass;
use crate::engine::cost::CostModel;
use crate::hw::compressor::Codec;
use crate::hw::compressor::CodecCost;
use crate::scenario::PAGE_SIZE;
use serde::Serialize;

/// Per-slot length meaning "no data".
const EMPTY: u16 = u16::MAX;
/// Per-slot length of a same-filled page (ZRAM_SAME: the value lives in the slot's handle).
const SAME: u16 = 0;

/// /sys/block/zramN/mm_stat, in the kernel's field order and units.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct MmStat {
    /// Bytes of uncompressed data stored (pages x 4096).
    pub orig_data_size: u64,
    /// Bytes after compression (huge pages count 4096).
    pub compr_data_size: u64,
    /// Bytes of memory the pool holds (zs_get_total_pages x 4096).
    pub mem_used_total: u64,
    pub mem_used_max: u64,
    pub same_pages: u64,
    pub pages_compacted: u64,
    pub huge_pages: u64,
}

pub struct Zram {
    pub codec: Codec,
    /// Per swap slot (= zram sector of 4 KiB): compressed length, SAME or EMPTY.
    len: Vec<u16>,
    handle: Vec<Handle>,
    /// Content class index of the stored page: decompression cost depends on it.
    class: Vec<u8>,
    pub pool: ZsPool,
    stat: MmStat,
}

impl Zram {
    pub fn new(codec: Codec, nr_slots: u32) -> Zram {
        Zram {
            codec,
            len: vec![EMPTY; nr_slots as usize],
            handle: vec![Handle(0); nr_slots as usize],
            class: vec![0; nr_slots as usize],
            pool: ZsPool::new(ZsConfig::default()).expect("default zsmalloc config"),
            stat: MmStat::default(),
        }
    }

    pub fn has_data(&self, slot: u32) -> bool {
        self.len[slot as usize] != EMPTY
    }

    /// zram_write_page: store one page compressed to `compressed_len` bytes (or same-filled).
    /// A length that does not fit below a page is stored uncompressed (huge). Err when the
    /// pool needed a page and none was free (-ENOMEM: the swap write fails), with nothing kept.
    pub fn write_page(
        &mut self,
        slot: u32,
        class: ContentClass,
        compressed_len: u32,
        same_filled: bool,
        pages: &mut dyn PageSource,
    ) -> Result<(), ZsError> {
        self.free_slot(slot, pages);
        let i = slot as usize;
        self.class[i] = class.index();
        self.stat.orig_data_size += PAGE_SIZE;
        if same_filled {
            self.len[i] = SAME;
            self.stat.same_pages += 1;
            return Ok(());
        }
        let len = // At zsmalloc's huge class size the object would take a page anyway: store it whole.
        if compressed_len >= self.pool.huge_class_size_bytes() {
            self.stat.huge_pages += 1;
            PAGE_SIZE as u32
        } else {
            compressed_len.max(1)
        };
        let handle = match self.pool.zs_malloc(len, pages) {
            Ok(handle) => handle,
            Err(e) => {
                self.stat.orig_data_size -= PAGE_SIZE;
                if len == PAGE_SIZE as u32 {
                    self.stat.huge_pages -= 1;
                }
                return Err(e);
            }
        };
        self.len[i] = len as u16;
        self.handle[i] = handle;
        self.stat.compr_data_size += len as u64;
        self.note_pool_size();
        Ok(())
    }

    /// zram_slot_free_notify -> zram_free_page: drop the slot's data, if any.
    pub fn free_slot(&mut self, slot: u32, pages: &mut dyn PageSource) {
        let i = slot as usize;
        match self.len[i] {
            EMPTY => return,
            SAME => self.stat.same_pages -= 1,
            len => {
                self.pool
                    .zs_free(self.handle[i], pages)
                    .expect("zram frees a handle it holds");
                self.stat.compr_data_size -= len as u64;
                if len as u64 == PAGE_SIZE {
                    self.stat.huge_pages -= 1;
                }
            }
        }
        self.stat.orig_data_size -= PAGE_SIZE;
        self.len[i] = EMPTY;
        self.note_pool_size();
    }

    fn note_pool_size(&mut self) {
        self.stat.mem_used_total = self.pool.zs_get_total_pages() * PAGE_SIZE;
        self.stat.mem_used_max = self.stat.mem_used_max.max(self.stat.mem_used_total);
    }

    /// CPU time of zram_read_page's data work for `slot`: decompression (a same-filled page
    /// is a fill, a huge one a copy, both folded into the per-page read cost).
    pub fn read_cost_ns(&self, slot: u32, cost: &CostModel) -> u64 {
        match self.len[slot as usize] {
            EMPTY | SAME => 0,
            len if len as u64 >= PAGE_SIZE => 0,
            _ => {
                cost.codec_ns(
                    self.codec,
                    ContentClass::from_index(self.class[slot as usize]),
                )
                .1
            }
        }
    }

    pub fn mm_stat(&self) -> MmStat {
        self.stat.clone()
    }

    /// Slots holding data, for the invariant checker.
    pub fn stored_slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.len
            .iter()
            .enumerate()
            .filter(|(_, &l)| l != EMPTY)
            .map(|(s, _)| s as u32)
    }
}

impl Zram {
    /// Simulator bytes per swap slot of the per-slot arrays (crate::footprint).
    pub fn bytes_per_slot() -> usize {
        fn elem_bytes<T>(_: &[T]) -> usize {
            std::mem::size_of::<T>()
        }
        let z = Zram::new(Codec::LzoRle, 0);
        elem_bytes(&z.len) + elem_bytes(&z.handle) + elem_bytes(&z.class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pages(u32, Vec<u32>);
    impl PageSource for Pages {
        fn alloc_page(&mut self) -> Option<u32> {
            (self.0 > 0).then(|| {
                self.0 -= 1;
                self.0
            })
        }
        fn free_page(&mut self, pfn: u32) {
            self.1.push(pfn);
        }
    }

    #[test]
    fn same_filled_pages_take_no_pool_memory_and_huge_pages_take_a_page() {
        let mut z = Zram::new(Codec::LzoRle, 8);
        let mut pages = Pages(100, vec![]);
        z.write_page(1, ContentClass::Zero, 0, true, &mut pages)
            .unwrap();
        z.write_page(2, ContentClass::Random, 4000, false, &mut pages)
            .unwrap();
        z.write_page(3, ContentClass::Usemem, 1000, false, &mut pages)
            .unwrap();
        let s = z.mm_stat();
        assert_eq!(s.orig_data_size, 3 * 4096);
        assert_eq!(s.compr_data_size, 4096 + 1000);
        assert_eq!((s.same_pages, s.huge_pages), (1, 1));
        for slot in 1..=3 {
            z.free_slot(slot, &mut pages);
        }
        assert_eq!(z.mm_stat().orig_data_size, 0);
        assert_eq!(z.mm_stat().compr_data_size, 0);
        assert_eq!(z.stored_slots().count(), 0);
    }

    #[test]
    fn a_store_without_a_free_page_fails_and_leaves_nothing() {
        let mut z = Zram::new(Codec::Lz4, 4);
        let mut none = Pages(0, vec![]);
        assert!(z
            .write_page(0, ContentClass::Usemem, 1000, false, &mut none)
            .is_err());
        assert!(!z.has_data(0));
        assert_eq!(z.mm_stat(), MmStat::default());
    }
}
