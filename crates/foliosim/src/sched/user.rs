//! One step of a user task: one operation of its program, or one fault's worth of a Touch.

use super::task::UserProgram;
use crate::engine::Ctx;
use crate::mm::filemap;
use crate::mm::madvise::madvise;
use crate::mm::memory::{touch, zap_range};
use crate::mm::truncate::drop_pagecache;
use crate::mm::{Kernel, MmError};
use crate::workload::{Mark, Op};

/// One step of the program of the task whose mm is `mm`. Returns true when the task exited;
/// a program that runs out of ops without an Exit stops with its mm left mapped (tests read
/// its page tables afterwards).
/// User-space computing is preemptible anywhere: a Compute op stops at `wake_ns` (the next
/// known wake-up of a sleeping task, which may preempt this one) and resumes in a later step.
pub(super) fn step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    mm: u32,
    p: &mut UserProgram,
    user_ns: &mut u64,
    wake_ns: u64,
) -> Result<bool, MmError> {
    let Some(op) = p.ops.get(p.pc).cloned() else {
        return Ok(true);
    };
    match op {
        Op::Mmap { vma, nr_pages, thp } => {
            k.mms[mm as usize].mmap(vma, nr_pages, thp);
            ctx.spend(k.cost.syscall_ns);
        }
        Op::Touch {
            vma,
            first,
            nr,
            write,
        } => {
            let covered = touch(k, ctx, mm, vma, first + p.cursor, first + nr, write)?;
            p.cursor += covered;
            if p.cursor < nr {
                return Ok(false);
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
        Op::Munmap { vma } => munmap(k, ctx, mm, vma),
        Op::Compute { ns } => {
            let left_ns = ns - p.computed_ns;
            if wake_ns > ctx.now_ns && wake_ns - ctx.now_ns < left_ns {
                let run_ns = wake_ns - ctx.now_ns;
                ctx.spend(run_ns);
                *user_ns += run_ns;
                p.computed_ns += run_ns;
                return Ok(false);
            }
            ctx.spend(left_ns);
            *user_ns += left_ns;
            p.computed_ns = 0;
        }
        Op::Mark(m) => {
            p.marks[m] = Some(Mark {
                at_ns: ctx.now_ns,
                counters: k.vmstat_map(ctx.now_ns),
            })
        }
        Op::Exit => {
            for vma in 0..k.mms[mm as usize].vmas.len() as u32 {
                munmap(k, ctx, mm, vma);
            }
            return Ok(true);
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
            filemap::mmap_file(k, mm, vma, file, offset_pages, nr_pages, shared)?;
        }
        Op::ReadFile { file, first, nr } => {
            if p.cursor == 0 {
                ctx.spend(k.cost.syscall_ns);
            }
            let done =
                filemap::read::filemap_read_step(k, ctx, mm, file, first + p.cursor, first + nr)?;
            p.cursor += done;
            if p.cursor < nr {
                return Ok(false);
            }
            p.cursor = 0;
        }
        Op::DropCaches => {
            ctx.spend(k.cost.syscall_ns);
            drop_pagecache(k, ctx);
        }
    }
    p.pc += 1;
    Ok(false)
}

fn munmap(k: &mut Kernel, ctx: &mut Ctx, mm: u32, vma: u32) {
    let Some(nr) = k.mms[mm as usize]
        .vmas
        .get(vma as usize)
        .and_then(|v| v.as_ref())
        .map(|v| v.nr_pages)
    else {
        return;
    };
    ctx.spend(k.cost.syscall_ns);
    zap_range(k, ctx, mm, vma, 0, nr);
    filemap::unlink_file_vma(k, mm, vma);
    k.mms[mm as usize].vmas[vma as usize] = None;
}
