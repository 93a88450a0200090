//! The readiness benchmark on a small sample (CI keeps this; the full run
//! is `scripts/bench-readiness.sh`): five drivers/net modules of 6.12,
//! evenly spaced over the list, split with the management profile and no
//! sidecar, and built.  No module may crash split or be accepted and then
//! fail to build, every refusal error must say how to fix it, and the
//! report must count what it ran.

use fgft_readiness::{build_runtime, candidates, report, run_all, Config, Outcome};
use std::path::PathBuf;
use std::process::Command;

fn env() -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(root.join("scripts/setup.sh"))
        .arg("--print-env")
        .output()
        .expect("setup.sh --print-env");
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("export {k}=")))
            .map(|v| PathBuf::from(v.trim_matches('"')))
            .unwrap_or_else(|| panic!("{k} not in setup.sh --print-env"))
    };
    (get("SRC612"), get("KDIR"))
}

#[test]
fn a_sample_of_drivers_net_is_split_and_built() {
    let (tree, kdir) = env();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let kconfig = std::fs::read_to_string(kdir.join(".config")).expect("kernel .config");
    let cands = candidates(&tree, &kconfig, Some(5)).expect("candidates");
    assert_eq!(
        cands.len(),
        5,
        "the 6.12 tree has more than five candidates"
    );
    let rt = tempfile::tempdir().unwrap();
    let symvers = build_runtime(&root.join("runtime-kmod"), &kdir, rt.path()).expect("runtime");
    let cfg = Config {
        tree,
        kdir,
        profile: "management".into(),
        sample: Some(5),
        jobs: 2,
        runtime_symvers: symvers,
        tables: Vec::new(),
    };
    let results = run_all(&cands, &cfg).expect("run");
    let md = report(&results, "sample", "cargo test -p fgft-readiness");
    for r in &results {
        assert!(
            !matches!(r.outcome, Outcome::Crashed | Outcome::AcceptedButFailing),
            "{}: {:?} {:?}\n{md}",
            r.candidate.name,
            r.outcome,
            r.build
        );
        assert_eq!(
            r.errors, r.errors_with_fix,
            "{}: a refusal without a fix\n{md}",
            r.candidate.name
        );
    }
    assert!(md.contains("| **all** | 5 |"), "{md}");
}
