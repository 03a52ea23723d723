//! foliosim: a deterministic simulator of Linux memory management for large folios (mTHP).
//!
//! A facade over the floors (docs/architecture.md): `foliosim-engine` (the ground floor),
//! `foliosim-model` (the scenario, hardware, the mm model, workloads, the scheduler, `run`) and
//! `foliosim-report` (HTML and SVG), under the module paths they had when they were one crate:
//! `foliosim::scenario`, `foliosim::mm`, `foliosim::run`, `foliosim::report::html`, ... The lab
//! (reproduce, sweep, fit, soak) is `foliosim_lab`.

pub use foliosim_engine as engine;
pub use foliosim_model::*;
pub use foliosim_report as report;
