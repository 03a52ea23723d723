//! Hardware models, apart from kernel policy.
pub mod blk_limits;
pub mod blk_mq;
pub mod blk_wbt;
pub mod blockdev;
pub mod blockdev_profile;
pub mod compressor;
pub mod contention;
pub mod iaa;
pub mod ipi;
pub mod membw;
pub mod profile;
pub mod ssd_ftl;
pub mod tlb_cache;
pub mod topology;
