//! The OOM killer (mm/oom_kill.c, 6.18): when reclaim cannot make room, for the machine (the
//! page allocator's __alloc_pages_may_oom) or for a memcg at memory.max (mem_cgroup_oom in
//! memcontrol.rs), kill the process whose memory, scaled by its oom_score_adj, is largest
//! (oom_badness), so that the allocation can be retried.
//!
//! The kill is SIGKILL to the process that owns the victim's mm (every thread of it). The
//! model frees the victim's memory at once, as the victim's own exit (or the oom_reaper) would
//! shortly after: exit_mmap runs on a context of its own, its CPU time booked to the victim
//! (`OomKill::exit_ns`), not to the allocating task, which then retries. A victim that is the
//! allocating task's own process cannot be torn down under its fault: its allocation fails and
//! it exits at the end of its step (the kernel lets it use the reserves to get out of the
//! fault; either way it dies). The scheduler learns of kills from `OomKiller` after each step
//! (sched/oom.rs) and takes the victim's tasks off the CPUs and queues.
//!
//! memory.oom.group (cgroup v2): a victim in a memcg that has it set takes every other process
//! of that memcg with it, except those at oom_score_adj -1000 (the root memcg never does).
//!
//! Not modelled: the oom_reaper's delay and MMF_OOM_SKIP (the memory is freed at once),
//! oom_kill_allocating_task, panic_on_oom, cpuset and mempolicy constraints (one node), and
//! the global init process (there is none to protect).

use super::folio::NIL;
use super::memcontrol::{memcg_memory_event, MemCgroup, MemcgEvent, ROOT_MEMCG};
use super::mmap::{exit_mmap, MmStruct};
use super::swapfile::Swap;
use super::vmstat::VmEvent;
use super::{Kernel, MmError};
use crate::engine::Ctx;
use crate::scenario::OomPolicy;

/// OOM_SCORE_ADJ_MIN: a process the OOM killer never kills.
pub const OOM_SCORE_ADJ_MIN: i16 = -1000;
/// OOM_SCORE_ADJ_MAX
pub const OOM_SCORE_ADJ_MAX: i16 = 1000;
/// PTRS_PER_PTE and PTRS_PER_PMD (x86-64, 4 KiB pages).
const PTRS_PER_TABLE: usize = 512;

/// enum oom_constraint as the model has it: the whole machine, or one memcg's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OomConstraint {
    /// CONSTRAINT_NONE: the page allocator found no memory.
    None,
    /// CONSTRAINT_MEMCG: this memcg is at memory.max.
    Memcg(u16),
}

/// One process killed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomKill {
    pub at_ns: u64,
    pub mm: u32,
    /// The victim's memcg.
    pub memcg: u16,
    /// What ran out: the machine or a memcg.
    pub constraint: OomConstraint,
    /// oom_badness: rss + swap entries + page-table pages + oom_score_adj x totalpages / 1000.
    pub points: i64,
    /// What it held when killed (the kernel's "Killed process" line): MM_ANONPAGES +
    /// MM_FILEPAGES, MM_SWAPENTS, and page-table pages.
    pub rss_pages: u64,
    pub swap_ents: u64,
    pub pgtables_pages: u64,
    pub oom_score_adj: i16,
    /// Killed with its memcg's victim (memory.oom.group), not chosen by its own badness.
    pub group: bool,
    /// CPU time of its exit_mmap, run at once on its behalf (0 when it was the allocating
    /// task, which exits on its own clock).
    pub exit_ns: u64,
}

/// The OOM killer's policy and record.
pub struct OomKiller {
    pub policy: OomPolicy,
    /// Every kill of the run, in order.
    pub kills: Vec<OomKill>,
    /// How many of `kills` the scheduler has seen.
    seen: usize,
}

impl OomKiller {
    pub fn new(policy: OomPolicy) -> OomKiller {
        OomKiller {
            policy,
            kills: Vec::new(),
            seen: 0,
        }
    }

    /// Kills since the scheduler last asked?
    #[inline]
    pub fn has_new(&self) -> bool {
        self.seen < self.kills.len()
    }

    /// The indices in `kills` of the kills since the last call.
    pub fn take_new(&mut self) -> std::ops::Range<usize> {
        let new = self.seen..self.kills.len();
        self.seen = self.kills.len();
        new
    }
}

/// task_is_dying() for the task on `ctx.cpu`: its process was chosen by the OOM killer.
pub fn current_is_dying(k: &Kernel, ctx: &Ctx) -> bool {
    let mm = k.percpu[ctx.cpu].mm;
    mm != NIL && k.mms[mm as usize].oom_victim
}

/// mm_pgtables_bytes / PAGE_SIZE: the PTE tables of the mm's populated 2 MiB ranges (a PMD
/// THP keeps a deposited one) and the PMD tables of its populated 1 GiB ranges. The upper
/// levels (a few pages) are left out; each VMA is counted as starting a table of its own.
pub fn mm_pgtables_pages(m: &MmStruct) -> u64 {
    let mut pages = 0;
    for vma in m.vmas.iter().flatten() {
        let mut pmd_tables = 0u64;
        let mut last_pmd_table = usize::MAX;
        for (i, block) in vma.ptes.chunks(PTRS_PER_TABLE).enumerate() {
            if block.iter().any(|p| p.is_present() || p.is_swap()) {
                pages += 1;
                if i / PTRS_PER_TABLE != last_pmd_table {
                    last_pmd_table = i / PTRS_PER_TABLE;
                    pmd_tables += 1;
                }
            }
        }
        pages += pmd_tables;
    }
    pages
}

/// total_swap_pages: the usable slots of every swap device.
fn total_swap_pages(swap: &Swap) -> u64 {
    swap.devices.iter().map(|d| d.map.pages as u64).sum()
}

/// constrained_alloc's totalpages: RAM and swap for the machine; for a memcg,
/// mem_cgroup_get_max (memory.max plus the swap it may use, up to memory.swap.max, when
/// swappiness lets it swap), at least 1.
fn oom_totalpages(k: &Kernel, constraint: OomConstraint) -> u64 {
    match constraint {
        OomConstraint::None => {
            // The reclaimable nodes' memory (memory-only tiers left out, as the model always
            // has: the kernel's totalram_pages counts them).
            let ram: u64 = k
                .online_pgdats()
                .filter(|p| p.has_kthreads)
                .map(|p| p.zone.nr_pages as u64)
                .sum();
            ram + total_swap_pages(&k.swap)
        }
        OomConstraint::Memcg(memcg) => {
            let cg = &k.memcgs[memcg as usize];
            let swap = if k.cfg.swappiness > 0 {
                total_swap_pages(&k.swap).min(cg.swap_max_pages)
            } else {
                0
            };
            cg.max_pages.saturating_add(swap).max(1)
        }
    }
}

/// oom_badness: None for a process that may not be killed (oom_score_adj -1000).
pub fn oom_badness(m: &MmStruct, totalpages: u64) -> Option<i64> {
    if m.oom_score_adj == OOM_SCORE_ADJ_MIN {
        return None;
    }
    let points = m.rss_anon + m.rss_file + m.swap_ents + mm_pgtables_pages(m);
    // Normalised to oom_score_adj units: each point of adj is a thousandth of totalpages.
    let adj = m.oom_score_adj as i64 * (totalpages / 1000) as i64;
    Some(points as i64 + adj)
}

/// select_bad_process: the live process with the highest badness among those `constraint`
/// covers, in creation order; a later one wins a tie (the kernel skips only lower points).
fn select_bad_process(
    k: &Kernel,
    constraint: OomConstraint,
    totalpages: u64,
) -> Option<(u32, i64)> {
    let mut chosen: Option<(u32, i64)> = None;
    for (mm, m) in k.mms.iter().enumerate() {
        // Exited (find_lock_task_mm finds no mm), or already dying.
        if m.mm_users == 0 || m.oom_victim {
            continue;
        }
        if let OomConstraint::Memcg(memcg) = constraint {
            // mem_cgroup_scan_tasks: the memcg's subtree.
            if !k.memcg_tree.is_descendant(m.memcg, memcg) {
                continue;
            }
        }
        let Some(points) = oom_badness(m, totalpages) else {
            continue;
        };
        if chosen.is_none_or(|(_, best)| points >= best) {
            chosen = Some((mm as u32, points));
        }
    }
    chosen
}

/// out_of_memory: kill the worst process that `constraint` covers. True when it killed one
/// and the allocating task may retry; false when the policy is `fail`, there was no process
/// to kill, or the allocating task is the one dying (its allocation fails and it exits).
pub fn out_of_memory(k: &mut Kernel, ctx: &mut Ctx, constraint: OomConstraint) -> bool {
    if k.oom.policy == OomPolicy::Fail {
        return false;
    }
    // task_will_free_mem(current): a dying task does not choose another victim.
    if current_is_dying(k, ctx) {
        return false;
    }
    let totalpages = oom_totalpages(k, constraint);
    let Some((victim, points)) = select_bad_process(k, constraint, totalpages) else {
        return false;
    };
    oom_kill_process(k, ctx, constraint, victim, points, totalpages);
    !current_is_dying(k, ctx)
}

/// mem_cgroup_get_oom_group: the highest memcg with memory.oom.group set between the
/// victim's memcg and the OOM's domain (the memcg at its limit, or the root); cgroup v2 only
/// (validation keeps it off v1), never the root.
fn mem_cgroup_get_oom_group(
    memcgs: &[MemCgroup],
    victim_memcg: u16,
    constraint: OomConstraint,
) -> Option<u16> {
    let domain = match constraint {
        OomConstraint::Memcg(m) => m,
        OomConstraint::None => ROOT_MEMCG,
    };
    let mut group = None;
    let mut id = victim_memcg;
    while id != ROOT_MEMCG {
        if memcgs[id as usize].oom_group {
            group = Some(id);
        }
        if id == domain {
            break;
        }
        id = memcgs[id as usize].parent;
    }
    group
}

/// oom_kill_process: kill the victim, and with memory.oom.group the rest of its memcg.
fn oom_kill_process(
    k: &mut Kernel,
    ctx: &mut Ctx,
    constraint: OomConstraint,
    victim: u32,
    points: i64,
    totalpages: u64,
) {
    let group = mem_cgroup_get_oom_group(&k.memcgs, k.mms[victim as usize].memcg, constraint);
    kill_process(k, ctx, constraint, victim, points, false);
    if let Some(group) = group {
        memcg_memory_event(k, group, MemcgEvent::OomGroupKill);
        for mm in 0..k.mms.len() as u32 {
            let m = &k.mms[mm as usize];
            if !k.memcg_tree.is_descendant(m.memcg, group) || m.mm_users == 0 || m.oom_victim {
                continue;
            }
            if let Some(points) = oom_badness(m, totalpages) {
                kill_process(k, ctx, constraint, mm, points, true);
            }
        }
    }
}

/// __oom_kill_process: count the kill, mark the mm, and free its memory now unless it is the
/// allocating task's own.
fn kill_process(
    k: &mut Kernel,
    ctx: &mut Ctx,
    constraint: OomConstraint,
    mm: u32,
    points: i64,
    group: bool,
) {
    k.vmstat.count(VmEvent::OomKill, 1);
    let m = &mut k.mms[mm as usize];
    m.oom_victim = true;
    let memcg = m.memcg;
    let mut kill = OomKill {
        at_ns: ctx.now_ns,
        mm,
        memcg,
        constraint,
        points,
        rss_pages: m.rss_anon + m.rss_file,
        swap_ents: m.swap_ents,
        pgtables_pages: mm_pgtables_pages(m),
        oom_score_adj: m.oom_score_adj,
        group,
        exit_ns: 0,
    };
    // memcg_memory_event_mm(mm, MEMCG_OOM_KILL)
    memcg_memory_event(k, memcg, MemcgEvent::OomKill);
    if mm != k.percpu[ctx.cpu].mm {
        // The victim's exit (or the oom_reaper), at once, on a clock of its own.
        let mut exit = Ctx {
            step_start_ns: ctx.now_ns,
            sleep_ns: 0,
            iowait_ns: 0,
            resched_at_ns: u64::MAX,
            ..*ctx
        };
        exit_mmap(k, &mut exit, mm);
        k.free_released_slots(&mut exit);
        // Its CPU time: the exit may sleep (exit_mmap's mmap_write_lock waits for a fault in
        // progress), and only the CPU part is booked (to the ledger, and to the victim).
        kill.exit_ns = exit.now_ns - ctx.now_ns - exit.off_cpu_ns();
    }
    k.oom.kills.push(kill);
}

/// The allocating task's process was chosen by the OOM killer: it exits now, on its own
/// clock (the scheduler calls this after its step). True when `mm` is such a victim.
pub fn exit_if_victim(k: &mut Kernel, ctx: &mut Ctx, mm: u32) -> bool {
    if mm == NIL || !k.mms[mm as usize].oom_victim {
        return false;
    }
    if k.mms[mm as usize].mm_users > 0 {
        exit_mmap(k, ctx, mm);
    }
    true
}

/// The error of a fault whose allocation or charge failed where the kernel would invoke the
/// OOM killer (`memcg`: the charge's memcg, None for the page allocator).
pub fn oom_error(k: &Kernel, ctx: &Ctx, memcg: Option<u16>) -> MmError {
    if current_is_dying(k, ctx) {
        return MmError::OomKilled;
    }
    let name = |cg: u16| k.memcgs[cg as usize].name.clone();
    match (k.oom.policy, memcg) {
        (OomPolicy::Fail, Some(cg)) => MmError::MemcgOom { memcg: name(cg) },
        (OomPolicy::Fail, None) => MmError::GlobalOom,
        (OomPolicy::Kill, Some(cg)) => MmError::MemcgOomNoVictim { memcg: name(cg) },
        (OomPolicy::Kill, None) => MmError::GlobalOomNoVictim,
    }
}
