//! Timeline probes: spans of simulated time (a lock wait, a direct reclaim) recorded from deep
//! inside a step, for `foliosim run --timeline`. Off unless a run turns recording on.
//!
//! The recorder is per thread: a run executes on one thread from start to end, and the probe
//! sites (a contended lock knows only its `Ctx`) have no other path to it. Recording reads
//! the simulation and never changes it, so results are the same with it on or off. When off, a
//! probe costs one thread-local flag test, and the probes sit on slow paths only (a contended
//! lock, direct reclaim and compaction, a TLB flush batch).

use std::cell::{Cell, RefCell};

/// One span of one step, in the step's own simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
    /// What the CPU was doing, e.g. "direct reclaim".
    pub name: &'static str,
    /// Which instance, e.g. the lock's kernel name; empty when none.
    pub detail: &'static str,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static SPANS: RefCell<Vec<Span>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread is recording spans.
#[inline]
pub fn on() -> bool {
    ON.with(Cell::get)
}

/// Record a span if recording is on (empty spans are dropped).
#[inline]
pub fn span(name: &'static str, detail: &'static str, start_ns: u64, end_ns: u64) {
    if on() && end_ns > start_ns {
        SPANS.with(|s| {
            s.borrow_mut().push(Span {
                start_ns,
                end_ns,
                name,
                detail,
            })
        });
    }
}

/// Move the spans recorded since the last call into `out` (in recording order).
pub fn drain_into(out: &mut Vec<Span>) {
    SPANS.with(|s| out.append(&mut s.borrow_mut()));
}

/// Recording on this thread while alive; off (and emptied) when dropped, even on a panic.
pub struct Recording(());

impl Recording {
    pub fn start() -> Recording {
        SPANS.with(|s| s.borrow_mut().clear());
        ON.with(|c| c.set(true));
        Recording(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        ON.with(|c| c.set(false));
        SPANS.with(|s| s.borrow_mut().clear());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_while_on() {
        span("x", "", 0, 10);
        let mut out = Vec::new();
        drain_into(&mut out);
        assert!(out.is_empty());
        {
            let _r = Recording::start();
            span("lock wait", "si->lock", 5, 9);
            span("empty", "", 7, 7);
            drain_into(&mut out);
        }
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].detail, "si->lock");
        span("x", "", 0, 10);
        drain_into(&mut out);
        assert_eq!(out.len(), 1, "off again after the recording ends");
    }
}
