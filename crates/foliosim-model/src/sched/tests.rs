//! The scheduler with kernel threads: a woken thread runs on its own account, shares a CPU
//! round-robin with a user task, and a wake-up while it runs is not lost.

use super::*;
use crate::content::ContentClass;
use crate::mm::kthread::KthreadKind;
use crate::scenario::Scenario;
use crate::workload::Op;

const ONE_CPU: &str = r#"
[machine]
cpus = 1
memory = "64M"
sched_slice_ns = 3000000
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// A kernel on one CPU with the test kernel thread (`passes` x `ns` per wake-up, woken at
/// the start), and one user task computing `compute` ops of 100 us.
fn setup(passes: u32, ns: u64, compute: usize) -> (Kernel, Vec<Task>) {
    let mut k = Kernel::new(&Scenario::from_toml_str(ONE_CPU).unwrap());
    k.kthreads.kinds = vec![KthreadKind::TestBusy { ns }];
    k.kthreads.test_passes = passes;
    k.kthreads.wake(KthreadKind::TestBusy { ns }, 0);
    let mm = k.new_mm(0, ContentClass::Usemem);
    let mut ops = vec![Op::Compute { ns: 100 * US }; compute];
    ops.push(Op::Exit);
    (k, vec![Task::new("user".into(), mm, 0, ops)])
}

fn run(k: &mut Kernel, tasks: &mut Vec<Task>) -> SchedStats {
    run_tasks(k, tasks, 1, 3 * MS, true, &mut |_, _| {}).unwrap()
}

#[test]
fn a_woken_kernel_thread_runs_with_its_time_booked_to_it() {
    // The user task computes 10 ms: the thread gets the CPU at its first slice end.
    let (mut k, mut tasks) = setup(10, 50 * US, 100);
    run(&mut k, &mut tasks);
    let (user, kthread) = (&tasks[0], &tasks[1]);
    assert_eq!(kthread.name, "test-busy");
    assert_eq!(kthread.sys_ns, 500 * US, "10 pieces of 50 us");
    assert_eq!(kthread.user_ns, 0);
    assert_eq!(kthread.wakeups, 1);
    assert_eq!(user.user_ns, 10 * MS);
    assert_eq!(
        user.sys_ns, 0,
        "the user task pays nothing of the thread's work"
    );
    assert_eq!(k.kthreads.test_passes, 0);
}

#[test]
fn a_user_task_and_a_busy_kernel_thread_share_one_cpu_round_robin() {
    // 10 ms of work each on one CPU with 3 ms slices.
    let (mut k, mut tasks) = setup(100, 100 * US, 100);
    let stats = run(&mut k, &mut tasks);
    let (user, kthread) = (&tasks[0], &tasks[1]);
    assert_eq!(user.user_ns, 10 * MS);
    // The user task waited for the thread's slices: it ends well after its own 10 ms...
    assert!(stats.simulated_ns > 15 * MS, "{}", stats.simulated_ns);
    // ... and the thread ran for most of its 10 ms before that (the run ends with the last
    // user task: the thread's last slice may be cut).
    assert!(
        kthread.sys_ns >= 5 * MS && kthread.sys_ns <= 10 * MS,
        "{}",
        kthread.sys_ns
    );
    // Nothing is lost: one CPU's time is the two tasks' CPU time plus context switches.
    let busy = user.user_ns + user.sys_ns + kthread.sys_ns;
    assert!(stats.simulated_ns >= busy);
    assert!(
        stats.simulated_ns - busy < 100 * US,
        "context switches only"
    );
}

#[test]
fn a_wake_up_while_the_thread_runs_makes_it_run_again() {
    let (mut k, mut tasks) = setup(3, 10 * US, 100);
    // Posted before the thread has run: it is runnable when the wake-up lands, so it runs
    // its three pieces, then, woken meanwhile, runs once more (nothing left: it sleeps).
    k.kthreads.wake(KthreadKind::TestBusy { ns: 10 * US }, 0);
    run(&mut k, &mut tasks);
    assert_eq!(tasks[1].sys_ns, 30 * US);
    assert_eq!(
        tasks[1].wakeups, 1,
        "one wake-up from sleep; the second was absorbed"
    );
}

#[test]
fn a_kernel_thread_never_woken_never_runs_and_does_not_keep_the_run_alive() {
    let (mut k, mut tasks) = setup(5, 10 * US, 5);
    k.kthreads.clear_pending();
    let stats = run(&mut k, &mut tasks);
    assert_eq!(tasks[1].sys_ns, 0);
    assert_eq!(tasks[1].wakeups, 0);
    assert!(stats.simulated_ns < MS);
}

#[test]
fn a_timed_sleep_wakes_the_thread_which_preempts_a_cpu_hog() {
    let (mut k, mut tasks) = setup(0, 0, 200);
    let timer = KthreadKind::TestTimer { period_ns: MS };
    k.kthreads.kinds = vec![timer];
    k.kthreads.clear_pending();
    k.kthreads.wake(timer, 0);
    let stats = run(&mut k, &mut tasks);
    let t = &tasks[1];
    // The first wake-up finds the user task with little CPU time used: no preemption, the
    // thread waits for the end of its slice (~3 ms). From then on each 1 ms timer preempts
    // the user task at once: ~18 wake-ups in its 20 ms (~7 if they waited for slice ends).
    assert!((16..=20).contains(&t.wakeups), "{} wake-ups", t.wakeups);
    assert_eq!(t.sys_ns, 10 * US * t.wakeups);
    assert!(stats.simulated_ns < 20 * MS + 300 * US);
}

/// Two user tasks on one CPU computing `a_ms` and `b_ms`, then meeting at a barrier of
/// `parties`, then timing an empty section.
fn barrier_tasks(a_ms: u64, b_ms: u64, parties: u32) -> (Kernel, Vec<Task>) {
    let mut k = Kernel::new(&Scenario::from_toml_str(ONE_CPU).unwrap());
    k.kthreads.kinds.clear();
    let program = |ms: u64| {
        vec![
            Op::Compute { ns: ms * MS },
            Op::Barrier { id: 7, parties },
            Op::TimerStart,
            Op::Compute { ns: 10 * US },
            Op::RecordLatency {
                if_resident: 1,
                otherwise: 0,
            },
            Op::Exit,
        ]
    };
    let (a, b) = (
        k.new_mm(0, ContentClass::Usemem),
        k.new_mm(0, ContentClass::Usemem),
    );
    let tasks = vec![
        Task::new("a".into(), a, 0, program(a_ms)),
        Task::new("b".into(), b, 0, program(b_ms)),
    ];
    (k, tasks)
}

#[test]
fn a_barrier_holds_the_first_arrival_until_the_last() {
    let (mut k, mut tasks) = barrier_tasks(1, 8, 2);
    let stats = run(&mut k, &mut tasks);
    // One CPU: 9 ms of computing before both pass the barrier, then 10 us each.
    assert!(
        stats.simulated_ns >= 9 * MS + 20 * US,
        "{}",
        stats.simulated_ns
    );
    let a = tasks[0].program().unwrap();
    assert_eq!(
        a.latencies,
        vec![(0, 10 * US)],
        "no mincore: series `otherwise`"
    );
    // `a` slept at the barrier: it did not burn CPU waiting.
    assert_eq!(tasks[0].user_ns, MS + 10 * US);
    assert_eq!(tasks[0].wakeups, 1);
}

#[test]
fn a_barrier_nobody_completes_is_a_clear_error() {
    let (mut k, mut tasks) = barrier_tasks(1, 2, 3);
    let err = run_tasks(&mut k, &mut tasks, 1, 3 * MS, false, &mut |_, _| {})
        .err()
        .expect("two tasks cannot pass a barrier of three");
    let msg = err.to_string();
    assert!(msg.contains("barrier 7: a, b"), "{msg}");
}

#[test]
fn nice_weights_follow_the_kernels_table() {
    use super::queue::nice_to_weight;
    assert_eq!(nice_to_weight(0), 1024);
    assert_eq!(nice_to_weight(19), 15);
    assert_eq!(nice_to_weight(1), 819);
    assert_eq!(nice_to_weight(-1), 1280);
    assert_eq!(KthreadKind::Khugepaged.nice(), 19);
    assert_eq!(KthreadKind::Kswapd { nid: 0 }.nice(), 0);
}

#[test]
fn a_nice_19_thread_gets_a_sliver_of_a_cpu_it_shares_with_a_nice_0_task() {
    // As a_user_task_and_a_busy_kernel_thread_share_one_cpu_round_robin, but the thread is
    // nice 19: its slice is 3 ms x 15/1024 (44 us), so each turn runs one 100 us piece while
    // the user task runs 3 ms. The user task's 10 ms end a few pieces later, not 10 ms later.
    let (mut k, mut tasks) = setup(100, 100 * US, 100);
    k.kthreads.kinds = vec![KthreadKind::TestBusyNice { ns: 100 * US }];
    k.kthreads.clear_pending();
    k.kthreads
        .wake(KthreadKind::TestBusyNice { ns: 100 * US }, 0);
    let stats = run(&mut k, &mut tasks);
    let (user, kthread) = (&tasks[0], &tasks[1]);
    assert_eq!(kthread.name, "test-busy-nice");
    assert_eq!(user.user_ns, 10 * MS);
    assert!(
        kthread.sys_ns >= 100 * US && kthread.sys_ns <= 500 * US,
        "{}",
        kthread.sys_ns
    );
    assert!(
        stats.simulated_ns < 10 * MS + 600 * US,
        "{}",
        stats.simulated_ns
    );
}

/// Two CPUs, two user tasks computing `user_ms` each in 100 us ops, and the test thread doing
/// two atomic pieces of `kthread_ms` each, woken at the start.
fn two_cpus(user_ms: u64, kthread_ms: u64, ops_ns: u64) -> (Kernel, Vec<Task>) {
    let toml = ONE_CPU.replace("cpus = 1", "cpus = 2");
    let mut k = Kernel::new(&Scenario::from_toml_str(&toml).unwrap());
    let kind = KthreadKind::TestBusy {
        ns: kthread_ms * MS,
    };
    k.kthreads.kinds = vec![kind];
    k.kthreads.test_passes = 2;
    k.kthreads.wake(kind, 0);
    let tasks = (0..2)
        .map(|i| {
            let mm = k.new_mm(0, ContentClass::Usemem);
            let mut ops = vec![Op::Compute { ns: ops_ns }; (user_ms * MS / ops_ns) as usize];
            ops.push(Op::Exit);
            Task::new(format!("user{i}"), mm, 0, ops)
        })
        .collect();
    (k, tasks)
}

#[test]
fn an_idle_cpu_runs_a_ready_task_before_one_queued_from_a_cpu_whose_clock_is_ahead() {
    // The thread's 50 ms piece is atomic: it is queued again at 53 ms by its CPU. The other
    // CPU must not jump there while the two user tasks are ready now.
    let (mut k, mut tasks) = two_cpus(10, 50, 100 * US);
    run(&mut k, &mut tasks);
    for t in &tasks[..2] {
        let exit_ns = t.exited_at_ns.unwrap();
        assert!(exit_ns < 30 * MS, "{} exited at {exit_ns} ns", t.name);
    }
}

#[test]
fn user_computing_is_preempted_at_the_slice_end_when_another_task_waits() {
    // One Compute op of 30 ms each: without the tick, the thread (queued behind them) would
    // wait 30 ms for a CPU.
    let (mut k, mut tasks) = two_cpus(30, 1, 30 * MS);
    run(&mut k, &mut tasks);
    let kthread = &tasks[2];
    assert_eq!(kthread.sys_ns, 2 * MS);
    let user_end = tasks[..2]
        .iter()
        .map(|t| t.exited_at_ns.unwrap())
        .max()
        .unwrap();
    assert!(
        user_end > 30 * MS + MS,
        "the thread took CPU time from the users: {user_end}"
    );
}
