//! Shared helpers of the aspect tests.

#![allow(dead_code)]

use fgft_base::kbuild::Make;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fgft-cc is in the repository")
        .to_path_buf()
}

/// The kernel tree variables (KDIR, SRC612), from the environment or from
/// `scripts/setup.sh --print-env`.  A test that needs them fails without
/// them: the set-up step is part of the test command.
pub fn kernel() -> (PathBuf, PathBuf) {
    if let (Ok(k), Ok(s)) = (std::env::var("KDIR"), std::env::var("SRC612")) {
        return (PathBuf::from(k), PathBuf::from(s));
    }
    let out = Command::new("bash")
        .arg(root().join("scripts/setup.sh"))
        .arg("--print-env")
        .output()
        .expect("run scripts/setup.sh");
    assert!(
        out.status.success(),
        "setup.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("export {k}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("setup.sh printed no {k}"))
    };
    (get("KDIR"), get("SRC612"))
}

/// Runs `fgft-cc aspect` from the repository root; returns (exit code,
/// stdout, stderr).
pub fn aspect(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
        .arg("aspect")
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("run fgft-cc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `make -C kdir M=dir modules`; panics with the output on failure or on
/// any warning.
pub fn kbuild(kdir: &Path, dir: &Path) {
    let out = Make::new(kdir, dir)
        .target("modules")
        .env("LC_ALL", "C")
        .env_remove("MAKEFLAGS")
        .run()
        .expect("run make");
    let text = out.combined();
    assert!(out.success(), "kbuild of {} failed:\n{text}", dir.display());
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("warning:") || l.contains("WARNING:"))
        .collect();
    assert!(
        warnings.is_empty(),
        "kbuild of {} warns:\n{}",
        dir.display(),
        warnings.join("\n")
    );
}

/// checkpatch on a generated file: no error, no warning.
pub fn checkpatch(src612: &Path, file: &Path) {
    let out = Command::new("perl")
        .arg(src612.join("scripts/checkpatch.pl"))
        .args(["--no-tree", "--terse", "--show-types", "-f"])
        .arg(file)
        .output()
        .expect("run checkpatch");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": ERROR:") || l.contains(": WARNING:"))
        .collect();
    assert!(
        bad.is_empty(),
        "checkpatch on {}:\n{}",
        file.display(),
        bad.join("\n")
    );
}

/// Checks that weaving only inserted text: every line of the original is a
/// subsequence of the same line of the woven file (after the two lines of
/// the header include), except lines rewritten by argument capture.
pub fn only_insertions(original: &str, woven: &str) {
    let o: Vec<&str> = original.lines().collect();
    let w: Vec<&str> = woven.lines().collect();
    let inc = w
        .iter()
        .position(|l| l.starts_with("#include \"fgft_aspect_"))
        .expect("the woven file includes the aspect header");
    assert!(
        w[inc + 1].starts_with("#line "),
        "#line follows the include"
    );
    let w: Vec<&str> = w[..inc].iter().chain(&w[inc + 2..]).copied().collect();
    let extra = w.len().saturating_sub(o.len());
    assert!(
        extra <= 1,
        "woven file has {extra} more lines than the original"
    );
    for (i, (a, b)) in o.iter().zip(&w).enumerate() {
        if b.contains("__fgft_a") {
            continue;
        }
        let mut it = b.chars();
        let ok = a.chars().all(|c| it.any(|d| d == c));
        assert!(
            ok,
            "line {} is not an insertion-only rewrite:\n  {a}\n  {b}",
            i + 1
        );
    }
}
