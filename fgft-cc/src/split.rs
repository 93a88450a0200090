//! `fgft-cc split`: the command-line edge of the split library
//! (`fgft-split`): clap options in, diagnostics out.
//!
//! Nothing is written when there is an error: every problem is reported as a
//! located diagnostic first.  OUT is written through `fgft_base::outdir`: it
//! must not exist, be empty, or be an earlier fgft output and `--force` be
//! given; OUT may not overlap any file or directory the split read.

use crate::diag::{arg_error, out_error, CliError};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Driver source files, or one directory holding the driver (optional
    /// when --annotations names the driver's files).
    pub sources: Vec<PathBuf>,
    /// Output directory (created; written whole or not at all).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Kernel source tree the sidecar's file names are relative to.
    #[arg(long)]
    pub tree: Option<PathBuf>,
    /// Sidecar annotation file (TOML); repeatable: later files add hints,
    /// entry points and pure APIs to the first.
    #[arg(long)]
    pub annotations: Vec<PathBuf>,
    /// Entry points to isolate: a function name or a glob (`e1000_get_*`),
    /// or the functions stored in a slot `struct.field`, globs allowed
    /// (`ethtool_ops.*`); repeatable.
    #[arg(long = "isolate")]
    pub isolate: Vec<String>,
    /// Build OUT against --kdir after writing it: any gcc or modpost error
    /// or warning, and any kernel call of the SFI module without a wrapper,
    /// is reported at its generated line (with the driver line it comes
    /// from) and the command fails.
    #[arg(long)]
    pub check: bool,
    /// Isolate the slots of a profile of profiles.toml (`management`:
    /// ethtool_ops and the net_device_ops getters and setters).
    #[arg(long)]
    pub profile: Option<String>,
    /// Kernel build directory the output is meant for (recorded in OUT's
    /// Makefile as the default KDIR). Default: the running kernel's
    /// (/lib/modules/$(uname -r)/build), else the newest installed
    /// /usr/src/linux-headers-*, when one exists.
    #[arg(long, conflicts_with = "no_kdir")]
    pub kdir: Option<PathBuf>,
    /// Read no kernel headers, not even the default ones: a copy of a
    /// kernel member whose type only the headers tell is then refused.
    #[arg(long = "no-kdir")]
    pub no_kdir: bool,
    /// Replace an OUT that an earlier fgft run wrote (it holds
    /// `.fgft-manifest`); a directory fgft did not write is never replaced.
    #[arg(long)]
    pub force: bool,
    /// Extra table directories (compensations.toml, module-init.toml,
    /// macro-hints.toml); FGFT_TABLES is read too.
    #[arg(long = "tables")]
    pub tables: Vec<PathBuf>,
    /// Module.symvers of the built runtime module (for modpost).
    #[arg(long = "runtime-symvers")]
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks (stores are still checked).
    #[arg(long = "no-read-checks")]
    pub no_read_checks: bool,
    /// Stubs stamp the cycle counter between the stages of their
    /// transaction (begin, grants, copy-in, body, copy-out, commit) and of
    /// calls with isolation off; debugfs fgft/entries/NAME/stages shows the
    /// sums (for benchmarks: bench_iopath)
    #[arg(long = "stage-times")]
    pub stage_times: bool,
    /// Module name (default: from the sidecar, the Makefile, or the sources).
    #[arg(long)]
    pub module: Option<String>,
    /// No device checkpoint: do not derive one from the PM code, and do not
    /// warn that the driver has none.
    #[arg(long = "no-checkpoint")]
    pub no_checkpoint: bool,
    /// Leave out the marshaling hints of the annotation files and the
    /// sources (`[[hint]]`, `FGFT_BLOB` and the like): what the kernel's
    /// contracts and inference find alone (plan.txt names each source).
    #[arg(long = "no-hints")]
    pub no_hints: bool,
    /// Kernel version for the sidecar's per-version file lists (default:
    /// read from the tree's Makefile).
    #[arg(long = "kernel-version")]
    pub kernel_version: Option<String>,
    /// How diagnostics are written: `text` (stderr, with source snippets)
    /// or `sarif` (a SARIF 2.1.0 log on stdout, for code-scanning tools;
    /// the text goes to stderr as well, the summary lines too).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Sarif,
}

impl Args {
    fn options(&self) -> fgft_split::Options {
        fgft_split::Options {
            sources: self.sources.clone(),
            tree: self.tree.clone(),
            annotations: self.annotations.clone(),
            isolate: self.isolate.clone(),
            profile: self.profile.clone(),
            kdir: self.kdir.clone(),
            tables: self.tables.clone(),
            runtime_symvers: self.runtime_symvers.clone(),
            no_read_checks: self.no_read_checks,
            stage_times: self.stage_times,
            module: self.module.clone(),
            no_checkpoint: self.no_checkpoint,
            no_hints: self.no_hints,
            kernel_version: self.kernel_version.clone(),
            guess_kernel_types: false,
        }
    }
}

/// The kernel build directory to use: `--kdir` made absolute and checked,
/// else the default headers (none with `--no-kdir`).  Survey's `--profile`
/// verdicts use the same, so that they are split's own answers.
pub(crate) fn resolve_kdir(
    kdir: Option<&std::path::Path>,
    no_kdir: bool,
) -> Result<Option<PathBuf>, CliError> {
    let Some(k) = kdir else {
        return Ok(if no_kdir { None } else { default_kdir() });
    };
    let shown = k.display().to_string();
    let abs = std::fs::canonicalize(k).map_err(|e| {
        arg_error(
            "--kdir",
            &shown,
            format!("kernel build directory {shown}: {e}"),
            "give a kernel build directory, e.g. /lib/modules/$(uname -r)/build",
        )
    })?;
    if !is_kernel_build_dir(&abs) {
        return Err(arg_error(
            "--kdir",
            &shown,
            format!(
                "{shown} is not a kernel build directory (it has no Makefile with a .config or include/generated beside it)"
            ),
            "give a kernel build directory, e.g. /lib/modules/$(uname -r)/build or /usr/src/linux-headers-VERSION",
        ));
    }
    Ok(Some(abs))
}

/// A kernel build directory: its top Makefile and the configuration.
fn is_kernel_build_dir(d: &std::path::Path) -> bool {
    d.join("Makefile").is_file()
        && (d.join(".config").is_file() || d.join("include/generated/autoconf.h").is_file())
}

/// The running kernel's headers, else the newest installed ones.
fn default_kdir() -> Option<PathBuf> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let running = PathBuf::from(format!("/lib/modules/{}/build", release.trim()));
    if !release.trim().is_empty() && is_kernel_build_dir(&running) {
        return std::fs::canonicalize(&running).ok();
    }
    // Newest version first; of one version, the generic flavour before a
    // PREEMPT_RT one.
    let mut found: Vec<(Vec<u64>, bool, PathBuf)> = std::fs::read_dir("/usr/src")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("linux-headers-"))
                && is_kernel_build_dir(p)
        })
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let v = name["linux-headers-".len()..]
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse().ok())
                .collect();
            (v, !name.contains("-rt-"), p)
        })
        .collect();
    found.sort();
    found.pop().map(|(_, _, p)| p)
}

/// `--kernel-version`: numbers separated by dots (`6.12`, `6.1.0`).
fn check_kernel_version(v: &str) -> Result<(), CliError> {
    let ok = !v.is_empty()
        && v.split('.')
            .all(|c| !c.is_empty() && c.chars().all(|d| d.is_ascii_digit()));
    if ok {
        return Ok(());
    }
    Err(arg_error(
        "--kernel-version",
        v,
        format!("`{v}` is not a kernel version"),
        "give numbers separated by dots, e.g. --kernel-version 6.12",
    ))
}

pub fn run(args: Args) -> Result<(), CliError> {
    if args.format == Format::Text {
        return split(&args, &mut |l| println!("{l}"), &mut Vec::new());
    }
    // SARIF: the log is stdout; the summary lines go to stderr.
    let mut warnings = Vec::new();
    let r = split(&args, &mut |l| eprintln!("{l}"), &mut warnings);
    let (mut diags, errors) = match &r {
        Ok(()) => (Vec::new(), Vec::new()),
        Err(CliError::Located(d)) => (d.clone(), Vec::new()),
        Err(e) => (Vec::new(), vec![e.to_string()]),
    };
    warnings.append(&mut diags);
    let log = crate::sarif::log(&warnings, &errors);
    println!(
        "{}",
        serde_json::to_string_pretty(&log).map_err(|e| CliError::Msg(e.to_string()))?
    );
    r
}

/// The split; `say` prints a summary line, `warnings` gets the warnings
/// (they are also shown on stderr).
fn split(
    args: &Args,
    say: &mut dyn FnMut(String),
    warnings: &mut Vec<crate::diag::Located>,
) -> Result<(), CliError> {
    if let Some(v) = &args.kernel_version {
        check_kernel_version(v)?;
    }
    let kdir = resolve_kdir(args.kdir.as_deref(), args.no_kdir)?;
    if args.check && kdir.is_none() {
        return Err(arg_error(
            "--check",
            "",
            "--check builds the output, and no kernel build directory was given or found".into(),
            "give the kernel build directory with --kdir",
        ));
    }
    let mut args = args.clone();
    args.kdir = kdir;
    let args = &args;
    if let [dir] = args.sources.as_slice() {
        if fgft_split::rust_crate::is_crate(dir) {
            return split_crate(args, dir, say);
        }
    }
    let opts = args.options();
    let tables = fgft_split::Tables::load(&opts.tables)?;
    let split = fgft_split::compute_with(&opts, &tables)?;
    if !split.warnings.is_empty() {
        crate::diag::emit(&split.warnings);
        warnings.extend(split.warnings.iter().cloned());
    }
    let stage = fgft_base::outdir::stage(&args.out, &split.inputs, args.force, "fgft-cc split")
        .map_err(|e| out_error("-o", &args.out, e))?;
    fgft_split::write(stage.path(), &split.out)?;
    // --check builds the staging directory: a copy that does not build is
    // never put in place.  The built modules stay, listed in the manifest.
    if let Some(kdir) = args.kdir.as_deref().filter(|_| args.check) {
        let pure = split.direct_symbols.clone();
        let co = fgft_split::check::CheckOpts {
            kdir,
            table: &tables.api,
            pure: &pure,
        };
        let at = std::path::absolute(stage.path()).map_err(|source| CliError::Io {
            path: stage.path().to_path_buf(),
            source,
        })?;
        let diags = fgft_split::check::check(&at, &co)?;
        if !diags.is_empty() {
            return Err(CliError::Located(
                diags
                    .into_iter()
                    .map(|d| as_in_out(d, &at, &args.out))
                    .collect(),
            ));
        }
    }
    stage.commit().map_err(|e| out_error("-o", &args.out, e))?;
    say(format!("{} -> {}", split.summary, args.out.display()));
    if let Some(kdir) = args.kdir.as_deref().filter(|_| args.check) {
        say(format!(
            "checked: {} builds with no warning against {}",
            args.out.display(),
            kdir.display()
        ));
    }
    Ok(())
}

/// A diagnostic of the build in the staging directory `stage`, shown as
/// one in OUT (where the file will be).
fn as_in_out(
    mut d: crate::diag::Located,
    stage: &std::path::Path,
    out: &std::path::Path,
) -> crate::diag::Located {
    if let Ok(rel) = d.path.strip_prefix(stage) {
        d.path = out.join(rel);
    }
    let s = stage.display().to_string();
    let o = out.display().to_string();
    d.message = d.message.replace(&s, &o);
    for n in &mut d.notes {
        *n = n.replace(&s, &o);
    }
    d
}

/// A Rust driver crate: OUT is the crate with `#[fgft::isolate]` added to
/// the chosen methods (fgft_split::rust_crate).
fn split_crate(
    args: &Args,
    dir: &std::path::Path,
    say: &mut dyn FnMut(String),
) -> Result<(), CliError> {
    let cs = fgft_split::rust_crate::split(dir, &args.isolate)?;
    let stage = fgft_base::outdir::stage(&args.out, &[dir], args.force, "fgft-cc split")
        .map_err(|e| out_error("-o", &args.out, e))?;
    for (rel, bytes) in &cs.out {
        let p = stage.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|source| CliError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&p, bytes).map_err(|source| CliError::Io {
            path: p.clone(),
            source,
        })?;
    }
    stage.commit().map_err(|e| out_error("-o", &args.out, e))?;
    for l in &cs.isolated {
        say(format!("  #[fgft::isolate] {l}"));
    }
    say(format!("{} -> {}", cs.summary, args.out.display()));
    Ok(())
}
