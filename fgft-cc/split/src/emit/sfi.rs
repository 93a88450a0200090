//! The SFI module's copies of the driver's units: closure functions only
//! (everything else deleted with its leading comment), renamed by the
//! per-unit header, kernel calls redirected to the wrappers, main-module
//! objects reached through the address table, and one exported trampoline
//! per entry point.

use super::edit::{whole_lines, Edits};
use super::gtab::Slots;
use super::{stem, wrappers, Ctx};
use crate::plan::{FileRole, Plan, Sources};
use fgft_facts::program::{FileId, Program, TopKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A unit and the driver files compiled into it.
pub(crate) type Unit = (FileId, Vec<FileId>);

/// The SFI units, their headers and the SFI module's own files.
pub(crate) fn emit_sfi(cx: &mut Ctx<'_, '_>, grefs: &Slots, units: &[Unit]) {
    let (src, plan) = (cx.src, cx.plan);
    let mut sedits: BTreeMap<FileId, Edits> = BTreeMap::new();
    for &fid in units.iter().flat_map(|(_, v)| v.iter()) {
        sedits.insert(fid, Edits::default());
    }
    // Deletions and the header include.
    for (tu, files) in units {
        let header = format!("fgft_sfi_{}.h", stem(&src.files[*tu].rel));
        for &fid in files {
            if let Some(ed) = sedits.get_mut(&fid) {
                file_edits(src, plan, &cx.opts.module_macros, fid, &header, ed);
            }
        }
    }
    container_data(cx, units, &mut sedits);
    redirect_main_refs(cx, grefs, &mut sedits);
    super::icall::sfi_edits(cx, &mut sedits);
    trampolines(cx, &mut sedits);
    header_copies(cx, units);
    for (fid, ed) in &sedits {
        let pf = &src.prog.files[*fid];
        match ed.apply(&pf.text) {
            Ok(text) => {
                let log = ed.log(&pf.text);
                if !log.is_empty() {
                    let _ = writeln!(
                        cx.edit_log,
                        "=== sfi/{}\n{log}",
                        src.files[*fid].rel.display()
                    );
                }
                cx.out
                    .insert(PathBuf::from("sfi").join(&src.files[*fid].rel), text);
            }
            Err(o) => cx.error(
                *fid,
                o.b.clone(),
                "fgft-cc made overlapping edits here (a bug); please report it".into(),
            ),
        }
    }
    for (tu, files) in units {
        let name = format!("sfi/fgft_sfi_{}.h", stem(&src.files[*tu].rel));
        let text = tu_header(src, plan, *tu, files);
        cx.generated(name, &text);
    }
    let d = &plan.driver;
    let text = wrappers::sfi_header(plan, cx.table);
    cx.generated(format!("sfi/fgft_{d}_sfi.h"), &text);
    if !plan.icall_uses.is_empty() {
        let text = super::icall::icall_header(plan);
        cx.generated(format!("sfi/fgft_{d}_icall.h"), &text);
    }
    let text = wrappers::sfi_rt(src, plan, cx.table, grefs);
    cx.generated(format!("sfi/fgft_{d}_sfi_rt.c"), &text);
}

/// The size and offset of each container the wrappers grant
/// ([`crate::plan::ContainerGrant`]), as data at the end of the SFI copy of
/// the first unit that sees the container's type (the unit of the
/// function that makes the relation, or the first that includes it).
fn container_data(cx: &Ctx<'_, '_>, units: &[Unit], sedits: &mut BTreeMap<FileId, Edits>) {
    let (src, plan) = (cx.src, cx.plan);
    for c in &plan.containers {
        let mut including = BTreeSet::new();
        let mut stack = vec![c.file];
        while let Some(f) = stack.pop() {
            if including.insert(f) {
                stack.extend(src.files[f].included_by.iter().copied());
            }
        }
        let Some((tu, _)) = units
            .iter()
            .find(|(tu, files)| including.contains(tu) || files.contains(&c.file))
        else {
            continue;
        };
        let Some(ed) = sedits.get_mut(tu) else {
            continue;
        };
        let text = &src.prog.files[*tu].text;
        let sep = if text.ends_with('\n') { "" } else { "\n" };
        ed.insert(
            text.len(),
            format!(
                "{sep}\n/*\n * fgft: where a {} sits in its {} (the wrappers grant the\n * container)\n */\nconst size_t {}[2] = {{\n\tsizeof({}),\n\toffsetof({}, {})\n}};\n",
                c.inner,
                c.outer,
                c.symbol(&plan.driver),
                c.outer,
                c.outer,
                c.member
            ),
        );
    }
}

/// Uses of main-module globals and functions in SFI code go through the
/// address table (`FGFT_MAIN_OBJ(x)`, `FGFT_MAIN_FN(f)`).
fn redirect_main_refs(cx: &mut Ctx<'_, '_>, grefs: &Slots, sedits: &mut BTreeMap<FileId, Edits>) {
    let (src, plan) = (cx.src, cx.plan);
    let gindex: BTreeMap<&str, usize> = plan
        .gtab
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.as_str(), i))
        .collect();
    let mut in_macros: BTreeSet<&str> = BTreeSet::new();
    let mut header_macro_globals: BTreeMap<(FileId, &str), (usize, bool)> = BTreeMap::new();
    for r in &plan.gtab_refs {
        let (f, name, site, is_fn) = (&r.func, r.name.as_str(), &r.site, r.is_fn);
        {
            let Some(ed) = sedits.get_mut(&site.file) else {
                continue;
            };
            let text = &src.prog.files[site.file].text;
            if text.get(site.range.clone()) != Some(name) {
                // An object of the same file, used inside a driver macro
                // (`IPW_DEBUG(...)` reads `ipw_debug_level`): its name is
                // redirected from its definition on, for the macros too.
                let def = src.prog.global_def(name).filter(|g| g.file == site.file);
                if let (false, Some(g)) = (is_fn, def) {
                    if in_macros.insert(name) {
                        let k = gindex[name];
                        // The SFI copy's own definition is no longer used.
                        let def = &text[g.range.clone()];
                        if def.starts_with("static ") && !def.contains("__maybe_unused") {
                            ed.insert(g.range.start + "static ".len(), "__maybe_unused ");
                        }
                        let at = g.range.end;
                        ed.insert(
                            at,
                            format!(
                                "\n#define {name} {}",
                                grefs.use_expr(&plan.driver, k, name, false)
                            ),
                        );
                    }
                    continue;
                }
                // Defined in a driver header (s2io.h's `debug_level`, read
                // by `DBG_PRINT()`), or a function of the main module that
                // another file defines (libertas' `lbs_cmd_with_response()`
                // passes `lbs_cmd_copyback`): redirected before the first
                // function of the unit that uses it, after the declarations
                // its headers make.
                let in_header = src
                    .prog
                    .global_def(name)
                    .is_some_and(|g| src.files[g.file].role == FileRole::Header);
                let fn_elsewhere = is_fn
                    && !plan.sfi_fns.contains(name)
                    && src.prog.def(name).is_some_and(|d| d.file != site.file);
                if (!is_fn && in_header) || fn_elsewhere {
                    let first = header_macro_globals
                        .entry((site.file, name))
                        .or_insert((site.range.start, is_fn));
                    first.0 = first.0.min(site.range.start);
                    continue;
                }
                cx.error(
                    site.file,
                    site.range.clone(),
                    format!(
                        "`{name}` is used inside a macro in `{f}`, which is compiled into the SFI \
                         module: fgft cannot redirect that use to the main module's object"
                    ),
                );
                continue;
            }
            if ed.touches(&site.range) {
                continue;
            }
            let k = gindex[name];
            ed.replace(
                site.range.clone(),
                grefs.use_expr(&plan.driver, k, name, is_fn),
            );
        }
    }
    for ((file, name), (at, is_fn)) in header_macro_globals {
        let Some(f) = src
            .prog
            .fns
            .iter()
            .find(|f| f.file == file && f.range.start <= at && at < f.range.end)
        else {
            continue;
        };
        // A declaration of the name after the redirect would declare the
        // redirect's expansion.
        let later = src
            .prog
            .protos
            .iter()
            .find(|p| p.file == file && p.name == name && p.range.start > f.range.start);
        if let Some(p) = later {
            cx.error(
                file,
                p.range.clone(),
                format!(
                    "`{name}` is used inside a macro in `{}`, which is compiled into the SFI \
                     module, and declared again after that function: fgft cannot redirect the \
                     use to the main module's object",
                    f.name
                ),
            );
            continue;
        }
        let Some(ed) = sedits.get_mut(&file) else {
            continue;
        };
        // `typeof(name)` still names the header's own object, which keeps
        // it used.
        let redirect = grefs.use_expr(&plan.driver, gindex[name], name, is_fn);
        ed.insert(f.range.start, format!("#define {name} {redirect}\n"));
    }
}

/// The main module's way into the SFI copy of each entry point: an
/// exported function at the end of the entry's file (declared in the
/// unit's header).
fn trampolines(cx: &Ctx<'_, '_>, sedits: &mut BTreeMap<FileId, Edits>) {
    let prog = cx.src.prog;
    for e in &cx.plan.entries {
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
        let _ = writeln!(t, "{}", fgft_stubs::wrap_call(0, &sig, ""));
        t.push_str("{\n");
        let body = if spec.ret.trim() == "void" {
            call
        } else {
            format!("return {call}")
        };
        let _ = writeln!(t, "{}", fgft_stubs::wrap_call(1, &body, ";"));
        t.push_str("}\n");
        let _ = writeln!(t, "EXPORT_SYMBOL_GPL({});", spec.sfi_name());
        ed.insert(prog.files[fd.file].text.len(), fgft_stubs::tidy(&t));
    }
}

/// SFI translation units: each compiled unit that holds closure functions
/// or duplicated globals, with the driver files of the unit to transform
/// (the unit and the .c files it includes).
pub(crate) fn units(src: &Sources<'_>, plan: &Plan) -> Vec<(FileId, Vec<FileId>)> {
    let prog = src.prog;
    let mut out = Vec::new();
    for (fid, df) in src.files.iter().enumerate() {
        if df.role != FileRole::Tu {
            continue;
        }
        let mut files = vec![fid];
        // .c files included (transitively) by this unit.
        let mut k = 0;
        while k < files.len() {
            let cur = files[k];
            for (j, dj) in src.files.iter().enumerate() {
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
    let r = item_span(pf, r);
    let lines = whole_lines(&pf.text, r.clone());
    lead_comment(&pf.text, lines.start)..lines.end
}

/// An item extended back over the storage class and qualifiers the macro
/// hints blanked in front of it.
fn item_span(pf: &fgft_parse::ParsedFile, r: std::ops::Range<usize>) -> std::ops::Range<usize> {
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
    st..r.end
}

/// The start of the comment block that ends on the line just before `at`
/// (a line start): a `/* ... */` or `/** ... */` whose lines hold nothing
/// else, or a run of `//` lines; `at` itself when there is none.  A file's
/// opening comment (license, copyright) is never an item's.
pub(crate) fn lead_comment(text: &str, at: usize) -> usize {
    if at == 0 || !text[..at].ends_with('\n') {
        return at;
    }
    let body = &text[..at - 1];
    let prev_start = body.rfind('\n').map_or(0, |i| i + 1);
    let prev = body[prev_start..].trim();
    let start = if prev.ends_with("*/") {
        let close = prev_start + body[prev_start..].rfind("*/").unwrap_or(0);
        let Some(open) = body[..close].rfind("/*") else {
            return at;
        };
        let line = body[..open].rfind('\n').map_or(0, |i| i + 1);
        if !body[line..open].trim().is_empty() || body[open + 2..close].contains("*/") {
            return at;
        }
        line
    } else if prev.starts_with("//") {
        let mut s = prev_start;
        while s > 0 {
            let p = body[..s - 1].rfind('\n').map_or(0, |i| i + 1);
            if !body[p..s - 1].trim_start().starts_with("//") {
                break;
            }
            s = p;
        }
        s
    } else {
        return at;
    };
    let comment = &body[start..];
    if start == 0 || comment.contains("SPDX") || comment.contains("Copyright") {
        return at;
    }
    start
}

/// The struct, union or enum definition (with its body) that the file-scope
/// declaration at `range` makes as its type, as written.
fn defined_record(pf: &fgft_parse::ParsedFile, range: std::ops::Range<usize>) -> Option<String> {
    let n = pf
        .tree
        .root_node()
        .descendant_for_byte_range(range.start, range.end)?;
    let n = std::iter::successors(Some(n), |x| x.parent())
        .find(|x| x.kind() == "declaration" && x.byte_range() == range)
        .or_else(|| (n.kind() == "declaration").then_some(n))?;
    let t = n.child_by_field_name("type")?;
    let record = matches!(
        t.kind(),
        "struct_specifier" | "union_specifier" | "enum_specifier"
    );
    // An anonymous one (`static const struct {...} board_info[]`) no other
    // declaration can name.
    let named = t.child_by_field_name("name").is_some();
    (record && named && t.child_by_field_name("body").is_some())
        .then(|| pf.node_text(t).to_string())
}

/// Deletions, shadows and the header include of one SFI file.
fn file_edits(
    src: &Sources<'_>,
    plan: &Plan,
    module_macros: &fgft_parse::modinit::ModuleMacros,
    fid: FileId,
    header: &str,
    ed: &mut Edits,
) {
    let prog = src.prog;
    let pf = &prog.files[fid];
    let shadows: BTreeSet<&str> = plan
        .gtab
        .iter()
        .filter(|g| !g.is_fn)
        .map(|g| g.name.as_str())
        .collect();
    // The unit that creates the driver's tracepoints does so in the main
    // module: its SFI copy only declares them (its calls fire the main
    // module's).
    let mut at = 0;
    for line in pf.text.split_inclusive('\n') {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words == ["#define", "CREATE_TRACE_POINTS"] {
            let end = at + line.trim_end_matches('\n').len();
            ed.replace(
                at..end,
                "/* fgft: CREATE_TRACE_POINTS is the main module's */".to_string(),
            );
        }
        at += line.len();
    }
    for it in &prog.top[fid] {
        match &it.kind {
            TopKind::Function(name) => {
                if !plan.sfi_fns.contains(name) {
                    ed.delete(item_deletion(pf, it.range.clone()));
                } else if !plan.entries.iter().any(|e| &e.spec.name == name) {
                    maybe_unused(pf, it.range.clone(), ed);
                }
                if plan.unchecked_reads.contains(name) {
                    ed.insert(
                        it.range.start,
                        "/* fgft: loads not range-checked ([isolate] unchecked-reads) */\n__no_sanitize_address\n".to_string(),
                    );
                }
            }
            TopKind::Prototype(names) if !names.iter().any(|n| plan.sfi_fns.contains(n)) => {
                ed.delete(item_deletion(pf, it.range.clone()));
            }
            TopKind::Variables(names) => {
                if names.iter().any(|n| plan.dup_globals.contains(n)) {
                    continue;
                }
                if let Some(n) = names.iter().find(|n| shadows.contains(n.as_str())) {
                    shadow_decl(prog, fid, n, it.range.clone(), ed);
                    continue;
                }
                // A record the declaration defines (tlan's `static struct
                // board {...} board_info[]`) stays: closure code names it.
                match defined_record(pf, it.range.clone()) {
                    Some(rec) => ed.replace(it.range.clone(), format!("{rec};")),
                    None => ed.delete(item_deletion(pf, it.range.clone())),
                }
            }
            TopKind::MacroStmt(_) => {
                // A driver macro that declares globals the SFI code reaches
                // through the address table (`INT_MODULE_PARM(if_port, 0);`)
                // becomes their extern declarations: FGFT_MAIN_OBJ needs the
                // type, and nothing else of the macro belongs in SFI code.
                let decls: Vec<String> = prog
                    .globals
                    .iter()
                    .filter(|g| g.file == fid && g.range == it.range)
                    .filter(|g| shadows.contains(g.name.as_str()))
                    .map(|g| match &g.decl_text {
                        Some(d) => format!("extern {d};"),
                        None => format!("extern {} {};", g.ty.c_spelling(), g.name),
                    })
                    .collect();
                if decls.is_empty() {
                    ed.delete(item_deletion(pf, it.range.clone()));
                } else {
                    ed.replace(it.range.clone(), decls.join(" "));
                }
            }
            TopKind::Other => {
                // `module_init(f)` without its `;`, read as part of a
                // declaration: the SFI module has no init of the driver's.
                for (m, r, _) in super::main::unterminated_macro_calls(&pf.text, it.range.clone()) {
                    if module_macros.is_hook(&m) {
                        ed.delete(r);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(at) = first_code(prog, fid) {
        ed.insert(
            at,
            format!("/* fgft: SFI copy; closure functions renamed, kernel calls wrapped */\n#include \"{header}\"\n\n"),
        );
    }
}

/// Where a file's code begins: before its first function or prototype
/// (with the comment above it), and not inside a conditional block
/// (sunhme's first item sits in an `#if 0` block) but before the
/// outermost one holding it.  What is included there sees every header
/// the file includes first, and comes before everything the file defines.
pub(super) fn first_code(prog: &Program, fid: FileId) -> Option<usize> {
    let pf = &prog.files[fid];
    let it = prog.top[fid]
        .iter()
        .find(|it| matches!(it.kind, TopKind::Function(_) | TopKind::Prototype(_)))?;
    let mut at = item_deletion(pf, it.range.clone()).start;
    // The walk up meets the outermost `#if` last.
    let mut n = pf.tree.root_node().descendant_for_byte_range(at, at);
    while let Some(x) = n {
        if matches!(x.kind(), "preproc_if" | "preproc_ifdef") {
            at = x.start_byte();
        }
        n = x.parent();
    }
    Some(at)
}

/// SFI copies of the driver headers that declare the driver's static
/// functions (jme.h declares `static int jme_set_link_ksettings(...)`): the
/// SFI units include the main module's headers, and in SFI code such a
/// function is either renamed (a closure function, declared by the unit's
/// SFI header) or not there, so the prototype would be "declared but never
/// defined".  The copy is the main module's header with those prototypes
/// blanked (lines kept); an SFI unit's `#include "x.h"` finds it first, in
/// its own directory.  A header whose inline functions SFI code calls
/// through pointers (e1000e's `e1e_rphy`: `hw->phy.ops.read_reg(...)`)
/// gets its copy too, with those calls dispatched (`FGFT_ICALL`, from
/// `fgft_<m>_icall.h`, which the copy includes after its license line).
fn header_copies(cx: &mut Ctx<'_, '_>, units: &[Unit]) {
    let src = cx.src;
    let prog = src.prog;
    let d = cx.plan.driver.clone();
    let in_units: BTreeSet<FileId> = units.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let header_inline_calls: BTreeSet<&str> = prog
        .fns
        .iter()
        .filter(|f| src.files[f.file].role == FileRole::Header && !in_units.contains(&f.file))
        .flat_map(|f| {
            let t = &prog.files[f.file].text[f.range.clone()];
            fgft_base::lex::ident_tokens(t)
                .into_iter()
                .map(move |r| &t[r.start..r.end])
        })
        .collect();
    for (fid, df) in src.files.iter().enumerate() {
        if df.role != FileRole::Header || in_units.contains(&fid) {
            continue;
        }
        let dead: Vec<&fgft_facts::program::Proto> = prog
            .protos
            .iter()
            .filter(|p| p.file == fid && p.is_static && p.alone)
            // Closure functions are renamed in SFI code (and declared by
            // the unit's SFI header); the others are not there at all.
            .filter(|p| prog.def(&p.name).is_some())
            .collect();
        let calls: Vec<&crate::plan::icall::IcallUse> = cx
            .plan
            .icall_uses
            .iter()
            .filter(|u| u.file == fid)
            .collect();
        // Non-static closure functions this header declares and one of its
        // own inline functions calls (cxgb3's `t3_wait_op_done()` calls
        // `t3_wait_op_done_val()`): the inline body is compiled before the
        // unit's SFI header renames the callee, so the prototype is
        // followed by a declaration that gives it the SFI copy's symbol.
        // Any driver header's inline counts (`header_inline_calls`):
        // mwifiex's 11n.h inlines call `mwifiex_get_sta_entry()`, which
        // main.h declares.
        let relabel: Vec<&fgft_facts::program::Proto> = prog
            .protos
            .iter()
            .filter(|p| p.file == fid && !p.is_static && p.alone)
            .filter(|p| {
                cx.plan.sfi_fns.contains(&p.name) && header_inline_calls.contains(p.name.as_str())
            })
            .filter(|p| prog.def(&p.name).is_some_and(|d| !d.is_static))
            .collect();
        if dead.is_empty() && calls.is_empty() && relabel.is_empty() {
            continue;
        }
        let main = PathBuf::from("main").join(&df.rel);
        let Some(mut text) = cx.out.get(&main).cloned() else {
            continue;
        };
        let pf = &prog.files[fid];
        // The dispatches are edits of the original text: made when the
        // main module left the header as it is (it does unless an entry
        // point's slot is filled in it).
        if !calls.is_empty() && text == pf.text {
            let mut ed = Edits::default();
            for u in &calls {
                ed.push(super::edit::Edit::wrap(
                    u.callee.clone(),
                    0,
                    format!("FGFT_ICALL({}, ", u.set),
                    ")",
                ));
            }
            let first = pf.text.find('\n').map_or(0, |i| i + 1);
            let at = if pf.text[..first].contains("SPDX") {
                first
            } else {
                0
            };
            ed.insert(
                at,
                format!("/* fgft: SFI copy; calls through pointers dispatched */\n#include \"fgft_{d}_icall.h\"\n"),
            );
            match ed.apply(&pf.text) {
                Ok(t) => {
                    let log = ed.log(&pf.text);
                    let _ = writeln!(cx.edit_log, "=== sfi/{}\n{log}", df.rel.display());
                    text = t;
                }
                Err(o) => {
                    cx.error(
                        fid,
                        o.b.clone(),
                        "fgft-cc made overlapping edits here (a bug); please report it".into(),
                    );
                    continue;
                }
            }
        }
        for p in relabel {
            let decl = &pf.text[p.range.clone()];
            if text.matches(decl).count() != 1 {
                continue;
            }
            let n = &p.name;
            text = text.replacen(
                decl,
                &format!("{decl} extern typeof({n}) {n} __asm__(\"fgft_sfi_{n}\");"),
                1,
            );
        }
        for p in dead {
            let decl = &pf.text[p.range.clone()];
            if text.matches(decl).count() != 1 {
                continue;
            }
            // A closure function keeps its prototype under the SFI name:
            // the unit may call it above its definition (atl2.c calls
            // `atl2_hash_mc_addr()`, which atl2.h declares).
            let new = if cx.plan.sfi_fns.contains(&p.name) {
                rename_decl(decl, &p.name)
            } else {
                decl.chars().filter(|&c| c == '\n').collect()
            };
            text = text.replacen(decl, &new, 1);
        }
        cx.out.insert(PathBuf::from("sfi").join(&df.rel), text);
    }
}

/// The identifiers `text` selects as members (after `.` or `->`) or uses
/// as tags (after `struct`, `union`, `enum`).
fn selected_members(text: &str) -> impl Iterator<Item = &str> {
    let tag = |before: &str| {
        ["struct", "union", "enum"].iter().any(|k| {
            before.strip_suffix(k).is_some_and(|pre| {
                pre.bytes()
                    .last()
                    .is_none_or(|c| !fgft_base::ident::is_byte(c))
            })
        })
    };
    fgft_base::lex::ident_tokens(text)
        .into_iter()
        .filter(move |r| {
            let before = text[..r.start].trim_end();
            before.ends_with("->")
                || (before.ends_with('.') && !before.ends_with(".."))
                || (before.len() < r.start && tag(before))
        })
        .map(move |r| &text[r.start..r.end])
}

/// Prototype `decl` of `name` declaring `fgft_sfi_<name>` instead (the
/// first token that names it is the declarator's).
fn rename_decl(decl: &str, name: &str) -> String {
    match fgft_base::lex::ident_tokens(decl)
        .into_iter()
        .find(|r| &decl[r.start..r.end] == name)
    {
        Some(r) => format!("{}fgft_sfi_{name}{}", &decl[..r.start], &decl[r.end..]),
        None => decl.to_string(),
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
    let spec = |word: &str| {
        let mut c = node.walk();
        let found = node
            .children(&mut c)
            .any(|ch| pf.node_text(ch).trim() == word && ch.kind() != "function_declarator");
        found
    };
    // An unused static inline is no warning.
    if !spec("static") || spec("inline") {
        return;
    }
    let Some(d) = node.child_by_field_name("declarator") else {
        return;
    };
    // On the declarator's line when it fits, else on the line before it.
    let at = d.start_byte();
    let line_start = pf.text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = pf.text[at..].find('\n').map_or(pf.text.len(), |i| at + i);
    let line = &pf.text[line_start..line_end];
    if fgft_stubs::width(line) + "__maybe_unused ".len() <= fgft_stubs::HARD {
        ed.insert(at, "__maybe_unused ");
    } else {
        ed.insert(at, "__maybe_unused\n");
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
    // A declaration macro (DEFINE_SPINLOCK): keep as written.  Conditional
    // directives inside an initializer (fat_dir_operations' `#ifdef
    // CONFIG_COMPAT`) are not one.
    if !same_but_directives(pf.hinted.get(item.clone()), pf.text.get(item.clone())) {
        return;
    }
    if !g.alone {
        return;
    }
    // An initializer that names no driver function or global can stay (the
    // shadow then keeps a complete type for sizeof).
    if prog.init_refs(name).is_empty() {
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

/// Whether the hinted text `hinted` of an item is its text `text`, but for
/// the preprocessor directive lines of `text` (the hinted text blanks or
/// resolves them; both keep the lines).
fn same_but_directives(hinted: Option<&str>, text: Option<&str>) -> bool {
    let (Some(h), Some(t)) = (hinted, text) else {
        return hinted == text;
    };
    let (hl, tl): (Vec<&str>, Vec<&str>) = (h.lines().collect(), t.lines().collect());
    hl.len() == tl.len()
        && hl
            .iter()
            .zip(&tl)
            .all(|(a, b)| a == b || b.trim_start().starts_with('#'))
}

/// The per-unit SFI header: renames of the closure functions, prototypes
/// of the unit's trampolines.
fn tu_header(src: &Sources<'_>, plan: &Plan, tu: FileId, files: &[FileId]) -> String {
    let prog = src.prog;
    let name = stem(&src.files[tu].rel);
    let guard = format!("_FGFT_SFI_{}_H", name.to_uppercase());
    let mut s = String::new();
    let _ = writeln!(s, "/* SPDX-License-Identifier: GPL-2.0 */");
    let _ = writeln!(
        s,
        "/*\n * fgft: closure functions of {} renamed into the SFI module.\n * Generated by fgft-cc split: do not edit.\n */",
        src.files[tu].shown.display()
    );
    let _ = writeln!(s, "#ifndef {guard}\n#define {guard}\n");
    let _ = writeln!(s, "#include \"fgft_{}_sfi.h\"\n", plan.driver);
    // Files visible from this unit: its .c files and the headers it
    // includes, transitively (a header whose includers are not known is
    // taken as visible).
    let unit: BTreeSet<FileId> = files.iter().copied().collect();
    let mut visible = unit.clone();
    loop {
        let more: Vec<FileId> = (0..src.files.len())
            .filter(|h| !visible.contains(h) && src.files[*h].role == FileRole::Header)
            .filter(|&h| {
                let by = &src.files[h].included_by;
                by.is_empty() || by.iter().any(|i| visible.contains(i))
            })
            .collect();
        if more.is_empty() {
            break;
        }
        visible.extend(more);
    }
    let member_words: BTreeSet<&str> = visible
        .iter()
        .flat_map(|&fid| selected_members(&prog.files[fid].text))
        .collect();
    for f in &plan.sfi_fns {
        let defs = prog.defs(f);
        let Some(&first) = defs.first() else { continue };
        let d = &prog.fns[first];
        if src.files[d.file].role == FileRole::Header {
            continue;
        }
        let here = defs.iter().any(|&i| unit.contains(&prog.fns[i].file));
        // Non-static closure functions declared in a header visible here
        // (a unit that does not include the header cannot name them).
        let hdr_proto = prog.protos.iter().any(|p| {
            p.name == *f && src.files[p.file].role == FileRole::Header && visible.contains(&p.file)
        });
        // An exported function is declared in a kernel header the unit
        // includes (`cdc_ncm_change_mtu` in linux/usb/cdc_ncm.h).
        let kernel_proto = here && plan.exported_fns.contains(f);
        if !here && (!hdr_proto || d.is_static) {
            continue;
        }
        if !d.is_static && (hdr_proto || kernel_proto) {
            let _ = writeln!(s, "extern typeof({f}) fgft_sfi_{f};");
        }
        // A static function named as a member the unit selects (be2net's
        // `embedded_payload()` beside `wrb->payload.embedded_payload`) or
        // as a tag (`struct be_cmd_write_flashrom`) keeps its name: a macro
        // would rename those too, and a static clashes with nothing in the
        // main module.
        if d.is_static && member_words.contains(f.as_str()) {
            let _ = writeln!(
                s,
                "/* {f}: static, named as a member or tag; not renamed */"
            );
            continue;
        }
        let _ = writeln!(s, "#define {f} fgft_sfi_{f}");
    }
    let entries: Vec<&fgft_stubs::EntrySpec> = plan
        .entries
        .iter()
        .filter(|e| unit.contains(&prog.fns[e.def].file))
        .map(|e| &e.spec)
        .collect();
    if !entries.is_empty() {
        let _ = writeln!(
            s,
            "\n/* The main module's ways into this unit's entry points. */"
        );
        let mut tags: Vec<String> = Vec::new();
        for e in &entries {
            for t in fgft_stubs::param_tags(&e.params) {
                if !tags.contains(&t) {
                    tags.push(t);
                }
            }
        }
        for t in &tags {
            let _ = writeln!(s, "{t};");
        }
        for e in &entries {
            let _ = writeln!(s, "{}", fgft_stubs::sfi_prototype(e));
        }
    }
    let _ = writeln!(s, "\n#endif /* {guard} */");
    s
}

#[cfg(test)]
mod tests {
    use super::lead_comment;

    #[test]
    fn an_items_leading_comment_is_found() {
        let t = "// SPDX-License-Identifier: GPL-2.0\n/* file */\n\n/**\n * f - does\n */\nint f(void);\n";
        let at = t.find("int f").unwrap();
        assert_eq!(lead_comment(t, at), t.find("/**").unwrap());
        // A blank line between: not the item's.
        let t = "int a;\n/* about b */\n\nint b;\n";
        assert_eq!(
            lead_comment(t, t.find("int b").unwrap()),
            t.find("int b").unwrap()
        );
        // Code before the comment on its line: not a block of its own.
        let t = "int a; /* a */\nint b;\n";
        assert_eq!(
            lead_comment(t, t.find("int b").unwrap()),
            t.find("int b").unwrap()
        );
        // A run of // lines.
        let t = "int a;\n// one\n// two\nint b;\n";
        assert_eq!(
            lead_comment(t, t.find("int b").unwrap()),
            t.find("// one").unwrap()
        );
        // The file's opening comment stays.
        let t = "/* Copyright x */\nint b;\n";
        assert_eq!(
            lead_comment(t, t.find("int b").unwrap()),
            t.find("int b").unwrap()
        );
    }
}
