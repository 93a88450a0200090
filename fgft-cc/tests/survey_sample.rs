//! No panic on real kernel code, in CI: the survey's per-file work (front
//! end with macro hints, slot roots, the survey's walk, the Rust reader) over
//! a deterministic sample of linux-source-6.12's drivers/, fs/ and sound/,
//! and the Kbuild reader over every makefile of those trees.  The full sweep
//! is `scripts/no-panic-sweep.sh` (a benchmark command).

use fgft_base::makefile;
use fgft_survey::{Context, SurveyOptions};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How many files the sample holds (per tree, about a third each).
const SAMPLE: usize = 200;

fn src612() -> PathBuf {
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/setup.sh"))
        .arg("--print-env")
        .output()
        .expect("setup.sh runs");
    assert!(
        out.status.success(),
        "setup.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("export SRC612="))
        .expect("setup.sh prints SRC612");
    PathBuf::from(line)
}

fn walk(dir: &Path, srcs: &mut Vec<PathBuf>, mks: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut v: Vec<_> = rd.flatten().collect();
    v.sort_by_key(|e| e.file_name());
    for e in v {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            walk(&p, srcs, mks);
        } else if ft.is_file() {
            let n = e.file_name();
            if n == "Makefile" || n == "Kbuild" {
                mks.push(p);
            } else if p.extension().is_some_and(|x| x == "c" || x == "rs") {
                srcs.push(p);
            }
        }
    }
}

#[test]
fn survey_sample_of_drivers_fs_sound_never_panics() {
    let root = src612();
    let ctx = Context::new(&SurveyOptions::default()).expect("tables load");
    let mut panics = Vec::new();
    let mut surveyed = 0;
    let mut makefiles = 0;
    for tree in ["drivers", "fs", "sound"] {
        let mut srcs = Vec::new();
        let mut mks = Vec::new();
        walk(&root.join(tree), &mut srcs, &mut mks);
        assert!(!srcs.is_empty(), "no sources under {tree}");
        // Every Rust file (there are few) and an even stride of C files.
        let stride = (srcs.len() / (SAMPLE / 3)).max(1);
        let sample: Vec<&PathBuf> = srcs
            .iter()
            .enumerate()
            .filter(|(i, p)| i % stride == 0 || p.extension().is_some_and(|x| x == "rs"))
            .map(|(_, p)| p)
            .collect();
        for p in sample {
            let rel = p.strip_prefix(&root).unwrap_or(p);
            let r = catch_unwind(AssertUnwindSafe(|| ctx.summarize(p, rel)));
            match r {
                Ok(_) => surveyed += 1,
                Err(_) => panics.push(p.display().to_string()),
            }
        }
        for m in &mks {
            let text = String::from_utf8_lossy(&std::fs::read(m).unwrap_or_default()).into_owned();
            let r = catch_unwind(|| makefile::parse(&text).modules().len());
            match r {
                Ok(_) => makefiles += 1,
                Err(_) => panics.push(m.display().to_string()),
            }
        }
    }
    assert!(panics.is_empty(), "panics on: {panics:#?}");
    assert!(surveyed >= SAMPLE, "only {surveyed} files surveyed");
    assert!(makefiles > 1000, "only {makefiles} makefiles read");
}
