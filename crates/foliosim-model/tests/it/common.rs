//! Set-ups the model's integration tests share: parse a scenario, run it, and panic with
//! what failed (a test's message then names the scenario's error, not an `unwrap`).

use foliosim_model::{RunResult, Scenario};

/// A scenario from TOML text, validated.
pub fn parse(text: &str) -> Scenario {
    Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{e}"))
}

/// Run to completion; a failure names the kernel and seed.
pub fn run(s: &Scenario) -> RunResult {
    foliosim_model::run(s)
        .unwrap_or_else(|e| panic!("kernel {} seed {}: {e}", s.kernel.version.name(), s.seed))
}
