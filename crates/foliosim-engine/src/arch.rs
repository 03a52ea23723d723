//! Architecture constants (x86-64 and arm64 with 4 KiB pages), below every model that sizes
//! pages or huge pages.

pub const PAGE_SIZE: u64 = 4096;
/// Orders a per-size `hugepages-<size>kB/enabled` knob exists for (x86-64/arm64 with 4 KiB pages).
pub const PMD_ORDER: u32 = 9;
