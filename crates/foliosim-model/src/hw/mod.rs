//! Hardware models, apart from kernel policy.
pub mod blockdev;
pub mod compressor;
pub mod iaa;
pub mod membw;
pub mod ssd_ftl;
pub mod tlb_cache;
