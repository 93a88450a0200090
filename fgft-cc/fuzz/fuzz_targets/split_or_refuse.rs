//! Split or refuse (issue 47): a mutated driver source goes through the
//! split library the way `fgft-cc split` takes it (no `--kdir`), and either
//! the split succeeds and OUT is written whole through `outdir::stage` and
//! `commit`, or it is refused and nothing at all is written.  A panic, an
//! abort or a hang (libFuzzer's `-timeout`) is a finding.
//!
//! Input: one byte of options, then the driver's `.c`; a line
//! `//@@ NAME.h` splits off a local header the `.c` may `#include "NAME.h"`
//! (the rest of the input).  The option byte picks the isolate patterns
//! (low 3 bits) and the flags `--no-checkpoint` (0x08), `--no-read-checks`
//! (0x10) and `--no-hints` (0x20).
//!
//! Every run writes into a directory of its own under `$TMPDIR`
//! (`fgft-fuzz-split-PID`): `src/` holds the driver, OUT is `out/split`
//! (its parent does not exist, so the stage makes it and must take it away
//! again on a refusal).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// The line that starts the header part of an input.
const HEADER_MARK: &[u8] = b"\n//@@ ";

struct Env {
    tables: fgft_split::Tables,
    work: PathBuf,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let work = std::env::temp_dir().join(format!("fgft-fuzz-split-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).expect("make the work directory");
        Env {
            tables: fgft_split::Tables::load(&[]).expect("built-in tables load"),
            work,
        }
    })
}

/// The isolate patterns and profile of an option byte.
fn isolate(b: u8) -> (Vec<String>, Option<String>) {
    let pats = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    match b & 7 {
        0 => (vec![], Some("management".into())),
        1 => (pats(&["ethtool_ops.*"]), None),
        2 => (pats(&["*_get_*"]), None),
        3 => (vec![], Some("ethtool".into())),
        4 => (pats(&["*"]), None),
        5 => (pats(&["ethtool_ops.get_*", "*_set_*"]), None),
        6 => (pats(&["net_device_ops.*", "file_operations.*"]), None),
        _ => (vec![], None),
    }
}

/// A header name as the `.c` would include it: a plain file name ending in
/// `.h`, else `drv.h`.
fn header_name(raw: &[u8]) -> String {
    let name = String::from_utf8_lossy(raw).trim().to_string();
    let plain = name.len() <= 64
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-' || c == b'.')
        && name.ends_with(".h")
        && !name.starts_with('.');
    if plain {
        name
    } else {
        "drv.h".into()
    }
}

/// The driver's files: (name, bytes), the `.c` first.
fn files(data: &[u8]) -> Vec<(String, &[u8])> {
    let Some(at) = data.windows(HEADER_MARK.len()).position(|w| w == HEADER_MARK) else {
        return vec![("drv.c".into(), data)];
    };
    let rest = &data[at + HEADER_MARK.len()..];
    let eol = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
    let body = rest.get(eol + 1..).unwrap_or(&[]);
    vec![
        ("drv.c".into(), &data[..at + 1]),
        (header_name(&rest[..eol]), body),
    ]
}

/// Every entry under `dir` (relative paths), sorted.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap_or(&p).to_path_buf());
        }
    }
    out.sort();
    out
}

fn run(data: &[u8]) {
    let Some((&opt, text)) = data.split_first() else {
        return;
    };
    let e = env();
    let src = e.work.join("src");
    let out_parent = e.work.join("out");
    let out = out_parent.join("split");
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&out_parent);
    std::fs::create_dir_all(&src).expect("make src");
    let mut sources = Vec::new();
    for (name, bytes) in files(text) {
        let p = src.join(&name);
        std::fs::write(&p, bytes).expect("write the driver");
        if name.ends_with(".c") {
            sources.push(p);
        }
    }
    let before = listing(&e.work);
    let (isolate, profile) = isolate(opt);
    let opts = fgft_split::Options {
        sources,
        isolate,
        profile,
        no_checkpoint: opt & 0x08 != 0,
        no_read_checks: opt & 0x10 != 0,
        no_hints: opt & 0x20 != 0,
        ..Default::default()
    };
    match fgft_split::compute_with(&opts, &e.tables) {
        Ok(split) => {
            for rel in split.out.keys() {
                assert!(
                    rel.components().all(|c| matches!(c, Component::Normal(_))),
                    "an output path leaves OUT: {}",
                    rel.display()
                );
            }
            let stage = fgft_base::outdir::stage(&out, &split.inputs, false, "fuzz")
                .expect("a fresh OUT beside the driver is refused");
            fgft_split::write(stage.path(), &split.out).expect("write the stage");
            stage.commit().expect("commit OUT");
            assert!(fgft_base::outdir::is_ours(&out), "OUT has no manifest");
            for rel in split.out.keys() {
                assert!(out.join(rel).is_file(), "{} missing", rel.display());
            }
            // Nothing written beside OUT (no staging directory left).
            let names: Vec<_> = std::fs::read_dir(&out_parent)
                .expect("read OUT's parent")
                .flatten()
                .map(|d| d.file_name())
                .collect();
            assert_eq!(names, vec![std::ffi::OsString::from("split")]);
        }
        Err(err) => {
            assert!(!out.exists(), "refused ({err}) but OUT exists");
            assert_eq!(listing(&e.work), before, "refused ({err}) but wrote");
        }
    }
}

fuzz_target!(|data: &[u8]| run(data));
