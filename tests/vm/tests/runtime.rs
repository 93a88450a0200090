//! VM tests of the fgft runtime (issue 3): fgft_rt.ko and its self-test
//! module (runtime-kmod/selftest), built with Kbuild, booted in QEMU.
//!
//! One boot runs every scenario of the self-test module in order (each
//! prints an `FGFT-MARK st-<name> ...` line with what it measured, see
//! runtime-kmod/selftest/st_main.c) and ends with a fault outside any
//! transaction, which must oops as usual.  The assertions below read the
//! raw fields, not only the module's own `ok=` verdict.

use fgft_vm::{kbuild, run, Env, Marker, Outcome, VmSpec};
use std::path::PathBuf;
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh --print-env)")
}

fn runtime_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../runtime-kmod")
}

fn mark<'a>(out: &'a Outcome, name: &str) -> &'a Marker {
    out.marker(name)
        .unwrap_or_else(|| panic!("no marker {name}\n{out}\n{}", out.tail(100)))
}

fn field<'a>(m: &'a Marker, key: &str) -> &'a str {
    m.get(key)
        .unwrap_or_else(|| panic!("marker {m} has no field {key}"))
}

fn num(m: &Marker, key: &str) -> i64 {
    m.parse::<i64>(key)
        .unwrap_or_else(|| panic!("marker {m}: field {key} is not a number"))
}

/// The console between the `st-begin name=<name>` marker and the next
/// `st-begin` (or the end).
fn section<'a>(out: &'a Outcome, name: &str) -> &'a str {
    let start_tag = format!("FGFT-MARK st-begin name={name}\n");
    let start = out
        .console
        .find(&start_tag)
        .unwrap_or_else(|| panic!("no st-begin for {name}"));
    let rest = &out.console[start + start_tag.len()..];
    let end = rest.find("FGFT-MARK st-begin ").unwrap_or(rest.len());
    &rest[..end]
}

/// Single-fault scenarios: name, expected cause, whether the recovery path
/// goes through an oops print (page faults only).
const CASES: &[(&str, &str, bool)] = &[
    ("null", "oops", true),
    ("null_sfi", "range", false),
    ("wild", "range", false),
    ("div", "trap", false),
    ("bug", "trap", false),
    ("gpf", "gpf", false),
    ("spinlock", "oops", true),
    ("spinlock_irq", "gpf", false),
    ("mutex", "trap", false),
    ("kmalloc", "oops", true),
    ("explicit", "explicit", false),
    ("relock", "lock", false),
    ("callback", "trap", false),
    ("section", "trap", false),
    ("call_lock", "trap", false),
    ("shadow", "trap", false),
];

const SCRIPT: &str = r#"
insmod /lib/fgft/fgft_rt.ko || exit 2
insmod /lib/fgft/fgft_selftest.ko || exit 3
R=/sys/kernel/debug/fgft_selftest/run
E=/sys/kernel/debug/fgft/entries
slab() {
	tag=$1
	set -- $(grep '^fgft_st_obj ' /proc/slabinfo)
	act=$2
	set -- $(grep '^Slab:' /proc/meminfo)
	echo "FGFT-MARK slab-$tag st_obj_active=$act slab_kb=$2"
}
for s in null null_sfi wild wild_list wild_read edge ret direct place wild_bitop mmio div bug gpf spinlock \
	 spinlock_irq mutex kmalloc explicit relock callback section call_lock \
	 shadow commit; do
	echo $s > $R || echo "FGFT-MARK run-failed name=$s"
done
echo module > $R || echo "FGFT-MARK run-failed name=module"
slab before
echo soak > $R || echo "FGFT-MARK run-failed name=soak"
slab after
echo concurrent > $R || echo "FGFT-MARK run-failed name=concurrent"
echo ctx > $R || echo "FGFT-MARK run-failed name=ctx"
echo switch > $R
echo 0 > $E/st_switch/isolate
echo switch > $R
echo 1 > $E/st_switch/isolate
echo switch > $R
st() { awk -v k="$1" '$1 == k { print $2 }' /sys/kernel/debug/fgft/stats; }
r0=$(st restores); k0=$(st restores_skipped)
echo dev > $R || echo "FGFT-MARK run-failed name=dev"
echo "FGFT-MARK dev-stats restores=$(($(st restores) - r0)) skipped=$(($(st restores_skipped) - k0))"
echo stats > $R
grep -q '^aborts_range ' /sys/kernel/debug/fgft/stats && echo "FGFT-MARK debugfs stats=1"
grep -v '^#' /sys/kernel/debug/fgft/recovery_hist | while read lo hi n; do
	[ "$n" != 0 ] && echo "FGFT-MARK rthist lo_ns=$lo hi_ns=$hi n=$n"
done
sh -c "echo outside > $R"
echo "FGFT-MARK after-outside status=$?"
ps | grep -c . > /dev/null && echo "FGFT-MARK userspace alive=1"
"#;

#[test]
fn runtime_recovers_every_fault_kind() {
    let env = env();
    let dir = kbuild(&env, "runtime-612", &runtime_dir(), &env.kdir, &[]).unwrap();
    let mut spec = VmSpec::new("runtime-selftest");
    spec.modules = vec![
        dir.join("fgft_rt.ko"),
        dir.join("selftest/fgft_selftest.ko"),
    ];
    spec.qemu_args = vec!["-smp".into(), "2".into()];
    spec.timeout = Duration::from_secs(240);
    spec.script = SCRIPT.into();
    let out = run(&env, &spec).unwrap();
    println!("{out}");
    assert!(!out.panicked && !out.timed_out, "{out}\n{}", out.tail(100));
    if let Some(m) = out.markers_named("run-failed").first() {
        panic!("scenario write failed: {m}\n{}", out.tail(60));
    }

    // Each single-fault scenario: the caller got the entry's error, the
    // cause is the expected one, no lock is held, irq/preempt/RCU state is
    // as before, nothing allocated inside is left, no transaction stays open.
    for &(name, cause, oops_path) in CASES {
        let m = mark(&out, &format!("st-{name}"));
        assert_eq!(field(m, "failed"), "1", "{m}");
        assert_eq!(field(m, "ret"), "-5", "caller gets -EIO: {m}");
        assert_eq!(field(m, "cause"), cause, "{m}");
        assert_eq!(field(m, "locked"), "0", "{m}");
        assert_eq!(field(m, "pc_same"), "1", "{m}");
        assert_eq!(field(m, "rcu_same"), "1", "{m}");
        assert_eq!(field(m, "irqs_same"), "1", "{m}");
        assert_eq!(field(m, "objs_delta"), "0", "leak: {m}");
        assert_eq!(field(m, "open"), "0", "{m}");
        assert_eq!(field(m, "victim_ok"), "1", "{m}");
        assert_eq!(field(m, "ok"), "1", "{m}");
        let sec = section(&out, name);
        if !oops_path {
            assert!(
                !sec.contains("Oops") && !sec.contains("BUG:") && !sec.contains("Call Trace"),
                "{name} must be recovered without an oops:\n{sec}"
            );
        }
    }
    // The allocation made before the fault was compensated.
    assert_eq!(field(mark(&out, "st-kmalloc"), "undo_runs"), "1");
    // The wild write was stopped by the range check before it landed.
    assert!(
        section(&out, "wild").contains("refused write"),
        "{}",
        section(&out, "wild")
    );
    let c = mark(&out, "st-commit");
    assert_eq!(
        (field(c, "failed"), field(c, "ret"), field(c, "copied")),
        ("0", "42", "1"),
        "{c}"
    );

    // Wild writes inside list_add(): refused on the read of the list head,
    // and on the write itself when reads are not checked.
    // The device test's aborts: two touched the device (restored), one
    // did not (left as it was), as the runtime's statistics count them.
    let m = mark(&out, "dev-stats");
    assert_eq!((num(m, "restores"), num(m, "skipped")), (2, 1), "{m}");
    let m = mark(&out, "st-wild_list");
    assert_eq!(
        (
            field(m, "cause"),
            field(m, "noreads_cause"),
            field(m, "intact")
        ),
        ("range", "range", "1"),
        "{m}"
    );
    let m = mark(&out, "st-wild_read");
    assert_eq!(
        (
            field(m, "cause"),
            field(m, "noreads_failed"),
            field(m, "noreads_ret")
        ),
        ("range", "0", "94"),
        "a reads-off build lets the read through: {m}"
    );

    // The inline checks at a grant's end (the windows' lim8): 8 bytes
    // ending at the end pass, 8 bytes 4 of which lie past it do not.
    let m = mark(&out, "st-edge");
    assert_eq!(
        (
            field(m, "inside_failed"),
            field(m, "load_cause"),
            field(m, "store_cause"),
            field(m, "ok")
        ),
        ("0", "range", "range", "1"),
        "{m}"
    );

    // The pointer a body returns to the kernel (issue 48): the copy's
    // translated to the original, a grant's and a kernel call's as they
    // are; an ungranted object, a wild pointer, the stack and a range
    // running past the copy abort with cause ret.
    let m = mark(&out, "st-ret");
    assert_eq!(
        ["copy", "grant", "kret", "victim", "wild", "stack", "straddle"].map(|k| field(m, k)),
        ["1", "1", "1", "ret", "ret", "ret", "ret"],
        "{m}"
    );

    // Kernel functions SFI code calls directly (issue 48), through the
    // runtime's checked forms: strnlen() of a granted string and a %s of
    // kernel memory pass, a non-canonical pointer handed to strnlen(),
    // printk() or a bit search aborts (range), snprintf() and sscanf()
    // past a grant abort before a byte lands past it, and list_add() on a
    // list whose next->prev is wrong aborts (assert) where the kernel's
    // CONFIG_DEBUG_LIST check would BUG().
    let m = mark(&out, "st-direct");
    assert_eq!(
        [
            "strnlen",
            "strnlen_wild",
            "printk_kmem",
            "printk_wild",
            "sprintf",
            "snprintf_over",
            "list_ok",
            "list_ret",
            "list_corrupt",
            "bits_wild",
            "sscanf_over",
            "intact"
        ]
        .map(|k| field(m, k)),
        [
            "4", "range", "none", "range", "1", "range", "none", "1", "assert", "range", "range",
            "1"
        ],
        "{m}"
    );

    // Stores into memory used in place, memcpy, memset and memmove among
    // them, are undone by the abort.
    let m = mark(&out, "st-place");
    assert_eq!(
        (field(m, "intact"), field(m, "noreads_intact")),
        ("1", "1"),
        "an abort puts back what the intrinsics stored in place: {m}"
    );

    // A bitop is inline assembly: refused through instrumented.h's hook.
    let m = mark(&out, "st-wild_bitop");
    assert_eq!(
        (
            field(m, "cause"),
            field(m, "noreads_cause"),
            field(m, "intact")
        ),
        ("range", "range", "1"),
        "{m}"
    );

    // MMIO accessors: device memory passes (the value as a plain read
    // gets it), kernel memory and a NULL-based register are refused first;
    // so does a wrapper's I/O-cookie check for vmalloc() memory, a read
    // through a base that was unmapped after bodies used it, and a string
    // port read into memory that is not granted (into the copy it passes).
    let m = mark(&out, "st-mmio");
    assert_eq!(
        (
            field(m, "dev_failed"),
            field(m, "dev_ret_ok"),
            field(m, "kmalloc_cause"),
            field(m, "vmalloc_cause"),
            field(m, "null_cause"),
            field(m, "cookie_dev_failed"),
            field(m, "cookie_vmalloc_cause"),
            field(m, "unmapped_cause"),
            field(m, "rep_copy_failed"),
            field(m, "rep_victim_cause"),
            field(m, "intact")
        ),
        ("0", "1", "range", "range", "range", "0", "range", "range", "0", "range", "1"),
        "{m}"
    );

    // The SFI module's own data is refused until fgft_map_module().
    let m = mark(&out, "st-module");
    assert_eq!(
        (
            field(m, "before"),
            field(m, "mapped_ret"),
            field(m, "stored"),
            field(m, "after")
        ),
        ("range", "42", "1", "range"),
        "{m}"
    );

    // 1,000 transactions, 10% faulting: no leak.
    let s = mark(&out, "st-soak");
    assert_eq!(num(s, "txns"), 1000, "{s}");
    assert_eq!(num(s, "faults"), 100, "{s}");
    assert_eq!(num(s, "recovered"), 100, "{s}");
    assert_eq!(num(s, "commits"), 900, "{s}");
    assert_eq!(num(s, "bad"), 0, "{s}");
    assert_eq!(num(s, "objs_before"), num(s, "objs_after"), "{s}");
    assert_eq!(
        num(s, "mem_before"),
        num(s, "mem_after"),
        "runtime allocations: {s}"
    );
    assert_eq!(num(s, "pool_before"), num(s, "pool_after"), "{s}");
    assert_eq!(num(s, "rt_recoveries"), 100, "{s}");
    let (sb, sa) = (mark(&out, "slab-before"), mark(&out, "slab-after"));
    println!("slab: before {sb} after {sa}");

    // Two tasks at once: one faults 200 times, the other commits 2,000
    // correct results, overlapping in time.
    let m = mark(&out, "st-concurrent");
    assert_eq!(num(m, "a_aborts"), 200, "{m}");
    assert_eq!(num(m, "b_commits"), 2000, "{m}");
    assert_eq!(num(m, "b_wrong"), 0, "{m}");
    assert!(num(m, "overlap") > 0, "the two tasks did not overlap: {m}");

    // Softirq and hard-irq transactions, a softirq's fault while this task
    // is in a body, nested transactions.
    let m = mark(&out, "st-ctx");
    for k in [
        "softirq",
        "hardirq",
        "softirq_in_body",
        "nested",
        "abandoned",
    ] {
        assert_eq!(field(m, k), "1", "{k}: {m}");
    }
    assert_eq!((field(m, "open"), field(m, "locked")), ("0", "0"), "{m}");

    // The isolate switch: on, off (plain call), on.
    let sw = out.markers_named("st-switch");
    assert_eq!(sw.len(), 3, "{out}");
    let iso: Vec<&str> = sw.iter().map(|m| field(m, "isolated")).collect();
    assert_eq!(iso, ["1", "0", "1"]);
    assert!(sw.iter().all(|m| field(m, "ret") == "42"));

    // Device checkpoints and the reusable PCI state.
    let m = mark(&out, "st-dev");
    assert_eq!(field(m, "ok"), "1", "{m}");
    assert_eq!(
        (field(m, "pci_restored"), field(m, "pci_reused")),
        ("1", "1"),
        "{m}"
    );

    // Every page-fault recovery prints one oops; the fault outside any
    // transaction prints one more and kills the writer, nothing else.
    let st = mark(&out, "st-stats");
    assert_eq!(num(st, "open"), 0, "{st}");
    assert_eq!(num(st, "residue_fixups"), 0, "{st}");
    let recovered_oopses = num(st, "aborts_oops");
    let expected_oops_prints = CASES.iter().filter(|c| c.2).count() as i64
        + num(s, "oopses")
        + num(mark(&out, "st-concurrent"), "a_oopses");
    assert_eq!(recovered_oopses, expected_oops_prints, "{st}");
    assert_eq!(out.oopses as i64, recovered_oopses + 1, "{out}");
    let outside = out
        .console
        .split("FGFT-MARK st-outside-start")
        .nth(1)
        .unwrap();
    assert!(
        outside.contains("BUG: kernel NULL pointer dereference"),
        "the fault outside a transaction must oops"
    );
    assert!(out.marker("st-outside-survived").is_none(), "{out}");
    assert!(out.marker("after-outside").is_some(), "{out}");
    assert!(out.marker("userspace").is_some(), "{out}");
    assert_eq!(out.exit_status, Some(0), "{out}");
    assert!(out.marker("debugfs").is_some(), "{out}");
    let hist: i64 = out
        .markers_named("rthist")
        .iter()
        .map(|m| num(m, "n"))
        .sum();
    assert_eq!(hist, num(st, "recoveries"), "recovery histogram");
    println!("{st}");
    for m in out.markers_named("rthist") {
        println!("{m}");
    }
}

#[test]
fn runtime_builds_against_6_1_headers() {
    let env = env();
    let dir = kbuild(&env, "runtime-61", &runtime_dir(), &env.kdir61, &[]).unwrap();
    assert!(dir.join("fgft_rt.ko").is_file());
    assert!(dir.join("selftest/fgft_selftest.ko").is_file());
}

#[test]
fn runtime_builds_against_rt_headers() {
    let env = env();
    let dir = kbuild(&env, "runtime-rt", &runtime_dir(), &env.kdir_rt, &[]).unwrap();
    assert!(dir.join("fgft_rt.ko").is_file());
    assert!(dir.join("selftest/fgft_selftest.ko").is_file());
}
