//! Integration tests of the model, through `foliosim_model::`.
//! One test binary for the crate's integration tests (CI links one binary, not one per
//! file); each file is a module, so a test is named `FILE::TEST` (`cargo test --test it FILE::`).

mod common;
mod compaction;
mod compressor;
mod determinism;
mod fault_preempt;
mod footprint;
mod invariants;
mod khugepaged;
mod kthreads;
mod layers;
mod machine_tlb_membw;
mod memcg_charge_and_lru;
mod memcg_hierarchy;
mod mglru;
mod oom;
mod page_alloc;
mod page_cache;
mod scenario_errors;
mod swap_alloc_props;
mod swap_cache_split;
mod swap_devices;
mod swap_readahead;
mod swapcache_large_folio;
mod tiering;
mod tlb_access;
mod workingset;
mod zap_batch;
mod zsmalloc_iaa;
