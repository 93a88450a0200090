//! Cross-check against Coccinelle: every (file, function, slot) that our SmPL
//! queries (tests/cocci/*.cocci: designated initializers of ethtool_ops,
//! net_device_ops, pci_driver and dev_pm_ops) find with `spatch` in a corpus
//! driver must be printed by `fgft-cc roots`.
//!
//! Fields the kernel declares as data (`.name = DRV_NAME`, `.id_table = ids`)
//! are not slots and are left out of the comparison, using the slot table's
//! list of function fields (taken from the 6.12 headers).
//! `checker_can_fail` proves the comparison is not vacuous: with a table
//! extension that demotes `ethtool_ops.get_drvinfo` to a data field, the same
//! check reports misses.

mod roots_common;
use roots_common::{roots, src612, CORPUS};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn queries() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cocci");
    let mut q: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/cocci")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cocci"))
        .collect();
    q.sort();
    assert_eq!(
        q.len(),
        4,
        "four SmPL queries expected in {}",
        dir.display()
    );
    q
}

/// All corpus files (ens1371.c is left out: it only includes ens1370.c).
fn corpus_files() -> Vec<&'static str> {
    let mut v: Vec<&str> = CORPUS
        .iter()
        .flat_map(|(_, f)| f.iter().copied())
        .filter(|f| !f.ends_with("ens1371.c"))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// What spatch finds, as expected `fgft-cc roots` lines.
fn oracle() -> &'static BTreeSet<String> {
    static ORACLE: OnceLock<BTreeSet<String>> = OnceLock::new();
    ORACLE.get_or_init(|| {
        let table = fgft_facts::slots::SlotTable::builtin().expect("slot table");
        let files = corpus_files();
        let mut out = BTreeSet::new();
        for q in queries() {
            let st = q.file_stem().unwrap().to_str().unwrap().to_string();
            let fns = &table.structs[&st].functions;
            let res = Command::new("spatch")
                .args(["--very-quiet", "--sp-file"])
                .arg(&q)
                .args(&files)
                .current_dir(src612())
                .output()
                .expect("spatch (coccinelle) must be installed: run scripts/setup.sh");
            assert!(
                res.status.success(),
                "spatch {}: {}",
                q.display(),
                String::from_utf8_lossy(&res.stderr)
            );
            for line in String::from_utf8_lossy(&res.stdout).lines() {
                let w: Vec<&str> = line.split_whitespace().collect();
                let [file, line, func, field] = w[..] else {
                    panic!("unexpected spatch output line: {line}");
                };
                if func == "NULL" || !fns.iter().any(|f| f == field) {
                    continue;
                }
                out.insert(format!("{func} {st}.{field} {file}:{line}"));
            }
        }
        assert!(out.len() > 100, "spatch found only {} slots", out.len());
        out
    })
}

/// Oracle lines that `fgft-cc roots` (with `env`) does not print.
fn missing(env: &[(&str, &str)]) -> Vec<String> {
    let found: BTreeSet<String> = roots(&corpus_files(), env).into_iter().collect();
    oracle().difference(&found).cloned().collect()
}

#[test]
fn roots_cover_coccinelle() {
    let m = missing(&[]);
    assert!(
        m.is_empty(),
        "fgft-cc roots misses {} slot(s) spatch finds:\n{}",
        m.len(),
        m.join("\n")
    );
}

#[test]
fn checker_can_fail() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("slots.toml"),
        "[struct.ethtool_ops]\nkind = \"ethtool\"\nfields = [\"get_drvinfo\", \"get_link\"]\nfunctions = [\"get_link\"]\n",
    )
    .unwrap();
    let m = missing(&[("FGFT_TABLES", tmp.path().to_str().unwrap())]);
    assert!(
        m.iter().any(|l| l.contains("ethtool_ops.get_drvinfo")),
        "a broken table must make the cross-check fail; misses: {m:?}"
    );
}
