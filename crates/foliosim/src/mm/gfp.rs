//! Allocation flags (include/linux/gfp_types.h): only the bits that decide how hard the model's
//! allocations and memcg charges may try.

/// What an allocation or charge may do to find memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gfp {
    /// __GFP_DIRECT_RECLAIM: the caller may reclaim (and wait) itself.
    pub direct_reclaim: bool,
    /// __GFP_NORETRY: give up after one round of reclaim instead of retrying.
    pub noretry: bool,
}

impl Gfp {
    /// GFP_KERNEL / GFP_HIGHUSER_MOVABLE: reclaim and retry (an order-0 fault, a swap-in).
    pub const KERNEL: Gfp = Gfp {
        direct_reclaim: true,
        noretry: false,
    };
    /// GFP_TRANSHUGE_LIGHT: no reclaim at all; fail at once.
    pub const TRANSHUGE_LIGHT: Gfp = Gfp {
        direct_reclaim: false,
        noretry: false,
    };
    /// GFP_TRANSHUGE: GFP_TRANSHUGE_LIGHT | __GFP_DIRECT_RECLAIM.
    pub const TRANSHUGE: Gfp = Gfp {
        direct_reclaim: true,
        noretry: false,
    };

    /// `self | __GFP_NORETRY`.
    pub const fn noretry(self) -> Gfp {
        Gfp {
            noretry: true,
            ..self
        }
    }
}
