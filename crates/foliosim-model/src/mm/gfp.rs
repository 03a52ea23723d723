//! Allocation flags (include/linux/gfp_types.h, include/linux/gfp.h): the kernel's bit values,
//! the named composites, and what the page allocator and memcg charges read from them.

use super::page_alloc::migratetype::MigrateType;

/// A gfp_t: which memory an allocation may use and how hard it may try to find it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gfp(pub u32);

impl Gfp {
    // Bit values as in 6.18's gfp_types.h (CONFIG_KASAN_HW_TAGS and CONFIG_LOCKDEP off).
    pub const DMA: Gfp = Gfp(1 << 0);
    pub const HIGHMEM: Gfp = Gfp(1 << 1);
    pub const DMA32: Gfp = Gfp(1 << 2);
    pub const MOVABLE: Gfp = Gfp(1 << 3);
    pub const RECLAIMABLE: Gfp = Gfp(1 << 4);
    pub const HIGH: Gfp = Gfp(1 << 5);
    pub const IO: Gfp = Gfp(1 << 6);
    pub const FS: Gfp = Gfp(1 << 7);
    pub const ZERO: Gfp = Gfp(1 << 8);
    pub const DIRECT_RECLAIM: Gfp = Gfp(1 << 10);
    pub const KSWAPD_RECLAIM: Gfp = Gfp(1 << 11);
    pub const WRITE: Gfp = Gfp(1 << 12);
    pub const NOWARN: Gfp = Gfp(1 << 13);
    pub const RETRY_MAYFAIL: Gfp = Gfp(1 << 14);
    pub const NOFAIL: Gfp = Gfp(1 << 15);
    pub const NORETRY: Gfp = Gfp(1 << 16);
    pub const MEMALLOC: Gfp = Gfp(1 << 17);
    pub const COMP: Gfp = Gfp(1 << 18);
    pub const NOMEMALLOC: Gfp = Gfp(1 << 19);
    pub const HARDWALL: Gfp = Gfp(1 << 20);
    pub const THISNODE: Gfp = Gfp(1 << 21);
    pub const ACCOUNT: Gfp = Gfp(1 << 22);

    /// __GFP_RECLAIM: direct and kswapd reclaim.
    pub const RECLAIM: Gfp = Gfp(Self::DIRECT_RECLAIM.0 | Self::KSWAPD_RECLAIM.0);

    pub const GFP_ATOMIC: Gfp = Gfp(Self::HIGH.0 | Self::KSWAPD_RECLAIM.0);
    pub const GFP_KERNEL: Gfp = Gfp(Self::RECLAIM.0 | Self::IO.0 | Self::FS.0);
    pub const GFP_NOWAIT: Gfp = Gfp(Self::KSWAPD_RECLAIM.0 | Self::NOWARN.0);
    pub const GFP_NOIO: Gfp = Self::RECLAIM;
    pub const GFP_USER: Gfp = Gfp(Self::GFP_KERNEL.0 | Self::HARDWALL.0);
    pub const GFP_HIGHUSER: Gfp = Gfp(Self::GFP_USER.0 | Self::HIGHMEM.0);
    /// __GFP_SKIP_KASAN is 0 without CONFIG_KASAN_HW_TAGS.
    pub const GFP_HIGHUSER_MOVABLE: Gfp = Gfp(Self::GFP_HIGHUSER.0 | Self::MOVABLE.0);
    /// THP faults by default: no reclaim of any kind; fail at once.
    pub const GFP_TRANSHUGE_LIGHT: Gfp = Gfp((Self::GFP_HIGHUSER_MOVABLE.0
        | Self::COMP.0
        | Self::NOMEMALLOC.0
        | Self::NOWARN.0)
        & !Self::RECLAIM.0);
    /// GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM (no kswapd wakeup).
    pub const GFP_TRANSHUGE: Gfp = Gfp(Self::GFP_TRANSHUGE_LIGHT.0 | Self::DIRECT_RECLAIM.0);

    /// The names the rest of the model has used: GFP_KERNEL (an order-0 charge, a swap-in).
    pub const KERNEL: Gfp = Self::GFP_KERNEL;
    pub const TRANSHUGE_LIGHT: Gfp = Self::GFP_TRANSHUGE_LIGHT;
    pub const TRANSHUGE: Gfp = Self::GFP_TRANSHUGE;

    /// GFP_TRANSHUGE as a release defines it: before 4.8 it included __GFP_NORETRY (and
    /// __GFP_NO_KSWAPD, which GFP_TRANSHUGE's missing __GFP_KSWAPD_RECLAIM stands for), so
    /// madvised faults and khugepaged gave up after one round of reclaim and compaction too.
    pub fn transhuge_of(release: crate::scenario::Release) -> Gfp {
        if release.has(crate::scenario::MmChange::GfpTranshugeRetry) {
            Self::GFP_TRANSHUGE
        } else {
            Self::GFP_TRANSHUGE.noretry()
        }
    }

    /// `self | __GFP_NORETRY`.
    pub const fn noretry(self) -> Gfp {
        Gfp(self.0 | Self::NORETRY.0)
    }

    pub const fn contains(self, flags: Gfp) -> bool {
        self.0 & flags.0 == flags.0
    }

    pub const fn union(self, flags: Gfp) -> Gfp {
        Gfp(self.0 | flags.0)
    }

    pub const fn without(self, flags: Gfp) -> Gfp {
        Gfp(self.0 & !flags.0)
    }

    /// gfpflags_allow_blocking: __GFP_DIRECT_RECLAIM, the caller may reclaim (and wait) itself.
    pub const fn allow_blocking(self) -> bool {
        self.contains(Self::DIRECT_RECLAIM)
    }

    /// gfp_migratetype: __GFP_MOVABLE and __GFP_RECLAIMABLE pick the free lists.
    pub const fn migratetype(self) -> MigrateType {
        if self.contains(Self::MOVABLE) {
            MigrateType::Movable
        } else if self.contains(Self::RECLAIMABLE) {
            MigrateType::Reclaimable
        } else {
            MigrateType::Unmovable
        }
    }

    /// gfp_zone: the highest zone the allocation may use, as the GFP_ZONE_TABLE maps the zone
    /// modifiers (x86-64: __GFP_MOVABLE needs __GFP_HIGHMEM as well to reach ZONE_MOVABLE).
    pub const fn zone(self) -> GfpZone {
        if self.contains(Self::DMA) {
            GfpZone::Dma
        } else if self.contains(Self::DMA32) {
            GfpZone::Dma32
        } else if self.contains(Gfp(Self::MOVABLE.0 | Self::HIGHMEM.0)) {
            GfpZone::Movable
        } else {
            GfpZone::Normal
        }
    }
}

/// enum zone_type as gfp_zone returns it; the model has one populated zone (Normal), but the
/// zone a request names still decides counters such as allocstall_<zone>.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GfpZone {
    Dma,
    Dma32,
    Normal,
    Movable,
}

impl std::ops::BitOr for Gfp {
    type Output = Gfp;
    fn bitor(self, rhs: Gfp) -> Gfp {
        self.union(rhs)
    }
}

/// Flag names in the kernel's %pGg order, for messages and test failures.
const NAMES: &[(Gfp, &str)] = &[
    (Gfp::DMA, "__GFP_DMA"),
    (Gfp::HIGHMEM, "__GFP_HIGHMEM"),
    (Gfp::DMA32, "__GFP_DMA32"),
    (Gfp::MOVABLE, "__GFP_MOVABLE"),
    (Gfp::RECLAIMABLE, "__GFP_RECLAIMABLE"),
    (Gfp::HIGH, "__GFP_HIGH"),
    (Gfp::IO, "__GFP_IO"),
    (Gfp::FS, "__GFP_FS"),
    (Gfp::ZERO, "__GFP_ZERO"),
    (Gfp::DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM"),
    (Gfp::KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM"),
    (Gfp::WRITE, "__GFP_WRITE"),
    (Gfp::NOWARN, "__GFP_NOWARN"),
    (Gfp::RETRY_MAYFAIL, "__GFP_RETRY_MAYFAIL"),
    (Gfp::NOFAIL, "__GFP_NOFAIL"),
    (Gfp::NORETRY, "__GFP_NORETRY"),
    (Gfp::MEMALLOC, "__GFP_MEMALLOC"),
    (Gfp::COMP, "__GFP_COMP"),
    (Gfp::NOMEMALLOC, "__GFP_NOMEMALLOC"),
    (Gfp::HARDWALL, "__GFP_HARDWALL"),
    (Gfp::THISNODE, "__GFP_THISNODE"),
    (Gfp::ACCOUNT, "__GFP_ACCOUNT"),
];

impl std::fmt::Debug for Gfp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = NAMES
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| *name)
            .collect();
        write!(f, "{:#x}({})", self.0, names.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composites_have_the_kernels_values() {
        // 6.18 values (x86-64, no KASAN HW tags, no lockdep).
        assert_eq!(Gfp::GFP_KERNEL.0, 0xcc0);
        assert_eq!(Gfp::GFP_HIGHUSER_MOVABLE.0, 0x100cca);
        assert_eq!(Gfp::GFP_TRANSHUGE_LIGHT.0, 0x1c20ca);
        assert_eq!(Gfp::GFP_TRANSHUGE.0, 0x1c24ca);
        assert!(!Gfp::GFP_TRANSHUGE.contains(Gfp::KSWAPD_RECLAIM));
    }

    #[test]
    fn migratetype_and_zone_follow_the_modifiers() {
        assert_eq!(
            Gfp::GFP_HIGHUSER_MOVABLE.migratetype(),
            MigrateType::Movable
        );
        assert_eq!(Gfp::GFP_KERNEL.migratetype(), MigrateType::Unmovable);
        assert_eq!(
            (Gfp::GFP_KERNEL | Gfp::RECLAIMABLE).migratetype(),
            MigrateType::Reclaimable
        );
        assert_eq!(Gfp::GFP_HIGHUSER_MOVABLE.zone(), GfpZone::Movable);
        assert_eq!(Gfp::GFP_TRANSHUGE.zone(), GfpZone::Movable);
        assert_eq!(Gfp::GFP_KERNEL.zone(), GfpZone::Normal);
        assert_eq!((Gfp::GFP_KERNEL | Gfp::MOVABLE).zone(), GfpZone::Normal);
    }
}
