//! vm-scalability `usemem --init-time -w -O [-t T] [-s S] [-r R] -n N SIZE`: N processes
//! (each of T threads sharing its mm with `-t`) each mmap SIZE of anonymous memory and store
//! to every word of it, R times; each then sleeps S seconds holding its memory, frees it and
//! exits, so lifetimes overlap as they do on a real box. Throughput (the model's historical
//! figure) is the sum of each task's SIZE / its store-loop time (the mmap excluded); usemem's
//! own lines (`UsememResult`) time each task from the start, as usemem does.

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::mm::madvise::Advice;
use crate::mm::mmap::ThpAdvice;
use crate::scenario::UsememSpec;
use serde::Serialize;

const MARK_START: usize = 0;
const MARK_END: usize = 1;

/// Bytes of one store of usemem's loop (`sizeof(unsigned long)`); the default `--step`.
const WORD_BYTES: u64 = 8;

pub fn tasks(spec: &UsememSpec) -> Vec<TaskSpec> {
    let UsememSpec {
        nproc,
        threads,
        memcg,
        ..
    } = spec;
    // Validated: 0 ..= 4096 threads.
    let per_process = (*threads).max(1) as u32;
    let mut out = Vec::with_capacity((*nproc * per_process) as usize);
    for p in 0..*nproc {
        for t in 0..per_process {
            let leader = out.len() - t as usize;
            out.push(TaskSpec {
                name: if *threads == 0 {
                    format!("usemem-{p}")
                } else {
                    format!("usemem-{p}.{t}")
                },
                memcg: memcg.clone(),
                // do_task: pthread_create of `-t` threads, all in the process's mm.
                shares_mm_with: (t > 0).then_some(leader),
                ops: task_ops(spec, t),
            });
        }
    }
    out
}

/// One task's program (do_units): its own mapping (VMA `vma`), the timed store loop, the sleep,
/// then the free. A thread unmaps its own region (timing_free) as the others run on; a
/// process's exit unmaps it (exit_mmap), as the munmap before exit would.
fn task_ops(spec: &UsememSpec, vma: u32) -> Vec<Op> {
    let UsememSpec {
        size,
        madv_hugepage,
        pageout_after_write,
        threads,
        sleep_s,
        repeat,
        ..
    } = spec;
    let nr_pages = size.pages() as u32;
    let thp = if *madv_hugepage {
        ThpAdvice::Hugepage
    } else {
        ThpAdvice::Default
    };
    let mut ops = vec![Op::Mmap { vma, nr_pages, thp }, Op::Mark(MARK_START)];
    // do_rw_once, `-r` times.
    ops.extend((0..*repeat).map(|_| Op::Touch {
        vma,
        first: 0,
        nr: nr_pages,
        write: true,
    }));
    ops.push(Op::Mark(MARK_END));
    if *pageout_after_write {
        ops.push(Op::Madvise {
            vma,
            first: 0,
            nr: nr_pages,
            advice: Advice::Pageout,
        });
    }
    if *sleep_s > 0 {
        ops.push(Op::Sleep {
            ns: (*sleep_s as u64).saturating_mul(1_000_000_000),
        });
    }
    if *threads > 0 {
        ops.push(Op::Munmap { vma });
    }
    ops.push(Op::Exit);
    ops
}

/// One line of usemem's output (output_statistics): `BYTES bytes / USECS usecs = KBPS KB/s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UsememLine {
    /// What usemem counts: SIZE/8 for the allocation plus 8 bytes per store of every pass.
    pub bytes: u64,
    /// From the start (usemem's clock starts before the fork) to the end of the store loop.
    pub usecs: u64,
    pub kb_per_s: u64,
}

impl UsememLine {
    pub fn text(&self) -> String {
        format!(
            "{} bytes / {} usecs = {} KB/s",
            self.bytes, self.usecs, self.kb_per_s
        )
    }
}

/// usemem's own figures: a line per task (process, or thread with `-t`), and their sum, as
/// vm-scalability's case scripts sum them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsememResult {
    pub lines: Vec<UsememLine>,
    pub total_kb_per_s: u64,
}

/// The line of a task whose loop ended `end_ns` after the start.
fn line(size_bytes: u64, repeat: u64, end_ns: u64) -> UsememLine {
    // do_unit counts bytes / 8 for the allocation, do_rw_once 8 bytes per store.
    let bytes = size_bytes / 8 + repeat * (size_bytes / WORD_BYTES) * WORD_BYTES;
    let usecs = (end_ns / 1000).max(1);
    UsememLine {
        bytes,
        usecs,
        kb_per_s: ((bytes as u128 * 1_000_000) >> 10) as u64 / usecs,
    }
}

pub fn report(spec: &UsememSpec, marks: &[TaskMarks]) -> WorkloadResult {
    let UsememSpec { size, repeat, .. } = spec;
    let mut throughput = 0.0;
    let mut elapsed_max = 0;
    let mut lines = Vec::new();
    for m in marks {
        let (Some(start), Some(end)) = (&m[MARK_START], &m[MARK_END]) else {
            continue;
        };
        let elapsed = (end.at_ns - start.at_ns).max(1);
        throughput += size.0 as f64 * 1e9 / elapsed as f64;
        elapsed_max = elapsed_max.max(elapsed);
        lines.push(line(size.0, *repeat as u64, end.at_ns));
    }
    WorkloadResult {
        kind: "usemem".into(),
        throughput_bytes_per_s: throughput,
        elapsed_ns_max: elapsed_max,
        tasks: marks.len() as u32,
        usemem: Some(UsememResult {
            total_kb_per_s: lines.iter().map(|l| l.kb_per_s).sum(),
            lines,
        }),
        ..WorkloadResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::{swapfile, Kernel};
    use crate::scenario::Scenario;
    use crate::sched::{run_tasks_observed, RunObserver, Task};

    const MS: u64 = 1_000_000;

    /// 2 CPUs, 64 MiB RAM, a 64 MiB swap device, usemem with `options` in memcg "m".
    fn usemem(s: &Scenario) -> &crate::scenario::UsememSpec {
        match &s.workloads[0] {
            crate::scenario::WorkloadSpec::Usemem(u) => u,
            w => panic!("the test scenario runs usemem, not {w:?}"),
        }
    }

    fn scenario(memcg_max: &str, options: &str) -> Scenario {
        Scenario::from_toml_str(&format!(
            r#"
[machine]
cpus = 2
memory = "64M"
[[machine.swap]]
kind = "ramdisk"
size = "64M"
[[memcg]]
name = "m"
max = "{memcg_max}"
[[workload]]
kind = "usemem"
memcg = "m"
{options}
"#
        ))
        .unwrap()
    }

    /// What the run looked like every millisecond: most swap slots in use, most live mms,
    /// and (per sample) each live mm's rss and page-table pages.
    #[derive(Default)]
    struct Watch {
        peak_swap_pages: u64,
        peak_live_mms: usize,
        /// (now_ns, memcg usage pages) samples.
        usage: Vec<(u64, u64)>,
        /// Most page-table pages of one mm, and most anon rss of one mm.
        max_pgtables: u64,
        max_rss_anon: u64,
    }

    impl RunObserver for Watch {
        fn at(&mut self, k: &Kernel, _tasks: &[Task], now_ns: u64) -> u64 {
            let used: u64 = k
                .swap
                .devices
                .iter()
                .map(|d| (d.map.nr_slots() - d.map.free_pages()) as u64)
                .sum();
            self.peak_swap_pages = self.peak_swap_pages.max(used);
            let live = k.mms.iter().filter(|m| m.mm_users > 0);
            self.peak_live_mms = self.peak_live_mms.max(live.clone().count());
            for m in live {
                let pgtables = crate::mm::oom_kill::mm_pgtables_pages(m);
                self.max_pgtables = self.max_pgtables.max(pgtables);
                self.max_rss_anon = self.max_rss_anon.max(m.rss_anon);
            }
            let cg = k.memcg_id(Some("m"));
            self.usage.push((now_ns, k.memcgs[cg as usize].usage_pages));
            now_ns + MS
        }
    }

    /// Run `s`'s usemem, watched; its tasks and the watch.
    fn run(s: &Scenario) -> (Kernel, Vec<Task>, Watch) {
        let mut k = Kernel::new(s);
        let mut tasks = Vec::new();
        let spec = &s.workloads[0];
        crate::spawn_tasks(
            &mut k,
            &mut tasks,
            0,
            spec.content(),
            super::tasks(usemem(s)),
        );
        let mut watch = Watch::default();
        let slice = s.machine.sched_slice_ns;
        run_tasks_observed(
            &mut k,
            &mut tasks,
            1,
            slice,
            true,
            &mut |_, _| {},
            Some(&mut watch),
        )
        .unwrap();
        (k, tasks, watch)
    }

    #[test]
    fn threads_share_one_mm_each_with_its_own_mapping() {
        let s = scenario("64M", "nproc = 2\nsize = \"4M\"\nthreads = 3");
        let specs = super::tasks(usemem(&s));
        assert_eq!(specs.len(), 6, "2 processes x 3 threads");
        let leaders: Vec<_> = specs.iter().map(|t| t.shares_mm_with).collect();
        assert_eq!(leaders, [None, Some(0), Some(0), None, Some(3), Some(3)]);
        let (k, tasks, watch) = run(&s);
        // Two mms, not six: the threads of a process are one address space.
        let mms: std::collections::BTreeSet<u32> = tasks
            .iter()
            .filter(|t| t.program().is_some())
            .map(|t| t.mm)
            .collect();
        assert_eq!(mms.len(), 2);
        assert_eq!(watch.peak_live_mms, 2);
        // One mm held all three threads' 4 MiB: one RSS (3 x 1024 pages at most) and one
        // page table for the three mappings.
        assert!(watch.max_rss_anon > 1024, "rss {}", watch.max_rss_anon);
        assert!(watch.max_rss_anon <= 3 * 1024);
        let lines = &report(usemem(&s), &marks(&tasks)).usemem.unwrap().lines;
        assert_eq!(lines.len(), 6, "a line per thread, as usemem prints");
        assert!(k.mms.iter().all(|m| m.rss_anon == 0), "all freed at exit");
    }

    fn marks(tasks: &[Task]) -> Vec<TaskMarks> {
        tasks
            .iter()
            .filter_map(|t| t.program())
            .map(|p| p.marks.clone())
            .collect()
    }

    #[test]
    fn sleep_holds_the_memory_until_it_ends() {
        let s = scenario("64M", "nproc = 1\nsize = \"8M\"\nsleep_s = 2");
        let (k, tasks, watch) = run(&s);
        let end_ns = marks(&tasks)[0][MARK_END].as_ref().unwrap().at_ns;
        let exited_ns = tasks[0].exited_at_ns.unwrap();
        assert!(
            exited_ns >= end_ns + 2_000_000_000,
            "exit {exited_ns} after the loop's end {end_ns} + 2 s"
        );
        // Charged all along the sleep; nothing once it ends.
        let held = |from: u64, to: u64| {
            watch
                .usage
                .iter()
                .filter(|(t, _)| (from..to).contains(t))
                .all(|&(_, pages)| pages >= 2048)
        };
        assert!(held(end_ns + MS, end_ns + 1_990 * MS));
        let cg = k.memcg_id(Some("m"));
        assert_eq!(k.memcgs[cg as usize].usage_pages, 0, "uncharged at exit");
        // The sleep is neither user nor system time.
        assert!(tasks[0].user_ns + tasks[0].sys_ns < 1_000_000_000);
    }

    #[test]
    fn exits_free_swap_so_staggered_lifetimes_need_less_of_it() {
        // 8 x 8 MiB through a 16 MiB memcg: each process swaps while it writes. Exiting as
        // soon as written frees its slots; holding (-s) keeps every process's slots until the
        // last one is done.
        let opts = |sleep: i64| format!("nproc = 8\nsize = \"8M\"\nsleep_s = {sleep}");
        let (k0, _, gone) = run(&scenario("16M", &opts(0)));
        let (k1, _, held) = run(&scenario("16M", &opts(3)));
        assert!(
            gone.peak_swap_pages * 10 < held.peak_swap_pages * 9,
            "peak swap: exiting {} vs holding {} pages",
            gone.peak_swap_pages,
            held.peak_swap_pages
        );
        // Exits drop every swap entry their page tables held; what stays charged is the swap
        // cache's (folios reclaim had not freed yet, as in the kernel).
        for k in [k0, k1] {
            let d = &k.swap.devices[0].map;
            let referenced = (1..d.max as usize)
                .filter(|&i| swapfile::swap_count(d.swap_map[i]) != 0)
                .count();
            assert_eq!(referenced, 0, "no swap entry outlives its process");
            let cache_only = (1..d.max as usize)
                .filter(|&i| d.swap_map[i] == swapfile::SWAP_HAS_CACHE)
                .count() as u64;
            let cg = k.memcg_id(Some("m"));
            assert!(k.memcgs[cg as usize].swap_usage_pages <= cache_only);
        }
    }

    #[test]
    fn repeat_runs_the_store_loop_again_and_usemem_counts_it() {
        let spec = |r: i64| scenario("64M", &format!("nproc = 1\nsize = \"4M\"\nrepeat = {r}"));
        let touches = |s: &Scenario| {
            super::tasks(usemem(s))[0]
                .ops
                .iter()
                .filter(|op| matches!(op, Op::Touch { .. }))
                .count()
        };
        assert_eq!(touches(&spec(1)), 1);
        assert_eq!(touches(&spec(3)), 3);
        // usemem: SIZE/8 for the mmap and 8 bytes a store, per pass.
        assert_eq!(line(4 << 20, 1, 1_000_000).bytes, (4 << 20) / 8 + (4 << 20));
        assert_eq!(
            line(4 << 20, 3, 1_000_000).bytes,
            (4 << 20) / 8 + 3 * (4 << 20)
        );
        // 4.5 MiB in 1 ms: (4718592 * 1e6 >> 10) / 1000 KB/s.
        assert_eq!(line(4 << 20, 1, 1_000_000).kb_per_s, 4_608_000);
        assert_eq!(
            line(4 << 20, 1, 1_000_000).text(),
            "4718592 bytes / 1000 usecs = 4608000 KB/s"
        );
    }

    #[test]
    fn bad_options_name_their_field() {
        let err = |opts: &str| {
            Scenario::from_toml_str(&format!(
                "[[workload]]\nkind = \"usemem\"\nnproc = 1\nsize = \"1M\"\n{opts}\n"
            ))
            .unwrap_err()
            .to_string()
        };
        assert!(err("repeat = 0").contains("workload[0].repeat"));
        assert!(err("sleep_s = 1001").contains("workload[0].sleep_s"));
        assert!(err("threads = 5000").contains("workload[0].threads"));
        assert!(err("sleep_s = -1").contains("workload[0].sleep_s"));
        assert!(err("threads = -2").contains("workload[0].threads"));
    }
}
