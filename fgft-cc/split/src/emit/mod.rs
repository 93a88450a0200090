//! Writes the split: the main module (the original driver with each isolated
//! entry point's slot pointing at its stub), the SFI module (the closures,
//! renamed, with every kernel call redirected to a wrapper), the headers
//! both include, and the Kbuild file that builds them.
//!
//! Layout of OUT:
//!
//! ```text
//! Kbuild                   obj-m += <m>_fgft.o <m>_sfi.o
//! Makefile                 convenience: make KDIR=... (calls Kbuild)
//! plan.txt                 what was isolated and how (human-readable)
//! edits.txt                every edit made to the driver's files
//! include/fgft/runtime.h   the runtime API (copy)
//! include/fgft.h           the annotation macros (copy; they compile away)
//! fgft_rt.symvers          the runtime's symbol versions (--runtime-symvers)
//! main/<driver files>      the original files with byte-range edits; a
//!                          unit with generated code ends with one #include
//! main/fgft_stubs_<unit>.c that code: stubs, copy functions, binds, init
//! main/fgft_stubs.h        stub helpers (stubs-gen)
//! main/fgft_<m>_main.h     declarations shared by the main-module files
//! main/fgft_<m>_gtab.h     names of the address-table slots (both modules)
//! sfi/<driver .c files>    SFI translation units (byte-range edits)
//! sfi/fgft_<m>_sfi.h       wrapper prototypes and redirect macros
//! sfi/fgft_sfi_<tu>.h      per-unit renames of closure functions
//! sfi/fgft_<m>_sfi_rt.c    wrappers, address table, init (no sanitizer)
//! ```

mod build;
pub mod edit;
mod gtab;
mod icall;
mod main;
mod sfi;
pub mod wrappers;

use crate::diag::Located;
use crate::plan::table::Table;
use crate::plan::{Plan, Sources};
use fgft_facts::program::FileId;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Sanitizer flags of SFI objects.
pub const SANITIZE: &str = "-fsanitize=kernel-address -fasan-shadow-offset=0xdffffc0000000000 \
--param asan-instrumentation-with-call-threshold=0 --param asan-stack=0 --param asan-globals=0";

/// Options of the emitter.
#[derive(Debug, Clone, Default)]
pub struct EmitOpts {
    /// Text of the runtime API header (copied to include/fgft/runtime.h).
    pub runtime_header: String,
    /// Text of the annotation header (copied to include/fgft.h).
    pub fgft_header: String,
    /// Text of the runtime module's Module.symvers (copied to
    /// fgft_rt.symvers, which the Kbuild file names relative to itself).
    pub runtime_symvers: Option<String>,
    /// Build the SFI module without read checks.
    pub no_read_checks: bool,
    /// How the sources were given (for the Kbuild comment).
    pub origin: String,
    /// The module_*_driver helpers (module-init.toml).
    pub module_macros: fgft_parse::modinit::ModuleMacros,
    /// Kernel build directory OUT's Makefile defaults to (else the running
    /// kernel's).
    pub kdir: Option<PathBuf>,
    /// The runtime module's sources (path under runtime-kmod/, text),
    /// written to OUT/runtime/ and built with the driver's modules unless
    /// an installed runtime's Module.symvers is given.
    pub runtime_files: Vec<(PathBuf, String)>,
}

/// The files of OUT, by relative path.
pub type Output = BTreeMap<PathBuf, String>;

/// The kernel functions whose direct calls from SFI code sfi-as.sh sends to
/// the runtime's checked forms (include/fgft/sfi-direct.list: a name a
/// line, `#` comments).
pub(crate) fn direct_names() -> impl Iterator<Item = &'static str> {
    build::SFI_DIRECT_LIST
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

/// A file's name as an identifier part: its stem, and for a file that is
/// not a `.c` its extension too (`amd8111e.h` -> `amd8111e_h`), so that a
/// header and the unit of the same stem never share a name.
pub(crate) fn stem(p: &std::path::Path) -> String {
    let s = p
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .map(|s| fgft_base::ident::underscored(&s))
        .unwrap_or_default();
    match p.extension().map(|e| e.to_string_lossy().to_string()) {
        Some(e) if e != "c" => format!("{s}_{}", fgft_base::ident::underscored(&e)),
        _ => s,
    }
}

/// What emitting accumulates: the files, the problems, the edit log.
pub(crate) struct Ctx<'a, 'i> {
    pub src: &'a Sources<'i>,
    pub plan: &'a Plan,
    pub table: &'a Table,
    pub opts: &'a EmitOpts,
    pub out: Output,
    pub diags: Vec<Located>,
    pub edit_log: String,
}

impl Ctx<'_, '_> {
    /// A located error at `range` of driver file `fid`.
    pub fn error(&mut self, fid: FileId, range: std::ops::Range<usize>, message: String) {
        self.diags.push(inp_diag(self.src, fid, range, message));
    }

    /// Adds a generated file, its C rewrapped at 80 columns.
    pub fn generated(&mut self, path: impl Into<PathBuf>, text: &str) {
        self.out.insert(path.into(), fgft_stubs::tidy(text));
    }
}

/// Writes everything.  Located problems found while emitting (overlapping
/// edits, globals used inside macros of SFI code) come back as errors.
pub fn emit(
    plan: &Plan,
    src: &Sources<'_>,
    table: &Table,
    opts: &EmitOpts,
) -> Result<Output, Vec<Located>> {
    let mut cx = Ctx {
        src,
        plan,
        table,
        opts,
        out: Output::new(),
        diags: Vec::new(),
        edit_log: String::new(),
    };
    let grefs = gtab::Slots::new(src, plan);
    main::emit_main(&mut cx, &grefs);
    let units = sfi::units(src, plan);
    sfi::emit_sfi(&mut cx, &grefs, &units);
    build::emit_build(&mut cx, &units);
    let d = &plan.driver;
    cx.generated(format!("main/fgft_{d}_gtab.h"), &grefs.header(src, plan));
    cx.out.insert(
        PathBuf::from("plan.txt"),
        wrap_report(&plan_text(src, plan, table), fgft_stubs::HARD),
    );
    let log = std::mem::take(&mut cx.edit_log);
    cx.out.insert(
        PathBuf::from("edits.txt"),
        format!(
            "# Byte-range edits fgft-cc split made to the driver's files (line numbers\n\
             # of the original; deleted text is not shown).\n{log}"
        ),
    );
    if cx.diags.iter().any(|x| !x.warning) {
        return Err(cx.diags);
    }
    Ok(cx.out)
}

pub(crate) fn inp_diag(
    src: &Sources<'_>,
    fid: FileId,
    range: std::ops::Range<usize>,
    message: String,
) -> Located {
    src.located(fid, range, message, "here", vec![], false)
}

/// `text` with every line over `width` columns broken between words; a
/// continued line is indented four spaces more than the line it continues
/// (a single word longer than the width stays whole).
pub(crate) fn wrap_report(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = &body[..body.len() - body.trim_start().len()];
        let more = format!("{indent}    ");
        let mut cur = indent.to_string();
        let mut at_start = true;
        for w in body.split(' ').filter(|w| !w.is_empty()) {
            let len = cur.chars().count();
            if !at_start && len + 1 + w.chars().count() > width {
                out.push_str(&cur);
                out.push('\n');
                cur = more.clone();
                at_start = true;
            }
            if !at_start {
                cur.push(' ');
            }
            cur.push_str(w);
            at_start = false;
        }
        out.push_str(&cur);
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The plan's lines for what an entry's abort runs besides returning.
/// The plan's lines of an entry's slots and how it marshals.
fn slot_lines(s: &mut String, sp: &fgft_stubs::EntrySpec) {
    if !sp.slots.is_empty() {
        let _ = writeln!(s, "  slots: {}", sp.slots.join(", "));
        if sp.in_place {
            s.push_str(
                "  marshaling: in place (slots.toml in_place), stores logged, undone on abort\n",
            );
        }
    }
}

fn abort_lines(s: &mut String, sp: &fgft_stubs::EntrySpec) {
    if let Some((run, _)) = &sp.abort_extra.run {
        let _ = writeln!(s, "  on abort, first: {run}");
    }
    if let (Some(r), Some(_)) = (&sp.abort_extra.restored, &sp.dev_ops) {
        let run = r
            .run
            .as_deref()
            .map(|r| format!("{r} "))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  abort once the device is restored: {run}return {}",
            r.value
        );
    }
}

/// How the SFI module reaches kernel function `a` (one line of the plan).
fn api_how(plan: &Plan, table: &Table, a: &String) -> String {
    match table.apis.get(a) {
        Some(t) if t.inline => format!("inline ({})", t.effect),
        Some(t) if t.variadic => format!("direct, checked arguments ({})", t.effect),
        Some(t) => {
            let mut v = vec![format!("wrapped ({})", t.effect)];
            if t.commit {
                v.push("at commit".into());
            }
            if let Some(u) = &t.undo {
                v.push(format!("undo {u}"));
            }
            if let Some(n) = &t.note {
                v.push(format!("({n})"));
            }
            v.join(", ")
        }
        None if !table.device_accessors([a]).is_empty() => {
            "inline (device: marks the transaction)".into()
        }
        None if table.inline_names.contains(a) => "inline (value)".into(),
        None if plan.header_calls.contains_key(a) => {
            format!("compiled into SFI code ({})", plan.header_calls[a])
        }
        None => "declared pure".into(),
    }
}

/// A human-readable account of the plan (also the golden test's subject).
pub fn plan_text(src: &Sources<'_>, plan: &Plan, table: &Table) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "fgft split plan for {}", plan.module);
    let _ = writeln!(s, "entries: {}", plan.entries.len());
    for l in &plan.device.summary {
        let _ = writeln!(s, "{l}");
    }
    for e in &plan.entries {
        let sp = &e.spec;
        let _ = writeln!(s, "\nentry {} ({})", sp.name, sp.origin);
        slot_lines(&mut s, sp);
        let _ = writeln!(
            s,
            "  abort: {:?}; device key: {}; device ops: {}",
            sp.abort,
            sp.dev_key,
            sp.dev_ops.as_deref().unwrap_or("none")
        );
        abort_lines(&mut s, sp);
        let fns: Vec<&str> = e.closure.fns.iter().map(String::as_str).collect();
        let _ = writeln!(s, "  closure ({}): {}", fns.len(), fns.join(" "));
        for p in &sp.params {
            let how = match &p.how {
                fgft_stubs::ParamHow::Value => "passed as is".to_string(),
                fgft_stubs::ParamHow::Obj { ty } => format!("copy of {}", sp.types[*ty].c_type),
                fgft_stubs::ParamHow::Blob { len, copy_out, .. } => {
                    format!(
                        "blob of {len} bytes{}",
                        if *copy_out { ", copied out" } else { "" }
                    )
                }
                fgft_stubs::ParamHow::Str => "string (nullterm)".into(),
                fgft_stubs::ParamHow::Shared {
                    len,
                    rights,
                    members,
                } => {
                    let mut h = format!(
                        "shared, {len} bytes used in place, granted {rights:?}, not undone"
                    );
                    for (m, mlen, mr) in members {
                        let _ = write!(h, "; ->{m}: {mlen} bytes in place, {mr:?}");
                    }
                    h
                }
                fgft_stubs::ParamHow::Container { outer, member } => {
                    format!("member {member} of a copy of {}", sp.types[*outer].c_type)
                }
            };
            let _ = writeln!(s, "  param {}: {how}", p.name);
        }
        for h in &e.hints {
            let _ = writeln!(s, "  hint {h}");
        }
        if let Some(h) = e.home {
            let _ = writeln!(
                s,
                "  stub compiled in {} (its own unit cannot see every record the stub copies)",
                src.files[h].shown.display()
            );
        }
        for t in &sp.types {
            let _ = writeln!(s, "  type {} [{:?}] ({})", t.c_type, t.rights, t.why);
            for f in &t.fields {
                let dir = match (f.copy_in, f.copy_out) {
                    (true, true) => "in/out",
                    (true, false) => "in",
                    (false, true) => "out",
                    _ => "-",
                };
                let _ = writeln!(s, "    {} {dir} {:?}", f.path, f.how);
            }
            if let Some(p) = t.priv_area {
                let _ = writeln!(s, "    (private area: {})", sp.types[p].c_type);
            }
        }
        for g in &sp.globals {
            let _ = writeln!(
                s,
                "  global {}{}",
                g.name,
                if g.copy_out { " (copied out)" } else { "" }
            );
        }
        for g in &sp.kernel_globals {
            let _ = writeln!(s, "  kernel global {g} (read-only)");
        }
        for a in &e.apis {
            let _ = writeln!(s, "  kernel call {a}: {}", api_how(plan, table, a));
        }
        icall::entry_lines(&mut s, plan, e);
    }
    icall::set_lines(&mut s, src, plan);
    let _ = writeln!(s, "\nSFI module: {} functions", plan.sfi_fns.len());
    let _ = writeln!(
        s,
        "wrapped kernel functions: {}",
        plan.wrapped.iter().cloned().collect::<Vec<_>>().join(" ")
    );
    for (k, why) in &plan.callbacks {
        let _ = writeln!(
            s,
            "kernel call {k} may call back into the driver ({why}): locks the body has unlocked are released before it"
        );
    }
    if !plan.kernel_values.is_empty() {
        let v: Vec<&str> = plan.kernel_values.iter().map(String::as_str).collect();
        let _ = writeln!(
            s,
            "kernel functions used as values (their own address; calls through them run outside isolation): {}",
            v.join(" ")
        );
    }
    let dups: Vec<&str> = plan.dup_globals.iter().map(String::as_str).collect();
    let _ = writeln!(s, "const globals duplicated: {}", dups.join(" "));
    for (i, g) in plan.gtab.iter().enumerate() {
        let _ = writeln!(
            s,
            "address table {i}: {} {} ({})",
            if g.is_fn { "function" } else { "object" },
            g.name,
            src.files[g.file].shown.display()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::wrap_report;

    #[test]
    fn reports_are_wrapped_between_words() {
        let long = format!("  closure (3): {}\nshort\n", "word ".repeat(30).trim());
        let w = wrap_report(&long, 40);
        assert!(w.lines().all(|l| l.chars().count() <= 40), "{w}");
        assert!(w.starts_with("  closure (3): word"), "{w}");
        assert!(w.lines().nth(1).unwrap().starts_with("      word"), "{w}");
        assert!(w.ends_with("\nshort\n"), "{w}");
        assert_eq!(
            w.split_whitespace().count(),
            long.split_whitespace().count()
        );
        let one = format!("{}\n", "x".repeat(50));
        assert_eq!(wrap_report(&one, 40), one);
    }
}
