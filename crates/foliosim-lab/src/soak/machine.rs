//! A random small machine: CPUs, memory, TLB kind, cost profile, swap devices, disk, IAA.

use super::gen::Gen;
use crate::engine::cost::CostModel;
use crate::scenario::{
    Bytes, DiskSpec, IaaSpec, Machine, NodeSpec, SwapDeviceKind, SwapDeviceSpec, TlbKind,
};

pub const SWAP_KINDS: [SwapDeviceKind; 6] = [
    SwapDeviceKind::Ramdisk,
    SwapDeviceKind::Ssd,
    SwapDeviceKind::Hdd,
    SwapDeviceKind::Zram,
    SwapDeviceKind::File,
    SwapDeviceKind::Loop,
];

/// `cluster_lists`: the kernel's allocator keeps cluster lists (mthp_reserve_percent needs it).
/// `disk_bytes`: the files' total, when workloads need a disk.
pub fn machine(g: &mut Gen, cluster_lists: bool, disk_bytes: Option<u64>) -> Machine {
    let cpus = g.u32(1, 4);
    let mut swap_devices = Vec::new();
    for _ in 0..g.pick(&[0, 1, 1, 1, 2, 3]) {
        swap_devices.push(swap_device(g, cluster_lists));
    }
    Machine {
        cpus,
        memory: Bytes(g.pick(&[24u64, 32, 48, 64, 96, 128]) << 20),
        cost_profile: g.pick(CostModel::PROFILES).to_string(),
        swap_devices,
        sched_slice_ns: g.pick(&[10_000, 100_000, 750_000, 3_000_000]),
        tlb: g.pick(&[TlbKind::X86Ipi, TlbKind::Arm64Tlbi]),
        memory_bandwidth_bytes_per_s: g.pick(&[0, 1_000_000_000, 28_000_000_000]),
        iaa: g.maybe(15, |g| IaaSpec {
            sockets: g.u32(1, cpus.min(2)),
            devices_per_socket: g.u32(1, 4),
            verify_compress: g.chance(50),
            batch: g.chance(50),
        }),
        disk: disk_bytes.map(|bytes| DiskSpec {
            kind: g.pick(&[
                SwapDeviceKind::Ssd,
                SwapDeviceKind::Hdd,
                SwapDeviceKind::Ramdisk,
            ]),
            size: Bytes((bytes + g.size(1 << 20, 64 << 20, 1 << 20)).max(1 << 20)),
            latency_ns: g.maybe(20, |g| g.range(0, 2_000_000)),
            bandwidth_bytes_per_s: g.maybe(20, |g| g.range(1 << 20, 1 << 34)),
            read_ahead_kb: g.pick(&[0, 4, 32, 128, 512]),
        }),
        // A memory-only lower node (tiering with numa_balancing = 2 and demotion).
        nodes: g
            .maybe(30, |g| NodeSpec {
                memory: Bytes(g.pick(&[16u64, 32, 64, 128]) << 20),
                cpus: 0,
                socket: None,
                latency_ns: g.maybe(50, |g| g.range(50, 500)),
            })
            .into_iter()
            .collect(),
        node_distance: None,
        tlb_geometry: None,
        // Machine profiles and topologies are not drawn: the soak's sequences stay as they
        // were (a topology changes costs, not kernel paths).
        profile: None,
        topology: None,
        kvm_guest: false,
        kernel_memory: false,
        start: None,
    }
}

fn swap_device(g: &mut Gen, cluster_lists: bool) -> SwapDeviceSpec {
    let kind = g.pick(&SWAP_KINDS);
    let mut d = SwapDeviceSpec::new(kind, Bytes(g.size(4 << 20, 64 << 20, 1 << 20)));
    d.priority = g.u32(0, 12) as i32 - 2;
    d.latency_ns = g.maybe(20, |g| g.range(0, 5_000_000));
    d.bandwidth_bytes_per_s = g.maybe(20, |g| g.range(1 << 20, 1 << 34));
    if kind == SwapDeviceKind::Ssd {
        d.discard = g.chance(40);
        d.erase_block = g.maybe(30, |g| Bytes(64 << (10 + g.range(0, 4))));
    }
    if cluster_lists && g.chance(30) {
        d.mthp_reserve_percent = g.u32(1, 90);
    }
    d
}
