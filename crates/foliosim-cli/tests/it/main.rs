//! Integration tests of the `foliosim` program (html_report_browser.rs stays its own
//! binary: it drives a headless browser with its own time limits).
//! One test binary for the crate's integration tests (CI links one binary, not one per
//! file); each file is a module, so a test is named `FILE::TEST` (`cargo test --test it FILE::`).

mod bad_input;
mod common;
mod parallel;
mod show;
mod sweep_replace;
