//! One configuration's run kept by a reproduction (foliosim-lab's reproduce/capture.rs keeps
//! them), as the HTML report shows it: here, below the lab, so the report needs no lab.

use foliosim_model::report::timeseries::TimeSeries;
use serde::Serialize;

/// One configuration's first-seed run.
#[derive(Debug, Clone, Serialize)]
pub struct CapturedRun {
    /// The experiment it belongs to: its workloads' kinds, e.g. `usemem`.
    pub group: String,
    /// What sets this configuration apart from the others of its group: the scenario fields
    /// that differ, e.g. `kernel.version=6.10 sysfs.hugepages.64K=always`.
    pub label: String,
    pub seed: u64,
    pub kernel: String,
    pub swap_allocator: String,
    pub simulated_ns: u64,
    /// The scenario as run, every default written out.
    pub scenario_toml: String,
    pub timeseries: Option<TimeSeries>,
}
