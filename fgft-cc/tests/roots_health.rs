//! Parse health of kernel code with the macro hints: every top-level function
//! of drivers/net/ethernet/intel/e1000 and drivers/net/ethernet/realtek parses
//! with no ERROR or MISSING node (and nothing outside functions fails either).
//! On failure the test lists the functions that remain broken.  The raw parse
//! of the same files is checked to be worse, so the hints are what matters.

mod roots_common;
use fgft_parse::{parse_file_with, Options};
use roots_common::src612;
use std::path::{Path, PathBuf};

fn c_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .collect();
    v.sort();
    for p in v {
        if p.is_dir() {
            c_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "c") {
            out.push(p);
        }
    }
}

/// (functions, broken "file:line name" list, stray error count).
fn health(dir: &str, opts: &Options) -> (usize, Vec<String>, usize) {
    let mut files = Vec::new();
    c_files(&src612().join(dir), &mut files);
    assert!(!files.is_empty());
    let (mut n, mut broken, mut stray) = (0, Vec::new(), 0);
    for f in files {
        let pf = parse_file_with(&f, opts).expect("parse");
        let h = pf.health();
        n += h.functions.len();
        stray += h.stray.len();
        for b in h.broken() {
            broken.push(format!("{}:{} {}", f.display(), b.line, b.name));
        }
    }
    (n, broken, stray)
}

#[test]
fn hints_make_e1000_and_realtek_parse_cleanly() {
    let hinted = Options::with_default_hints().expect("hints");
    for dir in [
        "drivers/net/ethernet/intel/e1000",
        "drivers/net/ethernet/realtek",
    ] {
        let (n, broken, stray) = health(dir, &hinted);
        assert!(n > 200, "{dir}: only {n} functions");
        assert!(
            broken.is_empty() && stray == 0,
            "{dir}: {} of {n} functions still hold ERROR/MISSING nodes, {stray} errors outside functions:\n{}",
            broken.len(),
            broken.join("\n")
        );
        let (_, raw_broken, raw_stray) = health(dir, &Options::raw());
        assert!(
            raw_broken.len() + raw_stray > 10,
            "{dir}: raw parse unexpectedly clean"
        );
    }
}
