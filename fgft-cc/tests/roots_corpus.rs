//! Golden roots of the six corpus drivers, read from linux-source-6.12 at run
//! time.  Only fgft's output (function, slot, file:line) is snapshotted.

mod roots_common;
use roots_common::{roots, CORPUS};

#[test]
fn corpus_roots() {
    for (name, files) in CORPUS {
        let out = roots(files, &[]);
        assert!(!out.is_empty(), "{name}: no roots");
        insta::assert_snapshot!(format!("corpus_{name}"), out.join("\n"));
    }
}
