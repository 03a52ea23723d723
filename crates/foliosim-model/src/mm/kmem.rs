//! Kernel memory: the pages the kernel allocates for itself from the buddy allocator, with the
//! migratetype its gfp gives (slab caches, mm/slub.rs; page tables, mm/pgtable.rs; kernel
//! stacks, here). Off unless the scenario asks (`[machine] kernel_memory = true`, or an aged
//! start): then every fault that populates a new 2 MiB of address space, every task and every
//! file looked up allocates unmovable or reclaimable pages that pollute pageblocks as the
//! kernel's do, and /proc/meminfo's Slab, SReclaimable, SUnreclaim, PageTables and KernelStack
//! report them. Not charged to memcgs (the model's memcgs count user pages only).

use super::gfp::Gfp;
use super::oom_kill::oom_error;
use super::page_alloc::alloc_pages;
use super::slub::Slabs;
use super::{Kernel, MmError};
use crate::engine::Ctx;
use std::collections::BTreeMap;

/// THREAD_SIZE on x86-64 without KASAN: 16 KiB (arch/x86/include/asm/page_64_types.h,
/// THREAD_SIZE_ORDER 2).
pub const THREAD_SIZE_PAGES: u32 = 4;

/// GFP_KERNEL_ACCOUNT | __GFP_ZERO: THREADINFO_GFP (kernel/fork.c) and GFP_PGTABLE_USER
/// (include/asm-generic/pgalloc.h) alike; __GFP_ACCOUNT and __GFP_ZERO do not change where the
/// pages come from, so the model passes GFP_KERNEL (unmovable).
pub const GFP_KERNEL_ACCOUNT: Gfp = Gfp::GFP_KERNEL.union(Gfp::ACCOUNT);

/// The kernel's own memory and its meminfo counters.
#[derive(Default)]
pub struct KernelMem {
    pub enabled: bool,
    pub slabs: Slabs,
    /// Page-table pages by (mm, vma) and each mm's PGD and PUD (mm/pgtable.rs).
    pub tables: BTreeMap<(u32, u32), super::pgtable::VmaTables>,
    pub top: BTreeMap<u32, [u32; 2]>,
    /// NR_PAGETABLE: page-table pages.
    pub nr_page_table_pages: u64,
    /// Each mm's tasks' kernel stacks, the base pages of each (vmalloc'd: CONFIG_VMAP_STACK).
    pub stacks: BTreeMap<u32, Vec<[u32; THREAD_SIZE_PAGES as usize]>>,
    /// A host snapshot's kernel pages: the used pages of its unmovable, reclaimable and
    /// highatomic pageblocks (mm/snapshot/), held for the whole run.
    pub snapshot_pages: Vec<u32>,
}

impl KernelMem {
    pub fn new(enabled: bool, ncpus: u32) -> KernelMem {
        KernelMem {
            enabled,
            slabs: Slabs::new(ncpus),
            ..Default::default()
        }
    }

    /// NR_KERNEL_STACK_KB.
    pub fn kernel_stack_kb(&self) -> u64 {
        let stacks: usize = self.stacks.values().map(Vec::len).sum();
        stacks as u64 * THREAD_SIZE_PAGES as u64 * 4
    }

    /// Every page the kernel holds for itself, with its order (for the conservation check).
    pub fn held_blocks(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let stacks = self.stacks.values().flatten().flatten().map(|&p| (p, 0));
        let tables = self
            .tables
            .values()
            .flat_map(|t| t.pte.iter().chain(&t.pmd))
            .chain(self.top.values().flatten())
            .filter(|&&p| p != super::folio::NIL)
            .map(|&p| (p, 0));
        let snapshot = self.snapshot_pages.iter().map(|&p| (p, 0));
        self.slabs
            .held_blocks()
            .chain(stacks)
            .chain(tables)
            .chain(snapshot)
    }

    /// The meminfo lines (kB) and the vmstat gauges (pages) of kernel memory.
    pub fn gauges(&self) -> [(&'static str, u64); 9] {
        let (recl, unrecl) = self.slabs.nr_pages();
        let tables = self.nr_page_table_pages;
        [
            ("nr_slab_reclaimable", recl),
            ("nr_slab_unreclaimable", unrecl),
            ("nr_page_table_pages", tables),
            ("nr_kernel_stack", self.kernel_stack_kb()),
            ("Slab_kB", (recl + unrecl) * 4),
            ("SReclaimable_kB", recl * 4),
            ("SUnreclaim_kB", unrecl * 4),
            ("PageTables_kB", tables * 4),
            ("KernelStack_kB", self.kernel_stack_kb()),
        ]
    }

    /// The counters agree with the pages held.
    pub fn check(&self) -> Result<(), String> {
        self.slabs.check()?;
        let tables = self
            .tables
            .values()
            .flat_map(|t| t.pte.iter().chain(&t.pmd))
            .chain(self.top.values().flatten())
            .filter(|&&p| p != super::folio::NIL)
            .count() as u64;
        if tables != self.nr_page_table_pages {
            return Err(format!(
                "{tables} page-table pages held but NR_PAGETABLE is {}",
                self.nr_page_table_pages
            ));
        }
        Ok(())
    }
}

/// One block of kernel memory from the buddy allocator (alloc_pages with the caller's gfp);
/// an allocation failure is the fault's or the task's OOM, as the kernel returns
/// VM_FAULT_OOM / -ENOMEM.
pub fn alloc_kernel_pages(
    k: &mut Kernel,
    ctx: &mut Ctx,
    gfp: Gfp,
    order: u32,
) -> Result<u32, MmError> {
    alloc_pages(k, ctx, gfp, order).ok_or_else(|| oom_error(k, ctx, None))
}

/// alloc_thread_stack_node (kernel/fork.c) with CONFIG_VMAP_STACK, x86-64's default: the
/// stack is vmalloc'd, THREAD_SIZE / PAGE_SIZE order-0 pages of THREADINFO_GFP (unmovable).
/// The per-CPU cache of two freed stacks (NR_CACHED_STACKS) is left out: every task allocates.
pub fn alloc_thread_stack(k: &mut Kernel, ctx: &mut Ctx, mm: u32) -> Result<(), MmError> {
    let mut pages = [super::folio::NIL; THREAD_SIZE_PAGES as usize];
    for i in 0..pages.len() {
        match alloc_kernel_pages(k, ctx, GFP_KERNEL_ACCOUNT, 0) {
            Ok(p) => pages[i] = p,
            Err(e) => {
                for &p in &pages[..i] {
                    k.free_pages(ctx, p, 0);
                }
                return Err(e);
            }
        }
    }
    k.kmem.stacks.entry(mm).or_default().push(pages);
    Ok(())
}

/// free_thread_stack at a task's exit: one of `mm`'s stacks back to the buddy allocator.
pub fn free_thread_stack(k: &mut Kernel, ctx: &mut Ctx, mm: u32) {
    let Some(stacks) = k.kmem.stacks.get_mut(&mm) else {
        return;
    };
    let Some(pages) = stacks.pop() else { return };
    if stacks.is_empty() {
        k.kmem.stacks.remove(&mm);
    }
    for p in pages {
        k.free_pages(ctx, p, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::invariants::check;
    use crate::mm::memory::handle_mm_fault;
    use crate::mm::mmap::{vm_munmap, ThpAdvice};
    use crate::mm::slub::{kmem_cache_alloc, kmem_cache_free, lookup_file, prune_sb, Cache};
    use crate::Scenario;

    fn kernel(kernel_memory: bool) -> (Kernel, Ctx<'static>) {
        let text = format!(
            r#"
[machine]
cpus = 2
memory = "64M"
kernel_memory = {kernel_memory}
[machine.disk]
kind = "ssd"
size = "64M"
[[file]]
name = "f"
size = "1M"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#
        );
        let k = Kernel::new(&Scenario::from_toml_str(&text).unwrap());
        (k, Ctx::new(0, 0))
    }

    fn free_pages(k: &mut Kernel, ctx: &mut Ctx) -> u64 {
        k.pgdat[0].zone.drain_all_pages(ctx);
        k.pgdat[0].zone.nr_free_pages()
    }

    #[test]
    fn page_tables_follow_faults_and_go_with_the_vma() {
        let (mut k, mut ctx) = kernel(true);
        let before = free_pages(&mut k, &mut ctx);
        let mm = k.new_mm(0, Default::default());
        k.mms[mm as usize].mmap(0, 1024 + 8, ThpAdvice::NoHugepage);
        // Pages 0, 1 and 600 (two 2 MiB ranges) and 1030 (a third): 3 PTE pages, a PMD, PUD,
        // PGD.
        for index in [0, 1, 600, 1030] {
            handle_mm_fault(&mut k, &mut ctx, mm, 0, index, true).unwrap();
        }
        assert_eq!(k.kmem.nr_page_table_pages, 6);
        check(&k).unwrap();
        vm_munmap(&mut k, &mut ctx, mm, 0);
        assert_eq!(k.kmem.nr_page_table_pages, 2, "PGD and PUD stay until exit");
        crate::mm::mmap::exit_mmap(&mut k, &mut ctx, mm);
        assert_eq!(k.kmem.nr_page_table_pages, 0);
        check(&k).unwrap();
        assert_eq!(free_pages(&mut k, &mut ctx), before);
    }

    #[test]
    fn stacks_and_slabs_are_held_then_freed() {
        let (mut k, mut ctx) = kernel(true);
        let before = free_pages(&mut k, &mut ctx);
        alloc_thread_stack(&mut k, &mut ctx, 0).unwrap();
        alloc_thread_stack(&mut k, &mut ctx, 0).unwrap();
        assert_eq!(k.kmem.kernel_stack_kb(), 32);
        let tasks: Vec<u32> = (0..10)
            .map(|_| kmem_cache_alloc(&mut k, &mut ctx, Cache::TaskStruct).unwrap())
            .collect();
        lookup_file(&mut k, &mut ctx, 0).unwrap();
        lookup_file(&mut k, &mut ctx, 0).unwrap();
        let (recl, unrecl) = k.kmem.slabs.nr_pages();
        // 10 task_structs, 3 to an order-3 slab: 4 slabs; a dentry slab (order 0) and an
        // inode slab (order 2 for 2 CPUs: 13 inodes of 1192 bytes, 888 bytes left over).
        assert_eq!(unrecl, 4 * 8);
        assert_eq!(recl, 1 + 4);
        assert!(free_pages(&mut k, &mut ctx) < before);
        check(&k).unwrap();
        for id in tasks {
            kmem_cache_free(&mut k, &mut ctx, Cache::TaskStruct, id);
        }
        assert_eq!(prune_sb(&mut k, &mut ctx, 2), 2);
        free_thread_stack(&mut k, &mut ctx, 0);
        free_thread_stack(&mut k, &mut ctx, 0);
        check(&k).unwrap();
        // Empty slabs are kept while fewer than min_partial are partial (5 each here).
        let (recl, unrecl) = k.kmem.slabs.nr_pages();
        assert_eq!((recl, unrecl), (1 + 4, 4 * 8));
        assert_eq!(k.kmem.kernel_stack_kb(), 0);
    }

    #[test]
    fn kernel_allocations_take_unmovable_and_reclaimable_pageblocks() {
        use crate::mm::page_alloc::MigrateType;
        let (mut k, mut ctx) = kernel(true);
        alloc_thread_stack(&mut k, &mut ctx, 0).unwrap();
        lookup_file(&mut k, &mut ctx, 0).unwrap();
        let blocks = k.pgdat[0].zone.free_area().nr_pageblocks;
        assert!(blocks[MigrateType::Unmovable as usize] >= 1, "{blocks:?}");
        assert!(blocks[MigrateType::Reclaimable as usize] >= 1, "{blocks:?}");
    }

    #[test]
    fn off_by_default_nothing_is_allocated() {
        let (mut k, mut ctx) = kernel(false);
        let mm = k.new_mm(0, Default::default());
        k.mms[mm as usize].mmap(0, 16, ThpAdvice::NoHugepage);
        handle_mm_fault(&mut k, &mut ctx, mm, 0, 0, true).unwrap();
        assert_eq!(k.kmem.nr_page_table_pages, 0);
        assert!(!k.vmstat_map(0).contains_key("PageTables_kB"));
    }
}
