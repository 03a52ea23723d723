//! zsmalloc (mm/zsmalloc.c): the slab-like allocator zram and zswap store compressed pages in.
//!
//! Objects are grouped by size class. Classes run from `ZS_MIN_ALLOC_SIZE` (32 B) to PAGE_SIZE in
//! steps of PAGE_SIZE >> CLASS_BITS (16 B at 4 KiB pages); every object carries an 8-byte handle
//! header, so an object of `len` bytes lands in the first class of at least `len + 8` bytes.
//! A class packs its objects into zspages: chains of 1..=chain_size order-0 pages, the chain
//! length chosen per class to waste the least (see [`ChainRule`]). Classes whose
//! (pages per zspage, objects per zspage) are identical are merged into the largest of them, as
//! zs_create_pool does; the classes holding one object per one-page zspage are "huge" and all
//! merge into the PAGE_SIZE class.
//!
//! Placement follows the kernel: a class keeps its zspages on fullness lists (0 %, then ten
//! 10 %-wide bands, then 100 %); zs_malloc takes the first zspage of the fullest non-full band,
//! and a new zspage only when every zspage is full. zs_compact moves objects from the sparsest
//! zspages of a class into the fullest ones and frees the emptied zspages.
//!
//! The model holds occupancy, never contents: per object a u32 handle naming (class, zspage,
//! slot) through a dense table, and per zspage slot a u32 (the handle or the free-list link).
//! Pages come from, and return to, a caller-supplied [`ZsPageSource`] (the simulated buddy
//! allocator), which may fail: zs_malloc then fails with [`ZsError::NoMemory`] (the kernel's
//! -ENOMEM; zsmalloc never reclaims).

use std::fmt::Write as _;

/// Smallest class (ZS_MIN_ALLOC_SIZE: 32 on 64-bit, where OBJ_INDEX_BITS is wide).
pub const ZS_MIN_ALLOC_SIZE: u32 = 32;
/// Handle header stored in front of every non-huge object (ZS_HANDLE_SIZE, a long).
pub const ZS_HANDLE_SIZE: u32 = 8;
/// Class spacing is PAGE_SIZE >> CLASS_BITS.
pub const CLASS_BITS: u32 = 8;
/// Fullness groups: ZS_INUSE_RATIO_0, _10 .. _99 (ten bands), _100.
pub const NR_FULLNESS_GROUPS: usize = 12;
pub const ZS_INUSE_RATIO_0: u8 = 0;
pub const ZS_INUSE_RATIO_10: u8 = 1;
pub const ZS_INUSE_RATIO_99: u8 = 10;
pub const ZS_INUSE_RATIO_100: u8 = 11;

/// A zspage taken off its fullness list by compaction.
const ISOLATED: u8 = 0xfe;
/// A zspage id not in use (freed, waiting for reuse).
const DEAD: u8 = 0xff;
/// End of a list (fullness list, free-object list, free zspage ids).
const NONE: u32 = u32::MAX;
/// In a slot word: the slot is free and the low bits link to the next free slot.
const FREE_TAG: u32 = 1 << 31;
const FREE_END: u32 = FREE_TAG | (FREE_TAG - 1);
/// A handle id not in use.
const NO_CLASS: u16 = u16::MAX;

/// How a class's zspage chain length is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ChainRule {
    /// v6.3+ `calculate_zspage_chain_size`: one page for power-of-two sizes, otherwise the
    /// chain length in 1..=chain_size whose `len * PAGE_SIZE % size` is smallest (the first
    /// one on ties). Chain size is CONFIG_ZSMALLOC_CHAIN_SIZE, 8 by default.
    #[default]
    MinWaste,
    /// v6.2 and older `get_pages_per_zspage`: the chain length with the highest integer
    /// percentage of the zspage used (the first one on ties), up to 4 pages
    /// (ZS_MAX_ZSPAGE_ORDER 2). Fullness is still modelled with the v6.3+ ten bands.
    MaxUsedPercent,
}

/// Pool geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZsConfig {
    pub page_size_bytes: u32,
    /// ZS_MAX_PAGES_PER_ZSPAGE (CONFIG_ZSMALLOC_CHAIN_SIZE; Kconfig allows 4..=16).
    pub chain_size: u32,
    pub chain_rule: ChainRule,
}

impl Default for ZsConfig {
    /// v6.3+ defaults on 4 KiB pages.
    fn default() -> ZsConfig {
        ZsConfig {
            page_size_bytes: 4096,
            chain_size: 8,
            chain_rule: ChainRule::MinWaste,
        }
    }
}

impl ZsConfig {
    /// v6.2 and older: 4-page chains, used-percentage rule.
    pub fn legacy() -> ZsConfig {
        ZsConfig {
            chain_size: 4,
            chain_rule: ChainRule::MaxUsedPercent,
            ..ZsConfig::default()
        }
    }

    /// ZS_SIZE_CLASS_DELTA.
    pub fn class_delta_bytes(&self) -> u32 {
        self.page_size_bytes >> CLASS_BITS
    }

    /// ZS_SIZE_CLASSES: DIV_ROUND_UP(PAGE_SIZE - 32, delta) + 1.
    pub fn nr_size_classes(&self) -> u32 {
        (self.page_size_bytes - ZS_MIN_ALLOC_SIZE).div_ceil(self.class_delta_bytes()) + 1
    }

    /// get_size_class_index: the class index for an object of `size` bytes, handle included.
    pub fn size_class_index(&self, size_bytes: u32) -> u32 {
        let idx = if size_bytes > ZS_MIN_ALLOC_SIZE {
            (size_bytes - ZS_MIN_ALLOC_SIZE).div_ceil(self.class_delta_bytes())
        } else {
            0
        };
        idx.min(self.nr_size_classes() - 1)
    }

    /// Object size of class index `i` before merging.
    pub fn class_size_bytes(&self, i: u32) -> u32 {
        (ZS_MIN_ALLOC_SIZE + i * self.class_delta_bytes()).min(self.page_size_bytes)
    }

    /// The chain length (pages per zspage) for objects of `size` bytes.
    pub fn pages_per_zspage(&self, size_bytes: u32) -> u32 {
        let page = self.page_size_bytes as u64;
        let size = size_bytes as u64;
        match self.chain_rule {
            ChainRule::MinWaste => {
                if size_bytes.is_power_of_two() {
                    return 1;
                }
                let mut best = (u64::MAX, 1);
                for i in 1..=self.chain_size as u64 {
                    let waste = i * page % size;
                    if waste < best.0 {
                        best = (waste, i as u32);
                    }
                }
                best.1
            }
            ChainRule::MaxUsedPercent => {
                let mut best = (0, 1);
                for i in 1..=self.chain_size as u64 {
                    let zspage = i * page;
                    let used_pct = (zspage - zspage % size) * 100 / zspage;
                    if used_pct > best.0 {
                        best = (used_pct, i as u32);
                    }
                }
                best.1
            }
        }
    }

    fn validate(&self) -> Result<(), ZsError> {
        let p = self.page_size_bytes;
        if !p.is_power_of_two() || !(4096..=65536).contains(&p) {
            return Err(ZsError::BadConfig(format!(
                "page_size_bytes = {p}: must be a power of two from 4096 to 65536"
            )));
        }
        if !(1..=16).contains(&self.chain_size) {
            return Err(ZsError::BadConfig(format!(
                "chain_size = {}: must be 1..=16 (CONFIG_ZSMALLOC_CHAIN_SIZE)",
                self.chain_size
            )));
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ZsError {
    /// zs_malloc(0): -EINVAL.
    #[error("zs_malloc of 0 bytes")]
    ZeroSize,
    /// Larger than ZS_MAX_ALLOC_SIZE (PAGE_SIZE): -ENOSPC.
    #[error("zs_malloc of {len_bytes} bytes: larger than a page ({page_size_bytes})")]
    TooBig {
        len_bytes: u32,
        page_size_bytes: u32,
    },
    /// The page source had no page for a new zspage: -ENOMEM.
    #[error("zs_malloc: no page for a new zspage")]
    NoMemory,
    #[error("zs_free of handle {0}, which is not allocated")]
    BadHandle(u32),
    /// The model's dense indices are full (2^31 slots in a class or 2^31 handles).
    #[error("zsmalloc model capacity exceeded")]
    Capacity,
    #[error("bad zsmalloc config: {0}")]
    BadConfig(String),
}

/// Where a zspage's pages come from and go back to: the caller's page allocator.
pub trait ZsPageSource {
    /// One order-0 page for a zspage, or None (no reclaim: zs_malloc fails).
    fn alloc_page(&mut self) -> Option<u32>;
    /// A page of a freed zspage (or of one whose allocation failed half-way).
    fn free_page(&mut self, pfn: u32);
}

/// A page source for tests and benches: pfns counted up from 0, at most `limit` held at once,
/// freed pfns reused last-in first-out.
#[derive(Clone, Debug, Default)]
pub struct CountingPages {
    pub limit: Option<u64>,
    pub held: u64,
    next_pfn: u32,
    freed: Vec<u32>,
}

impl CountingPages {
    pub fn with_limit(limit_pages: u64) -> CountingPages {
        CountingPages {
            limit: Some(limit_pages),
            ..CountingPages::default()
        }
    }
}

impl ZsPageSource for CountingPages {
    fn alloc_page(&mut self) -> Option<u32> {
        if self.limit.is_some_and(|l| self.held >= l) {
            return None;
        }
        let pfn = match self.freed.pop() {
            Some(p) => p,
            None => {
                let p = self.next_pfn;
                self.next_pfn = self.next_pfn.checked_add(1)?;
                p
            }
        };
        self.held += 1;
        Some(pfn)
    }

    fn free_page(&mut self, pfn: u32) {
        self.held -= 1;
        self.freed.push(pfn);
    }
}

/// A zsmalloc object: stable across compaction (the kernel's handle points at a word holding
/// the object's location; here it indexes the pool's location table). Never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Handle(pub u32);

/// One row of /sys/kernel/debug/zsmalloc/<pool>/classes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ZsClassStat {
    /// The class index (the largest of the merged indices, as the kernel prints it).
    pub class: u32,
    pub size_bytes: u32,
    /// Zspages per fullness group: index 0 is ZS_INUSE_RATIO_0, 1..=10 the 10%..99% bands,
    /// 11 is 100%. debugfs prints groups 1..=11.
    pub zspages_by_fullness: [u64; NR_FULLNESS_GROUPS],
    pub obj_allocated: u64,
    pub obj_used: u64,
    pub pages_used: u64,
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
    /// zs_can_compact: pages compaction could free.
    pub freeable: u64,
    pub huge: bool,
}

/// One merged size class and its zspages (ids local to the class).
struct SizeClass {
    index: u32,
    size_bytes: u32,
    pages_per_zspage: u32,
    objs_per_zspage: u32,
    huge: bool,
    fullness_head: [u32; NR_FULLNESS_GROUPS],
    fullness_count: [u64; NR_FULLNESS_GROUPS],
    obj_allocated: u64,
    obj_inuse: u64,
    // Per zspage id.
    inuse: Vec<u32>,
    freeobj: Vec<u32>,
    fullness: Vec<u8>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// pages_per_zspage pfns per zspage.
    pfns: Vec<u32>,
    /// objs_per_zspage words per zspage: the handle, or FREE_TAG | next free slot.
    slots: Vec<u32>,
    free_ids: Vec<u32>,
}

impl SizeClass {
    fn new(index: u32, size_bytes: u32, pages: u32, objs: u32) -> SizeClass {
        SizeClass {
            index,
            size_bytes,
            pages_per_zspage: pages,
            objs_per_zspage: objs,
            huge: pages == 1 && objs == 1,
            fullness_head: [NONE; NR_FULLNESS_GROUPS],
            fullness_count: [0; NR_FULLNESS_GROUPS],
            obj_allocated: 0,
            obj_inuse: 0,
            inuse: Vec::new(),
            freeobj: Vec::new(),
            fullness: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            pfns: Vec::new(),
            slots: Vec::new(),
            free_ids: Vec::new(),
        }
    }

    /// get_fullness_group.
    fn fullness_group(&self, inuse: u32) -> u8 {
        if inuse == 0 {
            ZS_INUSE_RATIO_0
        } else if inuse == self.objs_per_zspage {
            ZS_INUSE_RATIO_100
        } else {
            // 1 of 127 is 0 % by integer division but belongs in the 10 % band.
            (100 * inuse / self.objs_per_zspage / 10 + 1) as u8
        }
    }

    /// insert_zspage: list_add at the head, so the newest zspage of a band is used first.
    fn insert(&mut self, z: u32, fg: u8) {
        let head = self.fullness_head[fg as usize];
        self.prev[z as usize] = NONE;
        self.next[z as usize] = head;
        if head != NONE {
            self.prev[head as usize] = z;
        }
        self.fullness_head[fg as usize] = z;
        self.fullness_count[fg as usize] += 1;
        self.fullness[z as usize] = fg;
    }

    /// remove_zspage.
    fn remove(&mut self, z: u32) {
        let fg = self.fullness[z as usize] as usize;
        let (p, n) = (self.prev[z as usize], self.next[z as usize]);
        if p == NONE {
            self.fullness_head[fg] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.fullness_count[fg] -= 1;
        self.fullness[z as usize] = ISOLATED;
    }

    /// fix_fullness_group.
    fn fix_fullness(&mut self, z: u32) -> u8 {
        let fg = self.fullness_group(self.inuse[z as usize]);
        if fg != self.fullness[z as usize] {
            self.remove(z);
            self.insert(z, fg);
        }
        fg
    }

    fn first_in(&self, groups: impl Iterator<Item = u8>) -> Option<u32> {
        groups
            .map(|fg| self.fullness_head[fg as usize])
            .find(|&z| z != NONE)
    }

    fn slot_base(&self, z: u32) -> usize {
        z as usize * self.objs_per_zspage as usize
    }

    /// alloc_zspage + create_page_chain + init_zspage: all pages or none.
    fn alloc_zspage(&mut self, pages: &mut dyn ZsPageSource) -> Result<u32, ZsError> {
        let ppz = self.pages_per_zspage as usize;
        let mut got = [0u32; 16];
        for i in 0..ppz {
            match pages.alloc_page() {
                Some(pfn) => got[i] = pfn,
                None => {
                    for &pfn in &got[..i] {
                        pages.free_page(pfn);
                    }
                    return Err(ZsError::NoMemory);
                }
            }
        }
        let objs = self.objs_per_zspage;
        let z = match self.free_ids.pop() {
            Some(z) => z,
            None => {
                let z = self.inuse.len() as u32;
                // Slot locations must fit u32 with the FREE_TAG bit clear.
                if (z as u64 + 1) * objs as u64 >= FREE_TAG as u64 {
                    for &pfn in &got[..ppz] {
                        pages.free_page(pfn);
                    }
                    return Err(ZsError::Capacity);
                }
                self.inuse.push(0);
                self.freeobj.push(0);
                self.fullness.push(DEAD);
                self.prev.push(NONE);
                self.next.push(NONE);
                self.pfns.resize(self.pfns.len() + ppz, 0);
                self.slots
                    .resize(self.slots.len() + objs as usize, FREE_END);
                z
            }
        };
        let zi = z as usize;
        self.pfns[zi * ppz..(zi + 1) * ppz].copy_from_slice(&got[..ppz]);
        let base = self.slot_base(z);
        for s in 0..objs {
            self.slots[base + s as usize] = if s + 1 < objs {
                FREE_TAG | (s + 1)
            } else {
                FREE_END
            };
        }
        self.inuse[zi] = 0;
        self.freeobj[zi] = 0;
        self.fullness[zi] = ISOLATED;
        self.obj_allocated += objs as u64;
        Ok(z)
    }

    /// __free_zspage: the zspage is empty and off every list.
    fn free_zspage(&mut self, z: u32, pages: &mut dyn ZsPageSource) {
        let ppz = self.pages_per_zspage as usize;
        let zi = z as usize;
        for &pfn in &self.pfns[zi * ppz..(zi + 1) * ppz] {
            pages.free_page(pfn);
        }
        self.fullness[zi] = DEAD;
        self.obj_allocated -= self.objs_per_zspage as u64;
        self.free_ids.push(z);
    }

    /// obj_malloc: pop the zspage's free-object list. Returns the slot.
    fn obj_malloc(&mut self, z: u32, handle: u32) -> u32 {
        let slot = self.freeobj[z as usize];
        let word = self.slot_base(z) + slot as usize;
        self.freeobj[z as usize] = self.slots[word] & !FREE_TAG;
        self.slots[word] = handle;
        self.inuse[z as usize] += 1;
        slot
    }

    /// obj_free: push the slot on its zspage's free-object list.
    fn obj_free(&mut self, z: u32, slot: u32) {
        let word = self.slot_base(z) + slot as usize;
        let head = self.freeobj[z as usize];
        self.slots[word] = FREE_TAG | head;
        self.freeobj[z as usize] = slot;
        self.inuse[z as usize] -= 1;
    }

    /// zs_can_compact.
    fn can_compact(&self) -> u64 {
        if self.obj_allocated <= self.obj_inuse {
            return 0;
        }
        (self.obj_allocated - self.obj_inuse) / self.objs_per_zspage as u64
            * self.pages_per_zspage as u64
    }

    fn live_zspages(&self) -> u64 {
        self.obj_allocated / self.objs_per_zspage as u64
    }
}

/// A zsmalloc pool (struct zs_pool).
pub struct ZsPool {
    config: ZsConfig,
    /// Size-class index -> merged class (position in `classes`).
    class_of_index: Vec<u16>,
    classes: Vec<SizeClass>,
    huge_class_size_bytes: u32,
    /// Per handle id: merged class (NO_CLASS when free), location (zspage * objs + slot) and
    /// stored length - 1.
    h_class: Vec<u16>,
    h_loc: Vec<u32>,
    h_len_m1: Vec<u16>,
    free_handles: Vec<u32>,
    pages_allocated: u64,
    pages_max: u64,
    pages_compacted: u64,
    objs: u64,
    compr_bytes: u64,
}

impl ZsPool {
    /// zs_create_pool.
    pub fn new(config: ZsConfig) -> Result<ZsPool, ZsError> {
        config.validate()?;
        let n = config.nr_size_classes();
        let mut class_of_index = vec![0u16; n as usize];
        let mut classes: Vec<SizeClass> = Vec::new();
        let mut huge_class_size_bytes = 0;
        // From the largest down, so a merged class takes the largest size of its run.
        for i in (0..n).rev() {
            let size = config.class_size_bytes(i);
            let pages = config.pages_per_zspage(size);
            let objs = pages * config.page_size_bytes / size;
            // The first (largest) class that is not huge: objects larger than it, handle
            // included, are huge. (The kernel tests pages != 1 && objs != 1.)
            if pages != 1 && objs != 1 && huge_class_size_bytes == 0 {
                huge_class_size_bytes = size - (ZS_HANDLE_SIZE - 1);
            }
            if let Some(prev) = classes.last() {
                if prev.pages_per_zspage == pages && prev.objs_per_zspage == objs {
                    class_of_index[i as usize] = (classes.len() - 1) as u16;
                    continue;
                }
            }
            classes.push(SizeClass::new(i, size, pages, objs));
            class_of_index[i as usize] = (classes.len() - 1) as u16;
        }
        Ok(ZsPool {
            config,
            class_of_index,
            classes,
            huge_class_size_bytes,
            // Handle 0 is never given out.
            h_class: vec![NO_CLASS],
            h_loc: vec![0],
            h_len_m1: vec![0],
            free_handles: Vec::new(),
            pages_allocated: 0,
            pages_max: 0,
            pages_compacted: 0,
            objs: 0,
            compr_bytes: 0,
        })
    }

    pub fn config(&self) -> &ZsConfig {
        &self.config
    }

    /// zs_huge_class_size: objects of at least this many bytes take a whole one-page zspage.
    /// zram stores a page whose compressed length reaches it uncompressed.
    pub fn huge_class_size_bytes(&self) -> u32 {
        self.huge_class_size_bytes
    }

    fn class_for_len(&self, len_bytes: u32) -> Result<usize, ZsError> {
        if len_bytes == 0 {
            return Err(ZsError::ZeroSize);
        }
        if len_bytes > self.config.page_size_bytes {
            return Err(ZsError::TooBig {
                len_bytes,
                page_size_bytes: self.config.page_size_bytes,
            });
        }
        let idx = self.config.size_class_index(len_bytes + ZS_HANDLE_SIZE);
        Ok(self.class_of_index[idx as usize] as usize)
    }

    /// The bytes an object of `len_bytes` occupies: its (merged) class size.
    pub fn class_size_for(&self, len_bytes: u32) -> Result<u32, ZsError> {
        Ok(self.classes[self.class_for_len(len_bytes)?].size_bytes)
    }

    /// zs_lookup_class_index: the (merged) class index that holds objects of `len_bytes`.
    pub fn zs_lookup_class_index(&self, len_bytes: u32) -> Result<u32, ZsError> {
        Ok(self.classes[self.class_for_len(len_bytes)?].index)
    }

    /// (pages per zspage, objects per zspage) of the class holding `len_bytes` objects.
    pub fn class_geometry_for(&self, len_bytes: u32) -> Result<(u32, u32), ZsError> {
        let c = &self.classes[self.class_for_len(len_bytes)?];
        Ok((c.pages_per_zspage, c.objs_per_zspage))
    }

    /// Number of distinct (merged) classes.
    pub fn nr_classes(&self) -> usize {
        self.classes.len()
    }

    /// zs_malloc: store an object of `len_bytes` (1..=PAGE_SIZE), taking a new zspage's pages
    /// from `pages` only when every zspage of its class is full.
    pub fn zs_malloc(
        &mut self,
        len_bytes: u32,
        pages: &mut dyn ZsPageSource,
    ) -> Result<Handle, ZsError> {
        let cid = self.class_for_len(len_bytes)?;
        // A handle is stored in a slot word, whose top bit marks a free slot.
        if self.free_handles.is_empty() && self.h_class.len() >= FREE_TAG as usize {
            return Err(ZsError::Capacity);
        }
        let class = &mut self.classes[cid];
        // find_get_zspage: the fullest band first (99 % .. 0 %), newest zspage of the band.
        let (z, fresh) = match class.first_in((ZS_INUSE_RATIO_0..=ZS_INUSE_RATIO_99).rev()) {
            Some(z) => (z, false),
            None => (class.alloc_zspage(pages)?, true),
        };
        let h = match self.free_handles.pop() {
            Some(h) => h,
            None => {
                self.h_class.push(NO_CLASS);
                self.h_loc.push(0);
                self.h_len_m1.push(0);
                (self.h_class.len() - 1) as u32
            }
        };
        let slot = class.obj_malloc(z, h);
        if fresh {
            let fg = class.fullness_group(class.inuse[z as usize]);
            class.insert(z, fg);
            self.pages_allocated += class.pages_per_zspage as u64;
            self.pages_max = self.pages_max.max(self.pages_allocated);
        } else {
            class.fix_fullness(z);
        }
        class.obj_inuse += 1;
        let hi = h as usize;
        self.h_class[hi] = cid as u16;
        self.h_loc[hi] = z * class.objs_per_zspage + slot;
        self.h_len_m1[hi] = (len_bytes - 1) as u16;
        self.objs += 1;
        self.compr_bytes += len_bytes as u64;
        Ok(Handle(h))
    }

    /// zs_free: release an object; a zspage left empty returns its pages to `pages`.
    /// Returns the pages freed (0 or the class's chain length).
    pub fn zs_free(
        &mut self,
        handle: Handle,
        pages: &mut dyn ZsPageSource,
    ) -> Result<u32, ZsError> {
        let hi = handle.0 as usize;
        let cid = match self.h_class.get(hi) {
            Some(&c) if c != NO_CLASS => c as usize,
            _ => return Err(ZsError::BadHandle(handle.0)),
        };
        let class = &mut self.classes[cid];
        let loc = self.h_loc[hi];
        let (z, slot) = (loc / class.objs_per_zspage, loc % class.objs_per_zspage);
        class.obj_inuse -= 1;
        class.obj_free(z, slot);
        let mut freed = 0;
        if class.fix_fullness(z) == ZS_INUSE_RATIO_0 {
            class.remove(z);
            class.free_zspage(z, pages);
            freed = class.pages_per_zspage;
            self.pages_allocated -= freed as u64;
        }
        self.compr_bytes -= self.h_len_m1[hi] as u64 + 1;
        self.objs -= 1;
        self.h_class[hi] = NO_CLASS;
        self.free_handles.push(handle.0);
        Ok(freed)
    }

    /// The stored (compressed) length of a live object.
    pub fn obj_len_bytes(&self, handle: Handle) -> Option<u32> {
        let hi = handle.0 as usize;
        match self.h_class.get(hi) {
            Some(&c) if c != NO_CLASS => Some(self.h_len_m1[hi] as u32 + 1),
            _ => None,
        }
    }

    /// zs_compact: every class from the largest down; returns pages freed and adds them to
    /// `pages_compacted`.
    pub fn zs_compact(&mut self, pages: &mut dyn ZsPageSource) -> u64 {
        let mut freed = 0;
        for cid in 0..self.classes.len() {
            freed += self.compact_class(cid, pages);
        }
        self.pages_allocated -= freed;
        self.pages_compacted += freed;
        freed
    }

    /// __zs_compact for one class: fill the fullest zspage (dst) with the objects of the
    /// sparsest ones (src), freeing each src emptied, until no more pages can be freed.
    fn compact_class(&mut self, cid: usize, pages: &mut dyn ZsPageSource) -> u64 {
        let mut freed = 0u64;
        let mut dst = NONE;
        loop {
            let class = &mut self.classes[cid];
            if class.can_compact() == 0 {
                break;
            }
            if dst == NONE {
                // isolate_dst_zspage: the fullest non-full band.
                match class.first_in((ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99).rev()) {
                    Some(z) => {
                        class.remove(z);
                        dst = z;
                    }
                    None => break,
                }
            }
            // isolate_src_zspage: the sparsest non-empty band.
            let src = match class.first_in(ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99) {
                Some(z) => z,
                None => break,
            };
            class.remove(src);
            // migrate_zspage: src's objects in slot order until dst is full or src empty.
            let objs = class.objs_per_zspage;
            let src_base = class.slot_base(src);
            for slot in 0..objs {
                let word = class.slots[src_base + slot as usize];
                if word & FREE_TAG != 0 {
                    continue;
                }
                let new_slot = class.obj_malloc(dst, word);
                class.obj_free(src, slot);
                self.h_loc[word as usize] = dst * objs + new_slot;
                if class.inuse[dst as usize] == objs || class.inuse[src as usize] == 0 {
                    break;
                }
            }
            // putback_zspage, then free src if emptied.
            let fg = class.fullness_group(class.inuse[src as usize]);
            class.insert(src, fg);
            if fg == ZS_INUSE_RATIO_0 {
                class.remove(src);
                class.free_zspage(src, pages);
                freed += class.pages_per_zspage as u64;
            }
            if class.fullness_group(class.inuse[dst as usize]) == ZS_INUSE_RATIO_100 {
                let fg = class.fullness_group(class.inuse[dst as usize]);
                class.insert(dst, fg);
                dst = NONE;
            }
        }
        if dst != NONE {
            let class = &mut self.classes[cid];
            let fg = class.fullness_group(class.inuse[dst as usize]);
            class.insert(dst, fg);
        }
        freed
    }

    /// Every page the pool's live zspages hold, for the owner's page-ownership invariant.
    pub fn page_pfns(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.pages_allocated as usize);
        for c in &self.classes {
            let ppz = c.pages_per_zspage as usize;
            for (z, &fg) in c.fullness.iter().enumerate() {
                if fg != DEAD {
                    out.extend_from_slice(&c.pfns[z * ppz..(z + 1) * ppz]);
                }
            }
        }
        out
    }

    /// zs_get_total_pages: pages held by the pool (zram mm_stat mem_used_total / PAGE_SIZE).
    pub fn zs_get_total_pages(&self) -> u64 {
        self.pages_allocated
    }

    /// Peak of zs_get_total_pages since creation (what zram reports as mem_used_max when it
    /// samples after every store).
    pub fn pages_max(&self) -> u64 {
        self.pages_max
    }

    /// zs_pool_stats.pages_compacted (zram mm_stat pages_compacted).
    pub fn pages_compacted(&self) -> u64 {
        self.pages_compacted
    }

    /// Live objects.
    pub fn obj_count(&self) -> u64 {
        self.objs
    }

    /// Sum of the lengths stored (zram mm_stat compr_data_size, zswap's stored bytes).
    pub fn compr_bytes(&self) -> u64 {
        self.compr_bytes
    }

    /// Bytes the pool holds: zs_get_total_pages * PAGE_SIZE.
    pub fn pool_bytes(&self) -> u64 {
        self.pages_allocated * self.config.page_size_bytes as u64
    }

    /// zs_shrinker_count: pages zs_compact could free now.
    pub fn zs_can_compact_pages(&self) -> u64 {
        self.classes.iter().map(SizeClass::can_compact).sum()
    }

    /// Rows of /sys/kernel/debug/zsmalloc/<pool>/classes, smallest class first.
    pub fn class_stats(&self) -> Vec<ZsClassStat> {
        self.classes
            .iter()
            .rev()
            .map(|c| ZsClassStat {
                class: c.index,
                size_bytes: c.size_bytes,
                zspages_by_fullness: c.fullness_count,
                obj_allocated: c.obj_allocated,
                obj_used: c.obj_inuse,
                pages_used: c.live_zspages() * c.pages_per_zspage as u64,
                pages_per_zspage: c.pages_per_zspage,
                objs_per_zspage: c.objs_per_zspage,
                freeable: c.can_compact(),
                huge: c.huge,
            })
            .collect()
    }

    /// The debugfs `classes` table, formatted as zs_stats_size_show prints it.
    pub fn debugfs_classes(&self) -> String {
        let mut s = String::new();
        let _ = write!(s, " {:>5} {:>5} ", "class", "size");
        for h in [
            "10%", "20%", "30%", "40%", "50%", "60%", "70%", "80%", "90%", "99%", "100%",
        ] {
            let _ = write!(s, "{h:>9} ");
        }
        let _ = writeln!(
            s,
            "{:>13} {:>10} {:>10} {:>16} {:>8}",
            "obj_allocated", "obj_used", "pages_used", "pages_per_zspage", "freeable"
        );
        let mut totals = [0u64; NR_FULLNESS_GROUPS];
        let (mut objs, mut used, mut pages, mut freeable) = (0, 0, 0, 0);
        for r in self.class_stats() {
            let _ = write!(s, " {:>5} {:>5} ", r.class, r.size_bytes);
            for (total, &n) in totals.iter_mut().zip(&r.zspages_by_fullness).skip(1) {
                *total += n;
                let _ = write!(s, "{n:>9} ");
            }
            let _ = writeln!(
                s,
                "{:>13} {:>10} {:>10} {:>16} {:>8}",
                r.obj_allocated, r.obj_used, r.pages_used, r.pages_per_zspage, r.freeable
            );
            objs += r.obj_allocated;
            used += r.obj_used;
            pages += r.pages_used;
            freeable += r.freeable;
        }
        let _ = write!(s, "\n {:>5} {:>5} ", "Total", "");
        for t in &totals[1..] {
            let _ = write!(s, "{t:>9} ");
        }
        let _ = writeln!(
            s,
            "{objs:>13} {used:>10} {pages:>10} {:>16} {freeable:>8}",
            ""
        );
        s
    }

    /// Invariants: every live handle sits in a slot of a live zspage that names it back;
    /// per-zspage in-use counts, free lists, fullness lists and class and pool totals agree;
    /// pool pages are the sum of live zspages' chain lengths; no pfn is held twice.
    pub fn check(&self) -> Result<(), String> {
        let live_handles = self.check_handles()?;
        let mut pool_pages = 0u64;
        let mut pfns = Vec::new();
        for (cid, class) in self.classes.iter().enumerate() {
            let objs = class.objs_per_zspage;
            class.check_fullness_lists()?;
            let mut zspages = 0u64;
            let mut inuse_sum = 0u64;
            for z in 0..class.inuse.len() as u32 {
                let Some(used) = class.check_zspage(z)? else {
                    continue;
                };
                zspages += 1;
                inuse_sum += used as u64;
                let (zi, ppz) = (z as usize, class.pages_per_zspage as usize);
                pfns.extend_from_slice(&class.pfns[zi * ppz..(zi + 1) * ppz]);
            }
            if inuse_sum != class.obj_inuse || inuse_sum != live_handles[cid] as u64 {
                return Err(format!(
                    "class {}: obj_inuse {}, zspages hold {inuse_sum}, handles {}",
                    class.index, class.obj_inuse, live_handles[cid]
                ));
            }
            if class.obj_allocated != zspages * objs as u64 {
                return Err(format!(
                    "class {}: obj_allocated {} for {zspages} zspages of {objs}",
                    class.index, class.obj_allocated
                ));
            }
            pool_pages += zspages * class.pages_per_zspage as u64;
        }
        if pool_pages != self.pages_allocated {
            return Err(format!(
                "pages_allocated {} but zspages hold {pool_pages}",
                self.pages_allocated
            ));
        }
        pfns.sort_unstable();
        if let Some(w) = pfns.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("pfn {} is in two zspages", w[0]));
        }
        Ok(())
    }

    /// Every live handle sits in a slot of a live zspage that names it back, and the pool's
    /// object and byte counts are the handles'. Returns the live handles per class.
    fn check_handles(&self) -> Result<Vec<u32>, String> {
        let mut live_handles = vec![0u32; self.classes.len()];
        let mut compr = 0u64;
        for (h, &c) in self.h_class.iter().enumerate() {
            if c == NO_CLASS {
                continue;
            }
            let class = self
                .classes
                .get(c as usize)
                .ok_or(format!("handle {h}: class {c} out of range"))?;
            let loc = self.h_loc[h] as usize;
            let z = loc / class.objs_per_zspage as usize;
            if z >= class.inuse.len() || class.fullness[z] == DEAD {
                return Err(format!(
                    "handle {h}: zspage {z} of class {} is not live",
                    class.index
                ));
            }
            if class.slots[loc] != h as u32 {
                return Err(format!(
                    "handle {h}: its slot {loc} of class {} holds {:#x}",
                    class.index, class.slots[loc]
                ));
            }
            live_handles[c as usize] += 1;
            compr += self.h_len_m1[h] as u64 + 1;
        }
        let nr_live = live_handles.iter().map(|&n| n as u64).sum::<u64>();
        if nr_live != self.objs || compr != self.compr_bytes {
            return Err(format!(
                "pool counts {} objects / {} bytes, handles say {nr_live} / {compr}",
                self.objs, self.compr_bytes
            ));
        }
        Ok(live_handles)
    }
}

impl SizeClass {
    /// Each fullness list is linked both ways, ends, and holds as many zspages as its count.
    fn check_fullness_lists(&self) -> Result<(), String> {
        let mut listed = [0u64; NR_FULLNESS_GROUPS];
        for (fg, n_listed) in listed.iter_mut().enumerate() {
            let mut z = self.fullness_head[fg];
            let mut prev = NONE;
            while z != NONE {
                if self.fullness[z as usize] as usize != fg || self.prev[z as usize] != prev {
                    return Err(format!(
                        "class {}: fullness list {fg} broken at zspage {z}",
                        self.index
                    ));
                }
                *n_listed += 1;
                if *n_listed > self.inuse.len() as u64 {
                    return Err(format!("class {}: fullness list {fg} loops", self.index));
                }
                prev = z;
                z = self.next[z as usize];
            }
        }
        if listed != self.fullness_count {
            return Err(format!(
                "class {}: lists hold {listed:?} zspages, counts say {:?}",
                self.index, self.fullness_count
            ));
        }
        Ok(())
    }

    /// Zspage `z`: None if dead; if live, its slots in use (matching its count, non-zero,
    /// in the right fullness group) with a free list through exactly the others.
    fn check_zspage(&self, z: u32) -> Result<Option<u32>, String> {
        let zi = z as usize;
        let objs = self.objs_per_zspage;
        let fg = self.fullness[zi];
        if fg == DEAD {
            return Ok(None);
        }
        if fg == ISOLATED {
            return Err(format!("class {}: zspage {z} left isolated", self.index));
        }
        let base = self.slot_base(z);
        let used = self.slots[base..base + objs as usize]
            .iter()
            .filter(|&&w| w & FREE_TAG == 0)
            .count() as u32;
        if used != self.inuse[zi] {
            return Err(format!(
                "class {} zspage {z}: inuse {} but {used} slots hold handles",
                self.index, self.inuse[zi]
            ));
        }
        if used == 0 {
            return Err(format!(
                "class {} zspage {z}: empty but not freed",
                self.index
            ));
        }
        if fg != self.fullness_group(used) {
            return Err(format!(
                "class {} zspage {z}: in group {fg}, {used}/{objs} used",
                self.index
            ));
        }
        let mut free = 0u32;
        let mut s = self.freeobj[zi];
        while free < objs - used {
            if s >= objs || self.slots[base + s as usize] & FREE_TAG == 0 {
                return Err(format!(
                    "class {} zspage {z}: free list reaches slot {s}, not free",
                    self.index
                ));
            }
            free += 1;
            s = self.slots[base + s as usize] & !FREE_TAG;
        }
        Ok(Some(used))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pool() -> ZsPool {
        ZsPool::new(ZsConfig::default()).unwrap()
    }

    #[test]
    fn zsmalloc_class_rounding() {
        let p = pool();
        // 33 + 8 = 41 bytes -> index ceil(9/16) = 1 -> 48 bytes; 48 is 3 pages of 256.
        assert_eq!(p.class_size_for(33).unwrap(), 48);
        assert_eq!(p.class_size_for(1).unwrap(), 32);
        assert_eq!(p.class_size_for(24).unwrap(), 32);
        assert_eq!(p.class_size_for(25).unwrap(), 48);
        // Huge objects: one per page, all in the PAGE_SIZE class.
        let huge = p.huge_class_size_bytes();
        assert_eq!(p.class_geometry_for(huge).unwrap(), (1, 1));
        assert_eq!(p.class_size_for(huge).unwrap(), 4096);
        assert_ne!(p.class_geometry_for(huge - 1).unwrap(), (1, 1));
        assert_eq!(p.class_size_for(4096).unwrap(), 4096);
        assert!(matches!(p.class_size_for(0), Err(ZsError::ZeroSize)));
        assert!(matches!(
            p.class_size_for(4097),
            Err(ZsError::TooBig { .. })
        ));
    }

    #[test]
    fn zsmalloc_3000_byte_class_by_hand() {
        // By hand, chain 8, 4 KiB pages. 3008 B: waste i*4096 % 3008 for i = 1..8:
        // 1088, 2176, 256, 1344, 2432, 512, 1600, 2688 -> 3 pages, 12288/3008 = 4 objects.
        // The same 3 pages x 4 objects holds for sizes up to 12288/4 = 3072, and 3072 is a
        // multiple of 1024 (waste 0 at 3 pages); 3024, 3040, 3056 also pick 3 pages.
        // ... so 3000-byte objects go to the 3072 class (index 190).
        let p = pool();
        assert_eq!(p.config().pages_per_zspage(3008), 3);
        assert_eq!(p.config().pages_per_zspage(3072), 3);
        // 3088: 1008, 2016, 3024, 944, 1952, 2960, 880, 1888 -> 7 pages of 9: other geometry.
        assert_eq!(p.config().pages_per_zspage(3088), 7);
        assert_eq!(p.class_size_for(3000).unwrap(), 3072);
        assert_eq!(p.class_geometry_for(3000).unwrap(), (3, 4));
        assert_eq!(p.zs_lookup_class_index(3000).unwrap(), (3072 - 32) / 16);
    }

    #[test]
    fn zsmalloc_chain_lengths_by_hand() {
        let c = ZsConfig::default();
        // Powers of two: one page.
        assert_eq!(c.pages_per_zspage(32), 1);
        assert_eq!(c.pages_per_zspage(2048), 1);
        // 48: 4096 % 48 = 16, 8192 % 48 = 32, 12288 % 48 = 0 -> 3.
        assert_eq!(c.pages_per_zspage(48), 3);
        // 176: 4096 % 176 = 48; 8192: 96; 12288: 144; 16384: 16; 20480: 64; 24576: 112;
        // 28672: 160; 32768: 32 -> 4 pages (waste 16).
        assert_eq!(c.pages_per_zspage(176), 4);
        // 208: 4096 % 208 = 144; 8192: 80; 12288: 16; 16384: 160; 20480: 96; 24576: 32;
        // 28672: 176; 32768: 112 -> 3.
        assert_eq!(c.pages_per_zspage(208), 3);
        // 3264: 832, 1664, 2496, 64, 896, 1728, 2560, 128 -> 4 pages, 5 objects.
        assert_eq!(c.pages_per_zspage(3264), 4);
        // The legacy rule (4 pages, integer used %): 176 -> used% 98, 98, 98, 99 -> 4.
        let l = ZsConfig::legacy();
        assert_eq!(l.pages_per_zspage(176), 4);
        // 3264 legacy: used% 79, 79, 79, 99 -> 4.
        assert_eq!(l.pages_per_zspage(3264), 4);
        // 3600 legacy: 87, 87, 87, 87 -> first: 1 page. MinWaste chain 8: 496, 992, 1488,
        // 1984, 2480, 2976, 3472, 368 -> 8 pages.
        assert_eq!(l.pages_per_zspage(3600), 1);
        assert_eq!(c.pages_per_zspage(3600), 8);
    }

    #[test]
    fn zsmalloc_huge_threshold_follows_chain_size() {
        // Chain 8: the largest non-huge class is 3632 (8 pages of 9), so objects of
        // 3632 - 7 = 3625 bytes and more (3633+ with the handle) are huge.
        assert_eq!(pool().huge_class_size_bytes(), 3625);
        assert_eq!(pool().nr_classes(), 119);
        // With 8-page chains classes up to ~3.6 KiB are packed; with 4 only to ~3.2 KiB.
        let p8 = pool();
        let p4 = ZsPool::new(ZsConfig::legacy()).unwrap();
        assert!(p8.huge_class_size_bytes() > p4.huge_class_size_bytes());
        assert!(p8.huge_class_size_bytes() > 3 * 4096 / 4);
        assert_eq!(
            p8.class_geometry_for(p8.huge_class_size_bytes()).unwrap(),
            (1, 1)
        );
        assert_eq!(
            p4.class_geometry_for(p4.huge_class_size_bytes()).unwrap(),
            (1, 1)
        );
    }

    #[test]
    fn zsmalloc_alloc_free_compact_conservation() {
        let mut p = pool();
        let mut pages = CountingPages::default();
        let mut hs = Vec::new();
        for i in 0..1000u32 {
            hs.push(p.zs_malloc(100 + i % 50, &mut pages).unwrap());
        }
        p.check().unwrap();
        assert_eq!(p.obj_count(), 1000);
        assert_eq!(pages.held, p.zs_get_total_pages());
        // Free 3 of every 4: sparse zspages, compaction has something to do.
        for (i, h) in hs.iter().enumerate() {
            if i % 4 != 0 {
                p.zs_free(*h, &mut pages).unwrap();
            }
        }
        p.check().unwrap();
        let before = p.zs_get_total_pages();
        let can = p.zs_can_compact_pages();
        assert!(can > 0);
        let freed = p.zs_compact(&mut pages);
        p.check().unwrap();
        assert!(freed > 0 && freed <= can);
        assert_eq!(p.zs_get_total_pages(), before - freed);
        assert_eq!(p.pages_compacted(), freed);
        assert_eq!(pages.held, p.zs_get_total_pages());
        // Handles stay valid across compaction.
        for (i, h) in hs.iter().enumerate() {
            if i % 4 == 0 {
                assert_eq!(p.obj_len_bytes(*h), Some(100 + i as u32 % 50));
                p.zs_free(*h, &mut pages).unwrap();
            }
        }
        p.check().unwrap();
        assert_eq!(p.zs_get_total_pages(), 0);
        assert_eq!(pages.held, 0);
        assert_eq!(p.compr_bytes(), 0);
        assert_eq!(
            p.zs_free(hs[0], &mut pages),
            Err(ZsError::BadHandle(hs[0].0))
        );
    }

    #[test]
    fn zsmalloc_fullest_zspage_receives() {
        let mut p = pool();
        let mut pages = CountingPages::default();
        // 1000 + 8 -> class 1024: 1 page of 4 objects. Two full zspages; leave the first at
        // 1/4 (the 30 % band) and the second at 3/4 (the 80 % band).
        let a: Vec<_> = (0..8)
            .map(|_| p.zs_malloc(1000, &mut pages).unwrap())
            .collect();
        assert_eq!(p.zs_get_total_pages(), 2);
        for h in [a[0], a[1], a[2], a[7]] {
            p.zs_free(h, &mut pages).unwrap();
        }
        let row = |p: &ZsPool| {
            p.class_stats()
                .into_iter()
                .find(|r| r.size_bytes == 1024)
                .unwrap()
                .zspages_by_fullness
        };
        assert_eq!((row(&p)[3], row(&p)[8]), (1, 1));
        // The next object goes to the fullest: the second zspage becomes full.
        p.zs_malloc(1000, &mut pages).unwrap();
        assert_eq!((row(&p)[3], row(&p)[11]), (1, 1));
        assert_eq!(p.zs_get_total_pages(), 2);
        p.check().unwrap();
    }

    #[test]
    fn zsmalloc_page_source_failure_is_clean() {
        let mut p = pool();
        // 48-byte class needs 3 pages; only 2 available.
        let mut pages = CountingPages::with_limit(2);
        assert_eq!(p.zs_malloc(40, &mut pages), Err(ZsError::NoMemory));
        assert_eq!(pages.held, 0);
        assert_eq!(p.obj_count(), 0);
        p.check().unwrap();
        // A 1-page class still works.
        p.zs_malloc(24, &mut pages).unwrap();
        p.check().unwrap();
    }

    #[test]
    fn zsmalloc_debugfs_table() {
        let mut p = pool();
        let mut pages = CountingPages::default();
        p.zs_malloc(33, &mut pages).unwrap();
        let t = p.debugfs_classes();
        assert!(t.contains("obj_allocated"));
        let row = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some("1"))
            .unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "48");
        assert_eq!(cols[2], "1"); // one zspage in the 10 % band (1 of 256)
        assert_eq!(&cols[13..17], &["256", "1", "3", "3"]);
    }

    proptest! {
        #[test]
        fn zsmalloc_random_ops_keep_invariants(
            ops in proptest::collection::vec((any::<bool>(), 1u32..=4096, any::<u16>()), 1..400),
            chain in prop_oneof![Just(ZsConfig::default()), Just(ZsConfig::legacy())],
        ) {
            let mut p = ZsPool::new(chain).unwrap();
            let mut pages = CountingPages::with_limit(300);
            let mut live: Vec<Handle> = Vec::new();
            for (i, (alloc, len, pick)) in ops.into_iter().enumerate() {
                if alloc || live.is_empty() {
                    if let Ok(h) = p.zs_malloc(len, &mut pages) {
                        live.push(h);
                    }
                } else {
                    let h = live.swap_remove(pick as usize % live.len());
                    p.zs_free(h, &mut pages).unwrap();
                }
                if i % 37 == 0 {
                    p.zs_compact(&mut pages);
                }
                prop_assert_eq!(pages.held, p.zs_get_total_pages());
                if let Err(e) = p.check() {
                    return Err(TestCaseError::fail(e));
                }
            }
            prop_assert_eq!(p.obj_count(), live.len() as u64);
        }
    }
}
