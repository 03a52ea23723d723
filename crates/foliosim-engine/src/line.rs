//! What a lock handoff costs between two CPUs, by where they are: a table the model builds
//! from its topology (hw/topology.rs, hw/contention.rs) and hands down, so that the engine's
//! locks price a handoff by who held the lock last without knowing what a socket is.
//!
//! A `Ctx` is `Copy` and made once per step, so it carries a `&'static` table: tables are
//! interned (one per distinct content for the life of the process; a sweep over a few
//! machine profiles makes a few).

use std::sync::Mutex;

#[derive(Debug, PartialEq, Eq)]
pub struct HandoffTable {
    ncpus: usize,
    /// ns a hold pays when CPU `to` takes the lock after CPU `from`, at `from * ncpus + to`.
    ns: Box<[u32]>,
}

impl HandoffTable {
    /// The table for `ncpus` CPUs from `ns(from, to)`, interned.
    pub fn intern(ncpus: usize, ns: impl Fn(usize, usize) -> u32) -> &'static HandoffTable {
        let table = HandoffTable {
            ncpus,
            ns: (0..ncpus * ncpus)
                .map(|i| ns(i / ncpus.max(1), i % ncpus.max(1)))
                .collect(),
        };
        static TABLES: Mutex<Vec<&'static HandoffTable>> = Mutex::new(Vec::new());
        let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&t) = tables.iter().find(|&&t| *t == table) {
            return t;
        }
        let t: &'static HandoffTable = Box::leak(Box::new(table));
        tables.push(t);
        t
    }

    /// The handoff cost from the previous holder `from` to `to`.
    #[inline]
    pub fn ns(&self, from: u32, to: usize) -> u64 {
        self.ns[from as usize * self.ncpus + to] as u64
    }

    pub fn ncpus(&self) -> usize {
        self.ncpus
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tables_are_interned_once() {
        let a = HandoffTable::intern(3, |f, t| (f * 10 + t) as u32);
        let b = HandoffTable::intern(3, |f, t| (f * 10 + t) as u32);
        let c = HandoffTable::intern(3, |f, t| (f * 10 + t + 1) as u32);
        assert!(std::ptr::eq(a, b));
        assert!(!std::ptr::eq(a, c));
        assert_eq!(a.ns(2, 1), 21);
        assert_eq!(c.ns(0, 2), 3);
    }
}
