//! A wild store in SFI code is caught before it lands, in a booted kernel
//! (issue 2's acceptance): the fixture driver tests/vm/fixtures/split_wild
//! (wilddemo, a misc device whose ioctl is the isolated entry point) is split
//! (the fgft-split library, with the options of `fgft-cc split
//! --no-read-checks`), built with fgft_rt.ko, and driven from the guest:
//!
//! * (a) a store through a corrupted pointer in the driver's own code;
//! * (b) list_add() (a kernel inline helper compiled into the SFI module)
//!   through a corrupted list head.
//!
//! Both aim at a canary object of the driver that no transaction is
//! granted; the canary is read back through debugfs (the real memory, not
//! a copy).  The same faults are first run in the unsplit build of the same
//! source, where they land: that proves the canary check can see a landed
//! store, so the fgft half of the test can fail.  The SFI module is built
//! with `--no-read-checks`, so the first access refused is the store itself.

mod split_common;

use fgft_vm::{guest_program, kbuild, run, Env, VmSpec};
use split_common::{field, mark, repo};
use std::path::PathBuf;
use std::time::Duration;

fn fixture() -> PathBuf {
    repo().join("tests/vm/fixtures/split_wild")
}

const SCRIPT: &str = r#"
C=/sys/kernel/debug/wilddemo/canary
canary() { echo "FGFT-MARK canary tag=$1 $(cat $C)"; }

# The unsplit driver: the same faults land.
insmod /lib/fgft/wilddemo.ko || exit 2
canary native-before
wildctl native-add add 7
wildctl native-store store 0xbad
canary native-store
wildctl native-list list
canary native-list
rmmod wilddemo || exit 3

# The split driver under fgft.
insmod /lib/fgft/fgft_rt.ko || exit 4
insmod /lib/fgft/wilddemo_sfi.ko || exit 5
insmod /lib/fgft/wilddemo_fgft.ko || exit 6
canary fgft-before
wildctl fgft-add1 add 7
wildctl fgft-store store 0xbad
canary fgft-store
wildctl fgft-list list
canary fgft-list
wildctl fgft-add2 add 9
S=/sys/kernel/debug/fgft/stats
echo "FGFT-MARK rtstats tag=fgft $(grep -E '^(txns|commits|aborts_range|refusals) ' $S | tr ' ' '=' | tr '\n' ' ')"
"#;

#[test]
fn wild_stores_in_sfi_code_are_caught_before_they_land() {
    let env = Env::load().expect("fgft environment (scripts/setup.sh --print-env)");
    let rt = kbuild(
        &env,
        "split-wild-rt",
        &repo().join("runtime-kmod"),
        &env.kdir,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let work = env.target_dir.join("split-wild");
    std::fs::create_dir_all(&work).expect("work dir");
    let out = work.join("split");
    let opts = fgft_split::Options {
        annotations: vec![fixture().join("wilddemo.toml")],
        no_read_checks: true,
        runtime_symvers: Some(rt.join("Module.symvers")),
        kdir: Some(env.kdir.clone()),
        ..Default::default()
    };
    fgft_campaign::split::split(&opts, &out, "wilddemo").unwrap_or_else(|e| panic!("{e}"));
    let fgft =
        kbuild(&env, "split-wild-fgft", &out, &env.kdir, &[]).unwrap_or_else(|e| panic!("{e}"));
    let native = kbuild(&env, "split-wild-native", &fixture(), &env.kdir, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let ctl =
        guest_program(&env, &fixture().join("guest/wildctl.c")).unwrap_or_else(|e| panic!("{e}"));

    let mut spec = VmSpec::new("split-wild");
    spec.timeout = Duration::from_secs(90);
    spec.modules = vec![
        rt.join("fgft_rt.ko"),
        fgft.join("wilddemo_sfi.ko"),
        fgft.join("wilddemo_fgft.ko"),
        native.join("wilddemo.ko"),
    ];
    spec.files.push((ctl, "/bin/wildctl".into()));
    spec.script = SCRIPT.into();
    let out = run(&env, &spec).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.is_clean(), "{out}\n{}", out.tail(80));

    // Native: the canary reads intact first, then each fault lands on it.
    let c = mark(&out, "canary", "native-before");
    assert_eq!(field(c, "intact"), "1", "{c}");
    assert_eq!(field(c, "linked"), "0", "{c}");
    let a = mark(&out, "wild", "native-add");
    assert_eq!(field(a, "rc"), "1", "{a}");
    let s = mark(&out, "wild", "native-store");
    assert_eq!(field(s, "rc"), "0", "{s}");
    let c = mark(&out, "canary", "native-store");
    assert_eq!(field(c, "magic"), "bad", "the native wild store lands: {c}");
    assert_eq!(field(c, "intact"), "0", "{c}");
    let c = mark(&out, "canary", "native-list");
    assert_eq!(
        field(c, "linked"),
        "1",
        "the native list_add through the bad head lands: {c}"
    );

    // fgft: the good call commits; each wild store is refused before it
    // lands (the canary is unchanged), the call returns -EIO, and a later
    // good call works with the driver state of before the faults.
    let c = mark(&out, "canary", "fgft-before");
    assert_eq!(field(c, "intact"), "1", "{c}");
    let a = mark(&out, "wild", "fgft-add1");
    assert_eq!(field(a, "rc"), "1", "{a}");
    for (op, canary) in [("fgft-store", "fgft-store"), ("fgft-list", "fgft-list")] {
        let w = mark(&out, "wild", op);
        assert_eq!(field(w, "rc"), "-1", "{w}");
        assert_eq!(field(w, "errno"), "5", "EIO expected: {w}");
        let c = mark(&out, "canary", canary);
        assert_eq!(field(c, "intact"), "1", "{c}");
        assert_eq!(field(c, "linked"), "0", "{c}");
        assert_eq!(field(c, "magic"), "5afe5afe5afe5afe", "{c}");
    }
    let a = mark(&out, "wild", "fgft-add2");
    assert_eq!(
        field(a, "rc"),
        "2",
        "the aborted calls left the count alone: {a}"
    );
    let st = mark(&out, "rtstats", "fgft");
    let n = |k: &str| -> u64 {
        st.parse::<u64>(k)
            .unwrap_or_else(|| panic!("rtstats {st} has no {k}"))
    };
    assert_eq!(n("txns"), 4, "{st}");
    assert_eq!(n("commits"), 2, "{st}");
    assert_eq!(
        n("aborts_range"),
        2,
        "both aborts are refused accesses: {st}"
    );
    assert!(n("refusals") >= 2, "{st}");
    assert_eq!(out.oopses, 0, "no oops: {out}");
    assert_eq!(out.warnings, 0, "no kernel warning: {out}");
}
