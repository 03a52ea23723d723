//! Large folio helpers (mm/huge_memory.c): which orders a fault may use, splitting a PMD
//! mapping and a folio, and the deferred split queue (huge_memory/deferred_split.rs).

pub mod deferred_split;

use super::folio::{flags, FolioTable, SwapEntry};
use super::gfp::Gfp;
use super::mmap::{ThpAdvice, Vma};
use super::vmstat::{MthpStat, VmEvent};
use super::{Kernel, KernelConfig};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::{ThpDefrag, PMD_ORDER};
use std::collections::VecDeque;

/// vma_thp_gfp_mask: how hard a large anon folio's allocation and memcg charge may try, from
/// `transparent_hugepage/defrag` and whether the VMA is MADV_HUGEPAGE: `always` reclaims and
/// compacts (once, without MADV_HUGEPAGE), `defer` only wakes kswapd (kcompactd in the kernel),
/// `defer+madvise` reclaims for MADV_HUGEPAGE and wakes kswapd otherwise, `madvise` reclaims
/// for MADV_HUGEPAGE only, `never` does neither. `transhuge` is the release's GFP_TRANSHUGE
/// ([`Gfp::transhuge_of`]).
pub fn vma_thp_gfp_mask(defrag: ThpDefrag, vma: &Vma, transhuge: Gfp) -> Gfp {
    let madvised = vma.thp == ThpAdvice::Hugepage;
    let light = Gfp::GFP_TRANSHUGE_LIGHT;
    match defrag {
        ThpDefrag::Always if madvised => transhuge,
        ThpDefrag::Always => transhuge.noretry(),
        ThpDefrag::Defer => light | Gfp::KSWAPD_RECLAIM,
        ThpDefrag::DeferMadvise if madvised => transhuge,
        ThpDefrag::DeferMadvise => light | Gfp::KSWAPD_RECLAIM,
        ThpDefrag::Madvise if madvised => transhuge,
        ThpDefrag::Madvise | ThpDefrag::Never => light,
    }
}

/// A fault's candidate orders (1..=PMD_ORDER, at most one each), on the stack: no allocation
/// per fault.
pub struct OrderList {
    orders: [u32; PMD_ORDER as usize],
    len: usize,
}

impl FromIterator<u32> for OrderList {
    // Inline: every fault collects its candidate orders, most often none.
    #[inline]
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> OrderList {
        let mut list = OrderList {
            orders: [0; PMD_ORDER as usize],
            len: 0,
        };
        for order in iter {
            list.orders[list.len] = order;
            list.len += 1;
        }
        list
    }
}

impl std::ops::Deref for OrderList {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.orders[..self.len]
    }
}

/// thp_vma_allowable_orders + thp_vma_suitable_order: enabled orders whose naturally aligned
/// range around `index` lies inside the VMA, highest first.
pub fn suitable_orders(cfg: &KernelConfig, vma: &Vma, index: u32) -> impl Iterator<Item = u32> {
    let mask = cfg.thp_orders_for(vma.thp);
    let nr_pages = vma.nr_pages;
    // The enabled orders' bits, highest first (most runs enable one size or none).
    let mut bits = mask & ((2 << PMD_ORDER) - 2);
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let order = 31 - bits.leading_zeros();
            bits &= !(1 << order);
            order
        })
    })
    .filter(move |&order| {
        let start = index & !((1 << order) - 1);
        start + (1 << order) <= nr_pages
    })
}

/// __split_huge_pmd for the anon THP at `head`, PMD-mapped in `mm`: the PMD becomes a page
/// table of 512 PTEs mapping the same pages (thp_split_pmd); pmdp_invalidate flushes the TLB.
pub fn split_huge_pmd(k: &mut Kernel, ctx: &mut Ctx, mm: u32, head: u32) {
    debug_assert!(k.folios.test(head, flags::PMD_MAPPED));
    k.folios.clear(head, flags::PMD_MAPPED);
    k.vmstat.count(VmEvent::ThpSplitPmd, 1);
    ctx.spend(CpuCost::SplitHugePmd, k.cost.pmd_split_ns);
    let arch = k.cfg.tlb;
    arch.split_pmd(k, ctx, mm);
}

/// can_split_folio, for the callers that may meet any folio: not a pinned one (its extra
/// references fail the split) and not one under writeback (-EBUSY).
pub fn can_split_folio(f: &FolioTable, pfn: u32, now_ns: u64) -> bool {
    let under_writeback = f.test(pfn, flags::WRITEBACK) && f.writeback_done_ns(pfn) > now_ns;
    !f.is_pinned(pfn) && !under_writeback
}

/// split_folio_to_list: split a large folio into order-0 folios. A folio in the swap cache
/// splits into pages each in the swap cache on its own slot (page i on the folio's slot i,
/// __split_huge_page's swap cache update), which stay, mapped or not, until reclaim or a
/// fault takes them out; it must not be under writeback. Its PTEs are unmapped to
/// migration entries and restored, with the TLB work of the machine's arch (mm/tlb/). Mapped
/// tails follow the head on its LRU list, or are queued on `list` when the head is isolated
/// for reclaim. Pages no PTE maps any more (a partially mapped folio) are freed
/// (free_folio_and_swap_cache); the head page too when there is no `list` (the caller's
/// reference dropped), while reclaim's isolated head stays with its caller.
pub fn split_folio(k: &mut Kernel, ctx: &mut Ctx, pfn: u32, list: Option<&mut VecDeque<u32>>) {
    deferred_split::folio_unqueue_deferred_split(&mut k.deferred_split, &mut k.folios, pfn);
    let f = &mut k.folios;
    let i = pfn as usize;
    let order = f.order[i] as u32;
    let nr = 1u32 << order;
    assert!(order > 0, "split of order-0 folio {pfn}");
    assert!(!f.is_pinned(pfn), "split of pinned folio {pfn}");
    let in_swapcache = f.test(pfn, flags::SWAPCACHE);
    // Page i's slot, before the folio's slot list goes away.
    let slots: Vec<SwapEntry> = if in_swapcache {
        assert!(
            !f.test(pfn, flags::WRITEBACK) || f.writeback_done_ns(pfn) <= ctx.now_ns,
            "split of folio {pfn} under writeback (can_split_folio)"
        );
        (0..nr).map(|sub| f.page_swap_entry(pfn, sub)).collect()
    } else {
        Vec::new()
    };
    let (mm, vma, index, memcg) = (f.owner_mm(i), f.owner_vma(i), f.owner_index(i), f.memcg(i));
    ctx.spend(
        CpuCost::SplitHugePage,
        k.cost.split_folio_ns + k.cost.split_page_ns * nr as u64,
    );
    let was_mapped = f.mapcount(i) > 0;
    let pmd_mapped = f.test(pfn, flags::PMD_MAPPED);
    if f.test(pfn, flags::PMD_MAPPED) {
        f.clear(pfn, flags::PMD_MAPPED);
        k.vmstat.count(VmEvent::ThpSplitPmd, 1);
        ctx.spend(CpuCost::SplitHugePmd, k.cost.pmd_split_ns);
    }
    let inherited = f.flags[i] & (flags::DIRTY | flags::YOUNG | flags::REFERENCED | flags::ACTIVE);
    let on_lru = f.test(pfn, flags::LRU);
    // A folio left in the swap cache may outlive its VMA (unmapped while under writeback):
    // then none of its pages is mapped.
    let ptes = match k.mms[mm as usize].vmas.get(vma as usize) {
        Some(Some(v)) => &v.ptes[..],
        _ => &[],
    };
    for sub in 0..nr {
        let p = pfn + sub;
        let mapped = ptes
            .get((index + sub) as usize)
            .is_some_and(|pte| pte.is_present() && pte.pfn() == p);
        if sub > 0 {
            f.init(p, 0, memcg, (mm, vma, index + sub));
            f.flags[p as usize] |= inherited;
        } else {
            f.set_order(pfn, 0);
        }
        f.set_mapcount(p as usize, mapped as u16);
        if in_swapcache {
            f.set_swap(p as usize, slots[sub as usize].raw());
            f.set(p, flags::SWAPCACHE);
        }
    }
    if in_swapcache {
        f.scattered.remove(&pfn);
        for (sub, &slot) in slots.iter().enumerate() {
            k.swap.set_swap_cache_page(slot, pfn + sub as u32);
        }
    }
    let keep_head = list.is_some();
    if on_lru {
        let lruvec = k.memcgs[memcg as usize].lruvec_mut(k.nodes.nid(pfn));
        // The head now counts one page on its list; each tail adds its own.
        lruvec.list_of(&k.folios, pfn).nr_pages -= (nr - 1) as u64;
        for sub in (1..nr).rev() {
            let list = lruvec.list_of(&k.folios, pfn);
            list.add_after(&mut k.folios, pfn, pfn + sub);
            k.folios.set(pfn + sub, flags::LRU);
            // The tails inherit the head's flags, MGLRU's generation among them.
            k.folios
                .set_lru_gen((pfn + sub) as usize, k.folios.lru_gen(pfn as usize));
        }
    } else if let Some(list) = list {
        // Tails still mapped, or held by the swap cache, go on; the rest are freed below.
        list.extend(
            (1..nr)
                .map(|sub| pfn + sub)
                .filter(|&p| k.folios.mapcount(p as usize) > 0 || in_swapcache),
        );
    } else {
        panic!("split of isolated folio {pfn} without a list for its tails");
    }
    if was_mapped {
        let arch = k.cfg.tlb;
        arch.split_folio(k, ctx, mm, order, pmd_mapped);
    }
    k.vmstat.count_mthp(order, MthpStat::Split);
    if order == PMD_ORDER {
        k.vmstat.count(VmEvent::ThpSplitPage, 1);
    }
    for p in pfn..pfn + nr {
        if k.folios.mapcount(p as usize) == 0 && (p != pfn || !keep_head) && !in_swapcache {
            k.folio_free(ctx, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_gfp_follows_defrag_and_madv_hugepage() {
        let vma = |thp| Vma {
            nr_pages: 0,
            thp,
            anon_vma: false,
            ptes: vec![],
            prot: Default::default(),
            special: Vec::new(),
            swap_ra: Default::default(),
        };
        let (plain, madvised) = (vma(ThpAdvice::Default), vma(ThpAdvice::Hugepage));
        let light = Gfp::TRANSHUGE_LIGHT;
        let full = Gfp::TRANSHUGE;
        let kswapd = light | Gfp::KSWAPD_RECLAIM;
        for (defrag, not_madvised, is_madvised) in [
            (ThpDefrag::Always, full.noretry(), full),
            (ThpDefrag::Defer, kswapd, kswapd),
            (ThpDefrag::DeferMadvise, kswapd, full),
            (ThpDefrag::Madvise, light, full),
            (ThpDefrag::Never, light, light),
        ] {
            assert_eq!(
                vma_thp_gfp_mask(defrag, &plain, Gfp::GFP_TRANSHUGE),
                not_madvised,
                "{defrag:?}"
            );
            assert_eq!(
                vma_thp_gfp_mask(defrag, &madvised, Gfp::GFP_TRANSHUGE),
                is_madvised,
                "{defrag:?}"
            );
        }
        assert!(!light.allow_blocking() && full.allow_blocking());
        assert!(!full.contains(Gfp::NORETRY) && !full.contains(Gfp::KSWAPD_RECLAIM));
    }
}
