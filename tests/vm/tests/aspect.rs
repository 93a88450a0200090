//! The KLAS seed's sk_buff example on e1000, in a booted kernel.
//!
//! Upstream e1000 (from $SRC612) is woven with corpus/aspects/sk_buff_trace.xml
//! (every sk_buff member access, except for ARP frames, records a time
//! stamp, the join point and the skb pointer into a ring read through
//! debugfs), built out of tree and loaded in QEMU next to an rtl8139 (stock
//! 8139cp) on one hub.  aspect-frames sends a pattern of ARP and other
//! frames from the rtl8139 to the e1000.
//!
//! - Switched off (the advice's debugfs switch at 0): no record appears.
//! - Switched on, standard MTU: one record per non-ARP frame, the write of
//!   skb->protocol in e1000_receive_skb; none for ARP frames.
//! - Switched on, MTU 9000 (the jumbo receive path): per non-ARP frame the
//!   records follow the receive path in order (e1000_consume_page: len,
//!   data_len, truesize; e1000_clean_jumbo_rx_irq: len, len), all on the same
//!   skb; none for ARP frames.
//! - Switched off again without reloading the module: none.

use fgft_aspect::{scan::Driver, weave, Aspect, Options};
use fgft_vm::{guest_program, kbuild, run, Env, VmSpec};
use std::time::Duration;

const PATTERN: &str = "xaxxaxaaxxax";

const SCRIPT: &str = r#"
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6
echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6
insmod /lib/fgft/e1000.ko || exit 10
modprobe 8139cp || exit 11
for i in $(seq 50); do
	ls /sys/bus/pci/drivers/e1000/*/net >/dev/null 2>&1 &&
	ls /sys/bus/pci/drivers/8139cp/*/net >/dev/null 2>&1 && break
	sleep 0.1
done
A=$(ls /sys/bus/pci/drivers/e1000/*/net)
B=$(ls /sys/bus/pci/drivers/8139cp/*/net)
D=/sys/kernel/debug/fgft_aspect/e1000.sktrace
[ -d $D ] || exit 12
echo "FGFT-MARK aspect-ifaces a=$A b=$B switch=$(cat $D/trace)"
up() {
	for i in $(seq 100); do
		[ "$(cat /sys/class/net/$A/operstate)" = up ] &&
		[ "$(cat /sys/class/net/$B/operstate)" = up ] && return 0
		sleep 0.1
	done
	return 1
}
ip link set $A up && ip link set $B up && up || exit 13
# Give the link a moment; then measure one phase.
phase() {
	name=$1
	shift
	echo > $D/records
	rx0=$(cat /sys/class/net/$A/statistics/rx_packets)
	aspect-frames "$@" $B $A PATTERN || exit 14
	sleep 0.3
	rx1=$(cat /sys/class/net/$A/statistics/rx_packets)
	n=$(wc -l < $D/records)
	echo "FGFT-MARK aspect-phase name=$name records=$n rx=$((rx1 - rx0))"
	sed "s/^/FGFT-REC $name /" $D/records
}
sleep 0.5
phase off -s 1000
echo 1 > $D/trace
phase std -s 1000
echo 0 > $D/trace
ip link set $A mtu 9000 || exit 15
up || exit 16
sleep 0.5
echo 1 > $D/trace
phase jumbo -s 1000
echo 0 > $D/trace
phase off-again -s 1000
echo "FGFT-MARK aspect-done switch=$(cat $D/trace) jps=$(wc -l < $D/joinpoints)"
rmmod e1000 || exit 17
echo "FGFT-MARK aspect-unloaded debugfs=$(ls /sys/kernel/debug/fgft_aspect)"
"#;

/// One record line: `FGFT-REC <phase> <seq> <ns> <jp> <func> <file:line>
/// <kind> <what> <value>`.
#[derive(Debug)]
struct Rec {
    phase: String,
    ns: u64,
    func: String,
    what: String,
    value: String,
}

fn records(console: &str) -> Vec<Rec> {
    console
        .lines()
        .filter_map(|l| {
            let rest = &l[l.find("FGFT-REC ")? + 9..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() < 9 {
                return None;
            }
            Some(Rec {
                phase: f[0].to_string(),
                ns: f[2].parse().ok()?,
                func: f[4].to_string(),
                what: f[7].to_string(),
                value: f[8].to_string(),
            })
        })
        .collect()
}

#[test]
fn sk_buff_trace_on_e1000_follows_the_receive_path() {
    let env = Env::load().expect("fgft environment");
    let root = env.repo_root.clone();
    let src612 = std::env::var("SRC612")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| env.cache.join("linux-6.12"));
    let e1000 = src612.join("drivers/net/ethernet/intel/e1000");

    // Weave and build.
    let aspect = Aspect::load(&root.join("corpus/aspects/sk_buff_trace.xml")).unwrap();
    let driver = Driver::load(&[e1000]).unwrap();
    let opts = Options {
        kdir: Some(env.kdir.clone()),
        tables: Vec::new(),
        check: true,
    };
    let woven = weave(&aspect, &driver, &opts).unwrap_or_else(|e| panic!("weave: {e:?}"));
    assert!(woven.warnings.is_empty(), "{:?}", woven.warnings);
    let out = env.target_dir.join("aspect-e1000-woven");
    let _ = std::fs::remove_dir_all(&out);
    woven.write(&out).unwrap();
    let build = kbuild(&env, "aspect-e1000", &out, &env.kdir, &[]).unwrap();

    let frames = guest_program(&env, &root.join("corpus/aspects/vm/aspect-frames.c")).unwrap();
    let mut spec = VmSpec::new("aspect-sktrace-e1000");
    spec.modules = vec![build.join("e1000.ko")];
    spec.stock_modules = vec!["8139cp".into()];
    spec.files.push((frames, "/bin/aspect-frames".into()));
    spec.add_hub_nics("e1000", 0, 1);
    spec.qemu_args.extend([
        "-netdev".to_string(),
        "hubport,id=h0rtl,hubid=0".to_string(),
        "-device".to_string(),
        "rtl8139,netdev=h0rtl,romfile=,mac=52:54:00:12:00:99".to_string(),
    ]);
    spec.script = SCRIPT.replace("PATTERN", PATTERN);
    spec.timeout = Duration::from_secs(180);
    let vm = run(&env, &spec).unwrap();
    assert!(vm.is_clean(), "{vm}");
    assert_eq!(vm.oopses, 0, "{vm}");

    let xs = PATTERN.matches('x').count();
    let arps = PATTERN.matches('a').count();
    let ifaces = vm.marker("aspect-ifaces").unwrap_or_else(|| panic!("{vm}"));
    assert_eq!(
        ifaces.get("switch"),
        Some("0"),
        "advices start switched off\n{vm}"
    );
    let phase = |name: &str| {
        vm.markers_named("aspect-phase")
            .into_iter()
            .find(|m| m.get("name") == Some(name))
            .unwrap_or_else(|| panic!("no phase {name}\n{vm}"))
    };
    let recs = records(&vm.console);
    for name in ["off", "std", "jumbo", "off-again"] {
        let m = phase(name);
        let rx: usize = m.parse("rx").unwrap();
        assert!(
            rx >= xs + arps,
            "phase {name}: the e1000 received {rx} frames\n{vm}"
        );
    }

    // Switched off: nothing.
    for name in ["off", "off-again"] {
        assert_eq!(phase(name).get("records"), Some("0"), "{vm}");
    }

    // Standard MTU: the protocol write of each non-ARP frame, nothing for ARP.
    let std: Vec<&Rec> = recs.iter().filter(|r| r.phase == "std").collect();
    assert_eq!(std.len(), xs, "one record per non-ARP frame:\n{std:#?}");
    for r in &std {
        assert_eq!(
            (r.func.as_str(), r.what.as_str()),
            ("e1000_receive_skb", "sk_buff.protocol"),
            "{r:?}"
        );
        assert!(r.value.starts_with("0xffff"), "skb pointer: {r:?}");
    }

    // Jumbo path: the receive path in order, per non-ARP frame, one skb each.
    let path = [
        ("e1000_consume_page", "sk_buff.len"),
        ("e1000_consume_page", "sk_buff.data_len"),
        ("e1000_consume_page", "sk_buff.truesize"),
        ("e1000_clean_jumbo_rx_irq", "sk_buff.len"),
        ("e1000_clean_jumbo_rx_irq", "sk_buff.len"),
    ];
    let jumbo: Vec<&Rec> = recs.iter().filter(|r| r.phase == "jumbo").collect();
    assert_eq!(
        jumbo.len(),
        xs * path.len(),
        "records of the jumbo phase:\n{jumbo:#?}"
    );
    for (k, group) in jumbo.chunks(path.len()).enumerate() {
        for (r, (func, what)) in group.iter().zip(path) {
            assert_eq!(
                (r.func.as_str(), r.what.as_str()),
                (func, what),
                "frame {k}: {group:#?}"
            );
            assert_eq!(r.value, group[0].value, "one skb per frame: {group:#?}");
        }
    }
    for w in jumbo.windows(2).chain(std.windows(2)) {
        assert!(w[0].ns <= w[1].ns, "time stamps in order: {w:#?}");
    }

    let done = vm.marker("aspect-done").unwrap_or_else(|| panic!("{vm}"));
    assert_eq!(done.get("switch"), Some("0"));
    assert_eq!(done.parse::<usize>("jps"), Some(woven.joinpoints.len()));
    println!(
        "sk_buff trace on e1000: {} join points; {} records (standard MTU), {} (jumbo); {:.1} s",
        woven.joinpoints.len(),
        std.len(),
        jumbo.len(),
        vm.duration.as_secs_f64()
    );
}
