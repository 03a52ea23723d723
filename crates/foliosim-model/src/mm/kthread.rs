//! Kernel threads (and workqueue items with a worker of their own) whose bodies are mm code.
//! The scheduler (`sched`) runs each as a task with no mm on the simulated CPUs, competing with
//! user tasks; this file names them, holds their bodies and the wake-ups mm code posts.
//!
//! A body does one bounded piece of work per call (where the kernel would cond_resched()) and
//! says what comes next (`KthreadNext`); the scheduler may run other tasks between calls. Its
//! CPU time is system time booked to the thread.
//!
//! Adding a kernel thread (kswapd, kcompactd, khugepaged):
//! 1. a `KthreadKind` variant (with its node when there is one per node) and its `name`;
//! 2. its body in `run` (one piece of work, then `Run`, `Wait` or `SleepNs`);
//! 3. create it in `Kthreads::new` when the kernel runs it;
//! 4. wake it where the kernel does: `k.kthreads.wake(KthreadKind::Kswapd { node }, ctx.now_ns)`
//!    (wake_up_interruptible(&pgdat->kswapd_wait), queue_work, ...).

use super::compaction::kcompactd::{boot_timer_ns as kcompactd_boot_timer_ns, kcompactd_run};
use super::khugepaged::khugepaged_step;
use super::vmscan::kswapd::{kswapd_run, kswapd_should_run};
use super::zswap::shrink_worker_step;
use super::Kernel;
use crate::engine::Ctx;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KthreadKind {
    /// kswapdN: node N's background reclaim, woken below the low watermark (wakeup_kswapd),
    /// back to sleep once the high watermark holds (mm/vmscan/kswapd.rs).
    Kswapd { nid: usize },
    /// kcompactdN: node N's background compaction, woken by kswapd before it sleeps and
    /// every 500 ms for proactive compaction (mm/compaction/kcompactd.rs).
    Kcompactd { nid: usize },
    /// zswap's shrink_worker: zswap_shrink_work on the `zswap-shrink` workqueue (unbound,
    /// max_active 1), queued by zswap_store when a store fails with the pool full.
    ZswapShrink,
    /// khugepaged (nice 19): scans registered mms every scan_sleep_millisecs and collapses
    /// PTE-mapped ranges into PMD THPs (mm/khugepaged.rs). Runs while PMD THP is enabled.
    Khugepaged,
    /// The disk's bdi writeback work (wb_workfn) on an unbound kworker: writes dirty page
    /// cache (mm/page_writeback.rs). Only with a `[machine.disk]`.
    Flusher,
    /// For the scheduler's tests: per wake-up, `Kthreads::test_passes` pieces of `ns` of CPU.
    #[cfg(test)]
    TestBusy { ns: u64 },
    /// For the scheduler's tests: 10 us of CPU, then a timed sleep of `period_ns`.
    #[cfg(test)]
    TestTimer { period_ns: u64 },
    /// For the scheduler's tests: `TestBusy` at nice 19.
    #[cfg(test)]
    TestBusyNice { ns: u64 },
}

impl KthreadKind {
    /// The name `ps` shows (an unbound kworker shows the workqueue it is running).
    pub fn name(self) -> String {
        match self {
            KthreadKind::Kswapd { nid } => format!("kswapd{nid}"),
            KthreadKind::Kcompactd { nid } => format!("kcompactd{nid}"),
            KthreadKind::ZswapShrink => "kworker/u+zswap-shrink".into(),
            KthreadKind::Khugepaged => "khugepaged".into(),
            KthreadKind::Flusher => "kworker/u+flush-8:0".into(),
            #[cfg(test)]
            KthreadKind::TestBusy { .. } => "test-busy".into(),
            #[cfg(test)]
            KthreadKind::TestBusyNice { .. } => "test-busy-nice".into(),
            #[cfg(test)]
            KthreadKind::TestTimer { .. } => "test-timer".into(),
        }
    }

    /// current_is_kswapd(): reclaim_throttle lets kswapd alone of the kernel threads sleep.
    pub fn is_kswapd(self) -> bool {
        matches!(self, KthreadKind::Kswapd { .. })
    }

    /// The thread's nice value: khugepaged sets MAX_NICE (set_user_nice in khugepaged());
    /// kswapd and the kworkers run at 0.
    pub fn nice(self) -> i32 {
        match self {
            KthreadKind::Khugepaged => 19,
            #[cfg(test)]
            KthreadKind::TestBusyNice { .. } => 19,
            _ => 0,
        }
    }
}

/// What a kernel thread does after a piece of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KthreadNext {
    /// More work: stay runnable (cond_resched; the round robin may switch to another task).
    Run,
    /// Sleep until woken (schedule() on its wait queue; a work item that is done).
    Wait,
    /// Sleep until woken or this many ns pass (schedule_timeout, e.g. scan_sleep_millisecs).
    SleepNs(u64),
}

/// One piece of work of `kind` on the CPU of `ctx`.
pub fn run(k: &mut Kernel, ctx: &mut Ctx, kind: KthreadKind) -> KthreadNext {
    match kind {
        KthreadKind::Kswapd { nid } => {
            kswapd_run(k, ctx, nid);
            if kswapd_should_run(k, nid) {
                KthreadNext::Run
            } else {
                KthreadNext::Wait
            }
        }
        KthreadKind::Kcompactd { nid } => kcompactd_run(k, ctx, nid),
        KthreadKind::ZswapShrink => shrink_worker_step(k, ctx),
        KthreadKind::Khugepaged => khugepaged_step(k, ctx),
        KthreadKind::Flusher => super::page_writeback::wb_workfn_step(k, ctx),
        #[cfg(test)]
        KthreadKind::TestBusy { ns } | KthreadKind::TestBusyNice { ns } => {
            let left = &mut k.kthreads.test_passes;
            if *left == 0 {
                return KthreadNext::Wait;
            }
            ctx.spend(crate::cpu_cost::CpuCost::Test, ns);
            *left -= 1;
            if *left == 0 {
                KthreadNext::Wait
            } else {
                KthreadNext::Run
            }
        }
        #[cfg(test)]
        KthreadKind::TestTimer { period_ns } => {
            ctx.spend(crate::cpu_cost::CpuCost::Test, 10_000);
            KthreadNext::SleepNs(period_ns)
        }
    }
}

/// The timed sleep a kernel thread starts in at boot (None: asleep until woken).
pub fn boot_timer_ns(k: &mut Kernel, kind: KthreadKind) -> Option<u64> {
    match kind {
        KthreadKind::Kcompactd { nid } => kcompactd_boot_timer_ns(k, nid),
        _ => None,
    }
}

/// The kernel threads of a run and the wake-ups mm code posted for the scheduler.
pub struct Kthreads {
    /// The threads this kernel runs, in creation order (the scheduler's order too).
    pub kinds: Vec<KthreadKind>,
    /// Wake-ups since the scheduler last looked: (index in `kinds`, time), in posting order.
    pending: Vec<(usize, u64)>,
    /// The kernel thread each CPU is running (None: a user task, or idle).
    current: Vec<Option<KthreadKind>>,
    /// Which threads are asleep, as the scheduler last saw them.
    asleep: Vec<bool>,
    /// A wake-up since the scheduler last looked found its thread asleep: a sleeper will run.
    woke_sleeper: bool,
    /// Work left for `KthreadKind::TestBusy`.
    #[cfg(test)]
    pub test_passes: u32,
}

impl Kthreads {
    /// `kthread_nodes`: the nodes that run kswapd and kcompactd (mm/mmzone.rs).
    pub fn new(
        kthread_nodes: &[usize],
        zswap_enabled: bool,
        khugepaged_enabled: bool,
        kcompactd_enabled: bool,
        ncpus: usize,
    ) -> Kthreads {
        // Every kernel runs a kswapd per node (kswapd_init); kcompactd from 4.6 on
        // (kcompactd_init, after).
        let mut kinds: Vec<KthreadKind> = kthread_nodes
            .iter()
            .map(|&nid| KthreadKind::Kswapd { nid })
            .collect();
        if kcompactd_enabled {
            kinds.extend(
                kthread_nodes
                    .iter()
                    .map(|&nid| KthreadKind::Kcompactd { nid }),
            );
        }
        if zswap_enabled {
            kinds.push(KthreadKind::ZswapShrink);
        }
        // start_stop_khugepaged: the thread exists while hugepage_pmd_enabled().
        if khugepaged_enabled {
            kinds.push(KthreadKind::Khugepaged);
        }
        Kthreads {
            asleep: vec![true; kinds.len()],
            woke_sleeper: false,
            kinds,
            pending: Vec::new(),
            current: vec![None; ncpus],
            #[cfg(test)]
            test_passes: 0,
        }
    }

    /// Wake `kind` at `now_ns` (try_to_wake_up / queue_work). Waking one that is not
    /// asleep makes it run again instead of sleeping (the wake-up is not lost); waking one this
    /// kernel does not run does nothing.
    #[inline]
    pub fn wake(&mut self, kind: KthreadKind, now_ns: u64) {
        if let Some(i) = self.kinds.iter().position(|&x| x == kind) {
            self.pending.push((i, now_ns));
            self.woke_sleeper |= self.asleep.get(i).copied().unwrap_or(false);
        }
    }

    /// Did a wake-up posted since the scheduler last looked find its thread asleep?
    pub fn woke_sleeper(&self) -> bool {
        self.woke_sleeper
    }

    /// Set by the scheduler: thread `i` (of `kinds`) sleeps, or runs.
    pub fn set_asleep(&mut self, i: usize, asleep: bool) {
        if self.asleep.len() <= i {
            self.asleep.resize(i + 1, true);
        }
        self.asleep[i] = asleep;
    }

    /// The wake-ups posted since the last call (the scheduler consumes them after each step).
    pub fn pending(&self) -> &[(usize, u64)] {
        &self.pending
    }

    pub fn clear_pending(&mut self) {
        self.pending.clear();
        self.woke_sleeper = false;
    }

    /// The kernel thread running on `cpu`, if any (`current` when it is a kernel thread).
    pub fn current(&self, cpu: usize) -> Option<KthreadKind> {
        self.current[cpu]
    }

    /// Set by the scheduler when it switches `cpu` to a task.
    pub fn set_current(&mut self, cpu: usize, kind: Option<KthreadKind>) {
        self.current[cpu] = kind;
    }
}
