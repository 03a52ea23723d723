//! Every kernel: a large folio that finds no free range is split (swpout_fallback) and its
//! pages go out one by one on order-0 slots.

use super::SwapoutFallback;
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::mm::folio::SwapEntry;
use crate::mm::swapfile::Swap;

pub struct Split;

impl SwapoutFallback for Split {
    fn name(&self) -> &'static str {
        "split"
    }
    fn scattered_slots(
        &self,
        _: &mut Swap,
        _: &mut Ctx,
        _: &CostModel,
        _: u32,
    ) -> Option<Box<[SwapEntry]>> {
        None
    }
}
