//! Golden tests of `fgft-cc split` (insta): the whole output for the
//! corpus drivers we wrote, and only what fgft generates (plan, Kbuild,
//! edit log, generated headers and C) for the paper's drivers, read from
//! linux-source-6.12.  Also: the output is deterministic, and files the
//! split does not touch are byte-identical copies.

mod split_common;

use split_common::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn own_corpus_drivers_whole_output() {
    for d in drivers().iter().filter(|d| !d.upstream) {
        let t = tmp();
        let out = t.path().join("out");
        split_driver(d, None, &out, &[]);
        let mut files = read_tree(&out);
        // Copies of the runtime and annotation headers are not generated.
        files.retain(|k, _| !k.starts_with("include/"));
        insta::assert_snapshot!(format!("own_{}", d.name), bundle(&files));
    }
}

#[test]
fn upstream_drivers_generated_output() {
    let env = env();
    for d in drivers().iter().filter(|d| d.upstream) {
        let t = tmp();
        let out = t.path().join("out");
        split_driver(d, Some(&env.src612), &out, &[]);
        let files = read_tree(&out);
        let gen = generated_only(&files);
        assert!(gen.contains_key("plan.txt") && gen.contains_key("Kbuild"));
        insta::assert_snapshot!(format!("upstream_{}", d.name), bundle(&gen));
    }
}

#[test]
fn output_is_deterministic() {
    let env = env();
    let d = drivers()
        .into_iter()
        .find(|d| d.name == "e1000")
        .expect("e1000");
    let t = tmp();
    let a = t.path().join("a");
    let b = t.path().join("b");
    split_driver(&d, Some(&env.src612), &a, &[]);
    split_driver(&d, Some(&env.src612), &b, &[]);
    let fa = read_tree(&a);
    let fb = read_tree(&b);
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        assert!(fb[k] == *v, "{k} differs between two runs");
    }
}

#[test]
fn untouched_files_are_byte_identical() {
    let env = env();
    let d = drivers()
        .into_iter()
        .find(|d| d.name == "e1000")
        .expect("e1000");
    let t = tmp();
    let out = t.path().join("out");
    split_driver(&d, Some(&env.src612), &out, &[]);
    let dir = env.src612.join("drivers/net/ethernet/intel/e1000");
    for f in ["e1000.h", "e1000_hw.h", "e1000_osdep.h", "e1000_param.c"] {
        let orig = std::fs::read(dir.join(f)).expect("read original");
        let copy = std::fs::read(out.join("main").join(f)).expect("read copy");
        assert!(orig == copy, "main/{f} is not a byte-identical copy");
    }
    // An edited file: every edit is listed; outside them the text is the
    // original's (the first and last original lines are there as written).
    let orig = std::fs::read_to_string(dir.join("e1000_ethtool.c")).expect("read");
    let copy = std::fs::read_to_string(out.join("main/e1000_ethtool.c")).expect("read");
    assert!(copy.starts_with(
        &orig[..orig
            .find("static int e1000_get_link_ksettings")
            .unwrap_or(0)]
    ));
    let edits = std::fs::read_to_string(out.join("edits.txt")).expect("edits.txt");
    assert!(edits.contains("=== main/e1000_ethtool.c"));
    assert!(edits.contains("`e1000_get_regs` -> `fgft_stub_e1000_get_regs`"));
}
