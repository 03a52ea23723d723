//! Watermarks (mm/page_alloc.c): min/low/high from vm.min_free_kbytes and
//! vm.watermark_scale_factor (__setup_per_zone_wmarks), raised by a fragmentation boost
//! (boost_watermark), and the check every allocation makes against them (__zone_watermark_ok).

use super::buddy::FreeArea;
use super::migratetype::{MigrateType, MIGRATE_PCPTYPES, PAGEBLOCK_NR_PAGES};
use super::MAX_PAGE_ORDER;

/// alloc_flags (mm/internal.h, 6.18 names: ALLOC_HARDER / ALLOC_HIGH became ALLOC_NON_BLOCK /
/// ALLOC_MIN_RESERVE in 6.3). The low bits index the watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocFlags(pub u32);

impl AllocFlags {
    pub const WMARK_MIN: AllocFlags = AllocFlags(0);
    pub const WMARK_LOW: AllocFlags = AllocFlags(1);
    pub const WMARK_HIGH: AllocFlags = AllocFlags(2);
    pub const NO_WATERMARKS: AllocFlags = AllocFlags(0x04);
    pub const WMARK_MASK: u32 = 0x04 - 1;
    pub const OOM: AllocFlags = AllocFlags(0x08);
    pub const NON_BLOCK: AllocFlags = AllocFlags(0x10);
    pub const MIN_RESERVE: AllocFlags = AllocFlags(0x20);
    pub const CPUSET: AllocFlags = AllocFlags(0x40);
    pub const CMA: AllocFlags = AllocFlags(0x80);
    pub const NOFRAGMENT: AllocFlags = AllocFlags(0x100);
    pub const HIGHATOMIC: AllocFlags = AllocFlags(0x200);
    pub const KSWAPD: AllocFlags = AllocFlags(0x800);
    /// ALLOC_RESERVES: any of the flags that may dip below the min watermark.
    pub const RESERVES: AllocFlags =
        AllocFlags(Self::NON_BLOCK.0 | Self::MIN_RESERVE.0 | Self::HIGHATOMIC.0 | Self::OOM.0);

    pub const fn has(self, f: AllocFlags) -> bool {
        self.0 & f.0 != 0
    }
    pub const fn with(self, f: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 | f.0)
    }
    pub const fn without(self, f: AllocFlags) -> AllocFlags {
        AllocFlags(self.0 & !f.0)
    }
    /// Which watermark the flags check (`alloc_flags & ALLOC_WMARK_MASK`).
    pub const fn wmark(self) -> Wmark {
        match self.0 & Self::WMARK_MASK {
            0 => Wmark::Min,
            1 => Wmark::Low,
            _ => Wmark::High,
        }
    }
}

/// enum zone_watermarks (WMARK_PROMO is used by NUMA tiering only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wmark {
    Min,
    Low,
    High,
    Promo,
}

/// The vm.* sysctls the watermarks come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatermarkSysctl {
    pub min_free_kbytes: u64,
    /// vm.watermark_scale_factor, in 1/10000 of the zone (1..=3000; default 10).
    pub watermark_scale_factor: u32,
    /// vm.watermark_boost_factor, in 1/10000 of the high watermark (0 disables; default 15000).
    pub watermark_boost_factor: u32,
}

pub const DEFAULT_WATERMARK_SCALE_FACTOR: u32 = 10;
pub const DEFAULT_WATERMARK_BOOST_FACTOR: u32 = 15000;

/// zone->_watermark[], in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Watermarks {
    pub min_pages: u64,
    pub low_pages: u64,
    pub high_pages: u64,
    pub promo_pages: u64,
}

impl Watermarks {
    pub fn get(&self, w: Wmark) -> u64 {
        match w {
            Wmark::Min => self.min_pages,
            Wmark::Low => self.low_pages,
            Wmark::High => self.high_pages,
            Wmark::Promo => self.promo_pages,
        }
    }
}

/// calculate_min_free_kbytes: sqrt(16 x lowmem KiB), within 128 KiB ..= 256 MiB. At boot the
/// high watermarks are still 0, so lowmem is every managed page.
pub fn calculate_min_free_kbytes(managed_pages: u64) -> u64 {
    (managed_pages * 4 * 16).isqrt().clamp(128, 262_144)
}

/// set_recommended_min_free_kbytes (mm/khugepaged.c), when khugepaged runs (PMD THP enabled):
/// two free pageblocks per zone, plus MIGRATE_PCPTYPES^2 more to limit fallbacks, at most 5%
/// of lowmem; it only ever raises min_free_kbytes. `nr_zones` counts the zones up to
/// ZONE_NORMAL (the model has one; an x86-64 machine has DMA, DMA32 and Normal).
pub fn recommended_min_free_kbytes(managed_pages: u64, nr_zones: u64, current_kbytes: u64) -> u64 {
    let per_zone = PAGEBLOCK_NR_PAGES as u64 * nr_zones;
    let pages = (per_zone * 2 + per_zone * (MIGRATE_PCPTYPES * MIGRATE_PCPTYPES) as u64)
        .min(managed_pages / 20);
    (pages * 4).max(current_kbytes)
}

/// __setup_per_zone_wmarks for the only (lowmem) zone: min is the zone's share of
/// min_free_kbytes; low and high each add max(min / 4, managed x scale_factor / 10000).
pub fn setup_per_zone_wmarks(managed_pages: u64, sysctl: &WatermarkSysctl) -> Watermarks {
    let min = sysctl.min_free_kbytes >> 2;
    let step = (min >> 2).max(managed_pages * sysctl.watermark_scale_factor as u64 / 10_000);
    Watermarks {
        min_pages: min,
        low_pages: min + step,
        high_pages: min + 2 * step,
        promo_pages: min + 3 * step,
    }
}

/// boost_watermark: a fragmenting fallback raises the watermarks by a pageblock, up to
/// watermark_boost_factor of the high watermark, so kswapd reclaims a little more. Returns
/// whether it boosted.
pub fn boost_watermark(
    boost_pages: &mut u64,
    wmark: &Watermarks,
    managed_pages: u64,
    boost_factor: u32,
) -> bool {
    if boost_factor == 0 {
        return false;
    }
    // Not on zones too small to get anything back (kdump kernels and the like).
    if PAGEBLOCK_NR_PAGES as u64 * 4 > managed_pages {
        return false;
    }
    let max_boost = wmark.high_pages * boost_factor as u64 / 10_000;
    if max_boost == 0 {
        return false;
    }
    let max_boost = max_boost.max(PAGEBLOCK_NR_PAGES as u64);
    *boost_pages = (*boost_pages + PAGEBLOCK_NR_PAGES as u64).min(max_boost);
    true
}

/// __zone_watermark_ok: are there more than `mark` free pages (less the ones the request may
/// not use), and, for order > 0, a free block of at least `order` on a list it may use?
pub fn zone_watermark_ok(
    area: &FreeArea,
    order: u32,
    mark: u64,
    alloc_flags: AllocFlags,
    free_pages: i64,
) -> bool {
    let mut min = mark as i64;
    // __zone_watermark_unusable_free: the block beyond the first page, and the highatomic
    // reserve unless the request may use reserves.
    let mut unusable = (1i64 << order) - 1;
    if !alloc_flags.has(AllocFlags::RESERVES) {
        unusable += area.nr_free_highatomic as i64;
    }
    let free_pages = free_pages - unusable;
    if alloc_flags.has(AllocFlags::RESERVES) {
        if alloc_flags.has(AllocFlags::MIN_RESERVE) {
            // __GFP_HIGH: half the min reserve; non-blocking ones a quarter more.
            min -= min / 2;
            if alloc_flags.has(AllocFlags::NON_BLOCK) {
                min -= min / 4;
            }
        }
        if alloc_flags.has(AllocFlags::OOM) {
            min -= min / 2;
        }
    }
    // lowmem_reserve[] is 0: the model has one zone.
    if free_pages <= min {
        return false;
    }
    if order == 0 {
        return true;
    }
    (order..=MAX_PAGE_ORDER).any(|o| {
        area.nr_free(o) > 0
            && (MigrateType::ALL[..MIGRATE_PCPTYPES]
                .iter()
                .any(|&mt| !area.free_area_empty(o, mt))
                || (alloc_flags.has(AllocFlags::HIGHATOMIC.with(AllocFlags::OOM))
                    && !area.free_area_empty(o, MigrateType::HighAtomic)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysctl(min_free_kbytes: u64, wsf: u32) -> WatermarkSysctl {
        WatermarkSysctl {
            min_free_kbytes,
            watermark_scale_factor: wsf,
            watermark_boost_factor: DEFAULT_WATERMARK_BOOST_FACTOR,
        }
    }

    #[test]
    fn min_free_kbytes_matches_the_kernels_table() {
        // The table in calculate_min_free_kbytes' comment.
        for (mib, kbytes) in [
            (16u64, 512u64),
            (64, 1024),
            (1024, 4096),
            (4096, 8192),
            (16384, 16384),
        ] {
            assert_eq!(calculate_min_free_kbytes(mib << 8), kbytes, "{mib} MiB");
        }
        assert_eq!(calculate_min_free_kbytes(1 << 40 >> 12), 131_072);
        assert_eq!(calculate_min_free_kbytes(1 << 42 >> 12), 262_144);
    }

    #[test]
    fn watermarks_of_a_16_gib_zone() {
        // 16 GiB = 4194304 pages, min_free_kbytes 16384 -> min 4096 pages; the scale factor's
        // step (4194304 x 10 / 10000 = 4194) beats min/4 (1024).
        let w = setup_per_zone_wmarks(4_194_304, &sysctl(16384, 10));
        assert_eq!(
            (w.min_pages, w.low_pages, w.high_pages),
            (4096, 8290, 12484)
        );
        // A small zone: min/4 wins. 64 MiB: min 256, step max(64, 16) = 64.
        let w = setup_per_zone_wmarks(16384, &sysctl(1024, 10));
        assert_eq!((w.min_pages, w.low_pages, w.high_pages), (256, 320, 384));
        // watermark_scale_factor = 1000 (10%).
        let w = setup_per_zone_wmarks(4_194_304, &sysctl(16384, 1000));
        assert_eq!(w.low_pages - w.min_pages, 419_430);
    }

    #[test]
    fn khugepaged_raises_min_free_kbytes() {
        // One zone: 512 x 11 pages = 22528 KiB, on a machine big enough for the 5% cap not
        // to bite.
        assert_eq!(recommended_min_free_kbytes(4_194_304, 1, 16384), 22_528);
        // 64 MiB: capped at 5% of 16384 pages = 819 pages.
        assert_eq!(recommended_min_free_kbytes(16384, 1, 1024), 3276);
        // Never lowers it.
        assert_eq!(recommended_min_free_kbytes(4_194_304, 1, 65536), 65536);
    }

    #[test]
    fn boost_grows_by_a_pageblock_up_to_the_factor() {
        let w = Watermarks {
            min_pages: 1000,
            low_pages: 2000,
            high_pages: 3000,
            promo_pages: 4000,
        };
        let mut boost = 0;
        assert!(boost_watermark(&mut boost, &w, 1 << 20, 15000));
        assert_eq!(boost, 512);
        for _ in 0..20 {
            boost_watermark(&mut boost, &w, 1 << 20, 15000);
        }
        assert_eq!(boost, 4500, "capped at 150% of high");
        let mut boost = 0;
        assert!(!boost_watermark(&mut boost, &w, 1 << 20, 0));
        assert!(
            !boost_watermark(&mut boost, &w, 2047, 15000),
            "zone under 4 pageblocks"
        );
    }
}
