//! The mm model. Files are named after the kernel's mm/*.c so a kernel developer finds each
//! mechanism where they expect it.

pub mod access;
pub mod compaction;
pub mod config;
pub mod filemap;
pub mod folio;
pub mod gfp;
pub mod gup;
pub mod huge_memory;
pub mod invariants;
pub mod invariants_node;
pub mod invariants_shmem;
pub mod khugepaged;
pub mod kmem;
pub mod kthread;
pub mod lruvec;
pub mod madvise;
pub mod memcontrol;
pub mod memory;
pub mod mempolicy;
pub mod migrate;
mod mm_init;
pub mod mmap;
pub mod mmap_lock;
pub mod mmzone;
pub mod mprotect;
pub mod numa;
pub mod numa_balancing;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_io;
pub mod page_writeback;
pub mod per_order;
pub mod percpu;
pub mod pgtable;
pub mod preempt;
pub mod readahead;
pub mod rmap;
pub mod shmem;
pub mod shrinker;
pub mod slub;
pub mod snapshot;
pub mod swap_alloc;
pub mod swap_devstore;
pub mod swap_readahead;
pub mod swap_state;
pub mod swapfile;
pub mod swapout_fallback;
pub mod thp_fault_alloc;
pub mod tlb;
pub mod truncate;
pub mod vmscan;
pub mod vmstat;
pub mod workingset;
pub mod zram;
pub mod zsmalloc;
pub mod zswap;
pub mod zswap_store;

use crate::content::ContentClass;
use crate::cpu_cost::CpuCost;
use crate::engine::cost::CostModel;
use crate::engine::Ctx;
use crate::hw::iaa::Iaa;
use crate::hw::membw::SharedBandwidth;
use crate::scenario::Scenario;
pub use config::KernelConfig;
use folio::{flags, FolioTable};
use huge_memory::deferred_split::{folio_unqueue_deferred_split, DeferredSplitQueue};
use khugepaged::Khugepaged;
use kthread::Kthreads;
use memcontrol::MemCgroup;
use mmap::MmStruct;
use page_alloc::Zone;
use swapfile::Swap;
use vmstat::VmStat;
use zswap::Zswap;

/// The model stopped: the workload cannot go on (as the kernel would OOM-kill), or bad use.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MmError {
    /// The host refused the memory of a mapping's page table (mmap).
    #[error(transparent)]
    HostAlloc(#[from] crate::footprint::AllocFailed),
    #[error(
        "out of memory: memcg `{memcg}` is at its limit with nothing reclaimable (no free swap?)"
    )]
    MemcgOom { memcg: String },
    #[error("out of memory: no free page in the zone and nothing reclaimable")]
    GlobalOom,
    #[error(
        "out of memory: memcg `{memcg}` is at its limit with nothing reclaimable, and the OOM killer found no task in it to kill (oom_score_adj = -1000 protects a task)"
    )]
    MemcgOomNoVictim { memcg: String },
    #[error(
        "out of memory: no free page in the zone, nothing reclaimable, and the OOM killer found no task to kill (oom_score_adj = -1000 protects a task)"
    )]
    GlobalOomNoVictim,
    /// The task's process was chosen by the OOM killer: it exits (the scheduler's business,
    /// never a run's error).
    #[error("killed by the OOM killer")]
    OomKilled,
    /// A user fault gave up the CPU inside its allocation and resumes in the task's next
    /// step (mm/preempt.rs): the scheduler's business, never a run's error.
    #[error("the fault stopped to give up the CPU")]
    Resched,
    #[error("segmentation fault: page {index} of vma {vma} was unmapped (munmap of part of it)")]
    Segv { vma: u32, index: u32 },
    #[error("segmentation fault: an access to vma {vma} its protection (mprotect) forbids")]
    SegvProt { vma: u32 },
    /// An access to a VMA that is not mapped: a trace replay orders the threads of a process
    /// only at clone, exec and wait, so one may run past another's munmap.
    #[error(
        "segmentation fault: vma {vma} is not mapped (unmapped by another thread of the process?)"
    )]
    SegvUnmapped { vma: u32 },
    // Files (mm/filemap/): bad use by a workload's operations.
    #[error("no file {file}: create it first ([[file]] in the scenario, or a CreateFile op)")]
    NoSuchFile { file: u32 },
    #[error("file {file} exists already")]
    FileExists { file: u32 },
    /// A host snapshot that cannot be loaded (mm/snapshot/): the file and what is wrong.
    #[error("machine.start.snapshot: {0}")]
    Snapshot(String),
    #[error("files need a disk: the scenario has no [machine.disk]")]
    NoDisk,
    #[error("file {file} of {nr_pages} pages does not fit on the disk ({free_pages} pages free)")]
    NoSpace {
        file: u32,
        nr_pages: u32,
        free_pages: u64,
    },
    #[error("SIGBUS: access to page {index} of file {file}, beyond its end")]
    Sigbus { file: u32, index: u32 },
    // tmpfs (mm/shmem.rs).
    #[error("ENOSPC: tmpfs {mount} is full (its size= is reached)")]
    TmpfsFull { mount: u32 },
    #[error("no tmpfs {mount}: the scenario has fewer [[tmpfs]] mounts")]
    NoSuchTmpfs { mount: u32 },
    #[error("no tmpfs file {file}: write it first")]
    NoSuchShmemFile { file: u32 },
    #[error("tmpfs file {file} is on tmpfs {mount}, not the one written to")]
    ShmemFileOnOtherMount { file: u32, mount: u32 },
}

/// The vm sysctls at the start of the run: the scenario's, else the kernel's at boot, with
/// min_free_kbytes raised as khugepaged does when it starts (PMD THP enabled).
fn watermark_sysctl(scenario: &Scenario, nr_pages: u32) -> page_alloc::WatermarkSysctl {
    use page_alloc::watermark::recommended_min_free_kbytes;
    let vm = &scenario.sysctl.vm;
    let mut sysctl = Zone::default_sysctl(nr_pages);
    let pmd_thp = scenario.sysfs.orders_enabled(true) & (1 << crate::scenario::PMD_ORDER) != 0;
    if pmd_thp {
        sysctl.min_free_kbytes =
            recommended_min_free_kbytes(nr_pages as u64, 1, sysctl.min_free_kbytes);
    }
    if let Some(v) = vm.min_free_kbytes {
        sysctl.min_free_kbytes = v;
    }
    if let Some(v) = vm.watermark_scale_factor {
        sysctl.watermark_scale_factor = v;
    }
    if let Some(v) = vm.watermark_boost_factor {
        sysctl.watermark_boost_factor = v;
    }
    sysctl
}

/// Every node's pglist_data at boot: node 0 with `machine.memory` and the vm sysctls' watermarks
/// (kswapd balancing it to WMARK_PROMO under memory tiering), memory-only nodes with the
/// default ones.
fn new_pgdats(
    scenario: &Scenario,
    nodes: &numa::Nodes,
    ncpus: usize,
) -> Result<Vec<mmzone::PgData>, crate::footprint::AllocFailed> {
    let tiering = scenario.sysctl.kernel.numa_balancing.unwrap_or(0) & 2 != 0;
    let migrc = scenario.kernel.migrate_tlb_flush == crate::scenario::MigrateTlbFlush::Migrc;
    let mut pgdat = Vec::with_capacity(nodes.nr_nodes());
    for nid in 0..nodes.nr_nodes() {
        let nr = nodes.node_pages(nid);
        let sysctl = if nodes.has_cpus[nid] {
            watermark_sysctl(scenario, nr)
        } else {
            Zone::default_sysctl(nr)
        };
        let mut zone = Zone::try_new_span(nodes.start_pfn[nid], nr, ncpus, sysctl)?;
        zone.balance_to_promo = tiering && nodes.has_cpus[nid];
        // MIGRC: migration defers its flush, so the zones keep migration generations.
        if migrc {
            zone.enable_mgen();
        }
        pgdat.push(mmzone::PgData::new(nid, zone, nodes.has_cpus[nid]));
    }
    Ok(pgdat)
}

/// Folios added to the LRU per lru_lock acquisition (the per-CPU lru_add folio batch).
const LRU_ADD_BATCH: u32 = 15;

/// The whole simulated kernel state.
pub struct Kernel {
    /// The boot configuration: release switches, policies, knobs (mm/config.rs).
    pub cfg: KernelConfig,
    pub cost: CostModel,
    pub vmstat: VmStat,
    /// Every node (NODE_DATA(nid)): its zone, kswapd and kcompactd state (mm/mmzone.rs).
    pub pgdat: Vec<mmzone::PgData>,
    /// The nodes' pfn spans, CPUs and zonelists (mm/numa.rs).
    pub nodes: numa::Nodes,
    pub numa: numa_balancing::NumaBalancing,
    /// MIGRC's owed-flush request (mm/migrate/flush/migrc.rs).
    pub migrc: migrate::flush::migrc::MigrcState,
    /// Compaction's sysctls.
    pub compaction: compaction::Compaction,
    pub folios: FolioTable,
    pub mms: Vec<MmStruct>,
    /// Index 0 is the root memcg.
    pub memcgs: Vec<MemCgroup>,
    /// The memcgs in mem_cgroup_iter order (pre-order), subtrees as ranges.
    pub memcg_tree: memcontrol::MemcgTree,
    /// The per-CPU charge stock (memcontrol/stock.rs).
    pub memcg_stock: memcontrol::stock::Stock,
    /// The memcg each swap slot is charged to (mm/swap_cgroup.c).
    pub swap_cgroup: memcontrol::swap::SwapCgroup,
    pub swap: Swap,
    pub thp_avail: thp_fault_alloc::ThpAvailState,
    /// Each CPU's state, by CPU (mm/percpu.rs).
    pub percpu: Vec<percpu::PerCpu>,
    /// The CPUs' topology (`[machine.topology]` or the machine profile's); None: flat.
    pub topology: Option<crate::hw::topology::Topology>,
    /// Lock handoff costs by the previous holder's CPU (hw/contention.rs), with a topology.
    pub lock_handoff: Option<&'static crate::engine::line::HandoffTable>,
    /// One cache line's transfer by the last writer's CPU (hw/contention.rs), with a topology.
    pub line_transfer: Option<&'static crate::engine::line::HandoffTable>,
    /// The memcgs' page_counter usage lines (memcontrol/page_counter.rs).
    pub counter_lines: memcontrol::page_counter::CounterLines,
    /// Who pays what for IPIs (hw/ipi.rs).
    pub ipi: crate::hw::ipi::Ipi,
    /// Every CPU's TLB contents and PMU counts (hw/tlb_cache.rs): every flush above reaches
    /// it; user accesses (mm/access.rs) are costed by it.
    pub tlb_cache: crate::hw::tlb_cache::TlbCache,
    /// Completion of broadcast TLB maintenance, one at a time (arm64's DSB waits).
    pub tlb_bus: SharedBandwidth,
    /// DRAM bandwidth shared by the CPUs: page clearing, copying and the workload's stores.
    pub membw: SharedBandwidth,
    pub zswap: Zswap,
    /// The kernel threads and the wake-ups posted for them.
    pub kthreads: Kthreads,
    /// The IAA accelerators zswap's deflate-iaa offloads to.
    pub iaa: Option<Iaa>,
    // --- khugepaged and the deferred split queue (mm/khugepaged.rs, mm/huge_memory/) ---
    /// Each memcg's deferred split queue (memcg->deferred_split_queue), by memcg id.
    pub deferred_split: Vec<DeferredSplitQueue>,
    /// khugepaged's knobs, mm slots and scan cursor.
    pub khugepaged: Khugepaged,
    /// Files, their cached pages and the disk (mm/filemap/).
    pub pagecache: filemap::PageCache,
    /// tmpfs mounts and shmem inodes (mm/shmem.rs).
    pub shmem: shmem::Shmem,
    /// The OOM killer's policy and the kills of the run (mm/oom_kill.rs).
    pub oom: oom_kill::OomKiller,
    /// The running task's fault and allocation stopped to give up the CPU (mm/preempt.rs).
    /// Boxed: the scheduler swaps it with the task's at every step.
    pub current: Box<preempt::TaskResume>,
    /// The preferred node and nodemask of the allocation in progress when a memory policy
    /// chose them (alloc_pages_mpol, mm/mempolicy/); None: the local node, no nodemask.
    pub alloc_nodes: Option<mempolicy::policy::AllocNodes>,
    /// The policy every user task gets (`[mempolicy]`; None: the default local policy).
    pub task_mempolicy: Option<mempolicy::policy::Mempolicy>,
    /// current->in_lru_fault: a fault is running (folio_add_lru marks its folios for
    /// MGLRU's youngest generation).
    pub in_lru_fault: bool,
    /// How shadow entries pack (mm/workingset.rs).
    pub workingset: workingset::ShadowPacking,
    /// Some VMA has had an Access range's set of special pages (mm/access.rs): until then
    /// reclaim's accessed-bit hook has nothing to update.
    pub access_sets: bool,
    /// Slab, page tables and kernel stacks (mm/kmem.rs); `enabled` false leaves them out.
    pub kmem: kmem::KernelMem,
    /// When the workload starts: the end of the aging prelude (workload/aging.rs), else 0.
    pub workload_start_ns: u64,
}

impl Kernel {
    pub fn new(scenario: &Scenario) -> Kernel {
        Self::try_new(scenario).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Kernel::new`], or an error when the host refuses the memory of the per-page tables
    /// (the pre-flight, footprint::check_host, makes that rare).
    pub fn try_new(scenario: &Scenario) -> Result<Kernel, crate::footprint::AllocFailed> {
        let cfg = KernelConfig::new(scenario);
        let cost = CostModel::of_scenario(scenario);
        let ncpus = scenario.machine.cpus as usize;
        let topology = scenario
            .machine
            .topology_spec()
            .map(|spec| crate::hw::topology::Topology::new(spec, ncpus));
        let nr_pages = scenario.machine.memory.pages() as u32;
        let (mut memcgs, memcg_tree) = mm_init::memcgs(scenario);
        let swap = mm_init::swapon_all(scenario, cfg.swap_allocator, ncpus);
        let tlb_bus_per_s = 1e9 / cost.tlb_dsb_ns.max(1) as f64;
        let device_slots: Vec<u32> = swap.devices.iter().map(|d| d.map.nr_slots()).collect();
        let zswap = Zswap::new(
            scenario,
            cfg.zswap_large_folios,
            &device_slots,
            memcgs.len(),
        );
        let iaa = mm_init::iaa(scenario, &cost);

        // The page cache: a disk's files, and their flusher thread (page_writeback.rs).
        let pagecache = filemap::PageCache::new(scenario);
        let nodes = numa::Nodes::new(scenario, nr_pages, topology.as_ref());
        let kthreads = mm_init::kthreads(scenario, &cfg, &nodes, zswap.enabled, &pagecache);
        let pgdat = new_pgdats(scenario, &nodes, ncpus)?;
        for cg in memcgs.iter_mut() {
            cg.set_nr_nodes(nodes.nr_nodes());
            // lru_gen_init_lruvec: lrugen->enabled = lru_gen_enabled().
            for lv in cg.lruvecs_mut() {
                lv.lrugen.enabled = scenario.sysfs.lru_gen.enabled();
            }
        }
        let dense_order = mm_init::dense_order(scenario);
        let folios = FolioTable::try_new(nodes.total_pages())?;
        folios.advise_sparse_below(dense_order);
        assert!(
            nodes.total_pages() <= 1 << 31,
            "pfns must fit 31 bits (validation allows 8T)"
        );
        let nr_memcgs = memcgs.len();
        let workingset =
            workingset::ShadowPacking::new(nr_memcgs, nodes.nr_nodes(), nodes.total_pages() as u64);
        for p in &pgdat {
            p.zone.advise_sparse_below(dense_order);
        }
        let (lock_handoff, line_transfer) = mm_init::contention_tables(topology.as_ref(), &cost);
        Ok(Kernel {
            cfg,
            cost,
            vmstat: VmStat::default(),
            pgdat,
            compaction: compaction::Compaction::new(scenario),
            folios,
            numa: numa_balancing::NumaBalancing::new(scenario, nodes.total_pages()),
            nodes,
            migrc: migrate::flush::migrc::MigrcState::new(),
            mms: Vec::new(),
            memcgs,
            memcg_tree,
            workingset,
            memcg_stock: memcontrol::stock::Stock::new(ncpus),
            counter_lines: memcontrol::page_counter::CounterLines::new(nr_memcgs),
            swap_cgroup: memcontrol::swap::SwapCgroup::new(&device_slots),
            swap,
            thp_avail: Default::default(),
            percpu: percpu::PerCpu::boot(ncpus),
            lock_handoff,
            line_transfer,
            topology,
            ipi: crate::hw::ipi::Ipi {
                kvm_guest: scenario.machine.kvm_guest,
            },
            tlb_cache: mm_init::tlb_cache(scenario, ncpus),
            tlb_bus: SharedBandwidth::new(tlb_bus_per_s, ncpus),
            membw: SharedBandwidth::new(
                scenario.machine.memory_bandwidth_bytes_per_s as f64,
                ncpus,
            ),
            iaa,
            kthreads,
            zswap,
            pagecache,
            shmem: shmem::Shmem::new(scenario),
            deferred_split: vec![DeferredSplitQueue::default(); 1 + scenario.memcgs.len()],
            khugepaged: Khugepaged::new(scenario),
            oom: oom_kill::OomKiller::new(scenario.kernel.oom),
            current: Default::default(),
            alloc_nodes: None,
            task_mempolicy: mempolicy::policy::Mempolicy::from_spec(&scenario.mempolicy),
            in_lru_fault: false,
            access_sets: false,
            kmem: kmem::KernelMem::new(scenario.machine.kernel_memory_on(), ncpus as u32),
            workload_start_ns: 0,
        })
    }

    /// /proc/vmstat at `now_ns`: the events of `vm_events` and the node's gauges (nr_*).
    pub fn vmstat_map(&self, now_ns: u64) -> std::collections::BTreeMap<String, u64> {
        let mut m = self.vm_events().to_map();
        for (name, value) in filemap::gauges(self, now_ns) {
            m.insert(name.to_string(), value);
        }
        if self.kmem.enabled {
            for (name, value) in self.kmem.gauges() {
                m.insert(name.to_string(), value);
            }
        }
        // CONFIG_NUMA's counters, and each node's vmstat, on a machine of several nodes.
        if self.nr_nodes() > 1 {
            for nid in 0..self.nr_nodes() {
                for (name, value) in self.node_vmstat(nid) {
                    m.insert(format!("node{nid} {name}"), value);
                    if name.starts_with("numa_") {
                        *m.entry(name.to_string()).or_insert(0) += value;
                    }
                }
            }
        }
        if self.shmem.enabled {
            let sh = &self.shmem;
            m.extend(sh.stats.to_map(sh.nr_pages, sh.nr_thp_pages));
            // NR_FILE_PAGES counts shmem too.
            *m.get_mut("nr_file_pages").expect("a gauge") += sh.nr_pages;
        }
        m
    }

    /// What a workload's mark records: /proc/vmstat, and perf's TLB events and the TLB
    /// shootdowns of every CPU (as "perf <event>" and "TLB shootdowns") once the TLB model
    /// has counted any.
    pub fn mark_counters(&self, now_ns: u64) -> std::collections::BTreeMap<String, u64> {
        let mut m = self.vmstat_map(now_ns);
        if let Some(tlb) = self.tlb_cache.report() {
            for (name, v) in tlb.perf {
                m.insert(format!("perf {name}"), v);
            }
            m.insert("TLB shootdowns".into(), tlb.shootdowns_per_cpu.iter().sum());
        }
        m
    }

    /// /proc/vmstat: the kernel-wide events and every node's zone's (pgalloc_normal, pgfree).
    pub fn vm_events(&self) -> VmStat {
        let mut v = self.vmstat.clone();
        for p in &self.pgdat {
            v.add(&p.zone.events);
        }
        v
    }

    /// What page `i` of the folio at `pfn` holds: its mm's content class, and the page's index
    /// in its VMA as the key that picks it out of the class.
    pub fn page_content(&self, pfn: u32, i: u32) -> (ContentClass, u64) {
        let (mm, vma, index) = self.folios.owner(pfn as usize);
        if vma == shmem::SHMEM_OWNER {
            return shmem::page_content(self, pfn, i);
        }
        let key = (vma as u64) << 32 | (index + i) as u64;
        (self.mms[mm as usize].content, key)
    }

    /// get_swap_page: a range of 2^order slots (Swap::alloc). Slots released before it, or by
    /// the allocation itself (the slot cache drained when swap runs low), drop their data
    /// first: the allocator may hand them out at once, and their new owner writes after.
    pub fn swap_alloc(&mut self, ctx: &mut Ctx, order: u32) -> Option<folio::SwapEntry> {
        self.free_released_slots(ctx);
        let entry = self.swap.alloc(ctx, &self.cost, order);
        self.free_released_slots(ctx);
        entry
    }

    /// Free the data of slots released since the last call (zswap_invalidate and zram's
    /// slot-free notify in swap_range_free): entries, objects and the pool pages they empty.
    #[inline]
    pub fn free_released_slots(&mut self, ctx: &mut Ctx) {
        // Called after every step and around every slot allocation: mostly none released.
        if !self.swap.released.is_empty() {
            self.free_released_slots_now(ctx);
        }
    }

    #[inline(never)]
    fn free_released_slots_now(&mut self, ctx: &mut Ctx) {
        while let Some((first, nr)) = self.swap.released.pop() {
            memcontrol::swap::uncharge_swap(self, first, nr);
            zswap::invalidate_range(self, ctx, first, nr);
            swap_devstore::free_slots(self, ctx, first, nr);
            let data = &mut self.swap.devices[first.dev()].map.data;
            data[first.offset() as usize..(first.offset() + nr) as usize]
                .fill(swapfile::SlotData::None);
        }
    }

    /// The number of CPUs (nr_cpu_ids).
    #[inline]
    pub fn nr_cpus(&self) -> usize {
        self.percpu.len()
    }

    pub fn memcg_id(&self, name: Option<&str>) -> u16 {
        match name {
            None => memcontrol::ROOT_MEMCG,
            Some(n) => self
                .memcgs
                .iter()
                .position(|m| m.name == n)
                .expect("validated memcg name") as u16,
        }
    }

    pub fn new_mm(&mut self, memcg: u16, content: ContentClass) -> u32 {
        self.mms.push(MmStruct::new(memcg, content, self.nr_cpus()));
        (self.mms.len() - 1) as u32
    }

    /// folio_add_lru: onto the memcg's inactive list (MGLRU: a generation); lru_lock taken
    /// once per batch.
    pub fn folio_add_lru(&mut self, ctx: &mut Ctx, pfn: u32) {
        let memcg = self.folios.memcg(pfn as usize) as usize;
        let nid = self.nodes.nid(pfn);
        self.memcgs[memcg]
            .lruvec_mut(nid)
            .folio_add_lru(&mut self.folios, pfn, self.in_lru_fault);
        let pending = &mut self.percpu[ctx.cpu].lru_add_pending;
        *pending += 1;
        if *pending == LRU_ADD_BATCH {
            *pending = 0;
            self.memcgs[memcg]
                .lruvec_mut(nid)
                .lru_lock
                .hold(ctx, self.cost.lru_move_ns * LRU_ADD_BATCH as u64);
        }
    }

    /// The last reference to a folio is gone: off the LRU, uncharged, back to the buddy lists.
    pub fn folio_free(&mut self, ctx: &mut Ctx, pfn: u32) {
        let f = &mut self.folios;
        assert!(
            f.test(pfn, flags::ALLOCATED),
            "free of pfn {pfn} that heads no folio"
        );
        assert!(
            !f.test(pfn, flags::SWAPCACHE),
            "free of folio {pfn} still in the swap cache"
        );
        // Both fields through one record read.
        let rec = f.rec(pfn as usize);
        let (mapcount, memcg) = (rec.mapcount, rec.memcg as usize);
        assert_eq!(mapcount, 0, "free of mapped folio {pfn}");
        folio_unqueue_deferred_split(&mut self.deferred_split, f, pfn);
        let order = f.order[pfn as usize] as u32;
        let nid = self.nodes.nid(pfn);
        if f.test(pfn, flags::LRU) {
            self.memcgs[memcg].lruvec_mut(nid).del_folio(f, pfn);
        }
        f.release(pfn);
        memcontrol::uncharge(self, ctx, memcg as u16, 1 << order);
        self.free_pages(ctx, pfn, order);
        ctx.spend(
            CpuCost::FreeFolio,
            self.cost.folio_free_ns + self.cost.page_free_ns * (1u64 << order),
        );
    }
}
