//! 6.13+ as merged: any order stored page by page (zswap_store_page); same-filled pages are no
//! longer special in zswap (the swap zeromap takes all-zero folios before zswap sees them).

use super::ZswapLargeFolioPolicy;

pub struct PerPage;

impl ZswapLargeFolioPolicy for PerPage {
    fn name(&self) -> &'static str {
        "per-page"
    }
    fn stores_order(&self, _order: u32) -> bool {
        true
    }
    fn same_filled_in_zswap(&self) -> bool {
        false
    }
}
