//! foliosim: a deterministic simulator of Linux memory management for large folios (mTHP).
//!
//! Pipeline: a [`scenario::Scenario`] names the machine, kernel and workloads; each workload
//! becomes tasks of operations; the engine runs them on simulated CPUs against the mm model
//! ([`mm`], files named after the kernel's mm/*.c); the result is kernel-named counters.

pub mod content;
pub mod cpu_cost;
pub mod footprint;
pub mod hw;
pub mod mm;
pub mod registry;
pub mod report;
pub mod scenario;
pub mod sched;
pub mod stats;
mod validate;
pub mod workload;

#[cfg(test)]
mod limits_tests;

/// The floor below, under the path the model's files name it by (`crate::engine::...`):
/// docs/architecture.md, "Root re-exports".
pub use foliosim_engine as engine;

pub use report::observers::RunOptions;
pub use report::RunResult;
pub use scenario::Scenario;
pub use sched::SimError;

use engine::lock;

/// The engine's cost model reads a scenario's profile and `[costs]` through this.
impl engine::cost::CostSource for Scenario {
    fn cost_profile(&self) -> &str {
        &self.machine.cost_profile
    }
    fn cost_overrides(&self) -> &std::collections::BTreeMap<String, f64> {
        &self.costs
    }
    fn machine_costs(&self) -> Vec<(&'static str, u64)> {
        self.machine
            .machine_profile()
            .map(|p| p.cost_values())
            .unwrap_or_default()
    }
}

use mm::Kernel;
use report::{LockReport, ThreadTimes};
use sched::{run_tasks_observed, Task};

/// Run a scenario to completion.
pub fn run(scenario: &Scenario) -> Result<RunResult, SimError> {
    run_with_progress(scenario, &mut |_, _| {})
}

/// Run, calling `progress(steps, simulated_ns)` now and then (for progress bars).
pub fn run_with_progress(
    scenario: &Scenario,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunResult, SimError> {
    run_with(scenario, &RunOptions::default(), progress).map(|r| r.result)
}

/// A run's result, and its timeline when one was asked for.
pub struct Run {
    pub result: RunResult,
    pub timeline: Option<report::timeline::Timeline>,
}

/// Run with `opts` (a timeline), calling `progress(steps, simulated_ns)` now and then.
pub fn run_with(
    scenario: &Scenario,
    opts: &RunOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Run, SimError> {
    let mut observers = report::observers::Observers::new(
        scenario
            .report
            .sample_interval
            .map(report::timeseries::Sampler::new),
        opts.timeline.map(report::timeline::TimelineRecorder::new),
        opts.max_steps,
    );
    let (mut k, mut tasks) = boot(scenario)?;
    let any = observers.any();
    let stats = run_tasks_observed(
        &mut k,
        &mut tasks,
        scenario.seed,
        scenario.machine.sched_slice_ns,
        scenario.check_invariants,
        progress,
        any.then_some(&mut observers as &mut dyn sched::RunObserver),
    )?;
    let timeseries = observers
        .sampler
        .take()
        .map(|s| s.finish(&k, &tasks, stats.simulated_ns));
    let workloads = workload::report_all(
        &scenario.workloads,
        &scenario.files,
        tasks
            .iter()
            .filter_map(|t| t.program())
            .map(|p| workload::TaskOutput {
                workload: p.workload,
                marks: &p.marks,
                latencies: &p.latencies,
            }),
    );
    let result = run_result(scenario, &k, &tasks, &stats, workloads, timeseries);
    let timeline = observers.timeline.take().map(|t| {
        let mut tl = t.finish();
        tl.title = format!(
            "kernel {}, seed {}, {} CPUs",
            result.kernel, result.seed, scenario.machine.cpus
        );
        tl
    });
    Ok(Run { result, timeline })
}

/// The kernel booted for the scenario (aged by its prelude, if any), and the workloads'
/// tasks spawned on it.
fn boot(scenario: &Scenario) -> Result<(Kernel, Vec<Task>), SimError> {
    // Before anything big is allocated: a scenario too big for this host is an error.
    footprint::check_host(scenario, None)?;
    let mut k = Kernel::try_new(scenario)?;
    if let Some(start) = &scenario.machine.start {
        let mm_error = |task: &str, error| SimError::Mm {
            task: task.into(),
            at_ns: 0,
            error,
        };
        workload::aging::run_prelude(&mut k, start, scenario.seed)
            .map_err(|e| mm_error("aging prelude", e))?;
        if let Some(file) = &start.snapshot {
            let text = start.snapshot_text.as_deref().ok_or_else(|| {
                let e = format!("{file} was not read: run the scenario from its file");
                mm_error("snapshot start", mm::MmError::Snapshot(e))
            })?;
            mm::snapshot::load(&mut k, file, text).map_err(|e| mm_error("snapshot start", e))?;
        }
    }
    let mut tasks = Vec::new();
    for (w, spec) in scenario.workloads.iter().enumerate() {
        let mut specs = workload::tasks_for(spec, scenario);
        workload::namespace_barriers(w, &mut specs);
        let first_mm = k.mms.len();
        spawn_tasks(&mut k, &mut tasks, w, spec.content(), specs);
        for m in &mut k.mms[first_mm..] {
            m.oom_score_adj = spec.oom_score_adj() as i16;
        }
    }
    if k.kmem.enabled {
        alloc_task_stacks(&mut k, &tasks)?;
    }
    Ok((k, tasks))
}

/// What the run reports, read from the kernel and tasks at its end.
fn run_result(
    scenario: &Scenario,
    k: &Kernel,
    tasks: &[Task],
    stats: &sched::SchedStats,
    workloads: Vec<workload::WorkloadResult>,
    timeseries: Option<report::timeseries::TimeSeries>,
) -> RunResult {
    let users = || tasks.iter().filter(|t| t.program().is_some());
    RunResult {
        foliosim_version: env!("CARGO_PKG_VERSION").into(),
        kernel: scenario.kernel.version.name(),
        swap_allocator: k
            .swap
            .devices
            .first()
            .map_or("none", |d| d.allocator.name())
            .into(),
        seed: scenario.seed,
        simulated_ns: stats.simulated_ns - k.workload_start_ns,
        steps: stats.steps,
        cpu_user_ns: users().map(|t| t.user_ns).sum(),
        cpu_sys_ns: users().map(|t| t.sys_ns).sum(),
        cpu_iowait_ns: users().map(|t| t.iowait_ns).sum(),
        kernel_threads: tasks
            .iter()
            .filter(|t| t.kthread_kind().is_some())
            .map(|t| ThreadTimes {
                name: t.name.clone(),
                sys_ns: t.sys_ns,
                iowait_ns: t.iowait_ns,
                wakeups: t.wakeups,
            })
            .collect(),
        counters: k.vmstat_map(stats.simulated_ns),
        memcg_stats: k
            .memcgs
            .iter()
            .map(|cg| (cg.name.clone(), cg.stat_map()))
            .collect(),
        workloads,
        locks: lock_reports(k),
        swap_devices: k
            .swap
            .devices
            .iter()
            .map(|d| d.bdev.stats.clone())
            .collect(),
        zram_mm_stat: k
            .swap
            .devices
            .iter()
            .filter_map(|d| match &d.store {
                mm::swap_devstore::RamStore::Zram(z) => Some(z.mm_stat()),
                _ => None,
            })
            .collect(),
        zswap: k.zswap.enabled.then(|| k.zswap.debugfs()),
        iaa: k.iaa.as_ref().map(|i| i.total_stats()),
        cpu_time_ns: cpu_time_by_cost(k, &stats.cpu_ns_by_cost),
        page_alloc: report::PageAllocReport::of(k.node_zone(k.nodes.cpu_node())),
        timeseries,
        oom_kills: oom_kill_reports(k, tasks),
        tlb: k.tlb_cache.report(),
    }
}

/// The OOM killer's kills, with the names of the victims' tasks.
fn oom_kill_reports(k: &Kernel, tasks: &[Task]) -> Vec<report::OomKillReport> {
    use mm::oom_kill::OomConstraint;
    let memcg_name = |cg: u16| k.memcgs[cg as usize].name.clone();
    k.oom
        .kills
        .iter()
        .map(|kill| {
            let victims = || tasks.iter().filter(|t| t.mm == kill.mm);
            report::OomKillReport {
                at_ns: kill.at_ns,
                tasks: victims().map(|t| t.name.clone()).collect(),
                workload: victims()
                    .find_map(|t| t.program().map(|p| p.workload))
                    .unwrap_or(0),
                memcg: memcg_name(kill.memcg),
                constraint: match kill.constraint {
                    OomConstraint::None => "global".into(),
                    OomConstraint::Memcg(cg) => format!("memcg {}", memcg_name(cg)),
                },
                points: kill.points,
                rss_pages: kill.rss_pages,
                swap_ents: kill.swap_ents,
                pgtables_pages: kill.pgtables_pages,
                oom_score_adj: kill.oom_score_adj,
                group: kill.group,
            }
        })
        .collect()
}

/// The scheduler's tasks for workload `w`'s task specs, appended to `tasks`: a process gets a
/// new mm in its memcg; a thread (`shares_mm_with`) the mm of its process.
pub fn spawn_tasks(
    k: &mut Kernel,
    tasks: &mut Vec<Task>,
    w: usize,
    content: content::ContentClass,
    specs: Vec<workload::TaskSpec>,
) {
    let first = tasks.len();
    for t in specs {
        let mm = match t.shares_mm_with {
            Some(i) => {
                assert!(
                    first + i < tasks.len(),
                    "task {}: shares_mm_with {i} names no earlier task of its workload",
                    t.name
                );
                tasks[first + i].mm
            }
            None => {
                let memcg = k.memcg_id(t.memcg.as_deref());
                k.new_mm(memcg, content)
            }
        };
        tasks.push(Task::new(t.name, mm, w, t.ops).with_mempolicy(k.task_mempolicy));
    }
}

/// Every user task's kernel stack (copy_process's dup_task_struct), allocated when the tasks
/// are created, before the workload starts (kernel threads' stacks are left out).
fn alloc_task_stacks(k: &mut Kernel, tasks: &[Task]) -> Result<(), SimError> {
    let mut ctx = engine::Ctx::new(0, k.workload_start_ns);
    for t in tasks.iter().filter(|t| t.mm != mm::folio::NIL) {
        mm::kmem::alloc_thread_stack(k, &mut ctx, t.mm).map_err(|error| SimError::Mm {
            task: t.name.clone(),
            at_ns: ctx.now_ns,
            error,
        })?;
    }
    Ok(())
}

/// The tasks' CPU time by the work that spent it (cpu_cost.rs), one entry per bucket used;
/// a memory-bandwidth stream's time split into its time alone and its slowdown by the other
/// CPUs (hw/membw.rs), the user loads and stores into the TLB model's page walks and the rest.
fn cpu_time_by_cost(k: &Kernel, by_bucket: &[u64]) -> std::collections::BTreeMap<String, u64> {
    use crate::cpu_cost::CpuCost;
    use crate::hw::membw::Stream;
    let mut m = std::collections::BTreeMap::new();
    let mut put = |name: &str, ns: u64| {
        if ns > 0 {
            m.insert(name.to_string(), ns);
        }
    };
    let streams = Stream::ALL.map(|s| s.bucket());
    for &c in CpuCost::ALL.iter().filter(|c| !streams.contains(c)) {
        put(c.name(), by_bucket[c as usize]);
    }
    for s in Stream::ALL {
        let busy = k.membw.busy_ns[s as usize] + k.tlb_bus.busy_ns[s as usize];
        let alone = k.membw.alone_ns[s as usize] + k.tlb_bus.alone_ns[s as usize];
        let name = s.bucket().name();
        assert_eq!(
            busy,
            by_bucket[s.bucket() as usize],
            "{name}: bus and ledger"
        );
        put(name, alone);
        put(&format!("{name} contention"), busy - alone);
    }
    let access_ns = by_bucket[CpuCost::UserAccess as usize];
    if let Some(walk_ns) = k.tlb_cache.report().map(|r| r.walk_ns.min(access_ns)) {
        put(CpuCost::UserAccess.name(), access_ns - walk_ns);
        put("user: page walks and STLB lookups", walk_ns);
    }
    m
}

pub fn lock_reports(k: &Kernel) -> Vec<LockReport> {
    let mut locks = vec![LockReport {
        name: k.node_zone(k.nodes.cpu_node()).lock.name.into(),
        instance: "Normal".into(),
        stats: k.node_zone(k.nodes.cpu_node()).lock.stats.clone(),
    }];
    for (i, d) in k.swap.devices.iter().enumerate() {
        locks.push(LockReport {
            name: d.map.lock.name.into(),
            instance: format!("swap{i}"),
            stats: d.map.lock.stats.clone(),
        });
        for (name, stats) in d.allocator.extra_locks() {
            locks.push(LockReport {
                name: name.into(),
                instance: format!("swap{i}, all instances"),
                stats,
            });
        }
    }
    for cg in &k.memcgs {
        for (nid, lv) in cg.lruvecs().enumerate() {
            let node = if k.nr_nodes() > 1 {
                format!(" node {nid}")
            } else {
                String::new()
            };
            locks.push(LockReport {
                name: lv.lru_lock.name.into(),
                instance: format!("memcg {}{node}", cg.name),
                stats: lv.lru_lock.stats.clone(),
            });
        }
    }
    // mmap_lock: shown when some fault waited for a writer (khugepaged's collapse, munmap).
    let mut mmap = lock::LockStats::default();
    for m in &k.mms {
        mmap.add(&m.mmap_lock.stats);
    }
    if mmap.contended > 0 {
        locks.push(LockReport {
            name: "mmap_lock".into(),
            instance: "all mms (write holds; waits)".into(),
            stats: mmap,
        });
    }
    locks
}
