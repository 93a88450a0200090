//! The Kbuild reader on arbitrary text: modules, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mk = fgft_base::makefile::parse(&text);
    for m in mk.modules() {
        assert!(!m.objects.is_empty());
    }
});
