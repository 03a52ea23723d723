//! One step of a user task: one operation of its program, or one fault's worth of a Touch.

use super::task::UserProgram;
use crate::engine::rng::SimRng;
use crate::engine::{Ctx, WaitKind};
use crate::hw::tlb_cache::HotSet;
use crate::mm::access;
use crate::mm::compaction::compact_memory;
use crate::mm::filemap;
use crate::mm::gup::{pin_user_pages_fast, unpin_user_pages};
use crate::mm::madvise::madvise;
use crate::mm::memory::{touch_timed, zap_range};
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

/// One step of the program of the task whose mm is `mm`. A program that runs out of ops
/// without an Exit stops with its mm left mapped (tests read its page tables afterwards).
/// User-space computing is preemptible anywhere: a Compute op stops at `wake_ns` (the next
/// known wake-up of a sleeping task, which may preempt this one) or at the slice's end when
/// another task is runnable, and resumes in a later step.
pub(super) fn step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    (tid, seed): (u32, u64),
    mm: u32,
    p: &mut UserProgram,
    user_ns: &mut u64,
    wake_ns: u64,
) -> Result<UserNext, MmError> {
    let Some(op) = p.ops.get(p.pc).cloned() else {
        return Ok(UserNext::Exit);
    };
    if let Some(vma) = unmapped_vma(k, mm, &op) {
        // Another thread of the process unmapped it (trace replays order threads only at
        // clone, exec and wait): an access faults, munmap and madvise fail with nothing done.
        if matches!(op, Op::Touch { .. } | Op::Pin { .. } | Op::Mincore { .. }) {
            return Err(MmError::SegvUnmapped { vma });
        }
        ctx.spend(k.cost.syscall_ns);
        p.pc += 1;
        return Ok(UserNext::Run);
    }
    match op {
        Op::Mmap { vma, nr_pages, thp } => {
            k.mms[mm as usize].try_mmap(vma, nr_pages, thp)?;
            ctx.spend(k.cost.syscall_ns);
        }
        Op::Touch {
            vma,
            first,
            nr,
            write,
        } => {
            if !k.mms[mm as usize].vma(vma).prot.allows(write) {
                return Err(MmError::SegvProt { vma });
            }
            let (covered, store_ns) =
                match touch_timed(k, ctx, mm, vma, first + p.cursor, first + nr, write) {
                    Err(MmError::Resched) => return Ok(UserNext::Preempted),
                    covered => covered?,
                };
            // The task's own loads and stores run in user mode; its faults are system time.
            *user_ns += store_ns;
            p.cursor += covered;
            if p.cursor < nr {
                return Ok(UserNext::Run);
            }
            p.cursor = 0;
        }
        Op::Madvise {
            vma,
            first,
            nr,
            advice,
        } => {
            ctx.spend(k.cost.syscall_ns);
            madvise(k, ctx, mm, vma, first, nr, advice);
        }
        Op::Munmap { vma } => vm_munmap(k, ctx, mm, vma),
        Op::MunmapRange { vma, first, nr } => munmap_range(k, ctx, mm, vma, first, nr),
        Op::Compute { ns } => {
            if let Some(hot) = p.hot_set {
                access::run_user(k, ctx, tid, mm, hot, user_ns);
            }
            let left_ns = ns - p.computed_ns;
            // The tick preempts user code at the slice's end when another task is runnable.
            let stop_ns = wake_ns.min(ctx.resched_at_ns);
            if stop_ns > ctx.now_ns && stop_ns - ctx.now_ns < left_ns {
                let run_ns = stop_ns - ctx.now_ns;
                ctx.spend(run_ns);
                *user_ns += run_ns;
                p.computed_ns += run_ns;
                return Ok(UserNext::Run);
            }
            ctx.spend(left_ns);
            *user_ns += left_ns;
            p.computed_ns = 0;
        }
        Op::Sleep { ns } => {
            ctx.spend(k.cost.syscall_ns);
            ctx.wait_until(ctx.now_ns + ns, WaitKind::Sleep);
        }
        Op::Mark(m) => {
            p.marks[m] = Some(Mark {
                at_ns: ctx.now_ns,
                counters: k.mark_counters(ctx.now_ns),
            })
        }
        Op::Pin { vma, first, nr } => {
            ctx.spend(k.cost.syscall_ns);
            pin_user_pages_fast(k, ctx, mm, vma, first, nr)?;
        }
        Op::Unpin { vma, first, nr } => {
            ctx.spend(k.cost.syscall_ns);
            unpin_user_pages(k, ctx, mm, vma, first, nr);
        }
        Op::CompactMemory => {
            ctx.spend(k.cost.syscall_ns);
            compact_memory(k, ctx);
        }
        Op::Exit => {
            // The last thread out (mmput) tears the address space down (exit_mmap).
            let m = &mut k.mms[mm as usize];
            m.mm_users -= 1;
            if m.mm_users == 0 {
                exit_mmap(k, ctx, mm);
            }
            if k.kmem.enabled {
                crate::mm::kmem::free_thread_stack(k, ctx, mm);
            }
            return Ok(UserNext::Exit);
        }
        Op::Barrier { id, parties } => {
            p.pc += 1;
            return Ok(UserNext::Barrier { id, parties });
        }
        Op::TimerStart => p.timer_start_ns = ctx.now_ns,
        Op::Mincore { vma, index } => {
            ctx.spend(k.cost.syscall_ns);
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
        // Files (mm/filemap/).
        Op::CreateFile { file, nr_pages } => {
            ctx.spend(k.cost.syscall_ns);
            k.pagecache.create(file, nr_pages)?;
        }
        Op::MmapFile {
            vma,
            file,
            offset_pages,
            nr_pages,
            shared,
        } => {
            ctx.spend(k.cost.syscall_ns);
            if k.kmem.enabled {
                crate::mm::slub::lookup_file(k, ctx, file)?;
            }
            filemap::mmap_file(k, mm, vma, file, offset_pages, nr_pages, shared)?;
        }
        Op::ReadFile { file, first, nr } => {
            if p.cursor == 0 {
                ctx.spend(k.cost.syscall_ns);
                if k.kmem.enabled {
                    crate::mm::slub::lookup_file(k, ctx, file)?;
                }
            }
            let done =
                filemap::read::filemap_read_step(k, ctx, mm, file, first + p.cursor, first + nr)?;
            p.cursor += done;
            if p.cursor < nr {
                return Ok(UserNext::Run);
            }
            p.cursor = 0;
        }
        Op::DropCaches => {
            ctx.spend(k.cost.syscall_ns);
            drop_pagecache(k, ctx);
        }
        Op::ShmemWrite {
            mount,
            file,
            first,
            nr,
        } => {
            if p.cursor == 0 {
                ctx.spend(k.cost.syscall_ns);
            }
            let m = &k.mms[mm as usize];
            let target = shmem::WriteTarget {
                mount,
                inode: file,
                memcg: m.memcg,
                content: m.content,
            };
            p.cursor += shmem::shmem_write_step(k, ctx, target, first + p.cursor, first + nr)?;
            if p.cursor < nr {
                return Ok(UserNext::Run);
            }
            p.cursor = 0;
        }
        Op::ShmemRead { file, first, nr } => {
            if p.cursor == 0 {
                ctx.spend(k.cost.syscall_ns);
            }
            let memcg = k.mms[mm as usize].memcg;
            p.cursor += shmem::shmem_read_step(k, ctx, file, memcg, first + p.cursor, first + nr)?;
            if p.cursor < nr {
                return Ok(UserNext::Run);
            }
            p.cursor = 0;
        }
        Op::ShmemUnlink { file } => shmem::shmem_unlink(k, ctx, file)?,
        Op::Access {
            vma,
            first,
            nr,
            count,
            write,
            mlp,
        } => {
            if !k.mms[mm as usize].vma(vma).prot.allows(write) {
                return Err(MmError::SegvProt { vma });
            }
            let rng = p
                .rng
                .get_or_insert_with(|| SimRng::stream(seed, &format!("access/{tid}")));
            let a = access::Access {
                mm,
                vma,
                first,
                nr,
                count,
                write,
                mlp,
            };
            let mut who = access::Accessor {
                task: tid,
                hot: p.hot_set,
                rng,
                stop_ns: wake_ns.min(ctx.resched_at_ns),
                ns_per_access: &mut p.ns_per_access,
                user_ns,
            };
            p.accessed = access::access_step(k, ctx, &a, p.accessed, &mut who)?;
            if p.accessed < count {
                return Ok(UserNext::Run);
            }
            p.accessed = 0;
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
        Op::Mprotect { vma, prot } => mprotect(k, ctx, mm, vma, prot),
    }
    p.pc += 1;
    Ok(UserNext::Run)
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
    ctx.spend(k.cost.syscall_ns);
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
