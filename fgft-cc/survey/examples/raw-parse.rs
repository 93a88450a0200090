//! The speed limit for `fgft-cc survey`: raw tree-sitter-c over the same `.c`
//! files (no macro hints, no facts), in parallel with rayon.
//!
//! `cargo run --release -p fgft-survey --example raw-parse -- TREE [-j N]`
//! prints `files=N bytes=B secs=S MB/s=R errors=E` on one line.

use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let jobs = args
        .iter()
        .position(|a| a == "-j")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0);
    let Some(tree) = args
        .iter()
        .enumerate()
        .find(|(i, a)| !a.starts_with('-') && (*i == 0 || args[i - 1] != "-j"))
        .map(|(_, a)| a.clone())
    else {
        eprintln!("usage: raw-parse TREE [-j N]");
        std::process::exit(2);
    };
    let tree = Path::new(&tree);
    let d = match fgft_survey::discover(tree) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("raw-parse: {e}");
            std::process::exit(1);
        }
    };
    let files: Vec<_> = d
        .sources
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .map(|p| tree.join(p))
        .collect();
    let pool = match rayon::ThreadPoolBuilder::new().num_threads(jobs).build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("raw-parse: {e}");
            std::process::exit(1);
        }
    };
    let t0 = Instant::now();
    let (bytes, errors) = pool.install(|| {
        files
            .par_iter()
            .map(|p| {
                let Ok(text) = std::fs::read(p) else {
                    return (0usize, 0usize);
                };
                let mut parser = tree_sitter::Parser::new();
                if parser
                    .set_language(&tree_sitter_c::LANGUAGE.into())
                    .is_err()
                {
                    return (text.len(), 1);
                }
                match parser.parse(&text, None) {
                    Some(t) => (text.len(), usize::from(t.root_node().has_error())),
                    None => (text.len(), 1),
                }
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "files={} bytes={bytes} secs={secs:.2} MB/s={:.1} files_with_errors={errors}",
        files.len(),
        bytes as f64 / 1e6 / secs
    );
}
