//! `foliosim calibrate --live`: what an IPI costs its sender and its receivers here.
//!
//! Receivers are threads of this process pinned to other CPUs, reading a shared page in a
//! loop that also reads the clock. The sender, pinned, repeats an operation that interrupts
//! every CPU running this mm:
//! - a TLB shootdown: mprotect of that page to read-only and back (change_protection ->
//!   flush_tlb_mm_range -> native_flush_tlb_multi: an IPI to each CPU in mm_cpumask that is
//!   not lazy, the sender waiting for their flush), counted in /proc/interrupts "TLB";
//! - a bare IPI: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (membarrier_private_expedited:
//!   an IPI to each CPU whose current task uses this mm), counted in "CAL".
//!
//! The sender's cost per IPI is its CPU time over the same operations timed first with the
//! receivers asleep (their CPUs idle: no IPI), divided by the IPIs counted (less the rate
//! other processes caused meanwhile). CPU time, not wall time: on a busy machine other
//! tasks take the sender's CPU for most of a window. The receiver's cost is the median gap
//! of its loop while IPIs arrive: interrupt entry, the handler (the flush for a shootdown)
//! and exit.

use crate::calibrate_hw::{irq_counts, median, Effort, HwTables};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Barrier;
use std::time::Instant;

const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 8;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 16;
/// A receiver's loop takes tens of ns; a longer pause is time taken from it.
const GAP_NS: u128 = 250;
/// Operations between two looks at the clock.
const BATCH: u32 = 100;
/// IPIs a round must count for its figures to mean anything.
const MIN_IPIS: f64 = 50.0;
/// Gaps kept per receiver (bounds memory).
const MAX_GAPS: usize = 1 << 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpiKind {
    Shootdown,
    Membarrier,
}

impl IpiKind {
    /// Its row in /proc/interrupts.
    pub fn irq_row(self) -> &'static str {
        match self {
            IpiKind::Shootdown => "TLB",
            IpiKind::Membarrier => "CAL",
        }
    }
}

/// One round's figures.
#[derive(Debug, Clone, Copy)]
pub struct IpiRound {
    /// The sender's extra time per operation (one IPI to each receiver), ns.
    pub send_ns: f64,
    /// The median time a receiver lost per interruption, ns (0: no gap seen).
    pub receive_ns: f64,
    /// IPIs counted per receiver per operation, other processes' rate removed (about 1;
    /// 2 when both mprotects flush).
    pub ipis_per_op: f64,
    /// The raw timings with the receivers asleep, then running.
    pub alone: Timing,
    pub with: Timing,
}

/// One page, read-write, unmapped on drop.
struct Page(*mut u8);

// SAFETY: the page is only read by the receivers and mprotected by the sender.
unsafe impl Sync for Page {}

impl Page {
    fn new() -> Result<Page> {
        // SAFETY: a fresh anonymous mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!("mmap: {}", std::io::Error::last_os_error());
        }
        // SAFETY: our page, writable: fault it in.
        unsafe { std::ptr::write_volatile(p as *mut u8, 1) };
        Ok(Page(p as *mut u8))
    }

    fn protect(&self, prot: libc::c_int) -> Result<()> {
        // SAFETY: our page.
        if unsafe { libc::mprotect(self.0.cast(), 4096, prot) } != 0 {
            bail!("mprotect: {}", std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn read(&self) -> u8 {
        // SAFETY: our page, readable at every protection used.
        unsafe { std::ptr::read_volatile(self.0) }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.0.cast(), 4096) };
    }
}

fn membarrier(cmd: libc::c_int) -> Result<()> {
    // SAFETY: membarrier takes (cmd, flags, cpu_id) and touches no memory of ours.
    if unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0, 0) } != 0 {
        bail!("membarrier({cmd}): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

fn operate(kind: IpiKind, page: &Page) -> Result<()> {
    match kind {
        IpiKind::Shootdown => {
            page.protect(libc::PROT_READ)?;
            page.protect(libc::PROT_READ | libc::PROT_WRITE)
        }
        IpiKind::Membarrier => membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED),
    }
}

/// Operations in batches of `batch` until `min_ns` have passed, with the IPIs counted on
/// `cpus` meanwhile: (ns, operations, IPIs). A window of fixed length, so that on a busy
/// machine the receivers get to run in it.
fn timed_ops(
    kind: IpiKind,
    page: &Page,
    batch: u32,
    min_ns: u128,
    cpus: &[usize],
) -> Result<Timing> {
    let count = || -> Result<u64> {
        let text = std::fs::read_to_string("/proc/interrupts")?;
        let Some(c) = irq_counts(&text, kind.irq_row()) else {
            bail!(
                "no {} row in /proc/interrupts: cannot count IPIs here",
                kind.irq_row()
            );
        };
        Ok(cpus
            .iter()
            .map(|cpu| c.get(cpu).copied().unwrap_or(0))
            .sum())
    };
    let before = count()?;
    let t = Instant::now();
    let cpu0 = thread_cpu_ns();
    let mut ops = 0u64;
    while ops == 0 || t.elapsed().as_nanos() < min_ns {
        for _ in 0..batch {
            operate(kind, page)?;
        }
        ops += batch as u64;
    }
    let cpu_ns = thread_cpu_ns() - cpu0;
    let ns = t.elapsed().as_nanos() as f64;
    Ok(Timing {
        ns,
        cpu_ns,
        ops: ops as f64,
        ipis: (count()? - before) as f64,
    })
}

/// The calling thread's CPU time, ns: what the sender spends, not the time other tasks
/// of a busy machine take its CPU from it (the wait for the IPIs' acknowledgement spins in
/// the kernel, csd_lock_wait, and counts).
fn thread_cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// One timed window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Wall time, ns.
    pub ns: f64,
    /// The sender's CPU time, ns.
    pub cpu_ns: f64,
    pub ops: f64,
    /// IPIs counted on the receivers' CPUs (ours and other processes').
    pub ipis: f64,
}

/// A receiver: sleeps until `start`, then reads the page and the clock until `stop`,
/// keeping the gaps.
fn receive(
    cpu: usize,
    page: &Page,
    start: &Barrier,
    stop: &AtomicBool,
    ready: &AtomicU8,
) -> Result<Vec<f64>> {
    let pinned = crate::calibrate_hw::pin(cpu);
    start.wait();
    page.read();
    // Counted even on failure, so the sender never waits for a receiver that is gone.
    ready.fetch_add(1, Ordering::AcqRel);
    pinned?;
    let mut gaps = Vec::new();
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        page.read();
        let now = Instant::now();
        let gap = now.duration_since(last).as_nanos();
        if gap > GAP_NS && gaps.len() < MAX_GAPS {
            gaps.push(gap as f64);
        }
        last = now;
    }
    Ok(gaps)
}

/// One round: windows of `min_ns` of operations by `sender` with the `receivers` asleep,
/// then running.
pub fn ipi_round(
    kind: IpiKind,
    sender: usize,
    receivers: &[usize],
    min_ns: u128,
) -> Result<IpiRound> {
    if kind == IpiKind::Membarrier {
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)?;
    }
    let page = Page::new()?;
    let start = Barrier::new(receivers.len() + 1);
    let (stop, ready) = (AtomicBool::new(false), AtomicU8::new(0));
    std::thread::scope(|s| -> Result<IpiRound> {
        let (page, start, stop, ready) = (&page, &start, &stop, &ready);
        let handles: Vec<_> = receivers
            .iter()
            .map(|&cpu| s.spawn(move || receive(cpu, page, start, stop, ready)))
            .collect();
        // The sender in its own pinned thread: the caller's affinity is left alone.
        let with = s
            .spawn(move || {
                let alone = crate::calibrate_hw::pin(sender)
                    .and_then(|()| timed_ops(kind, page, BATCH, min_ns, receivers));
                start.wait(); // the receivers start (and stop at once if `alone` failed)
                let alone = alone?;
                while (ready.load(Ordering::Acquire) as usize) < receivers.len() {
                    std::hint::spin_loop();
                }
                Ok::<_, anyhow::Error>((alone, timed_ops(kind, page, BATCH, min_ns, receivers)?))
            })
            .join()
            .expect("sender thread");
        stop.store(true, Ordering::Relaxed);
        let mut gaps = vec![];
        for h in handles {
            gaps.extend(h.join().expect("receiver thread")?);
        }
        let (alone, with) = with?;
        Ok(round_figures(receivers.len(), alone, with, gaps))
    })
}

/// The figures of a round from its two windows and the receivers' gaps.
pub fn round_figures(receivers: usize, alone: Timing, with: Timing, gaps: Vec<f64>) -> IpiRound {
    let per_op_alone = alone.cpu_ns / alone.ops;
    let extra = (with.cpu_ns - with.ops * per_op_alone).max(0.0);
    // Other processes' IPIs to those CPUs, at the rate seen while ours slept.
    let background = alone.ipis * with.ns / alone.ns;
    let ours = (with.ipis - background).max(0.0);
    IpiRound {
        send_ns: extra / with.ops,
        receive_ns: if gaps.is_empty() { 0.0 } else { median(gaps) },
        ipis_per_op: ours / (with.ops * receivers.max(1) as f64),
        alone,
        with,
    }
}

impl IpiKind {
    fn label(self) -> &'static str {
        match self {
            IpiKind::Shootdown => "shootdown",
            IpiKind::Membarrier => "membarrier",
        }
    }
}

/// Median figures over `reps` rounds: (the sender's extra ns per operation that interrupts
/// each receiver once, a receiver's ns per interruption, IPIs per operation and receiver).
fn rounds(kind: IpiKind, sender: usize, receivers: &[usize], e: Effort) -> Result<(f64, f64, f64)> {
    let mut send = vec![];
    let mut recv = vec![];
    let mut per_op = vec![];
    for _ in 0..e.reps {
        let r = ipi_round(kind, sender, receivers, e.ipi_window_ns)?;
        // On a busy machine a receiver is often preempted (its CPU then leaves this mm and
        // gets no IPI): the sender's extra time is per IPI counted, not per operation.
        let counted = r.ipis_per_op * r.with.ops * receivers.len() as f64;
        if counted < MIN_IPIS {
            bail!(
                "{counted:.0} IPIs counted in a round (fewer than {MIN_IPIS}): the receivers hardly ran (alone {:.0} ns {} IPIs, with receivers {:.0} ns {} IPIs)",
                r.alone.ns, r.alone.ipis, r.with.ns, r.with.ipis
            );
        }
        send.push(r.send_ns / r.ipis_per_op);
        recv.push(r.receive_ns);
        per_op.push(r.ipis_per_op);
    }
    Ok((median(send), median(recv), median(per_op)))
}

/// Shootdowns and bare IPIs from the first CPU to one and (when there are) two others; on
/// x86 the shootdowns set the model's IPI costs. What fails is noted, not fatal.
pub fn measure(cpus: &[usize], e: Effort, t: &mut HwTables, progress: &mut dyn FnMut(&str)) {
    if cpus.len() < 2 {
        t.notes
            .insert("ipi".into(), "one CPU allowed: no IPI to measure".into());
        return;
    }
    let mut send_by_targets = BTreeMap::new();
    for kind in [IpiKind::Shootdown, IpiKind::Membarrier] {
        for k in 1..=(cpus.len() - 1).min(2) {
            let receivers = &cpus[1..=k];
            progress(&format!(
                "{} IPIs from CPU {} to {receivers:?}",
                kind.label(),
                cpus[0]
            ));
            match rounds(kind, cpus[0], receivers, e) {
                Ok((send, recv, per_op)) => {
                    let key = format!("{}_{k}_targets", kind.label());
                    t.measured.insert(format!("{key}_send_ns"), send);
                    t.measured.insert(format!("{key}_receive_ns"), recv);
                    t.measured.insert(format!("{key}_ipis_per_op"), per_op);
                    if kind == IpiKind::Shootdown {
                        send_by_targets.insert(k, (send, recv));
                    }
                }
                Err(err) => {
                    t.notes
                        .insert(format!("{}_{k}_targets", kind.label()), format!("{err:#}"));
                }
            }
        }
    }
    if cfg!(target_arch = "x86_64") {
        set_ipi_costs(&send_by_targets, e, t);
    }
}

/// tlb_flush_ipi_ns (one target), tlb_ipi_extra_cpu_ns (the second's addition) and
/// tlb_ipi_receive_ns (the receiver's gap less the flush the model books apart).
fn set_ipi_costs(by_targets: &BTreeMap<usize, (f64, f64)>, e: Effort, t: &mut HwTables) {
    let how = format!(
        "median of {} rounds of {} ms of mprotect RW->R->RW of a page other threads of the process read on other CPUs, against as long with them asleep; IPIs counted in /proc/interrupts TLB",
        e.reps, e.ipi_window_ns / 1_000_000
    );
    let Some(&(one, recv)) = by_targets.get(&1) else {
        return;
    };
    t.set("tlb_flush_ipi_ns", one, format!("measured: `foliosim calibrate --live`, the sender's time per shootdown of one remote CPU; {how}"));
    if let Some(&(two, _)) = by_targets.get(&2) {
        t.set("tlb_ipi_extra_cpu_ns", (two - one).max(0.0), format!("measured: `foliosim calibrate --live`, a shootdown of two remote CPUs less one of one; {how}"));
    }
    let flush = foliosim::engine::cost::CostModel::profile("vm-6.18-2cpu")
        .expect("built-in profile")
        .tlb_flush_local_ns as f64;
    t.set("tlb_ipi_receive_ns", (recv - flush).max(0.0), format!(
        "measured: `foliosim calibrate --live`, the median time a receiving thread lost per shootdown (its loop's gaps over {GAP_NS} ns) less tlb_flush_local_ns ({flush} ns, booked apart); {how}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_figures_remove_the_background_rate() {
        // Alone: 1000 ops in 2 ms of wall time, 1.8 ms of the sender's CPU, 10 foreign IPIs.
        // With 2 receivers: 1000 ops in 14 ms, 13.8 ms of CPU, 2060 IPIs counted, of which
        // 70 foreign (10 per 2 ms, over 14 ms): 1990 ours.
        let alone = Timing {
            ns: 2e6,
            cpu_ns: 1.8e6,
            ops: 1000.0,
            ipis: 10.0,
        };
        let with = Timing {
            ns: 14e6,
            cpu_ns: 13.8e6,
            ops: 1000.0,
            ipis: 2060.0,
        };
        let r = round_figures(2, alone, with, vec![900.0, 1000.0, 5000.0]);
        assert_eq!(r.send_ns, 12_000.0); // (13.8 - 1.8) ms over 1000
        assert_eq!(r.receive_ns, 1000.0);
        assert!((r.ipis_per_op - 0.995).abs() < 1e-9, "{}", r.ipis_per_op);
        // Receivers never ran: no extra CPU time per op, no IPI of ours, no gap.
        let idle = Timing {
            ns: 4e6,
            cpu_ns: 3.6e6,
            ops: 2000.0,
            ipis: 20.0,
        };
        let none = round_figures(1, alone, idle, vec![]);
        assert_eq!(
            (none.send_ns, none.receive_ns, none.ipis_per_op),
            (0.0, 0.0, 0.0)
        );
    }
}
