//! Set-ups the lab's integration tests share.

use foliosim::Scenario;
use std::path::{Path, PathBuf};

/// The repository's root (scenarios/, docs/, tools/).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A shipped scenario, `scenarios/FILE`, validated.
pub fn shipped_scenario(file: &str) -> Scenario {
    let path = repo().join("scenarios").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
