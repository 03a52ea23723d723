//! Hardware models, apart from kernel policy.
pub mod blockdev;
pub mod ssd_ftl;
