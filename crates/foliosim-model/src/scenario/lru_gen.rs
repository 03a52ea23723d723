//! The reclaim-list policy of a scenario: `[sysfs.lru_gen]`, /sys/kernel/mm/lru_gen/*.

use serde::{Deserialize, Serialize};

/// `/sys/kernel/mm/lru_gen/*`: MGLRU (the multi-generational LRU) instead of the classic
/// active/inactive lists (mm/vmscan/lru_gen/).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LruGenKnobs {
    /// `enabled` (default false: the classic two-list LRU). The live backend sets the host's
    /// switch only when the scenario gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `min_ttl_ms` (default 0: off): kswapd OOM-kills rather than evict a working set younger
    /// than this (lru_gen_age_node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ttl_ms: Option<u32>,
}

impl LruGenKnobs {
    /// Is MGLRU the reclaim policy of the sim?
    pub fn enabled(&self) -> bool {
        self.enabled.unwrap_or(false)
    }
}
