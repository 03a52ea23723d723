//! What a lock handoff costs between two CPUs, by where they are: a table the model builds
//! from its topology (hw/topology.rs, hw/contention.rs) and hands down, so that the engine's
//! locks price a handoff by who held the lock last without knowing what a socket is. The same
//! kind of table prices one cache line's transfer, which a `SharedLine` (a counter or an
//! rwsem's count that every CPU writes with atomics) pays when another CPU wrote it last.
//!
//! A `Ctx` is `Copy` and made once per step, so it carries a `&'static` table: tables are
//! interned (one per distinct content for the life of the process; a sweep over a few
//! machine profiles makes a few).

use crate::Ctx;
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

/// A cache line CPUs write with atomic read-modify-writes (a page_counter's usage, a global
/// vmstat item, an rwsem's count): the CPU that wrote it last holds it Modified, so the next
/// writer on another CPU first pulls it over at their distance. Only the transfer is priced,
/// not a queue of writers on a hot line: the lines priced here are written at most every few
/// hundred ns per CPU (a charge batch, a stat threshold, a fault), far below the line's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedLine {
    last_writer: u16,
}

impl Default for SharedLine {
    fn default() -> Self {
        SharedLine {
            last_writer: Self::NOBODY,
        }
    }
}

impl SharedLine {
    const NOBODY: u16 = u16::MAX;

    /// An atomic on this line by `ctx.cpu`: spends (booked to `what`) and returns one line
    /// transfer from the last writer by `ctx.line` (0 without a topology, for the first writer,
    /// or for the same CPU).
    #[inline]
    pub fn write(&mut self, ctx: &mut Ctx, what: crate::CostId) -> u64 {
        let Some(table) = ctx.line else {
            return 0;
        };
        let (from, cpu) = (self.last_writer, ctx.cpu as u16);
        if from == cpu {
            return 0;
        }
        self.last_writer = cpu;
        if from == Self::NOBODY {
            return 0;
        }
        let ns = table.ns(from as u32, ctx.cpu);
        ctx.spend(what, ns);
        ns
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

    #[test]
    fn a_shared_line_pays_a_transfer_only_from_another_writer() {
        let table = HandoffTable::intern(3, |f, t| if f == t { 0 } else { (10 * (f + t)) as u32 });
        let at = |cpu| Ctx {
            line: Some(table),
            ..Ctx::new(cpu, 0)
        };
        let mut line = SharedLine::default();
        let (mut a, mut b) = (at(1), at(2));
        assert_eq!(line.write(&mut a, crate::CostId(0)), 0, "the first writer");
        assert_eq!(
            line.write(&mut a, crate::CostId(0)),
            0,
            "the same CPU again"
        );
        assert_eq!(line.write(&mut b, crate::CostId(0)), 30);
        assert_eq!((a.now_ns, b.now_ns), (0, 30));
        assert_eq!(line.write(&mut a, crate::CostId(0)), 30);
        // Without a topology (no table) nothing is priced.
        let mut flat = Ctx::new(0, 0);
        assert_eq!(line.write(&mut flat, crate::CostId(0)), 0);
    }
}
