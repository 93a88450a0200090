//! A header's text index and its cut into top-level items on arbitrary
//! text: never a panic, and the items are in bounds, in order, disjoint and
//! not empty (the survey parses them one by one at these offsets).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = fgft_facts::hdr::index(text, text);
    if let Some(items) = fgft_facts::hdr::items(data) {
        let mut end = 0;
        for it in &items {
            assert!(it.range.start >= end, "items overlap or go back");
            assert!(it.range.start < it.range.end, "empty item");
            assert!(it.range.end <= data.len(), "item past the end");
            if let Some(o) = it.open {
                assert!(it.range.contains(&o), "open brace outside its item");
            }
            end = it.range.end;
        }
    }
});
