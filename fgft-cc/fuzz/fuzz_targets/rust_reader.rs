//! The survey's Rust reader (syn) on arbitrary text: entry points or a
//! located syntax error, never a panic.
#![no_main]

use fgft_survey::model::{FileSummary, Lang};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s =
        fgft_survey::rust::summarize_text(text, FileSummary::empty("fuzz.rs".into(), Lang::Rust));
    if let Some(f) = s.failure {
        assert!(f.line >= 1);
    }
});
