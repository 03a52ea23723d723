//! One step of a user task: one operation of its program, or one fault's worth of a Touch.

use super::task::UserProgram;
use crate::cpu_cost::CpuCost;
use crate::engine::rng::SimRng;
use crate::engine::{Ctx, WaitKind};
use crate::hw::tlb_cache::HotSet;
use crate::mm::access;
use crate::mm::compaction::compact_memory;
use crate::mm::filemap;
use crate::mm::gup::{pin_user_pages_fast, unpin_user_pages};
use crate::mm::madvise::madvise;
use crate::mm::memory::{touch_timed, zap_range, VmFault};
use crate::mm::mmap::{exit_mmap, vm_munmap, Pte};
use crate::mm::mprotect::mprotect;
use crate::mm::shmem;
use crate::mm::truncate::drop_pagecache;
use crate::mm::{Kernel, MmError};
use crate::workload::{Mark, Op};

/// What a user task does after its step.
pub(super) enum UserNext {
    Run,
    /// A fault stopped in its allocation to give up the CPU (mm/preempt.rs): the task is still
    /// in the kernel, and its Touch re-runs the fault, which resumes.
    Preempted,
    /// The task exited (or ran out of ops).
    Exit,
    /// The task reached a barrier (its program is already past it).
    Barrier {
        id: u32,
        parties: u32,
    },
}

/// The running task as its step sees it: who it is, its mm, its user-time account, and the
/// next known wake-up of a sleeper (which may preempt it).
pub(super) struct Running<'a> {
    pub tid: u32,
    pub seed: u64,
    pub mm: u32,
    pub user_ns: &'a mut u64,
    pub wake_ns: u64,
}

/// One step of the program of the task `t`. A program that runs out of ops
/// without an Exit stops with its mm left mapped (tests read its page tables afterwards).
/// User-space computing is preemptible anywhere: a Compute op stops at `t.wake_ns` (the next
/// known wake-up of a sleeping task, which may preempt this one) or at the slice's end when
/// another task is runnable, and resumes in a later step.
pub(super) fn step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mut t: Running,
    p: &mut UserProgram,
) -> Result<UserNext, MmError> {
    let mm = t.mm;
    let Some(op) = p.ops.get(p.pc).cloned() else {
        return Ok(UserNext::Exit);
    };
    if let Some(vma) = unmapped_vma(k, mm, &op) {
        // Another thread of the process unmapped it (trace replays order threads only at
        // clone, exec and wait): an access faults, munmap and madvise fail with nothing done.
        if matches!(op, Op::Touch { .. } | Op::Pin { .. } | Op::Mincore { .. }) {
            return Err(MmError::SegvUnmapped { vma });
        }
        ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
        p.pc += 1;
        return Ok(UserNext::Run);
    }
    // Some(next): the op is not finished (or ends the program's run); None: on to the next op.
    let next = match op {
        Op::Touch {
            vma,
            first,
            nr,
            write,
        } => touch(k, ctx, &mut t, p, vma, first..first + nr, write)?,
        Op::Compute { ns } => compute(k, ctx, &mut t, p, ns),
        Op::Access {
            vma,
            first,
            nr,
            count,
            write,
            mlp,
        } => {
            let a = access::Access {
                mm,
                vma,
                first,
                nr,
                count,
                write,
                mlp,
            };
            access_op(k, ctx, &mut t, p, &a)?
        }
        Op::Exit => return Ok(exit_task(k, ctx, mm)),
        Op::Barrier { id, parties } => {
            p.pc += 1;
            return Ok(UserNext::Barrier { id, parties });
        }
        Op::Mmap { .. }
        | Op::Madvise { .. }
        | Op::Munmap { .. }
        | Op::MunmapRange { .. }
        | Op::Pin { .. }
        | Op::Unpin { .. }
        | Op::CompactMemory
        | Op::Mprotect { .. } => mm_syscall(k, ctx, mm, &op).map(|()| None)?,
        Op::CreateFile { .. } | Op::MmapFile { .. } | Op::ReadFile { .. } | Op::DropCaches => {
            file_op(k, ctx, mm, p, &op)?
        }
        Op::ShmemWrite { .. } | Op::ShmemRead { .. } | Op::ShmemUnlink { .. } => {
            shmem_op(k, ctx, mm, p, &op)?
        }
        Op::Sleep { .. }
        | Op::Mark(_)
        | Op::TimerStart
        | Op::Mincore { .. }
        | Op::RecordLatency { .. }
        | Op::TlbHotSet { .. } => program_op(k, ctx, mm, p, &op),
    };
    if let Some(next) = next {
        return Ok(next);
    }
    p.pc += 1;
    Ok(UserNext::Run)
}

/// A Touch of `pages` of `vma`: fault in the next ones (as many as one step covers); the
/// task's own loads and stores run in user mode, its faults are system time.
fn touch(
    k: &mut Kernel,
    ctx: &mut Ctx,
    t: &mut Running,
    p: &mut UserProgram,
    vma: u32,
    pages: std::ops::Range<u32>,
    write: bool,
) -> Result<Option<UserNext>, MmError> {
    check_prot(k, t.mm, vma, write)?;
    let (covered, store_ns) = match touch_timed(
        k,
        ctx,
        &VmFault::new(t.mm, vma, pages.start + p.cursor, write),
        pages.end,
    ) {
        Err(MmError::Resched) => return Ok(Some(UserNext::Preempted)),
        covered => covered?,
    };
    *t.user_ns += store_ns;
    p.cursor += covered;
    if p.cursor < pages.len() as u32 {
        return Ok(Some(UserNext::Run));
    }
    p.cursor = 0;
    Ok(None)
}

/// User-space computing for `ns`, preemptible: it stops at the next wake-up or, when another
/// task is runnable, at the slice's end (the tick), and resumes in a later step.
fn compute(
    k: &mut Kernel,
    ctx: &mut Ctx,
    t: &mut Running,
    p: &mut UserProgram,
    ns: u64,
) -> Option<UserNext> {
    if let Some(hot) = p.hot_set {
        access::run_user(k, ctx, t.tid, t.mm, hot, t.user_ns);
    }
    let left_ns = ns - p.computed_ns;
    let stop_ns = t.wake_ns.min(ctx.resched_at_ns);
    if stop_ns > ctx.now_ns && stop_ns - ctx.now_ns < left_ns {
        let run_ns = stop_ns - ctx.now_ns;
        ctx.spend(CpuCost::UserCompute, run_ns);
        *t.user_ns += run_ns;
        p.computed_ns += run_ns;
        return Some(UserNext::Run);
    }
    ctx.spend(CpuCost::UserCompute, left_ns);
    *t.user_ns += left_ns;
    p.computed_ns = 0;
    None
}

/// An Access: the next accesses of a range through the TLB model (mm/access.rs), drawn from
/// the task's own random stream, until the range's count or the task's stop time.
fn access_op(
    k: &mut Kernel,
    ctx: &mut Ctx,
    t: &mut Running,
    p: &mut UserProgram,
    a: &access::Access,
) -> Result<Option<UserNext>, MmError> {
    check_prot(k, a.mm, a.vma, a.write)?;
    let (tid, seed) = (t.tid, t.seed);
    let rng = p
        .rng
        .get_or_insert_with(|| SimRng::stream(seed, &format!("access/{tid}")));
    let mut who = access::Accessor {
        task: tid,
        hot: p.hot_set,
        rng,
        stop_ns: t.wake_ns.min(ctx.resched_at_ns),
        ns_per_access: &mut p.ns_per_access,
        user_ns: t.user_ns,
    };
    p.accessed = access::access_step(k, ctx, a, p.accessed, &mut who)?;
    if p.accessed < a.count {
        return Ok(Some(UserNext::Run));
    }
    p.accessed = 0;
    Ok(None)
}

/// A user access to `vma` its protection forbids: SIGSEGV (SEGV_ACCERR).
fn check_prot(k: &Kernel, mm: u32, vma: u32, write: bool) -> Result<(), MmError> {
    if k.mms[mm as usize].vma(vma).prot.allows(write) {
        Ok(())
    } else {
        Err(MmError::SegvProt { vma })
    }
}

/// An Exit: the last thread out (mmput) tears the address space down (exit_mmap).
fn exit_task(k: &mut Kernel, ctx: &mut Ctx, mm: u32) -> UserNext {
    let m = &mut k.mms[mm as usize];
    m.mm_users -= 1;
    if m.mm_users == 0 {
        exit_mmap(k, ctx, mm);
    }
    if k.kmem.enabled {
        crate::mm::kmem::free_thread_stack(k, ctx, mm);
    }
    UserNext::Exit
}

/// The address-space system calls: mmap, madvise, munmap, GUP pins, compaction through
/// /proc/sys/vm/compact_memory, mprotect. Each finishes in one step.
fn mm_syscall(k: &mut Kernel, ctx: &mut Ctx, mm: u32, op: &Op) -> Result<(), MmError> {
    match *op {
        Op::Mmap { vma, nr_pages, thp } => {
            k.mms[mm as usize].try_mmap(vma, nr_pages, thp)?;
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
        }
        Op::Madvise {
            vma,
            first,
            nr,
            advice,
        } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            madvise(k, ctx, mm, vma, first, nr, advice);
        }
        Op::Munmap { vma } => vm_munmap(k, ctx, mm, vma),
        Op::MunmapRange { vma, first, nr } => munmap_range(k, ctx, mm, vma, first, nr),
        Op::Pin { vma, first, nr } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            pin_user_pages_fast(k, ctx, mm, vma, first, nr)?;
        }
        Op::Unpin { vma, first, nr } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            unpin_user_pages(k, ctx, mm, vma, first, nr);
        }
        Op::CompactMemory => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            compact_memory(k, ctx);
        }
        Op::Mprotect { vma, prot } => mprotect(k, ctx, mm, vma, prot),
        _ => unreachable!("mm_syscall runs address-space calls only, not {op:?}"),
    }
    Ok(())
}

/// Files (mm/filemap/): create, mmap, read (as many pages as one step covers), and drop
/// the page cache.
fn file_op(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    p: &mut UserProgram,
    op: &Op,
) -> Result<Option<UserNext>, MmError> {
    match *op {
        Op::CreateFile { file, nr_pages } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            k.pagecache.create(file, nr_pages)?;
        }
        Op::MmapFile {
            vma,
            file,
            offset_pages,
            nr_pages,
            shared,
        } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            if k.kmem.enabled {
                crate::mm::slub::lookup_file(k, ctx, file)?;
            }
            filemap::mmap_file(k, mm, vma, file, offset_pages, nr_pages, shared)?;
        }
        Op::ReadFile { file, first, nr } => {
            if p.cursor == 0 {
                ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
                if k.kmem.enabled {
                    crate::mm::slub::lookup_file(k, ctx, file)?;
                }
            }
            let done =
                filemap::read::filemap_read_step(k, ctx, mm, file, first + p.cursor, first + nr)?;
            return Ok(advance_cursor(p, done, nr));
        }
        Op::DropCaches => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            drop_pagecache(k, ctx);
        }
        _ => unreachable!("file_op runs file calls only, not {op:?}"),
    }
    Ok(None)
}

/// tmpfs files (mm/shmem*): write and read (as many pages as one step covers), unlink.
fn shmem_op(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    p: &mut UserProgram,
    op: &Op,
) -> Result<Option<UserNext>, MmError> {
    match *op {
        Op::ShmemWrite {
            mount,
            file,
            first,
            nr,
        } => {
            if p.cursor == 0 {
                ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            }
            let m = &k.mms[mm as usize];
            let target = shmem::WriteTarget {
                mount,
                inode: file,
                memcg: m.memcg,
                content: m.content,
            };
            let done = shmem::shmem_write_step(k, ctx, target, first + p.cursor, first + nr)?;
            Ok(advance_cursor(p, done, nr))
        }
        Op::ShmemRead { file, first, nr } => {
            if p.cursor == 0 {
                ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            }
            let memcg = k.mms[mm as usize].memcg;
            let done = shmem::shmem_read_step(k, ctx, file, memcg, first + p.cursor, first + nr)?;
            Ok(advance_cursor(p, done, nr))
        }
        Op::ShmemUnlink { file } => shmem::shmem_unlink(k, ctx, file).map(|()| None),
        _ => unreachable!("shmem_op runs tmpfs calls only, not {op:?}"),
    }
}

/// A read or write moved `done` more pages through its `nr`: Some(Run) while pages are left
/// (the op resumes in a later step), None once it is finished.
fn advance_cursor(p: &mut UserProgram, done: u32, nr: u32) -> Option<UserNext> {
    p.cursor += done;
    if p.cursor < nr {
        return Some(UserNext::Run);
    }
    p.cursor = 0;
    None
}

/// What the program does to pace and measure itself: sleep, marks, a timed section and its
/// latency record (with the mincore that classifies it), the TLB hot set it declares.
fn program_op(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    p: &mut UserProgram,
    op: &Op,
) -> Option<UserNext> {
    match *op {
        Op::Sleep { ns } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            ctx.wait_until(ctx.now_ns + ns, WaitKind::Sleep);
        }
        Op::Mark(m) => {
            p.marks[m] = Some(Mark {
                at_ns: ctx.now_ns,
                counters: k.mark_counters(ctx.now_ns),
            })
        }
        Op::TimerStart => p.timer_start_ns = ctx.now_ns,
        Op::Mincore { vma, index } => {
            ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
            p.mincore_resident = k.mms[mm as usize].vma(vma).ptes[index as usize].is_present();
        }
        Op::RecordLatency {
            if_resident,
            otherwise,
        } => {
            let series = if p.mincore_resident {
                if_resident
            } else {
                otherwise
            };
            p.latencies.push((series, ctx.now_ns - p.timer_start_ns));
        }
        Op::TlbHotSet {
            code_pages,
            load_pages,
            store_pages,
        } => {
            p.hot_set = Some(HotSet {
                code_pages,
                load_pages,
                store_pages,
            })
        }
        _ => unreachable!("program_op runs pacing and measuring ops only, not {op:?}"),
    }
    None
}

/// The VMA `op` names, when it is not mapped in `mm`.
fn unmapped_vma(k: &Kernel, mm: u32, op: &Op) -> Option<u32> {
    let vma = match *op {
        Op::Touch { vma, .. }
        | Op::Madvise { vma, .. }
        | Op::Munmap { vma }
        | Op::MunmapRange { vma, .. }
        | Op::Pin { vma, .. }
        | Op::Unpin { vma, .. }
        | Op::Mincore { vma, .. } => vma,
        _ => return None,
    };
    (!k.mms[mm as usize].is_mapped(vma)).then_some(vma)
}

/// munmap of part of a VMA: zap the pages (splitting the PMD of a THP cut in part) and leave
/// holes where the kernel would split the VMA.
fn munmap_range(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32, first: u32, nr: u32) {
    ctx.spend(CpuCost::Syscall, k.cost.syscall_ns);
    k.mms[mm as usize].mmap_lock.write_lock(ctx);
    let span = zap_range(k, ctx, mm, vma, first, nr);
    if span > 0 {
        let arch = k.cfg.tlb;
        arch.flush_range(k, ctx, mm, span);
    }
    let m = &mut k.mms[mm as usize];
    m.vma_mut(vma).ptes[first as usize..(first + nr) as usize].fill(Pte::HOLE);
    crate::mm::access::pte_cleared(m.vma_mut(vma), first, nr);
    m.mmap_lock.write_unlock(ctx);
}
