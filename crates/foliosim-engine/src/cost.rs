//! The cost model: one named cost per kernel operation, in ns of CPU time.
//!
//! Profile `vm-6.18-2cpu` is measured on the development VM (Linux 6.18, x86-64 Firecracker guest,
//! 2 vCPUs; docs/calibration-vm.md and docs/calibration-split-tlb.md). Each field says
//! where its number comes from: "measured" is a direct measurement, "fit" is derived from a
//! measured series, "split of fit" divides a measured total among its parts (the sum is measured,
//! the division is our estimate), "estimate" is not measured yet (`foliosim calibrate` will).
//! A scenario overrides any field by name under `[costs]`.

use serde::Serialize;

macro_rules! cost_model {
    ($( $(#[doc = $doc:literal])* $name:ident = $default:expr ;)*) => {
        #[derive(Debug, Clone, Serialize, PartialEq)]
        pub struct CostModel {
            $( $(#[doc = $doc])* pub $name: u64, )*
        }

        impl CostModel {
            /// Every overridable cost name.
            pub const NAMES: &'static [&'static str] = &[ $( stringify!($name) ),* ];

            fn vm_6_18_2cpu() -> CostModel {
                CostModel { $( $name: $default ),* }
            }

            /// A cost's value by name.
            pub fn get(&self, name: &str) -> Option<u64> {
                match name {
                    $( stringify!($name) => Some(self.$name), )*
                    _ => None,
                }
            }

            /// A cost's documentation (what it is and where its default comes from: measured,
            /// fit, cited or estimate), as written above; for costs files' provenance.
            pub fn doc(name: &str) -> Option<&'static str> {
                match name {
                    $( stringify!($name) => Some(concat!($($doc, "\n"),*)), )*
                    _ => None,
                }
            }

            /// Override one cost by name; false if there is no such cost.
            pub fn set(&mut self, name: &str, value_ns: u64) -> bool {
                match name {
                    $( stringify!($name) => { self.$name = value_ns; true } )*
                    _ => false,
                }
            }
        }
    };
}

cost_model! {
    /// Anonymous fault that allocates, zeroes, charges and maps a 4 KiB folio. measured (1.78 µs).
    fault_4k_ns = 1783;
    /// 8 KiB folio fault. estimate: midway between the measured 4K and 16K per-page costs.
    fault_8k_ns = 2540;
    /// 16 KiB folio fault. measured (3.30 µs).
    fault_16k_ns = 3300;
    /// 32 KiB. measured (4.71 µs).
    fault_32k_ns = 4710;
    /// 64 KiB. measured (7.25 µs).
    fault_64k_ns = 7250;
    /// 128 KiB. measured (12.6 µs).
    fault_128k_ns = 12600;
    /// 256 KiB. measured (21.9 µs).
    fault_256k_ns = 21900;
    /// 512 KiB. measured (37.2 µs).
    fault_512k_ns = 37200;
    /// 1 MiB. measured (63.0 µs).
    fault_1m_ns = 63000;
    /// 2 MiB, PMD-mapped. measured (112.9 µs).
    fault_2m_ns = 112900;
    /// clear_page of 4 KiB, one CPU streaming alone; part of every fault cost above, charged as
    /// memory traffic (hw/membw.rs). fit: the 2M fault's 0.21 µs per 4 KiB; the store stream
    /// measured 184-222 ns per 4 KiB on one vCPU (docs/membw.md).
    clear_page_ns = 210;
    /// The workload storing to every word of a present 4 KiB page (usemem's loop), one CPU
    /// alone; charged as memory traffic. fit: the same store stream as clear_page.
    user_write_page_ns = 210;
    /// Zap of one PTE (or one PMD) at munmap/exit/MADV_DONTNEED. fit of munmap of 1 GiB at 4K/64K.
    zap_pte_ns = 36;
    /// Freeing one folio back to the buddy allocator (uncharge, LRU removal). fit, same series.
    folio_free_ns = 319;
    /// Freeing, per 4 KiB page of the folio. fit: munmap of 1 GiB at 2M (3.7 ms).
    page_free_ns = 14;
    /// shrink_folio_list work per folio not itemised below: isolate, add_to_swap_cache,
    /// __remove_mapping, putback. split of fit (4.3 µs per folio MADV_PAGEOUT to zram).
    shrink_folio_ns = 2300;
    /// folio_referenced(): the rmap walk of one folio, test-and-clear young. estimate: about two
    /// cold lines (the anon_vma interval tree node and the page-table line of its PTE; the VMA
    /// is hot in reclaim's batch) at `dram_latency_ns`, plus the anon_vma read lock; this VM has
    /// no hardware PMU, so perf cannot time one kernel function here.
    folio_referenced_ns = 250;
    /// folio_referenced_one's step to each further PTE mapping a large folio: 6.18's
    /// page_vma_mapped_walk visits every PTE and ptep_clear_flush_young_notify tests and
    /// clears each one's accessed bit. estimate: as lru_gen_walk_pte_ns, the same per-PTE
    /// read and test-and-clear.
    folio_referenced_pte_ns = 15;
    /// Moving one folio between LRU lists under the lru_lock (activate / deactivate). estimate:
    /// list_del + list_add on lines reclaim's batch has just touched (L2 hits, `cache_l2_hit_ns`)
    /// and the lruvec size update: a few dozen instructions, under one `dram_latency_ns` miss.
    lru_move_ns = 80;
    /// MGLRU's page-table walk (walk_pte_range) and lru_gen_look_around, per present PTE looked
    /// at: read it, test and clear the accessed bit, move a young folio to the youngest
    /// generation. estimate (as khugepaged_scan_pte_ns, a similar sequential PTE scan).
    lru_gen_walk_pte_ns = 15;
    /// One alloc_swap_scan_cluster (lock the cluster, check it, set up the scan; the per-slot
    /// probes and the range taken are below), charged per call by every cluster-list policy:
    /// 6.18 makes one per allocation, a 6.12 slot-cache refill 64 under one si->lock hold.
    /// split of fit. Removing the slot cache (v6.15, so each allocation makes its own call)
    /// left make -j96 sys time unchanged (6446 -> 6409 s, "mm, swap: remove swap slot cache"):
    /// the per-slot work is the same with and without the cache.
    swap_alloc_ns = 300;
    /// A lock hold by a CPU other than the previous holder: the lock word and the first line
    /// of the data it guards migrate between the two CPUs. measured: `foliosim calibrate
    /// --live --hw-only`, the two vCPUs taking strict turns at a spinning lock whose holder
    /// updates one guarded line, median of 4 runs (86, 253, 255, 473 ns; load average 5-16 on
    /// the 2 vCPUs from other builds; docs/machine-profiles.md).
    lock_handoff_ns = 254;
    // Cache-line transfer between two CPUs by how far apart they are (hw/topology.rs), used
    // only when the machine has a topology: a lock handoff moves its lines at these costs
    // instead of `lock_handoff_ns` (hw/contention.rs).
    /// One line to the SMT sibling of the same core (through the shared L1/L2). estimate:
    /// this VM's measured `line_transfer_llc_ns` (its two vCPUs share an LLC; it has no SMT
    /// sibling, other LLC or socket to measure).
    line_transfer_smt_ns = 117;
    /// One line between two cores sharing the last-level cache. measured: `foliosim calibrate
    /// --live --hw-only`, the two vCPUs bouncing one line by compare-and-swap, round trip / 2,
    /// median of 5 runs (35, 104, 117, 126, 200 ns: the host places the vCPUs on one CCX or
    /// two, and the machine was loaded; docs/machine-profiles.md).
    line_transfer_llc_ns = 117;
    /// One line between two last-level caches of one socket (CCXs, dies). estimate: as smt (this
    /// VM's measured LLC figure): no two CPUs of this VM sit on two LLCs or sockets, so none can
    /// be measured here; the machine profiles (hw/profile) cite their own.
    line_transfer_die_ns = 117;
    /// One line between two sockets. estimate: as line_transfer_die_ns, for the same reason.
    line_transfer_socket_ns = 117;
    /// Taking one allocated range: writing HAS_CACHE over its swap_map bytes, cluster count,
    /// inuse_pages and nr_swap_pages accounting (cluster_alloc_range). estimate: one swap_map
    /// line written (up to 64 slots) and the two counters' lines, hot under the lock held: about
    /// one miss at `dram_latency_ns` (110) per range.
    swap_alloc_range_ns = 100;
    /// Releasing one slot whose count reached 0 (swap_range_free: clear the byte, memcg swap
    /// uncharge, zswap invalidate, nr_swap_pages; a zram device's notify is apart, below).
    /// Held under si->lock up to 6.12 (swapcache_free_entries / swap_entry_range_free), under
    /// ci->lock after the lock split. estimate: one swap_map byte on a line the release holds,
    /// the memcg swap uncharge (a page_counter atomic; its line transfer is priced apart,
    /// mm/memcontrol/page_counter.rs), zswap's empty xarray check and the counters: one miss at
    /// `dram_latency_ns` plus a few atomics (~10 ns each).
    swap_entry_free_ns = 150;
    /// zram's swap_slot_free_notify for one released slot (zram_slot_free_notify ->
    /// zram_free_page: zs_free of the compressed object, zram stats), run from swap_range_free
    /// under whatever lock the release holds. split of fit: munmap of MADV_PAGEOUT'd 4K pages
    /// on zram measured 460 ns per page (median of 7 `foliosim calibrate` runs on the VM,
    /// 415-687; `munmap_swapped_zram_4k_ns_per_page`), less zap_pte_ns, swap_map_update_ns and
    /// swap_entry_free_ns. One CPU alone: no other CPU contends for zsmalloc's pool and class
    /// locks or zram's stats.
    zram_slot_free_notify_ns = 260;
    /// Moving a swap cluster between the allocator's lists, si->lock held (list_move_tail plus
    /// flag update, cache-missing on the cluster). estimate: the cluster_info array is dense
    /// (16 B per 2 MiB cluster), so its line is in the LLC or memory: between `cache_llc_hit_ns`
    /// (33) and `dram_latency_ns` (110), taken near the middle.
    swap_cluster_list_move_ns = 60;
    /// Device time to discard (TRIM) one freed 2 MiB swap cluster before its reuse. estimate
    /// (a few hundred µs per 2 MiB on common SATA/NVMe SSDs).
    swap_discard_cluster_ns = 300000;
    /// Probing one swap_map byte during a scan. estimate (one cache-hot byte test).
    swap_slot_scan_ns = 2;
    /// Setting or clearing one swap-cache entry / swap_map byte (ci->lock held). estimate: a
    /// store to a line the lock hold has brought in (an L1/L2 hit, `cache_l2_hit_ns` 5) and the
    /// few instructions around it, 3x an L2 hit.
    swap_map_update_ns = 15;
    /// try_to_unmap of one PTE into a swap PTE. fit (the munmap PTE cost).
    pte_unmap_ns = 36;
    /// Local TLB flush (this CPU), PTE update included. measured: 0.15-0.35 µs
    /// (docs/calibration-split-tlb.md).
    tlb_flush_local_ns = 250;
    /// TLB shootdown of one remote CPU: IPI, remote flush, ack; the sender waits. measured:
    /// ~12 µs in this guest (docs/calibration-split-tlb.md), ~10x bare metal.
    tlb_flush_ipi_ns = 12000;
    /// Each further remote CPU of the same shootdown: the IPIs go out together, each costing
    /// one more ICR write exit. estimate (a 2-vCPU machine has only one remote CPU).
    tlb_ipi_extra_cpu_ns = 1500;
    /// A shootdown's receiver besides its flush (`tlb_flush_local_ns`): the interrupt's
    /// delivery, entry and exit, booked to the receiving CPU. In this KVM guest the delivery
    /// exits to the host: a bare IPI (membarrier) takes as long from the receiver as a
    /// shootdown (tools/microbench/ipi_gap.c). measured: `foliosim calibrate --live --hw-only`
    /// and `ipi_gap mprotect`, the median time a thread on the other vCPU lost per shootdown,
    /// one gap per IPI counted in /proc/interrupts, median of 8 runs (2.8-4.9 µs, 3.76 µs),
    /// less `tlb_flush_local_ns` (docs/machine-profiles.md).
    tlb_ipi_receive_ns = 3510;
    /// `machine.kvm_guest`: one VM exit an IPI costs on each side when the guest's machine
    /// costs are bare-metal ones (the ICR write that sends it, the injection that delivers it;
    /// no posted interrupts). estimate: as tlb_ipi_extra_cpu_ns, one ICR-write exit on this VM.
    kvm_ipi_exit_ns = 1500;
    /// arm64: issuing one broadcast TLBI (TLBI VALE1IS) without waiting for it. estimate: the
    /// cost of a flush is in its DSB; deferring the DSB removed ptep_clear_flush from reclaim
    /// profiles (Barry Song, "arm64: support batched/deferred tlb shootdown during page
    /// reclamation/migration", v6.5).
    tlbi_issue_ns = 20;
    /// arm64: the DSB ISH that waits for broadcast TLBIs, uncontended. measured elsewhere: eliding
    /// the one-page flush of mprotect NONE->RW cut the call from 3.2 to 2.85 µs on an arm64
    /// server (Dev Jain, "arm64/mm: Elide TLB flush in certain pte protection transitions"):
    /// 0.35 µs for TLBI + DSB, less `tlbi_issue_ns`. Grows with concurrent broadcasters
    /// (mm/tlb/arm64.rs).
    tlb_dsb_ns = 330;
    /// How long a CPU stays in an mm's mm_cpumask after it last ran the mm (x86 trims the mask
    /// lazily, about once a second, since ~6.14). estimate of this kernel's behaviour, read from
    /// its code: should_trim_cpumask (arch/x86/mm/tlb.c) trims at most once per HZ jiffies
    /// (Rik van Riel, "x86/mm/tlb: Only trim the mm_cpumask once a second", v6.14); 0 means
    /// only CPUs running the mm now are interrupted.
    mm_cpumask_window_ns = 1000000000;
    // The TLB and cache model of user accesses (hw/tlb_cache.rs, Op::Access). Not measured
    // on this VM (a guest's page walks are two-dimensional and would not transfer): typical
    // server-core latencies, every one an estimate, at 3 GHz.
    /// An L1 dTLB miss that hits the STLB: ~7 cycles more. estimate: no published figure of a
    /// server part was found within reach; taken as half an L2 hit.
    tlb_stlb_hit_ns = 3;
    /// A page walk besides its leaf entry's memory access (the paging-structure caches hold
    /// the upper levels): ~25 cycles. estimate: two L2-speed loads (the page-walk caches hold
    /// the upper levels), as `cache_l2_hit_ns`, the leaf's own load apart.
    tlb_walk_ns = 8;
    /// A load hitting the L1D: ~5 cycles. estimate: cited as 4 cycles on Skylake-SP
    /// (AnandTech, "The Intel Skylake-X Review", 2017, cache table); a 5-cycle load-to-use path.
    cache_l1_hit_ns = 2;
    /// A load hitting the L2: ~15 cycles. estimate: cited as 11-13 cycles for Skylake-SP's
    /// 1 MiB L2 (AnandTech, as above); newer, larger L2s are slower.
    cache_l2_hit_ns = 5;
    /// A load hitting the last-level cache: ~100 cycles on a mesh server part. estimate: cited
    /// as 77 cycles on Skylake-SP's mesh (AnandTech, as above); larger meshes are farther.
    cache_llc_hit_ns = 33;
    /// A load from local DRAM, idle latency. estimate (~100-120 ns on DDR5 servers).
    dram_latency_ns = 110;
    /// Submitting one bio for a folio (swap_writepage, block layer). split of fit.
    bio_submit_ns = 700;
    /// Splitting a PTE-mapped large folio (split_huge_page_to_list_to_order), per folio, local
    /// flushes included. fit 16K-1M, no remote CPU (docs/calibration-split-tlb.md): 4.9 µs.
    split_folio_ns = 4900;
    /// Splitting, per 4 KiB page: migration-entry unmap and remap of its PTE, struct page
    /// updates. same fit: 0.58 µs.
    split_page_ns = 580;
    /// Splitting a PMD mapping into 512 PTEs before unmapping a PMD-mapped THP. estimate: the
    /// 512 PTE stores fill one 4 KiB page table (a `clear_page_ns` stream, 210) and each of
    /// the 512 subpages' _mapcount is set (~5 ns each, an L2-speed store stream through struct
    /// pages: 2.6 µs); no split of a PMD alone was measured here (split_tlb.c splits PTE-mapped
    /// folios).
    pmd_split_ns = 3000;
    /// Copying one 4 KiB page (khugepaged's collapse, migration's folio_copy), one CPU alone;
    /// charged as memory traffic (8 KiB read + written). measured: 338-411 ns per 4 KiB copied
    /// on the development VM (docs/membw.md, tools/microbench/membw.c), the midpoint.
    copy_page_ns = 375;
    /// khugepaged's hpage_collapse_scan_pmd per PTE examined: read the PTE, find the folio,
    /// test its LRU/young/referenced flags (a struct page cache miss every few PTEs). estimate:
    /// one `dram_latency_ns` miss per 8 PTEs (one PTE line; a large folio's PTEs share its
    /// head's struct page) = 14 ns, and the tests on hot lines.
    khugepaged_scan_pte_ns = 15;
    /// khugepaged per 2 MiB range looked at, besides its PTEs: the page-table walk to the PMD
    /// (find_pmd_or_thp_or_none) and taking the PTE lock. estimate: the upper levels are
    /// cached (one PMD line per 1 GiB scanned), so one miss at `dram_latency_ns` (110) for the
    /// PTE page plus an uncontended spin_lock/unlock (~40 ns).
    khugepaged_scan_pmd_ns = 150;
    /// collapse_huge_page's fixed work besides allocation, TLB flush, copy and frees: VMA
    /// revalidation, anon_vma write lock, mmu notifiers, page-table deposit, PMD install.
    /// estimate from a measured figure: the 2 MiB fault (112.9 µs measured) less its 512
    /// clear_pages (107.5 µs) leaves 5.4 µs of allocation, charge, deposit and PMD install;
    /// collapse's fixed part has the deposit and install but its allocation and charge are
    /// charged apart, so about half, plus the locks and notifiers: 3 µs.
    khugepaged_collapse_ns = 3000;
    // Compaction and migration (mm/compaction/, mm/migrate/). Nothing of compaction is
    // measured on this VM yet; the spec's starting points (spec-thp-migrate.md §9A) bound the
    // estimates.
    /// A compaction scanner looking at one struct page (buddy / LRU / compound tests) in its
    /// sequential walk; a free block or a folio is one look however large. estimate (the spec's
    /// 10-30 ns per pfn, at its low end for a prefetch-friendly walk).
    compact_scan_pfn_ns = 15;
    /// Isolating one folio from its LRU for migration besides the lru_lock hold (lru_move_ns):
    /// folio_get, the pin/refcount test, test-and-clear PG_lru, NR_ISOLATED. estimate: two
    /// atomics on the folio's first line, which the scanner's look just brought in (~20 ns
    /// each), the mapping/pin tests and a per-CPU stat, plus the list move: ~200 ns, the order
    /// of `folio_referenced_ns`; spec-thp-migrate.md §9A gives only the whole migration.
    compact_isolate_folio_ns = 200;
    /// __isolate_free_page of one free block, zone->lock held: the min-watermark check and
    /// the list removal. estimate: the block's struct page is hot (the free scanner just read
    /// it); del_page_from_free_list writes its two list neighbours (about one miss at
    /// `dram_latency_ns`); the watermark check reads cached zone counters.
    compact_isolate_free_ns = 100;
    /// Migrating one folio besides its copy (copy_page_ns per page) and its PTEs (pte_unmap_ns
    /// each way, TLB flushes apart): folio locks, anon_vma reference, refcount freeze, mapping
    /// and flags moved, memcg transferred, the source freed. estimate (the spec's 2-5 us per
    /// base page for unmap + copy + remap, less those).
    migrate_folio_ns = 1500;
    /// change_prot_numa, per PTE made PROT_NONE by the NUMA scanner (a PTE rewrite under the
    /// PTL, plus recording the folio's access time). estimate (as pte_unmap_ns).
    numa_pte_update_ns = 36;
    /// do_numa_page without the migration: the trap, the PTL, mpol_misplaced and the
    /// tiering decision, and restoring the PTE. estimate (spec-thp-migrate.md §9A: 2-5 µs with
    /// a migration; the trap alone is the minor fault's ~1 µs).
    numa_hint_fault_ns = 1200;
    /// do_wp_page reusing an exclusive anonymous page (a write to a read-only PTE). estimate
    /// (a minor fault without allocation or zeroing).
    wp_fault_reuse_ns = 800;
    /// pin_user_pages_fast per page: lockless walk, folio reference and _pincount. estimate: a
    /// PTE read (8 per line: `dram_latency_ns` / 8 = 14 ns) and two atomics on the folio's line
    /// (~15 ns each) per page.
    gup_pin_page_ns = 50;
    /// kcompactd's 500 ms check of the node's fragmentation score (fill_contig_page_info over
    /// the free areas). estimate: reading 11 free_area counts (a few lines) per zone. Run once
    /// per 500 ms per node, it is below 0.001 % of a CPU at 10x this value, so no measurement
    /// would change a result.
    fragmentation_score_ns = 200;
    /// A context switch between tasks on one CPU. estimate (typical 1-3 µs in a guest).
    context_switch_ns = 2000;
    /// Entry and exit of a memory syscall (mmap, munmap, madvise) besides its work. measured:
    /// `tools/microbench/syscall_entry.c`, getppid's bare entry and exit on this VM: median
    /// 568 and 690 ns, minimum 533 and 393 ns over two runs of 7 x 200,000 calls (load average
    /// 4.4, so medians are inflated; madvise(MADV_NORMAL) of one page adds ~550 ns of lookup
    /// work). 500 lies inside that spread and is kept.
    syscall_ns = 500;
    /// Swap-in fault work besides the read (lookup, charge, map, swap_free). estimate: an
    /// anonymous 4K fault's work besides clearing (`fault_4k_ns` - `clear_page_ns` = 1.57 µs
    /// measured: entry, allocation, charge, map) plus the swap-cache lookup and the swap
    /// PTE's checks (~1 µs, a few misses). Order-0 swap-in from zram measured 7.6-9.2 µs per
    /// page in all (docs/calibration-vm.md, 2.0-2.4 s per GiB, conditions not recorded), of
    /// which this plus the per-page read, decompress and slot release the model charges is
    /// ~5 µs: that measurement is not separable enough to fit this.
    swapin_fault_ns = 2500;
    /// zswap_store_page besides compression: entry allocation, zs_malloc, the copy into the
    /// zspage, xarray store, list_lru add, obj_cgroup charge. estimate (no zswap is measured on
    /// this host: enabling it cannot be undone until reboot, see docs/live-host-effects.md).
    zswap_store_page_ns = 900;
    /// zswap_load besides decompression: xarray erase, zs_map/unmap, entry free. estimate: the
    /// same kind of work as zswap_store_page_ns's (xarray, zsmalloc handle, entry) without the
    /// allocations and the copy-in, about two thirds of it; zswap cannot be measured on this
    /// host (see zswap_store_page_ns).
    zswap_load_page_ns = 600;
    /// zswap_invalidate of one entry at slot release: xarray erase, zs_free, uncharge.
    /// estimate: half of zswap_load_page_ns's work (no zs_map/unmap; the erase and the free are
    /// the same), unmeasurable here as above; zram's zs_free in zram_slot_free_notify_ns (260,
    /// split of fit) is the nearest measured figure.
    zswap_invalidate_ns = 300;
    /// Reading every word of a 4 KiB page once (the same-filled / zero checks of zram, zswap
    /// and the swap zero map; they stop at the first differing word, so this is the worst
    /// case). fit: a load stream at the membw.md store rate.
    page_scan_ns = 200;
    /// zram's per-page share of a swap write besides what `lzo_rle_compress_ns` measures
    /// (which already holds zsmalloc's allocation and copy): the bio's pages walked, slot
    /// locks, stats. split of fit: MADV_PAGEOUT to zram (lzo-rle, usemem's pages) cost 6.1 µs
    /// per extra 4 KiB page on the development VM (`foliosim calibrate`, pageout_zram_*), less
    /// the 3.43 µs measured for lzo-rle through zram (docs/compression.md).
    zram_write_page_ns = 2670;
    /// zram_read_page besides decompression: measured 104 ns per 4 KiB read of a same-filled
    /// page through zram (tools/measure/zram_codecs.sh, docs/compression.md).
    zram_read_page_ns = 104;
    // Intel IAA compression offload (hw/iaa.rs, docs/iaa.md). Public per-job figures are few:
    // the one direct measurement is an 8-page batch of 4 KiB compresses on Sapphire Rapids
    // (2.5 GHz, async polling, no verification): p50 5,589 ns, p05 5,279, p99 8,875
    // (Kanchana P Sridhar, "[PATCH v6 00/16] zswap IAA compress batching", linux-crypto,
    // 2025-02-06). The compress costs below are split so that batch comes out at 5.55 µs.
    /// CPU time to fill one IAA descriptor and submit it to a work queue (ENQCMD/MOVDIR64B
    /// doorbell, DMA mapping of src/dst). estimate (a posted write plus a few hundred cycles of
    /// driver work); split of fit, see above.
    iaa_submit_ns = 200;
    /// CPU time to read and check one completion record once it is written (the poll that
    /// finds it done, dma unmap, status and length). estimate: one read of a line the device
    /// wrote (a snoop from the LLC, `cache_llc_hit_ns`) and the dma unmap's few instructions;
    /// split of fit.
    iaa_poll_ns = 50;
    /// Device time of one compress job besides its bytes (descriptor fetch, setup, completion
    /// write). estimate; split of fit: 1.85 µs + 4 KiB at 512 ns/KiB = 3.9 µs per page, so 8
    /// pages on 8 engines, the last submitted 1.6 µs after the first, are all polled 5.55 µs
    /// after the first submit.
    iaa_compress_fixed_ns = 1850;
    /// Device time per KiB compressed by one engine (512 ns/KiB = 2 GB/s per engine, 16 GB/s
    /// for a device's 8 engines). split of fit, as above.
    iaa_compress_ns_per_kib = 512;
    /// Device time of one decompress job besides its bytes. estimate: no public per-job figure;
    /// IAA's inflate is faster than its deflate (Intel QPL documents higher decompress than
    /// compress throughput), taken as 2/3 of the compress setup.
    iaa_decompress_fixed_ns = 1000;
    /// Device time per KiB of output decompressed by one engine (4 GB/s per engine). estimate:
    /// twice the compress rate, see above.
    iaa_decompress_ns_per_kib = 256;
    // Codec CPU time per 4 KiB page of usemem content (hw/compressor.rs scales it per content
    // class; docs/compression.md). "measured (zram)": tools/measure/zram_codecs.sh on this VM
    // (6.18, AMD EPYC, 2 vCPUs): 256 MiB of usemem pages written to, then read from, a
    // hot-added zram device with O_DIRECT 256 KiB requests, minimum of 7 runs, less the
    // same-filled page time (block layer + zram per page, no codec: 202 ns write, 104 ns
    // read); so it includes zs_malloc and the copy of the compressed bytes (compress) and the
    // zsmalloc map (decompress). "scaled": the codec's crate on this VM (benches/codec_ns.rs,
    // min of 7 rounds) times kernel lz4 / C liblz4 fast on the same pages: 3594/3102 = 1.16 to
    // compress, 2798/2674 = 1.05 to decompress.
    /// lzo-rle compress. measured (zram): 3629 - 202 ns.
    lzo_rle_compress_ns = 3427;
    /// lzo-rle decompress. measured (zram): 2100 - 104 ns.
    lzo_rle_decompress_ns = 1996;
    /// lzo compress. measured (zram): 3704 - 202 ns.
    lzo_compress_ns = 3501;
    /// lzo decompress. measured (zram): 2075 - 104 ns.
    lzo_decompress_ns = 1971;
    /// lz4 compress (acceleration 1). measured (zram): 3796 - 202 ns.
    lz4_compress_ns = 3594;
    /// lz4 decompress. measured (zram): 2902 - 104 ns.
    lz4_decompress_ns = 2798;
    /// lz4hc compress, level 9. scaled: liblz4 HC 124329 ns x 1.16 (usemem's short repeats
    /// make HC walk long hash chains).
    lz4hc_compress_ns = 144032;
    /// lz4hc decompress (the lz4 decoder). scaled: liblz4 2759 ns x 1.05.
    lz4hc_decompress_ns = 2887;
    /// zstd compress, level 3, one reused context. scaled: libzstd 8905 ns x 1.16.
    zstd_compress_ns = 10316;
    /// zstd decompress. scaled: libzstd 3680 ns x 1.05.
    zstd_decompress_ns = 3851;
    /// deflate compress, level 6. scaled: miniz_oxide 165615 ns x 1.16 (not the kernel's
    /// zlib; the same lazy-matching design, so the same order).
    deflate_compress_ns = 191861;
    /// deflate decompress. scaled: miniz_oxide 5956 ns x 1.05.
    deflate_decompress_ns = 6232;
    // The page cache (mm/filemap/, mm/readahead.rs, mm/page_writeback.rs). Not measured on
    // the VM yet (`foliosim calibrate` has no file probe): every one is an estimate.
    /// A fault on a file VMA besides I/O and allocation: exception entry and exit, VMA and
    /// page-cache lookup, folio lock, PTE and rmap update. estimate (an anonymous 4K fault is
    /// 1.78 µs measured with its allocation, charge and 0.21 µs of clearing).
    filemap_fault_ns = 800;
    /// Each extra page fault-around maps (filemap_map_pages: xarray walk, folio reference,
    /// set_pte, mapcount). estimate: per page a folio line miss at half `dram_latency_ns` (a
    /// readahead batch's folios are adjacent, so prefetch helps) and the PTE store (8 per line).
    fault_around_page_ns = 60;
    /// Adding a new folio to the page cache (filemap_add_folio: xarray store, stats, LRU
    /// batch), its allocation and memcg charge apart. estimate: xarray store of one slot (one
    /// or two node lines, `dram_latency_ns` each), the node/memcg stat updates and the LRU batch
    /// add: ~4 misses' worth.
    filemap_add_folio_ns = 400;
    /// Removing a clean folio from the page cache (__remove_mapping / mapping_evict_folio:
    /// refcount freeze, xarray delete, stats), its free apart. estimate: the mirror of
    /// filemap_add_folio_ns without the LRU batch add (the folio is already isolated), 3/4 of it.
    filemap_remove_folio_ns = 300;
    /// shrink_folio_list's own work per page-cache folio (lock, dirty and writeback checks,
    /// isolation and putback); folio_referenced, unmapping and the removal are apart. estimate:
    /// the file share of `shrink_folio_ns` (2.3 µs, split of fit for anonymous folios), which
    /// also holds add_to_swap and the swap-cache work a clean file folio does not do: ~1/5.
    shrink_file_folio_ns = 500;
    /// read(2) per cached 4 KiB page: lookup, copy_page_to_user of 4 KiB, mark accessed.
    /// estimate (a 4 KiB copy streams at about twice the clear_page time).
    file_read_page_ns = 600;
    /// The flusher per page written: clear dirty for I/O (page_mkclean), start writeback, add
    /// to the bio. estimate: folio_clear_dirty_for_io's page_mkclean is an rmap walk and a
    /// PTE write-protect with its flush (as `folio_referenced_ns`), plus the writeback flag
    /// and xarray tag updates (~150 ns).
    writeback_page_ns = 400;
    /// XSBench: one lookup's arithmetic besides its memory accesses (the material pick, the
    /// binary search's steps inside its last page), and per nuclide the interpolation of five
    /// cross sections (workload/xsbench.rs). estimate: about 45 instructions per nuclide at a
    /// few per ns; CPU speed, hence a cost of the machine (seed 004's fit frees the per-nuclide
    /// part).
    xsbench_lookup_base_ns = 100;
    /// XSBench's per-nuclide part of a lookup, as above. estimate: the ~45 instructions per
    /// nuclide above at ~3 per ns.
    xsbench_lookup_per_nuclide_ns = 15;
}

/// Where a cost's number comes from, as its documentation says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Measured on this machine (the command is in the doc).
    Measured,
    /// A published measurement of that machine or part, with its reference.
    Cited,
    /// Derived from measured series (a fit, a split of a fitted total, a scaled measurement).
    Fitted,
    /// Not measured: an estimate, with its basis.
    Estimate,
}

impl Provenance {
    pub const ALL: [Provenance; 4] = [
        Provenance::Measured,
        Provenance::Cited,
        Provenance::Fitted,
        Provenance::Estimate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::Cited => "cited",
            Provenance::Fitted => "fitted",
            Provenance::Estimate => "estimate",
        }
    }

    /// The provenance a cost's documentation states: its first provenance word ("measured
    /// elsewhere" and "cited" are cited; "fit" and "scaled" are fitted).
    pub fn of_doc(doc: &str) -> Option<Provenance> {
        let words: Vec<&str> = doc
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        words.iter().enumerate().find_map(|(i, w)| match *w {
            "measured" if words.get(i + 1) == Some(&"elsewhere") => Some(Provenance::Cited),
            "measured" => Some(Provenance::Measured),
            "cited" => Some(Provenance::Cited),
            "fit" | "scaled" => Some(Provenance::Fitted),
            "estimate" => Some(Provenance::Estimate),
            _ => None,
        })
    }

    /// Whether a cost's documentation gives its number a basis: an estimate must say, after
    /// the word, what it rests on (a derivation, a reference, or why no figure exists), in at
    /// least `ESTIMATE_BASIS_MIN_WORDS` words; the other provenances name their source already.
    pub fn states_basis(doc: &str) -> bool {
        if Provenance::of_doc(doc) != Some(Provenance::Estimate) {
            return true;
        }
        let after = doc.split_once("estimate").map_or("", |(_, rest)| rest);
        let words = after
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .count();
        words >= Self::ESTIMATE_BASIS_MIN_WORDS
    }

    /// The fewest words an estimate's basis takes ("estimate (one cache-hot byte test)").
    const ESTIMATE_BASIS_MIN_WORDS: usize = 4;
}

/// What the costs of a run come from (the scenario, a floor above): a profile name and
/// `[costs]` overrides, NAME = ns.
pub trait CostSource {
    fn cost_profile(&self) -> &str;
    fn cost_overrides(&self) -> &std::collections::BTreeMap<String, f64>;
    /// Costs the machine profile sets over the cost profile, NAME = ns (validated names);
    /// the `[costs]` overrides win over them.
    fn machine_costs(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

impl CostModel {
    pub const PROFILES: &'static [&'static str] = &["vm-6.18-2cpu", "arm64-vm-8cpu", "x86-server"];

    /// The costs a scenario runs with: its profile, with its `[costs]` overrides (validated).
    pub fn of_scenario(scenario: &impl CostSource) -> CostModel {
        let mut cost = CostModel::profile(scenario.cost_profile()).expect("validated cost profile");
        for (name, value_ns) in scenario.machine_costs() {
            assert!(cost.set(name, value_ns), "machine profile cost {name}");
        }
        for (name, value) in scenario.cost_overrides() {
            assert!(
                cost.set(name, value.round() as u64),
                "validated cost name {name}"
            );
        }
        cost
    }

    pub fn profile(name: &str) -> Option<CostModel> {
        match name {
            "vm-6.18-2cpu" => Some(CostModel::vm_6_18_2cpu()),
            "arm64-vm-8cpu" => Some(CostModel::arm64_vm_8cpu()),
            "x86-server" => Some(CostModel::x86_server()),
            _ => None,
        }
    }

    /// Seed 000's machine: an Ampere Altra (Neoverse N1) VM with 8 vCPUs, used with
    /// `machine.tlb = "arm64-tlbi"`. No per-operation measurement of that machine is public, so
    /// every kernel-path cost is this x86 VM's measured one, unchanged: fault, reclaim, swap
    /// slot, split and memory-stream costs are taken as architecture-neutral work of the same
    /// order on a 3 GHz server core. What differs is mechanism, not number: TLB invalidation is
    /// broadcast TLBI + DSB (`tlbi_issue_ns`, `tlb_dsb_ns`, cited above) instead of IPIs, and
    /// contpte blocks must be unfolded (mm/tlb/arm64.rs). The x86-only costs (IPI, mm_cpumask
    /// window) are unused there.
    fn arm64_vm_8cpu() -> CostModel {
        CostModel::vm_6_18_2cpu().with_unmeasured_hw()
    }

    /// The CPU-to-CPU costs measured on this VM (lock handoff, line transfers, an IPI's
    /// receive) are of its host's placement of two vCPUs and of its IPI exits: not of another
    /// machine. The profiles of other machines keep the estimates this VM had before they
    /// were measured (a handoff of 2 lines of 100 ns, a receive inside the measured flush).
    fn with_unmeasured_hw(self) -> CostModel {
        CostModel {
            lock_handoff_ns: 200,
            line_transfer_smt_ns: 100,
            line_transfer_llc_ns: 100,
            line_transfer_die_ns: 100,
            line_transfer_socket_ns: 100,
            tlb_ipi_receive_ns: 0,
            ..self
        }
    }

    /// The costs `with_unmeasured_hw` sets: estimates in every profile but this VM's.
    const UNMEASURED_HW: [&'static str; 6] = [
        "lock_handoff_ns",
        "line_transfer_smt_ns",
        "line_transfer_llc_ns",
        "line_transfer_die_ns",
        "line_transfer_socket_ns",
        "tlb_ipi_receive_ns",
    ];

    /// A bare-metal x86 server (seed 003's make -j96 box: 96 hardware threads, no hypervisor).
    /// Every cost is this VM's except its measured CPU-to-CPU costs (`with_unmeasured_hw`) and
    /// the shootdown IPI, which is a VM exit on each side here:
    /// docs/calibration-split-tlb.md measured 12 µs in this guest, about 10x a bare-metal
    /// shootdown, so 1.2 µs (estimate), and each further target CPU costs one x2APIC ICR write
    /// (~0.1 µs, estimate) instead of an exit.
    fn x86_server() -> CostModel {
        CostModel {
            tlb_flush_ipi_ns: 1200,
            tlb_ipi_extra_cpu_ns: 100,
            ..CostModel::vm_6_18_2cpu().with_unmeasured_hw()
        }
    }

    /// Where cost `name` of cost profile `profile` comes from: its documentation's provenance,
    /// except where the profile replaces the documented number by its own estimate.
    pub fn provenance(profile: &str, name: &str) -> Option<Provenance> {
        match (profile, name) {
            ("x86-server", "tlb_flush_ipi_ns" | "tlb_ipi_extra_cpu_ns") => {
                Some(Provenance::Estimate)
            }
            ("x86-server" | "arm64-vm-8cpu", n) if Self::UNMEASURED_HW.contains(&n) => {
                Some(Provenance::Estimate)
            }
            _ => Provenance::of_doc(CostModel::doc(name)?),
        }
    }

    /// The `[costs]` table of a costs file (`foliosim calibrate` writes one),
    /// NAME = ns. Other tables ([provenance], [measured]) are kept for people, not read. Errors
    /// name the key and what is allowed; the values' range is checked where they are applied
    /// (scenario validation).
    pub fn parse_costs_file(text: &str) -> Result<std::collections::BTreeMap<String, f64>, String> {
        #[derive(serde::Deserialize)]
        struct File {
            costs: std::collections::BTreeMap<String, f64>,
        }
        let f: File = toml::from_str(text)
            .map_err(|e| format!("expected a [costs] table of NAME = ns: {e}"))?;
        if let Some(name) = f.costs.keys().find(|n| !Self::NAMES.contains(&n.as_str())) {
            return Err(format!(
                "costs.{name}: no such cost; allowed: {}",
                Self::NAMES.join(", ")
            ));
        }
        Ok(f.costs)
    }

    /// Fault cost for a folio of `order` (the measured per-size table).
    pub fn fault_folio_ns(&self, order: u32) -> u64 {
        match order {
            0 => self.fault_4k_ns,
            1 => self.fault_8k_ns,
            2 => self.fault_16k_ns,
            3 => self.fault_32k_ns,
            4 => self.fault_64k_ns,
            5 => self.fault_128k_ns,
            6 => self.fault_256k_ns,
            7 => self.fault_512k_ns,
            8 => self.fault_1m_ns,
            _ => self.fault_2m_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_settable() {
        let mut c = CostModel::profile("vm-6.18-2cpu").unwrap();
        for name in CostModel::NAMES {
            assert!(c.set(name, 7), "{name}");
        }
        assert_eq!(c.fault_folio_ns(4), 7);
        assert!(!c.set("no_such_cost", 1));
        assert_eq!(c.get("fault_4k_ns"), Some(7));
        assert!(CostModel::doc("tlb_dsb_ns").unwrap().contains("Dev Jain"));
        assert!(CostModel::doc("no_such_cost").is_none());
    }

    #[test]
    fn every_cost_states_its_provenance() {
        for name in CostModel::NAMES {
            let doc = CostModel::doc(name).unwrap();
            assert!(Provenance::of_doc(doc).is_some(), "{name}: {doc}");
        }
        let of = |name| Provenance::of_doc(CostModel::doc(name).unwrap());
        assert_eq!(of("fault_4k_ns"), Some(Provenance::Measured));
        assert_eq!(of("tlb_dsb_ns"), Some(Provenance::Cited));
        assert_eq!(of("split_folio_ns"), Some(Provenance::Fitted));
        assert_eq!(of("lock_handoff_ns"), Some(Provenance::Measured));
        for profile in ["x86-server", "arm64-vm-8cpu"] {
            assert_eq!(
                CostModel::provenance(profile, "lock_handoff_ns"),
                Some(Provenance::Estimate),
                "{profile}: measured on this VM only"
            );
        }
        assert_eq!(Provenance::of_doc("no word of it"), None);
    }

    #[test]
    fn every_estimate_states_its_basis() {
        let bare: Vec<&str> = CostModel::NAMES
            .iter()
            .copied()
            .filter(|name| !Provenance::states_basis(CostModel::doc(name).unwrap()))
            .collect();
        assert!(bare.is_empty(), "estimates without a basis: {bare:?}");
        assert!(!Provenance::states_basis("Moving a folio. estimate."));
        assert!(!Provenance::states_basis("A load: ~5 cycles. estimate."));
        assert!(Provenance::states_basis(
            "x. estimate: as y, the same per-PTE work."
        ));
        assert!(Provenance::states_basis("x. measured (1.78 µs)."));
    }
}
