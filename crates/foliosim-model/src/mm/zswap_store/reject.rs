//! <= 6.12: zswap_store returns at once for a large folio, which swap_writepage then writes
//! whole to the swap device (zswap only ever holds order-0 folios).

use super::ZswapLargeFolioPolicy;

pub struct Reject;

impl ZswapLargeFolioPolicy for Reject {
    fn name(&self) -> &'static str {
        "reject"
    }
    fn stores_order(&self, order: u32) -> bool {
        order == 0
    }
    fn same_filled_in_zswap(&self) -> bool {
        true
    }
}
