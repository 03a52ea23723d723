//! STUB until branch `zsmalloc` lands: one-page zspages, no merging.
use crate::scenario::PAGE_SIZE;

pub type Handle = u32;
const CLASS_DELTA: u32 = 16;
const MIN: u32 = 32;

struct Class {
    size: u32,
    objs_per_zspage: u32,
    /// zspage pfn and used objects.
    zspages: Vec<(u32, u32)>,
}

pub struct ZsPool {
    classes: Vec<Class>,
    pub pages: u64,
}

impl Default for ZsPool {
    fn default() -> Self {
        Self::new()
    }
}

impl ZsPool {
    pub fn new() -> ZsPool {
        let classes = (0..)
            .map(|i| MIN + i * CLASS_DELTA)
            .take_while(|&s| s <= PAGE_SIZE as u32)
            .map(|size| Class {
                size,
                objs_per_zspage: PAGE_SIZE as u32 / size,
                zspages: Vec::new(),
            })
            .collect();
        ZsPool { classes, pages: 0 }
    }
    fn class_of(len: u32) -> usize {
        (len.max(MIN) - MIN).div_ceil(CLASS_DELTA) as usize
    }
    pub fn class_size(len: u32) -> u32 {
        MIN + Self::class_of(len) as u32 * CLASS_DELTA
    }
    pub fn malloc(
        &mut self,
        len: u32,
        alloc_page: &mut dyn FnMut() -> Option<u32>,
    ) -> Option<Handle> {
        let c = Self::class_of(len);
        let class = &mut self.classes[c];
        let idx = match class
            .zspages
            .iter()
            .position(|z| z.1 < class.objs_per_zspage)
        {
            Some(i) => i,
            None => {
                let pfn = alloc_page()?;
                self.pages += 1;
                class.zspages.push((pfn, 0));
                class.zspages.len() - 1
            }
        };
        class.zspages[idx].1 += 1;
        Some((c as u32) << 24 | idx as u32)
    }
    pub fn free(&mut self, handle: Handle, free_page: &mut dyn FnMut(u32)) {
        let class = &mut self.classes[(handle >> 24) as usize];
        let z = &mut class.zspages[(handle & 0xff_ffff) as usize];
        z.1 -= 1;
        let _ = free_page;
    }
    pub fn total_pages(&self) -> u64 {
        self.pages
    }
    pub fn page_pfns(&self) -> Vec<u32> {
        self.classes
            .iter()
            .flat_map(|c| c.zspages.iter().map(|z| z.0))
            .collect()
    }
}
