//! Parse health and speed over a tree: share of top-level functions with
//! ERROR/MISSING nodes, raw tree-sitter-c against the macro hints.
//!
//! `cargo run --release -p fgft-parse --example parse-health -- DIR [--raw] [--show N]`
//! prints one summary line (and with `--show N` the first N broken functions
//! with the line where their first problem is).

use fgft_parse::{parse_file_with, Options};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    v.sort();
    for p in v {
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "c") {
            out.push(p);
        }
    }
}

struct FileStat {
    bytes: usize,
    functions: usize,
    broken: Vec<String>,
    stray: usize,
    stray_lines: Vec<String>,
    failed: Option<String>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let raw = args.iter().any(|a| a == "--raw");
    let show: usize = args
        .iter()
        .position(|a| a == "--show")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let Some(dir) = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
    else {
        eprintln!("usage: parse-health DIR [--raw] [--show N]");
        std::process::exit(2);
    };
    let opts = if raw {
        Options::raw()
    } else {
        match Options::with_default_hints() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    };
    let mut files = Vec::new();
    walk(Path::new(dir), &mut files);
    let t0 = Instant::now();
    let stats: Vec<FileStat> = files
        .par_iter()
        .map(|p| match parse_file_with(p, &opts) {
            Ok(pf) => {
                let h = pf.health();
                let broken = h
                    .broken()
                    .map(|f| {
                        let at = f.first_problem.unwrap_or(f.range.start);
                        let line = pf.line_of(at);
                        let text = pf.text.lines().nth(line - 1).unwrap_or("").trim();
                        format!("{}:{} {}: {}", p.display(), line, f.name, text)
                    })
                    .collect();
                FileStat {
                    bytes: pf.text.len(),
                    functions: h.functions.len(),
                    broken,
                    stray: h.stray.len(),
                    stray_lines: h
                        .stray
                        .iter()
                        .map(|r| {
                            let line = pf.line_of(r.start);
                            let text = pf.text.lines().nth(line - 1).unwrap_or("").trim();
                            format!("stray {}:{}: {}", p.display(), line, text)
                        })
                        .collect(),
                    failed: None,
                }
            }
            Err(e) => FileStat {
                bytes: 0,
                functions: 0,
                broken: Vec::new(),
                stray: 0,
                stray_lines: Vec::new(),
                failed: Some(e.to_string()),
            },
        })
        .collect();
    let secs = t0.elapsed().as_secs_f64();
    let bytes: usize = stats.iter().map(|s| s.bytes).sum();
    let funcs: usize = stats.iter().map(|s| s.functions).sum();
    let broken: usize = stats.iter().map(|s| s.broken.len()).sum();
    let stray: usize = stats.iter().map(|s| s.stray).sum();
    let failed: Vec<&String> = stats.iter().filter_map(|s| s.failed.as_ref()).collect();
    println!(
        "{} files={} MB={:.1} functions={} broken={} clean={:.2}% stray_errors={} failed={} secs={:.2} MB/s={:.1}",
        if raw { "raw" } else { "hinted" },
        files.len(),
        bytes as f64 / 1e6,
        funcs,
        broken,
        100.0 * (funcs - broken) as f64 / funcs.max(1) as f64,
        stray,
        failed.len(),
        secs,
        bytes as f64 / 1e6 / secs
    );
    for f in failed {
        println!("failed: {f}");
    }
    for s in stats.iter().flat_map(|s| s.broken.iter()).take(show) {
        println!("{s}");
    }
    for s in stats.iter().flat_map(|s| s.stray_lines.iter()).take(show) {
        println!("{s}");
    }
}
