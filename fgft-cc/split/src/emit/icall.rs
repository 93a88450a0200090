//! The dispatch of calls through pointers in SFI code.
//!
//! Each call site the plan made a dispatch has its callee wrapped,
//! `FGFT_ICALL(set, lp->a->read_csr)(ioaddr, CSR3)`; the macro (in
//! `sfi/fgft_<m>_sfi.h`) calls what `fgft_sfi_<m>_icall()` (in
//! `sfi_rt.c`, no sanitizer) returns for the pointer: the SFI copy of a
//! driver function of the set, found by its main-module address (the
//! address table's slot), by its stub's for an isolated entry point, or
//! by the copy's own (an SFI-side ops table); a kernel function's wrapper;
//! else the transaction aborts with cause `icall`.  Each driver target's
//! SFI unit defines `fgft_sfi_<m>_ic_<f>`, the copy's address, right
//! after the copy.

use super::edit::{whole_lines, Edit, Edits};
use super::gtab::Slots;
use super::Ctx;
use crate::plan::{Plan, Sources};
use fgft_facts::program::FileId;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The name of the SFI copy's address of driver function `f`.
pub(crate) fn copy_addr(d: &str, f: &str) -> String {
    format!("fgft_sfi_{d}_ic_{f}")
}

/// Every driver function some dispatch may call, sorted.
pub(crate) fn targets(plan: &Plan) -> BTreeSet<&str> {
    plan.icall_sets
        .iter()
        .flat_map(|s| s.targets.iter().map(String::as_str))
        .collect()
}

/// The stub of `f` when it is an isolated entry point (its slots hold the
/// stub's address).
pub(crate) fn stub_of(plan: &Plan, f: &str) -> Option<String> {
    plan.entries
        .iter()
        .find(|e| e.spec.name == f)
        .map(|e| e.spec.stub_name())
}

/// The edits of the SFI files: each dispatched callee wrapped, each target
/// copy's address defined after the copy.
pub(crate) fn sfi_edits(cx: &mut Ctx<'_, '_>, sedits: &mut BTreeMap<FileId, Edits>) {
    let (src, plan) = (cx.src, cx.plan);
    let d = &plan.driver;
    for u in &plan.icall_uses {
        let Some(ed) = sedits.get_mut(&u.file) else {
            continue;
        };
        ed.push(Edit::wrap(
            u.callee.clone(),
            0,
            format!("FGFT_ICALL({}, ", u.set),
            ")",
        ));
    }
    for f in targets(plan) {
        let Some(def) = src.prog.def(f) else { continue };
        let Some(ed) = sedits.get_mut(&def.file) else {
            continue;
        };
        let text = &src.prog.files[def.file].text;
        let at = whole_lines(text, def.range.end..def.range.end).end;
        let origin = format!("{}:{}", src.files[def.file].shown.display(), def.line);
        let def_line = fgft_stubs::wrap_call(
            0,
            &format!("void *const {} = (void *){f}", copy_addr(d, f)),
            ";",
        );
        ed.insert(
            at,
            format!("\n/*\n * fgft: where calls through pointers find the SFI copy of {f}\n * ({origin})\n */\n{def_line}\n"),
        );
    }
}

/// The declarations `sfi/fgft_<m>_sfi.h` gets when SFI code calls through
/// pointers: the macro, the resolver, the copies' addresses.
pub(crate) fn header_part(plan: &Plan) -> String {
    let mut s = String::new();
    if plan.icall_uses.is_empty() {
        return s;
    }
    let d = &plan.driver;
    let _ = writeln!(
        s,
        "/*\n * fgft: a call through a pointer in SFI code calls what the resolver\n * finds for the pointer in dispatch set @set (plan.txt lists the sets): a\n * driver function's SFI copy or a kernel function's wrapper; any other\n * address aborts the transaction (cause icall).\n */"
    );
    let _ = writeln!(
        s,
        "void *fgft_sfi_{d}_icall(unsigned int set, const void *p);"
    );
    let _ = writeln!(
        s,
        "#define FGFT_ICALL(set, f) \\\n\t((typeof(&*(f)))fgft_sfi_{d}_icall((set), (const void *)(f)))\n"
    );
    for f in targets(plan) {
        let _ = writeln!(s, "extern void *const {};", copy_addr(d, f));
    }
    s.push('\n');
    s
}

/// The resolver, in `sfi_rt.c`.
pub(crate) fn resolver(s: &mut String, src: &Sources<'_>, plan: &Plan, grefs: &Slots) {
    if plan.icall_uses.is_empty() {
        return;
    }
    let d = &plan.driver;
    let slot = |name: &str| -> Option<&str> {
        plan.gtab
            .iter()
            .position(|g| g.is_fn && g.name == name)
            .map(|i| grefs.name(i))
    };
    let _ = writeln!(
        s,
        "/*\n * fgft: what a call through a pointer in SFI code calls, for dispatch set\n * @set: the SFI copy of the driver function @p is (by its main-module\n * address, its stub's, or the copy's own), or the wrapper of the kernel\n * function @p is.  Any other address aborts the transaction.\n */"
    );
    let _ = writeln!(
        s,
        "void *fgft_sfi_{d}_icall(unsigned int set, const void *p)"
    );
    s.push_str("{\n");
    s.push_str("\tswitch (set) {\n");
    for (k, set) in plan.icall_sets.iter().enumerate() {
        let from: BTreeSet<&str> = plan
            .icall_uses
            .iter()
            .filter(|u| u.set == k)
            .flat_map(|u| u.from.iter().map(String::as_str))
            .collect();
        let _ = writeln!(s, "\tcase {k}:");
        if !from.is_empty() {
            let v: Vec<&str> = from.into_iter().collect();
            let _ = writeln!(s, "\t\t/* read from {} */", v.join(", "));
        }
        for f in &set.targets {
            let mut alts = Vec::new();
            if let Some(n) = slot(f) {
                alts.push(format!("p == fgft_sfi_{d}_gtab[{n}]"));
            }
            if let Some(n) = stub_of(plan, f).and_then(|st| slot(&st).map(str::to_string)) {
                alts.push(format!("p == fgft_sfi_{d}_gtab[{n}]"));
            }
            alts.push(format!("p == {}", copy_addr(d, f)));
            let cond = alts.join(" ||\n\t\t    ");
            // A target in an object the configuration may leave out.
            let config = src
                .prog
                .def(f)
                .and_then(|def| src.files[def.file].config.clone());
            if let Some(c) = &config {
                let _ = writeln!(s, "#if IS_ENABLED({c})");
            }
            let _ = writeln!(s, "\t\tif ({cond})\n\t\t\treturn {};", copy_addr(d, f));
            if config.is_some() {
                s.push_str("#endif\n");
            }
        }
        for kf in &set.kernel {
            let _ = writeln!(
                s,
                "\t\tif (p == (const void *){kf})\n\t\t\treturn (void *)fgft_w_{kf};"
            );
        }
        s.push_str("\t\tbreak;\n");
    }
    s.push_str("\t}\n");
    s.push_str("\tfgft_txn_fail(fgft_current(), FGFT_CAUSE_ICALL);\n}\n\n");
}
