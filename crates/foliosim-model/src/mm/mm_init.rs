//! Boot (mm/mm_init.c, mm_core_init, and the subsystems' init calls): the pieces of
//! [`Kernel::try_new`](super::Kernel::try_new) that are built from the scenario alone, one
//! named step each.

use super::config::KernelConfig;
use super::filemap::PageCache;
use super::folio::NIL;
use super::khugepaged;
use super::kthread::{KthreadKind, Kthreads};
use super::memcontrol::{self, MemCgroup, MemcgTree};
use super::numa::Nodes;
use super::swap_devstore::RamStore;
use super::swapfile::{Swap, SwapInfo, SwapMap};
use super::zram::Zram;
use super::{page_alloc, swap_alloc};
use crate::engine::cost::CostModel;
use crate::engine::line::HandoffTable;
use crate::hw::blockdev::BlockDevice;
use crate::hw::compressor::Codec;
use crate::hw::iaa::{Iaa, IaaConfig, IaaCosts};
use crate::hw::tlb_cache::{TlbCache, TlbGeometry};
use crate::hw::topology::Topology;
use crate::scenario::{Scenario, SwapAllocatorKind, SwapDeviceKind};

/// The root memcg and the scenario's, linked to their parents, and their mem_cgroup_iter
/// order.
pub(super) fn memcgs(scenario: &Scenario) -> (Vec<MemCgroup>, MemcgTree) {
    let mut memcgs = vec![MemCgroup::new("/".into(), None)];
    for spec in &scenario.memcgs {
        memcgs.push(MemCgroup::from_spec(spec, scenario.kernel.cgroup));
    }
    memcontrol::link_parents(&mut memcgs, &scenario.memcgs);
    let tree = MemcgTree::new(&memcgs);
    (memcgs, tree)
}

/// swapon (mm/swapfile.c) of every swap device, in swap_avail order: highest priority first,
/// ties in swapon order; the per-CPU slot caches empty.
pub(super) fn swapon_all(scenario: &Scenario, allocator: SwapAllocatorKind, ncpus: usize) -> Swap {
    let mut specs: Vec<_> = scenario.machine.swap_devices.iter().collect();
    specs.sort_by_key(|s| std::cmp::Reverse(s.priority));
    let devices = specs
        .iter()
        .enumerate()
        .map(|(id, spec)| {
            let bdev = BlockDevice::new(spec);
            let mut map = SwapMap::new(
                id,
                spec.size.pages(),
                bdev.solidstate(),
                bdev.synchronous_io(),
                spec.discard,
            );
            map.blkdev = spec.kind != SwapDeviceKind::File;
            map.slot_free_notify = bdev.has_slot_free_notify();
            let allocator =
                swap_alloc::new_allocator(allocator, &map, ncpus, spec.mthp_reserve_percent);
            let store = ram_store(scenario, spec.kind, map.nr_slots());
            SwapInfo {
                prio: spec.priority,
                map,
                allocator,
                bdev,
                store,
            }
        })
        .collect();
    Swap {
        devices,
        slot_cache: vec![Vec::new(); ncpus],
        slots_ret: vec![Vec::new(); ncpus],
        slot_cache_active: false,
        ncpus,
        released: Vec::new(),
    }
}

/// What a swap device of `kind` keeps in machine memory: zram's compressed objects, brd's
/// pages, or nothing (a disk).
fn ram_store(scenario: &Scenario, kind: SwapDeviceKind, nr_slots: u32) -> RamStore {
    match kind {
        SwapDeviceKind::Zram => RamStore::Zram(Box::new(Zram::new(
            Codec::from_name(&scenario.sysfs.zram.comp_algorithm)
                .expect("validated zram compressor"),
            nr_slots,
        ))),
        SwapDeviceKind::Ramdisk => RamStore::Brd(vec![NIL; nr_slots as usize]),
        _ => RamStore::None,
    }
}

/// The IAA accelerators (iaa_crypto's probe), when the machine has them.
pub(super) fn iaa(scenario: &Scenario, cost: &CostModel) -> Option<Iaa> {
    scenario.machine.iaa.as_ref().map(|spec| {
        Iaa::new(
            IaaConfig {
                sockets: spec.sockets,
                devices_per_socket: spec.devices_per_socket,
                cpus_per_socket: scenario.machine.cpus.div_ceil(spec.sockets),
                verify_compress: spec.verify_compress,
                ..IaaConfig::default()
            },
            IaaCosts::from_cost(cost),
        )
        .expect("validated IAA spec")
    })
}

/// Every CPU's TLB, empty, of the machine's geometry.
pub(super) fn tlb_cache(scenario: &Scenario, ncpus: usize) -> TlbCache {
    let geometry =
        TlbGeometry::from_spec(scenario.machine.tlb_geometry.as_ref(), scenario.machine.tlb)
            .expect("validated TLB geometry");
    TlbCache::new(geometry, ncpus)
}

/// Lock handoff and cache-line transfer costs by CPU pair (hw/contention.rs), with a topology.
pub(super) fn contention_tables(
    topology: Option<&Topology>,
    cost: &CostModel,
) -> (Option<&'static HandoffTable>, Option<&'static HandoffTable>) {
    let lock_handoff = topology.map(|t| crate::hw::contention::handoff_table(t, cost));
    let line_transfer = topology.map(|t| crate::hw::contention::line_table(t, cost));
    (lock_handoff, line_transfer)
}

/// The order below which the per-order tables are sparse. The smallest anon folio size
/// enabled "always" is what most folios (and free blocks) will be: the tables of smaller
/// orders will be sparse (speed and memory only). With none enabled every table below
/// MAX_PAGE_ORDER gets base pages, the dense order-0 ones too: measured faster on this VM
/// (seed 000 4K: 0.6-1.0 s of system time, against 1.4-1.5 s with them on huge pages; the
/// host's defrag is madvise).
pub(super) fn dense_order(scenario: &Scenario) -> u32 {
    scenario
        .sysfs
        .orders_enabled(false)
        .trailing_zeros()
        .min(page_alloc::MAX_PAGE_ORDER)
}

/// The kernel threads, per node with CPUs: kswapd and the others the scenario turns on, and
/// the flusher when there is a disk.
pub(super) fn kthreads(
    scenario: &Scenario,
    cfg: &KernelConfig,
    nodes: &Nodes,
    zswap_enabled: bool,
    pagecache: &PageCache,
) -> Kthreads {
    let kthread_nodes: Vec<usize> = (0..nodes.nr_nodes())
        .filter(|&n| nodes.has_cpus[n])
        .collect();
    let mut kthreads = Kthreads::new(
        &kthread_nodes,
        zswap_enabled,
        khugepaged::hugepage_pmd_enabled(scenario),
        cfg.kcompactd,
        scenario.machine.cpus as usize,
    );
    if pagecache.disk.is_some() {
        kthreads.kinds.push(KthreadKind::Flusher);
    }
    kthreads
}
