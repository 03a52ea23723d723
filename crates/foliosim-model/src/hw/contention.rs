//! Cache-line contention: what moving a cache line between two CPUs costs, by how far apart
//! they are (hw/topology.rs), and where the kernel pays it. A spinlock's handoff moves the
//! lock word and the data it guards from the previous holder's cache to the new holder's
//! (queued_spin_lock_slowpath hands the lock down its MCS queue, the next waiter's node and
//! the lock word: the same two caches). So the cost of a contended lock grows with the number
//! of CPUs taking it (more handoffs between different CPUs, fewer re-acquisitions by the
//! same one) and with their spread (farther handoffs), as on the machine. The engine's locks
//! pay it through a table built here (engine::line), as the engine knows no topology.

use super::topology::{Distance, Topology};
use crate::engine::cost::CostModel;
use crate::engine::line::HandoffTable;

/// Lines a lock handoff moves: the lock word and the first line of the data it guards.
/// estimate: `lock_handoff_ns` ("a few cache lines") was priced as 2 lines of 100 ns.
pub const LOCK_HANDOFF_LINES: u64 = 2;

/// One line moved between two CPUs `distance` apart (nothing moves within one CPU).
pub fn line_transfer_ns(cost: &CostModel, distance: Distance) -> u64 {
    match distance {
        Distance::SameCpu => 0,
        Distance::SmtSibling => cost.line_transfer_smt_ns,
        Distance::SameLlc => cost.line_transfer_llc_ns,
        Distance::OtherLlc => cost.line_transfer_die_ns,
        Distance::OtherSocket => cost.line_transfer_socket_ns,
    }
}

/// A lock's handoff from CPU `from` to CPU `to`.
pub fn lock_handoff_ns(topology: &Topology, cost: &CostModel, from: usize, to: usize) -> u64 {
    LOCK_HANDOFF_LINES * line_transfer_ns(cost, topology.distance(from, to))
}

/// The one-line transfer table every `SharedLine` of a run pays from (`Ctx::line`): an
/// atomic on a line another CPU wrote last moves that line (page_counter usage, vmstat
/// folds, the mmap_lock's count).
pub fn line_table(topology: &Topology, cost: &CostModel) -> &'static HandoffTable {
    HandoffTable::intern(topology.nr_cpus(), |from, to| {
        line_transfer_ns(cost, topology.distance(from, to))
            .try_into()
            .unwrap_or(u32::MAX)
    })
}

/// The handoff table every lock of a run uses (`Ctx::handoff`).
pub fn handoff_table(topology: &Topology, cost: &CostModel) -> &'static HandoffTable {
    HandoffTable::intern(topology.nr_cpus(), |from, to| {
        lock_handoff_ns(topology, cost, from, to)
            .try_into()
            .unwrap_or(u32::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::lock::SimLock;
    use crate::engine::Ctx;
    use crate::scenario::TopologySpec;

    /// Two sockets of two LLCs of four cores, two threads each: 32 CPUs.
    fn topology() -> Topology {
        Topology::new(
            TopologySpec {
                sockets: 2,
                llcs_per_socket: 2,
                cores_per_llc: 4,
                threads_per_core: 2,
            },
            32,
        )
    }

    fn cost() -> CostModel {
        let mut c = CostModel::profile("vm-6.18-2cpu").unwrap();
        for (name, ns) in [
            ("line_transfer_smt_ns", 10),
            ("line_transfer_llc_ns", 50),
            ("line_transfer_die_ns", 90),
            ("line_transfer_socket_ns", 200),
        ] {
            assert!(c.set(name, ns));
        }
        c
    }

    /// Mean time per acquisition of one lock taken round-robin by `cpus`, each holding it
    /// 100 ns, all arriving at once (a fully contended lock).
    fn ns_per_acquisition(cpus: &[usize]) -> f64 {
        let t = topology();
        let table = handoff_table(&t, &cost());
        let mut lock = SimLock::new("test", crate::cpu_cost::ZONE_LOCK);
        let mut end_ns = 0;
        for _round in 0..50 {
            for &cpu in cpus {
                let mut ctx = Ctx {
                    handoff: Some(table),
                    lock_handoff_ns: 200,
                    ..Ctx::new(cpu, 0)
                };
                lock.hold(&mut ctx, 100);
                end_ns = end_ns.max(ctx.now_ns);
            }
        }
        end_ns as f64 / (50 * cpus.len()) as f64
    }

    #[test]
    fn the_handoff_costs_the_distance_of_the_previous_holder() {
        let (t, c) = (topology(), cost());
        let by = |d| (1..32).find(|&b| t.distance(0, b) == d).unwrap();
        let ns = |d| lock_handoff_ns(&t, &c, 0, by(d));
        assert_eq!(lock_handoff_ns(&t, &c, 0, 0), 0);
        assert_eq!(ns(Distance::SmtSibling), 20);
        assert_eq!(ns(Distance::SameLlc), 100);
        assert_eq!(ns(Distance::OtherLlc), 180);
        assert_eq!(ns(Distance::OtherSocket), 400);
    }

    #[test]
    fn contention_grows_with_contenders_and_their_spread() {
        let t = topology();
        let in_llc: Vec<usize> = (0..32)
            .filter(|&c| t.place(c).llc == t.place(0).llc && t.place(c).thread == 0)
            .collect();
        let one = ns_per_acquisition(&[0]);
        assert_eq!(one, 100.0, "a single CPU pays no contention");
        let two_near = ns_per_acquisition(&in_llc[..2]);
        let four_near = ns_per_acquisition(&in_llc[..4]);
        // Placement order alternates sockets: CPUs 0..4 span both sockets and all LLCs.
        let four_spread = ns_per_acquisition(&[0, 1, 2, 3]);
        let all = ns_per_acquisition(&(0..32).collect::<Vec<_>>());
        assert!(one < two_near, "{one} {two_near}");
        assert!(two_near <= four_near, "{two_near} {four_near}");
        assert!(four_near < four_spread, "{four_near} {four_spread}");
        assert!(four_spread <= all, "{four_spread} {all}");
        // The handoffs of the spread set are cross-socket or cross-LLC: between 180 and 400.
        assert!((280.0..=500.0).contains(&four_spread), "{four_spread}");
    }

    #[test]
    fn unmeasured_machines_make_every_handoff_the_flat_one() {
        // Where no CPU-to-CPU cost was measured, a topology alone moves no handoff.
        let t = topology();
        for profile in ["x86-server", "arm64-vm-8cpu"] {
            let c = CostModel::profile(profile).unwrap();
            for to in 1..32 {
                assert_eq!(lock_handoff_ns(&t, &c, 0, to), c.lock_handoff_ns);
            }
        }
    }

    /// usemem under a memcg limit, swapping to a RAM disk: zone, LRU and swap locks contended.
    /// The JSON, the locks' hold time, and the shared lines' transfer time.
    fn run(machine: &str) -> (String, u64, u64) {
        run_nproc(machine, 4)
    }

    fn run_nproc(machine: &str, nproc: u32) -> (String, u64, u64) {
        let text = format!(
            "seed = 1\n[machine]\nmemory = \"256M\"\n{machine}\n\
             [[machine.swap]]\nkind = \"ramdisk\"\nsize = \"128M\"\n\
             [[memcg]]\nname = \"m\"\nmax = \"32M\"\n\
             [[workload]]\nkind = \"usemem\"\nnproc = {nproc}\nsize = \"12M\"\nmemcg = \"m\"\n"
        );
        let s = crate::Scenario::from_toml_str(&text).unwrap();
        let r = crate::run(&s).unwrap();
        let lock_ns = r.locks.iter().map(|l| l.stats.hold_ns_total).sum();
        let line_ns = r
            .cpu_time_ns
            .iter()
            .filter(|(name, _)| name.starts_with("line transfers"))
            .map(|(_, ns)| ns)
            .sum();
        (serde_json::to_string(&r).unwrap(), lock_ns, line_ns)
    }

    #[test]
    fn a_topology_at_this_vms_costs_prices_the_shared_lines() {
        // What a topology adds at this VM's costs is the atomics on shared lines, absent
        // without one.
        let flat = run("cpus = 4");
        let topo = run("cpus = 4\n[machine.topology]\nsockets = 2\ncores_per_llc = 2");
        assert_eq!(flat.2, 0, "no topology: no line priced");
        assert!(
            topo.2 > 0,
            "four CPUs charging one memcg bounce its counters"
        );
    }

    #[test]
    fn a_single_cpu_pays_no_contention_and_spread_cpus_pay_more() {
        // One CPU: no handoff between CPUs, so the profile's line costs change nothing.
        let one = run("cpus = 1");
        let one_spr = run("cpus = 1\nprofile = \"sapphire-rapids-2s-112c\"");
        assert_eq!(one.1, one_spr.1, "lock hold time");
        assert_eq!(
            one_spr.2, 0,
            "one CPU: every shared line stays in its cache"
        );
        // Four CPUs across two sockets hand the locks over UPI half the time: more hold time
        // than four in one LLC, at the same profile's costs.
        let spr = "cpus = 4\nprofile = \"sapphire-rapids-2s-112c\"\n[machine.topology]";
        let four = run(&format!("{spr}\nsockets = 1\ncores_per_llc = 4"));
        let four_spr = run(&format!("{spr}\nsockets = 2\ncores_per_llc = 2"));
        assert!(four_spr.1 > four.1, "{} {}", four_spr.1, four.1);
    }

    #[test]
    fn the_shared_lines_cost_grows_with_contenders_and_their_distance() {
        // The page_counter, vmstat and mmap_lock lines at the Sapphire Rapids profile's costs:
        // one process pays nothing; two and four in one LLC pay more and more; four spread
        // over two sockets pay more than four in one LLC.
        let spr = "profile = \"sapphire-rapids-2s-112c\"\n[machine.topology]";
        let near = |n: u32| {
            let machine = format!("cpus = {n}\n{spr}\nsockets = 1\ncores_per_llc = 4");
            run_nproc(&machine, n).2
        };
        let (one, two, four) = (near(1), near(2), near(4));
        let spread = run_nproc(
            &format!("cpus = 4\n{spr}\nsockets = 2\ncores_per_llc = 2"),
            4,
        )
        .2;
        assert_eq!(one, 0);
        assert!(one < two && two < four, "{one} {two} {four}");
        assert!(four < spread, "{four} {spread}");
    }
}
