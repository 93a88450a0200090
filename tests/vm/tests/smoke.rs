//! VM smoke tests of the harness itself: boot, markers, exit status, NICs on
//! a hub with the stock e1000 and our guest tools, oops and panic
//! detection, a Kbuild-built module, the time limit.

use fgft_vm::{kbuild, run, Env, Outcome, VmError, VmSpec};
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh --print-env)")
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn guest_uptime(out: &Outcome, marker: &str) -> f64 {
    out.marker(marker)
        .and_then(|m| m.parse::<f64>("uptime"))
        .unwrap_or(f64::NAN)
}

#[test]
fn boot_runs_the_script_and_reports() {
    let env = env();
    let mut spec = VmSpec::new("smoke-hello");
    spec.script = "echo FGFT-MARK hello x=1\necho FGFT-MARK hello x=2 y=z\n".into();
    spec.timeout = Duration::from_secs(60);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");
    assert_eq!(out.exit_status, Some(0), "{out}");
    assert_eq!(out.oopses, 0, "{out}");
    let hello = out.markers_named("hello");
    assert_eq!(hello.len(), 2, "{out}");
    assert_eq!(hello[0].get("x"), Some("1"));
    assert_eq!(hello[1].get("y"), Some("z"));
    assert!(out.log_path.is_file());
    let log = fs::read_to_string(&out.log_path).unwrap();
    assert!(log.contains("FGFT-MARK hello x=1"));
    println!(
        "boot-to-poweroff: {:.2} s wall (guest uptime at /init {:.2} s, at end {:.2} s)",
        out.duration.as_secs_f64(),
        guest_uptime(&out, "fgft-boot"),
        guest_uptime(&out, "fgft-end")
    );

    // A failing script's status comes back.
    let mut spec = VmSpec::new("smoke-exit-status");
    spec.script = "echo FGFT-MARK before\nexit 7\n".into();
    spec.timeout = Duration::from_secs(60);
    let out = run(&env, &spec).unwrap();
    assert_eq!(out.exit_status, Some(7), "{out}");
    assert!(out.marker("before").is_some() && !out.is_clean(), "{out}");
}

const E1000_SCRIPT: &str = r#"
modprobe e1000 || exit 10
for i in 0 1 2 3 4 5 6 7 8 9; do
	[ -e /sys/class/net/eth1 ] && break
	sleep 0.2
done
ip link set eth0 up || exit 11
ip link set eth1 up || exit 12
fgft-ethtool eth0 drvinfo || exit 13
fgft-pkt -n 500 eth0 eth1 || exit 14
fgft-pkt -n 200 eth1 eth0 || exit 15
fgft-pkt -d 1 eth0 eth1 > /tmp/thr || exit 16
sed 's/FGFT-MARK pkt /FGFT-MARK pkt-thr /' /tmp/thr
fgft-ethtool eth1 all
echo "FGFT-MARK ethtool-all status=$?"
fgft-ethtool eth1 bogus-op
echo "FGFT-MARK ethtool-bad status=$?"
"#;

#[test]
fn e1000_pair_on_a_hub_passes_frames_and_answers_ethtool() {
    let env = env();
    let mut spec = VmSpec::new("smoke-e1000");
    spec.add_hub_nics("e1000", 0, 2);
    spec.stock_modules = vec!["e1000".into()];
    spec.add_tool(&env, "fgft-ethtool").unwrap();
    spec.add_tool(&env, "fgft-pkt").unwrap();
    spec.script = E1000_SCRIPT.into();
    spec.timeout = Duration::from_secs(90);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");

    let drv = out
        .markers_named("ethtool")
        .into_iter()
        .find(|m| m.get("op") == Some("drvinfo") && m.get("dev") == Some("eth0"))
        .unwrap_or_else(|| panic!("no drvinfo marker\n{out}"));
    assert_eq!(drv.get("ret"), Some("0"), "{out}");
    assert_eq!(drv.get("value"), Some("e1000"), "{out}");
    assert!(
        drv.get("bus").is_some_and(|b| b.starts_with("0000:")),
        "{drv}"
    );

    let pkts = out.markers_named("pkt");
    assert_eq!(pkts.len(), 2, "{out}");
    for (p, n) in pkts.iter().zip([500u64, 200]) {
        let sent: u64 = p.parse("sent").unwrap();
        let received: u64 = p.parse("received").unwrap();
        assert_eq!(sent, n, "{p}");
        assert!(received > 0 && received * 10 >= sent * 9, "{p}\n{out}");
        assert_eq!(p.parse::<u64>("dups"), Some(0), "{p}");
    }
    let link = out.marker("pkt-link").unwrap();
    assert_eq!(link.get("a"), Some("1"), "{out}");
    assert_eq!(link.get("b"), Some("1"), "{out}");
    let thr = out.marker("pkt-thr").unwrap_or_else(|| panic!("{out}"));
    let fps: f64 = thr.parse("fps").unwrap();
    let received: u64 = thr.parse("received").unwrap();
    let sent: u64 = thr.parse("sent").unwrap();
    assert!(fps > 0.0 && received * 10 >= sent * 9, "{thr}");
    println!("e1000 -> e1000 over a QEMU hub (TCG): {thr}");

    // `all` on eth1: every getter answers, with values that make sense,
    // except get_coalesce: QEMU's `e1000` is an 82540EM, for which the
    // driver returns -EOPNOTSUPP (`e1000-82545em` has it).
    let eth1: Vec<_> = out
        .markers_named("ethtool")
        .into_iter()
        .filter(|m| m.get("dev") == Some("eth1"))
        .collect();
    let ops: Vec<&str> = eth1.iter().filter_map(|m| m.get("op")).collect();
    assert_eq!(
        ops,
        [
            "drvinfo",
            "regs",
            "msglevel",
            "link",
            "ringparam",
            "pauseparam",
            "eeprom",
            "coalesce",
            "wol",
            "gset",
            "sset-info",
            "strings",
            "stats"
        ],
        "{out}"
    );
    let op = |name: &str| *eth1.iter().find(|m| m.get("op") == Some(name)).unwrap();
    for m in &eth1 {
        if m.get("op") == Some("coalesce") {
            continue;
        }
        assert_eq!(m.get("ret"), Some("0"), "{m}");
        assert_eq!(m.get("errno"), Some("0"), "{m}");
    }
    let coalesce = op("coalesce");
    assert_eq!(coalesce.get("ret"), Some("-1"), "{coalesce}");
    assert_eq!(coalesce.get("errno"), Some("95"), "{coalesce}");
    assert_eq!(coalesce.get("value"), Some("-"), "{coalesce}");
    assert_eq!(coalesce.get("step"), Some("get"), "{coalesce}");
    assert_eq!(op("link").get("value"), Some("1"));
    assert!(op("regs").parse::<u32>("len").unwrap() > 0);
    assert!(op("eeprom").parse::<u32>("len").unwrap() > 0);
    assert_eq!(op("gset").get("value"), Some("1000"));
    let n_stats: u32 = op("sset-info").parse("value").unwrap();
    assert!(n_stats > 10);
    assert_eq!(op("strings").parse::<u32>("value"), Some(n_stats));
    assert_eq!(op("stats").parse::<u32>("value"), Some(n_stats));
    assert_eq!(op("strings").get("first"), Some("rx_packets"));
    assert!(op("stats").parse::<u64>("total").unwrap() > 0);
    // One failed op makes the exit status 1; an unknown op is a usage error.
    assert_eq!(out.marker("ethtool-all").unwrap().get("status"), Some("1"));
    assert_eq!(out.marker("ethtool-bad").unwrap().get("status"), Some("2"));
}

#[test]
fn oopses_and_panics_are_detected() {
    let env = env();
    let shared = fixture("shared");
    let dir = kbuild(&env, "smoke-oops", &fixture("oops"), &env.kdir, &[&shared]).unwrap();
    let mut spec = VmSpec::new("smoke-oops");
    spec.modules = vec![dir.join("fgft_oops.ko")];
    spec.script = r#"
insmod /lib/fgft/fgft_oops.ko || exit 10
t=/sys/kernel/debug/fgft_oops/trigger
(echo null > $t)
echo FGFT-MARK after-null
(echo div > $t)
(echo bug > $t)
echo FGFT-MARK after-all
echo c > /proc/sysrq-trigger
echo FGFT-MARK after-panic
"#
    .into();
    spec.timeout = Duration::from_secs(60);
    let out = run(&env, &spec).unwrap();
    assert_eq!(out.oopses, 3, "{out}");
    assert!(out.oops_lines[0].contains("Oops:"), "{out}");
    assert!(out.oops_lines[1].contains("divide error"), "{out}");
    assert!(out.oops_lines[2].contains("invalid opcode"), "{out}");
    assert!(out.console.contains("kernel BUG at"), "{out}");
    assert!(out.marker("after-null").is_some(), "{out}");
    assert!(out.marker("after-all").is_some(), "{out}");
    assert_eq!(out.markers_named("oops-trigger").len(), 3, "{out}");
    assert!(out.panicked, "{out}");
    assert!(out.marker("after-panic").is_none(), "{out}");
    assert_eq!(out.exit_status, None, "{out}");
    assert!(!out.timed_out && !out.is_clean(), "{out}");
}

#[test]
fn kbuild_module_loads_in_the_guest() {
    let env = env();
    let shared = fixture("shared");
    let dir = kbuild(
        &env,
        "smoke-hello",
        &fixture("hello"),
        &env.kdir,
        &[&shared],
    )
    .unwrap();
    assert!(dir.join("shared/fgft_fixture.h").is_file());
    let ko = dir.join("fgft_hello.ko");
    assert!(ko.is_file());
    let mut spec = VmSpec::new("smoke-kbuild-hello");
    spec.modules = vec![ko];
    // Stock modules with dependencies load through busybox modprobe.
    spec.stock_modules = vec!["8139too".into(), "snd-ens1370".into()];
    spec.script = r#"
insmod /lib/fgft/fgft_hello.ko answer=5 || exit 1
grep -q '^fgft_hello ' /proc/modules || exit 2
rmmod fgft_hello || exit 3
modprobe 8139too || exit 4
modprobe snd-ens1370 || exit 5
for m in mii 8139too soundcore snd snd_pcm snd_ens1370; do
	grep -q "^$m " /proc/modules && echo "FGFT-MARK stock name=$m"
done
"#
    .into();
    spec.timeout = Duration::from_secs(60);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");
    let m = out.marker("hello-kmod").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(m.get("answer"), Some("6"), "{m}");
    assert_eq!(m.get("release"), Some(env.kver.as_str()), "{m}");
    assert!(out.marker("hello-kmod-exit").is_some(), "{out}");
    let stock: Vec<&str> = out
        .markers_named("stock")
        .iter()
        .filter_map(|m| m.get("name"))
        .collect();
    assert_eq!(
        stock,
        [
            "mii",
            "8139too",
            "soundcore",
            "snd",
            "snd_pcm",
            "snd_ens1370"
        ],
        "{out}"
    );
}

#[test]
fn fixtures_build_against_6_1_too() {
    let env = env();
    let shared = fixture("shared");
    for name in ["hello", "oops"] {
        let dir = kbuild(
            &env,
            &format!("smoke-{name}-61"),
            &fixture(name),
            &env.kdir61,
            &[&shared],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.join(format!("fgft_{name}.ko")).is_file());
    }
}

#[test]
fn kbuild_rejects_warnings_and_errors() {
    let env = env();
    let src = env.target_dir.join("vm-unit").join("warn-src");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("Kbuild"), "obj-m += fgft_warn.o\n").unwrap();
    fs::write(
        src.join("fgft_warn.c"),
        "// SPDX-License-Identifier: GPL-2.0\n#include <linux/module.h>\n\
         static int __init w_init(void)\n{\n\tint unused;\n\treturn 0;\n}\n\
         module_init(w_init);\nMODULE_LICENSE(\"GPL\");\nMODULE_DESCRIPTION(\"w\");\n",
    )
    .unwrap();
    let err = kbuild(&env, "smoke-warn", &src, &env.kdir, &[]).unwrap_err();
    match &err {
        VmError::Build { reason, output, .. } => {
            assert!(reason.contains("warning"), "{reason}");
            assert!(output.contains("unused variable"), "{output}");
        }
        other => panic!("expected a build error, got {other}"),
    }
    fs::write(
        src.join("fgft_warn.c"),
        "#include <linux/module.h>\nint x = ;\n",
    )
    .unwrap();
    let err = kbuild(&env, "smoke-warn", &src, &env.kdir, &[]).unwrap_err();
    assert!(
        matches!(&err, VmError::Build { reason, .. } if reason.contains("exited")),
        "{err}"
    );
}

#[test]
fn a_hung_guest_times_out() {
    let env = env();
    let mut spec = VmSpec::new("smoke-timeout");
    spec.script = "echo FGFT-MARK sleeping\nsleep 600\n".into();
    spec.timeout = Duration::from_secs(10);
    let out = run(&env, &spec).unwrap();
    assert!(out.timed_out, "{out}");
    assert_eq!(out.exit_status, None, "{out}");
    assert!(out.duration >= Duration::from_secs(10), "{out}");
    assert!(out.duration < Duration::from_secs(20), "{out}");
    // What the guest printed before the kill is kept (the firmware banner
    // comes first; the script's marker too unless the host is very slow).
    assert!(out.console.contains("SeaBIOS"), "{out}");
    println!(
        "time-out run: {:.1} s, script reached: {}",
        out.duration.as_secs_f64(),
        out.marker("sleeping").is_some()
    );
}

/// The instruction profile (QEMU plugin): a span with ten times the loop
/// counts about ten times the user instructions, the kernel's own work is
/// named by its symbols, and copying the symbols counts in no span.
#[test]
fn instruction_profile_counts_spans_by_symbol() {
    let env = env();
    let mut spec = VmSpec::new("smoke-insn");
    let prof = fgft_vm::InsnProfile::attach(&env, &mut spec, 3).unwrap();
    let lp = |n: u32| format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done\n");
    spec.script = format!(
        "{}{}{}{}{}",
        fgft_vm::InsnProfile::mark(1),
        lp(2_000),
        fgft_vm::InsnProfile::mark(2),
        lp(20_000),
        fgft_vm::InsnProfile::mark(3)
    );
    spec.timeout = Duration::from_secs(90);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");
    let spans = prof.read().unwrap();
    let marks: Vec<u32> = spans.iter().map(|s| s.mark).collect();
    assert_eq!(marks, [1, 2, 3, 0], "{spans:?}");
    let user = |i: usize| *spans[i].by_symbol.get("[user]").unwrap_or(&0) as f64;
    let ratio = user(2) / user(1);
    assert!(
        (8.0..12.0).contains(&ratio),
        "user instructions {ratio:.2}x"
    );
    // The boot decompresses and checks keys in named kernel functions; no
    // span has the symbol copy's formatting (vsnprintf) in any bulk.
    assert!(
        spans[0]
            .by_symbol
            .keys()
            .filter(|k| !k.starts_with('['))
            .count()
            > 1000
    );
    for s in &spans[1..3] {
        let fmt = *s.by_symbol.get("vsnprintf").unwrap_or(&0);
        assert!(
            fmt < s.total() / 100,
            "span {} counts the symbol copy: {fmt}",
            s.mark
        );
    }
}
