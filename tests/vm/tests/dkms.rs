//! The runtime module is a DKMS package (runtime-kmod/dkms.conf): Debian's
//! dkms adds and builds it against the installed 6.12 and 6.1 headers, in
//! a private DKMS tree, and keeps its Module.symvers beside the module.  A
//! split's `make -C OUT` then builds against that runtime instead of its
//! own copy (no runtime/fgft_rt.ko, the runtime's symbols resolved); with
//! no runtime built by dkms it builds its copy.

use fgft_vm::Env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?}:\n{text}");
    text
}

/// `cp -r runtime-kmod SRC/fgft-rt-VERSION`, without the user-space tests.
fn dkms_source(src: &Path) -> String {
    let conf = std::fs::read_to_string(repo().join("runtime-kmod/dkms.conf")).unwrap();
    let version = conf
        .lines()
        .find_map(|l| l.strip_prefix("PACKAGE_VERSION="))
        .map(|v| v.trim_matches('"').to_string())
        .expect("PACKAGE_VERSION");
    let dir = src.join(format!("fgft-rt-{version}"));
    run(Command::new("cp")
        .arg("-r")
        .arg(repo().join("runtime-kmod"))
        .arg(&dir));
    std::fs::remove_dir_all(dir.join("ustest")).unwrap();
    version
}

/// The kernel release of a headers directory (`linux-headers-6.1.0-57-amd64`).
fn release(kdir: &Path) -> String {
    let uts = std::fs::read_to_string(kdir.join("include/generated/utsrelease.h")).unwrap();
    uts.split('"').nth(1).expect("UTS_RELEASE").to_string()
}

#[test]
fn dkms_builds_the_runtime_and_splits_build_against_it() {
    let env = Env::load().expect("fgft environment (scripts/setup.sh --print-env)");
    let t = tempfile::tempdir().unwrap();
    let (src, tree) = (t.path().join("src"), t.path().join("dkms"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&tree).unwrap();
    let version = dkms_source(&src);
    let dkms = |args: &[&str]| {
        let mut c = Command::new("dkms");
        c.args(args)
            .args(["-m", "fgft-rt", "-v", &version])
            .arg("--sourcetree")
            .arg(&src)
            .arg("--dkmstree")
            .arg(&tree);
        run(&mut c)
    };
    dkms(&["add"]);
    for kdir in [&env.kdir, &env.kdir61] {
        let k = release(kdir);
        let log = dkms(&["build", "-k", &k]);
        let module = tree.join(format!("fgft-rt/{version}/{k}/x86_64/module"));
        let built = std::fs::read_dir(&module)
            .unwrap_or_else(|e| panic!("{}: {e}\n{log}", module.display()))
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("fgft_rt.ko"));
        assert!(built, "no fgft_rt.ko for {k}:\n{log}");
        let symvers = std::fs::read_to_string(module.join("Module.symvers"))
            .unwrap_or_else(|e| panic!("Module.symvers kept for {k}: {e}\n{log}"));
        assert!(symvers.contains("\tfgft_txn_begin\t"), "{symvers}");
    }
    let status = dkms(&["status"]);
    assert!(status.contains(&release(&env.kdir)), "{status}");

    // A split builds against the runtime dkms built for its kernel.
    let out = t.path().join("split");
    let opts = fgft_split::Options {
        annotations: vec![repo().join("tests/vm/fixtures/split_icall/icalldemo.toml")],
        kdir: Some(env.kdir.clone()),
        ..Default::default()
    };
    fgft_campaign::split::split(&opts, &out, "icalldemo").unwrap_or_else(|e| panic!("{e}"));
    let make = |dkms_tree: &Path| {
        let mut c = Command::new("make");
        c.arg("-C")
            .arg(&out)
            .arg(format!("FGFT_DKMS_TREE={}", dkms_tree.display()))
            .env_remove("MAKEFLAGS");
        run(&mut c)
    };
    let log = make(&tree);
    assert!(out.join("icalldemo_fgft.ko").is_file() && out.join("icalldemo_sfi.ko").is_file());
    assert!(!out.join("runtime/fgft_rt.ko").exists(), "{log}");
    assert!(
        !log.contains("undefined"),
        "the runtime's symbols resolve:\n{log}"
    );
    // No runtime built by dkms: the split's own copy is built.
    run(Command::new("make").arg("-C").arg(&out).arg("clean"));
    let log = make(&t.path().join("no-dkms"));
    assert!(out.join("runtime/fgft_rt.ko").is_file(), "{log}");
}
