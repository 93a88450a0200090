//! Booting a spec in QEMU and reading its console.

use crate::console::{parse_console, Outcome};
use crate::{guest_tool, initramfs, pin, slots, Env, VmError};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// What to boot and run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmSpec {
    /// Names the log (`<target>/vm-logs/<name>.log`); a plain file name.
    pub name: String,
    /// Our modules (host paths), put in `/lib/fgft/`.
    pub modules: Vec<PathBuf>,
    /// Debian modules to make loadable with `modprobe NAME` (with deps).
    pub stock_modules: Vec<String>,
    /// `(host path, guest path)`: files copied into the guest.
    pub files: Vec<(PathBuf, String)>,
    /// The scenario, run by `/bin/sh` (busybox ash).
    pub script: String,
    /// Extra QEMU arguments (devices, `-smp 2`, ...). Network back ends
    /// other than `hubport` are rejected.
    pub qemu_args: Vec<String>,
    /// Wall-time limit from QEMU start; QEMU is killed when it passes.
    pub timeout: Duration,
    pub memory_mb: u32,
    /// Extra kernel command-line words.
    pub cmdline: Vec<String>,
    /// Pins vCPU `k` to host CPU `k` (modulo the host's CPUs) and QEMU's
    /// other threads (main loop, timers) to the last vCPU's host CPU, so
    /// that a busy vCPU does not share its host CPU with a measured one
    /// (`pin.rs`). [`Outcome::pinned`] says what was pinned.
    pub pin_vcpus: bool,
}

impl VmSpec {
    /// A spec with a 120 s timeout, 512 MB and nothing else.
    pub fn new(name: &str) -> Self {
        VmSpec {
            name: name.to_string(),
            modules: Vec::new(),
            stock_modules: Vec::new(),
            files: Vec::new(),
            script: String::new(),
            qemu_args: Vec::new(),
            timeout: Duration::from_secs(120),
            memory_mb: 512,
            cmdline: Vec::new(),
            pin_vcpus: false,
        }
    }

    /// Builds guest tool `name` ([`guest_tool`]) and installs it as
    /// `/bin/<name>`.
    pub fn add_tool(&mut self, env: &Env, name: &str) -> Result<&mut Self, VmError> {
        let host = guest_tool(env, name)?;
        self.files.push((host, format!("/bin/{name}")));
        Ok(self)
    }

    /// Installs a dynamically linked host program with its libraries at
    /// their host paths ([`crate::host_program`]), e.g. rt-tests'
    /// `/usr/bin/cyclictest`.
    pub fn add_host_program(&mut self, program: &Path) -> Result<&mut Self, VmError> {
        self.files.extend(crate::host_program(program)?);
        Ok(self)
    }

    /// Adds `count` NICs of QEMU model `model` (e.g. `e1000`) on hub
    /// `hub`, with netdev ids `h<hub>p<i>` and MACs `52:54:00:12:<hub>:<i>`
    /// (both two hex digits). `romfile=` drops the NIC's iPXE option ROM,
    /// whose boot prompt costs about 1.7 s per NIC under TCG. In the guest
    /// the NICs are `eth0`, `eth1`, ... in this order once the driver binds.
    pub fn add_hub_nics(&mut self, model: &str, hub: u32, count: u32) -> &mut Self {
        for i in 0..count {
            let id = format!("h{hub}p{i}");
            self.qemu_args.extend([
                "-netdev".to_string(),
                format!("hubport,id={id},hubid={hub}"),
                "-device".to_string(),
                format!("{model},netdev={id},mac=52:54:00:12:{hub:02x}:{i:02x},romfile="),
            ]);
        }
        self
    }
}

/// The log's header line naming the pinned vCPU threads (one `; `-joined
/// line of [`Outcome::pinned`]).
const PINNED_LINE: &str = "# pinned: ";

/// [`Outcome::pinned`] read back from a saved log's header (empty when the
/// run was not pinned).
pub fn pinned_in_log(log: &str) -> Vec<String> {
    log.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(PINNED_LINE))
        .map(|p| p.split("; ").map(str::to_string).collect())
        .unwrap_or_default()
}

/// Options whose value names a network back end.
const NET_OPTS: &[&str] = &["netdev", "nic", "net"];
/// Back ends allowed per option: only QEMU-internal hubs.
fn allowed_backend(opt: &str, kind: &str) -> bool {
    match opt {
        "netdev" => kind == "hubport",
        "nic" => kind == "none",
        "net" => kind == "nic" || kind == "none",
        _ => false,
    }
}
/// Options that open host sockets whatever their value.
const HOST_NET_OPTS: &[&str] = &["vnc", "spice", "s", "gdb", "incoming", "qmp"];
/// Character-device back ends that open host sockets.
const SOCKET_CHARDEVS: &[&str] = &["socket", "udp", "tcp", "telnet", "websocket"];

/// Refuses QEMU arguments that would let traffic leave the VM: `-netdev`
/// with a back end other than `hubport` (user, tap, socket, bridge, ...),
/// `-nic` other than `none`, `-net` other than `nic`/`none`, socket
/// character devices and host listeners (`-vnc`, `-gdb`, `-s`, ...).
pub fn check_qemu_args(args: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(opt) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            continue;
        };
        let (opt, inline) = match opt.split_once('=') {
            Some((o, v)) => (o, Some(v.to_string())),
            None => (opt, None),
        };
        if HOST_NET_OPTS.contains(&opt) {
            return Err(format!("`{a}` opens a host network socket"));
        }
        let value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| args.get(i).cloned())
                .ok_or_else(|| format!("`{a}` has no value"))
        };
        if NET_OPTS.contains(&opt) {
            let v = value()?;
            let kind = backend_kind(&v);
            if !allowed_backend(opt, &kind) {
                return Err(format!(
                    "`-{opt} {v}`: network back end `{kind}` is not allowed; \
                     use `-netdev hubport,id=ID,hubid=N -device MODEL,netdev=ID`"
                ));
            }
        } else if opt == "chardev" {
            let v = value()?;
            let kind = backend_kind(&v);
            if SOCKET_CHARDEVS.contains(&kind.as_str()) {
                return Err(format!("`-chardev {v}` opens a host socket"));
            }
        } else if ["serial", "monitor", "parallel", "debugcon"].contains(&opt) {
            let v = value()?;
            if SOCKET_CHARDEVS
                .iter()
                .any(|s| v.starts_with(&format!("{s}:")))
            {
                return Err(format!("`-{opt} {v}` opens a host socket"));
            }
        }
    }
    Ok(())
}

/// `user,id=n0` -> `user`; `id=n0,type=tap` -> `tap`.
fn backend_kind(v: &str) -> String {
    let parts: Vec<&str> = v.split(',').collect();
    if let Some(t) = parts.iter().find_map(|p| p.strip_prefix("type=")) {
        return t.to_string();
    }
    parts
        .iter()
        .find(|p| !p.contains('='))
        .map_or_else(String::new, |p| p.to_string())
}

/// The kernel file QEMU loads: the uncompressed ELF `vmlinux` inside
/// `env.kernel_image`, extracted once into `<cache>/vm-kernel/` with the
/// kernel's `scripts/extract-vmlinux` (QEMU boots it through its PVH entry,
/// which skips the in-guest decompression: about 1.5 s less per boot under
/// TCG). Same kernel, same code. Falls back to the bzImage itself when the
/// extraction fails or `FGFT_VM_BZIMAGE=1` is set.
pub(crate) fn boot_kernel(env: &Env) -> PathBuf {
    if std::env::var_os("FGFT_VM_BZIMAGE").is_some_and(|v| v == "1") {
        return env.kernel_image.clone();
    }
    extract_vmlinux(env).unwrap_or_else(|| env.kernel_image.clone())
}

fn extract_vmlinux(env: &Env) -> Option<PathBuf> {
    let dir = env.cache.join("vm-kernel");
    let out = dir.join(format!("vmlinux-{}", env.kver));
    if out.is_file() {
        return Some(out);
    }
    let script = env.src612.join("scripts/extract-vmlinux");
    fs::create_dir_all(&dir).ok()?;
    let tmp = dir.join(format!("vmlinux-{}.tmp{}", env.kver, std::process::id()));
    let file = fs::File::create(&tmp).ok()?;
    let status = Command::new("sh")
        .arg(&script)
        .arg(&env.kernel_image)
        .stdout(file)
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let mut magic = [0u8; 4];
    let is_elf = fs::File::open(&tmp)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"\x7fELF";
    if !status.success() || !is_elf {
        let _ = fs::remove_file(&tmp);
        return None;
    }
    fs::rename(&tmp, &out).ok()?;
    Some(out)
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// Builds the initramfs of `spec`, waits for a free VM slot, boots
/// `env.kernel_image` in QEMU (TCG) and returns what happened.
///
/// The QEMU command is
/// `qemu-system-x86_64 -accel tcg -m <memory_mb> -nographic -no-reboot
/// -nic none -kernel <vmlinux of env.kernel_image> -initrd <cpio> -append "console=ttyS0 panic=-1
/// quiet <cmdline>" <qemu_args>`: `panic=-1` reboots at once on a panic and
/// `-no-reboot` turns that into a QEMU exit; oopses do not panic (Debian's
/// default `panic_on_oops=0`), so a test sees them and goes on. `quiet` only
/// silences the boot: `/init` sets the console log level to 7 before the
/// scenario starts.
///
/// Errors are for runs that could not happen (bad spec, build failure, QEMU
/// failing to start). A guest that oopses, panics or hangs is an `Ok`
/// outcome saying so. The console is saved in `<target>/vm-logs/<name>.log`.
pub fn run(env: &Env, spec: &VmSpec) -> Result<Outcome, VmError> {
    let bad = |reason: String| VmError::Spec {
        name: spec.name.clone(),
        reason,
    };
    if spec.name.is_empty()
        || spec.name.contains('/')
        || spec.name.starts_with('.')
        || spec.name.contains(char::is_whitespace)
    {
        return Err(bad("the name must be a plain file name".into()));
    }
    check_qemu_args(&spec.qemu_args).map_err(&bad)?;
    if spec.cmdline.iter().any(|w| w.contains('"')) {
        return Err(bad("kernel command-line words cannot contain `\"`".into()));
    }

    let initrd_dir = env.target_dir.join("vm-initrd");
    fs::create_dir_all(&initrd_dir).map_err(|e| VmError::io(&initrd_dir, e))?;
    let initrd = initrd_dir.join(format!(
        "{}-{}-{}.cpio",
        spec.name,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let built = initramfs::build(env, spec, &initrd);
    let result = built.and_then(|()| boot_retrying(env, spec, &initrd));
    let _ = fs::remove_file(&initrd);
    result
}

/// How many times a boot that failed before `/init` reached the scenario is
/// tried again.
const BOOT_RETRIES: usize = 2;

/// Whether `out` is a stock kernel that failed before `/init` printed its
/// `fgft-boot` marker: an oops, a panic or a time-out with no marker. Nothing
/// of the scenario (no module, no command) has run then, so the failure is
/// the emulation's (seen under TCG with 2 vCPUs: an `int3` oops in the
/// timer tick while the kernel patches its own text), not the test's.
pub fn failed_before_scenario(out: &Outcome) -> bool {
    out.marker("fgft-boot").is_none() && (out.oopses > 0 || out.panicked || out.timed_out)
}

/// Whether the kernel's first oops is a breakpoint (`int3`) trap in its own
/// text, outside any module: the emulation's race when the kernel patches its
/// text (a static key switched by `text_poke_bp()`), seen under TCG with 2
/// vCPUs. One vCPU still runs a translation of the temporary `int3` after the
/// patch has finished and its handler has let go, at any time, also after
/// `/init` started the scenario (loading `fgft_rt` switches the preempt
/// notifiers' key). No code of ours executes `int3`: `BUG()` is `ud2`, and a
/// module's fault names the module in its `RIP:` line.
pub fn emulation_text_poke_race(out: &Outcome) -> bool {
    let mut lines = out.console.lines();
    while let Some(line) = lines.next() {
        if line.contains("Oops: ") {
            if !line.contains("Oops: int3:") {
                return false;
            }
            return lines
                .take(20)
                .find_map(|l| l.split_once("RIP: 0010:").map(|(_, rip)| rip.trim()))
                .is_some_and(|rip| !rip.is_empty() && !rip.contains(" ["));
        }
    }
    false
}

/// Whether a failed boot is tried again: it failed before the scenario
/// ([`failed_before_scenario`]) or on the emulation's text-patching race
/// ([`emulation_text_poke_race`]).
fn retried(out: &Outcome) -> bool {
    failed_before_scenario(out) || emulation_text_poke_race(out)
}

/// [`boot`], again up to [`BOOT_RETRIES`] times while the kernel fails
/// before the scenario starts or on the emulation's text-patching race
/// ([`retried`]). Each failed boot's console is kept as
/// `<name>.boot-failed-<n>.log` beside the run's log, and the kept run's
/// log says how many boots were retried. A retried scenario may have written
/// its disks (`-drive file=`): each boot starts from the images as they were
/// before the first.
fn boot_retrying(env: &Env, spec: &VmSpec, initrd: &std::path::Path) -> Result<Outcome, VmError> {
    let saved: Vec<(PathBuf, PathBuf)> = drive_files(&spec.qemu_args)
        .into_iter()
        .map(|d| {
            let mut copy = d.clone().into_os_string();
            copy.push(".fgft-before-boot");
            (d, PathBuf::from(copy))
        })
        .collect();
    let mut result = Ok(());
    for (disk, copy) in &saved {
        if result.is_ok() {
            result = fs::copy(disk, copy)
                .map(drop)
                .map_err(|e| VmError::io(disk, e));
        }
    }
    let out = result.and_then(|()| boot_loop(env, spec, initrd, &saved));
    for (_, copy) in &saved {
        let _ = fs::remove_file(copy);
    }
    out
}

fn boot_loop(
    env: &Env,
    spec: &VmSpec,
    initrd: &std::path::Path,
    saved: &[(PathBuf, PathBuf)],
) -> Result<Outcome, VmError> {
    let mut retried = 0;
    loop {
        if retried > 0 {
            for (disk, copy) in saved {
                fs::copy(copy, disk).map_err(|e| VmError::io(disk, e))?;
            }
        }
        let out = boot(env, spec, initrd)?;
        if retried == BOOT_RETRIES || !self::retried(&out) {
            if retried > 0 {
                let note = format!(
                    "# {retried} earlier boot(s) failed before the scenario or on the \
                     emulation's text-patching race: {}\n",
                    (1..=retried)
                        .map(|n| failed_log_name(spec, n))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let log =
                    fs::read_to_string(&out.log_path).map_err(|e| VmError::io(&out.log_path, e))?;
                fs::write(&out.log_path, note + &log).map_err(|e| VmError::io(&out.log_path, e))?;
            }
            return Ok(out);
        }
        retried += 1;
        let kept = out.log_path.with_file_name(failed_log_name(spec, retried));
        fs::rename(&out.log_path, &kept).map_err(|e| VmError::io(&kept, e))?;
        eprintln!(
            "fgft-vm {}: the kernel failed before the scenario started or on the emulation's \
             text-patching race ({}); booting again",
            spec.name,
            kept.display()
        );
    }
}

/// The image files of `-drive file=PATH,...` arguments (not `readonly` or
/// `snapshot=on` ones, which QEMU does not write).
fn drive_files(args: &[String]) -> Vec<PathBuf> {
    args.windows(2)
        .filter(|w| w[0] == "-drive")
        .filter_map(|w| {
            let opts: Vec<&str> = w[1].split(',').collect();
            let read_only = opts
                .iter()
                .any(|o| matches!(*o, "readonly" | "readonly=on" | "snapshot=on" | "snapshot"));
            let file = opts.iter().find_map(|o| o.strip_prefix("file="))?;
            (!read_only).then(|| PathBuf::from(file))
        })
        .collect()
}

fn failed_log_name(spec: &VmSpec, n: usize) -> String {
    format!("{}.boot-failed-{n}.log", spec.name)
}

fn boot(env: &Env, spec: &VmSpec, initrd: &std::path::Path) -> Result<Outcome, VmError> {
    let mut append = String::from("console=ttyS0 panic=-1 quiet");
    for w in &spec.cmdline {
        append.push(' ');
        append.push_str(w);
    }
    let mut args: Vec<String> = vec![
        "-accel".into(),
        "tcg".into(),
        "-m".into(),
        spec.memory_mb.to_string(),
        "-nographic".into(),
        "-no-reboot".into(),
        "-nic".into(),
        "none".into(),
        "-kernel".into(),
        boot_kernel(env).display().to_string(),
        "-initrd".into(),
        initrd.display().to_string(),
        "-append".into(),
        append,
    ];
    args.extend(spec.qemu_args.iter().cloned());

    let log_dir = env.target_dir.join("vm-logs");
    fs::create_dir_all(&log_dir).map_err(|e| VmError::io(&log_dir, e))?;
    let log_path = log_dir.join(format!("{}.log", spec.name));

    // Pinned: QEMU starts on its main loop's host CPU, its vCPU threads
    // are moved once they appear.
    let pinning = if spec.pin_vcpus {
        let vcpus = pin::smp_count(&spec.qemu_args).map_err(|reason| VmError::Spec {
            name: spec.name.clone(),
            reason,
        })?;
        let host = thread::available_parallelism().map_or(1, |n| n.get());
        args.extend(["-name".into(), "fgft,debug-threads=on".into()]);
        Some(pin::plan(vcpus, host))
    } else {
        None
    };
    let cmdline = match &pinning {
        Some((_, other)) => format!("taskset -c {other} qemu-system-x86_64 {}", args.join(" ")),
        None => format!("qemu-system-x86_64 {}", args.join(" ")),
    };
    let mut command = match &pinning {
        Some((_, other)) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &other.to_string(), "qemu-system-x86_64"]);
            c
        }
        None => Command::new("qemu-system-x86_64"),
    };

    let slot = slots::acquire(&env.cache.join("vm-slots"), slots::slot_count())?;
    let start = Instant::now();
    let mut child = command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| VmError::Spawn {
            cmd: cmdline.clone(),
            source,
        })?;

    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let mut stdout = child.stdout.take().ok_or_else(|| VmError::Spawn {
        cmd: cmdline.clone(),
        source: std::io::Error::other("no stdout pipe"),
    })?;
    let reader = thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut stderr = child.stderr.take();
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    });

    let deadline = start + spec.timeout;
    let pinner = pinning.map(|(cpus, _)| {
        let pid = child.id();
        let until = start + spec.timeout.min(Duration::from_secs(60));
        thread::spawn(move || pin::pin_vcpus(pid, &cpus, until))
    });
    let mut console = Vec::new();
    let mut timed_out = false;
    loop {
        let now = Instant::now();
        if now >= deadline {
            timed_out = true;
            let _ = child.kill();
            break;
        }
        match rx.recv_timeout(deadline - now) {
            Ok(chunk) => console.extend_from_slice(&chunk),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child.wait().map_err(|source| VmError::Spawn {
        cmd: cmdline.clone(),
        source,
    })?;
    let duration = start.elapsed();
    let _ = reader.join();
    console.extend(rx.try_iter().flatten());
    let qemu_err = err_reader.join().unwrap_or_default();
    let pinned = match pinner.map(|p| p.join()) {
        None => Ok(Vec::new()),
        Some(Ok(r)) => r,
        Some(Err(_)) => Err("the pinning thread panicked".to_string()),
    };

    let text = String::from_utf8_lossy(&console);
    let mut out = parse_console(&text);
    out.timed_out = timed_out;
    out.duration = duration;
    out.log_path = log_path.clone();
    let pin_note = match &pinned {
        Ok(p) if p.is_empty() => String::new(),
        Ok(p) => format!("{PINNED_LINE}{}\n", p.join("; ")),
        Err(e) => format!("# pinning failed: {e}\n"),
    };
    let log = format!(
        "# fgft-vm {} (slot {}): {}\n# {}\n{pin_note}{}\n# qemu exit: {status}\n# qemu stderr:\n{}",
        spec.name,
        slot.index,
        out.summary(),
        cmdline,
        out.console,
        qemu_err
    );
    drop(slot);
    fs::write(&log_path, log).map_err(|e| VmError::io(&log_path, e))?;
    if !timed_out && !status.success() {
        return Err(VmError::Qemu {
            status: status.to_string(),
            stderr: qemu_err,
            log: log_path,
        });
    }
    out.pinned = pinned.map_err(|reason| VmError::Spec {
        name: spec.name.clone(),
        reason: format!(
            "cannot pin the vCPU threads: {reason} (log in {})",
            log_path.display()
        ),
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn hub_networking_is_allowed() {
        let mut spec = VmSpec::new("x");
        spec.add_hub_nics("e1000", 0, 2);
        assert_eq!(
            spec.qemu_args.join(" "),
            "-netdev hubport,id=h0p0,hubid=0 \
             -device e1000,netdev=h0p0,mac=52:54:00:12:00:00,romfile= \
             -netdev hubport,id=h0p1,hubid=0 \
             -device e1000,netdev=h0p1,mac=52:54:00:12:00:01,romfile="
        );
        assert_eq!(check_qemu_args(&spec.qemu_args), Ok(()));
        assert_eq!(check_qemu_args(&v("-smp 2 -device edu -nic none")), Ok(()));
        assert_eq!(check_qemu_args(&v("-net nic,model=e1000")), Ok(()));
        assert_eq!(
            check_qemu_args(&v("-chardev file,id=c,path=/tmp/x")),
            Ok(())
        );
    }

    #[test]
    fn leaks_are_rejected() {
        for bad in [
            "-netdev user,id=n0",
            "-netdev tap,id=n0,ifname=tap0",
            "--netdev socket,id=n0,listen=:1234",
            "-netdev bridge,id=n0,br=br0",
            "-netdev id=n0,type=user",
            "-netdev=user,id=n0",
            "-nic user",
            "-nic tap",
            "-net user",
            "-chardev socket,id=c,host=1.2.3.4,port=1",
            "-serial tcp:1.2.3.4:5",
            "-vnc :0",
            "-s",
            "-gdb tcp::1234",
            "-netdev",
        ] {
            assert!(check_qemu_args(&v(bad)).is_err(), "{bad} was accepted");
        }
        let e = check_qemu_args(&v("-netdev user,id=n0")).unwrap_err();
        assert!(e.contains("hubport"), "{e}");
    }

    #[test]
    fn bad_specs_are_errors_before_booting() {
        let env = Env::load().expect("fgft environment (scripts/setup.sh)");
        let mut spec = VmSpec::new("bad-net");
        spec.qemu_args = v("-netdev user,id=n0 -device e1000,netdev=n0");
        assert!(matches!(run(&env, &spec), Err(VmError::Spec { .. })));
        let spec = VmSpec::new("a/b");
        assert!(matches!(run(&env, &spec), Err(VmError::Spec { .. })));
        let mut spec = VmSpec::new("unknown-module");
        spec.stock_modules = vec!["no_such_module_fgft".into()];
        assert!(matches!(run(&env, &spec), Err(VmError::UnknownModule(_))));
    }

    #[test]
    fn pinned_threads_are_read_back_from_a_log() {
        let log = "# fgft-vm x (slot 0): exit=0\n# taskset -c 1 qemu-system-x86_64\n\
                   # pinned: CPU 0/TCG (tid 7) -> host CPU 0; CPU 1/TCG (tid 8) -> host CPU 1\n\
                   # pinned: console text\n";
        assert_eq!(
            pinned_in_log(log),
            [
                "CPU 0/TCG (tid 7) -> host CPU 0",
                "CPU 1/TCG (tid 8) -> host CPU 1"
            ]
        );
        assert!(pinned_in_log("# fgft-vm x\nconsole\n# pinned: later\n").is_empty());
    }

    #[test]
    fn only_failures_before_the_boot_marker_are_retried() {
        let early = "[    1.2] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n\
                     [    1.2] RIP: 0010:sched_clock_cpu+0x5/0x1b0\n";
        assert!(failed_before_scenario(&parse_console(early)));
        let mut hung = parse_console("[    0.9] Booting the kernel\n");
        assert!(!failed_before_scenario(&hung));
        hung.timed_out = true;
        assert!(failed_before_scenario(&hung));
        let panic = "Kernel panic - not syncing: VFS: Unable to mount root fs\n";
        assert!(failed_before_scenario(&parse_console(panic)));
        // Once /init has printed its marker, a failure is the scenario's.
        let late = format!("FGFT-MARK fgft-boot uptime=1.50\n{early}");
        assert!(!failed_before_scenario(&parse_console(&late)));
        let clean = "FGFT-MARK fgft-boot uptime=1.50\nFGFT-EXIT 0\n";
        assert!(!failed_before_scenario(&parse_console(clean)));
    }

    #[test]
    fn writable_drive_images_are_found() {
        let args = v("-smp 2 -drive file=/t/a.img,if=none,format=raw,id=d0 \
                      -device virtio-blk-pci,drive=d0 -drive file=/t/b.img,readonly=on");
        assert_eq!(drive_files(&args), [PathBuf::from("/t/a.img")]);
        assert!(drive_files(&v("-smp 2")).is_empty());
    }

    #[test]
    fn an_int3_oops_in_kernel_text_is_the_emulations_race() {
        let race = "FGFT-MARK fgft-boot uptime=1.85\n\
                    [    1.93] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n\
                    [    1.93] CPU: 0 UID: 0 PID: 18 Comm: rcu_preempt\n\
                    [    1.93] RIP: 0010:__schedule+0x428/0xbf0\n\
                    [    1.93] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI\n";
        let out = parse_console(race);
        assert!(!failed_before_scenario(&out));
        assert!(emulation_text_poke_race(&out));
        assert!(retried(&out));
        // A module's own trap, or any other first oops, is the scenario's.
        let module = race.replace("__schedule+0x428/0xbf0", "st_body+0x5/0x10 [fgft_st]");
        assert!(!emulation_text_poke_race(&parse_console(&module)));
        let gpf = "FGFT-MARK fgft-boot uptime=1.85\n\
                   [    2.1] Oops: general protection fault: 0000 [#1] SMP\n\
                   [    2.1] RIP: 0010:memcpy+0x5/0x20\n\
                   [    2.2] Oops: int3: 0000 [#2] PREEMPT SMP NOPTI\n\
                   [    2.2] RIP: 0010:__schedule+0x428/0xbf0\n";
        assert!(!emulation_text_poke_race(&parse_console(gpf)));
        assert!(!retried(&parse_console(gpf)));
        let clean = "FGFT-MARK fgft-boot uptime=1.50\nFGFT-EXIT 0\n";
        assert!(!emulation_text_poke_race(&parse_console(clean)));
    }

    #[test]
    fn defaults() {
        let s = VmSpec::new("n");
        assert_eq!(s.timeout, Duration::from_secs(120));
        assert_eq!(s.memory_mb, 512);
        assert!(s.modules.is_empty() && s.files.is_empty() && s.script.is_empty());
    }
}
