//! How zswap_store treats a large folio: the policies seed 002 compares, one file each.

mod per_page;
mod per_page_rfc;
mod reject;

use crate::scenario::ZswapLargeFolios;

pub trait ZswapLargeFolioPolicy: Sync {
    fn name(&self) -> &'static str;
    /// Does zswap_store take a folio of this order at all? A refused folio goes whole to the
    /// swap device (it is not split).
    fn stores_order(&self, order: u32) -> bool;
    /// Is a same-filled page (one repeated word) kept in zswap as that value, with no pool
    /// memory (zswap_is_page_same_filled, <= 6.11)? Later kernels leave only all-zero pages to
    /// the swap layer's zeromap and compress the rest.
    fn same_filled_in_zswap(&self) -> bool;
}

pub fn policy(kind: ZswapLargeFolios) -> &'static dyn ZswapLargeFolioPolicy {
    match kind {
        ZswapLargeFolios::Reject => &reject::Reject,
        ZswapLargeFolios::PerPageRfc => &per_page_rfc::PerPageRfc,
        ZswapLargeFolios::PerPage => &per_page::PerPage,
    }
}
