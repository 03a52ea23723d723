#![no_main]
// Body and limits: crates/foliosim-lab/src/fuzz.rs.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = foliosim_lab::fuzz::costs_file(data);
});
