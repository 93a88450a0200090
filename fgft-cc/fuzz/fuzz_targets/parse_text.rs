//! The C front end on arbitrary bytes: decode, macro-hint rewrite,
//! tree-sitter with a parse budget, parse health, slot roots and the
//! survey's walk.  Invariants: no panic, the tree's text is the input's
//! length, every node range lies inside the text.
#![no_main]

use fgft_parse::{Budget, Options};
use fgft_survey::csum::{self, CContext};
use fgft_survey::model::{FileSummary, Lang};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

fn ctx() -> &'static CContext {
    static CTX: OnceLock<CContext> = OnceLock::new();
    CTX.get_or_init(|| {
        let hints = fgft_parse::default_hints().expect("built-in hints load");
        let opts = Options {
            hints: Some(hints),
            budget: Budget {
                time: Duration::from_millis(500),
                max_bytes: 1 << 20,
            },
        };
        let table = fgft_facts::slots::SlotTable::builtin().expect("built-in slots load");
        CContext::new(opts, table)
    })
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.c");
    let Ok((text, _)) = fgft_parse::decode(path, data.to_vec()) else {
        return;
    };
    let c = ctx();
    if let Ok(pf) = fgft_parse::parse_text_with(path, text.clone(), &c.opts) {
        assert_eq!(pf.text.len(), text.len());
        assert_eq!(pf.hinted.len(), text.len());
        assert!(pf.tree.root_node().end_byte() <= text.len());
        let h = pf.health();
        for f in &h.functions {
            assert!(f.range.end <= text.len());
        }
    }
    let s = csum::summarize_text(c, path, text, FileSummary::empty("fuzz.c".into(), Lang::C));
    for f in &s.functions {
        assert!(f.line >= 1);
    }
});
