//! Inter-processor interrupts, both ways: what the sender waits for (the IPIs go out
//! together, then it spins until the farthest target acknowledges) and what each receiver
//! pays (interrupt entry and exit; the flush it runs and the TLB refill after it are the TLB
//! model's: mm/tlb/x86.rs, hw/tlb_cache.rs). A KVM guest whose costs are bare metal's pays a
//! VM exit on each side (`machine.kvm_guest`).

use super::contention::line_transfer_ns;
use super::topology::{Distance, Topology};
use crate::engine::cost::CostModel;

/// Who pays what for IPIs on this machine.
#[derive(Debug, Clone)]
pub struct Ipi {
    pub kvm_guest: bool,
}

impl Ipi {
    /// The sender's wait for an IPI round to `remote` other CPUs whose farthest is
    /// `farthest` (None without a topology): the measured or cited round trip to one CPU,
    /// one more ICR write per further target, and when a target is farther than the sender's
    /// LLC the call-function data's line and the ack's crossing there and back
    /// (smp_call_function_many_cond / csd_lock_wait).
    pub fn send_ns(&self, cost: &CostModel, remote: u64, farthest: Option<Distance>) -> u64 {
        if remote == 0 {
            return 0;
        }
        let mut ns = cost.tlb_flush_ipi_ns + cost.tlb_ipi_extra_cpu_ns * (remote - 1);
        if let Some(d) = farthest.filter(|&d| d > Distance::SameLlc) {
            let near = line_transfer_ns(cost, Distance::SameLlc);
            ns += 2 * line_transfer_ns(cost, d).saturating_sub(near);
        }
        if self.kvm_guest {
            // Each ICR write exits to the host (no IPI virtualization).
            ns += cost.kvm_ipi_exit_ns * remote;
        }
        ns
    }

    /// What one receiver pays besides the work the IPI asks of it: interrupt entry and exit
    /// (`tlb_ipi_receive_ns`: on this VM the delivery's exits, measured), and in a KVM
    /// guest the injection's exit.
    pub fn receive_ns(&self, cost: &CostModel) -> u64 {
        cost.tlb_ipi_receive_ns
            + if self.kvm_guest {
                cost.kvm_ipi_exit_ns
            } else {
                0
            }
    }
}

/// The farthest of `targets` from `from`, None without a topology.
#[inline]
pub fn farthest(
    topology: Option<&Topology>,
    from: usize,
    targets: impl Iterator<Item = usize>,
) -> Option<Distance> {
    let t = topology?;
    targets.map(|c| t.distance(from, c)).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::TopologySpec;

    fn cost() -> CostModel {
        let mut c = CostModel::profile("vm-6.18-2cpu").unwrap();
        c.set("tlb_flush_ipi_ns", 1000);
        c.set("tlb_ipi_extra_cpu_ns", 100);
        c.set("line_transfer_llc_ns", 50);
        c.set("line_transfer_socket_ns", 200);
        c.set("tlb_ipi_receive_ns", 300);
        c.set("kvm_ipi_exit_ns", 1500);
        c
    }

    #[test]
    fn send_grows_with_targets_and_spread() {
        let c = cost();
        let bare = Ipi { kvm_guest: false };
        assert_eq!(bare.send_ns(&c, 0, None), 0);
        assert_eq!(bare.send_ns(&c, 1, None), 1000);
        assert_eq!(bare.send_ns(&c, 3, None), 1200);
        assert_eq!(bare.send_ns(&c, 3, Some(Distance::SameLlc)), 1200);
        assert_eq!(bare.send_ns(&c, 3, Some(Distance::OtherSocket)), 1500);
        let guest = Ipi { kvm_guest: true };
        assert_eq!(guest.send_ns(&c, 3, None), 1200 + 3 * 1500);
        assert_eq!(bare.receive_ns(&c), 300);
        assert_eq!(guest.receive_ns(&c), 1800);
    }

    #[test]
    fn farthest_target_by_topology() {
        let t = Topology::new(
            TopologySpec {
                sockets: 2,
                llcs_per_socket: 1,
                cores_per_llc: 2,
                threads_per_core: 1,
            },
            4,
        );
        assert_eq!(farthest(None, 0, 1..4), None);
        assert_eq!(
            farthest(Some(&t), 0, [2].into_iter()),
            Some(Distance::SameLlc)
        );
        assert_eq!(farthest(Some(&t), 0, 1..4), Some(Distance::OtherSocket));
        assert_eq!(farthest(Some(&t), 0, std::iter::empty()), None);
    }
}
