//! `fgft-cc split CRATE_DIR --isolate NAME` on a Rust driver crate: our edu
//! driver (corpus/rust/edu) with its fgft attributes taken out gets
//! `#[fgft::isolate]` back above each chosen method and nothing else: only
//! those lines are added, the result is rustfmt-clean, every other file is
//! copied as it is, and a method that has the attribute is left alone.

mod split_common;

use split_common::*;
use std::path::Path;
use std::process::Command;

const ENTRIES: &[&str] = &[
    "liveness",
    "factorial",
    "factorial_irq",
    "dma_roundtrip",
    "raise_irq",
];

/// corpus/rust/edu without its `#[fgft::...]` attributes, under `dir`.
fn bare_edu(dir: &Path) -> std::path::PathBuf {
    let st = Command::new("cp")
        .arg("-r")
        .arg(root().join("corpus/rust/edu"))
        .arg(dir.join("edu"))
        .status()
        .unwrap();
    assert!(st.success());
    let lib = dir.join("edu/src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let bare: String = text
        .split_inclusive('\n')
        .filter(|l| {
            !(l.trim_start().starts_with("#[fgft::isolate") || l.trim() == "#[fgft::driver]")
        })
        .collect();
    assert!(bare.len() < text.len(), "the crate had attributes");
    std::fs::write(&lib, bare).unwrap();
    dir.join("edu")
}

#[test]
fn split_adds_the_isolate_attribute_to_a_rust_crate() {
    let t = tempfile::tempdir().unwrap();
    let edu = bare_edu(t.path());
    let out = t.path().join("out");
    let mut args: Vec<String> = vec![edu.display().to_string()];
    for e in ENTRIES {
        args.push("--isolate".into());
        args.push(format!("Edu::{e}"));
    }
    args.extend(["-o".into(), out.display().to_string()]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, err) = split(&argv);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("5 method(s) isolated by attribute"),
        "{stdout}"
    );

    let before = read_tree(&edu);
    let mut after = read_tree(&out);
    // The one file fgft adds: the manifest that marks OUT as fgft's own.
    assert!(
        after
            .remove(".fgft-manifest")
            .is_some_and(|m| m.contains("src/lib.rs")),
        "the crate's output lists what it wrote in .fgft-manifest"
    );
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (k, b) in &before {
        let a = &after[k];
        if k != "src/lib.rs" {
            assert_eq!(a, b, "{k} changed");
            continue;
        }
        // The old lines in order, plus exactly one attribute line above
        // each chosen method's `fn`.
        let al: Vec<&str> = a.lines().collect();
        let kept: Vec<&str> = al
            .iter()
            .copied()
            .filter(|l| *l != "    #[fgft::isolate]")
            .collect();
        assert_eq!(kept, b.lines().collect::<Vec<_>>());
        let mut added = Vec::new();
        for (i, l) in al.iter().enumerate() {
            if *l == "    #[fgft::isolate]" {
                let next = al[i + 1].trim_start();
                let name = next
                    .strip_prefix("fn ")
                    .and_then(|r| r.split('(').next())
                    .unwrap_or_else(|| panic!("not above a fn: {next}"));
                added.push(name.to_string());
            }
        }
        assert_eq!(added, ENTRIES);
    }
    for k in after.keys().filter(|k| k.ends_with(".rs")) {
        let st = Command::new("rustfmt")
            .args(["--check", "--edition", "2021"])
            .arg(out.join(k))
            .output()
            .expect("rustfmt");
        assert!(
            st.status.success(),
            "{k} is not rustfmt-clean:\n{}",
            String::from_utf8_lossy(&st.stdout)
        );
    }

    // Split again: every method has the attribute now; nothing is added.
    let again = t.path().join("again");
    args.pop();
    args.push(again.display().to_string());
    args[0] = out.display().to_string();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, err) = split(&argv);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("0 method(s) isolated"), "{stdout}");
    let mut again_tree = read_tree(&again);
    assert!(again_tree.remove(".fgft-manifest").is_some());
    assert_eq!(again_tree, after);

    // A name that matches no `&mut self` method: a clear error, nothing written.
    let none = t.path().join("none");
    let (code, _o, err) = split(&[
        edu.to_str().unwrap(),
        "--isolate",
        "Edu::no_such_method",
        "-o",
        none.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no method of an impl block taking `&mut self` (or, kernel style, `dev: &mut T` first) matches `Edu::no_such_method`"),
        "{err}"
    );
    assert!(!none.exists());
}

/// A kernel-style PHY driver (tests/fixtures/rust_phy, against the kernel
/// stand-in) as a crate under `dir`, its dependencies by absolute path.
fn phy_crate(dir: &Path) -> std::path::PathBuf {
    let c = dir.join("rust_phy");
    std::fs::create_dir_all(c.join("src")).unwrap();
    let lib = root().join("fgft-cc/tests/fixtures/rust_phy/src/lib.rs");
    std::fs::copy(&lib, c.join("src/lib.rs")).unwrap();
    let ann = root().join("annotations");
    std::fs::write(
        c.join("Cargo.toml"),
        format!(
            "[package]\nname = \"rust-phy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nfgft-rt = {{ path = \"{}\", features = [\"kernel\"] }}\n\
             kernel = {{ package = \"fgft-kernel-standin\", path = \"{}\" }}\n\n[workspace]\n",
            ann.join("rt").display(),
            ann.join("kernel-standin").display()
        ),
    )
    .unwrap();
    c
}

#[test]
fn split_isolates_kernel_style_methods() {
    let t = tempfile::tempdir().unwrap();
    let phy = phy_crate(t.path());
    let out = t.path().join("out");
    let (code, stdout, err) = split(&[
        phy.to_str().unwrap(),
        "--isolate",
        "PhyDemo::read_status",
        "--isolate",
        "PhyDemo::soft_*",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("2 method(s) isolated by attribute"),
        "{stdout}"
    );
    let before = std::fs::read_to_string(phy.join("src/lib.rs")).unwrap();
    let after = std::fs::read_to_string(out.join("src/lib.rs")).unwrap();
    let added: Vec<(usize, &str)> = {
        // The lines of `after` that `before` does not have, in order.
        let b: Vec<&str> = before.lines().collect();
        let mut i = 0;
        let mut added = Vec::new();
        for (n, l) in after.lines().enumerate() {
            if i < b.len() && b[i] == l {
                i += 1;
            } else {
                added.push((n + 1, l));
            }
        }
        assert_eq!(i, b.len(), "every original line is kept, in order");
        added
    };
    let next = |n: usize| after.lines().nth(n).unwrap().trim().to_string();
    assert_eq!(added.len(), 2, "{added:?}");
    for (n, l) in &added {
        assert_eq!(*l, "    #[fgft::isolate]");
        assert!(
            next(*n).starts_with("fn soft_reset(dev: &mut phy::Device)")
                || next(*n).starts_with("fn read_status(dev: &mut phy::Device)"),
            "line {n} is above {}",
            next(*n)
        );
    }

    // `match_phy_device(dev: &phy::Device)` cannot be a transaction (shared
    // reference): it is not matched.
    let none = t.path().join("none");
    let (code, _o, err) = split(&[
        phy.to_str().unwrap(),
        "--isolate",
        "PhyDemo::match_phy_device",
        "-o",
        none.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("matches `PhyDemo::match_phy_device`"), "{err}");
    assert!(!none.exists());

    // The split crate builds: the attribute accepts the methods and finds
    // the device checkpoint through fgft::DeviceOf<phy::Device>.
    let st = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet", "--manifest-path"])
        .arg(out.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root().join("target/split-rust-phy"))
        .output()
        .expect("cargo");
    assert!(
        st.status.success(),
        "the split crate does not build:\n{}",
        String::from_utf8_lossy(&st.stderr)
    );
}
