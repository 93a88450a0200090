//! The user-space hook benchmark builds from the generated C with the
//! static-key shim, and its switches really patch the code: the counting
//! advice fires exactly on the calls made while it is switched on.  (The
//! timings are reported by `cargo run -p fgft-aspect --example bench_user`,
//! not asserted.)

use std::path::Path;

#[test]
fn user_harness_builds_and_switches() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let bin = fgft_aspect::bench::build_user(repo, work.path()).unwrap();
    let run = fgft_aspect::bench::run_user(&bin, 200).unwrap();
    assert_eq!(run.switch_hits, Some(2), "{}", run.output);
    for v in ["plain", "disabled", "enabled-empty"] {
        let ns = run
            .get(v)
            .unwrap_or_else(|| panic!("no {v}:\n{}", run.output));
        assert!(ns > 0.0 && ns < 1000.0, "{v}: {ns}");
    }
}
