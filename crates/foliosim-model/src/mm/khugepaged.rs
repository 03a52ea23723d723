//! khugepaged (mm/khugepaged.c, 6.18): the kernel thread that collapses PTE-mapped anonymous
//! 2 MiB ranges into PMD-mapped THPs.
//!
//! Registration (khugepaged_enter_vma): the first time one of an mm's VMAs is eligible for PMD
//! THP under khugepaged's rules while PMD THP is enabled (hugepage_pmd_enabled), the mm gets a
//! slot at the tail of the scan list, and the thread is woken if the list was empty. Callers:
//! the THP fault (do_huge_pmd_anonymous_page, before it allocates, so a fault that falls back
//! registers too), MADV_HUGEPAGE, and mmap, which registers nothing for a new anonymous VMA:
//! khugepaged wants an anon_vma, set up by the VMA's first fault. With only smaller mTHP sizes
//! enabled (PMD size never) the thread does not exist and nothing registers.
//!
//! The thread (`KthreadKind::Khugepaged`, nice 19) loops khugepaged_do_scan then sleeps
//! scan_sleep_millisecs. A pass walks the slots from the cursor with a budget of pages_to_scan:
//! 1 per mm entered, 1 per VMA skipped, 512 per 2 MiB range looked at; at most two trips
//! through the list head. A range qualifies (hpage_collapse_scan_pmd) with at most
//! max_ptes_none empty PTEs, at most max_ptes_swap swap PTEs, at most max_ptes_shared shared
//! pages, every folio on the LRU, and at least one young PTE (256 when some are swapped out);
//! then collapse_huge_page (khugepaged/collapse.rs) runs, and the pass moves to the next mm. A
//! failed huge page allocation sleeps alloc_sleep_millisecs the first time and ends the pass the
//! second. Each call of `khugepaged_step` does one piece: entering a slot, or one range.
//!
//! The model's address space: VMA ids stand for address order; VMAs are 2 MiB aligned, so a
//! VMA's ranges are its whole 512-page blocks, and a block with a hole (part munmapped) is not
//! inside one VMA. No page-table pages: a range without any PTE is SCAN_PMD_NONE (the kernel
//! reports SCAN_EXCEED_NONE_PTE for a page table that zaps left empty). No fork (no shared
//! pages: max_ptes_shared never trips), no zero page, one node. Not modelled: mTHP collapse
//! (Nico Pache's series, not in 6.18) and MADV_COLLAPSE.

mod collapse;

pub use collapse::khugepaged_gfp;

use super::folio::flags;
use super::kthread::{KthreadKind, KthreadNext};
use super::mmap::Vma;
use super::vmstat::VmEvent;
use super::{Kernel, KernelConfig};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::{Scenario, PMD_ORDER};

/// HPAGE_PMD_NR.
pub const HPAGE_PMD_NR: u32 = 1 << PMD_ORDER;

/// enum scan_result: why a range was or was not collapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanResult {
    Succeed,
    Fail,
    /// No page table (no PTE at all in the range).
    PmdNone,
    /// Already a PMD mapping.
    PmdMapped,
    ExceedNonePte,
    ExceedSwapPte,
    ExceedSharedPte,
    /// A swap PTE found while isolating (reclaim swapped a page out meanwhile).
    PteNonPresent,
    LackReferencedPage,
    /// A folio not on the LRU (isolated by reclaim or compaction).
    PageLru,
    /// A folio with extra references; the model's stand-in: under writeback.
    PageCount,
    /// The range is not inside one VMA (a hole from a partial munmap).
    AddressRange,
    /// The VMA is gone or no longer eligible.
    VmaCheck,
    AllocHugePageFail,
    CgroupChargeFail,
}

/// hugepage_pmd_enabled for anonymous memory: the PMD size is `always` or `madvise`, or
/// `inherit` with the top-level `enabled` not `never`.
pub fn hugepage_pmd_enabled(scenario: &Scenario) -> bool {
    scenario.sysfs.orders_enabled(true) & (1 << PMD_ORDER) != 0
}

/// khugepaged_do_scan in progress.
#[derive(Debug, Clone, Copy)]
struct DoScan {
    /// pages_to_scan when the pass began.
    pages: u32,
    progress: u32,
    pass_through_head: u32,
    /// Not yet slept after an allocation failure.
    wait: bool,
    /// Inside khugepaged_scan_mm_slot (the mm's mmap lock taken for read).
    in_slot: bool,
    /// The last range's result.
    result: ScanResult,
}

/// khugepaged's sysfs knobs, its mm slots and its scan cursor.
#[derive(Debug, Clone)]
pub struct Khugepaged {
    pub pages_to_scan: u32,
    pub scan_sleep_ns: u64,
    pub alloc_sleep_ns: u64,
    pub max_ptes_none: u32,
    pub max_ptes_swap: u32,
    pub max_ptes_shared: u32,
    /// `khugepaged/defrag`: the collapse allocation may reclaim and compact (GFP_TRANSHUGE)
    /// rather than only take free pages (GFP_TRANSHUGE_LIGHT).
    pub defrag: bool,
    /// hugepage_pmd_enabled(): the thread exists and mms register.
    pub pmd_enabled: bool,
    /// khugepaged_scan.mm_head: registered mms, oldest first.
    slots: Vec<u32>,
    /// khugepaged_scan.mm_slot: the mm being scanned; None: start from the list head.
    cursor: Option<u32>,
    /// khugepaged_scan.address: (VMA id, page index) to resume at in the cursor's mm.
    address: (u32, u32),
    pass: Option<DoScan>,
}

impl Khugepaged {
    /// The scenario's `[sysfs.khugepaged]` knobs, the kernel's defaults where absent.
    pub fn new(scenario: &Scenario) -> Khugepaged {
        let knobs = &scenario.sysfs.khugepaged;
        const MS: u64 = 1_000_000;
        Khugepaged {
            pages_to_scan: knobs.pages_to_scan.unwrap_or(HPAGE_PMD_NR * 8),
            scan_sleep_ns: knobs.scan_sleep_millisecs.unwrap_or(10_000) as u64 * MS,
            alloc_sleep_ns: knobs.alloc_sleep_millisecs.unwrap_or(60_000) as u64 * MS,
            max_ptes_none: knobs.max_ptes_none.unwrap_or(HPAGE_PMD_NR - 1),
            max_ptes_swap: knobs.max_ptes_swap.unwrap_or(HPAGE_PMD_NR / 8),
            max_ptes_shared: knobs.max_ptes_shared.unwrap_or(HPAGE_PMD_NR / 2),
            defrag: knobs.defrag.unwrap_or(true),
            pmd_enabled: hugepage_pmd_enabled(scenario),
            slots: Vec::new(),
            cursor: None,
            address: (0, 0),
            pass: None,
        }
    }

    /// khugepaged_has_work.
    pub fn has_work(&self) -> bool {
        !self.slots.is_empty() && self.pmd_enabled
    }

    /// The registered mms, oldest first.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }
}

/// thp_vma_allowable_order(vma, TVA_KHUGEPAGED, PMD_ORDER) for an anonymous VMA: PMD THP allowed
/// by the VMA's advice and the per-size settings, a whole 2 MiB block inside it, an anon_vma.
pub fn vma_allowable_pmd(cfg: &KernelConfig, vma: &Vma) -> bool {
    let mask = cfg.thp_orders_for(vma.thp);
    mask & (1 << PMD_ORDER) != 0 && vma.nr_pages >= HPAGE_PMD_NR && vma.anon_vma
}

/// khugepaged_enter_vma: register `mm` if `vma` is eligible and it is not registered yet.
pub fn khugepaged_enter_vma(k: &mut Kernel, now_ns: u64, mm: u32, vma: u32) {
    let m = &k.mms[mm as usize];
    if m.khugepaged_registered || !k.khugepaged.pmd_enabled || m.mm_users == 0 {
        return;
    }
    if !vma_allowable_pmd(&k.cfg, m.vma(vma)) {
        return;
    }
    // __khugepaged_enter: behind the cursor, to let the area settle down a little.
    k.mms[mm as usize].khugepaged_registered = true;
    let wakeup = k.khugepaged.slots.is_empty();
    k.khugepaged.slots.push(mm);
    if wakeup {
        k.kthreads.wake(KthreadKind::Khugepaged, now_ns);
    }
}

/// khugepaged_exit at the mm's exit: its slot goes, unless the scan is on it (the scan drops
/// it when it sees the mm gone).
pub fn khugepaged_exit(k: &mut Kernel, mm: u32) {
    let kh = &mut k.khugepaged;
    if !k.mms[mm as usize].khugepaged_registered || kh.cursor == Some(mm) {
        return;
    }
    kh.slots.retain(|&m| m != mm);
    k.mms[mm as usize].khugepaged_registered = false;
}

/// One piece of khugepaged's loop on the CPU of `ctx`.
pub fn khugepaged_step(k: &mut Kernel, ctx: &mut Ctx) -> KthreadNext {
    // A new pass: the fault policy may first want a THP available (khugepaged_check_nodes);
    // with none, no scan, and the alloc sleep.
    if k.khugepaged.pass.is_none() && !k.cfg.thp_fault_alloc.khugepaged_check_nodes(k, ctx) {
        return KthreadNext::SleepNs(k.khugepaged.alloc_sleep_ns);
    }
    let kh = &mut k.khugepaged;
    // lru_add_drain_all at the start of a pass: the model's LRU adds are immediate.
    let mut s = kh.pass.take().unwrap_or(DoScan {
        pages: kh.pages_to_scan,
        progress: 0,
        pass_through_head: 0,
        wait: true,
        in_slot: false,
        result: ScanResult::Succeed,
    });
    if s.in_slot {
        match scan_slot_piece(k, ctx, &mut s) {
            None => {
                k.khugepaged.pass = Some(s);
                return KthreadNext::Run;
            }
            Some(mm_done) => end_slot(k, &mut s, mm_done),
        }
    } else {
        // khugepaged_do_scan's loop.
        if kh.cursor.is_none() {
            s.pass_through_head += 1;
        }
        if kh.has_work() && s.pass_through_head < 2 {
            s.result = ScanResult::Fail;
            if enter_slot(k, ctx, &mut s) {
                s.in_slot = true;
                k.khugepaged.pass = Some(s);
                return KthreadNext::Run;
            }
            end_slot(k, &mut s, true);
        } else {
            s.progress = s.pages;
        }
    }
    s.in_slot = false;
    if s.progress >= s.pages {
        return wait_work(k);
    }
    if s.result == ScanResult::AllocHugePageFail {
        // khugepaged_alloc_sleep once; a second failure ends the pass.
        if !s.wait {
            return wait_work(k);
        }
        s.wait = false;
        k.khugepaged.pass = Some(s);
        return KthreadNext::SleepNs(k.khugepaged.alloc_sleep_ns);
    }
    k.khugepaged.pass = Some(s);
    KthreadNext::Run
}

/// khugepaged_wait_work after a pass.
fn wait_work(k: &Kernel) -> KthreadNext {
    let kh = &k.khugepaged;
    // A fault asked for a THP while this pass ran: no sleep.
    if k.cfg.thp_fault_alloc.khugepaged_requested(k) {
        return KthreadNext::Run;
    }
    if !kh.has_work() {
        return KthreadNext::Wait;
    }
    if kh.scan_sleep_ns == 0 {
        KthreadNext::Run
    } else {
        KthreadNext::SleepNs(kh.scan_sleep_ns)
    }
}

/// The start of khugepaged_scan_mm_slot: take the cursor's slot (or the first), and the mm's
/// mmap lock for read if no writer holds it. False: the slot is done with (lock busy, or the mm
/// is exiting).
fn enter_slot(k: &mut Kernel, ctx: &mut Ctx, s: &mut DoScan) -> bool {
    let kh = &mut k.khugepaged;
    let mm = match kh.cursor {
        Some(mm) => mm,
        None => {
            let first = kh.slots[0];
            kh.cursor = Some(first);
            kh.address = (0, 0);
            first
        }
    };
    let m = &k.mms[mm as usize];
    // mmap_read_trylock: a writer now means moving on to the next mm, without progress.
    if m.mmap_lock.write_locked_at(ctx.now_ns) {
        return false;
    }
    s.progress += 1;
    m.mm_users > 0
}

/// One piece of khugepaged_scan_mm_slot's VMA walk: skip ineligible VMAs (1 each), then look
/// at one 2 MiB range. Returns None to go on, or Some(the mm was scanned to its end, or is
/// exiting) when the slot is done with.
fn scan_slot_piece(k: &mut Kernel, ctx: &mut Ctx, s: &mut DoScan) -> Option<bool> {
    let mm = k.khugepaged.cursor.expect("scanning a slot");
    if k.mms[mm as usize].mm_users == 0 {
        s.progress += 1;
        return Some(true);
    }
    let (mut vma, mut index) = k.khugepaged.address;
    loop {
        let m = &k.mms[mm as usize];
        if vma as usize >= m.vmas.len() {
            // for_each_vma ran out: the whole mm was scanned.
            return Some(true);
        }
        let Some(v) = m.vmas[vma as usize].as_ref() else {
            (vma, index) = (vma + 1, 0);
            continue;
        };
        let hend = v.nr_pages & !(HPAGE_PMD_NR - 1);
        if !vma_allowable_pmd(&k.cfg, v) || index > hend {
            s.progress += 1;
            (vma, index) = (vma + 1, 0);
            continue;
        }
        if index == hend {
            (vma, index) = (vma + 1, 0);
            continue;
        }
        break;
    }
    let mut mmap_locked = true;
    let result = if k.cfg.thp_fault_alloc.collapse_target_available(k) {
        hpage_collapse_scan_pmd(k, ctx, mm, vma, index, &mut mmap_locked)
    } else {
        // The RFC's scan gives up on a range once half its pages (node_load 256) are on a
        // node without THPs: the model's one node.
        ctx.spend(
            CpuCost::KhugepagedScan,
            k.cost.khugepaged_scan_pmd_ns + k.cost.khugepaged_scan_pte_ns * 256,
        );
        ScanResult::Fail
    };
    if result == ScanResult::Succeed {
        k.vmstat.count(VmEvent::KhugepagedPagesCollapsed, 1);
    }
    s.result = result;
    k.khugepaged.address = (vma, index + HPAGE_PMD_NR);
    s.progress += HPAGE_PMD_NR;
    // A collapse attempt dropped the mmap lock: on to the next mm's turn.
    if !mmap_locked || s.progress >= s.pages {
        return Some(false);
    }
    None
}

/// The end of khugepaged_scan_mm_slot: when the mm was scanned to its end or is exiting, the
/// cursor moves to the next slot (past the last: a full scan), and an exited mm's slot goes.
fn end_slot(k: &mut Kernel, _s: &mut DoScan, mm_done: bool) {
    let kh = &mut k.khugepaged;
    let mm = kh.cursor.expect("a slot was entered");
    let exited = k.mms[mm as usize].mm_users == 0;
    if !(exited || mm_done) {
        return;
    }
    let at = kh
        .slots
        .iter()
        .position(|&m| m == mm)
        .expect("the cursor's slot");
    match kh.slots.get(at + 1) {
        Some(&next) => {
            kh.cursor = Some(next);
            kh.address = (0, 0);
        }
        None => {
            kh.cursor = None;
            k.vmstat.count(VmEvent::KhugepagedFullScans, 1);
        }
    }
    if exited {
        // collect_mm_slot
        kh.slots.remove(at);
        k.mms[mm as usize].khugepaged_registered = false;
    }
}

/// hpage_collapse_scan_pmd over the 512 PTEs of `vma` from `start`: collapse if the range
/// qualifies (then `mmap_locked` is cleared: the collapse drops the lock).
fn hpage_collapse_scan_pmd(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    start: u32,
    mmap_locked: &mut bool,
) -> ScanResult {
    ctx.spend(CpuCost::KhugepagedScan, k.cost.khugepaged_scan_pmd_ns);
    let kh = &k.khugepaged;
    let ptes = &k.mms[mm as usize].vma(vma).ptes[start as usize..(start + HPAGE_PMD_NR) as usize];
    // find_pmd_or_thp_or_none, and the range inside the VMA.
    if ptes.iter().any(|p| p.is_hole()) {
        return ScanResult::AddressRange;
    }
    if ptes[0].is_present()
        && k.folios
            .test(k.folios.head_of(ptes[0].pfn()), flags::PMD_MAPPED)
    {
        return ScanResult::PmdMapped;
    }
    if ptes.iter().all(|p| p.is_none()) {
        return ScanResult::PmdNone;
    }
    let (mut none_or_zero, mut unmapped, mut referenced) = (0u32, 0u32, 0u32);
    let mut examined = 0u64;
    let mut result = ScanResult::Succeed;
    for pte in ptes {
        examined += 1;
        if pte.is_none() {
            none_or_zero += 1;
            if none_or_zero > kh.max_ptes_none {
                result = ScanResult::ExceedNonePte;
                break;
            }
            continue;
        }
        if pte.is_swap() {
            unmapped += 1;
            if unmapped > kh.max_ptes_swap {
                result = ScanResult::ExceedSwapPte;
                break;
            }
            continue;
        }
        let head = k.folios.head_of(pte.pfn());
        if !k.folios.test(head, flags::LRU) {
            result = ScanResult::PageLru;
            break;
        }
        if k.folios.test(head, flags::WRITEBACK) {
            result = ScanResult::PageCount;
            break;
        }
        if k.folios.test(head, flags::YOUNG | flags::REFERENCED) {
            referenced += 1;
        }
    }
    ctx.spend(
        CpuCost::KhugepagedScan,
        k.cost.khugepaged_scan_pte_ns * examined,
    );
    match result {
        ScanResult::ExceedNonePte => k.vmstat.count(VmEvent::ThpScanExceedNonePte, 1),
        ScanResult::ExceedSwapPte => k.vmstat.count(VmEvent::ThpScanExceedSwapPte, 1),
        _ => {}
    }
    if result != ScanResult::Succeed {
        return result;
    }
    if referenced == 0 || (unmapped > 0 && referenced < HPAGE_PMD_NR / 2) {
        return ScanResult::LackReferencedPage;
    }
    *mmap_locked = false;
    collapse::collapse_huge_page(k, ctx, mm, vma, start, unmapped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::ContentClass;
    use crate::mm::folio::SwapEntry;
    use crate::mm::memory::touch;
    use crate::mm::mmap::{Pte, ThpAdvice};

    /// PMD THP for MADV_HUGEPAGE only; mm 0 with VMA 0 of two ranges (`thp`), range 0 faulted
    /// with 4K pages.
    fn setup(thp: ThpAdvice) -> (Kernel, Ctx<'static>) {
        let text = r#"
[machine]
cpus = 2
memory = "256M"
[sysfs]
thp_enabled = "madvise"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;
        let mut k = Kernel::new(&Scenario::from_toml_str(text).unwrap());
        let mut ctx = Ctx::new(0, 0);
        let mm = k.new_mm(0, ContentClass::Usemem);
        k.mms[mm as usize].mmap(0, 2 * HPAGE_PMD_NR, ThpAdvice::NoHugepage);
        let mut index = 0;
        while index < HPAGE_PMD_NR {
            index += touch(&mut k, &mut ctx, mm, 0, index, HPAGE_PMD_NR, true).unwrap();
        }
        k.mms[0].vma_mut(0).thp = thp;
        (k, ctx)
    }

    fn scan(k: &mut Kernel, ctx: &mut Ctx, start: u32) -> ScanResult {
        let mut locked = true;
        let r = hpage_collapse_scan_pmd(k, ctx, 0, 0, start, &mut locked);
        assert_eq!(
            locked,
            r != ScanResult::Succeed && r != ScanResult::AllocHugePageFail
        );
        r
    }

    /// Replace PTEs `range` by swap PTEs (the scan does not look at the swap device).
    fn fake_swap(k: &mut Kernel, range: std::ops::Range<u32>) {
        for i in range {
            k.mms[0].vma_mut(0).ptes[i as usize] = Pte::swap(SwapEntry::new(0, i));
        }
    }

    #[test]
    fn swap_ptes_above_max_ptes_swap_stop_the_scan() {
        let (mut k, mut ctx) = setup(ThpAdvice::Hugepage);
        fake_swap(&mut k, 0..65);
        assert_eq!(scan(&mut k, &mut ctx, 0), ScanResult::ExceedSwapPte);
        assert_eq!(k.vmstat.get(VmEvent::ThpScanExceedSwapPte), 1);
    }

    #[test]
    fn with_swap_ptes_half_the_ptes_must_be_young() {
        let (mut k, mut ctx) = setup(ThpAdvice::Hugepage);
        fake_swap(&mut k, 0..40);
        for i in 40..300u32 {
            let pfn = k.mms[0].vma(0).ptes[i as usize].pfn();
            k.folios.clear(pfn, flags::YOUNG | flags::REFERENCED);
        }
        // 212 young PTEs < 256.
        assert_eq!(scan(&mut k, &mut ctx, 0), ScanResult::LackReferencedPage);
    }

    #[test]
    fn empty_ranges_pmd_ranges_and_holes_are_passed_over() {
        let (mut k, mut ctx) = setup(ThpAdvice::Hugepage);
        assert_eq!(scan(&mut k, &mut ctx, HPAGE_PMD_NR), ScanResult::PmdNone);
        k.mms[0].vma_mut(0).ptes[7] = Pte::HOLE;
        assert_eq!(scan(&mut k, &mut ctx, 0), ScanResult::AddressRange);
        assert_eq!(k.vmstat.get(VmEvent::ThpScanExceedNonePte), 0);
    }

    #[test]
    fn registration_wants_pmd_thp_for_the_vma_and_an_anon_vma() {
        let (mut k, _) = setup(ThpAdvice::Default);
        // A plain VMA under `madvise`: no PMD THP, no slot.
        khugepaged_enter_vma(&mut k, 0, 0, 0);
        assert!(k.khugepaged.slots().is_empty());
        // A new VMA without a fault yet has no anon_vma.
        k.mms[0].mmap(1, HPAGE_PMD_NR, ThpAdvice::Hugepage);
        khugepaged_enter_vma(&mut k, 0, 0, 1);
        assert!(k.khugepaged.slots().is_empty());
        // MADV_HUGEPAGE on the faulted VMA: registered once, the thread woken once.
        k.mms[0].vma_mut(0).thp = ThpAdvice::Hugepage;
        khugepaged_enter_vma(&mut k, 5, 0, 0);
        khugepaged_enter_vma(&mut k, 6, 0, 0);
        assert_eq!(k.khugepaged.slots(), [0]);
        assert!(k.mms[0].khugepaged_registered);
        assert_eq!(k.kthreads.pending().len(), 1);
        // Its exit frees the slot (the scan is not on it).
        khugepaged_exit(&mut k, 0);
        assert!(k.khugepaged.slots().is_empty());
    }
}
