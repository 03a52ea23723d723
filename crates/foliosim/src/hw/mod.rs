//! Hardware models, apart from kernel policy.
pub mod blockdev;
