//! Golden roots of the six corpus drivers, read from linux-source-6.12 at run
//! time.  Only fgft's output (function, slot, file:line) is snapshotted.

mod roots_common;
use roots_common::{roots, CORPUS};

#[test]
fn corpus_roots() {
    for (name, files) in CORPUS {
        let out = roots(files, &[]);
        assert!(!out.is_empty(), "{name}: no roots");
        insta::assert_snapshot!(format!("corpus_{name}"), out.join("\n"));
    }
}

/// The Rust PHY drivers of 6.12: every method of each `#[vtable] impl`
/// block (found here by a plain scan of the text) is listed, with its
/// file:line as the user gave the path, and so is each driver type the
/// `module_phy_driver!` macro names.  Snapshotted like the C drivers.
#[test]
fn rust_phy_drivers_roots() {
    let files = [
        "drivers/net/phy/ax88796b_rust.rs",
        "drivers/net/phy/qt2025.rs",
    ];
    let out = roots(&files, &[]);
    let tree = roots_common::src612();
    let mut expected = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(tree.join(f)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if lines[i].trim() == "#[vtable]" {
                // `impl Driver for T {`, then its methods up to the `}` at
                // the impl's own indentation.
                let head = lines[i + 1].trim();
                let ty = head
                    .split(" for ")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .expect("impl X for T");
                let indent = lines[i + 1].len() - lines[i + 1].trim_start().len();
                let mut j = i + 2;
                while j < lines.len() && !(lines[j].starts_with('}') && indent == 0) {
                    let l = lines[j].trim_start();
                    let depth = lines[j].len() - l.len();
                    if depth == indent + 4 && l.starts_with("fn ") {
                        let name = l[3..].split('(').next().unwrap();
                        expected.push(format!("{ty}::{name} Driver.{name} {f}:{}", j + 1));
                    }
                    j += 1;
                }
                i = j;
            }
            i += 1;
        }
    }
    assert!(expected.len() >= 10, "{expected:?}");
    for e in &expected {
        assert!(out.contains(e), "missing `{e}` in:\n{}", out.join("\n"));
    }
    for t in ["PhyAX88772A", "PhyAX88772C", "PhyAX88796B", "PhyQT2025"] {
        assert!(
            out.iter()
                .any(|l| l.starts_with(&format!("{t} module_phy_driver.drivers drivers/net/phy/"))),
            "{t}: {}",
            out.join("\n")
        );
    }
    assert!(out.iter().all(|l| l.contains(" drivers/net/phy/")));
    insta::assert_snapshot!("corpus_rust_phy", out.join("\n"));
}
