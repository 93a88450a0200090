//! Golden tests of `fgft-cc roots` on small fixtures written for fgft, one per
//! way a function gets into a kernel slot, plus the error paths.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/roots")
}

fn roots_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
        .arg("roots")
        .args(args)
        .current_dir(dir)
        .env_remove("FGFT_TABLES")
        .output()
        .expect("run fgft-cc")
}

fn ok_stdout(args: &[&str]) -> String {
    let out = roots_in(&fixtures(), args);
    assert!(
        out.status.success(),
        "fgft-cc roots {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

#[test]
fn designated_initializers() {
    insta::assert_snapshot!("designated", ok_stdout(&["designated.c"]));
}

#[test]
fn positional_initializers() {
    insta::assert_snapshot!("positional", ok_stdout(&["positional.c"]));
}

#[test]
fn assignments() {
    insta::assert_snapshot!("assign", ok_stdout(&["assign.c"]));
}

#[test]
fn pm_macros() {
    insta::assert_snapshot!("pm_macros", ok_stdout(&["pm_macros.c"]));
}

#[test]
fn bus_drivers() {
    insta::assert_snapshot!("drivers", ok_stdout(&["drivers.c"]));
}

#[test]
fn attribute_macros() {
    insta::assert_snapshot!("attrs", ok_stdout(&["attrs.c"]));
}

#[test]
fn registering_calls() {
    insta::assert_snapshot!("calls", ok_stdout(&["calls.c"]));
}

/// A directory gives the union of its files, sorted by file then line, with
/// paths relative to it; the output is the same on every run.
#[test]
fn directory_is_sorted_union() {
    let dir = ok_stdout(&["."]);
    let mut expected = String::new();
    for f in [
        "assign.c",
        "attrs.c",
        "calls.c",
        "designated.c",
        "drivers.c",
        "fs.c",
        "pm_macros.c",
        "positional.c",
    ] {
        // A directory's files are printed joined to it as given.
        expected.push_str(&ok_stdout(&[&format!("./{f}")]));
    }
    assert_eq!(dir, expected);
    assert!(dir.lines().all(|l| l.contains(" ./")), "{dir}");
    assert_eq!(dir, ok_stdout(&["."]));
}

#[test]
fn missing_file_is_an_error() {
    let out = roots_in(&fixtures(), &["no-such-file.c"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-file.c"), "{err}");
}

#[test]
fn not_c_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "hello").unwrap();
    std::fs::write(tmp.path().join("blob.c"), b"\x7fELF\x02\x01\x00\x00").unwrap();
    let out = roots_in(tmp.path(), &["notes.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a C or Rust source file"));
    let out = roots_in(tmp.path(), &["blob.c"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("blob.c") && err.contains("NUL"), "{err}");
    // A Rust file that does not parse: its syntax error, at its line.
    std::fs::write(tmp.path().join("bad.rs"), "fn ok() {}\nfn broken( {\n").unwrap();
    let out = roots_in(tmp.path(), &["bad.rs"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.rs:2:") || err.contains("bad.rs:3:"),
        "{err}"
    );
}

#[test]
fn good_files_still_print_when_one_is_bad() {
    let out = roots_in(&fixtures(), &["calls.c", "missing.c"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("fx_init module.init calls.c:"));
}

#[test]
fn bad_table_extension_is_located() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("slots.toml"),
        "[call]\nmy_register = [[1, \"nodot\"]]\n",
    )
    .unwrap();
    let out = roots_in(
        &fixtures(),
        &["--tables", tmp.path().to_str().unwrap(), "calls.c"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("slots.toml") && err.contains("nodot"), "{err}");
}

#[test]
fn table_extension_adds_slots() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("slots.toml"),
        "[call]\nfx_register_hook = [[0, \"fx_hooks.hook\"]]\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("macro-hints.toml"),
        "blank = [\"__fx_annot\"]\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("ext.c"),
        "static int __fx_annot fx_hook(void) { return 0; }\n\
         static int __fx_annot fx_setup(void)\n{\n\tfx_register_hook(fx_hook);\n\treturn 0;\n}\n",
    )
    .unwrap();
    let plain = roots_in(tmp.path(), &["ext.c"]);
    assert!(plain.status.success());
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "");
    let ext = roots_in(tmp.path(), &["--tables", ".", "ext.c"]);
    assert!(
        ext.status.success(),
        "{}",
        String::from_utf8_lossy(&ext.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&ext.stdout),
        "fx_hook fx_hooks.hook ext.c:4\n"
    );
}

#[test]
fn file_system_tables() {
    insta::assert_snapshot!("fs", ok_stdout(&["fs.c"]));
}
