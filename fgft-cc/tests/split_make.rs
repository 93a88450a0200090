//! A fresh split builds completely with one `make -C KDIR M=OUT`: the
//! runtime module (OUT/runtime/, fgft-cc's copy of runtime-kmod/) with the
//! driver's two modules, against the 6.12 and the 6.1 headers; and
//! `make install` puts all three where modprobe finds them, with depmod's
//! dependencies (driver -> SFI module -> runtime).

mod split_common;

use split_common::*;
use std::path::Path;
use std::process::Command;

fn one_make(tree: &Path, kdir: &Path, out: &Path) {
    let d = all_drivers()
        .into_iter()
        .find(|d| d.name == "e1000")
        .expect("the e1000 sidecar");
    let kdirarg = kdir.display().to_string();
    split_driver(&d, Some(tree), out, &["--kdir", &kdirarg]);
    // `make -C KDIR M=OUT` alone, no symbol file given.
    let (ok, log) = kbuild(kdir, out);
    assert!(ok, "make -C {} M={}:\n{log}", kdir.display(), out.display());
    assert!(problems(&log).is_empty(), "{log}");
    for ko in ["runtime/fgft_rt.ko", "e1000_sfi.ko", "e1000_fgft.ko"] {
        assert!(out.join(ko).is_file(), "no {ko}:\n{log}");
    }
    // `make install` into a staging root: the modules and their
    // dependencies, as modprobe reads them.
    let root = out.join("staging");
    let st = Command::new("make")
        .arg("-C")
        .arg(out)
        .arg(format!("KDIR={}", kdir.display()))
        .arg(format!("INSTALL_MOD_PATH={}", root.display()))
        // No runtime built by dkms on this machine counts (tests/vm's dkms
        // test covers that path).
        .arg(format!("FGFT_DKMS_TREE={}", out.join("no-dkms").display()))
        .arg("install")
        .env_remove("MAKEFLAGS")
        .output()
        .expect("make install");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&st.stdout),
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(st.status.success(), "make install:\n{text}");
    assert!(
        !text.contains("sign-file"),
        "no signing without a key:\n{text}"
    );
    let uts = std::fs::read_to_string(kdir.join("include/generated/utsrelease.h")).unwrap();
    let rel = uts.split('"').nth(1).expect("UTS_RELEASE");
    let moddir = root.join("lib/modules").join(rel);
    let dep = std::fs::read_to_string(moddir.join("modules.dep"))
        .unwrap_or_else(|e| panic!("modules.dep: {e}\n{text}"));
    let deps_of = |m: &str| -> Vec<String> {
        dep.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.contains(m)))
            .and_then(|l| l.split(':').nth(1))
            .map(|r| r.split_whitespace().map(str::to_string).collect())
            .unwrap_or_else(|| panic!("{m} not in modules.dep:\n{dep}"))
    };
    let fgft = deps_of("/e1000_fgft.ko");
    assert!(
        fgft.iter().any(|d| d.contains("/e1000_sfi.ko"))
            && fgft.iter().any(|d| d.contains("/fgft_rt.ko")),
        "{dep}"
    );
    assert!(
        deps_of("/e1000_sfi.ko")
            .iter()
            .any(|d| d.contains("/fgft_rt.ko")),
        "{dep}"
    );
    assert!(deps_of("/fgft_rt.ko").is_empty(), "{dep}");
    // updates/ (6.12) or extra/ (6.1): where external modules go.
    assert!(
        dep.lines()
            .all(|l| l.starts_with("updates/") || l.starts_with("extra/")),
        "{dep}"
    );
}

#[test]
fn one_make_builds_all_three_modules_on_612_and_61() {
    let env = env();
    let t = tempfile::tempdir().expect("temp dir");
    let (src61, k61, o61) = (
        env.src61.clone(),
        env.kdir61.clone(),
        t.path().join("e1000-6.1"),
    );
    let h = std::thread::spawn(move || one_make(&src61, &k61, &o61));
    one_make(&env.src612, &env.kdir, &t.path().join("e1000-6.12"));
    h.join().expect("the 6.1 build");
}
