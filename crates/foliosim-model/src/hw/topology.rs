//! The CPUs' topology: sockets, last-level-cache domains (dies, CCXs), cores and SMT threads,
//! and how far apart two CPUs are (`Distance`), which prices what moves between them: a lock's
//! cache lines (hw/contention.rs), an IPI's acknowledgement (hw/ipi.rs).
//!
//! Placement: the scheduler gives a runnable task to the idle CPU with the lowest number
//! (sched/queue.rs). With a topology, simulated CPU `i` is the `i`-th CPU of the order in
//! which the kernel's load balancer fills an idle machine, so that rule places tasks as the
//! kernel would: one task per core before any SMT sibling (select_idle_core, and the SMT
//! domain's prefer_sibling), LLCs of a socket evenly (the MC level balances by nr_running),
//! and sockets evenly: sched_balance_find_dst_group keeps a forked task on its node only while
//! the nodes' idle CPUs differ by at most NUMA_IMBALANCE_MIN (2) tasks (adjust_numa_imbalance,
//! kernel/sched/fair.c), here taken as alternating sockets. A scenario with fewer CPUs than
//! the topology runs on the first `cpus` of that order (a cpuset).

use crate::scenario::TopologySpec;

/// How far apart two CPUs are, nearest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    SameCpu,
    /// SMT siblings: one core's L1 and L2.
    SmtSibling,
    /// Two cores sharing the last-level cache.
    SameLlc,
    /// Two LLC domains of one socket (CCXs, dies).
    OtherLlc,
    OtherSocket,
}

/// Where one CPU is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub socket: u32,
    /// LLC domain, numbered across the machine.
    pub llc: u32,
    /// Core, numbered across the machine.
    pub core: u32,
    pub thread: u32,
}

#[derive(Debug, Clone)]
pub struct Topology {
    pub spec: TopologySpec,
    /// Simulated CPU -> its place, in placement order.
    places: Vec<Place>,
}

impl Topology {
    /// The first `ncpus` CPUs (at most the topology's) of the placement order.
    pub fn new(spec: TopologySpec, ncpus: usize) -> Topology {
        let mut places = placement_order(&spec);
        assert!(ncpus <= places.len(), "validated: cpus within the topology");
        places.truncate(ncpus);
        Topology { spec, places }
    }

    pub fn nr_cpus(&self) -> usize {
        self.places.len()
    }

    pub fn place(&self, cpu: usize) -> Place {
        self.places[cpu]
    }

    pub fn distance(&self, a: usize, b: usize) -> Distance {
        let (p, q) = (self.places[a], self.places[b]);
        if a == b {
            Distance::SameCpu
        } else if p.core == q.core {
            Distance::SmtSibling
        } else if p.llc == q.llc {
            Distance::SameLlc
        } else if p.socket == q.socket {
            Distance::OtherLlc
        } else {
            Distance::OtherSocket
        }
    }
}

/// Every CPU of `spec` in the order an idle machine is filled (module doc): by SMT thread,
/// then round-robin over sockets, then over the LLCs of a socket, then cores in an LLC.
fn placement_order(spec: &TopologySpec) -> Vec<Place> {
    let llcs = spec.sockets * spec.llcs_per_socket;
    let mut order = Vec::with_capacity(spec.cpus() as usize);
    for thread in 0..spec.threads_per_core {
        for core_in_llc in 0..spec.cores_per_llc {
            for llc_in_socket in 0..spec.llcs_per_socket {
                for socket in 0..spec.sockets {
                    let llc = socket * spec.llcs_per_socket + llc_in_socket;
                    order.push(Place {
                        socket,
                        llc,
                        core: llc * spec.cores_per_llc + core_in_llc,
                        thread,
                    });
                }
            }
        }
    }
    debug_assert_eq!(
        order.len() as u32,
        llcs * spec.cores_per_llc * spec.threads_per_core
    );
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sockets: u32, llcs: u32, cores: u32, threads: u32) -> TopologySpec {
        TopologySpec {
            sockets,
            llcs_per_socket: llcs,
            cores_per_llc: cores,
            threads_per_core: threads,
        }
    }

    #[test]
    fn placement_spreads_sockets_then_llcs_then_cores_before_siblings() {
        let t = Topology::new(spec(2, 2, 2, 2), 16);
        let p: Vec<Place> = (0..16).map(|c| t.place(c)).collect();
        // Alternating sockets, then the other LLC of each socket.
        assert_eq!((p[0].socket, p[1].socket, p[2].socket), (0, 1, 0));
        assert_ne!(p[0].llc, p[2].llc);
        // No SMT sibling before every core has a task.
        assert!(p[..8].iter().all(|q| q.thread == 0));
        assert!(p[8..].iter().all(|q| q.thread == 1));
        let mut cores: Vec<u32> = p[..8].iter().map(|q| q.core).collect();
        cores.sort();
        cores.dedup();
        assert_eq!(cores.len(), 8);
    }

    #[test]
    fn distances_by_what_two_cpus_share() {
        let t = Topology::new(spec(2, 2, 2, 2), 16);
        let find = |f: &dyn Fn(&Place) -> bool| (0..16).find(|&c| f(&t.place(c))).unwrap();
        let p0 = t.place(0);
        let sibling = find(&|q| q.core == p0.core && q.thread == 1);
        let same_llc = find(&|q| q.llc == p0.llc && q.core != p0.core);
        let other_llc = find(&|q| q.socket == p0.socket && q.llc != p0.llc);
        let other_socket = find(&|q| q.socket != p0.socket);
        assert_eq!(t.distance(0, 0), Distance::SameCpu);
        assert_eq!(t.distance(0, sibling), Distance::SmtSibling);
        assert_eq!(t.distance(0, same_llc), Distance::SameLlc);
        assert_eq!(t.distance(0, other_llc), Distance::OtherLlc);
        assert_eq!(t.distance(other_socket, 0), Distance::OtherSocket);
    }

    #[test]
    fn fewer_cpus_take_the_first_of_the_order() {
        let t = Topology::new(spec(2, 1, 4, 2), 4);
        assert_eq!(t.nr_cpus(), 4);
        assert_eq!(
            (0..4).map(|c| t.place(c).socket).collect::<Vec<_>>(),
            [0, 1, 0, 1]
        );
    }
}
