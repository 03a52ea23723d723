//! A machine-wide bandwidth shared by the CPUs: DRAM (bytes), or the interconnect's broadcast
//! TLB maintenance (DVM operations on arm64).
//!
//! Each transfer names its size and how long it takes one CPU alone (`alone_ns`: the measured
//! single-CPU cost). While several CPUs stream at once their demands add up; when the sum
//! exceeds the machine's capacity every stream is slowed in proportion (processor sharing), so
//! the transfer takes `alone_ns * max(1, demand / capacity)`.
//!
//! The other CPUs' demand is their recent duty cycle times the rate they stream at when alone,
//! measured over fixed windows of simulated time: deterministic, and O(CPUs) per transfer. CPUs
//! run steps out of time order by up to one step, so the demand seen is the last complete
//! window's, not the instant's; a CPU silent for more than a window counts as idle.

use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;

/// Window over which each CPU's demand is measured. Long against one step (tens of µs) so the
/// one-step lag between CPUs does not matter; short against a run (seconds).
const WINDOW_NS: u64 = 1_000_000;

#[derive(Clone, Default)]
struct CpuDemand {
    window: u64,
    /// In the current window: time spent transferring (stretched by contention), the units
    /// moved, and the time they would have taken alone.
    busy_ns: u64,
    units: f64,
    alone_ns: u64,
    /// Units per ns this CPU asked for over its last complete window.
    last_demand: f64,
    /// The last stretched transfer: (window, `generation`, units, alone_ns) -> ns. The
    /// stretch depends on nothing else, so while they repeat (a CPU's TLB broadcasts, all
    /// alike, between two window changes) the per-CPU sum is not taken again.
    memo: Option<(u64, u64, u64, u64, u64)>,
}

/// What a transfer is, for the CPU-time report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    ClearPage = 0,
    UserStore = 1,
    RamdiskCopy = 2,
    TlbBroadcast = 3,
    /// Copying a page, 4 KiB read and 4 KiB written: khugepaged's collapse
    /// (copy_mc_user_highpage), migration (folio_copy).
    CopyPage = 4,
}

impl Stream {
    pub const ALL: [Stream; 5] = [
        Stream::ClearPage,
        Stream::UserStore,
        Stream::RamdiskCopy,
        Stream::TlbBroadcast,
        Stream::CopyPage,
    ];

    /// The CPU-time bucket of the transfer, named by the cost it charges when alone.
    pub fn bucket(self) -> CpuCost {
        match self {
            Stream::ClearPage => CpuCost::MembwClearPage,
            Stream::UserStore => CpuCost::MembwUserStore,
            Stream::RamdiskCopy => CpuCost::MembwRamdiskCopy,
            Stream::TlbBroadcast => CpuCost::MembwTlbBroadcast,
            Stream::CopyPage => CpuCost::MembwCopyPage,
        }
    }
}

#[derive(Clone)]
pub struct SharedBandwidth {
    /// Units per ns the machine sustains; 0.0: unlimited.
    capacity_per_ns: f64,
    cpus: Vec<CpuDemand>,
    /// The capacity, less a margin, less the sum of every CPU's `last_demand` (refreshed when
    /// one changes): a transfer whose own demand stays under it is not slowed, and the
    /// per-CPU sum need not be taken.
    headroom_per_ns: f64,
    /// Bumped whenever a CPU's window or `last_demand` changes (what a stretch depends on).
    generation: u64,
    /// Totals per `Stream` for reports: time the transfers took, and what they would have
    /// taken alone.
    pub busy_ns: [u64; Stream::ALL.len()],
    pub alone_ns: [u64; Stream::ALL.len()],
}

impl SharedBandwidth {
    /// `capacity_per_s`: units per second for the whole machine; 0 means no shared limit.
    pub fn new(capacity_per_s: f64, ncpus: usize) -> SharedBandwidth {
        SharedBandwidth {
            capacity_per_ns: capacity_per_s / 1e9,
            cpus: vec![CpuDemand::default(); ncpus],
            headroom_per_ns: Self::headroom(capacity_per_s / 1e9, 0.0),
            generation: 0,
            busy_ns: [0; Stream::ALL.len()],
            alone_ns: [0; Stream::ALL.len()],
        }
    }

    /// CPU `ctx.cpu` moves `units` that take it `alone_ns` when no other CPU competes; charges
    /// the (possibly stretched) time to `ctx` and returns it.
    #[inline]
    pub fn transfer(&mut self, ctx: &mut Ctx, what: Stream, units: f64, alone_ns: u64) -> u64 {
        if alone_ns == 0 {
            return 0;
        }
        // The common cases, inline: on a limited machine, in the CPU's current window (no
        // roll), a transfer with headroom (not slowed) or one whose stretch is memoized. What
        // transfer_full does then.
        if self.capacity_per_ns > 0.0 {
            let window = ctx.now_ns / WINDOW_NS;
            let unslowed = units < self.headroom_per_ns * alone_ns as f64;
            let generation = self.generation;
            if let Some(d) = self.cpus.get_mut(ctx.cpu).filter(|d| d.window == window) {
                let ns = match d.memo {
                    _ if unslowed => Some(alone_ns),
                    Some((w, g, u, a, ns))
                        if (w, g, u, a) == (window, generation, units.to_bits(), alone_ns) =>
                    {
                        Some(ns)
                    }
                    _ => None,
                };
                if let Some(ns) = ns {
                    d.busy_ns += ns;
                    d.units += units;
                    d.alone_ns += alone_ns;
                    self.busy_ns[what as usize] += ns;
                    self.alone_ns[what as usize] += alone_ns;
                    ctx.spend(what.bucket(), ns);
                    return ns;
                }
            }
        }
        self.transfer_full(ctx, what, units, alone_ns)
    }

    /// transfer's general case: the window rolls, the transfer may be slowed, or the machine
    /// has no limit.
    #[inline(never)]
    fn transfer_full(&mut self, ctx: &mut Ctx, what: Stream, units: f64, alone_ns: u64) -> u64 {
        let ns = if self.capacity_per_ns > 0.0 {
            let window = ctx.now_ns / WINDOW_NS;
            // units / alone_ns < headroom: the sum below stays under the capacity (its
            // rounding is far inside the margin), so the factor is exactly 1.
            if units < self.headroom_per_ns * alone_ns as f64 {
                self.account(ctx.cpu, ctx.now_ns, units, alone_ns, alone_ns);
                self.busy_ns[what as usize] += alone_ns;
                self.alone_ns[what as usize] += alone_ns;
                ctx.spend(what.bucket(), alone_ns);
                return alone_ns;
            }
            let key = (window, self.generation, units.to_bits(), alone_ns);
            match self.cpus[ctx.cpu].memo {
                Some((w, g, u, a, ns)) if (w, g, u, a) == key => ns,
                _ => {
                    let mut demand = units / alone_ns as f64;
                    for (cpu, d) in self.cpus.iter().enumerate() {
                        if cpu != ctx.cpu && d.window + 1 >= window {
                            demand += d.last_demand;
                        }
                    }
                    let factor = (demand / self.capacity_per_ns).max(1.0);
                    let ns = (alone_ns as f64 * factor) as u64;
                    self.cpus[ctx.cpu].memo = Some((key.0, key.1, key.2, key.3, ns));
                    ns
                }
            }
        } else {
            alone_ns
        };
        self.account(ctx.cpu, ctx.now_ns, units, alone_ns, ns);
        self.busy_ns[what as usize] += ns;
        self.alone_ns[what as usize] += alone_ns;
        ctx.spend(what.bucket(), ns);
        ns
    }

    /// What a transfer's own demand may be while every other CPU's `last_demand` (at most
    /// `bound` together) leaves the machine under `capacity`, with a relative margin of 1e-6
    /// that covers the rounding of the sums (~1e-15).
    fn headroom(capacity_per_ns: f64, bound: f64) -> f64 {
        capacity_per_ns * (1.0 - 1e-6) - bound
    }

    fn account(&mut self, cpu: usize, now_ns: u64, units: f64, alone_ns: u64, ns: u64) {
        let window = now_ns / WINDOW_NS;
        let d = &mut self.cpus[cpu];
        let rolled = window != d.window;
        if rolled {
            // Demand = duty cycle x rate when alone; a skipped window means the last was idle.
            d.last_demand = if window == d.window + 1 && d.alone_ns > 0 {
                (d.busy_ns as f64 / WINDOW_NS as f64).min(1.0) * (d.units / d.alone_ns as f64)
            } else {
                0.0
            };
            d.window = window;
            d.busy_ns = 0;
            d.units = 0.0;
            d.alone_ns = 0;
        }
        d.busy_ns += ns;
        d.units += units;
        d.alone_ns += alone_ns;
        if rolled {
            self.generation += 1;
            let bound = self.cpus.iter().map(|d| d.last_demand).sum();
            self.headroom_per_ns = Self::headroom(self.capacity_per_ns, bound);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(cpu: usize, now_ns: u64) -> Ctx<'static> {
        Ctx::new(cpu, now_ns)
    }

    #[test]
    fn one_cpu_alone_is_not_slowed() {
        let mut bw = SharedBandwidth::new(40e9, 4);
        for i in 0..10_000u64 {
            let mut c = ctx(0, i * 1000);
            assert_eq!(bw.transfer(&mut c, Stream::UserStore, 4096.0, 200), 200);
        }
    }

    #[test]
    fn cpus_streaming_together_share_the_capacity() {
        // Four CPUs each wanting 20 GB/s all the time, on a 40 GB/s machine: after the first
        // window each transfer takes twice as long, and the total rate is the capacity.
        let mut bw = SharedBandwidth::new(40e9, 4);
        let mut now = [0u64; 4];
        let mut bytes = [0f64; 4];
        while now.iter().any(|&t| t < 20 * WINDOW_NS) {
            let cpu = (0..4).min_by_key(|&c| (now[c], c)).unwrap();
            let mut c = ctx(cpu, now[cpu]);
            bw.transfer(&mut c, Stream::UserStore, 4096.0, 205);
            now[cpu] = c.now_ns;
            if now[cpu] > 10 * WINDOW_NS {
                bytes[cpu] += 4096.0;
            }
        }
        let total_gb_s: f64 = bytes.iter().sum::<f64>() / (10.0 * WINDOW_NS as f64);
        assert!((total_gb_s - 40.0).abs() < 2.0, "{total_gb_s} GB/s");
    }

    #[test]
    fn unlimited_never_slows() {
        let mut bw = SharedBandwidth::new(0.0, 2);
        for i in 0..1000u64 {
            for cpu in 0..2 {
                let mut c = ctx(cpu, i * 100);
                assert_eq!(bw.transfer(&mut c, Stream::UserStore, 4096.0, 100), 100);
            }
        }
    }
}
