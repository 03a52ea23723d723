//! Migratetypes and pageblocks (include/linux/mmzone.h, include/linux/pageblock-flags.h): free
//! pages are grouped by mobility in 2 MiB pageblocks, each labelled with the type of the
//! allocations it serves.

/// enum migratetype, in the kernel's order (CONFIG_CMA off: no MIGRATE_CMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum MigrateType {
    Unmovable = 0,
    Movable = 1,
    Reclaimable = 2,
    /// Reserved for high-order atomic allocations (reserve_highatomic_pageblock). The model has
    /// no such allocations: the type exists with its free lists and watermark accounting only.
    HighAtomic = 3,
    /// Pageblocks being isolated (compaction's alloc_contig_range, memory offlining): their free
    /// pages are not counted as free and never merge with other types. Nothing isolates yet.
    Isolate = 4,
}

/// MIGRATE_PCPTYPES: the types with per-CPU lists and fallbacks.
pub const MIGRATE_PCPTYPES: usize = 3;
pub const MIGRATE_TYPES: usize = 5;

/// pageblock_order on x86-64 / arm64 with 4 KiB pages (HPAGE_PMD_ORDER).
pub const PAGEBLOCK_ORDER: u32 = 9;
pub const PAGEBLOCK_NR_PAGES: u32 = 1 << PAGEBLOCK_ORDER;

impl MigrateType {
    pub const ALL: [MigrateType; MIGRATE_TYPES] = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
        MigrateType::Isolate,
    ];

    /// migratetype_names, as /proc/pagetypeinfo prints them.
    pub fn name(self) -> &'static str {
        match self {
            MigrateType::Unmovable => "Unmovable",
            MigrateType::Movable => "Movable",
            MigrateType::Reclaimable => "Reclaimable",
            MigrateType::HighAtomic => "HighAtomic",
            MigrateType::Isolate => "Isolate",
        }
    }

    pub fn from_index(i: u8) -> MigrateType {
        Self::ALL[i as usize]
    }

    /// migratetype_is_mergeable: free pages of these types may merge across pageblocks of
    /// different types (the merged block takes the freeing page's type).
    pub fn is_mergeable(self) -> bool {
        (self as usize) < MIGRATE_PCPTYPES
    }

    /// fallbacks[]: where a type takes pages from when its own lists are empty, in order.
    pub fn fallbacks(self) -> [MigrateType; 2] {
        match self {
            MigrateType::Unmovable => [MigrateType::Reclaimable, MigrateType::Movable],
            MigrateType::Movable => [MigrateType::Reclaimable, MigrateType::Unmovable],
            MigrateType::Reclaimable => [MigrateType::Unmovable, MigrateType::Movable],
            MigrateType::HighAtomic | MigrateType::Isolate => {
                unreachable!("{self:?} has no fallbacks")
            }
        }
    }
}
