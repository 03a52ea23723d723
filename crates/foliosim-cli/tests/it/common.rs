//! Set-ups the program's integration tests share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `foliosim` program cargo built for these tests.
pub fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

/// The repository's root (scenarios/, tools/).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
