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
//! main/<driver files>      the original files with byte-range edits
//! main/fgft_stubs.h        stub helpers (stubs-gen)
//! main/fgft_<m>_main.h     declarations shared by the main-module files
//! sfi/<driver .c files>    SFI translation units (byte-range edits)
//! sfi/fgft_<m>_sfi.h       wrapper prototypes and redirect macros
//! sfi/fgft_sfi_<tu>.h      per-unit renames of closure functions
//! sfi/fgft_<m>_sfi_rt.c    wrappers, address table, init (no sanitizer)
//! ```

pub mod edit;
pub mod wrappers;

use crate::diag::Located;
use crate::plan::table::Table;
use crate::plan::{FileRole, Inputs, Plan};
use edit::{whole_lines, Edits};
use fgft_facts::access::CallTarget;
use fgft_facts::program::{FileId, Program, TopKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Sanitizer flags of SFI objects.
pub const SANITIZE: &str = "-fsanitize=kernel-address -fasan-shadow-offset=0xdffffc0000000000 \
--param asan-instrumentation-with-call-threshold=0 --param asan-stack=0 --param asan-globals=0";

/// The runtime header runtime.h includes (variadic-argument probes).
const RUNTIME_VA_H: &str = include_str!("../../../../runtime-kmod/include/fgft/va.h");

/// Options of the emitter.
#[derive(Debug, Clone, Default)]
pub struct EmitOpts {
    /// Text of the runtime API header (copied to include/fgft/runtime.h).
    pub runtime_header: String,
    /// Text of the annotation header (copied to include/fgft.h).
    pub fgft_header: String,
    /// Module.symvers of the runtime module (KBUILD_EXTRA_SYMBOLS).
    pub runtime_symvers: Option<PathBuf>,
    /// Build the SFI module without read checks.
    pub no_read_checks: bool,
    /// How the sources were given (for the Kbuild comment).
    pub origin: String,
    /// module_*_driver macros: name -> (register, unregister) templates.
    pub module_macros: BTreeMap<String, (String, String)>,
    /// Kernel build directory OUT's Makefile defaults to (else the running
    /// kernel's).
    pub kdir: Option<PathBuf>,
}

/// The files of OUT, by relative path.
pub type Output = BTreeMap<PathBuf, String>;

fn stem(p: &std::path::Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The forward declaration of an entry's stub (its own signature, so it can
/// stand before the entry is declared, as in a macro that declares it).
fn stub_decl(e: &crate::plan::EntryPlan, is_static: bool) -> String {
    let st = if is_static { "static " } else { "" };
    let sig = fgft_stubs::signature(&e.spec.ret, &e.spec.stub_name(), &e.spec.params);
    format!(
        "/* fgft: stub of {}, defined at the end of its file */\n{}\n",
        e.spec.name,
        fgft_stubs::wrap_call(0, &format!("{st}{sig}"), ";")
    )
}

/// The top-level item of `fid` that contains byte `at`.
fn item_at(prog: &Program, fid: FileId, at: usize) -> Option<std::ops::Range<usize>> {
    prog.top[fid]
        .iter()
        .filter(|it| it.range.start <= at && at < it.range.end)
        .min_by_key(|it| it.range.end - it.range.start)
        .map(|it| it.range.clone())
}

/// Writes everything.  Located problems found while emitting (overlapping
/// edits, globals used inside macros of SFI code) come back as errors.
pub fn emit(
    inp: &Inputs<'_>,
    plan: &Plan,
    table: &Table,
    opts: &EmitOpts,
) -> Result<Output, Vec<Located>> {
    let prog = inp.prog;
    let d = &plan.driver;
    let mut out = Output::new();
    let mut diags: Vec<Located> = Vec::new();
    let mut edit_log = String::new();

    // ---------------------------------------------------------------- main
    let mut medits: Vec<Edits> = (0..prog.files.len()).map(|_| Edits::default()).collect();
    let mut tails: Vec<String> = vec![String::new(); prog.files.len()];
    let file_refs = crate::plan::file_scope_fn_refs(prog);

    // Slots: every value use of an entry point takes the stub instead
    // (initializers, assignments, and the bodies of the driver's macros
    // that build ops tables).
    for e in &plan.entries {
        let name = &e.spec.name;
        let stub = e.spec.stub_name();
        let d = &prog.fns[e.def];
        let is_static = d.is_static;
        let mut refs: Vec<(FileId, std::ops::Range<usize>)> =
            file_refs.get(name).cloned().unwrap_or_default();
        for ff in inp.facts.per_fn.values() {
            for (r, s) in &ff.fn_refs {
                if r == name {
                    refs.push((s.file, s.range.clone()));
                }
            }
        }
        let in_macros = crate::plan::macro_body_refs(prog, name);
        refs.extend(in_macros.iter().cloned());
        refs.sort_by_key(|(f, r)| (*f, r.start));
        refs.dedup();
        // Slots filled by a macro that pastes the name together
        // (`DEVICE_ATTR_RO(x)` stores `x_show`): the use is bracketed by a
        // #define of the name to the stub.
        let mut pasted: Vec<(FileId, std::ops::Range<usize>)> = Vec::new();
        for (fid, root) in inp.roots.iter().filter(|(_, r)| r.function == *name) {
            let pf = &prog.files[*fid];
            let Some(item) = prog.top[*fid]
                .iter()
                .find(|it| {
                    pf.line_of(it.range.start) <= root.line && root.line <= pf.line_of(it.range.end)
                })
                .map(|it| it.range.clone())
            else {
                continue;
            };
            let has_ident = crate::emit::wrappers::has_ident(&pf.text[item.clone()], name);
            if !has_ident && !pasted.contains(&(*fid, item.clone())) {
                pasted.push((*fid, item));
            }
        }
        for (fid, item) in &pasted {
            medits[*fid].insert(
                item.start,
                format!(
                    "/* fgft: the slot this macro fills takes the stub */\n#define {name} {stub}\n"
                ),
            );
            let end = whole_lines(&prog.files[*fid].text, item.end..item.end).end;
            medits[*fid].insert(end, format!("#undef {name}\n"));
        }
        let mut declared: BTreeSet<FileId> = BTreeSet::new();
        for (fid, r) in refs
            .iter()
            .cloned()
            .chain(pasted.iter().map(|(f, it)| (*f, it.start..it.start)))
        {
            if r.is_empty() {
                // A pasted slot: only the declaration is needed.
                if declared.insert(fid) {
                    let decl = stub_decl(e, is_static);
                    let at = whole_lines(&prog.files[fid].text, d.range.end..d.range.end).end;
                    if fid == d.file && d.range.end <= r.start {
                        medits[fid].insert(at, format!("\n{decl}"));
                    } else if let Some(item) = item_at(prog, fid, r.start) {
                        medits[fid].insert(item.start, format!("{decl}\n"));
                    }
                }
                continue;
            }
            let text = &prog.files[fid].text;
            if text.get(r.clone()) != Some(name.as_str()) {
                if in_macros.is_empty() {
                    diags.push(inp_diag(
                        inp,
                        fid,
                        r.clone(),
                        format!("`{name}` is stored in a slot inside a macro use: fgft cannot point that slot at the stub"),
                    ));
                }
                continue;
            }
            if medits[fid].touches(&r) {
                continue;
            }
            medits[fid].replace(r.clone(), stub.clone());
            if declared.insert(fid) {
                let decl = stub_decl(e, is_static);
                // Right after the entry's first declaration in its own file
                // (so every use, macro bodies included, sees it); before the
                // first use elsewhere.
                let first_decl = if fid == d.file {
                    prog.protos
                        .iter()
                        .filter(|p| p.file == fid && p.name == *name && p.alone)
                        .map(|p| p.range.clone())
                        .chain(std::iter::once(d.range.clone()))
                        .min_by_key(|r| r.start)
                } else {
                    None
                };
                match first_decl {
                    Some(dr) if dr.start <= r.start || in_macros.iter().any(|(f, _)| *f == fid) => {
                        let at = whole_lines(text, dr.end..dr.end).end;
                        medits[fid].insert(at, format!("\n{decl}"));
                    }
                    _ => {
                        if let Some(item) = item_at(prog, fid, r.start) {
                            medits[fid].insert(item.start, format!("{decl}\n"));
                        }
                    }
                }
            }
        }
    }

    // Generated code appended to main files.
    let mut needs_header: BTreeSet<FileId> = BTreeSet::new();
    // Address table binds, per defining file.
    let mut binds: BTreeMap<FileId, Vec<(usize, &crate::plan::GtabEntry)>> = BTreeMap::new();
    for (i, g) in plan.gtab.iter().enumerate() {
        binds.entry(g.file).or_default().push((i, g));
    }
    for (fid, list) in &binds {
        needs_header.insert(*fid);
        let t = &mut tails[*fid];
        let _ = writeln!(
            t,
            "\n/* fgft: tells the SFI module where these live in the main module */"
        );
        let _ = writeln!(t, "void fgft_bind_{d}_{}(void)", stem(&inp.files[*fid].rel));
        t.push_str("{\n");
        for (i, g) in list {
            if g.is_fn {
                let _ = writeln!(t, "\tfgft_sfi_{d}_gtab[{i}] = (void *){};", g.name);
            } else {
                let _ = writeln!(t, "\tfgft_sfi_{d}_gtab[{i}] = (void *)&{};", g.name);
            }
        }
        t.push_str("}\n");
    }
    // Globals marshaled whole, in their defining files.
    for (g, written) in &plan.marshaled_globals {
        let Some(gd) = prog.global_def(g) else {
            continue;
        };
        needs_header.insert(gd.file);
        let t = &mut tails[gd.file];
        let rights = if *written { "FGFT_RW" } else { "FGFT_R" };
        let origin = format!("{}:{}", inp.files[gd.file].shown.display(), gd.line);
        let _ = writeln!(t, "\n/* fgft: copy-in of global {g} ({origin}) */");
        let _ = writeln!(t, "int fgft_gin_{d}_{g}(struct fgft_txn *txn)");
        t.push_str("{\n\tvoid *c;\n\tint ret;\n\n");
        let _ = writeln!(
            t,
            "{}",
            fgft_stubs::wrap_call(
                1,
                &format!("ret = fgft_copy_obj(txn, &{g}, sizeof({g}), sizeof({g}), {rights}, &c)"),
                ";"
            )
        );
        let _ = writeln!(t, "\tif (ret == 1)\n\t\tmemcpy(c, &{g}, sizeof({g}));");
        t.push_str("\treturn ret < 0 ? ret : 0;\n}\n");
        let _ = writeln!(t, "\n/* fgft: copy-out of global {g} ({origin}) */");
        let _ = writeln!(t, "void fgft_gout_{d}_{g}(struct fgft_txn *txn)");
        let _ = writeln!(t, "{{\n\tvoid *c = fgft_obj_find(txn, &{g});\n");
        if *written && !gd.is_const {
            let _ = writeln!(
                t,
                "\tif (c && c != (void *)&{g})\n\t\tmemcpy((void *)&{g}, c, sizeof({g}));"
            );
        } else {
            t.push_str("\t(void)c;\n");
        }
        t.push_str("}\n");
    }
    // Entry blocks.
    for e in &plan.entries {
        let f = prog.fns[e.def].file;
        needs_header.insert(f);
        match fgft_stubs::emit_entry(&e.spec) {
            Ok(text) => tails[f].push_str(&text),
            Err(err) => diags.push(inp_diag(
                inp,
                f,
                prog.fns[e.def].name_range.clone(),
                err.to_string(),
            )),
        }
    }
    // Device checkpoints: the filtered copies of the PM code (in a file of
    // their own, included where the PM code lives, so that they can call its
    // static functions), then the generated checkpoint/restore and ops.
    if let Some((f, copies)) = &plan.device.copies {
        let rel = &inp.files[*f].rel;
        let name = format!("fgft_{d}_pm_copies.c");
        let mut t = String::new();
        let _ = writeln!(t, "/* SPDX-License-Identifier: GPL-2.0 */");
        let _ = writeln!(
            t,
            "/*\n * fgft: filtered copies of the PM code of {}, for the device restore.\n * Generated by fgft-cc split: do not edit; #included at the end of\n * {}.\n */",
            inp.files[*f].shown.display(),
            rel.display()
        );
        t.push_str(copies);
        out.insert(
            PathBuf::from("main")
                .join(rel.parent().unwrap_or(std::path::Path::new("")))
                .join(&name),
            fgft_stubs::wrap_comments(&t),
        );
        needs_header.insert(*f);
        let _ = writeln!(tails[*f], "\n#include \"{name}\"");
    }
    for (f, glue) in &plan.device.glue {
        needs_header.insert(*f);
        tails[*f].push_str(glue);
    }
    // Module init and exit.
    let init_file = hook_init(inp, plan, opts, &mut medits, &mut tails, &mut diags);
    if let Some(f) = init_file {
        needs_header.insert(f);
    }
    // Apply main edits.
    for (fid, df) in inp.files.iter().enumerate() {
        let pf = &prog.files[fid];
        let mut ed = medits[fid].clone();
        if needs_header.contains(&fid) {
            let mut t = format!("\n#include \"fgft_{d}_main.h\"\n");
            t.push_str(&tails[fid]);
            ed.insert(pf.text.len(), fgft_stubs::wrap_comments(&t));
        }
        match ed.apply(&pf.text) {
            Ok(text) => {
                let log = ed.log(&pf.text);
                if !log.is_empty() {
                    let _ = writeln!(edit_log, "=== main/{}\n{log}", df.rel.display());
                }
                out.insert(PathBuf::from("main").join(&df.rel), text);
            }
            Err(o) => diags.push(inp_diag(
                inp,
                fid,
                o.b.clone(),
                "fgft-cc made overlapping edits here (a bug); please report it".into(),
            )),
        }
    }
    out.insert(
        PathBuf::from("main/fgft_stubs.h"),
        fgft_stubs::helpers_header(),
    );
    out.insert(
        PathBuf::from(format!("main/fgft_{d}_main.h")),
        fgft_stubs::wrap_comments(&main_header(inp, plan, &binds)),
    );

    // ---------------------------------------------------------------- SFI
    let sfi_files = sfi_units(inp, plan);
    let mut sedits: BTreeMap<FileId, Edits> = BTreeMap::new();
    for &fid in sfi_files.iter().flat_map(|(_, v)| v.iter()) {
        sedits.insert(fid, Edits::default());
    }
    // Deletions and the header include.
    for (tu, files) in &sfi_files {
        let header = format!("fgft_sfi_{}.h", stem(&inp.files[*tu].rel));
        for &fid in files {
            let Some(ed) = sedits.get_mut(&fid) else {
                continue;
            };
            sfi_file_edits(inp, plan, fid, &header, ed);
        }
    }
    // Global and function references from SFI code.
    let gindex: BTreeMap<&str, usize> = plan
        .gtab
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.as_str(), i))
        .collect();
    for f in &plan.sfi_fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        let mut sites: Vec<(&str, &fgft_facts::access::Site, bool)> = Vec::new();
        for g in &ff.globals {
            if gindex.contains_key(g.name.as_str()) {
                sites.push((&g.name, &g.at, false));
            }
        }
        for (r, s) in &ff.fn_refs {
            if gindex.contains_key(r.as_str()) {
                sites.push((r, s, true));
            }
        }
        for (name, site, is_fn) in sites {
            let Some(ed) = sedits.get_mut(&site.file) else {
                continue;
            };
            let text = &prog.files[site.file].text;
            if text.get(site.range.clone()) != Some(name) {
                diags.push(inp_diag(
                    inp,
                    site.file,
                    site.range.clone(),
                    format!(
                        "`{name}` is used inside a macro in `{f}`, which is compiled into the SFI module: fgft cannot redirect that use to the main module's object"
                    ),
                ));
                continue;
            }
            if ed.touches(&site.range) {
                continue;
            }
            let k = gindex[name];
            let rep = if is_fn {
                format!("((void *)fgft_sfi_{d}_gref({k}))")
            } else {
                format!("(*(typeof({name}) *)fgft_sfi_{d}_gref({k}))")
            };
            ed.replace(site.range.clone(), rep);
        }
    }
    // Entry trampolines.
    for e in &plan.entries {
        let fd = &prog.fns[e.def];
        let Some(ed) = sedits.get_mut(&fd.file) else {
            continue;
        };
        let spec = &e.spec;
        let sig = fgft_stubs::signature(&spec.ret, &spec.sfi_name(), &spec.params);
        let args: Vec<String> = spec.params.iter().map(|p| p.name.clone()).collect();
        let call = format!("{}({})", spec.name, args.join(", "));
        let mut t = String::new();
        let _ = writeln!(
            t,
            "\n/* fgft: the main module's way into the SFI copy of {} ({}) */",
            spec.name, spec.origin
        );
        let _ = writeln!(t, "{}", fgft_stubs::wrap_call(0, &sig, ";"));
        let _ = writeln!(t, "{}", fgft_stubs::wrap_call(0, &sig, ""));
        t.push_str("{\n");
        if spec.ret.trim() == "void" {
            let _ = writeln!(t, "{}", fgft_stubs::wrap_call(1, &call, ";"));
        } else {
            let _ = writeln!(
                t,
                "{}",
                fgft_stubs::wrap_call(1, &format!("return {call}"), ";")
            );
        }
        t.push_str("}\n");
        let _ = writeln!(t, "EXPORT_SYMBOL_GPL({});", spec.sfi_name());
        ed.insert(
            prog.files[fd.file].text.len(),
            fgft_stubs::wrap_comments(&t),
        );
    }
    for (fid, ed) in &sedits {
        let pf = &prog.files[*fid];
        match ed.apply(&pf.text) {
            Ok(text) => {
                let log = ed.log(&pf.text);
                if !log.is_empty() {
                    let _ = writeln!(edit_log, "=== sfi/{}\n{log}", inp.files[*fid].rel.display());
                }
                out.insert(PathBuf::from("sfi").join(&inp.files[*fid].rel), text);
            }
            Err(o) => diags.push(inp_diag(
                inp,
                *fid,
                o.b.clone(),
                "fgft-cc made overlapping edits here (a bug); please report it".into(),
            )),
        }
    }
    for (tu, _) in &sfi_files {
        let name = format!("sfi/fgft_sfi_{}.h", stem(&inp.files[*tu].rel));
        out.insert(
            PathBuf::from(name),
            fgft_stubs::wrap_comments(&tu_header(inp, plan, *tu)),
        );
    }
    out.insert(
        PathBuf::from(format!("sfi/fgft_{d}_sfi.h")),
        fgft_stubs::wrap_comments(&wrappers::sfi_header(plan, table)),
    );
    out.insert(
        PathBuf::from(format!("sfi/fgft_{d}_sfi_rt.c")),
        fgft_stubs::wrap_comments(&wrappers::sfi_rt(plan, table)),
    );

    // ---------------------------------------------------------------- build
    out.insert(
        PathBuf::from("include/fgft/runtime.h"),
        opts.runtime_header.clone(),
    );
    out.insert(PathBuf::from("include/fgft/va.h"), RUNTIME_VA_H.to_string());
    out.insert(PathBuf::from("include/fgft.h"), opts.fgft_header.clone());
    out.insert(PathBuf::from("Kbuild"), kbuild(inp, plan, &sfi_files, opts));
    out.insert(
        PathBuf::from("Makefile"),
        makefile(plan, opts.kdir.as_deref()),
    );
    out.insert(PathBuf::from("plan.txt"), plan_text(inp, plan, table));
    out.insert(
        PathBuf::from("edits.txt"),
        format!(
            "# Byte-range edits fgft-cc split made to the driver's files (line numbers\n# of the original; deleted text is not shown).\n{edit_log}"
        ),
    );

    if diags.iter().any(|x| !x.warning) {
        return Err(diags);
    }
    Ok(out)
}

fn inp_diag(
    inp: &Inputs<'_>,
    fid: FileId,
    range: std::ops::Range<usize>,
    message: String,
) -> Located {
    Located {
        path: inp.files[fid].shown.clone(),
        text: inp.prog.files[fid].text.clone(),
        range,
        message,
        label: "here".into(),
        notes: vec![],
        warning: false,
    }
}

/// SFI translation units: each compiled unit that holds closure functions
/// or duplicated globals, with the driver files of the unit to transform
/// (the unit and the .c files it includes).
fn sfi_units(inp: &Inputs<'_>, plan: &Plan) -> Vec<(FileId, Vec<FileId>)> {
    let prog = inp.prog;
    let mut out = Vec::new();
    for (fid, df) in inp.files.iter().enumerate() {
        if df.role != FileRole::Tu {
            continue;
        }
        let mut files = vec![fid];
        // .c files included (transitively) by this unit.
        let mut k = 0;
        while k < files.len() {
            let cur = files[k];
            for (j, dj) in inp.files.iter().enumerate() {
                if dj.role == FileRole::IncludedC
                    && dj.included_by.contains(&cur)
                    && !files.contains(&j)
                {
                    files.push(j);
                }
            }
            k += 1;
        }
        let needed = files.iter().any(|&f| {
            prog.fns
                .iter()
                .any(|d| d.file == f && plan.sfi_fns.contains(&d.name))
                || prog
                    .globals
                    .iter()
                    .any(|g| g.file == f && !g.is_extern && plan.dup_globals.contains(&g.name))
        });
        if needed {
            out.push((fid, files));
        }
    }
    out
}

/// A deletion of a top-level item, extended back over the storage class and
/// qualifiers the macro hints blanked in front of it (`static` before
/// `DEFINE_SIMPLE_DEV_PM_OPS(...)`) and forward over the rest of its line.
fn item_deletion(pf: &fgft_parse::ParsedFile, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let t = pf.text.as_bytes();
    let h = pf.hinted.as_bytes();
    let mut st = r.start;
    let mut k = st;
    while k > 0 && t[k - 1] != b'\n' && h[k - 1].is_ascii_whitespace() {
        k -= 1;
        if !t[k].is_ascii_whitespace() {
            st = k;
        }
    }
    whole_lines(&pf.text, st..r.end)
}

/// Deletions, shadows and the header include of one SFI file.
fn sfi_file_edits(inp: &Inputs<'_>, plan: &Plan, fid: FileId, header: &str, ed: &mut Edits) {
    let prog = inp.prog;
    let pf = &prog.files[fid];
    let shadows: BTreeSet<&str> = plan
        .gtab
        .iter()
        .filter(|g| !g.is_fn)
        .map(|g| g.name.as_str())
        .collect();
    let mut first_code: Option<usize> = None;
    for it in &prog.top[fid] {
        match &it.kind {
            TopKind::Function(name) => {
                if first_code.is_none() {
                    first_code = Some(it.range.start);
                }
                if !plan.sfi_fns.contains(name) {
                    ed.delete(item_deletion(pf, it.range.clone()));
                } else if !plan.entries.iter().any(|e| &e.spec.name == name) {
                    maybe_unused(pf, it.range.clone(), ed);
                }
            }
            TopKind::Prototype(names) => {
                if first_code.is_none() {
                    first_code = Some(it.range.start);
                }
                if !names.iter().any(|n| plan.sfi_fns.contains(n)) {
                    ed.delete(item_deletion(pf, it.range.clone()));
                }
            }
            TopKind::Variables(names) => {
                if names.iter().any(|n| plan.dup_globals.contains(n)) {
                    continue;
                }
                if let Some(n) = names.iter().find(|n| shadows.contains(n.as_str())) {
                    shadow_decl(prog, fid, n, it.range.clone(), ed);
                    continue;
                }
                ed.delete(item_deletion(pf, it.range.clone()));
            }
            TopKind::MacroStmt(_) => ed.delete(item_deletion(pf, it.range.clone())),
            _ => {}
        }
    }
    if let Some(at) = first_code {
        ed.insert(
            at,
            format!("/* fgft: SFI copy; closure functions renamed, kernel calls wrapped */\n#include \"{header}\"\n\n"),
        );
    }
}

/// Marks a static closure function `__maybe_unused` in the SFI copy: the
/// closure counts calls in every `#if` branch, so a function whose only
/// callers sit in a branch the configuration compiles out (8139too's
/// `__set_rx_mode` under CONFIG_8139_OLD_RX_RESET) is not used there.
fn maybe_unused(pf: &fgft_parse::ParsedFile, item: std::ops::Range<usize>, ed: &mut Edits) {
    let Some(mut node) = pf
        .tree
        .root_node()
        .descendant_for_byte_range(item.start, item.end)
    else {
        return;
    };
    while node.kind() != "function_definition" {
        match node.parent() {
            Some(p) => node = p,
            None => return,
        }
    }
    let mut c = node.walk();
    let is_static = node
        .children(&mut c)
        .any(|ch| ch.kind() == "storage_class_specifier" && pf.node_text(ch).trim() == "static");
    if let (true, Some(d)) = (is_static, node.child_by_field_name("declarator")) {
        ed.insert(d.start_byte(), "__maybe_unused ");
    }
}

/// Turns the definition of a global SFI code reaches through the address
/// table into a declaration (kept for `typeof`): `extern`, no initializer.
fn shadow_decl(
    prog: &Program,
    fid: FileId,
    name: &str,
    item: std::ops::Range<usize>,
    ed: &mut Edits,
) {
    let Some(g) = prog
        .globals
        .iter()
        .find(|g| g.file == fid && g.name == name && g.range == item)
    else {
        return;
    };
    if g.is_extern {
        return;
    }
    let pf = &prog.files[fid];
    let Some(node) = pf
        .tree
        .root_node()
        .descendant_for_byte_range(item.start, item.end)
    else {
        return;
    };
    // A declaration macro (DEFINE_SPINLOCK): keep as written.
    if pf.hinted.get(item.clone()) != pf.text.get(item.clone()) {
        return;
    }
    if !g.alone {
        return;
    }
    // An initializer that names no driver function or global can stay (the
    // shadow then keeps a complete type for sizeof).
    if crate::plan::global_init_refs(prog, name).is_empty() {
        return;
    }
    let mut c = node.walk();
    let mut has_static = false;
    for ch in node.children(&mut c) {
        if ch.kind() == "storage_class_specifier" && pf.node_text(ch).trim() == "static" {
            ed.replace(ch.byte_range(), "extern");
            has_static = true;
        }
    }
    if !has_static {
        ed.insert(item.start, "extern ");
    }
    if let Some(init) = &g.init {
        // Delete ` = <init>` back to the declarator.
        let before = &pf.text[..init.start];
        let eq = before.rfind('=').unwrap_or(init.start);
        let mut st = eq;
        while st > 0 && pf.text.as_bytes()[st - 1].is_ascii_whitespace() {
            st -= 1;
        }
        ed.delete(st..init.end);
    }
}

/// The per-unit SFI header: renames of the closure functions.
fn tu_header(inp: &Inputs<'_>, plan: &Plan, tu: FileId) -> String {
    let prog = inp.prog;
    let name = stem(&inp.files[tu].rel);
    let guard = format!("_FGFT_SFI_{}_H", name.to_uppercase());
    let mut s = String::new();
    let _ = writeln!(s, "/* SPDX-License-Identifier: GPL-2.0 */");
    let _ = writeln!(
        s,
        "/*\n * fgft: closure functions of {} renamed into the SFI module.\n * Generated by fgft-cc split: do not edit.\n */",
        inp.files[tu].shown.display()
    );
    let _ = writeln!(s, "#ifndef {guard}\n#define {guard}\n");
    let _ = writeln!(s, "#include \"fgft_{}_sfi.h\"\n", plan.driver);
    // Files visible from this unit: its .c files and the headers.
    let unit: BTreeSet<FileId> = sfi_units(inp, plan)
        .into_iter()
        .find(|(t, _)| *t == tu)
        .map(|(_, v)| v.into_iter().collect())
        .unwrap_or_default();
    for f in &plan.sfi_fns {
        let defs = prog.defs(f);
        let Some(&first) = defs.first() else { continue };
        let d = &prog.fns[first];
        if inp.files[d.file].role == FileRole::Header {
            continue;
        }
        let here = defs.iter().any(|&i| unit.contains(&prog.fns[i].file));
        // Non-static closure functions declared in a header visible here.
        let hdr_proto = prog
            .protos
            .iter()
            .any(|p| p.name == *f && inp.files[p.file].role == FileRole::Header);
        if !here && (!hdr_proto || d.is_static) {
            continue;
        }
        if !d.is_static && hdr_proto {
            let _ = writeln!(s, "extern typeof({f}) fgft_sfi_{f};");
        }
        let _ = writeln!(s, "#define {f} fgft_sfi_{f}");
    }
    let _ = writeln!(s, "\n#endif /* {guard} */");
    s
}

/// Declarations shared by main-module files.
fn main_header(
    inp: &Inputs<'_>,
    plan: &Plan,
    binds: &BTreeMap<FileId, Vec<(usize, &crate::plan::GtabEntry)>>,
) -> String {
    let d = &plan.driver;
    let mut s = String::new();
    let _ = writeln!(s, "/* SPDX-License-Identifier: GPL-2.0 */");
    let _ = writeln!(
        s,
        "/*\n * fgft main module of {}: declarations shared by its files.\n * Generated by fgft-cc split: do not edit.\n */",
        plan.module
    );
    let _ = writeln!(s, "#ifndef _FGFT_{}_MAIN_H", d.to_uppercase());
    let _ = writeln!(s, "#define _FGFT_{}_MAIN_H\n", d.to_uppercase());
    s.push_str("#include \"fgft_stubs.h\"\n");
    if plan.device.flush.is_some() {
        s.push_str(
            "#include <linux/device.h>\n#include <linux/slab.h>\n#include <linux/workqueue.h>\n",
        );
    }
    s.push('\n');
    let _ = writeln!(s, "/* The SFI module's table of main-module addresses. */");
    let _ = writeln!(s, "extern void *fgft_sfi_{d}_gtab[];\n");
    for e in &plan.entries {
        let _ = writeln!(s, "extern struct fgft_entry {};", e.spec.ep_name());
    }
    if !plan.entries.is_empty() {
        s.push('\n');
    }
    // The SFI module's way into each entry point's copy.
    let mut tags: BTreeSet<String> = BTreeSet::new();
    for e in &plan.entries {
        tags.extend(fgft_stubs::param_tags(&e.spec.params));
    }
    for t in &tags {
        let _ = writeln!(s, "{t};");
    }
    if !tags.is_empty() {
        s.push('\n');
    }
    for e in &plan.entries {
        let _ = writeln!(s, "{}", fgft_stubs::sfi_prototype(&e.spec));
    }
    if !plan.entries.is_empty() {
        s.push('\n');
    }
    for fid in binds.keys() {
        let _ = writeln!(
            s,
            "void fgft_bind_{d}_{}(void);",
            stem(&inp.files[*fid].rel)
        );
    }
    for g in plan.marshaled_globals.keys() {
        let _ = writeln!(s, "int fgft_gin_{d}_{g}(struct fgft_txn *txn);");
        let _ = writeln!(s, "void fgft_gout_{d}_{g}(struct fgft_txn *txn);");
    }
    if !plan.device.decls.is_empty() {
        let _ = writeln!(s, "/* Device checkpoint and restore. */");
        for x in &plan.device.decls {
            let _ = writeln!(s, "{x}");
        }
    }
    let _ = writeln!(s, "int fgft_sfi_{d}_grant(struct fgft_txn *txn);");
    let _ = writeln!(s, "int fgft_register_{d}(void);");
    let _ = writeln!(s, "void fgft_unregister_{d}(void);");
    let _ = writeln!(s, "\n#endif /* _FGFT_{}_MAIN_H */", d.to_uppercase());
    s
}

/// Hooks module init/exit: the generated init registers the isolated entry
/// points (and fills the SFI module's address table) before the driver's own
/// init; the exit unregisters them after the driver's exit.
fn hook_init(
    inp: &Inputs<'_>,
    plan: &Plan,
    opts: &EmitOpts,
    medits: &mut [Edits],
    tails: &mut [String],
    diags: &mut Vec<Located>,
) -> Option<FileId> {
    let prog = inp.prog;
    let d = &plan.driver;
    let mut init: Option<(FileId, std::ops::Range<usize>, String, String)> = None; // file, item, kind, arg
    let mut exit: Option<(FileId, std::ops::Range<usize>, String)> = None;
    for (fid, items) in prog.top.iter().enumerate() {
        if inp.files[fid].role == FileRole::Header {
            continue;
        }
        for it in items {
            let TopKind::MacroStmt(m) = &it.kind else {
                continue;
            };
            let text = &prog.files[fid].text[it.range.clone()];
            let arg = text
                .find('(')
                .and_then(|a| text.rfind(')').map(|b| text[a + 1..b].trim().to_string()))
                .unwrap_or_default();
            if m == "module_init" || opts.module_macros.contains_key(m) {
                init = Some((fid, it.range.clone(), m.clone(), arg));
            } else if m == "module_exit" {
                exit = Some((fid, it.range.clone(), arg));
            }
        }
    }
    let Some((fid, item, kind, arg)) = init else {
        let e = &plan.entries.first()?;
        let f = prog.fns[e.def].file;
        diags.push(inp_diag(
            inp,
            f,
            0..0,
            format!(
                "no module_init (or module_*_driver) found in {}: fgft-cc needs one to register the isolated entry points",
                plan.module
            ),
        ));
        return None;
    };
    let pf = &prog.files[fid];
    let header = format!("#include \"fgft_{d}_main.h\"\n\n");
    // Device restores deferred from atomic context run while the devices
    // are still bound.
    let flush = plan
        .device
        .flush
        .as_ref()
        .map(|f| format!("\t{f}();\n"))
        .unwrap_or_default();
    if kind == "module_init" {
        let mut t = header.clone();
        let _ = writeln!(
            t,
            "/* fgft: registers the isolated entry points, then runs {arg} */"
        );
        let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
        t.push_str("{\n\tint err = fgft_register_");
        let _ = writeln!(t, "{d}();\n");
        t.push_str("\tif (err)\n\t\treturn err;\n");
        let _ = writeln!(t, "\terr = {arg}();");
        let _ = writeln!(t, "\tif (err)\n\t\tfgft_unregister_{d}();");
        t.push_str("\treturn err;\n}\n\n");
        medits[fid].insert(item.start, fgft_stubs::wrap_comments(&t));
        // Replace the argument.
        let text = &pf.text[item.clone()];
        if let (Some(a), Some(b)) = (text.find('('), text.rfind(')')) {
            medits[fid].replace(item.start + a + 1..item.start + b, format!("fgft_init_{d}"));
        }
        match exit {
            Some((efid, eitem, earg)) => {
                let mut t = String::new();
                if efid != fid {
                    t.push_str(&header);
                }
                let _ = writeln!(
                    t,
                    "/* fgft: runs {earg}, then unregisters the isolated entry points */"
                );
                let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
                let _ = writeln!(t, "{{\n{flush}\t{earg}();\n\tfgft_unregister_{d}();\n}}\n");
                medits[efid].insert(eitem.start, fgft_stubs::wrap_comments(&t));
                let text = &prog.files[efid].text[eitem.clone()];
                if let (Some(a), Some(b)) = (text.find('('), text.rfind(')')) {
                    medits[efid].replace(
                        eitem.start + a + 1..eitem.start + b,
                        format!("fgft_exit_{d}"),
                    );
                }
            }
            None => {
                let mut t = String::new();
                let _ = writeln!(t, "\n/* fgft: unregisters the isolated entry points */");
                let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
                let _ = writeln!(t, "{{\n{flush}\tfgft_unregister_{d}();\n}}\n");
                let _ = writeln!(t, "module_exit(fgft_exit_{d});");
                medits[fid].insert(item.end, fgft_stubs::wrap_comments(&t));
            }
        }
    } else {
        let (reg, unreg) = opts.module_macros.get(&kind).cloned().unwrap_or_default();
        let reg = reg.replace("{arg}", &arg);
        let unreg = unreg.replace("{arg}", &arg);
        let mut t = header;
        let _ = writeln!(
            t,
            "/* fgft: registers the isolated entry points, then the driver (was {kind}({arg})) */"
        );
        let _ = writeln!(t, "static int __init fgft_init_{d}(void)");
        let _ = writeln!(t, "{{\n\tint err = fgft_register_{d}();\n");
        t.push_str("\tif (err)\n\t\treturn err;\n");
        let _ = writeln!(t, "\terr = {reg};");
        let _ = writeln!(t, "\tif (err)\n\t\tfgft_unregister_{d}();");
        t.push_str("\treturn err;\n}\n\n");
        let _ = writeln!(
            t,
            "/* fgft: unregisters the driver, then the isolated entry points */"
        );
        let _ = writeln!(t, "static void __exit fgft_exit_{d}(void)");
        let _ = writeln!(t, "{{\n{flush}\t{unreg};\n\tfgft_unregister_{d}();\n}}\n");
        let _ = writeln!(t, "module_init(fgft_init_{d});");
        let _ = write!(t, "module_exit(fgft_exit_{d});");
        medits[fid].replace(item.clone(), fgft_stubs::wrap_comments(&t));
    }
    // Registration functions, at the end of the init file.
    let t = &mut tails[fid];
    let _ = writeln!(
        t,
        "\n/* fgft: fills the SFI module's address table, registers the entries */"
    );
    let _ = writeln!(t, "int fgft_register_{d}(void)");
    t.push_str("{\n");
    if !plan.entries.is_empty() {
        t.push_str("\tint err;\n\n");
    }
    let mut bind_files: BTreeSet<FileId> = BTreeSet::new();
    for g in &plan.gtab {
        bind_files.insert(g.file);
    }
    for f in &bind_files {
        let _ = writeln!(t, "\tfgft_bind_{d}_{}();", stem(&inp.files[*f].rel));
    }
    for (i, e) in plan.entries.iter().enumerate() {
        let _ = writeln!(t, "\terr = fgft_entry_register(&{});", e.spec.ep_name());
        let _ = writeln!(t, "\tif (err)\n\t\tgoto fail{i};");
    }
    t.push_str("\treturn 0;\n");
    for i in (0..plan.entries.len()).rev() {
        let _ = writeln!(t, "fail{i}:");
        if i > 0 {
            let _ = writeln!(
                t,
                "\tfgft_entry_unregister(&{});",
                plan.entries[i - 1].spec.ep_name()
            );
        } else {
            t.push_str("\treturn err;\n");
        }
    }
    t.push_str("}\n");
    let _ = writeln!(t, "\n/* fgft: unregisters the entries */");
    let _ = writeln!(t, "void fgft_unregister_{d}(void)");
    t.push_str("{\n");
    for e in plan.entries.iter().rev() {
        let _ = writeln!(t, "\tfgft_entry_unregister(&{});", e.spec.ep_name());
    }
    for o in &plan.device.ops {
        let _ = writeln!(t, "\tfgft_dev_unregister_ops(&{});", o.name);
    }
    t.push_str("}\n");
    Some(fid)
}

fn kbuild(inp: &Inputs<'_>, plan: &Plan, sfi: &[(FileId, Vec<FileId>)], opts: &EmitOpts) -> String {
    let m = &plan.module;
    let mut s = String::new();
    let _ = writeln!(s, "# SPDX-License-Identifier: GPL-2.0");
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Generated by fgft-cc split from {}.", opts.origin);
    let _ = writeln!(
        s,
        "# Builds {m}_fgft.ko (the driver, isolated entry points on stubs) and"
    );
    let _ = writeln!(
        s,
        "# {m}_sfi.ko (their closures, every access checked).  Load fgft_rt.ko,"
    );
    let _ = writeln!(s, "# then {m}_sfi.ko, then {m}_fgft.ko.");
    let _ = writeln!(s, "#   make -C $KDIR M=$PWD\n");
    let _ = writeln!(s, "obj-m += {m}_fgft.o {m}_sfi.o\n");
    let mut conds: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
    for df in inp.files.iter().filter(|f| f.role == FileRole::Tu) {
        let o = PathBuf::from("main").join(&df.rel).with_extension("o");
        conds
            .entry(df.config.clone())
            .or_default()
            .push(o.display().to_string());
    }
    for (c, objs) in &conds {
        let key = match c {
            None => format!("{m}_fgft-y"),
            Some(c) => format!("{m}_fgft-$({c})"),
        };
        let _ = writeln!(s, "{key} += {}", objs.join(" "));
    }
    let mut sconds: BTreeMap<Option<String>, Vec<String>> = BTreeMap::new();
    for (tu, _) in sfi {
        let df = &inp.files[*tu];
        let o = PathBuf::from("sfi").join(&df.rel).with_extension("o");
        sconds
            .entry(df.config.clone())
            .or_default()
            .push(o.display().to_string());
    }
    sconds
        .entry(None)
        .or_default()
        .push(format!("sfi/fgft_{}_sfi_rt.o", plan.driver));
    for (c, objs) in &sconds {
        let key = match c {
            None => format!("{m}_sfi-y"),
            Some(c) => format!("{m}_sfi-$({c})"),
        };
        let _ = writeln!(s, "{key} += {}", objs.join(" "));
    }
    s.push('\n');
    s.push_str("ccflags-y += -I$(src)/include\n");
    let mut san = SANITIZE.to_string();
    if opts.no_read_checks {
        san.push_str(" --param asan-instrument-reads=0");
    }
    let _ = writeln!(
        s,
        "\n# Every load and store of SFI code calls the runtime's checks."
    );
    let _ = writeln!(s, "FGFT_SANITIZE := {san}");
    for (tu, _) in sfi {
        let o = PathBuf::from("sfi")
            .join(&inp.files[*tu].rel)
            .with_extension("o");
        let _ = writeln!(
            s,
            "CFLAGS_{} += $(FGFT_SANITIZE) -I$(src)/main",
            o.display()
        );
    }
    let _ = writeln!(
        s,
        "CFLAGS_sfi/fgft_{}_sfi_rt.o += -I$(src)/main",
        plan.driver
    );
    match &opts.runtime_symvers {
        Some(p) => {
            let _ = writeln!(
                s,
                "\n# Symbols of the runtime module (fgft_rt.ko).\nKBUILD_EXTRA_SYMBOLS += {}",
                p.display()
            );
        }
        None => {
            s.push_str(
                "\n# Symbols of fgft_rt.ko are resolved at load time; pass the runtime's\n# Module.symvers with `make KBUILD_EXTRA_SYMBOLS=.../Module.symvers` (or split\n# with --runtime-symvers) so that modpost knows them.\n",
            );
        }
    }
    s
}

fn makefile(plan: &Plan, kdir: Option<&std::path::Path>) -> String {
    let kdir = match kdir {
        Some(k) => k.display().to_string(),
        None => "/lib/modules/$(shell uname -r)/build".into(),
    };
    format!(
        "# SPDX-License-Identifier: GPL-2.0\n# Generated by fgft-cc split: builds {m}_fgft.ko and {m}_sfi.ko.\nKDIR ?= {kdir}\n\nall:\n\t$(MAKE) -C $(KDIR) M=$(CURDIR) modules\n\nclean:\n\t$(MAKE) -C $(KDIR) M=$(CURDIR) clean\n",
        m = plan.module
    )
}

/// A human-readable account of the plan (also the golden test's subject).
pub fn plan_text(inp: &Inputs<'_>, plan: &Plan, table: &Table) -> String {
    let prog = inp.prog;
    let mut s = String::new();
    let _ = writeln!(s, "fgft split plan for {}", plan.module);
    let _ = writeln!(s, "entries: {}", plan.entries.len());
    for l in &plan.device.summary {
        let _ = writeln!(s, "{l}");
    }
    for e in &plan.entries {
        let sp = &e.spec;
        let _ = writeln!(s, "\nentry {} ({})", sp.name, sp.origin);
        if !sp.slots.is_empty() {
            let _ = writeln!(s, "  slots: {}", sp.slots.join(", "));
        }
        let _ = writeln!(
            s,
            "  abort: {:?}; device key: {}; device ops: {}",
            sp.abort,
            sp.dev_key,
            sp.dev_ops.as_deref().unwrap_or("none")
        );
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
                fgft_stubs::ParamHow::Shared { len, rights } => {
                    format!("shared, {len} bytes used in place, granted {rights:?}, not undone")
                }
                fgft_stubs::ParamHow::Container { outer, member } => {
                    format!("member {member} of a copy of {}", sp.types[*outer].c_type)
                }
            };
            let _ = writeln!(s, "  param {}: {how}", p.name);
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
            let how = match table.apis.get(a) {
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
                None if table.inline_names.contains(a) => "inline (value)".into(),
                None => "declared pure".into(),
            };
            let _ = writeln!(s, "  kernel call {a}: {how}");
        }
        let ind: Vec<String> = e
            .closure
            .indirect
            .iter()
            .map(|c| match &c.target {
                CallTarget::Indirect(x) => format!("{x} in {}", c.at.func),
                _ => String::new(),
            })
            .collect();
        for i in ind {
            let _ = writeln!(s, "  indirect call: {i}");
        }
    }
    let _ = writeln!(s, "\nSFI module: {} functions", plan.sfi_fns.len());
    let _ = writeln!(
        s,
        "wrapped kernel functions: {}",
        plan.wrapped.iter().cloned().collect::<Vec<_>>().join(" ")
    );
    let dups: Vec<&str> = plan.dup_globals.iter().map(String::as_str).collect();
    let _ = writeln!(s, "const globals duplicated: {}", dups.join(" "));
    for (i, g) in plan.gtab.iter().enumerate() {
        let _ = writeln!(
            s,
            "address table {i}: {} {} ({})",
            if g.is_fn { "function" } else { "object" },
            g.name,
            inp.files[g.file].shown.display()
        );
    }
    let _ = prog;
    s
}
