//! fgft-vm: the VM harness every VM test of fgft uses.
//!
//! It builds an initramfs (busybox-static, the modules and files a test asks
//! for, a scenario script), boots the installed Debian 6.12 kernel in
//! `qemu-system-x86_64` with TCG, reads the serial console with a time limit
//! and returns a structured [`Outcome`]: scenario markers, oops count, panic,
//! the scenario's exit status.
//!
//! # Writing a VM test
//!
//! ```no_run
//! use fgft_vm::{run, Env, VmSpec};
//!
//! let env = Env::load().unwrap();
//! let mut spec = VmSpec::new("my-test");
//! spec.script = "echo FGFT-MARK hello x=1\n".into();
//! let out = run(&env, &spec).unwrap();
//! assert_eq!(out.marker("hello").unwrap().get("x"), Some("1"), "{out}");
//! ```
//!
//! # The guest
//!
//! `/init` (generated) mounts proc on `/proc`, sysfs on `/sys`, devtmpfs on
//! `/dev`, debugfs on `/sys/kernel/debug` and a tmpfs on `/tmp`, brings up
//! `lo`, raises the console log level to 7 (so `pr_info` from modules reaches
//! the console; the boot itself runs with `quiet`), then runs the scenario
//! script with `/bin/sh /fgft/scenario.sh` in `/`, prints
//! `FGFT-EXIT <status>` and powers off with `poweroff -f`.
//!
//! - `PATH=/sbin:/bin:/usr/sbin:/usr/bin`, `KVER` is the kernel release.
//! - Modules of [`VmSpec::modules`] are in `/lib/fgft/<file name>`; the
//!   script loads them (`insmod /lib/fgft/foo.ko`).
//! - Stock modules of [`VmSpec::stock_modules`] (Debian's, e.g. `e1000`,
//!   `snd-ens1370`) are resolved with their dependencies from the host's
//!   `modules.dep`, decompressed, and installed in `/lib/modules/$KVER` with a
//!   `modules.dep` of their own. They are NOT loaded by the harness: the script
//!   loads them with busybox `modprobe NAME` (which loads the dependencies
//!   first), so a test can choose when, or load its own build instead.
//! - Files of [`VmSpec::files`] are copied to their guest path, keeping the
//!   host file's permission bits. Guest programs built by [`guest_tool`] or
//!   [`guest_program`] are added that way.
//!
//! # Markers
//!
//! Any console line containing `FGFT-MARK <name> k=v k=v ...` (anywhere in
//! the line, so printk prefixes are fine) becomes a [`Marker`]. Values end at
//! white space. Modules should print them with `pr_info` or a higher level
//! (`pr_debug` is not shown). `/init` adds two of its own:
//! `fgft-boot uptime=<s>` before the scenario and `fgft-end uptime=<s>`
//! after it (guest seconds since boot).
//!
//! # Oopses, panics, time-outs
//!
//! [`OOPS_RULES`] says exactly which console lines count as an oops (one per
//! x86 die(), plus other `BUG:` reports). `Kernel panic - not syncing` sets
//! [`Outcome::panicked`]; the kernel runs with `panic=-1` and QEMU with
//! `-no-reboot`, so a panic ends the run at once. An oops does not panic
//! (Debian's `panic_on_oops=0`): the faulting task is killed and the script
//! goes on. A run past [`VmSpec::timeout`] is killed and reported with
//! [`Outcome::timed_out`].
//!
//! A boot that oopses, panics or times out before `/init` prints
//! `fgft-boot` has run nothing of the scenario; it is booted again, at most
//! twice, and the failed consoles are kept as `<name>.boot-failed-<n>.log`
//! ([`failed_before_scenario`]). So is a run whose first oops is an `int3`
//! trap in the kernel's own text, at any time: the emulation's race when the
//! kernel patches a static key ([`emulation_text_poke_race`]). Writable
//! `-drive` images are restored before a retried boot.
//!
//! # Guest programs
//!
//! `tools/vm/guest/*.c` are ours, built with `gcc -static -O2` on demand
//! ([`guest_tool`], cached by content hash in `<target>/vm-guest/`):
//!
//! - `fgft-ethtool IFACE OP...`: ethtool ioctls, one
//!   `FGFT-MARK ethtool op=<op> ret=<rc> errno=<n> value=<v> dev=<if> ...`
//!   line per operation (`all` runs every getter);
//! - `fgft-pkt [-u] [-n N | -d SECS] IFA IFB`: raw frames from IFA to IFB's
//!   MAC, `FGFT-MARK pkt sent=N received=M secs=S fps=F ...`;
//! - `fgft-tcp [-d SECS] IFA IFB`: one TCP stream from IFA to IFB, IFB moved
//!   into a network namespace of its own so that the stream crosses the
//!   hub, `FGFT-MARK tcp bytes=N secs=S mbps=M ...` (netperf's TCP_STREAM);
//! - `fgft-insnmark`: a mark of the instruction profile ([`InsnProfile`]).
//!
//! Their header comments document every option and field.
//!
//! # Logs and caches
//!
//! Every console goes to `<target>/vm-logs/<name>.log` (with the QEMU command
//! line and stderr). Decompressed stock modules and the extracted `vmlinux`
//! are cached under `<cache>/vm-modules/` and `<cache>/vm-kernel/`.
//!
//! # Networking
//!
//! No traffic may leave the VM. NICs use QEMU hubs, e.g. two e1000 NICs on one
//! hub:
//!
//! ```text
//! -netdev hubport,id=p0,hubid=0 -device e1000,netdev=p0,romfile=
//! -netdev hubport,id=p1,hubid=0 -device e1000,netdev=p1,romfile=
//! ```
//!
//! ([`VmSpec::add_hub_nics`] writes these; `romfile=` drops the iPXE option
//! ROM, whose prompt costs about 1.7 s of boot per NIC.)
//!
//! [`run`] rejects any other network back end (user, tap, socket, bridge,
//! ...) and host-socket character devices, and always passes `-nic none` so
//! QEMU adds no default user-mode NIC.
//!
//! # Parallelism
//!
//! At most 2 VMs boot at once across all processes (the machine has 2
//! cores): each run holds an `flock` on one of `<cache>/vm-slots/{0,1}.lock`.
//! `FGFT_VM_SLOTS` changes the number of slots.

mod console;
mod cpio;
mod env;
mod guest;
mod initramfs;
mod insn;
mod kbuild;
mod modules;
mod pin;
mod qemu;
mod slots;

pub use console::{parse_console, Marker, OopsRule, Outcome, OOPS_RULES};
pub use cpio::CpioWriter;
pub use env::Env;
pub use guest::{guest_program, guest_tool, host_program};
pub use insn::{compare_by_function, function_of, InsnProfile, Span as InsnSpan};
pub use kbuild::kbuild;
pub use modules::{resolve_modules, ModuleDep, ModulesDep};
pub use qemu::{
    check_qemu_args, emulation_text_poke_race, failed_before_scenario, pinned_in_log, run, VmSpec,
};

use std::path::PathBuf;

/// Every error the harness reports.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// `scripts/setup.sh --print-env` failed or printed something unusable.
    #[error("environment: {0}")]
    Env(String),
    /// An I/O error on a path.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A command could not be started.
    #[error("cannot run {cmd}: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    /// A Kbuild or guest-program build failed or printed a warning.
    #[error("build of {name} failed: {reason}\n{output}")]
    Build {
        name: String,
        reason: String,
        output: String,
    },
    /// A stock module (or one of its dependencies) is not in modules.dep.
    #[error("module {0} not found in modules.dep")]
    UnknownModule(String),
    /// modules.dep has a line that cannot be read.
    #[error("{path}:{line}: malformed modules.dep line")]
    ModulesDep { path: PathBuf, line: usize },
    /// A spec that the harness refuses to run.
    #[error("invalid VM spec {name}: {reason}")]
    Spec { name: String, reason: String },
    /// QEMU exited with a failure status (not a guest panic: those exit 0).
    #[error("qemu failed ({status}); log in {log}:\n{stderr}", log = .log.display())]
    Qemu {
        status: String,
        stderr: String,
        log: PathBuf,
    },
    /// A guest tool that does not exist.
    #[error("no guest tool {name} (looked for {path})")]
    NoTool { name: String, path: PathBuf },
}

impl VmError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VmError::Io {
            path: path.into(),
            source,
        }
    }
}
