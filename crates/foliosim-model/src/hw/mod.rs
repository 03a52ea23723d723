//! Hardware models, apart from kernel policy.
pub mod blockdev;
pub mod compressor;
pub mod contention;
pub mod iaa;
pub mod ipi;
pub mod membw;
pub mod profile;
pub mod ssd_ftl;
pub mod tlb_cache;
pub mod topology;
