//! Native campaign smoke tests on drivers other than e1000, in QEMU.
//!
//! - `*_entry_bug_oopses`: a BUG() planted at the entry of one entry point
//!   (so the outcome cannot be anything but an oops once the trigger reaches
//!   it) is built natively, booted, triggered and classified `Oops`; then the
//!   restart baseline (rmmod, insmod, device ready) is measured once.
//! - `triggers_reach_entry_points` (ignored: about two minutes): for every
//!   config in `corpus/campaign/`, one boot with the uninjected driver (the
//!   stock Debian module, or ours built from the repository) and the
//!   function tracer on the entry points of its `[trigger]` table; each
//!   trigger runs alone and must enter every entry point mapped to it, and
//!   the device check must pass after all of them. Run it after changing a
//!   config: `cargo test -p fgft-campaign --test native_smoke -- --ignored`.

use fgft_campaign::config::Config;
use fgft_campaign::native::NativeOutcome;
use fgft_campaign::{native, prepare, restart};
use fgft_inject::FaultKind;
use fgft_vm::{Env, VmSpec};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn env() -> Env {
    Env::load().expect("fgft environment (scripts/setup.sh)")
}

fn config_path(env: &Env, name: &str) -> PathBuf {
    env.repo_root
        .join("corpus/campaign")
        .join(format!("{name}.toml"))
}

/// Entry BUG variants of `entries` in driver `name`: each must oops the
/// native kernel, and one timed restart must succeed.
fn entry_bug_campaign(name: &str, entries: &[&str]) {
    let env = env();
    let cfg = Config::load(&config_path(&env, name)).unwrap();
    let mut prep = prepare::inject(&env, &cfg, 1, 1, &[FaultKind::Bug]).unwrap();
    prep.variants
        .retain(|v| entries.contains(&v.entry.as_str()));
    assert_eq!(
        prep.variants.len(),
        entries.len(),
        "{name}: one entry BUG variant per entry point expected"
    );
    let ko = prepare::build_native(&env, &cfg, &prep).unwrap();
    let results =
        native::run_all(&env, &cfg, &ko, &prep.variants, Duration::from_secs(40)).unwrap();
    assert_eq!(results.len(), entries.len());
    for (r, v) in results.iter().zip(&prep.variants) {
        assert_eq!(r.id, v.id);
        assert_eq!(
            r.outcome,
            NativeOutcome::Oops,
            "{name}: {} should oops natively: {r:?}",
            v.label
        );
        let oops = r.first_oops.as_deref().unwrap_or_default();
        assert!(
            oops.contains("kernel BUG at") || oops.contains("invalid opcode"),
            "{name}: {}: not a BUG(): {oops}",
            v.label
        );
        // The trigger was killed by the oops, so it never returned 0.
        assert_ne!(r.trigger_rc, Some(0), "{name}: {}", v.label);
    }
    let times = restart::measure(&env, &cfg, &ko, 1).unwrap();
    assert_eq!(times.len(), 1);
    // rmmod + insmod + ready takes at least a millisecond and, on TCG, far
    // less than the boot's time limit.
    assert!(
        (1_000_000..60_000_000_000).contains(&times[0]),
        "{name}: restart took {} ns",
        times[0]
    );
    eprintln!(
        "{name}: {} variant(s) oops natively; restart {:.1} ms",
        results.len(),
        times[0] as f64 / 1e6
    );
}

#[test]
fn tulip_entry_bug_oopses() {
    entry_bug_campaign("tulip", &["tulip_get_drvinfo"]);
}

#[test]
fn psmouse_entry_bug_oopses() {
    entry_bug_campaign("psmouse", &["psmouse_attr_show_protocol"]);
}

/// One config as the reachability check reads it (raw TOML, so the check
/// does not depend on the runner's config type).
struct Reach {
    name: String,
    module: String,
    /// Stock modules to load first.
    deps: Vec<String>,
    /// `Some(dir)`: our driver, built from the repository.
    repo_dir: Option<PathBuf>,
    qemu: Vec<String>,
    setup: String,
    check: String,
    check_marker: String,
    check_field: String,
    /// Guest command -> entry points it must reach, in config order.
    triggers: Vec<(String, Vec<String>)>,
}

fn strs(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn read_reach(env: &Env, path: &Path) -> Reach {
    let text = std::fs::read_to_string(path).unwrap();
    let v: toml::Value =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let d = &v["driver"];
    let s = |k: &str| {
        d.get(k)
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let iface = d.get("iface").and_then(|x| x.as_str()).unwrap_or("eth0");
    let mut triggers: Vec<(String, Vec<String>)> = Vec::new();
    for (entry, t) in v["trigger"].as_table().unwrap() {
        let t = t.as_str().unwrap();
        let cmd = match t.strip_prefix("sh:") {
            Some(c) => c.trim().to_string(),
            None => format!("fgft-ethtool {iface} {t}"),
        };
        match triggers.iter_mut().find(|(c, _)| *c == cmd) {
            Some((_, es)) => es.push(entry.clone()),
            None => triggers.push((cmd, vec![entry.clone()])),
        }
    }
    let repo_dir = (d.get("tree").and_then(|x| x.as_str()) == Some("repo"))
        .then(|| env.repo_root.join(s("dir")));
    Reach {
        name: s("name"),
        module: s("module").replace('-', "_"),
        deps: strs(d.get("deps")),
        repo_dir,
        qemu: strs(d.get("qemu")),
        setup: s("setup"),
        check: s("check"),
        check_marker: s("check_marker"),
        check_field: s("check_field"),
        triggers,
    }
}

/// The guest script: load, set up, trace the entry points, run each
/// trigger alone and report which entry points it entered, then check.
fn reach_script(r: &Reach) -> String {
    let mut s = String::new();
    for d in &r.deps {
        let _ = writeln!(s, "modprobe {d} || exit 3");
    }
    if r.repo_dir.is_some() {
        let _ = writeln!(s, "insmod /lib/fgft/{}.ko || exit 3", r.module);
    } else {
        let _ = writeln!(s, "modprobe {} || exit 3", r.module);
    }
    let _ = writeln!(s, "sleep 1\n{}\nsleep 1", r.setup);
    s.push_str(
        "T=/sys/kernel/tracing\n\
         [ -e $T/trace ] || mount -t tracefs nodev $T || exit 4\n",
    );
    for (_, entries) in &r.triggers {
        for e in entries {
            let _ = writeln!(
                s,
                "echo '{e}:mod:{m}' >> $T/set_ftrace_filter || echo FGFT-MARK notrace fn={e}",
                m = r.module
            );
        }
    }
    s.push_str("echo function > $T/current_tracer || exit 4\n");
    for (i, (cmd, entries)) in r.triggers.iter().enumerate() {
        let _ = writeln!(
            s,
            "echo > $T/trace\n{cmd}\necho FGFT-MARK reach-trigger i={i} rc=$?"
        );
        for e in entries {
            let _ = writeln!(
                s,
                "if grep -q ' {e} <-' $T/trace; then h=1; else h=0; fi; \
                 echo FGFT-MARK reach fn={e} trigger={i} hit=$h"
            );
        }
    }
    let _ = writeln!(s, "echo nop > $T/current_tracer\n{}", r.check);
    s
}

#[test]
#[ignore = "one boot per campaign config (about two minutes); run after changing a config"]
fn triggers_reach_entry_points() {
    let env = env();
    let dir = env.repo_root.join("corpus/campaign");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut tools = vec![
        (
            fgft_vm::guest_tool(&env, "fgft-ethtool").unwrap(),
            "/bin/fgft-ethtool".to_string(),
        ),
        (
            fgft_vm::guest_tool(&env, "fgft-pkt").unwrap(),
            "/bin/fgft-pkt".to_string(),
        ),
    ];
    let mut progs: Vec<PathBuf> = std::fs::read_dir(env.repo_root.join("tests/campaign/guest"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    progs.sort();
    for p in progs {
        let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
        tools.push((
            fgft_vm::guest_program(&env, &p).unwrap(),
            format!("/bin/{stem}"),
        ));
    }
    let reaches: Vec<Reach> = paths.iter().map(|p| read_reach(&env, p)).collect();
    let results: Vec<(String, Result<String, String>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = reaches
            .iter()
            .map(|r| {
                let (env, tools) = (&env, &tools);
                sc.spawn(move || (r.name.clone(), reach_one(env, r, tools)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failed = String::new();
    for (name, res) in &results {
        match res {
            Ok(table) => eprintln!("{name}: every entry point reached\n{table}"),
            Err(e) => {
                eprintln!("{name}: FAILED\n{e}");
                let _ = writeln!(failed, "{name}: {e}");
            }
        }
    }
    assert!(failed.is_empty(), "{failed}");
}

/// Boots once for `r`; Ok(per-entry table) or Err(what went wrong).
fn reach_one(env: &Env, r: &Reach, tools: &[(PathBuf, String)]) -> Result<String, String> {
    let mut spec = VmSpec::new(&format!("campaign-reach-{}", r.name));
    spec.qemu_args = r.qemu.clone();
    spec.stock_modules = r.deps.clone();
    match &r.repo_dir {
        Some(src) => {
            let include = env.repo_root.join("annotations/include");
            let built = fgft_vm::kbuild(
                env,
                &format!("campaign-reach-{}", r.name),
                src,
                &env.kdir,
                &[&include],
            )
            .map_err(|e| e.to_string())?;
            spec.modules.push(built.join(format!("{}.ko", r.module)));
        }
        None => spec.stock_modules.push(r.module.clone()),
    }
    spec.files = tools.to_vec();
    spec.timeout = Duration::from_secs(90 + 10 * r.triggers.len() as u64);
    spec.script = reach_script(r);
    let out = fgft_vm::run(env, &spec).map_err(|e| e.to_string())?;
    let mut problems = String::new();
    let mut table = String::new();
    if out.oopses > 0 || out.panicked || out.timed_out {
        let _ = writeln!(
            problems,
            "the clean run did not stay clean: {}",
            out.summary()
        );
    }
    for m in out.markers_named("notrace") {
        let _ = writeln!(problems, "{} cannot be traced", m.get("fn").unwrap_or("?"));
    }
    let rcs: BTreeMap<usize, String> = out
        .markers_named("reach-trigger")
        .iter()
        .filter_map(|m| Some((m.parse::<usize>("i")?, m.get("rc")?.to_string())))
        .collect();
    for (i, (cmd, entries)) in r.triggers.iter().enumerate() {
        for e in entries {
            let hit = out
                .markers_named("reach")
                .iter()
                .find(|m| m.get("fn") == Some(e.as_str()))
                .and_then(|m| m.get("hit"))
                .map(str::to_string);
            let rc = rcs.get(&i).map_or("-", String::as_str);
            let _ = writeln!(
                table,
                "  {e:<32} rc={rc:<3} hit={} via `{cmd}`",
                hit.as_deref().unwrap_or("-")
            );
            if hit.as_deref() != Some("1") {
                let _ = writeln!(problems, "`{cmd}` (rc {rc}) does not enter {e}");
            }
        }
    }
    let ok = out
        .markers_named(&r.check_marker)
        .last()
        .and_then(|m| m.parse::<u64>(&r.check_field))
        .is_some_and(|n| n > 0);
    if !ok {
        let _ = writeln!(
            problems,
            "device check `{}` failed after the triggers",
            r.check
        );
    }
    if problems.is_empty() {
        Ok(table)
    } else {
        Err(format!("{problems}{table}{out}"))
    }
}
