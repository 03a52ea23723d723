//! `foliosim calibrate --live`: the model's CPU-to-CPU costs measured on this machine with
//! pinned threads, touching no host setting (no sysfs, no swap, no cgroup):
//! - cache-line transfer by distance (SMT sibling, same LLC, other LLC, other socket): two
//!   threads bounce one line with compare-and-swap; round trip over 2, the method of the
//!   published core-to-core tables the built-in profiles cite (hw/profile/);
//! - a contended lock's handoff: a lock word and the line it guards passed between two CPUs,
//!   by spinning (the model's `lock_handoff_ns`: two lines) and by futex sleep and wake;
//! - IPIs both ways: mprotect of a page another thread of this process is using on another
//!   CPU forces a TLB-shootdown IPI (flush_tlb_mm_range); membarrier(PRIVATE_EXPEDITED) sends
//!   a bare IPI. The sender's extra time per IPI against the same calls with no other thread
//!   running, the IPIs counted in /proc/interrupts; the receiver's time stolen per IPI as the
//!   gaps in a loop that reads the clock.
//!
//! Each figure is the median of several repetitions, each a median or mean over many
//! operations, so a busy machine (other work preempting a pinned thread) moves it little.

use anyhow::{bail, Context, Result};
use foliosim::hw::topology::Distance;
use foliosim::scenario::TopologySpec;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

/// One CPU's place, as sysfs tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuPlace {
    pub cpu: usize,
    pub package: u32,
    /// The CPUs sharing its last-level cache (the highest cache/indexN level).
    pub llc: Vec<usize>,
    /// Its SMT siblings, itself included.
    pub siblings: Vec<usize>,
}

/// A kernel CPU list ("0-3,8,10-11").
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = vec![];
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("cpu list {text:?}: {s:?} is not a CPU number"))
        };
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(num(a)?..=num(b)?),
            None => cpus.push(num(part)?),
        }
    }
    Ok(cpus)
}

pub fn distance(a: &CpuPlace, b: &CpuPlace) -> Distance {
    if a.cpu == b.cpu {
        Distance::SameCpu
    } else if a.siblings.contains(&b.cpu) {
        Distance::SmtSibling
    } else if a.llc.contains(&b.cpu) {
        Distance::SameLlc
    } else if a.package == b.package {
        Distance::OtherLlc
    } else {
        Distance::OtherSocket
    }
}

/// The cost a distance's measurement sets.
pub fn line_transfer_cost(d: Distance) -> Option<&'static str> {
    match d {
        Distance::SameCpu => None,
        Distance::SmtSibling => Some("line_transfer_smt_ns"),
        Distance::SameLlc => Some("line_transfer_llc_ns"),
        Distance::OtherLlc => Some("line_transfer_die_ns"),
        Distance::OtherSocket => Some("line_transfer_socket_ns"),
    }
}

/// The topology as a scenario states it, when every socket has as many LLCs, every LLC as
/// many cores and every core as many threads (else None: the profile gets no topology).
pub fn topology_spec(places: &[CpuPlace]) -> Option<TopologySpec> {
    // socket -> LLC (its CPU list) -> the cores in it (their sibling lists)
    let mut sockets: BTreeMap<u32, BTreeMap<Vec<usize>, BTreeSet<Vec<usize>>>> = BTreeMap::new();
    for p in places {
        sockets
            .entry(p.package)
            .or_default()
            .entry(p.llc.clone())
            .or_default()
            .insert(p.siblings.clone());
    }
    let llcs: Vec<usize> = sockets.values().map(|s| s.len()).collect();
    let cores: Vec<usize> = sockets
        .values()
        .flat_map(|s| s.values().map(|c| c.len()))
        .collect();
    let threads: Vec<usize> = places.iter().map(|p| p.siblings.len()).collect();
    let uniform = |v: &[usize]| v.windows(2).all(|w| w[0] == w[1]);
    if places.is_empty() || !uniform(&llcs) || !uniform(&cores) || !uniform(&threads) {
        return None;
    }
    let spec = TopologySpec {
        sockets: sockets.len() as u32,
        llcs_per_socket: llcs[0] as u32,
        cores_per_llc: cores[0] as u32,
        threads_per_core: threads[0] as u32,
    };
    (spec.cpus() as usize == places.len()).then_some(spec)
}

/// The pairs to measure: the first CPU with the first other CPU at each distance.
pub fn pairs(places: &[CpuPlace]) -> Vec<(Distance, usize, usize)> {
    let Some(first) = places.first() else {
        return vec![];
    };
    let mut found: BTreeMap<Distance, usize> = BTreeMap::new();
    for p in &places[1..] {
        found.entry(distance(first, p)).or_insert(p.cpu);
    }
    found
        .into_iter()
        .map(|(d, cpu)| (d, first.cpu, cpu))
        .collect()
}

/// Per-CPU counts of one row of /proc/interrupts ("TLB", "CAL"), by CPU number.
pub fn irq_counts(text: &str, row: &str) -> Option<BTreeMap<usize, u64>> {
    let mut lines = text.lines();
    let cpus: Vec<usize> = lines
        .next()?
        .split_whitespace()
        .map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect::<Option<_>>()?;
    let line = lines.find(|l| l.trim_start().starts_with(&format!("{row}:")))?;
    let counts = line.split_once(':')?.1.split_whitespace();
    let values: Vec<u64> = counts
        .take(cpus.len())
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    (values.len() == cpus.len()).then(|| cpus.into_iter().zip(values).collect())
}

pub fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "a median of no samples");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn read(path: &str) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {path}"))
}

/// The CPUs this process may run on (its affinity mask), online ones only.
fn allowed_cpus() -> Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes at most its size.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
        }
        set
    };
    let online =
        parse_cpu_list(&read("/sys/devices/system/cpu/online")?).map_err(anyhow::Error::msg)?;
    // SAFETY: CPU_ISSET reads the set within its size.
    Ok(online
        .into_iter()
        .filter(|&c| c < libc::CPU_SETSIZE as usize && unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

fn read_place(cpu: usize) -> Result<CpuPlace> {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}");
    let list = |p: &str| -> Result<Vec<usize>> {
        parse_cpu_list(&read(&format!("{dir}/{p}"))?).map_err(anyhow::Error::msg)
    };
    let package = read(&format!("{dir}/topology/physical_package_id"))?
        .trim()
        .parse()
        .context("physical_package_id")?;
    // The last-level cache: the cache index with the highest level.
    let mut llc = (0, vec![cpu]);
    for i in 0..8 {
        let Ok(level) = read(&format!("{dir}/cache/index{i}/level")) else {
            break;
        };
        let level: u32 = level.trim().parse().unwrap_or(0);
        if level >= llc.0 {
            llc = (level, list(&format!("cache/index{i}/shared_cpu_list"))?);
        }
    }
    Ok(CpuPlace {
        cpu,
        package,
        llc: llc.1,
        siblings: list("topology/thread_siblings_list")?,
    })
}

pub fn read_places() -> Result<Vec<CpuPlace>> {
    allowed_cpus()?.into_iter().map(read_place).collect()
}

/// Pin the calling thread to `cpu`.
pub(crate) fn pin(cpu: usize) -> Result<()> {
    // SAFETY: a zeroed cpu_set_t with one bit set; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            bail!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A value alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
struct Line<T>(T);

/// Run `side(0)` on CPU `a` and `side(1)` on CPU `b`, each in its own pinned thread (the
/// caller's affinity is left alone), started together; both results.
fn pair<T: Send>(a: usize, b: usize, side: impl Fn(u32) -> T + Sync) -> Result<(T, T)> {
    let barrier = Barrier::new(2);
    let run = |me: u32, cpu: usize| -> Result<T> {
        let pinned = pin(cpu);
        barrier.wait();
        pinned?;
        Ok(side(me))
    };
    std::thread::scope(|s| {
        let first = s.spawn(|| run(0, a));
        let second = s.spawn(|| run(1, b));
        let first = first.join().expect("measuring thread");
        let second = second.join().expect("measuring thread");
        Ok((first?, second?))
    })
}

/// ns per one-way line transfer between CPUs `a` and `b`: the median over `samples` of
/// `round_trips` compare-and-swap round trips over 2. Short samples, so that on a busy
/// machine most of them fall between two preemptions.
pub fn line_transfer_ns(a: usize, b: usize, round_trips: u32, samples: usize) -> Result<f64> {
    let flag = Line(AtomicBool::new(false));
    let (per, _) = pair(a, b, |me| {
        let (from, to) = (me == 1, me == 0);
        let mut per = Vec::with_capacity(samples);
        for _ in 0..samples {
            let t = Instant::now();
            for _ in 0..round_trips {
                while flag
                    .0
                    .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    std::hint::spin_loop();
                }
            }
            per.push(t.elapsed().as_nanos() as f64 / round_trips as f64 / 2.0);
        }
        per
    })?;
    Ok(median(per))
}

/// ns per handoff of a lock between CPUs `a` and `b` taking strict turns: the lock word
/// (whose turn) and one guarded line move each time, the waiter spinning (`futex` false) or
/// sleeping in FUTEX_WAIT until FUTEX_WAKE (`futex` true). The median over `samples` of
/// `handoffs` handoffs each.
pub fn lock_handoff_ns(
    a: usize,
    b: usize,
    handoffs: u32,
    samples: usize,
    futex: bool,
) -> Result<f64> {
    let turn = Line(AtomicU32::new(0));
    let data = Line(AtomicU64::new(0));
    let (per, _) = pair(a, b, |me| {
        let mut per = Vec::with_capacity(samples);
        for _ in 0..samples {
            let t = Instant::now();
            for _ in 0..handoffs.div_ceil(2) {
                while turn.0.load(Ordering::Acquire) != me {
                    if futex {
                        futex_wait(&turn.0, 1 - me);
                    } else {
                        std::hint::spin_loop();
                    }
                }
                // A plain read and write of the guarded line (the turn orders them).
                data.0
                    .store(data.0.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                turn.0.store(1 - me, Ordering::Release);
                if futex {
                    futex_wake(&turn.0);
                }
            }
            per.push(t.elapsed().as_nanos() as f64 / (handoffs.div_ceil(2) * 2) as f64);
        }
        per
    })?;
    Ok(median(per))
}

fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT on a live u32; returns at once if the word changed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// What the CPU-to-CPU part of calibrate found: costs with their sources, every raw figure,
/// the topology, and what could not be measured here.
#[derive(Debug, Default)]
pub struct HwTables {
    pub costs: BTreeMap<String, f64>,
    pub sources: BTreeMap<String, String>,
    pub measured: BTreeMap<String, f64>,
    pub topology: Option<TopologySpec>,
    pub notes: BTreeMap<String, String>,
}

impl HwTables {
    pub(crate) fn set(&mut self, cost: &str, ns: f64, source: String) {
        self.costs.insert(cost.into(), ns.round());
        self.sources.insert(cost.into(), source);
    }
}

/// How much work a measurement does: repetitions (the median is kept) and their sizes.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub reps: usize,
    pub round_trips: u32,
    pub samples: usize,
    pub handoffs: u32,
    /// Length of each timed window of IPI-sending operations, ns.
    pub ipi_window_ns: u128,
}

impl Effort {
    pub fn new(quick: bool) -> Effort {
        // Short samples (200 round trips or handoffs, ~0.1 ms) so that on a busy machine
        // most fall between two preemptions; the median sample is kept.
        let (reps, samples, ipi_window_ns) = if quick {
            (3, 51, 50_000_000)
        } else {
            (7, 201, 200_000_000)
        };
        Effort {
            reps,
            round_trips: 200,
            samples,
            handoffs: 200,
            ipi_window_ns,
        }
    }
}

fn repeat(reps: usize, mut f: impl FnMut() -> Result<f64>) -> Result<f64> {
    Ok(median(
        (0..reps).map(|_| f()).collect::<Result<Vec<f64>>>()?,
    ))
}

/// Line transfers and lock handoffs, one pair of CPUs per distance present.
pub fn measure(effort: Effort, progress: &mut dyn FnMut(&str)) -> Result<HwTables> {
    let places = read_places()?;
    let mut t = HwTables {
        topology: topology_spec(&places),
        ..HwTables::default()
    };
    let e = effort;
    let mut handoff_set = false;
    for (d, a, b) in pairs(&places) {
        let Some(cost) = line_transfer_cost(d) else {
            continue;
        };
        let class = cost
            .trim_start_matches("line_transfer_")
            .trim_end_matches("_ns");
        progress(&format!(
            "line transfer and lock handoff, CPU {a} and {b} ({class})"
        ));
        let ns = repeat(e.reps, || line_transfer_ns(a, b, e.round_trips, e.samples))?;
        t.measured
            .insert(format!("line_transfer_{class}_cpu{a}_cpu{b}_ns"), ns);
        t.set(cost, ns, format!(
            "measured: `foliosim calibrate --live`, CPUs {a} and {b} bouncing one line by compare-and-swap, round trip / 2; median of {} repetitions of the median of {} x {} round trips",
            e.reps, e.samples, e.round_trips));
        let spin = repeat(e.reps, || {
            lock_handoff_ns(a, b, e.handoffs, e.samples, false)
        })?;
        let futex = repeat(e.reps, || {
            lock_handoff_ns(a, b, e.handoffs / 10, e.samples, true)
        })?;
        t.measured
            .insert(format!("lock_handoff_spin_{class}_ns"), spin);
        t.measured
            .insert(format!("lock_handoff_futex_{class}_ns"), futex);
        // The flat handoff (machines without a topology): the nearest pair of two cores.
        if d != Distance::SmtSibling && !handoff_set {
            handoff_set = true;
            t.set("lock_handoff_ns", spin, format!(
                "measured: `foliosim calibrate --live`, CPUs {a} and {b} ({class}) taking turns at a spinning lock whose holder updates one guarded line (the lock word and that line move each handoff); median of {} repetitions of the median of {} x {} handoffs",
                e.reps, e.samples, e.handoffs));
        }
    }
    if places.len() < 2 {
        t.notes.insert(
            "line_transfer".into(),
            "one CPU allowed: nothing to bounce between".into(),
        );
    }
    let cpus: Vec<usize> = places.iter().map(|p| p.cpu).collect();
    crate::calibrate_ipi::measure(&cpus, e, &mut t, progress);
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(cpu: usize, package: u32, llc: &str, siblings: &str) -> CpuPlace {
        CpuPlace {
            cpu,
            package,
            llc: parse_cpu_list(llc).unwrap(),
            siblings: parse_cpu_list(siblings).unwrap(),
        }
    }

    /// 2 sockets x 2 LLCs x 2 cores x 2 threads, Linux numbering (siblings c and c + 8).
    fn machine() -> Vec<CpuPlace> {
        (0..16)
            .map(|c| {
                let core = c % 8;
                let llc = core / 2;
                let l = format!(
                    "{},{},{},{}",
                    llc * 2,
                    llc * 2 + 1,
                    llc * 2 + 8,
                    llc * 2 + 9
                );
                place(c, (core / 4) as u32, &l, &format!("{core},{}", core + 8))
            })
            .collect()
    }

    #[test]
    fn cpu_lists_parse_and_errors_name_the_text() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert!(parse_cpu_list("0-x").unwrap_err().contains("\"0-x\""));
    }

    #[test]
    fn topology_and_pairs_from_places() {
        let m = machine();
        let spec = topology_spec(&m).unwrap();
        assert_eq!(
            (
                spec.sockets,
                spec.llcs_per_socket,
                spec.cores_per_llc,
                spec.threads_per_core
            ),
            (2, 2, 2, 2)
        );
        let p = pairs(&m);
        assert_eq!(
            p,
            vec![
                (Distance::SmtSibling, 0, 8),
                (Distance::SameLlc, 0, 1),
                (Distance::OtherLlc, 0, 2),
                (Distance::OtherSocket, 0, 4),
            ]
        );
        // A CPU missing (offline or outside the cpuset): no uniform topology, pairs remain.
        assert!(topology_spec(&m[..15]).is_none());
        assert_eq!(pairs(&m[..1]), vec![]);
        let vm = vec![place(0, 0, "0-1", "0"), place(1, 0, "0-1", "1")];
        assert_eq!(topology_spec(&vm).unwrap().cpus(), 2);
        assert_eq!(pairs(&vm), vec![(Distance::SameLlc, 0, 1)]);
    }

    #[test]
    fn interrupt_rows_parse_by_cpu() {
        let text = "           CPU0       CPU1       \n  0:         33          0   IO-APIC    2-edge      timer\nCAL:      1200       3400   Function call interrupts\nTLB:        17         25   TLB shootdowns\n";
        let tlb = irq_counts(text, "TLB").unwrap();
        assert_eq!(tlb, BTreeMap::from([(0, 17), (1, 25)]));
        assert_eq!(irq_counts(text, "CAL").unwrap()[&1], 3400);
        assert!(irq_counts(text, "NMI").is_none());
        assert_eq!(median(vec![3.0, 1.0, 2.0, 100.0, 2.5]), 2.5);
    }

    /// Not live: two threads on whatever CPUs there are give a positive, finite figure.
    #[test]
    fn a_ping_pong_on_this_machine_gives_a_figure() {
        let cpus = allowed_cpus().unwrap();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        if a == b {
            return; // one CPU: nothing to bounce between
        }
        let ns = line_transfer_ns(a, b, 200, 5).unwrap();
        assert!(ns.is_finite() && ns > 0.0 && ns < 1e6, "{ns}");
        let spin = lock_handoff_ns(a, b, 200, 5, false).unwrap();
        let futex = lock_handoff_ns(a, b, 20, 5, true).unwrap();
        assert!(futex > 0.0 && futex < 1e8, "{futex}");
        assert!(spin > 0.0 && spin < 1e6, "{spin}");
    }
}
