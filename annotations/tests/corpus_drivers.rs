//! Our corpus drivers (corpus/drivers/fgft_ne2k, corpus/drivers/fgft_char):
//! they build with no warning against the 6.12 and the 6.1 headers, and
//! they work in QEMU: the NE2000 driver passes frames between two
//! ne2k_pci NICs on a hub and answers every ethtool and sysfs entry point;
//! the FIFO device moves bytes and answers its ioctls and sysfs attributes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fgft_vm::{guest_program, kbuild, run, Env, Outcome, VmSpec};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh --print-env)")
}

fn build(env: &Env, driver: &str, kdir: &Path, tag: &str) -> PathBuf {
    let src = repo().join("corpus/drivers").join(driver);
    let include = repo().join("annotations/include");
    kbuild(
        env,
        &format!("corpus-{driver}-{tag}"),
        &src,
        kdir,
        &[&include],
    )
    .unwrap_or_else(|e| panic!("{driver} against {}: {e}", kdir.display()))
}

#[test]
fn corpus_drivers_build_cleanly_for_6_12_and_6_1() {
    let env = env();
    for driver in ["fgft_ne2k", "fgft_char"] {
        for (kdir, tag) in [(&env.kdir, "612"), (&env.kdir61, "61")] {
            let dir = build(&env, driver, kdir, tag);
            assert!(
                dir.join(format!("{driver}.ko")).is_file(),
                "{}",
                dir.display()
            );
        }
    }
}

const SCRIPT: &str = r#"
insmod /lib/fgft/fgft_ne2k.ko || exit 10
insmod /lib/fgft/fgft_char.ko ring_size=256 label=corpus || exit 11
for i in 0 1 2 3 4 5 6 7 8 9; do
	[ -e /sys/class/net/eth1 ] && break
	sleep 0.2
done
fgft-pkt -u -n 300 eth0 eth1 || exit 12
fgft-pkt -n 300 -s 1500 eth1 eth0 || exit 13
fgft-ethtool eth0 all
echo "FGFT-MARK ethtool-all status=$?"
fgft-ethtool eth0 nway-reset msglevel-set=7
echo "FGFT-MARK ethtool-set status=$?"
fgft-pkt -n 100 eth0 eth1 > /tmp/after
sed 's/FGFT-MARK pkt /FGFT-MARK pkt-after /' /tmp/after
D=/sys/class/net/eth0/device
echo "FGFT-MARK ne2k-sysfs chip=$(cat $D/chip_id) fifo=$(cat $D/fifo_threshold) timeouts=$(cat $D/tx_timeouts) prom=$(cat $D/prom)"
echo 4 > $D/fifo_threshold
echo "FGFT-MARK ne2k-fifo set4=$? now=$(cat $D/fifo_threshold)"
echo 5 > $D/fifo_threshold
echo "FGFT-MARK ne2k-fifo-bad status=$?"

C=/sys/class/misc/fgft_char
echo "FGFT-MARK char-sysfs capacity=$(cat $C/capacity) label=$(cat $C/label) mode=$(cat $C/mode)"
fgft-char-ctl /dev/fgft_char write=hello-fifo level read=5 seek=2 level read=16 read=1 \
	label=renamed label save size=1024 mode=1 pattern=50,10,65 label=other size mode
echo "FGFT-MARK char-ctl status=$?"
sleep 1
fgft-char-ctl /dev/fgft_char pattern=0,10,0 level stats restore size mode label size=100
echo "FGFT-MARK char-ctl2 status=$?"
echo overwrite > $C/mode
echo "FGFT-MARK char-mode set=$? mode=$(cat $C/mode) stats=$(cat $C/stats | tr ' ' ,)"
rmmod fgft_char || exit 14
rmmod fgft_ne2k || exit 15
"#;

fn mark<'a>(out: &'a Outcome, name: &str) -> &'a fgft_vm::Marker {
    out.marker(name)
        .unwrap_or_else(|| panic!("no {name} marker\n{out}"))
}

fn charctl<'a>(out: &'a Outcome, op: &str, nth: usize) -> &'a fgft_vm::Marker {
    out.markers_named("charctl")
        .into_iter()
        .filter(|m| m.get("op") == Some(op))
        .nth(nth)
        .unwrap_or_else(|| panic!("no charctl op={op} #{nth}\n{out}"))
}

#[test]
fn corpus_drivers_work_in_qemu() {
    let env = env();
    let ne2k = build(&env, "fgft_ne2k", &env.kdir, "vm");
    let chr = build(&env, "fgft_char", &env.kdir, "vm");
    let ctl = guest_program(
        &env,
        &repo().join("corpus/drivers/fgft_char/tools/fgft-char-ctl.c"),
    )
    .unwrap();

    let mut spec = VmSpec::new("corpus-drivers");
    spec.modules = vec![ne2k.join("fgft_ne2k.ko"), chr.join("fgft_char.ko")];
    spec.add_hub_nics("ne2k_pci", 0, 2);
    spec.add_tool(&env, "fgft-ethtool").unwrap();
    spec.add_tool(&env, "fgft-pkt").unwrap();
    spec.files.push((ctl, "/bin/fgft-char-ctl".into()));
    spec.script = SCRIPT.into();
    spec.timeout = Duration::from_secs(150);
    let out = run(&env, &spec).unwrap();
    assert!(out.is_clean(), "{out}");

    // Frames flow both ways, full-size ones included.
    for pkt in out.markers_named("pkt") {
        assert_eq!(pkt.get("lost"), Some("0"), "{pkt}\n{out}");
    }
    assert_eq!(mark(&out, "pkt-after").get("lost"), Some("0"), "{out}");

    // Every ethtool getter of the driver answers.
    let ethtool = out.markers_named("ethtool");
    let op = |name: &str| {
        ethtool
            .iter()
            .find(|m| m.get("op") == Some(name))
            .unwrap_or_else(|| panic!("no ethtool op={name}\n{out}"))
    };
    for name in [
        "drvinfo",
        "regs",
        "msglevel",
        "link",
        "ringparam",
        "eeprom",
        "gset",
        "strings",
        "stats",
    ] {
        assert_eq!(
            op(name).get("ret"),
            Some("0"),
            "{name}: {}\n{out}",
            op(name)
        );
    }
    assert_eq!(op("drvinfo").get("value"), Some("fgft_ne2k"), "{out}");
    assert_eq!(op("link").get("value"), Some("1"), "{out}");
    assert_eq!(op("nway-reset").get("ret"), Some("0"), "{out}");
    assert_eq!(mark(&out, "ethtool-set").get("status"), Some("0"), "{out}");

    let sysfs = mark(&out, "ne2k-sysfs");
    assert_eq!(sysfs.get("chip"), Some("rtl8029"), "{out}");
    assert_eq!(sysfs.get("fifo"), Some("8"), "{out}");
    // The PROM holds the MAC (each byte doubled) and the NE2000 signature.
    let prom = sysfs.get("prom").unwrap_or_default();
    assert!(prom.starts_with("525254540000121200000000"), "{prom}");
    assert!(prom.ends_with("57575757"), "{prom}");
    assert_eq!(mark(&out, "ne2k-fifo").get("now"), Some("4"), "{out}");
    assert_ne!(
        mark(&out, "ne2k-fifo-bad").get("status"),
        Some("0"),
        "{out}"
    );

    // The FIFO device.
    let cs = mark(&out, "char-sysfs");
    assert_eq!(cs.get("capacity"), Some("256"), "{out}");
    assert_eq!(cs.get("label"), Some("corpus"), "{out}");
    assert_eq!(cs.get("mode"), Some("block"), "{out}");
    assert_eq!(charctl(&out, "write", 0).get("value"), Some("10"), "{out}");
    assert_eq!(charctl(&out, "level", 0).get("value"), Some("10"), "{out}");
    assert_eq!(charctl(&out, "read", 0).get("value"), Some("5"), "{out}");
    // position 5, seek 2 forward discards two bytes
    assert_eq!(charctl(&out, "seek", 0).get("value"), Some("7"), "{out}");
    assert_eq!(charctl(&out, "level", 1).get("value"), Some("3"), "{out}");
    assert_eq!(charctl(&out, "read", 1).get("value"), Some("3"), "{out}");
    // empty and non-blocking: EAGAIN
    assert_eq!(charctl(&out, "read", 2).get("errno"), Some("11"), "{out}");
    assert_eq!(
        charctl(&out, "label", 1).get("value"),
        Some("renamed"),
        "{out}"
    );
    assert_eq!(charctl(&out, "size", 1).get("value"), Some("1024"), "{out}");
    assert_eq!(charctl(&out, "mode", 1).get("value"), Some("1"), "{out}");
    // the generator ran for a second at 50 bytes per 10 ms into 1 KiB
    let level: u32 = charctl(&out, "level", 2).parse("value").unwrap_or(0);
    assert!(level > 0, "{out}");
    // restore brings back the configuration saved before size/mode/pattern
    assert_eq!(charctl(&out, "restore", 0).get("ret"), Some("0"), "{out}");
    assert_eq!(charctl(&out, "size", 2).get("value"), Some("256"), "{out}");
    assert_eq!(charctl(&out, "mode", 2).get("value"), Some("0"), "{out}");
    assert_eq!(
        charctl(&out, "label", 3).get("value"),
        Some("renamed"),
        "{out}"
    );
    // 100 is not a power of two
    assert_eq!(charctl(&out, "size", 3).get("errno"), Some("22"), "{out}");
    assert_eq!(mark(&out, "char-ctl2").get("status"), Some("1"), "{out}");
    assert_eq!(
        mark(&out, "char-mode").get("mode"),
        Some("overwrite"),
        "{out}"
    );
}
