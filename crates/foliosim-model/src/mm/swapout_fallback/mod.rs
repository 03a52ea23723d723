//! What add_to_swap does with a large folio when the swap allocator has no free range of its
//! size: the kernel's split, or seed 003's non-contiguous swap-out. One file each.

mod non_contiguous;
mod split;

use super::folio::SwapEntry;
use super::swapfile::Swap;
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::scenario::SwapoutFallbackKind;

pub trait SwapoutFallback: Sync {
    fn name(&self) -> &'static str;
    /// No free range of `nr` slots: the slots to keep the folio whole on, in page order (each
    /// taken with SWAP_HAS_CACHE), or None to split it and swap its pages out one by one.
    fn scattered_slots(
        &self,
        swap: &mut Swap,
        ctx: &mut Ctx,
        cost: &CostModel,
        nr: u32,
    ) -> Option<Box<[SwapEntry]>>;
}

pub fn policy(kind: SwapoutFallbackKind) -> &'static dyn SwapoutFallback {
    match kind {
        SwapoutFallbackKind::Split => &split::Split,
        SwapoutFallbackKind::NonContiguous => &non_contiguous::NonContiguous,
    }
}
