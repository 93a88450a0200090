//! The one runner of `make -C KDIR M=DIR <targets>`.
//!
//! Job: run an out-of-tree Kbuild make in a directory against a kernel build
//! directory and hand back its exit status and output.
//!
//! Invariants: the command line is always `make -C <kdir> M=<dir>`, then
//! `-j<n> --output-sync=target` when more than one job is asked for (each
//! target's output stays in one piece), then the `NAME=value` variables,
//! then the targets, in the order given; stdin is
//! closed; stdout and stderr are captured (never inherited); the environment
//! is the caller's with the given changes; a make that runs and fails is an
//! [`Output`] with `success == false`, only a make that cannot start is an
//! [`Error`].

use crate::Error;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// A make run to be started with [`Make::run`].
#[derive(Debug, Clone)]
pub struct Make {
    kdir: PathBuf,
    dir: PathBuf,
    vars: Vec<(String, String)>,
    targets: Vec<String>,
    env: Vec<(String, Option<String>)>,
    jobs: usize,
}

/// What a make run gave.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// stdout followed by stderr.
    pub fn combined(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Make {
    /// `make -C kdir M=dir` (no target: make's default).
    pub fn new(kdir: impl AsRef<Path>, dir: impl AsRef<Path>) -> Make {
        Make {
            kdir: kdir.as_ref().to_path_buf(),
            dir: dir.as_ref().to_path_buf(),
            vars: Vec::new(),
            targets: Vec::new(),
            env: Vec::new(),
            jobs: 1,
        }
    }

    /// Runs up to `n` recipes at once (`-j`); 0 means one per CPU.
    pub fn jobs(mut self, n: usize) -> Make {
        self.jobs = match n {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        self
    }

    fn job_args(&self) -> Vec<String> {
        if self.jobs > 1 {
            vec![format!("-j{}", self.jobs), "--output-sync=target".into()]
        } else {
            Vec::new()
        }
    }

    pub fn target(mut self, t: impl Into<String>) -> Make {
        self.targets.push(t.into());
        self
    }

    /// A `NAME=value` make variable on the command line.
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Make {
        self.vars.push((name.into(), value.into()));
        self
    }

    /// Sets an environment variable of make.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Make {
        self.env.push((name.into(), Some(value.into())));
        self
    }

    /// Removes an environment variable from make's environment.
    pub fn env_remove(mut self, name: impl Into<String>) -> Make {
        self.env.push((name.into(), None));
        self
    }

    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        let mut s = format!("make -C {} M={}", self.kdir.display(), self.dir.display());
        for j in self.job_args() {
            s.push(' ');
            s.push_str(&j);
        }
        for (k, v) in &self.vars {
            s.push_str(&format!(" {k}={v}"));
        }
        for t in &self.targets {
            s.push(' ');
            s.push_str(t);
        }
        s
    }

    /// Runs make and waits for it.
    pub fn run(&self) -> Result<Output, Error> {
        let mut c = Command::new("make");
        c.arg("-C")
            .arg(&self.kdir)
            .arg(format!("M={}", self.dir.display()))
            .args(self.job_args());
        for (k, v) in &self.vars {
            c.arg(format!("{k}={v}"));
        }
        c.args(&self.targets);
        for (k, v) in &self.env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let out = c
            .stdin(Stdio::null())
            .output()
            .map_err(|source| Error::Spawn {
                cmd: self.command_line(),
                source,
            })?;
        Ok(Output {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_order() {
        let m = Make::new("/k", "/d")
            .var("W", "1")
            .target("a.i")
            .target("modules")
            .env("LC_ALL", "C");
        assert_eq!(m.command_line(), "make -C /k M=/d W=1 a.i modules");
        let j = Make::new("/k", "/d").jobs(3).target("modules");
        assert_eq!(
            j.command_line(),
            "make -C /k M=/d -j3 --output-sync=target modules"
        );
        assert_eq!(
            Make::new("/k", "/d").jobs(1).command_line(),
            "make -C /k M=/d"
        );
    }

    #[test]
    fn a_failing_make_is_an_output_not_an_error() {
        // `make -C` into a directory that does not exist fails at once.
        let d = std::env::temp_dir().join("fgft-base-no-such-kdir");
        let Ok(out) = Make::new(&d, &d).target("x").run() else {
            return; // no make on this machine
        };
        assert!(!out.success());
        assert!(out.combined().contains("fgft-base-no-such-kdir"));
    }
}
