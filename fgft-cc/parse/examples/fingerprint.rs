//! Regression aid for front-end speed work: one line per `.c`/`.h` file under
//! a tree with hashes of the rewritten text and of the tree (kinds and byte
//! ranges of every node) and the file's health, so two builds can be
//! compared with `diff`.
//!
//! `cargo run --release -p fgft-parse --example fingerprint -- DIR > out.txt`

use fgft_parse::{parse_file_with, Options};
use rayon::prelude::*;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    v.sort();
    for p in v {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "c" || e == "h") {
            out.push(p);
        }
    }
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: fingerprint DIR");
        std::process::exit(2);
    };
    let opts = match Options::with_default_hints() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut files = Vec::new();
    walk(Path::new(&dir), &mut files);
    let lines: Vec<String> = files
        .par_iter()
        .map(|p| match parse_file_with(p, &opts) {
            Ok(pf) => {
                let mut h = DefaultHasher::new();
                pf.hinted.hash(&mut h);
                let text = h.finish();
                let mut h = DefaultHasher::new();
                let mut c = pf.tree.walk();
                'w: loop {
                    let n = c.node();
                    (n.kind_id(), n.start_byte(), n.end_byte(), n.is_missing()).hash(&mut h);
                    if c.goto_first_child() {
                        continue;
                    }
                    loop {
                        if c.goto_next_sibling() {
                            break;
                        }
                        if !c.goto_parent() {
                            break 'w;
                        }
                    }
                }
                let tree = h.finish();
                let health = pf.health();
                let broken: Vec<String> = health
                    .broken()
                    .map(|f| format!("{}@{}", f.name, f.line))
                    .collect();
                format!(
                    "{} {text:016x} {tree:016x} fns={} broken=[{}] stray={}",
                    p.display(),
                    health.functions.len(),
                    broken.join(","),
                    health.stray.len()
                )
            }
            Err(e) => format!("{} error {e}", p.display()),
        })
        .collect();
    for l in lines {
        println!("{l}");
    }
}
