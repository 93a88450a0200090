//! A kernel call that writes more than a body's grants is refused before
//! it writes (issue 48): the fixture tests/vm/fixtures/split_bound
//! (bounddemo, a virtual net device) has a get_strings() whose string count
//! can be corrupted (`overrun`, a module parameter), so that it calls
//! ethtool_puts() past its buffer: 200 strings run 6,272 bytes past the 128
//! bytes the body was handed.  Without the check below that call commits,
//! every ioctl answers as if nothing happened, and what lay behind the
//! buffer is overwritten (the kernel's own strscpy() wrote it, so no SFI
//! check saw it); where that is a guard page, the kernel faults in its own
//! text and the machine goes down.  Split, the wrapper of
//! ethtool_puts() checks the 32 bytes at the cursor (the table's `reach`)
//! before each call: the first string past the buffer aborts the body
//! (cause range), the abort puts back the four strings it had written,
//! ethtool gets its answer, and once the count is sound again the same
//! call commits.

mod split_common;

use fgft_vm::{kbuild, run, Env, VmSpec};
use split_common::{field, mark, repo};
use std::path::PathBuf;
use std::time::Duration;

fn fixture() -> PathBuf {
    repo().join("tests/vm/fixtures/split_bound")
}

const SCRIPT: &str = r#"
insmod /lib/fgft/fgft_rt.ko || exit 2
insmod /lib/fgft/bounddemo_sfi.ko || exit 3
insmod /lib/fgft/bounddemo_fgft.ko || exit 4
P=/sys/module/bounddemo_fgft/parameters/overrun
S=/sys/kernel/debug/fgft/stats
rt() { echo "FGFT-MARK rtstats tag=$1 $(grep -E '^(txns|commits|aborts_range|aborts_ret|refusals) ' $S | tr ' ' '=' | tr '\n' ' ')"; }
rt before
fgft-ethtool bd0 strings stats
echo 200 > $P
fgft-ethtool bd0 strings
rt overrun
echo 0 > $P
fgft-ethtool bd0 strings stats
rt after
fgft-ethtool bd0 msglevel-set=2 msglevel
echo 1 > /sys/module/bounddemo_fgft/parameters/wild
fgft-ethtool bd0 msglevel-set=3 msglevel
rt wild
"#;

#[test]
fn a_get_strings_past_its_buffer_is_refused_before_it_writes() {
    let env = Env::load().expect("fgft environment (scripts/setup.sh --print-env)");
    let rt = kbuild(
        &env,
        "split-bound-rt",
        &repo().join("runtime-kmod"),
        &env.kdir,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let work = env.target_dir.join("split-bound");
    std::fs::create_dir_all(&work).expect("work dir");
    let out = work.join("split");
    let opts = fgft_split::Options {
        annotations: vec![fixture().join("bounddemo.toml")],
        runtime_symvers: Some(rt.join("Module.symvers")),
        kdir: Some(env.kdir.clone()),
        ..Default::default()
    };
    fgft_campaign::split::split(&opts, &out, "bounddemo").unwrap_or_else(|e| panic!("{e}"));
    let wrappers =
        std::fs::read_to_string(out.join("sfi/fgft_bounddemo_sfi_rt.c")).unwrap_or_default();
    assert!(
        wrappers.contains("fgft_check_or_fail(*data, ETH_GSTRING_LEN, FGFT_W)"),
        "ethtool_puts()'s wrapper checks the bytes at the cursor"
    );
    let fgft =
        kbuild(&env, "split-bound-fgft", &out, &env.kdir, &[]).unwrap_or_else(|e| panic!("{e}"));

    let mut spec = VmSpec::new("split-bound");
    spec.timeout = Duration::from_secs(90);
    spec.modules = vec![
        rt.join("fgft_rt.ko"),
        fgft.join("bounddemo_sfi.ko"),
        fgft.join("bounddemo_fgft.ko"),
    ];
    spec.add_tool(&env, "fgft-ethtool")
        .unwrap_or_else(|e| panic!("{e}"));
    spec.script = SCRIPT.into();
    let out = run(&env, &spec).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.is_clean(), "{out}\n{}", out.tail(80));
    assert_eq!(out.oopses, 0, "no oops: {out}");

    let eth: Vec<_> = out.markers_named("ethtool");
    let ops: Vec<(&str, &str, &str)> = eth
        .iter()
        .map(|m| {
            (
                field(m, "op"),
                field(m, "value"),
                m.get("first").unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(ops.len(), 9, "{out}");
    // Sound: four strings, the first one's name.
    assert_eq!(ops[0], ("strings", "4", "rx_frames"), "{out}");
    assert_eq!(ops[1].0, "stats");
    // The overrun: aborted before the fifth string; the four it wrote are
    // put back (the buffer reads as the kernel zeroed it).
    assert_eq!(ops[2].0, "strings");
    assert_eq!(
        (ops[2].2, field(eth[2], "sum")),
        ("-", "0x00000000"),
        "the aborted body's strings are undone: {}",
        eth[2]
    );
    // Sound again.
    assert_eq!(ops[3], ("strings", "4", "rx_frames"), "{out}");
    assert_eq!(ops[4].0, "stats");

    let n = |tag: &str, k: &str| -> u64 {
        let m = mark(&out, "rtstats", tag);
        m.parse::<u64>(k)
            .unwrap_or_else(|| panic!("rtstats {m} has no {k}"))
    };
    assert_eq!(
        n("overrun", "aborts_range") - n("before", "aborts_range"),
        1
    );
    assert_eq!(n("after", "aborts_range"), n("overrun", "aborts_range"));
    assert_eq!(n("after", "commits") - n("overrun", "commits"), 2, "{out}");

    // A corrupted pointer that copy-out would store in the driver's state
    // (`bd->last`, read by the unisolated get_msglevel()): the sound one
    // is stored (level 2 reads back 2); the wild one aborts set_msglevel()
    // before copy-out (cause ret; a void setter, so ethtool sees success),
    // and the state still holds the sound pointer, which get_msglevel()
    // reads back, in the main module, with no fault.
    assert_eq!(ops[5].0, "msglevel-set", "{out}");
    assert_eq!((ops[6].0, ops[6].1), ("msglevel", "2"), "{out}");
    assert_eq!(ops[7].0, "msglevel-set", "{out}");
    assert_eq!((ops[8].0, ops[8].1), ("msglevel", "2"), "{out}");
    assert_eq!(n("wild", "commits") - n("after", "commits"), 1, "{out}");
    assert_eq!(
        n("wild", "aborts_ret") - n("after", "aborts_ret"),
        1,
        "{out}"
    );
}
