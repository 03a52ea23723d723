//! Seed 003's non-contiguous swap-out (related upstream work: the virtual swap space RFC):
//! a large folio that finds no free range keeps its size on order-0 slots wherever they are.
//! It gains no swpout_fallback and no split; it loses the single I/O (one bio per run of
//! adjacent slots) and whole-folio swap-in (its PTEs do not hold contiguous entries, so
//! alloc_swap_folio brings it back page by page).

use super::SwapoutFallback;
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::Swap;

pub struct NonContiguous;

impl SwapoutFallback for NonContiguous {
    fn name(&self) -> &'static str {
        "non-contiguous"
    }
    fn scattered_slots(
        &self,
        swap: &mut Swap,
        ctx: &mut Ctx,
        cost: &CostModel,
        nr: u32,
    ) -> Option<Box<[SwapEntry]>> {
        let mut slots = Vec::with_capacity(nr as usize);
        for _ in 0..nr {
            match swap.alloc(ctx, cost, 0) {
                Some(e) => slots.push(e),
                None => {
                    // Not enough free slots at all: give back what was taken and split.
                    for &e in &slots {
                        swap.delete_from_swap_cache(ctx, cost, e, 1, None);
                    }
                    return None;
                }
            }
        }
        Some(slots.into_boxed_slice())
    }
}
