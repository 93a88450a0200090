//! The sidecar annotation parser (TOML) on arbitrary text: an error or
//! annotations, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = fgft_annotations::parse_sidecar_str("fuzz.toml", text);
});
