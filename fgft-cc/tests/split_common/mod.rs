//! Shared helpers of the split tests.

#![allow(dead_code)]

use fgft_base::kbuild::Make;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("fgft-cc is in the repository")
        .to_path_buf()
}

/// The kernel variables the split tests use.
#[derive(Debug, Clone)]
pub struct Env {
    pub kdir: PathBuf,
    pub kdir61: PathBuf,
    /// The 6.12 PREEMPT_RT headers.
    pub kdir_rt: PathBuf,
    pub src612: PathBuf,
    pub src61: PathBuf,
}

/// From the environment or from `scripts/setup.sh --print-env`.  A test that
/// needs them fails without them: the set-up step is part of the test
/// command.
pub fn env() -> Env {
    let vars = ["KDIR", "KDIR61", "KDIR_RT", "SRC612", "SRC61"];
    let text = if vars.iter().all(|v| std::env::var(v).is_ok()) {
        vars.iter()
            .map(|v| format!("export {v}={}\n", std::env::var(v).unwrap_or_default()))
            .collect::<String>()
    } else {
        let out = Command::new("bash")
            .arg(root().join("scripts/setup.sh"))
            .arg("--print-env")
            .output()
            .expect("run scripts/setup.sh");
        assert!(
            out.status.success(),
            "setup.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("export {k}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("no {k} (scripts/setup.sh --print-env)"))
    };
    Env {
        kdir: get("KDIR"),
        kdir61: get("KDIR61"),
        kdir_rt: get("KDIR_RT"),
        src612: get("SRC612"),
        src61: get("SRC61"),
    }
}

/// Runs `fgft-cc split ARGS` from the repository root; returns (exit code,
/// stdout, stderr).
pub fn split(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fgft-cc"))
        .arg("split")
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("FGFT_TABLES")
        .output()
        .expect("run fgft-cc");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A corpus driver and its sidecar.
pub struct Driver {
    pub name: &'static str,
    pub annotations: Vec<&'static str>,
    /// Sidecar names files relative to a tree.
    pub upstream: bool,
}

/// The six paper drivers (ens1370 and ens1371 are one source file built
/// twice) and our own two.
pub fn drivers() -> Vec<Driver> {
    let up = |name: &'static str| {
        let a = vec![match name {
            "e1000" => "corpus/upstream/e1000.toml",
            "8139too" => "corpus/upstream/8139too.toml",
            "r8169" => "corpus/upstream/r8169.toml",
            "pegasus" => "corpus/upstream/pegasus.toml",
            "ens1370" => "corpus/upstream/ens1370.toml",
            "ens1371" => "corpus/upstream/ens1371.toml",
            _ => "corpus/upstream/psmouse.toml",
        }];
        Driver {
            name,
            annotations: a,
            upstream: true,
        }
    };
    vec![
        up("e1000"),
        up("8139too"),
        up("r8169"),
        up("pegasus"),
        up("ens1370"),
        up("ens1371"),
        up("psmouse"),
        Driver {
            name: "fgft_ne2k",
            annotations: vec!["corpus/drivers/fgft_ne2k/fgft_ne2k.toml"],
            upstream: false,
        },
        Driver {
            name: "fgft_char",
            annotations: vec!["corpus/drivers/fgft_char/fgft_char.toml"],
            upstream: false,
        },
    ]
}

/// Every corpus driver: `drivers()`, then each other sidecar of
/// `corpus/upstream/` (the campaign's drivers, written with no marshaling
/// hint, which need the kernel's view: split them with `--kdir`), by name.
pub fn all_drivers() -> Vec<Driver> {
    let mut v = drivers();
    let mut more: Vec<String> = std::fs::read_dir(root().join("corpus/upstream"))
        .expect("corpus/upstream")
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.strip_suffix(".toml").map(str::to_string)
        })
        .filter(|n| !v.iter().any(|d| d.name == n))
        .collect();
    more.sort();
    for n in more {
        let path: &'static str = Box::leak(format!("corpus/upstream/{n}.toml").into_boxed_str());
        v.push(Driver {
            name: Box::leak(n.into_boxed_str()),
            annotations: vec![path],
            upstream: true,
        });
    }
    v
}

/// The list_add() fixture (fgft-cc/tests/split_fixtures/listdemo).
pub fn listdemo() -> Driver {
    Driver {
        name: "listdemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/listdemo/listdemo.toml"],
        upstream: false,
    }
}

/// The const-object fixture (fgft-cc/tests/split_fixtures/constdemo): a
/// copy of an object the kernel declares const must be writable.
pub fn constdemo() -> Driver {
    Driver {
        name: "constdemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/constdemo/constdemo.toml"],
        upstream: false,
    }
}

/// The lock and wait fixture (fgft-cc/tests/split_fixtures/lockdemo):
/// `lock = "call"` locks, a wait entry on the SFI stack, dev_close().
pub fn lockdemo() -> Driver {
    Driver {
        name: "lockdemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/lockdemo/lockdemo.toml"],
        upstream: false,
    }
}

/// The tracepoint fixture (fgft-cc/tests/split_fixtures/tracedemo): a
/// library module with no init that fires its own tracepoints from isolated
/// entry points, sizes a member by its net_device's queue count, keeps an
/// aligned pointer into another member's memory, and passes a function of
/// another unit inside a macro.
pub fn tracedemo() -> Driver {
    Driver {
        name: "tracedemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/tracedemo/tracedemo.toml"],
        upstream: false,
    }
}

/// The I/O-path fixture (fgft-cc/tests/split_fixtures/iodemo): transmit,
/// interrupt and NAPI poll isolated, keyed by their devices, with the
/// aborts slots.toml gives them.
pub fn iodemo() -> Driver {
    Driver {
        name: "iodemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/iodemo/iodemo.toml"],
        upstream: false,
    }
}

pub fn ringdemo() -> Driver {
    Driver {
        name: "ringdemo",
        annotations: vec!["fgft-cc/tests/split_fixtures/ringdemo/ringdemo.toml"],
        upstream: false,
    }
}

/// Splits `d` into `out` (for a tree when upstream), `extra` arguments
/// added: (exit code, stderr).
pub fn try_split_driver(
    d: &Driver,
    tree: Option<&Path>,
    out: &Path,
    extra: &[&str],
) -> (i32, String) {
    let mut args: Vec<String> = Vec::new();
    for a in &d.annotations {
        args.push("--annotations".into());
        args.push(a.to_string());
    }
    if d.upstream {
        args.push("--tree".into());
        args.push(
            tree.expect("upstream drivers need a tree")
                .display()
                .to_string(),
        );
    }
    args.push("-o".into());
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _o, e) = split(&argv);
    (code, e)
}

/// Splits `d` into `out` (for a tree when upstream).  Panics with the
/// diagnostics on failure.
pub fn split_driver(d: &Driver, tree: Option<&Path>, out: &Path, extra: &[&str]) {
    let (code, e) = try_split_driver(d, tree, out, extra);
    assert_eq!(code, 0, "fgft-cc split {}: {e}", d.name);
}

/// Every file under `dir`, by relative path.
pub fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).expect("read dir").flatten() {
            let q = e.path();
            if q.is_dir() {
                stack.push(q);
            } else {
                let rel = q
                    .strip_prefix(dir)
                    .expect("under dir")
                    .display()
                    .to_string();
                let text = std::fs::read(&q).expect("read file");
                out.insert(rel, String::from_utf8_lossy(&text).to_string());
            }
        }
    }
    out
}

/// The files of a split that fgft generated (for upstream drivers: never
/// the copies of upstream code, only the plan, the build file, the edit log
/// with the text fgft inserted, and the generated headers and C file).
/// The filtered copies of the driver's PM functions
/// (`fgft_<m>_pm_copies.c`) are upstream code with calls dropped: left out.
pub fn generated_only(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .iter()
        .filter(|(k, _)| {
            k.as_str() == "plan.txt"
                || k.as_str() == "Kbuild"
                || k.as_str() == "Makefile"
                || k.as_str() == "edits.txt"
                || k.rsplit('/').next().is_some_and(|f| f.starts_with("fgft_"))
        })
        .filter(|(k, _)| !k.ends_with("_pm_copies.c"))
        .filter(|(k, _)| !k.starts_with("include/") && !k.starts_with("runtime/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// One text holding several files, for a snapshot.
pub fn bundle(files: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    for (k, v) in files {
        s.push_str(&format!("===== {k}\n{v}"));
        if !v.ends_with('\n') {
            s.push('\n');
        }
    }
    s
}

/// Builds the runtime module (a copy of runtime-kmod/, without its
/// self-test) for `kdir` under `dir`; returns its Module.symvers.
pub fn build_runtime(kdir: &Path, dir: &Path) -> PathBuf {
    let src = root().join("runtime-kmod");
    let st = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(dir)
        .status()
        .expect("cp runtime-kmod");
    assert!(st.success());
    let rt = dir.join("runtime-kmod");
    let out = Make::new(kdir, &rt)
        .var("FGFT_NO_SELFTEST", "y")
        .target("modules")
        .run()
        .expect("make runtime");
    assert!(
        out.success(),
        "building the runtime for {}: {}",
        kdir.display(),
        out.combined()
    );
    rt.join("Module.symvers")
}

/// `make -C kdir M=dir modules`: (success, combined output).
pub fn kbuild(kdir: &Path, dir: &Path) -> (bool, String) {
    let out = Make::new(kdir, dir)
        .target("modules")
        .run()
        .expect("run make");
    (out.success(), out.combined())
}

/// Lines of a Kbuild log that are warnings or errors (compiler, objtool,
/// modpost).
pub fn problems(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| {
            let l2 = l.to_ascii_lowercase();
            l2.contains("warning:") || l2.contains("error:") || l2.contains("error ")
        })
        .map(str::to_string)
        .collect()
}
