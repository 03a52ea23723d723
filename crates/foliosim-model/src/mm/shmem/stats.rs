//! shmem's counters, under the kernel's names: /proc/vmstat's `thp_file_*` and `nr_shmem*`,
//! and the per-size `hugepages-<size>kB/stats/shmem_*` (MTHP_STAT_SHMEM_*). Kept apart from
//! vmstat.rs so that runs without tmpfs report exactly the counters they did before.

use crate::mm::vmstat::hugepages_dir;
use crate::scenario::PMD_ORDER;
use std::collections::BTreeMap;

const ALLOC: usize = 0;
const FALLBACK: usize = 1;
const FALLBACK_CHARGE: usize = 2;
const MTHP_NAMES: [&str; 3] = ["shmem_alloc", "shmem_fallback", "shmem_fallback_charge"];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShmemStats {
    pub thp_file_alloc: u64,
    pub thp_file_fallback: u64,
    pub thp_file_fallback_charge: u64,
    /// By order: shmem_alloc, shmem_fallback, shmem_fallback_charge.
    mthp: [[u64; 3]; PMD_ORDER as usize + 1],
}

impl ShmemStats {
    /// A large folio of `order` was allocated and added (THP_FILE_ALLOC for the PMD size).
    pub fn alloc(&mut self, order: u32) {
        if order == PMD_ORDER {
            self.thp_file_alloc += 1;
        }
        if order > 0 {
            self.mthp[order as usize][ALLOC] += 1;
        }
    }

    /// Its allocation failed, or (`charge`) its memcg charge did.
    pub fn fallback(&mut self, order: u32, charge: bool) {
        if order == PMD_ORDER {
            self.thp_file_fallback += 1;
            self.thp_file_fallback_charge += charge as u64;
        }
        let per_size = &mut self.mthp[order as usize];
        per_size[FALLBACK] += 1;
        per_size[FALLBACK_CHARGE] += charge as u64;
    }

    pub fn get_mthp(&self, order: u32, name: &str) -> u64 {
        let i = MTHP_NAMES
            .iter()
            .position(|n| *n == name)
            .expect("a shmem stat");
        self.mthp[order as usize][i]
    }

    /// The counters and the node's shmem gauges (pages), under their kernel names.
    pub fn to_map(&self, nr_shmem: u64, nr_shmem_thps: u64) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        m.insert("nr_shmem".into(), nr_shmem);
        m.insert("nr_shmem_hugepages".into(), nr_shmem_thps >> PMD_ORDER);
        // Never mapped: the model's tmpfs files are reached by read(2) and write(2) only.
        m.insert("nr_shmem_pmdmapped".into(), 0);
        m.insert("thp_file_mapped".into(), 0);
        m.insert("thp_file_alloc".into(), self.thp_file_alloc);
        m.insert("thp_file_fallback".into(), self.thp_file_fallback);
        m.insert(
            "thp_file_fallback_charge".into(),
            self.thp_file_fallback_charge,
        );
        for order in 1..=PMD_ORDER {
            for (i, name) in MTHP_NAMES.iter().enumerate() {
                let key = format!("{}/stats/{name}", hugepages_dir(order));
                m.insert(key, self.mthp[order as usize][i]);
            }
        }
        m
    }
}
