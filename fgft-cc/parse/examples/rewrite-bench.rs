//! Speed and regression aid for the macro-hint rewrite alone: reads every
//! `.c` (and with `--headers` also `.h`) file under the given trees, then times
//! only `HintTable::rewrite` over all of them, single-threaded.
//!
//! ```text
//! cargo run --release -p fgft-parse --example rewrite-bench -- \
//!     [--repeat N] [--headers] [--top N] [--hashes OUT] [--check IN] DIR...
//! ```
//!
//! `--top N` lists the N files that took longest (in the last round).
//!
//! `--hashes OUT` writes one line per file (hash of the rewritten text, path);
//! `--check IN` compares this build's outputs with such a file and exits 1 on
//! any difference, so two builds can be compared byte for byte over a tree.
//! Files that are not UTF-8 are decoded lossily (they are rewritten too).

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn walk(dir: &Path, headers: bool, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    v.sort();
    for p in v {
        if p.is_symlink() {
            continue;
        }
        if p.is_dir() {
            walk(&p, headers, out);
        } else if p
            .extension()
            .is_some_and(|e| e == "c" || (headers && e == "h"))
        {
            out.push(p);
        }
    }
}

fn hash(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn usage() -> ! {
    eprintln!(
        "usage: rewrite-bench [--repeat N] [--headers] [--top N] [--hashes OUT] [--check IN] DIR..."
    );
    std::process::exit(2);
}

fn fail(msg: String) -> ! {
    eprintln!("rewrite-bench: {msg}");
    std::process::exit(1);
}

fn main() {
    let mut repeat = 1usize;
    let mut headers = false;
    let mut top = 0usize;
    let mut hashes_out = None;
    let mut check_in = None;
    let mut dirs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repeat" => {
                repeat = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--headers" => headers = true,
            "--top" => {
                top = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--hashes" => hashes_out = Some(args.next().unwrap_or_else(|| usage())),
            "--check" => check_in = Some(args.next().unwrap_or_else(|| usage())),
            _ if a.starts_with("--") => usage(),
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    if dirs.is_empty() {
        usage();
    }
    let table = fgft_parse::hints::HintTable::load(&fgft_parse::tables::TableDirs::none())
        .unwrap_or_else(|e| fail(e.to_string()));
    let mut paths = Vec::new();
    for d in &dirs {
        walk(d, headers, &mut paths);
    }
    let mut texts = Vec::with_capacity(paths.len());
    let mut bytes = 0usize;
    for p in &paths {
        let raw = std::fs::read(p).unwrap_or_else(|e| fail(format!("{}: {e}", p.display())));
        let text = String::from_utf8_lossy(&raw).into_owned();
        bytes += text.len();
        texts.push(text);
    }
    eprintln!(
        "{} files, {:.1} MB",
        texts.len(),
        bytes as f64 / (1024.0 * 1024.0)
    );

    let mut best = f64::INFINITY;
    let mut sink = 0usize;
    let mut per_file = vec![0f64; if top > 0 { texts.len() } else { 0 }];
    for round in 0..repeat {
        let t0 = Instant::now();
        if top > 0 {
            for (t, slot) in texts.iter().zip(&mut per_file) {
                let t1 = Instant::now();
                sink = sink.wrapping_add(table.rewrite(t).len());
                *slot = t1.elapsed().as_secs_f64() * 1e3;
            }
        } else {
            for t in &texts {
                sink = sink.wrapping_add(table.rewrite(t).len());
            }
        }
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        best = best.min(ms);
        eprintln!(
            "round {round}: {ms:.1} ms ({:.1} MB/s)",
            bytes as f64 / (1024.0 * 1024.0) / (ms / 1e3)
        );
    }
    eprintln!("best: {best:.1} ms (checksum {sink})");
    if top > 0 {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by(|&a, &b| per_file[b].total_cmp(&per_file[a]));
        for &k in order.iter().take(top) {
            eprintln!(
                "{:9.2} ms {:8} bytes  {}",
                per_file[k],
                texts[k].len(),
                paths[k].display()
            );
        }
    }

    if hashes_out.is_none() && check_in.is_none() {
        return;
    }
    let lines: Vec<(u64, String)> = texts
        .iter()
        .zip(&paths)
        .map(|(t, p)| (hash(&table.rewrite(t)), p.display().to_string()))
        .collect();
    if let Some(out) = hashes_out {
        let body: String = lines
            .iter()
            .map(|(h, p)| format!("{h:016x} {p}\n"))
            .collect();
        std::fs::write(&out, body).unwrap_or_else(|e| fail(format!("{out}: {e}")));
        eprintln!("wrote {} hashes to {out}", lines.len());
    }
    if let Some(inp) = check_in {
        let want = std::fs::read_to_string(&inp).unwrap_or_else(|e| fail(format!("{inp}: {e}")));
        let mut expected = BTreeMap::new();
        for (n, l) in want.lines().enumerate() {
            let Some((h, p)) = l.split_once(' ') else {
                fail(format!("{inp}:{}: not `HASH PATH`", n + 1));
            };
            let Ok(h) = u64::from_str_radix(h, 16) else {
                fail(format!("{inp}:{}: bad hash `{h}`", n + 1));
            };
            expected.insert(p.to_string(), h);
        }
        let mut same = 0usize;
        let mut differ = 0usize;
        let mut missing = 0usize;
        for (h, p) in &lines {
            match expected.get(p) {
                Some(e) if e == h => same += 1,
                Some(_) => {
                    differ += 1;
                    println!("DIFFERS {p}");
                }
                None => {
                    missing += 1;
                    println!("NOT IN {inp}: {p}");
                }
            }
        }
        eprintln!("{same} identical, {differ} different, {missing} not in {inp}");
        if differ > 0 || missing > 0 || lines.len() != expected.len() {
            std::process::exit(1);
        }
    }
}
