//! The main module: the driver's files with each isolated entry point's
//! slots pointing at its stub, and per unit one file of generated code
//! (`fgft_stubs_<unit>.c`: stubs, copy functions, address-table binds, global
//! copies, device checkpoint glue, registration) that the unit includes
//! with one line at its end.

use super::edit::{whole_lines, Edits};
use super::gtab::Slots;
use super::{stem, Ctx};
use crate::plan::{EntryPlan, FileRole, GtabEntry, Plan};
use fgft_base::ident;
use fgft_facts::program::{FileId, Program, TopKind};
use fgft_facts::tracepoints::TraceCall;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};

mod heap;
mod init;

/// Edits and generated code of the main module's files.
pub(crate) struct MainFiles {
    pub edits: Vec<Edits>,
    /// Generated code of each file (its `fgft_stubs_<unit>.c`).
    pub tails: Vec<String>,
    /// Files that get generated code.
    pub needs_code: BTreeSet<FileId>,
}

/// The main module's files and headers.
pub(crate) fn emit_main(cx: &mut Ctx<'_, '_>, grefs: &Slots) {
    let n = cx.src.prog.files.len();
    let mut mf = MainFiles {
        edits: (0..n).map(|_| Edits::default()).collect(),
        tails: vec![String::new(); n],
        needs_code: BTreeSet::new(),
    };
    for e in &cx.plan.entries {
        slot_edits(cx, e, &mut mf.edits);
    }
    tracepoints(cx, &mut mf);
    trace_include_paths(cx, &mut mf);
    binds(cx, grefs, &mut mf);
    global_copies(cx, &mut mf);
    header_statics(cx, &mut mf);
    for e in &cx.plan.entries {
        let f = cx.src.prog.fns[e.def].file;
        mf.needs_code.insert(f);
        let home = e.home.unwrap_or(f);
        if let Some(h) = e.home {
            mf.needs_code.insert(h);
            orig_trampoline(cx, e, &mut mf.tails[f]);
            home_includes(cx, f, h, &mut mf.tails[h]);
        }
        match fgft_stubs::emit_entry(&e.spec) {
            Ok(text) => mf.tails[home].push_str(&text),
            Err(err) => {
                let at = cx.src.prog.fns[e.def].name_range.clone();
                cx.error(f, at, err.to_string());
            }
        }
    }
    device_code(cx, &mut mf);
    heap::heap_hooks(cx, &mut mf);
    if let Some(f) = init::hook_init(cx, &mut mf) {
        mf.needs_code.insert(f);
    }
    apply(cx, mf);
    cx.out.insert(
        PathBuf::from("main/fgft_stubs.h"),
        fgft_stubs::helpers_header(),
    );
    let d = cx.plan.driver.clone();
    let header = main_header(cx);
    cx.generated(format!("main/fgft_{d}_main.h"), &header);
}

/// The original of an entry whose stub is compiled in another unit, for
/// that stub to call with isolation off (the entry itself may be static).
fn orig_trampoline(cx: &Ctx<'_, '_>, e: &EntryPlan, t: &mut String) {
    let Some(orig) = &e.spec.orig else { return };
    let h = e.home.map(|h| cx.src.files[h].shown.display().to_string());
    let _ = writeln!(
        t,
        "\n/* fgft: {} ({}) for its stub, which {} compiles (it sees every record the stub copies): isolation off calls this. */",
        e.spec.name,
        e.spec.origin,
        h.unwrap_or_default()
    );
    let sig = fgft_stubs::signature(&e.spec.ret, orig, &e.spec.params);
    let _ = writeln!(t, "{}", fgft_stubs::wrap_call(0, &sig, ""));
    let args: Vec<&str> = e.spec.params.iter().map(|p| p.name.as_str()).collect();
    let call = format!("{}({})", e.spec.name, args.join(", "));
    let body = if e.spec.ret.trim() == "void" {
        fgft_stubs::wrap_call(1, &call, ";")
    } else {
        fgft_stubs::wrap_call(1, &format!("return {call}"), ";")
    };
    let _ = writeln!(t, "{{\n{body}\n}}");
}

/// The system headers the entry's unit includes that the stub's home does
/// not: the kernel types of the entry's parameters and copies.
fn home_includes(cx: &Ctx<'_, '_>, unit: FileId, home: FileId, t: &mut String) {
    let prog = cx.src.prog;
    let have = fgft_base::includes::system(&prog.files[home].text);
    let missing: Vec<&str> = fgft_base::includes::system(&prog.files[unit].text)
        .into_iter()
        .filter(|h| !have.contains(h) && !t.contains(&format!("#include <{h}>")))
        .collect();
    if missing.is_empty() {
        return;
    }
    let _ = writeln!(
        t,
        "\n/* fgft: what {} includes, for the stubs of its entries compiled here */",
        cx.src.files[unit].shown.display()
    );
    for h in missing {
        let _ = writeln!(t, "#include <{h}>");
    }
}

/// Static variables a header defines are marked `__maybe_unused`: the SFI
/// units include the main module's headers, and the SFI copy of a unit
/// that used such a variable may not (a warning otherwise).
fn header_statics(cx: &Ctx<'_, '_>, mf: &mut MainFiles) {
    let prog = cx.src.prog;
    for g in &prog.globals {
        if cx.src.files[g.file].role != FileRole::Header || !g.is_static || g.is_extern {
            continue;
        }
        let text = &prog.files[g.file].text[g.range.clone()];
        if [
            "__maybe_unused",
            "__always_unused",
            "__used",
            "__attribute__",
        ]
        .iter()
        .any(|a| text.contains(a))
        {
            continue;
        }
        let Some(k) = text.find("static ") else {
            continue;
        };
        if !text[..k].trim().is_empty() {
            continue;
        }
        mf.edits[g.file].insert(g.range.start + k + "static ".len(), "__maybe_unused ");
    }
    // Definitions tree-sitter could not read (a header whose parse is one
    // error node) are not among the globals: a `static` at the start of a
    // line inside the error is marked the same way.
    for (fid, pf) in prog.files.iter().enumerate() {
        if cx.src.files[fid].role != FileRole::Header {
            continue;
        }
        let root = pf.tree.root_node();
        if !root.has_error() {
            continue;
        }
        let mut at = 0;
        for line in pf.text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let Some(rest) = line.strip_prefix("static ") else {
                continue;
            };
            if rest.contains("inline")
                || [
                    "__maybe_unused",
                    "__always_unused",
                    "__used",
                    "__attribute__",
                ]
                .iter()
                .any(|a| rest.contains(a))
                || prog
                    .globals
                    .iter()
                    .any(|g| g.file == fid && g.range.contains(&start))
            {
                continue;
            }
            let mut n = root.descendant_for_byte_range(start, start + 1);
            let mut in_error = false;
            while let Some(x) = n {
                if x.kind() == "comment" {
                    break;
                }
                if x.is_error() {
                    in_error = true;
                    break;
                }
                n = x.parent();
            }
            if in_error {
                mf.edits[fid].insert(start + "static ".len(), "__maybe_unused ");
            }
        }
    }
}

/// The forward declaration of an entry's stub (its own signature, so it can
/// stand before the entry is declared, as in a macro that declares it).
fn stub_decl(cx: &Ctx<'_, '_>, e: &EntryPlan) -> String {
    let st = if e.spec.is_static { "static " } else { "" };
    let sig = fgft_stubs::signature(&e.spec.ret, &e.spec.stub_name(), &e.spec.params);
    let home = match e.home {
        Some(h) => format!("{}'s", cx.src.files[h].shown.display()),
        None => "the unit's".into(),
    };
    fgft_stubs::tidy(&format!(
        "/* fgft: stub of {}, defined in {home} generated code */\n{}\n",
        e.spec.name,
        fgft_stubs::wrap_call(0, &format!("{st}{sig}"), ";")
    ))
}

/// The top-level item of `fid` that contains byte `at`.
fn item_at(prog: &Program, fid: FileId, at: usize) -> Option<Range<usize>> {
    prog.top[fid]
        .iter()
        .filter(|it| it.range.start <= at && at < it.range.end)
        .min_by_key(|it| it.range.end - it.range.start)
        .map(|it| it.range.clone())
}

/// Every value use of entry point `e` takes the stub instead (initializers,
/// assignments, and the bodies of the driver's macros that build ops
/// tables); each file that names the stub declares it first.
fn slot_edits(cx: &mut Ctx<'_, '_>, e: &EntryPlan, medits: &mut [Edits]) {
    let prog = cx.src.prog;
    let name = &e.spec.name;
    let stub = e.spec.stub_name();
    let in_macros = &e.refs.in_macros;
    let pasted = pasted_slots(cx, e, medits);
    let mut declared: BTreeSet<FileId> = BTreeSet::new();
    for (fid, item) in &pasted {
        if declared.insert(*fid) {
            declare_pasted(cx, e, *fid, item.start, medits);
        }
    }
    for (fid, r) in e.refs.sites.iter().cloned() {
        let text = &prog.files[fid].text;
        if text.get(r.clone()) != Some(name.as_str()) {
            if in_macros.is_empty() {
                cx.error(
                    fid,
                    r.clone(),
                    format!(
                        "`{name}` is stored in a slot inside a macro use: fgft cannot point \
                         that slot at the stub"
                    ),
                );
            }
            continue;
        }
        if medits[fid].touches(&r) {
            continue;
        }
        replace_slot(text, r.clone(), &stub, &mut medits[fid]);
        if declared.insert(fid) {
            let in_macro = in_macros.iter().any(|(f, _)| *f == fid);
            declare_stub(cx, e, fid, r.start, in_macro, medits);
        }
    }
}

/// Replaces the use of the entry at `r` by the stub; a space before a tab
/// earlier on the line (`.ndo_set_mac_address \t= f`) goes too, the line
/// being ours now.
fn replace_slot(text: &str, r: Range<usize>, stub: &str, ed: &mut Edits) {
    let line_start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[line_start..r.start];
    let span = line_start..r.start;
    if lead.contains(" \t") && !lead.contains('"') && !ed.touches(&span) && !span.is_empty() {
        ed.replace(
            line_start..r.end,
            format!("{}{stub}", lead.replace(" \t", "\t")),
        );
    } else {
        ed.replace(r, stub.to_string());
    }
}

/// Slots filled by a macro that pastes the name together
/// (`DEVICE_ATTR_RO(x)` stores `x_show`): the use is bracketed by a
/// #define of the name to the stub.
fn pasted_slots(
    cx: &Ctx<'_, '_>,
    e: &EntryPlan,
    medits: &mut [Edits],
) -> Vec<(FileId, Range<usize>)> {
    let prog = cx.src.prog;
    let name = &e.spec.name;
    let pasted = e.pasted.clone();
    for (fid, item) in &pasted {
        medits[*fid].insert(
            item.start,
            format!(
                "/* fgft: the slot this macro fills takes the stub */\n#define {name} {}\n",
                e.spec.stub_name()
            ),
        );
        let end = whole_lines(&prog.files[*fid].text, item.end..item.end).end;
        medits[*fid].insert(end, format!("#undef {name}\n"));
    }
    pasted
}

/// The stub's declaration for a pasted slot at `at` of `fid`.
fn declare_pasted(cx: &Ctx<'_, '_>, e: &EntryPlan, fid: FileId, at: usize, medits: &mut [Edits]) {
    let prog = cx.src.prog;
    let d = &prog.fns[e.def];
    let decl = stub_decl(cx, e);
    let end = whole_lines(&prog.files[fid].text, d.range.end..d.range.end).end;
    if fid == d.file && d.range.end <= at {
        medits[fid].insert(end, format!("\n{decl}"));
    } else if let Some(item) = item_at(prog, fid, at) {
        medits[fid].insert(item.start, format!("{decl}\n"));
    }
}

/// The stub's declaration in `fid`: right after the entry's first
/// declaration in its own file (so every use, macro bodies included, sees
/// it); before the first use (at `at`) elsewhere.
fn declare_stub(
    cx: &Ctx<'_, '_>,
    e: &EntryPlan,
    fid: FileId,
    at: usize,
    in_macro: bool,
    medits: &mut [Edits],
) {
    let prog = cx.src.prog;
    let d = &prog.fns[e.def];
    let decl = stub_decl(cx, e);
    let first_decl = if fid == d.file {
        prog.protos
            .iter()
            .filter(|p| p.file == fid && p.name == e.spec.name && p.alone)
            .map(|p| p.range.clone())
            .chain(std::iter::once(d.range.clone()))
            .min_by_key(|r| r.start)
    } else {
        None
    };
    match first_decl {
        Some(dr) if dr.start <= at || in_macro => {
            let end = whole_lines(&prog.files[fid].text, dr.end..dr.end).end;
            medits[fid].insert(end, format!("\n{decl}"));
        }
        _ => {
            if let Some(item) = item_at(prog, fid, at) {
                medits[fid].insert(item.start, format!("{decl}\n"));
            }
        }
    }
}

/// The functions that fire the driver's tracepoints for SFI code
/// (`plan.tracepoints`), each in the generated code of a unit that includes
/// the trace header, before the binds that take their address.
fn tracepoints(cx: &mut Ctx<'_, '_>, mf: &mut MainFiles) {
    let prog = cx.src.prog;
    let d = &cx.plan.driver;
    for (call, &fid) in &cx.plan.tracepoints {
        let Some((tp, how)) = prog.tracepoint_call(call) else {
            continue;
        };
        let origin = format!("{}:{}", cx.src.files[tp.file].shown.display(), tp.line);
        let f = crate::plan::tracepoint_fn(d, call);
        let t = &mut mf.tails[fid];
        mf.needs_code.insert(fid);
        match how {
            TraceCall::Fire => {
                let Some(args) = param_names(&tp.proto) else {
                    cx.error(
                        tp.file,
                        tp.range.clone(),
                        format!(
                            "fgft cannot read the parameter names of tracepoint `{}`'s TP_PROTO({})",
                            tp.name, tp.proto
                        ),
                    );
                    continue;
                };
                let _ = writeln!(
                    t,
                    "\n/* fgft: fires tracepoint {} ({origin}) for the SFI module */",
                    tp.name
                );
                let params = if tp.proto.trim().is_empty() {
                    "void"
                } else {
                    tp.proto.as_str()
                };
                let sig = format!("static void {f}({params})");
                let _ = writeln!(t, "{}", fgft_stubs::wrap_call(0, &sig, ""));
                t.push_str("{\n");
                let body = format!("{call}({})", args.join(", "));
                let _ = writeln!(t, "{}", fgft_stubs::wrap_call(1, &body, ";"));
                t.push_str("}\n");
            }
            TraceCall::Enabled => {
                let _ = writeln!(
                    t,
                    "\n/* fgft: whether tracepoint {} ({origin}) is on, for the SFI module */",
                    tp.name
                );
                let _ = writeln!(t, "static bool {f}(void)\n{{\n\treturn {call}();\n}}");
            }
        }
    }
}

/// A trace header that names its own directory relative to the kernel
/// tree (fjes' `#define TRACE_INCLUDE_PATH ../../drivers/net/fjes`, which
/// `<trace/define_trace.h>` resolves from the tree's include/) is named by
/// its place in OUT instead: the module is built outside the tree.
fn trace_include_paths(cx: &Ctx<'_, '_>, mf: &mut MainFiles) {
    for (fid, df) in cx.src.files.iter().enumerate() {
        let text = &cx.src.prog.files[fid].text;
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["#define", "TRACE_INCLUDE_PATH", v] = words.as_slice() {
                if v.starts_with("..") {
                    let dir = df
                        .rel
                        .parent()
                        .map(|p| p.display().to_string())
                        .filter(|p| !p.is_empty())
                        .unwrap_or_else(|| ".".into());
                    let start = at + line.find(v).unwrap_or(0);
                    mf.edits[fid].replace(start..start + v.len(), dir);
                }
            }
            at += line.len();
        }
    }
}

/// The parameter names of a prototype's parameter list (`struct sk_buff
/// *skb, int len`): the last identifier of each declarator; None when one
/// has none (`int`) or is a function pointer.
fn param_names(list: &str) -> Option<Vec<String>> {
    let list = list.trim();
    if list.is_empty() || list == "void" {
        return Some(Vec::new());
    }
    fgft_base::lex::split_top(list, b',')
        .into_iter()
        .map(|p| {
            let p = p.trim();
            let p = p.split('[').next().unwrap_or(p).trim_end();
            if p.contains('(') {
                return None;
            }
            let start = p.rfind(|c: char| !ident::is_char(c)).map_or(0, |i| i + 1);
            let name = &p[start..];
            // A lone type (`int`) names no parameter.
            (ident::is_ident(name) && start > 0).then(|| name.to_string())
        })
        .collect()
}

/// Address table binds, per defining file.
fn bind_lists(plan: &Plan) -> BTreeMap<FileId, Vec<(usize, &GtabEntry)>> {
    let mut binds: BTreeMap<FileId, Vec<(usize, &GtabEntry)>> = BTreeMap::new();
    for (i, g) in plan.gtab.iter().enumerate() {
        binds.entry(g.file).or_default().push((i, g));
    }
    binds
}

/// Per defining file, the function that fills its slots of the SFI
/// module's address table.
fn binds(cx: &Ctx<'_, '_>, grefs: &Slots, mf: &mut MainFiles) {
    let d = &cx.plan.driver;
    for (fid, list) in &bind_lists(cx.plan) {
        mf.needs_code.insert(*fid);
        let t = &mut mf.tails[*fid];
        let _ = writeln!(
            t,
            "\n/* fgft: tells the SFI module where the objects of {} live in the main module */",
            cx.src.files[*fid].shown.display()
        );
        let _ = writeln!(
            t,
            "void fgft_bind_{d}_{}(void)",
            stem(&cx.src.files[*fid].rel)
        );
        t.push_str("{\n");
        for (i, g) in list {
            let amp = if g.is_fn { "" } else { "&" };
            let _ = writeln!(
                t,
                "{}",
                fgft_stubs::wrap_call(
                    1,
                    &format!(
                        "fgft_sfi_{d}_gtab[{}] = (void *){amp}{}",
                        grefs.name(*i),
                        g.name
                    ),
                    ";"
                )
            );
        }
        t.push_str("}\n");
    }
}

/// Copy-in and copy-out of the globals marshaled whole, in their defining
/// files.
fn global_copies(cx: &Ctx<'_, '_>, mf: &mut MainFiles) {
    let d = &cx.plan.driver;
    let prog = cx.src.prog;
    for (g, written) in &cx.plan.marshaled_globals {
        let Some(gd) = prog.global_def(g) else {
            continue;
        };
        let (copied, placed) = global_users(cx.plan, g);
        mf.needs_code.insert(gd.file);
        let t = &mut mf.tails[gd.file];
        let rights = if *written { "FGFT_RW" } else { "FGFT_R" };
        let origin = format!("{}:{}", cx.src.files[gd.file].shown.display(), gd.line);
        if copied {
            global_copy_fns(t, d, g, rights, &origin, *written && !gd.is_const);
        }
        if is_mapped(cx.plan, g) {
            global_map_fns(t, d, g, &origin);
        } else if placed {
            // An entry marshaled in place uses the global where it is.
            let how = if *written {
                ", stores logged"
            } else {
                ", read only"
            };
            let _ = writeln!(
                t,
                "\n/* fgft: in-place grant of global {g} ({origin}){how} */"
            );
            let _ = writeln!(t, "int fgft_global_place_{d}_{g}(struct fgft_txn *txn)");
            t.push_str("{\n\tint ret;\n\n");
            let _ = writeln!(
                t,
                "{}",
                fgft_stubs::wrap_call(
                    1,
                    &format!("ret = fgft_place_obj(txn, &{g}, sizeof({g}), {rights})"),
                    ";"
                )
            );
            t.push_str("\treturn ret < 0 ? ret : 0;\n}\n");
        }
    }
}

/// A global that entries marshaled in place only read: granted read only
/// once, while the driver is registered, instead of placed per call.
fn global_map_fns(t: &mut String, d: &str, g: &str, origin: &str) {
    let _ = writeln!(
        t,
        "\n/* fgft: grants global {g} ({origin}) read only, once */"
    );
    let _ = writeln!(t, "int fgft_global_map_{d}_{g}(void)");
    let _ = writeln!(
        t,
        "{{\n{}\n}}",
        fgft_stubs::wrap_call(
            1,
            &format!("return fgft_global_map(&{g}, sizeof({g}), FGFT_R)"),
            ";"
        )
    );
    let _ = writeln!(t, "\n/* fgft: revokes the grant of global {g} */");
    let _ = writeln!(t, "void fgft_global_unmap_{d}_{g}(void)");
    let _ = writeln!(t, "{{\n\tfgft_global_unmap(&{g});\n}}");
}

/// Whether the plan grants global `g` once, while the driver is registered
/// (`GlobalSpec::mapped`, which the stubs read too).
fn is_mapped(plan: &crate::plan::Plan, g: &str) -> bool {
    plan.entries
        .iter()
        .any(|e| e.spec.globals.iter().any(|x| x.name == g && x.mapped))
}

/// The globals granted once while the driver is registered, in order.
pub(super) fn mapped_globals(plan: &crate::plan::Plan) -> Vec<&str> {
    plan.marshaled_globals
        .keys()
        .filter(|g| is_mapped(plan, g))
        .map(String::as_str)
        .collect()
}

/// Whether entries that copy use global `g`, and whether entries marshaled
/// in place do.
fn global_users(plan: &crate::plan::Plan, g: &str) -> (bool, bool) {
    let by = |in_place: bool| {
        plan.entries
            .iter()
            .any(|e| e.spec.in_place == in_place && e.spec.globals.iter().any(|x| x.name == g))
    };
    (by(false), by(true))
}

/// A global's copy-in and copy-out (`back`: the copy is written back).
fn global_copy_fns(t: &mut String, d: &str, g: &str, rights: &str, origin: &str, back: bool) {
    let _ = writeln!(t, "\n/* fgft: copy-in of global {g} ({origin}) */");
    let _ = writeln!(t, "int fgft_global_in_{d}_{g}(struct fgft_txn *txn)");
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
    let _ = writeln!(t, "void fgft_global_out_{d}_{g}(struct fgft_txn *txn)");
    let _ = writeln!(t, "{{\n\tvoid *c = fgft_obj_find(txn, &{g});\n");
    if back {
        let _ = writeln!(
            t,
            "\tif (c && c != (void *)&{g})\n\t\tmemcpy((void *)&{g}, c, sizeof({g}));"
        );
    } else {
        t.push_str("\t(void)c;\n");
    }
    t.push_str("}\n");
}

/// Device checkpoints: the filtered copies of the PM code (in a file of
/// their own, included where the PM code lives, so that they can call its
/// static functions), then the generated checkpoint/restore and ops.
fn device_code(cx: &mut Ctx<'_, '_>, mf: &mut MainFiles) {
    let d = cx.plan.driver.clone();
    if let Some((f, copies)) = &cx.plan.device.copies {
        let rel = &cx.src.files[*f].rel;
        let name = format!("fgft_{d}_pm_copies.c");
        let mut t = String::new();
        let _ = writeln!(t, "// SPDX-License-Identifier: GPL-2.0");
        let _ = writeln!(
            t,
            "/*\n * fgft: filtered copies of the PM code of {}, for the device restore, #included by the generated code of {}.\n * Generated by fgft-cc split: do not edit.\n */",
            cx.src.files[*f].shown.display(),
            rel.display()
        );
        t.push_str(&dropped_calls(copies));
        let path = Path::new("main")
            .join(rel.parent().unwrap_or(Path::new("")))
            .join(&name);
        cx.generated(path, &t);
        mf.needs_code.insert(*f);
        let _ = writeln!(mf.tails[*f], "\n#include \"{name}\"");
    }
    for (f, glue) in &cx.plan.device.glue {
        mf.needs_code.insert(*f);
        mf.tails[*f].push_str(glue);
    }
}

/// The PM filter writes a call it drops as `do { } while (0); /* fgft-pm:
/// dropped CALL */`: the comment alone says it, or, as the body of an `if`
/// without `else`, the condition is kept for its effects.
fn dropped_calls(text: &str) -> String {
    const MARK: &str = "do { } while (0); /* fgft-pm: dropped ";
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        let Some(at) = l.find(MARK) else {
            out.push(l.to_string());
            continue;
        };
        let call = l[at + MARK.len()..]
            .trim_end()
            .trim_end_matches("*/")
            .trim_end();
        let indent: String = l.chars().take_while(|c| *c == '\t').collect();
        let only = l[..at].trim().is_empty();
        let prev = out.last().map(|p| p.trim().to_string()).unwrap_or_default();
        let next_else = lines
            .get(k + 1)
            .is_some_and(|n| n.trim_start().starts_with("else"));
        if only && prev.starts_with("if (") && prev.ends_with(')') && !next_else {
            let cond = &prev["if (".len()..prev.len() - 1];
            let outer: String = indent.chars().skip(1).collect();
            out.pop();
            out.push(format!(
                "{outer}/* fgft-pm: dropped {call} (when {cond}) */"
            ));
            // `!f(x)` is evaluated for f's effect alone.
            let eff = cond.strip_prefix('!').unwrap_or(cond);
            out.push(format!("{outer}(void){eff};"));
        } else if only && !prev.ends_with(')') && !prev.starts_with("else") {
            out.push(format!("{indent}/* fgft-pm: dropped {call} */"));
        } else {
            // Any other statement position keeps an empty statement.
            out.push(format!("{}; /* fgft-pm: dropped {call} */", &l[..at]));
        }
    }
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Applies the main edits; a file with generated code ends with the
/// #include of its `fgft_stubs_<unit>.c`.
fn apply(cx: &mut Ctx<'_, '_>, mut mf: MainFiles) {
    let d = cx.plan.driver.clone();
    // The kernel headers each file's stubs need that it does not include.
    let mut includes: BTreeMap<FileId, BTreeSet<String>> = BTreeMap::new();
    for e in &cx.plan.entries {
        let f = e.home.unwrap_or(cx.src.prog.fns[e.def].file);
        includes
            .entry(f)
            .or_default()
            .extend(e.includes.iter().cloned());
    }
    // A header's generated code goes with the first unit that includes it:
    // the SFI units include the main module's headers, and must not see
    // main-module code.
    for fid in mf.needs_code.clone() {
        if cx.src.files[fid].role != FileRole::Header {
            continue;
        }
        let Some(tu) = including_unit(cx, fid) else {
            continue;
        };
        let moved = includes.remove(&fid).unwrap_or_default();
        includes.entry(tu).or_default().extend(moved);
        let tail = std::mem::take(&mut mf.tails[fid]);
        mf.tails[tu].push_str(&tail);
        mf.needs_code.remove(&fid);
        mf.needs_code.insert(tu);
    }
    for (fid, df) in cx.src.files.iter().enumerate() {
        let pf = &cx.src.prog.files[fid];
        if mf.needs_code.contains(&fid) {
            let code = code_file_name(&df.rel);
            let sep = if pf.text.ends_with("\n\n") { "" } else { "\n" };
            mf.edits[fid].insert(
                pf.text.len(),
                format!("{sep}/* fgft: the generated code of this file */\n#include \"{code}\"\n"),
            );
            let mut t = String::new();
            let _ = writeln!(t, "// SPDX-License-Identifier: GPL-2.0");
            let _ = writeln!(
                t,
                "/*\n * fgft: what fgft-cc split generates for {} (stubs of its isolated entry points, copy functions, address-table binds, registration), #included at the end of {}.\n * Generated by fgft-cc split: do not edit.\n */\n",
                df.shown.display(),
                df.rel.display()
            );
            for h in includes.get(&fid).into_iter().flatten() {
                let _ = writeln!(t, "#include <{h}>");
            }
            let _ = writeln!(t, "#include \"fgft_{d}_main.h\"");
            t.push_str(&mf.tails[fid]);
            let path = Path::new("main")
                .join(df.rel.parent().unwrap_or(Path::new("")))
                .join(code);
            cx.generated(path, &t);
        }
        let ed = &mf.edits[fid];
        match ed.apply(&pf.text) {
            Ok(text) => {
                let log = ed.log(&pf.text);
                if !log.is_empty() {
                    let _ = writeln!(cx.edit_log, "=== main/{}\n{log}", df.rel.display());
                }
                cx.out.insert(PathBuf::from("main").join(&df.rel), text);
            }
            Err(o) => cx.error(
                fid,
                o.b.clone(),
                "fgft-cc made overlapping edits here (a bug); please report it".into(),
            ),
        }
    }
}

/// The first translation unit (by file order) that includes `fid`,
/// through other headers too.
fn including_unit(cx: &Ctx<'_, '_>, fid: FileId) -> Option<FileId> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![fid];
    let mut found = Vec::new();
    while let Some(f) = stack.pop() {
        for &by in &cx.src.files[f].included_by {
            if !seen.insert(by) {
                continue;
            }
            if cx.src.files[by].role == FileRole::Tu {
                found.push(by);
            } else {
                stack.push(by);
            }
        }
    }
    found.into_iter().min()
}

/// `e1000_main.c` -> `fgft_stubs_e1000_main.c`; a header's is named with
/// its extension (`amd8111e.h` -> `fgft_stubs_amd8111e_h.c`), so that it
/// never takes the name of the unit of the same stem.
fn code_file_name(rel: &Path) -> String {
    let stem = rel
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    match rel.extension().map(|e| e.to_string_lossy().to_string()) {
        Some(e) if e != "c" => format!("fgft_stubs_{stem}_{}.c", ident::underscored(&e)),
        _ => format!("fgft_stubs_{stem}.c"),
    }
}

/// Declarations shared by main-module files.
fn main_header(cx: &Ctx<'_, '_>) -> String {
    let (src, plan) = (cx.src, cx.plan);
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
    let _ = writeln!(s, "#include \"fgft_{d}_gtab.h\"");
    if plan.device.flush.is_some() {
        s.push_str(
            "#include <linux/device.h>\n#include <linux/slab.h>\n#include <linux/workqueue.h>\n",
        );
    }
    s.push('\n');
    for e in &plan.entries {
        let _ = writeln!(s, "extern struct fgft_entry {};", e.spec.ep_name());
    }
    if plan.heap {
        // The SFI module's; the in-place entries point at it.
        let _ = writeln!(s, "extern struct fgft_heap fgft_{d}_heap;");
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
    // Stubs other units name (an entry that is not static, as the
    // driver's ops struct in another unit takes it), and stubs compiled in
    // another unit than their entry's with the originals they call with
    // isolation off.
    for e in plan
        .entries
        .iter()
        .filter(|e| e.home.is_some() || !e.spec.is_static)
    {
        let orig = e.home.and(e.spec.orig.clone());
        for name in [Some(e.spec.stub_name()), orig].into_iter().flatten() {
            let sig = fgft_stubs::signature(&e.spec.ret, &name, &e.spec.params);
            let _ = writeln!(s, "{}", fgft_stubs::wrap_call(0, &sig, ";"));
        }
        s.push('\n');
    }
    for fid in bind_lists(plan).keys() {
        let _ = writeln!(
            s,
            "void fgft_bind_{d}_{}(void);",
            stem(&src.files[*fid].rel)
        );
    }
    for g in plan.marshaled_globals.keys() {
        let (copied, placed) = global_users(plan, g);
        if copied {
            let _ = writeln!(s, "int fgft_global_in_{d}_{g}(struct fgft_txn *txn);");
            let _ = writeln!(s, "void fgft_global_out_{d}_{g}(struct fgft_txn *txn);");
        }
        if is_mapped(plan, g) {
            let _ = writeln!(s, "int fgft_global_map_{d}_{g}(void);");
            let _ = writeln!(s, "void fgft_global_unmap_{d}_{g}(void);");
        } else if placed {
            let _ = writeln!(s, "int fgft_global_place_{d}_{g}(struct fgft_txn *txn);");
        }
    }
    if !plan.device.decls.is_empty() {
        let _ = writeln!(s, "/* Device checkpoint and restore. */");
        for x in &plan.device.decls {
            let _ = writeln!(s, "{x}");
        }
    }
    for decl in init::joint_decls(cx) {
        let _ = writeln!(s, "{decl}");
    }
    let _ = writeln!(s, "int fgft_register_{d}(void);");
    let _ = writeln!(s, "void fgft_unregister_{d}(void);");
    let _ = writeln!(s, "\n#endif /* _FGFT_{}_MAIN_H */", d.to_uppercase());
    s
}

/// Whether `fid` is a header (module init is never looked for there).
fn is_header(cx: &Ctx<'_, '_>, fid: FileId) -> bool {
    cx.src.files[fid].role == FileRole::Header
}

/// The module_init / module_*_driver and module_exit items of the driver.
type Hook = (FileId, Range<usize>, String, String);

/// Every module init and exit hook of the driver's files, in source order:
/// (inits, exits).  Several inits are several upstream modules built into
/// one (fs/fat's fat.ko and vfat.ko).
fn module_hooks(cx: &Ctx<'_, '_>) -> (Vec<Hook>, Vec<Hook>) {
    let prog = cx.src.prog;
    let mut init = Vec::new();
    let mut exit = Vec::new();
    for (fid, items) in prog.top.iter().enumerate() {
        if is_header(cx, fid) {
            continue;
        }
        for it in items {
            let calls = match &it.kind {
                TopKind::MacroStmt(m) => {
                    let text = &prog.files[fid].text[it.range.clone()];
                    let arg = text
                        .find('(')
                        .and_then(|a| text.rfind(')').map(|b| text[a + 1..b].trim().to_string()))
                        .unwrap_or_default();
                    vec![(m.clone(), it.range.clone(), arg)]
                }
                TopKind::Other | TopKind::Prototype(_) | TopKind::Variables(_) => {
                    unterminated_macro_calls(&prog.files[fid].text, it.range.clone())
                }
                _ => continue,
            };
            for (m, range, arg) in calls {
                if cx.opts.module_macros.is_init(&m) {
                    init.push((fid, range, "module_init".to_string(), arg));
                } else if cx.opts.module_macros.contains(&m) {
                    init.push((fid, range, m, arg));
                } else if m == "module_exit" {
                    exit.push((fid, range, m, arg));
                }
            }
        }
    }
    (init, exit)
}

/// `NAME(ARG)` calls that start a line of `range` of `text` and end it
/// without a `;` (`module_init(init_minix_fs)` in fs/minix/inode.c, which
/// the parser reads as part of a declaration): (NAME, its range, ARG).
pub(super) fn unterminated_macro_calls(
    text: &str,
    range: Range<usize>,
) -> Vec<(String, Range<usize>, String)> {
    let mut out = Vec::new();
    let mut at = range.start;
    for line in text[range.clone()].split_inclusive('\n') {
        let start = at + (line.len() - line.trim_start().len());
        at += line.len();
        let l = line.trim();
        let n = l
            .bytes()
            .take_while(|&c| fgft_base::ident::is_byte(c))
            .count();
        let (name, rest) = l.split_at(n);
        let Some(arg) = rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) else {
            continue;
        };
        if name.is_empty() || !fgft_base::ident::is_ident(arg.trim()) {
            continue;
        }
        out.push((
            name.to_string(),
            start..start + l.len(),
            arg.trim().to_string(),
        ));
    }
    out
}
