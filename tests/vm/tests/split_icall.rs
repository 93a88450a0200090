//! Calls through function pointers in SFI code stay in SFI, in a booted
//! kernel (issue 15's acceptance): the fixture driver
//! tests/vm/fixtures/split_icall (icalldemo, a misc device whose ioctl is
//! the isolated entry point) is split with the fgft-split library, built
//! with fgft_rt.ko, and driven from the guest:
//!
//! * a call through the driver's ops table runs the SFI copy and commits;
//! * a call through a corrupted pointer (an address the driver never
//!   stores as a function) aborts the transaction, counted in debugfs as
//!   `aborts_icall`, and the target never runs;
//! * a call through a pointer to the kernel's `mod_timer` goes through its
//!   wrapper: when the transaction then aborts, the wrapper's undo deletes
//!   the timer it armed (it never fires); when it commits, the timer fires
//!   and its callback, set up inside the isolated entry point, is the
//!   main module's function.
//!
//! The same calls are first made in the unsplit build of the same source:
//! there the corrupted pointer's target runs, so the test can tell.

mod split_common;

use fgft_vm::{guest_program, kbuild, run, Env, VmSpec};
use split_common::{field, mark, repo};
use std::path::PathBuf;
use std::time::Duration;

fn fixture() -> PathBuf {
    repo().join("tests/vm/fixtures/split_icall")
}

const SCRIPT: &str = r#"
D=/sys/kernel/debug/icalldemo/state
state() { echo "FGFT-MARK state tag=$1 $(cat $D)"; }

# The unsplit driver: the corrupted pointer's target runs.
insmod /lib/fgft/icalldemo.ko || exit 2
icallctl native-ops ops 3
icallctl native-hook hook 1
state native
rmmod icalldemo || exit 3

# The split driver under fgft.
insmod /lib/fgft/fgft_rt.ko || exit 4
insmod /lib/fgft/icalldemo_sfi.ko || exit 5
insmod /lib/fgft/icalldemo_fgft.ko || exit 6
icallctl fgft-ops ops 3
icallctl fgft-hook hook 1
state fgft-hook
icallctl fgft-armfail armfail 7
sleep 1
state fgft-armfail
icallctl fgft-arm arm 0
sleep 1
state fgft-arm
icallctl fgft-reset reset
icallctl fgft-good hook 5
S=/sys/kernel/debug/fgft/stats
echo "FGFT-MARK rtstats tag=fgft $(grep -E '^(txns|commits|aborts_icall|aborts_range) ' $S | tr ' ' '=' | tr '\n' ' ')"
"#;

#[test]
fn indirect_calls_in_sfi_code_stay_in_sfi() {
    let env = Env::load().expect("fgft environment (scripts/setup.sh --print-env)");
    let rt = kbuild(
        &env,
        "split-icall-rt",
        &repo().join("runtime-kmod"),
        &env.kdir,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let work = env.target_dir.join("split-icall");
    std::fs::create_dir_all(&work).expect("work dir");
    let out = work.join("split");
    let opts = fgft_split::Options {
        annotations: vec![fixture().join("icalldemo.toml")],
        runtime_symvers: Some(rt.join("Module.symvers")),
        kdir: Some(env.kdir.clone()),
        ..Default::default()
    };
    fgft_campaign::split::split(&opts, &out, "icalldemo").unwrap_or_else(|e| panic!("{e}"));
    let plan = std::fs::read_to_string(out.join("plan.txt")).expect("plan.txt");
    assert!(
        plan.contains("dispatch set 2: mod_timer (wrapper)"),
        "the kernel export is called through its wrapper:\n{plan}"
    );
    let fgft =
        kbuild(&env, "split-icall-fgft", &out, &env.kdir, &[]).unwrap_or_else(|e| panic!("{e}"));
    let native = kbuild(&env, "split-icall-native", &fixture(), &env.kdir, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let ctl =
        guest_program(&env, &fixture().join("guest/icallctl.c")).unwrap_or_else(|e| panic!("{e}"));

    let mut spec = VmSpec::new("split-icall");
    spec.timeout = Duration::from_secs(90);
    spec.modules = vec![
        rt.join("fgft_rt.ko"),
        fgft.join("icalldemo_sfi.ko"),
        fgft.join("icalldemo_fgft.ko"),
        native.join("icalldemo.ko"),
    ];
    spec.files.push((ctl, "/bin/icallctl".into()));
    spec.script = SCRIPT.into();
    let out = run(&env, &spec).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.is_clean(), "{out}\n{}", out.tail(80));

    // Native: the ops call counts; the corrupted hook runs its target.
    assert_eq!(field(mark(&out, "icall", "native-ops"), "rc"), "3");
    let s = mark(&out, "state", "native");
    assert_eq!(
        field(s, "evil"),
        "1",
        "the unsplit build lets the bad call through: {s}"
    );

    // fgft: the ops call runs the SFI copy and commits.
    let o = mark(&out, "icall", "fgft-ops");
    assert_eq!(field(o, "rc"), "3", "{o}");
    // The corrupted hook aborts: EIO, and its target never ran.
    let h = mark(&out, "icall", "fgft-hook");
    assert_eq!(field(h, "rc"), "-1", "{h}");
    assert_eq!(field(h, "errno"), "5", "EIO expected: {h}");
    let s = mark(&out, "state", "fgft-hook");
    assert_eq!(field(s, "evil"), "0", "the bad call was refused: {s}");
    assert_eq!(field(s, "count"), "3", "{s}");
    // mod_timer through its wrapper: the abort's undo deleted the timer.
    let a = mark(&out, "icall", "fgft-armfail");
    assert_eq!(field(a, "rc"), "-1", "{a}");
    let s = mark(&out, "state", "fgft-armfail");
    assert_eq!(
        field(s, "fired"),
        "0",
        "the aborted call's timer was deleted: {s}"
    );
    assert_eq!(field(s, "canary"), "5afe", "{s}");
    // Committed: the timer fires, and its callback is the main module's.
    let a = mark(&out, "icall", "fgft-arm");
    assert_eq!(field(a, "rc"), "0", "{a}");
    let s = mark(&out, "state", "fgft-arm");
    assert_eq!(field(s, "fired"), "1", "{s}");
    assert_eq!(
        field(s, "main_cb"),
        "1",
        "the callback is the main module's: {s}"
    );
    // A hook the driver stores is called.
    let g = mark(&out, "icall", "fgft-good");
    assert_eq!(field(g, "rc"), "5", "{g}");

    let st = mark(&out, "rtstats", "fgft");
    let n = |k: &str| -> u64 {
        st.parse::<u64>(k)
            .unwrap_or_else(|| panic!("rtstats {st} has no {k}"))
    };
    assert_eq!(n("aborts_icall"), 1, "{st}");
    assert_eq!(n("aborts_range"), 1, "{st}");
    assert_eq!(n("txns"), 6, "{st}");
    assert_eq!(n("commits"), 4, "{st}");
    assert_eq!(out.oopses, 0, "no oops: {out}");
    assert_eq!(out.warnings, 0, "no kernel warning: {out}");
}
