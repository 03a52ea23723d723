//! A record per naturally aligned block of pages, in one table per order: the block of order
//! `o` at pfn `p` (a multiple of 2^o) owns entry `p >> o` of table `o`.
//!
//! Per-folio metadata (mm/folio.rs) and the buddy's free-list links (page_alloc/buddy.rs) only
//! mean something at a block's head. Indexed by pfn they cost their full size per base page,
//! however large the folios are; here a 64K folio's record costs a sixteenth of that per page.
//! The tables are allocated zero-filled and never written up front (the host maps their pages on
//! first touch), so the tables of orders a run never uses cost nothing but address space, and
//! an all-zero record must be a valid empty one.

use bytemuck::Zeroable;

use crate::footprint::{try_zeroed_vec, AllocFailed};

use super::page_alloc::MAX_PAGE_ORDER;

/// Orders a table may exist for.
pub const NR_ORDERS: usize = MAX_PAGE_ORDER as usize + 1;

/// Where the tables of a [`PerOrder`] live: in a Vec (the owner stays one Vec wide: the
/// FolioTable, whose size footprint.rs's test pins), or in place, an array of NR_ORDERS (a
/// lookup then needs no load of the Vec's header, which a store to any table could have
/// changed as far as the compiler knows, and checks the order against a constant).
pub trait Tables<T>: AsRef<[Vec<T>]> + AsMut<[Vec<T>]> {
    /// From the tables of orders 0..=max_order.
    fn from_tables(tables: Vec<Vec<T>>) -> Self;
}

impl<T> Tables<T> for Vec<Vec<T>> {
    fn from_tables(tables: Vec<Vec<T>>) -> Self {
        tables
    }
}

impl<T> Tables<T> for [Vec<T>; NR_ORDERS] {
    /// The orders above max_order get empty tables.
    fn from_tables(mut tables: Vec<Vec<T>>) -> Self {
        assert!(tables.len() <= NR_ORDERS, "orders above MAX_PAGE_ORDER");
        tables.resize_with(NR_ORDERS, Vec::new);
        tables
            .try_into()
            .unwrap_or_else(|_| unreachable!("resized to NR_ORDERS"))
    }
}

pub struct PerOrder<T, S = Vec<Vec<T>>> {
    tables: S,
    _entries: std::marker::PhantomData<T>,
}

impl<T: Zeroable + Copy, S: Tables<T>> PerOrder<T, S> {
    /// Tables for orders 0..=max_order over `nr_pages` pfns, all zero.
    pub fn new(nr_pages: u32, max_order: u32) -> PerOrder<T, S> {
        Self::try_new(nr_pages, max_order, "per-order tables").unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`PerOrder::new`], or an error naming `what` when the host refuses the memory.
    pub fn try_new(
        nr_pages: u32,
        max_order: u32,
        what: &'static str,
    ) -> Result<PerOrder<T, S>, AllocFailed> {
        let tables = (0..=max_order)
            .map(|order| try_zeroed_vec((nr_pages as usize).div_ceil(1 << order), what))
            .collect::<Result<_, _>>()?;
        Ok(PerOrder {
            tables: S::from_tables(tables),
            _entries: std::marker::PhantomData,
        })
    }

    #[inline]
    pub fn get(&self, order: u32, pfn: usize) -> &T {
        debug_assert!(
            pfn.is_multiple_of(1 << order),
            "pfn {pfn} is not order-{order} aligned"
        );
        &self.tables.as_ref()[order as usize][pfn >> order]
    }

    #[inline]
    pub fn get_mut(&mut self, order: u32, pfn: usize) -> &mut T {
        debug_assert!(
            pfn.is_multiple_of(1 << order),
            "pfn {pfn} is not order-{order} aligned"
        );
        &mut self.tables.as_mut()[order as usize][pfn >> order]
    }

    /// `get` without its bounds checks, for the hottest lookups (the folio record's).
    ///
    /// # Safety
    /// `order` is at most the `max_order` the tables were made for and `pfn` is below their
    /// `nr_pages`.
    #[inline]
    pub unsafe fn get_unchecked(&self, order: u32, pfn: usize) -> &T {
        debug_assert!((order as usize) < self.tables.as_ref().len());
        let table = self.tables.as_ref().get_unchecked(order as usize);
        debug_assert!(pfn >> order < table.len());
        table.get_unchecked(pfn >> order)
    }

    /// `get_mut` without its bounds checks.
    ///
    /// # Safety
    /// As for [`PerOrder::get_unchecked`].
    #[inline]
    pub unsafe fn get_unchecked_mut(&mut self, order: u32, pfn: usize) -> &mut T {
        debug_assert!((order as usize) < self.tables.as_ref().len());
        let table = self.tables.as_mut().get_unchecked_mut(order as usize);
        debug_assert!(pfn >> order < table.len());
        table.get_unchecked_mut(pfn >> order)
    }

    /// Tables of orders below `order` will be touched sparsely (the run's folios are mostly
    /// of `order` or larger): base pages for them (engine/huge_alloc.rs).
    pub fn advise_sparse_below(&self, order: u32) {
        for t in self.tables.as_ref().iter().take(order as usize) {
            crate::engine::huge_alloc::advise_sparse(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_each_order_have_their_own_record() {
        let mut t: PerOrder<u32> = PerOrder::new(64, 4);
        *t.get_mut(4, 16) = 7;
        *t.get_mut(0, 16) = 3;
        *t.get_mut(1, 18) = 5;
        assert_eq!((*t.get(4, 16), *t.get(0, 16), *t.get(1, 18)), (7, 3, 5));
        assert_eq!(*t.get(4, 32), 0);
        let lens: Vec<usize> = t.tables.iter().map(Vec::len).collect();
        assert_eq!(lens, [64, 32, 16, 8, 4]);
    }

    #[test]
    fn tables_in_place_read_as_in_a_vec() {
        let mut t: PerOrder<u32, [Vec<u32>; NR_ORDERS]> = PerOrder::new(64, 4);
        *t.get_mut(4, 16) = 7;
        *t.get_mut(1, 18) = 5;
        assert_eq!((*t.get(4, 16), *t.get(0, 16), *t.get(1, 18)), (7, 0, 5));
        let lens: Vec<usize> = t.tables.iter().map(Vec::len).collect();
        assert_eq!(lens, [64, 32, 16, 8, 4, 0, 0, 0, 0, 0, 0]);
    }
}
