#![no_main]
// Body and limits: crates/foliosim/src/fuzz.rs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim::fuzz::scenario_toml(data);
});
