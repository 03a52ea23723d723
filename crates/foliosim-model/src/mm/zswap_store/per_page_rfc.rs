//! Seed 002's RFC on 6.10 (Kanchana Sridhar, after Ryan Roberts' RFC): a folio of any order is
//! stored page by page, each page its own entry; zswap's same-filled check still runs per page
//! (zswap_is_folio_same_filled takes an index); any page failing undoes the whole folio.

use super::ZswapLargeFolioPolicy;

pub struct PerPageRfc;

impl ZswapLargeFolioPolicy for PerPageRfc {
    fn name(&self) -> &'static str {
        "per-page-rfc"
    }
    fn stores_order(&self, _order: u32) -> bool {
        true
    }
    fn same_filled_in_zswap(&self) -> bool {
        true
    }
}
