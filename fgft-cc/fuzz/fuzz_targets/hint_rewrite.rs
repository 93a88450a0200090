//! The macro-hint rewrite on arbitrary text: it must keep the length and
//! every newline where it was (byte ranges and lines of the tree are those
//! of the original file), and never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let hints = fgft_parse::default_hints().expect("built-in hints load");
    let out = hints.rewrite(text);
    assert_eq!(out.len(), text.len(), "rewrite changed the length");
    for (k, (a, b)) in text.bytes().zip(out.bytes()).enumerate() {
        assert_eq!(a == b'\n', b == b'\n', "newline moved at byte {k}");
    }
});
