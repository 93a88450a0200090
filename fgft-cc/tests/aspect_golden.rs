//! Golden tests of `fgft-cc aspect`.
//!
//! - ringdev (a driver of ours, corpus/aspects/fixtures/ringdev) woven with
//!   corpus/aspects/ringdev_trace.xml: every output file is a snapshot; the
//!   woven files only insert text; the result builds with Kbuild with no
//!   warning and the generated C is checkpatch-clean.
//! - e1000 (upstream, read from $SRC612 at run time) woven with the seed's
//!   sk_buff aspect: only what fgft generates is a snapshot (join points,
//!   header, trampolines); it builds with no warning.

mod aspect_common;
use aspect_common::*;

#[test]
fn ringdev_golden_and_builds() {
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let (code, stdout, stderr) = aspect(&[
        "corpus/aspects/ringdev_trace.xml",
        "corpus/aspects/fixtures/ringdev",
        "-o",
        o,
        "--list",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "no warning expected:\n{stderr}");
    insta::assert_snapshot!("ringdev_listing", stdout.replace(o, "OUT"));
    let fixture = root().join("corpus/aspects/fixtures/ringdev");
    for name in [
        "Makefile",
        "ringdev_main.c",
        "ringdev_stats.c",
        "fgft_aspect.h",
        "fgft_aspect_rdtrace.h",
        "fgft_aspect_rdtrace.c",
        "fgft_aspect_rdtrace.joinpoints",
    ] {
        let text = std::fs::read_to_string(out.path().join(name)).unwrap();
        insta::assert_snapshot!(format!("ringdev_{name}"), text);
    }
    // Untouched files are copied byte for byte.
    assert_eq!(
        std::fs::read(out.path().join("ringdev.h")).unwrap(),
        std::fs::read(fixture.join("ringdev.h")).unwrap()
    );
    for name in ["ringdev_main.c", "ringdev_stats.c"] {
        only_insertions(
            &std::fs::read_to_string(fixture.join(name)).unwrap(),
            &std::fs::read_to_string(out.path().join(name)).unwrap(),
        );
    }
    let (kdir, src612) = kernel();
    kbuild(&kdir, out.path());
    assert!(out.path().join("ringdev.ko").is_file());
    for name in [
        "fgft_aspect.h",
        "fgft_aspect_rdtrace.h",
        "fgft_aspect_rdtrace.c",
    ] {
        checkpatch(&src612, &out.path().join(name));
    }
}

/// The same aspect with --kdir: kernel prototypes let call join points on
/// kernel functions bind arguments, and the advice is compiled (no error).
#[test]
fn ringdev_with_kernel_types() {
    let (kdir, _) = kernel();
    let out = tempfile::tempdir().unwrap();
    let (code, _, stderr) = aspect(&[
        "corpus/aspects/ringdev_trace.xml",
        "corpus/aspects/fixtures/ringdev",
        "-o",
        out.path().to_str().unwrap(),
        "--kdir",
        kdir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "no warning expected:\n{stderr}");
    kbuild(&kdir, out.path());
}

#[test]
fn e1000_seed_aspect_generated_parts() {
    let (kdir, src612) = kernel();
    let e1000 = src612.join("drivers/net/ethernet/intel/e1000");
    let out = tempfile::tempdir().unwrap();
    let (code, _, stderr) = aspect(&[
        "corpus/aspects/sk_buff_trace.xml",
        e1000.to_str().unwrap(),
        "-o",
        out.path().to_str().unwrap(),
        "--kdir",
        kdir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "no warning expected:\n{stderr}");
    // Only what fgft generates: the join points, the hooks, the trampolines.
    for name in [
        "fgft_aspect_sktrace.joinpoints",
        "fgft_aspect_sktrace.h",
        "fgft_aspect_sktrace.c",
    ] {
        let text = std::fs::read_to_string(out.path().join(name)).unwrap();
        insta::assert_snapshot!(format!("e1000_{name}"), text);
    }
    let listing =
        std::fs::read_to_string(out.path().join("fgft_aspect_sktrace.joinpoints")).unwrap();
    // The receive path's accesses are all there, typed through parameters,
    // locals and kernel struct definitions.
    for needle in [
        "e1000_consume_page sk_buff.len read-write",
        "e1000_consume_page sk_buff.truesize read-write",
        "e1000_receive_skb sk_buff.protocol write",
        "e1000_clean_jumbo_rx_irq sk_buff.len read",
        "e1000_xmit_frame sk_buff.data_len read",
    ] {
        assert!(listing.contains(needle), "missing {needle}:\n{listing}");
    }
    for name in ["e1000_main.c", "e1000_ethtool.c"] {
        only_insertions(
            &std::fs::read_to_string(e1000.join(name)).unwrap(),
            &std::fs::read_to_string(out.path().join(name)).unwrap(),
        );
    }
    kbuild(&kdir, out.path());
    assert!(out.path().join("e1000.ko").is_file());
    for name in ["fgft_aspect_sktrace.h", "fgft_aspect_sktrace.c"] {
        checkpatch(&src612, &out.path().join(name));
    }
}

/// Weaving composes with split: the woven tree is a driver source tree that
/// `fgft-cc split` takes; the trampolines land in the main module.
#[test]
fn weave_then_split() {
    let (kdir, _) = kernel();
    let woven = tempfile::tempdir().unwrap();
    let split = tempfile::tempdir().unwrap();
    let (code, _, stderr) = aspect(&[
        "corpus/aspects/ringdev_compose.xml",
        "corpus/aspects/fixtures/ringdev",
        "-o",
        woven.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
        .arg("split")
        .arg(woven.path())
        .arg("-o")
        .arg(split.path())
        .args(["--force", "--isolate", "ringdev_ioctl", "--kdir"])
        .arg(&kdir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "split of the woven tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kbuild = std::fs::read_to_string(split.path().join("Kbuild")).unwrap();
    assert!(kbuild.contains("fgft_aspect_rdcompose.o"), "{kbuild}");
    assert!(split.path().join("main/fgft_aspect_rdcompose.c").is_file());
}

/// Every access, call, entry and exit of an upstream single-file driver
/// (8139too, not in the corpus) woven at once: it builds with no warning,
/// and the generated C is included by the driver file (no Makefile given).
#[test]
fn weave_everything_into_8139too_builds() {
    let (kdir, src612) = kernel();
    let src = src612.join("drivers/net/ethernet/realtek/8139too.c");
    let out = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = aspect(&[
        "corpus/aspects/everything.xml",
        src.to_str().unwrap(),
        "-o",
        out.path().to_str().unwrap(),
        "--kdir",
        kdir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("fgft_aspect_all.c is included at the end of 8139too.c"),
        "{stderr}"
    );
    let n: usize = stdout
        .split_whitespace()
        .nth(2)
        .and_then(|w| w.parse().ok())
        .unwrap_or(0);
    assert!(n > 1000, "join points: {stdout}");
    only_insertions(
        &std::fs::read_to_string(&src).unwrap(),
        &std::fs::read_to_string(out.path().join("8139too.c")).unwrap(),
    );
    std::fs::write(out.path().join("Kbuild"), "obj-m := 8139too.o\n").unwrap();
    kbuild(&kdir, out.path());
}
