//! Where the survey's time goes, phase by phase, over the `.c` files of a
//! tree (one thread): raw parse, hinted parse, health, the survey's walk
//! with the slot scan, headers (parse, health, walk), roots, and the walks
//! alone for reference.
//!
//! `cargo run --release -p fgft-survey --example phases -- TREE`

use fgft_facts::slots::{self, SlotTable};
use fgft_parse::Options;
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let Some(tree) = std::env::args().nth(1) else {
        eprintln!("usage: phases TREE");
        std::process::exit(2);
    };
    let tree = Path::new(&tree);
    let (d, opts, table) = match (
        fgft_survey::discover(tree),
        Options::with_default_hints(),
        SlotTable::load(&fgft_parse::tables::TableDirs::none()),
    ) {
        (Ok(d), Ok(o), Ok(t)) => (d, o, t),
        _ => {
            eprintln!("phases: cannot start");
            std::process::exit(1);
        }
    };
    let raw = Options::raw();
    let Some(hints) = opts.hints.clone() else {
        eprintln!("phases: no hint table");
        std::process::exit(1);
    };
    let mut t = [Duration::ZERO; 10];
    let names = [
        "raw parse",
        "hinted parse",
        "(hint rewrite)",
        "(parse of rewritten, no fallback)",
        "health",
        "walk+scan",
        "headers",
        "roots_of",
        "(walk alone)",
        "(bare cursor walk)",
    ];
    let top: usize = std::env::var("PHASES_TOP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut per_file: Vec<Vec<(Duration, std::path::PathBuf)>> = vec![Vec::new(); 10];
    let mut hdr_seen = HashSet::new();
    for rel in d
        .sources
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
    {
        let p = tree.join(rel);
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let Ok((text, _)) = fgft_parse::decode(&p, bytes) else {
            continue;
        };
        let before = t;
        let s = Instant::now();
        let _ = fgft_parse::parse_text_with(&p, text.clone(), &raw);
        t[0] += s.elapsed();
        let s = Instant::now();
        let Ok(pf) = fgft_parse::parse_text_with(&p, text.clone(), &opts) else {
            continue;
        };
        t[1] += s.elapsed();
        let s = Instant::now();
        let rewritten = hints.rewrite(&text);
        t[2] += s.elapsed();
        let s = Instant::now();
        let _ = fgft_parse::parse_text_with(&p, rewritten, &raw);
        t[3] += s.elapsed();
        let s = Instant::now();
        let _ = fgft_parse::health::stray(&pf.tree, &pf.hinted);
        t[4] += s.elapsed();
        let s = Instant::now();
        let mut scan = slots::Scan::new(&pf, Some(&table));
        let _ = fgft_survey::csum::walk_with(&pf, true, Some(&mut scan));
        let (own, candidates) = scan.finish();
        let mut facts = slots::FactSet::from(own);
        t[5] += s.elapsed();
        let s = Instant::now();
        for h in fgft_base::includes::local_includes(&pf.path, &pf.text, &[]) {
            if hdr_seen.insert(h.clone()) {
                if let Ok(hp) = fgft_parse::parse_file_with(&h, &opts) {
                    let mut hs = slots::Scan::new(&hp, None);
                    let _ = fgft_survey::csum::walk_with(&hp, false, Some(&mut hs));
                    facts.push(std::sync::Arc::new(hs.finish().0));
                }
            }
        }
        t[6] += s.elapsed();
        let s = Instant::now();
        let _ = slots::roots_of(&pf, &facts, &table, &candidates);
        t[7] += s.elapsed();
        let s = Instant::now();
        let _ = fgft_survey::csum::walk(&pf, true);
        t[8] += s.elapsed();
        let s = Instant::now();
        let mut c = pf.tree.root_node().walk();
        let mut nodes = 0usize;
        'w: loop {
            nodes += c.node().kind_id() as usize & 1;
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
        std::hint::black_box(nodes);
        t[9] += s.elapsed();
        if top > 0 {
            for (k, v) in per_file.iter_mut().enumerate() {
                v.push((t[k] - before[k], rel.clone()));
            }
        }
    }
    for (n, d) in names.iter().zip(t) {
        println!("{n:>14}: {:.2}s", d.as_secs_f64());
    }
    // PHASES_TOP=N: the N slowest files of each phase.
    for (n, mut v) in names.iter().zip(per_file) {
        if top == 0 {
            break;
        }
        v.sort_by_key(|x| std::cmp::Reverse(x.0));
        println!("== {n}");
        for (d, f) in v.iter().take(top) {
            println!("  {:.3}s {}", d.as_secs_f64(), f.display());
        }
    }
}
