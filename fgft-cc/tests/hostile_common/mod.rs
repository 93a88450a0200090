//! The hostile-input harness (issue 47): runs `fgft-cc` as a careless or
//! hostile user would, and checks four things of every case:
//! - the exit code;
//! - no panic, no abort, no signal, no hang (a bounded wait);
//! - a located message (`path:line:col`) that names the problem;
//! - the file system before and after: nothing outside OUT changed, and
//!   OUT is either absent or complete (its manifest lists exactly what is
//!   there).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scratch tree that stands for the user's files.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::Builder::new()
                .prefix("fgft-hostile-")
                .tempdir()
                .unwrap(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes a file (and its parents).
    pub fn write(&self, rel: &str, text: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// A small well-formed driver: one ethtool op that touches the
    /// adapter, and a probe that stores the ops table.
    pub fn driver(&self, rel: &str) -> PathBuf {
        self.write(&format!("{rel}/drv.c"), DRIVER);
        self.write(&format!("{rel}/drv.h"), DRIVER_H);
        self.write(&format!("{rel}/Makefile"), "obj-m += drv.o\n");
        self.path(rel)
    }
}

pub const DRIVER_H: &str = "struct adapter {\n\tint msg_enable;\n\tint count;\n};\n";

pub const DRIVER: &str = r#"#include <linux/netdevice.h>
#include <linux/ethtool.h>
#include "drv.h"

static u32 drv_get_msglevel(struct net_device *netdev)
{
	struct adapter *a = netdev_priv(netdev);

	return a->msg_enable;
}

static void drv_set_msglevel(struct net_device *netdev, u32 data)
{
	struct adapter *a = netdev_priv(netdev);

	a->msg_enable = data;
	a->count++;
}

static const struct ethtool_ops drv_ethtool_ops = {
	.get_msglevel = drv_get_msglevel,
	.set_msglevel = drv_set_msglevel,
};

void drv_set_ethtool_ops(struct net_device *netdev)
{
	netdev->ethtool_ops = &drv_ethtool_ops;
}
"#;

/// One entry of a file-system snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
    Other,
}

/// Everything under `root`, without following links.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut m = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let Ok(ft) = e.file_type() else { continue };
            let entry = if ft.is_symlink() {
                Entry::Link(std::fs::read_link(&p).unwrap_or_default())
            } else if ft.is_dir() {
                stack.push(p.clone());
                Entry::Dir
            } else if ft.is_file() {
                Entry::File(std::fs::read(&p).unwrap_or_default())
            } else {
                Entry::Other
            };
            m.insert(rel, entry);
        }
    }
    m
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// A command to run in the sandbox.
pub struct Run<'a> {
    pub sb: &'a Sandbox,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
}

pub fn fgft<'a>(sb: &'a Sandbox, args: &[&str]) -> Run<'a> {
    Run {
        sb,
        args: args.iter().map(|s| s.to_string()).collect(),
        cwd: sb.root().to_path_buf(),
        env: Vec::new(),
        timeout: Duration::from_secs(120),
    }
}

impl Run<'_> {
    pub fn cwd(mut self, rel: &str) -> Self {
        self.cwd = self.sb.path(rel);
        self
    }

    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }

    pub fn timeout(mut self, secs: u64) -> Self {
        self.timeout = Duration::from_secs(secs);
        self
    }

    /// Runs, killing the process after the timeout.
    pub fn run(&self) -> Outcome {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fgft-cc"));
        cmd.args(&self.args)
            .current_dir(&self.cwd)
            .env("NO_COLOR", "1")
            .env_remove("FGFT_TABLES")
            .env_remove("FGFT_PARSE_BUDGET_MS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let mut child = cmd.spawn().expect("fgft-cc runs");
        let mut out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let t_out = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        });
        let t_err = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        });
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if start.elapsed() > self.timeout {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let elapsed = start.elapsed();
        let stdout = String::from_utf8_lossy(&t_out.join().unwrap()).into_owned();
        let stderr = String::from_utf8_lossy(&t_err.join().unwrap()).into_owned();
        let Some(status) = status else {
            panic!(
                "fgft-cc {:?} hung: killed after {:?}\nstderr:\n{stderr}",
                self.args, self.timeout
            );
        };
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            panic!(
                "fgft-cc {:?} died of signal {sig}\nstderr:\n{stderr}",
                self.args
            );
        }
        Outcome {
            code: status.code(),
            stdout,
            stderr,
            elapsed,
        }
    }
}

/// Whether `text` holds a `path:line:col` reference (codespan's `┌─ f:1:2`
/// or gcc's `f:1:2:`).
pub fn has_location(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace()).any(|w| {
        let parts: Vec<&str> = w.trim_end_matches(':').rsplitn(3, ':').collect();
        parts.len() == 3
            && !parts[2].is_empty()
            && parts[0].chars().all(|c| c.is_ascii_digit())
            && !parts[0].is_empty()
            && parts[1].chars().all(|c| c.is_ascii_digit())
            && !parts[1].is_empty()
    })
}

/// What a case expects.
pub struct Expect<'a> {
    /// Exit code.
    pub code: i32,
    /// Words the message must contain (case-insensitive), naming the
    /// problem; empty for a run that succeeds.
    pub names: &'a [&'a str],
    /// OUT, relative to the sandbox: it may change (absent or complete);
    /// nothing else may.
    pub out: Option<&'a str>,
    /// Also require a `path:line:col` location (on by default for refusals).
    pub located: bool,
    /// Report files (relative) the command may write besides OUT.
    pub allowed: &'a [&'a str],
}

impl<'a> Expect<'a> {
    pub fn refused(names: &'a [&'a str]) -> Expect<'a> {
        Expect {
            code: 1,
            names,
            out: None,
            located: true,
            allowed: &[],
        }
    }

    pub fn refused_out(names: &'a [&'a str], out: &'a str) -> Expect<'a> {
        Expect {
            out: Some(out),
            ..Expect::refused(names)
        }
    }

    pub fn ok(out: &'a str) -> Expect<'a> {
        Expect {
            code: 0,
            names: &[],
            out: Some(out),
            located: false,
            allowed: &[],
        }
    }

    /// Also lets these report files (relative paths) change.
    pub fn allow(self, files: &'a [&'a str]) -> Expect<'a> {
        Expect {
            allowed: files,
            ..self
        }
    }
}

/// Runs the case and checks its four properties; returns the outcome.
pub fn case(run: Run<'_>, expect: Expect<'_>) -> Outcome {
    let sb = run.sb;
    let before = snapshot(sb.root());
    let o = run.run();
    let all = format!("{}\n{}", o.stdout, o.stderr);
    let what = format!(
        "fgft-cc {:?}\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        run.args, o.code, o.stdout, o.stderr
    );
    assert!(
        !all.contains("panicked at") && !all.contains("stack overflow"),
        "panic or abort: {what}"
    );
    assert_eq!(o.code, Some(expect.code), "exit code: {what}");
    let lower = all.to_lowercase();
    for n in expect.names {
        assert!(
            lower.contains(&n.to_lowercase()),
            "the message does not name `{n}`: {what}"
        );
    }
    if expect.located {
        assert!(has_location(&o.stderr), "no path:line:col location: {what}");
    }
    let after = snapshot(sb.root());
    let out = expect.out.map(PathBuf::from);
    let inside = |p: &Path| {
        out.as_ref().is_some_and(|o| p.starts_with(o))
            || expect.allowed.iter().any(|a| p == Path::new(a))
    };
    for (p, e) in &before {
        if inside(p) {
            continue;
        }
        assert_eq!(
            after.get(p),
            Some(e),
            "{} changed or vanished outside OUT: {what}",
            p.display()
        );
    }
    // OUT's parents may be made for it (as directories, nothing else).
    let parent_of_out = |p: &Path| {
        out.as_ref().is_some_and(|o| o.starts_with(p)) && matches!(after.get(p), Some(Entry::Dir))
    };
    for p in after.keys() {
        assert!(
            before.contains_key(p) || inside(p) || parent_of_out(p),
            "{} appeared outside OUT: {what}",
            p.display()
        );
    }
    if let Some(o) = &out {
        out_complete_or_absent(&sb.root().join(o), &before, &after, o);
    }
    o
}

/// OUT is absent, unchanged, or complete: its manifest lists exactly the
/// files there, with their sizes.
pub fn out_complete_or_absent(
    dir: &Path,
    before: &BTreeMap<PathBuf, Entry>,
    after: &BTreeMap<PathBuf, Entry>,
    rel: &Path,
) {
    let keys = |m: &BTreeMap<PathBuf, Entry>| -> BTreeMap<PathBuf, Entry> {
        m.iter()
            .filter(|(p, _)| p.starts_with(rel))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect()
    };
    if keys(before) == keys(after) || !dir.exists() {
        return;
    }
    assert_complete(dir);
}

/// `dir` holds fgft's manifest and exactly the files it lists.
pub fn assert_complete(dir: &Path) {
    let m = std::fs::read_to_string(dir.join(".fgft-manifest"))
        .unwrap_or_else(|e| panic!("{}: no manifest: {e}", dir.display()));
    let mut listed = BTreeMap::new();
    for l in m.lines().skip(1) {
        let (p, n) = l.rsplit_once('\t').expect("path<TAB>size");
        listed.insert(PathBuf::from(p), n.parse::<u64>().unwrap());
    }
    assert!(!listed.is_empty(), "{}: empty manifest", dir.display());
    let mut found = BTreeMap::new();
    for (p, e) in snapshot(dir) {
        if let Entry::File(b) = e {
            if p != Path::new(".fgft-manifest") {
                found.insert(p, b.len() as u64);
            }
        }
    }
    assert_eq!(listed, found, "{}: OUT is not complete", dir.display());
}
