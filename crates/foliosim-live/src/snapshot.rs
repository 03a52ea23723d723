//! `foliosim snapshot --live`: this host's free lists, pageblock types, memory and zones as
//! one snapshot file for `[machine.start] snapshot` (foliosim-model mm/snapshot/). Reads /proc
//! only; /proc/pagetypeinfo is readable by root only (mode 0400), so the error says so.

use anyhow::{Context, Result};

/// The /proc files a snapshot holds, in its section order.
pub const SECTIONS: [&str; 4] = ["buddyinfo", "pagetypeinfo", "meminfo", "zoneinfo"];

/// The snapshot text: each file after its `== /proc/<name> ==` line.
pub fn capture() -> Result<String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut out = format!("# foliosim host snapshot, kernel {}\n", release.trim());
    for name in SECTIONS {
        let path = format!("/proc/{name}");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!("reading {path} (/proc/pagetypeinfo is readable by root only)")
        })?;
        out.push_str(&format!("== {path} ==\n{text}"));
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
