//! e1000's I/O path under fgft, with no fault: transmit, interrupt and NAPI
//! poll isolated (marshaled in place), frames sent from one port arrive on
//! the other, and no call of the three aborts. The poll copies short frames
//! out of its receive buffers (page fragments its own refill allocates) and
//! reads the transmit ring's frames: an access the plan or the driver's
//! heap does not cover aborts every poll, and no frame arrives.

use fgft_campaign::config::Config;
use fgft_campaign::prepare;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Frames sent; the check allows one lost (the link's first frame may go
/// before the peer's ring is filled).
const FRAMES: u64 = 2000;

#[test]
fn e1000_io_path_isolated_passes_traffic_without_an_abort() {
    let env = fgft_vm::Env::load().expect("environment");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cfg = Config::load(&root.join("corpus/campaign/e1000.toml")).expect("config");
    let d = &cfg.driver;
    let plain = prepare::plain(&env, &cfg).expect("driver sources");
    let mods = prepare::build_fgft_with(&env, &cfg, &plain, &d.io_path, "iotest", |_| {})
        .expect("fgft build");

    let mut spec = fgft_vm::VmSpec::new("e1000-io-path");
    let mut script = String::new();
    for m in &mods.modules {
        let name = m.file_name().expect("module name").to_string_lossy();
        let guest = format!("/lib/fgft/{name}");
        spec.files.push((m.clone(), guest.clone()));
        script.push_str(&format!("insmod {guest} || exit 3\n"));
    }
    script.push_str(&cfg.load_deps());
    script.push_str(&format!("sleep 1\n{}\n", d.setup));
    script.push_str(&format!(
        "fgft-pkt -n {FRAMES} -t 20000 -w 5000 eth0 eth1\n"
    ));
    for e in &d.io_path {
        script.push_str(&format!(
            "echo \"FGFT-MARK iostat entry={e} $(sed 's/ /=/' /sys/kernel/debug/fgft/entries/{e}/stats | tr '\\n' ' ')\"\n"
        ));
    }
    spec.script = script;
    spec.qemu_args = d.qemu.clone();
    spec.stock_modules = d.deps.clone();
    spec.timeout = Duration::from_secs(240);
    spec.add_tool(&env, "fgft-pkt").expect("fgft-pkt");
    let out = fgft_vm::run(&env, &spec).expect("boot");
    let summary = out.summary();
    assert_eq!(out.oopses, 0, "{summary}");

    let pkt = out
        .markers
        .iter()
        .find(|m| m.name == "pkt")
        .unwrap_or_else(|| panic!("no traffic result: {summary}"));
    let received: u64 = pkt.parse("received").expect("received");
    assert!(
        received + 1 >= FRAMES,
        "{received} of {FRAMES} frames arrived: {summary}"
    );

    let mut seen = BTreeMap::new();
    for m in out.markers.iter().filter(|m| m.name == "iostat") {
        let e = m.get("entry").expect("entry").to_string();
        let commits: u64 = m.parse("commits").unwrap_or(0);
        let aborts: u64 = m
            .fields
            .iter()
            .filter(|(k, _)| k.starts_with("aborts_"))
            .filter_map(|(_, v)| v.parse::<u64>().ok())
            .sum();
        seen.insert(e, (commits, aborts));
    }
    for e in &d.io_path {
        let (commits, aborts) = seen
            .get(e)
            .copied()
            .unwrap_or_else(|| panic!("no statistics of {e}: {summary}"));
        assert!(commits > 0, "{e} never committed: {summary}");
        assert_eq!(
            aborts, 0,
            "{e}: {aborts} aborts, {commits} commits: {summary}"
        );
    }
}
