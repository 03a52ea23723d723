//! Integration tests of the lab: reproductions, sweeps, fit, soak, fuzz regressions.
//! One test binary for the crate's integration tests (CI links one binary, not one per
//! file); each file is a module, so a test is named `FILE::TEST` (`cargo test --test it FILE::`).

mod bench;
mod common;
mod fit;
mod fuzz_corpus;
mod fuzz_regressions;
mod noncontig_swapout;
mod report_outputs;
mod seed000_shape;
mod seed001_shape;
mod seed003_shape;
mod seed004_shape;
mod soak;
mod sweep;
mod zswap;
