//! madvise (mm/madvise.c): MADV_PAGEOUT reclaims a range now, MADV_COLD deactivates it,
//! MADV_DONTNEED zaps it (splitting the PMD of a THP it covers in part, which then waits on the
//! deferred split queue), MADV_HUGEPAGE / MADV_NOHUGEPAGE set the VMA's THP advice (the model
//! applies them to the whole VMA: the kernel would split the VMA at the range's ends).

use super::folio::flags;
use super::huge_memory::{can_split_folio, split_folio};
use super::khugepaged::khugepaged_enter_vma;
use super::memcontrol::ROOT_MEMCG;
use super::memory::zap_range;
use super::mmap::ThpAdvice;
use super::vmscan::{putback_folios, shrink_folio_list, Reclaim};
use super::vmstat::VmEvent;
use super::Kernel;
use crate::engine::Ctx;
use crate::scenario::PMD_ORDER;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    Pageout,
    Cold,
    Dontneed,
    /// MADV_HUGEPAGE: VM_HUGEPAGE on the VMA; registers the mm with khugepaged
    /// (hugepage_madvise -> khugepaged_enter_vma).
    Hugepage,
    /// MADV_NOHUGEPAGE: VM_NOHUGEPAGE; khugepaged skips the VMA from then on.
    Nohugepage,
}

pub fn madvise(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    first: u32,
    nr: u32,
    advice: Advice,
) {
    match advice {
        Advice::Dontneed => {
            let start_ns = ctx.now_ns;
            k.mms[mm as usize].mmap_lock.read_lock(ctx);
            // zap_page_range_single: the mmu_gather flushes what was mapped at its end.
            let span = zap_range(k, ctx, mm, vma, first, nr);
            if span > 0 {
                let arch = k.cfg.tlb;
                arch.flush_range(k, ctx, mm, span);
            }
            k.mms[mm as usize].mmap_lock.read_unlock(ctx, start_ns);
        }
        Advice::Pageout | Advice::Cold => {
            let start_ns = ctx.now_ns;
            k.mms[mm as usize].mmap_lock.read_lock(ctx);
            cold_or_pageout(k, ctx, mm, vma, first, nr, advice == Advice::Pageout);
            k.mms[mm as usize].mmap_lock.read_unlock(ctx, start_ns);
        }
        Advice::Hugepage | Advice::Nohugepage => {
            // madvise_need_mmap_write: the VMA flags change under the write lock.
            let m = &mut k.mms[mm as usize];
            m.mmap_lock.write_lock(ctx);
            m.vma_mut(vma).thp = if advice == Advice::Hugepage {
                ThpAdvice::Hugepage
            } else {
                ThpAdvice::NoHugepage
            };
            m.mmap_lock.write_unlock(ctx);
            if advice == Advice::Hugepage {
                khugepaged_enter_vma(k, ctx.now_ns, mm, vma);
            }
        }
    }
}

/// madvise_cold_or_pageout_pte_range, one PMD's worth at a time: a large folio wholly inside
/// the range is handled whole if the policy swaps its order out whole; otherwise it is split
/// and the walk resumes at the same address. PAGEOUT reclaims each PMD's batch at once.
fn cold_or_pageout(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    vma: u32,
    first: u32,
    nr: u32,
    pageout: bool,
) {
    let end = first + nr;
    let mut index = first;
    let mut isolated = Vec::new();
    let mut young: Option<(u32, u32)> = None;
    while index < end {
        let pmd_end = ((index >> PMD_ORDER) + 1) << PMD_ORDER;
        super::tlb::flush_tlb_batched_pending(k, ctx, mm);
        while index < end.min(pmd_end) {
            let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
            if !pte.is_present() {
                index += 1;
                continue;
            }
            let head = k.folios.head_of(pte.pfn());
            let order = k.folios.order[head as usize] as u32;
            let nr_folio = 1u32 << order;
            let start = k.folios.owner_index(head as usize);
            // Page-cache pages are left alone (the model pages out anonymous memory only).
            if !k.folios.test(head, flags::LRU) || k.folios.test(head, flags::FILE) {
                index += 1;
                continue;
            }
            if order > 0 {
                let whole = start >= first
                    && start + nr_folio <= end
                    && k.folios.mapcount(head as usize) as u32 == nr_folio;
                if !whole || (pageout && !k.swap.swapout_whole(order)) {
                    if !can_split_folio(&k.folios, head, ctx.now_ns) {
                        // split_folio refuses a pinned folio or one under writeback.
                        index = start + nr_folio;
                        continue;
                    }
                    split_folio(k, ctx, head, None);
                    continue;
                }
            }
            let memcg = k.folios.memcg(head as usize) as usize;
            if !pageout && k.folios.test(head, flags::YOUNG) {
                // MADV_COLD makes young PTEs old and gathers them for tlb_finish_mmu's flush
                // (6.18; MADV_PAGEOUT leaves the PTEs to reclaim's unmap).
                young = Some((young.map_or(start, |y| y.0), start + nr_folio - 1));
            }
            // Both paths forget the folio's accesses (folio_clear_referenced, young cleared);
            // an active folio is marked workingset, so its refault is a restore.
            k.folios.clear(head, flags::YOUNG | flags::REFERENCED);
            super::access::young_cleared(k, head);
            if k.folios.test(head, flags::ACTIVE) {
                k.folios.set(head, flags::WORKINGSET);
            }
            let nid = k.nodes.nid(head);
            let cg = &mut k.memcgs[memcg];
            if pageout {
                cg.lruvec_mut(nid).del_folio(&mut k.folios, head);
                isolated.push(head);
            } else if k.folios.test(head, flags::ACTIVE) {
                // lru_deactivate: only an active folio moves (and is counted).
                cg.lruvec_mut(nid).del_folio(&mut k.folios, head);
                cg.lruvec_mut(nid).add_folio(&mut k.folios, head);
                cg.count(VmEvent::Pgdeactivate, nr_folio as u64);
                k.vmstat.count(VmEvent::Pgdeactivate, nr_folio as u64);
            }
            cg.lruvec_mut(nid).lru_lock.hold(ctx, k.cost.lru_move_ns);
            index = start + nr_folio;
        }
        if !isolated.is_empty() {
            // reclaim_pages
            // reclaim_pages: no target memcg, so evictions stamp the root's age.
            let isolated = std::mem::take(&mut isolated);
            let result = shrink_folio_list(k, ctx, isolated, Reclaim::Pageout, ROOT_MEMCG);
            putback_folios(k, ctx, &result.putback, false);
        }
    }
    if let Some((a, b)) = young {
        let arch = k.cfg.tlb;
        arch.flush_range(k, ctx, mm, (b - a + 1) as u64);
    }
}
