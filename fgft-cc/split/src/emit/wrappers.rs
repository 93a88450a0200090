//! The SFI module's boundary with the kernel: the wrapper for every kernel
//! function SFI code calls (compiled without the sanitizer), the redirect
//! macros that send SFI calls to them, and the SFI module's own runtime file
//! (table of main-module addresses, object translation, init/exit).

use crate::plan::table::{ApiEntry, ArgSpec, IoAccess, IoKind, LockKind, MoreGrant, Table};
use crate::plan::Plan;
use fgft_base::{ident, lex};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Replaces identifier tokens of `s` by `f(name)` where it returns Some.
fn subst(s: &str, f: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut pos = 0;
    for t in lex::ident_tokens(s) {
        let (a, b) = (t.start, t.end);
        if let Some(r) = f(&s[a..b]) {
            out.push_str(&s[pos..a]);
            out.push_str(&r);
            pos = b;
        }
    }
    out.push_str(&s[pos..]);
    out
}

/// One value a compensation captures at call time.
struct Capture {
    /// The expression in the undo text (`ret`, `dev`, `*dma_handle`).
    expr: String,
    /// Its C type.
    ty: String,
}

fn deref_type(t: &str) -> String {
    let t = t.trim();
    match t.rfind('*') {
        Some(i) => t[..i].trim().trim_start_matches("const ").to_string(),
        None => t.to_string(),
    }
}

/// The values the undo statement of `e` uses (params, `ret`, `saved`,
/// `*param`), in order.
fn captures(e: &ApiEntry, text: &str) -> Vec<Capture> {
    let mut out: Vec<Capture> = Vec::new();
    let b = text.as_bytes();
    for t in lex::ident_tokens(text) {
        let (a, z) = (t.start, t.end);
        let id = &text[a..z];
        let ty = if id == "ret" {
            Some(e.ret.clone())
        } else if id == "saved" {
            Some("long".to_string())
        } else {
            e.params.iter().find(|p| p.name == id).map(|p| p.ty.clone())
        };
        let Some(ty) = ty else { continue };
        // `*p` (a unary dereference): capture the pointed-to value.
        let mut k = a;
        while k > 0 && b[k - 1] == b' ' {
            k -= 1;
        }
        let star = k > 0 && b[k - 1] == b'*' && {
            let mut j = k - 1;
            while j > 0 && b[j - 1] == b' ' {
                j -= 1;
            }
            j == 0 || matches!(b[j - 1], b'(' | b',' | b'=')
        };
        let (expr, ty) = if star {
            (format!("*{id}"), deref_type(&ty))
        } else {
            (id.to_string(), ty)
        };
        if !out.iter().any(|c| c.expr == expr) {
            out.push(Capture { expr, ty });
        }
    }
    out
}

/// Replaces captured expressions in `text` by casts of `a0..a3`.
fn with_args(text: &str, caps: &[Capture]) -> String {
    // Star captures first (they contain the plain identifier).
    let mut t = text.to_string();
    for (i, c) in caps.iter().enumerate() {
        if let Some(id) = c.expr.strip_prefix('*') {
            let re_from = [format!("*{id}"), format!("* {id}")];
            for f in re_from {
                t = t.replace(&f, &format!("(({})a{i})", c.ty));
            }
        }
    }
    subst(&t, |id| {
        caps.iter()
            .position(|c| c.expr == id)
            .map(|i| format!("(({})a{i})", caps[i].ty))
    })
}

/// What goes between a type and a name (`int x`, `void *x`).
pub(super) fn sep(ty: &str) -> &'static str {
    if ty.ends_with('*') {
        ""
    } else {
        " "
    }
}

/// Parameters the wrapper takes (lvalue arguments are not passed).
fn wparams(e: &ApiEntry) -> Vec<&crate::plan::table::WParam> {
    e.params
        .iter()
        .filter(|p| p.kind != ArgSpec::Lvalue)
        .collect()
}

fn proto(e: &ApiEntry) -> String {
    proto_named(e, &format!("fgft_w_{}", e.name))
}

/// `e`'s prototype (its wrapper's parameters) under the name `name`.
pub(super) fn proto_named(e: &ApiEntry, name: &str) -> String {
    let ps: Vec<String> = wparams(e).iter().map(|p| p.decl.clone()).collect();
    let plist = if ps.is_empty() {
        "void".into()
    } else {
        ps.join(", ")
    };
    format!("{}{}{name}({})", e.ret, sep(&e.ret), plist)
}

/// The exports the kernel's inline helpers in SFI code call, declared with
/// their wrapper's symbol (`Plan::relabel`).
fn relabels(s: &mut String, plan: &Plan) {
    if plan.relabel.is_empty() {
        return;
    }
    s.push_str(
        "/*\n * Called by the kernel's inline helpers compiled into SFI code: the\n * symbol is the wrapper's.\n */\n",
    );
    for n in &plan.relabel {
        let decl = format!("extern typeof(fgft_w_{n}) {n} __asm__(\"fgft_w_{n}\")");
        let _ = writeln!(s, "{}", fgft_stubs::wrap_call(0, &decl, ";"));
    }
    s.push('\n');
}

/// The driver's tracepoints SFI code fires: each call goes to the main
/// module's function that fires it (`typeof(&trace_x)` names the trace
/// header's own `trace_x()`, as a macro does not expand in its own body).
fn tracepoints(s: &mut String, plan: &Plan) {
    if plan.tracepoints.is_empty() {
        return;
    }
    s.push_str("/* The driver's tracepoints fire in the main module. */\n");
    for call in plan.tracepoints.keys() {
        let f = crate::plan::tracepoint_fn(&plan.driver, call);
        let def = format!(
            "#define {call}(...) \\\n\t(((typeof(&{call}))FGFT_MAIN_FN({f}))(__VA_ARGS__))"
        );
        let _ = writeln!(s, "{def}");
    }
    s.push('\n');
}

/// The common SFI header: wrapper prototypes and redirect macros.
pub fn sfi_header(plan: &Plan, table: &Table) -> String {
    let d = &plan.driver;
    let mut s = String::new();
    let _ = writeln!(s, "/* SPDX-License-Identifier: GPL-2.0 */");
    let _ = writeln!(
        s,
        "/*\n * fgft SFI module of {}: calls from SFI code into the kernel go through\n * the wrappers of fgft_{d}_sfi_rt.c (compiled without the sanitizer).\n * Generated by fgft-cc split: do not edit.\n */",
        plan.module
    );
    let _ = writeln!(s, "#ifndef _FGFT_{}_SFI_H", d.to_uppercase());
    let _ = writeln!(s, "#define _FGFT_{}_SFI_H\n", d.to_uppercase());
    s.push_str("#include <fgft/runtime.h>\n");
    let _ = writeln!(s, "#include \"fgft_{d}_gtab.h\"\n");
    // Struct tags named by wrapper prototypes.
    let mut tags = BTreeSet::new();
    for n in plan.wrapped.iter().chain(variadics(plan, table).iter()) {
        if let Some(e) = table.apis.get(n) {
            for p in &e.params {
                collect_tags(&p.ty, &mut tags);
            }
            collect_tags(&e.ret, &mut tags);
        }
    }
    for t in &tags {
        let _ = writeln!(s, "{t};");
    }
    if !tags.is_empty() {
        s.push('\n');
    }
    let _ = writeln!(s, "void *fgft_sfi_{d}_gref(unsigned int i);");
    let _ = writeln!(
        s,
        "\n/* Main-module objects and functions, by their slot (fgft_{d}_gtab.h). */"
    );
    let _ = writeln!(
        s,
        "#define FGFT_MAIN_OBJ(x) (*(typeof(x) *)fgft_sfi_{d}_gref(FGFT_GREF_##x))"
    );
    let _ = writeln!(
        s,
        "#define FGFT_MAIN_FN(x) ((void *)fgft_sfi_{d}_gref(FGFT_GREF_##x))\n"
    );
    s.push_str(&super::icall::header_part(plan));
    let _ = writeln!(s, "void *fgft_sfi_{d}_kobj(const void *p);");
    let _ = writeln!(
        s,
        "void *fgft_sfi_{d}_checked(const void *p, size_t len, unsigned int rights);"
    );
    s.push('\n');
    for n in &plan.wrapped {
        let Some(e) = table.apis.get(n) else { continue };
        let _ = writeln!(s, "/* {}: {} (compensations.toml) */", e.name, describe(e));
        // A read-only call: SFI code keeps what it loaded across it.
        let pure = if e.readonly { "__pure " } else { "" };
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(0, &format!("{pure}{}", proto(e)), ";")
        );
    }
    // The wrappers themselves (fgft_<m>_sfi_rt.c) call the real functions.
    s.push_str("\n#ifndef FGFT_SFI_RT\n\n");
    relabels(&mut s, plan);
    tracepoints(&mut s, plan);
    s.push_str(
        "/*\n * BUG() aborts the transaction without the kernel's report: a marked ud2\n * (FGFT_SFI_BUG_INSNS, fgft/runtime.h) that the runtime's die notifier\n * takes; the runtime notes the recovery itself, rate limited.\n */\n",
    );
    s.push_str("#undef BUG\n");
    s.push_str(
        "#define BUG() do { asm volatile(FGFT_SFI_BUG_INSNS); unreachable(); } while (0)\n\n",
    );
    for n in &plan.wrapped {
        let Some(e) = table.apis.get(n) else { continue };
        let _ = writeln!(s, "#undef {}", e.name);
        let names: Vec<&str> = e.params.iter().map(|p| p.name.as_str()).collect();
        if e.params.iter().any(|p| p.kind == ArgSpec::Lvalue) {
            let sets: Vec<String> = e
                .params
                .iter()
                .filter(|p| p.kind == ArgSpec::Lvalue)
                .map(|p| format!("({}) = 0", p.name))
                .collect();
            let args: Vec<String> = wparams(e).iter().map(|p| format!("({})", p.name)).collect();
            let body = fgft_stubs::wrap_call(
                1,
                &format!(
                    "({}, fgft_w_{}({}))",
                    sets.join(", "),
                    e.name,
                    args.join(", ")
                ),
                "",
            );
            let _ = writeln!(
                s,
                "#define {}({}) \\\n{}\n",
                e.name,
                names.join(", "),
                body.replace('\n', " \\\n")
            );
        } else {
            let _ = writeln!(
                s,
                "#define {}(...) fgft_w_{}(__VA_ARGS__)\n",
                e.name, e.name
            );
        }
    }
    variadic_macros(&mut s, d, plan, table);
    device_accessors(&mut s, plan, table);
    s.push_str("#endif /* FGFT_SFI_RT */\n\n");
    let _ = writeln!(s, "#endif /* _FGFT_{}_SFI_H */", d.to_uppercase());
    s
}

/// The variadic kernel functions SFI code calls: called directly, through a
/// macro that checks the named arguments and what `reach` says first.
fn variadic_macros(s: &mut String, d: &str, plan: &Plan, table: &Table) {
    for n in variadics(plan, table) {
        let Some(e) = table.apis.get(&n) else {
            continue;
        };
        let names: Vec<String> = e.params.iter().map(|p| p.name.clone()).collect();
        let args: Vec<String> = e
            .params
            .iter()
            .map(|p| match &p.kind {
                ArgSpec::Kobj => format!("fgft_sfi_{d}_kobj({})", p.name),
                ArgSpec::Out(l) => format!("fgft_sfi_{d}_checked({}, {}, FGFT_W)", p.name, l),
                ArgSpec::In(l) => format!("fgft_sfi_{d}_checked({}, {}, FGFT_R)", p.name, l),
                ArgSpec::InOut(l) => format!("fgft_sfi_{d}_checked({}, {}, FGFT_RW)", p.name, l),
                _ => format!("({})", p.name),
            })
            .collect();
        let _ = writeln!(
            s,
            "/* {}: {}, called directly with checked arguments */",
            e.name,
            describe(e)
        );
        let _ = writeln!(s, "#undef {}", e.name);
        // Memory behind the arguments first (a cursor's bytes), then the
        // call; the unnamed arguments are probed too (FGFT_VA_MAP).
        let reach: Vec<String> = e
            .reach
            .iter()
            .map(|r| {
                // A parameter in the reach is its checked form: `*data`
                // reads the cursor only once `data` passed its check.
                let sub = |t: &str| {
                    subst(t, |n| {
                        let i = names.iter().position(|m| m == n)?;
                        Some(format!("((typeof({n}))({}))", args[i]))
                    })
                };
                // NULL is no memory here: the range table refuses it.
                format!(
                    "fgft_check_or_fail({}, {}, {}), ",
                    sub(&r.addr),
                    sub(&r.len),
                    r.rights
                )
            })
            .collect();
        let call = format!("{}({} FGFT_VA_MAP(__VA_ARGS__))", e.name, args.join(", "));
        let body = fgft_stubs::wrap_call(
            1,
            &if reach.is_empty() {
                call
            } else {
                format!("({}{call})", reach.concat())
            },
            "",
        );
        let _ = writeln!(
            s,
            "#define {}({}, ...) \\\n{}\n",
            e.name,
            names.join(", "),
            body.replace('\n', " \\\n")
        );
    }
}

/// The register accessors SFI code calls, redefined to mark the transaction
/// first (compensations.toml `[inline] device`).
fn device_accessors(s: &mut String, plan: &Plan, table: &Table) {
    let used = table.device_accessors(plan.entries.iter().flat_map(|e| e.apis.iter()));
    s.push_str(&accessor_redefinitions(&used, table));
}

/// The redefinitions of the register accessors `used` (empty for none).
fn accessor_redefinitions(used: &BTreeSet<String>, table: &Table) -> String {
    let mut s = String::new();
    if used.is_empty() {
        return s;
    }
    s.push_str(
        "/*\n * Register accessors (compensations.toml [inline] device): each access\n * marks the transaction as having touched its device, so that an abort\n * restores the device only if the call touched it.  An MMIO accessor\n * ([inline] mmio_read, mmio_write) first checks that its address is device\n * memory (fgft_mmio_check()), a string port accessor (rep_in, rep_out)\n * that the body may write or read its buffer.\n */\n",
    );
    for n in used {
        let _ = writeln!(s, "#undef {n}");
        let def = match table.io_checked.get(n) {
            Some(IoAccess {
                kind: IoKind::MmioRead,
                bytes,
            }) => {
                format!("{n}(a) FGFT_MMIO_R({n}, {bytes}, a)")
            }
            Some(IoAccess {
                kind: IoKind::MmioWrite,
                bytes,
            }) => {
                format!("{n}(v, a) FGFT_MMIO_W({n}, {bytes}, v, a)")
            }
            Some(IoAccess {
                kind: IoKind::RepIn,
                bytes,
            }) => {
                format!("{n}(p, b, c) FGFT_REP({n}, {bytes}, FGFT_W, p, b, c)")
            }
            Some(IoAccess {
                kind: IoKind::RepOut,
                bytes,
            }) => {
                format!("{n}(p, b, c) FGFT_REP({n}, {bytes}, FGFT_R, p, b, c)")
            }
            None => format!("{n}(...) (fgft_touch_sfi(), ({n})(__VA_ARGS__))"),
        };
        let _ = writeln!(s, "#define {def}");
    }
    s.push('\n');
    s
}

/// Variadic table functions the SFI code calls.
pub fn variadics(plan: &Plan, table: &Table) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in &plan.entries {
        for a in &e.apis {
            if let Some(t) = table.apis.get(a) {
                if t.variadic && !t.inline {
                    out.insert(a.clone());
                }
            }
        }
    }
    out
}

fn collect_tags(ty: &str, out: &mut BTreeSet<String>) {
    let toks: Vec<&str> = ty.split_whitespace().collect();
    for w in toks.windows(2) {
        if w[0] == "struct" || w[0] == "union" {
            let name: String = w[1].chars().take_while(|c| ident::is_char(*c)).collect();
            if !name.is_empty() {
                out.insert(format!("{} {name}", w[0]));
            }
        }
    }
}

fn describe(e: &ApiEntry) -> String {
    let mut parts = vec![e.effect.clone()];
    if e.commit {
        parts.push("deferred to commit".into());
    }
    if let Some(u) = &e.undo {
        parts.push(format!("undo `{u}`"));
    }
    if e.lock.is_some() {
        parts.push("held to the end of the transaction".into());
    }
    if e.unlock.is_some() {
        parts.push("released at the end of the transaction".into());
    }
    if e.grant.is_some() || !e.grant_more.is_empty() {
        parts.push("result granted".into());
    }
    parts.join(", ")
}

/// The SFI module's unsanitized runtime file: address table, translation
/// helpers, wrappers, init and exit.
pub(crate) fn sfi_rt(
    src: &crate::plan::Sources<'_>,
    plan: &Plan,
    table: &Table,
    grefs: &super::gtab::Slots,
) -> String {
    let d = &plan.driver;
    let mut s = String::new();
    let _ = writeln!(s, "// SPDX-License-Identifier: GPL-2.0");
    let _ = writeln!(
        s,
        "/*\n * fgft SFI module of {}: the part compiled without the sanitizer.\n * Generated by fgft-cc split: do not edit.\n */",
        plan.module
    );
    let mut headers: BTreeSet<String> = BTreeSet::new();
    headers.insert("linux/module.h".into());
    headers.insert("linux/kernel.h".into());
    headers.insert("linux/string.h".into());
    let releases = release_fns(plan, table);
    for n in plan.wrapped.iter().chain(&releases) {
        if let Some(h) = table.apis.get(n).and_then(|e| e.header.as_ref()) {
            // `header = "pcmcia/cistpl.h pcmcia/ds.h"`: a header with the
            // ones it needs (the include block is sorted by name).
            headers.extend(h.split_whitespace().map(str::to_string));
        }
    }
    headers.extend(table.globals.values().cloned());
    for h in &headers {
        let _ = writeln!(s, "#include <{h}>");
    }
    // The SFI header includes <fgft/runtime.h>.
    s.push_str("#define FGFT_SFI_RT\n");
    let _ = writeln!(s, "#include \"fgft_{d}_sfi.h\"\n");
    address_table(&mut s, d, grefs);
    super::icall::resolver(&mut s, src, plan, grefs);
    translation_helpers(&mut s, d, plan, table);
    grant_fn(&mut s, d, table);
    stack_guard(&mut s);
    for r in &releases {
        release_fn(&mut s, &table.apis[r]);
    }
    for c in &plan.containers {
        let _ = writeln!(
            s,
            "/* fgft: {{ sizeof, offsetof }} of the {} around a {} ({}.{}) */\nextern const size_t {}[2];\n",
            c.outer,
            c.inner,
            c.outer,
            c.member,
            c.symbol(d)
        );
    }
    if plan.heap {
        let _ = writeln!(
            s,
            "/*\n * fgft: the driver's heap: what {} allocates through the table's\n * allocators, natively or in a committed transaction, until it frees it;\n * its in-place transactions may touch it (runtime.h).\n */",
            plan.module
        );
        let _ = writeln!(
            s,
            "struct fgft_heap fgft_{d}_heap = {{\n\t.name = \"{}\",\n}};\nEXPORT_SYMBOL_GPL(fgft_{d}_heap);\n",
            plan.module
        );
    }
    for w in &plan.wrapped {
        if let Some(e) = table.apis.get(w) {
            let mut e = e.clone();
            // The driver's container of what the call returns.
            // The container is granted as the object is (a new one, new).
            let rights = e.grant.as_ref().map_or("rw".to_string(), |g| g.1.clone());
            for c in plan.containers.iter().filter(|c| c.apis.contains(w)) {
                let sym = c.symbol(d);
                e.grant_more.push(MoreGrant {
                    addr: format!("(char *)ret - {sym}[1]"),
                    len: format!("{sym}[0]"),
                    rights: rights.clone(),
                    when: None,
                });
            }
            // Without a heap the object stays the transaction's alone.
            if !plan.heap {
                e.heap = None;
            }
            wrapper(&mut s, d, &e, plan.callbacks.get(w));
        }
    }
    module_init_exit(
        &mut s,
        d,
        &plan.module,
        !table.globals.is_empty(),
        plan.heap,
    );
    s
}

/// The SFI module's own stack-protector failure call: the compiler calls
/// `__stack_chk_fail` from a function's epilogue when its canary was
/// overwritten (a local array overrun), before it returns through the
/// clobbered frame.  The kernel's panics; inside a transaction body this
/// one aborts the transaction instead (cause stack).  The module's own
/// definition is what its objects link to.
fn stack_guard(s: &mut String) {
    s.push_str("#ifdef CONFIG_STACKPROTECTOR\n");
    s.push_str(
        "/*\n * fgft: a stack frame of SFI code was overrun (its canary changed): the\n * trap aborts the transaction before the function returns through the frame\n * (the runtime counts it as cause stack).  A trap, not a call: objtool lets\n * this function run with user access on.\n */\n",
    );
    s.push_str("notrace void __stack_chk_fail(void)\n{\n");
    s.push_str("\tasm volatile(\"ud2\");\n\tunreachable();\n}\n");
    s.push_str("#endif\n\n");
}

/// The table of main-module addresses and its reader.
fn address_table(s: &mut String, d: &str, grefs: &super::gtab::Slots) {
    let _ = writeln!(
        s,
        "/* Main-module addresses SFI code uses, filled by the main module at init. */"
    );
    let _ = writeln!(s, "void *fgft_sfi_{d}_gtab[{}];", grefs.size_expr());
    let _ = writeln!(s, "EXPORT_SYMBOL_GPL(fgft_sfi_{d}_gtab);\n");
    let _ = writeln!(
        s,
        "/* fgft: the transaction's copy of main-module object @i, or the object. */"
    );
    let _ = writeln!(s, "void *fgft_sfi_{d}_gref(unsigned int i)");
    s.push_str("{\n\tstruct fgft_txn *txn = fgft_body();\n");
    let _ = writeln!(s, "\tvoid *o = fgft_sfi_{d}_gtab[i];");
    s.push_str("\tvoid *c;\n\n\tif (!txn || !o)\n\t\treturn o;\n");
    s.push_str("\tc = fgft_obj_find(txn, o);\n\treturn c ? c : o;\n}\n\n");
}

/// Translation of kernel objects and checks of arguments.
fn translation_helpers(s: &mut String, d: &str, plan: &Plan, table: &Table) {
    let _ = writeln!(
        s,
        "/* fgft: the kernel object behind @p (the original of an SFI copy, else @p probed). */"
    );
    let _ = writeln!(s, "void *fgft_sfi_{d}_kobj(const void *p)");
    // As the wrappers translate theirs (fgft_kobj_in): inline for a
    // pointer the body's windows allow, else the runtime translates a copy
    // or probes the pointer (a wild one fails the body here instead of
    // faulting inside the kernel call).
    s.push_str("{\n\treturn fgft_kobj_in(fgft_body(), p);\n}\n\n");
    let _ = writeln!(
        s,
        "/*\n * fgft: checks @len bytes at @p against this cpu's inline windows, then\n * the range table; returns @p.\n */"
    );
    let _ = writeln!(
        s,
        "{}",
        fgft_stubs::wrap_call(
            0,
            &format!("void *fgft_sfi_{d}_checked(const void *p, size_t len, unsigned int rights)"),
            ""
        )
    );
    s.push_str(
        "{\n\tif (p && len && !fgft_win_allows(p, len, rights))\n\t\tfgft_check_or_fail(p, len, rights);\n",
    );
    s.push_str("\treturn (void *)p;\n}\n\n");
    let uses_str = plan.wrapped.iter().any(|w| {
        table
            .apis
            .get(w)
            .is_some_and(|e| e.params.iter().any(|p| matches!(p.kind, ArgSpec::Str(_))))
    });
    if uses_str {
        let _ = writeln!(
            s,
            "/*\n * fgft: checks a string before the kernel reads it, up to its NUL or @max\n * bytes: eight bytes a check where this cpu's windows allow them, else\n * one byte a check.\n */"
        );
        let _ = writeln!(
            s,
            "static const char *fgft_sfi_{d}_str(const char *p, size_t max)"
        );
        s.push_str("{\n\tconst char *q = p;\n\tsize_t i;\n\n");
        s.push_str("\twhile (p && max) {\n");
        s.push_str("\t\tif (max >= 8 && fgft_win_allows(q, 8, FGFT_R)) {\n");
        s.push_str("\t\t\tfor (i = 0; i < 8; i++)\n\t\t\t\tif (!q[i])\n\t\t\t\t\treturn p;\n");
        s.push_str("\t\t\tq += 8;\n\t\t\tmax -= 8;\n\t\t\tcontinue;\n\t\t}\n");
        s.push_str(
            "\t\tif (!fgft_win_allows(q, 1, FGFT_R))\n\t\t\tfgft_check_or_fail(q, 1, FGFT_R);\n",
        );
        s.push_str("\t\tif (!*q++)\n\t\t\tbreak;\n\t\tmax--;\n\t}\n");
        s.push_str("\treturn p;\n}\n\n");
    }
}

/// The kernel variables SFI code reads, granted read-only to every
/// transaction once, when the SFI module loads (not per transaction).
fn grant_fn(s: &mut String, d: &str, table: &Table) {
    if table.globals.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "/* fgft: the kernel variables SFI code reads (compensations.toml [globals]) */"
    );
    let _ = writeln!(s, "static const struct fgft_sfi_{d}_kvar {{");
    s.push_str("\tconst void *addr;\n\tsize_t len;\n");
    let _ = writeln!(s, "}} fgft_sfi_{d}_kvars[] = {{");
    for g in table.globals.keys() {
        let size = table
            .global_sizes
            .get(g)
            .cloned()
            .unwrap_or_else(|| format!("sizeof({g})"));
        let _ = writeln!(s, "\t{{ (const void *)&{g}, {size} }},");
    }
    s.push_str("};\n\n");
    let _ = writeln!(
        s,
        "/* fgft: grants every transaction read access to the kernel variables. */"
    );
    let _ = writeln!(s, "static int fgft_sfi_{d}_grant_kvars(void)\n{{");
    s.push_str("\tsize_t i;\n\tint err;\n\n");
    let _ = writeln!(
        s,
        "\tfor (i = 0; i < ARRAY_SIZE(fgft_sfi_{d}_kvars); i++) {{"
    );
    let _ = writeln!(s, "\t\terr = fgft_global_map(fgft_sfi_{d}_kvars[i].addr,");
    let _ = writeln!(s, "\t\t\t\t      fgft_sfi_{d}_kvars[i].len, FGFT_R);");
    s.push_str("\t\tif (err) {\n\t\t\twhile (i--)\n");
    let _ = writeln!(s, "\t\t\t\tfgft_global_unmap(fgft_sfi_{d}_kvars[i].addr);");
    s.push_str("\t\t\treturn err;\n\t\t}\n\t}\n\treturn 0;\n}\n\n");
    let _ = writeln!(s, "/* fgft: revokes the grant of the kernel variables. */");
    let _ = writeln!(s, "static void fgft_sfi_{d}_ungrant_kvars(void)\n{{");
    s.push_str("\tsize_t i;\n\n");
    let _ = writeln!(s, "\tfor (i = 0; i < ARRAY_SIZE(fgft_sfi_{d}_kvars); i++)");
    let _ = writeln!(s, "\t\tfgft_global_unmap(fgft_sfi_{d}_kvars[i].addr);");
    s.push_str("}\n\n");
}

/// The SFI module's init and exit (its own data granted to every
/// transaction) and module information.
fn module_init_exit(s: &mut String, d: &str, module: &str, kvars: bool, heap: bool) {
    let init_exit = |s: &mut String| {
        let sfx = if heap { "_heap" } else { "" };
        let _ = writeln!(s, "module_init(fgft_sfi_{d}{sfx}_init);");
        let _ = writeln!(s, "module_exit(fgft_sfi_{d}{sfx}_exit);");
    };
    if kvars {
        let _ = writeln!(
            s,
            "/* fgft: grants every transaction this module's own data and the kernel variables. */"
        );
        let _ = writeln!(s, "static int __init fgft_sfi_{d}_init(void)\n{{");
        s.push_str("\tint err = fgft_map_module(THIS_MODULE);\n\n");
        s.push_str("\tif (err)\n\t\treturn err;\n");
        let _ = writeln!(s, "\terr = fgft_sfi_{d}_grant_kvars();");
        s.push_str("\tif (err)\n\t\tfgft_unmap_module(THIS_MODULE);\n\treturn err;\n}\n\n");
        let _ = writeln!(
            s,
            "/* fgft: revokes the grants of this module's data and the kernel variables. */"
        );
        let _ = writeln!(s, "static void __exit fgft_sfi_{d}_exit(void)\n{{");
        let _ = writeln!(s, "\tfgft_sfi_{d}_ungrant_kvars();");
        s.push_str("\tfgft_unmap_module(THIS_MODULE);\n}\n\n");
    } else {
        let _ = writeln!(
            s,
            "/* fgft: grants every transaction this module's own data. */"
        );
        let _ = writeln!(s, "static int __init fgft_sfi_{d}_init(void)");
        s.push_str("{\n\treturn fgft_map_module(THIS_MODULE);\n}\n\n");
        let _ = writeln!(s, "/* fgft: revokes the grant of this module's data. */");
        let _ = writeln!(s, "static void __exit fgft_sfi_{d}_exit(void)");
        s.push_str("{\n\tfgft_unmap_module(THIS_MODULE);\n}\n\n");
    }
    if heap {
        let _ = writeln!(
            s,
            "/* fgft: makes the driver's heap, then grants what the SFI module's own init grants. */"
        );
        let _ = writeln!(s, "static int __init fgft_sfi_{d}_heap_init(void)\n{{");
        let _ = writeln!(s, "\tint err = fgft_heap_init(&fgft_{d}_heap);\n");
        s.push_str("\tif (err)\n\t\treturn err;\n");
        let _ = writeln!(s, "\terr = fgft_sfi_{d}_init();");
        let _ = writeln!(
            s,
            "\tif (err)\n\t\tfgft_heap_destroy(&fgft_{d}_heap);\n\treturn err;\n}}\n"
        );
        let _ = writeln!(s, "/* fgft: the SFI module's exit, then the heap goes. */");
        let _ = writeln!(s, "static void __exit fgft_sfi_{d}_heap_exit(void)\n{{");
        let _ = writeln!(s, "\tfgft_sfi_{d}_exit();");
        let _ = writeln!(s, "\tfgft_heap_destroy(&fgft_{d}_heap);\n}}\n");
    }
    init_exit(s);
    s.push_str("MODULE_LICENSE(\"GPL\");\n");
    let _ = writeln!(
        s,
        "MODULE_DESCRIPTION(\"fgft SFI copy of {module} (generated)\");"
    );
}

/// `fgft_sfi_<d>_checked(p, len, RIGHTS);` and the other checks of one
/// argument before the real call.
fn check_arg(s: &mut String, d: &str, p: &crate::plan::table::WParam) {
    let checked = |rights: &str, l: &str| {
        fgft_stubs::wrap_call(
            1,
            &format!("fgft_sfi_{d}_checked({}, {l}, {rights})", p.name),
            ";",
        )
    };
    let line = match &p.kind {
        ArgSpec::Kobj => fgft_stubs::wrap_call(
            1,
            &format!("{} = fgft_kobj_in(txn, (const void *){})", p.name, p.name),
            ";",
        ),
        ArgSpec::Out(l) => checked("FGFT_W", l),
        ArgSpec::In(l) => checked("FGFT_R", l),
        ArgSpec::InOut(l) => checked("FGFT_RW", l),
        ArgSpec::Str(None) => format!("\tfgft_sfi_{d}_str({}, SIZE_MAX);", p.name),
        ArgSpec::Str(Some(n)) => {
            fgft_stubs::wrap_call(1, &format!("fgft_sfi_{d}_str({}, {n})", p.name), ";")
        }
        ArgSpec::Shadow(t) => fgft_stubs::wrap_call(
            1,
            &format!("{} = fgft_shadow(txn, {}, sizeof({t}))", p.name, p.name),
            ";",
        ),
        // An MMIO or port cookie: checked for range, never read.
        _ if p.ty.contains("__iomem") => format!("\tfgft_iomem_check({});", p.name),
        _ => return,
    };
    let _ = writeln!(s, "{line}");
}

/// The compensation that undoes `e` on abort, and the function that makes
/// a call deferred to commit.
fn compensations(s: &mut String, d: &str, e: &ApiEntry) {
    if let Some(u) = &e.undo {
        let caps = captures(e, u);
        let _ = writeln!(s, "/* fgft: undoes {} on abort: {u} */", e.name);
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                0,
                &format!(
                    "static void fgft_undo_{}(unsigned long a0, unsigned long a1, \
                     unsigned long a2, unsigned long a3)",
                    e.name
                ),
                ""
            )
        );
        let _ = writeln!(
            s,
            "{{\n{}\n}}\n",
            fgft_stubs::wrap_call(1, with_args(u, &caps).trim_end_matches(';'), ";")
        );
    }
    if e.commit {
        let args: Vec<String> = wparams(e)
            .iter()
            .enumerate()
            .map(|(i, p)| format!("({})a[{i}]", p.ty))
            .collect();
        let _ = writeln!(s, "/* fgft: makes the deferred {} at commit */", e.name);
        let _ = writeln!(s, "static void fgft_commit_{}(unsigned long *a)", e.name);
        let call = if e.is_void() {
            format!("{}({})", e.name, args.join(", "))
        } else {
            format!("(void){}({})", e.name, args.join(", "))
        };
        s.push_str("{\n");
        // Out of the driver's heap before the memory goes back.
        if let Some(i) = heap_param(e) {
            let _ = writeln!(s, "\tfgft_heap_del(&fgft_{d}_heap, (const void *)a[{i}]);");
        }
        let _ = writeln!(s, "{}\n}}\n", fgft_stubs::wrap_call(1, &call, ";"));
    }
}

/// The position among the wrapper's parameters of the one a `heap` entry
/// takes out of the driver's heap (a free frees it, a handover gives it to
/// the kernel).
pub(super) fn heap_param(e: &ApiEntry) -> Option<usize> {
    let h = e.heap.as_ref().filter(|h| h.as_str() != "ret")?;
    wparams(e).iter().position(|p| &p.name == h)
}

/// Four `unsigned long` arguments of a runtime record.
fn four(mut a: Vec<String>) -> String {
    while a.len() < 4 {
        a.push("0".into());
    }
    a.join(", ")
}

/// The wrapper of kernel function `e`: checks its arguments, then locks
/// through the runtime, defers the call to commit, or calls and records
/// the compensation.
fn wrapper(s: &mut String, d: &str, e: &ApiEntry, calls_back: Option<&String>) {
    let void = e.is_void();
    compensations(s, d, e);
    let _ = writeln!(
        s,
        "/* fgft: wrapper of {} ({}; compensations.toml) */",
        e.name,
        describe(e)
    );
    let _ = writeln!(s, "{}", fgft_stubs::wrap_call(0, &proto(e), ""));
    let needs_txn = e.lock.is_some()
        || e.unlock.is_some()
        || e.commit
        || e.undo.is_some()
        || e.grant.is_some()
        || !e.grant_more.is_empty()
        || heap_param(e).is_some()
        || notes_kret(e)
        // One lookup of the transaction serves every runtime call below.
        || (e.effect == "irreversible" && !e.commit)
        || e.sleeps
        || matches!(e.effect.as_str(), "delay" | "sync")
        || calls_back.is_some()
        || wparams(e)
            .iter()
            .any(|p| matches!(p.kind, ArgSpec::Kobj | ArgSpec::Shadow(_)));
    s.push_str("{\n");
    if needs_txn {
        s.push_str("\tstruct fgft_txn *txn = fgft_body();\n");
    }
    if e.save.is_some() {
        s.push_str("\tlong saved;\n");
    }
    // A trylock returns the runtime's answer as it is.
    let has_ret = !void && !e.commit && !e.lock.is_some_and(|k| k.is_try());
    if has_ret {
        let _ = writeln!(s, "\t{}{}ret;", e.ret, sep(&e.ret));
    }
    if needs_txn || e.save.is_some() || has_ret {
        s.push('\n');
    }
    // A wait (a delay, a sync that waits for what other code does, a call
    // that sleeps on I/O:
    // write-back that takes the folio locks, an interrupt handler that
    // takes the driver's lock): locks the body already unlocked go now
    // (two-phase locking defers them, and nothing may wait holding them).
    // A call no abort undoes: the transaction may not run once more.
    if e.effect == "irreversible" && !e.commit {
        s.push_str("\tfgft_irreversible(txn);\n");
    }
    if e.sleeps || matches!(e.effect.as_str(), "delay" | "sync") {
        s.push_str("\tfgft_sleep_point(txn);\n");
    } else if let Some(why) = calls_back {
        // A call back into the driver runs the main module's code, which
        // takes the driver's locks itself: those the body unlocked go now.
        let _ = writeln!(s, "\t/* It may call back into the driver ({why}). */");
        s.push_str("\tfgft_callback_point(txn);\n");
    }
    for p in wparams(e) {
        check_arg(s, d, p);
    }
    for r in &e.reach {
        // NULL is no memory here: the range table refuses it.
        let line = format!("fgft_check_or_fail({}, {}, {})", r.addr, r.len, r.rights);
        let _ = writeln!(s, "{}", fgft_stubs::wrap_call(1, &line, ";"));
    }
    // What the kernel asserts of the arguments: a call that would trip its
    // BUG_ON() fails the body instead (outside a body it goes ahead).
    for r in &e.requires {
        let _ = writeln!(s, "\t/* {} */", r.why.replace("*/", "* /"));
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(1, &format!("if (!({}))", r.cond), "")
        );
        s.push_str("\t\tfgft_fail_cause(FGFT_CAUSE_ASSERT);\n");
    }
    // The arguments passed: the call touches the device (or runs the
    // driver's own code, which may program it), and an abort restores it.
    if touches_device(e) || calls_back.is_some() {
        s.push_str("\tfgft_touch();\n");
    }
    if e.lock.is_some() || e.unlock.is_some() {
        lock_body(s, e);
    } else if e.commit {
        commit_body(s, d, e);
    } else {
        call_body(s, d, e);
    }
    s.push_str("}\n\n");
}

/// Whether the wrapper of `e` notes its result for fgft_ret_ptr(): a
/// pointer the call returns and does not grant, which the body may hand
/// back to the kernel as it is (a dentry from d_splice_alias()).  A pure
/// function's points into its arguments (memcpy, strchr): granted already.
fn notes_kret(e: &ApiEntry) -> bool {
    let r = e.ret.trim();
    e.grant.is_none() && e.effect != "pure" && r.ends_with('*') && !r.contains('(')
}

/// Whether a call of `e` touches a device: effect `device` (registers,
/// configuration space, a bus transfer) or `irq` (interrupt vectors of the
/// device's configuration space).
fn touches_device(e: &ApiEntry) -> bool {
    matches!(e.effect.as_str(), "device" | "irq")
}

/// The arguments of the real call (lvalue arguments are not passed: 0).
pub(super) fn call_args(e: &ApiEntry) -> String {
    let args: Vec<String> = e
        .params
        .iter()
        .map(|p| {
            if p.kind == ArgSpec::Lvalue {
                "0".to_string()
            } else {
                p.name.clone()
            }
        })
        .collect();
    args.join(", ")
}

/// The unlock functions the runtime calls for `lock = "call"` locks of the
/// wrapped functions (each lock's `release`, each unlock itself), sorted.
fn release_fns(plan: &Plan, table: &Table) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for w in &plan.wrapped {
        let Some(e) = table.apis.get(w) else { continue };
        if e.lock == Some(LockKind::Call) || e.locks_result.is_some() {
            out.extend(e.release.iter().cloned());
        }
        if e.unlock == Some(LockKind::Call) {
            out.insert(e.name.clone());
        }
    }
    out.retain(|r| table.apis.contains_key(r));
    out
}

fn release_name(unlock: &str) -> String {
    format!("fgft_release_{unlock}")
}

/// `static void fgft_release_up(void *arg)`: the call the runtime makes to
/// release a `lock = "call"` lock (at the end, or on abort).
fn release_fn(s: &mut String, u: &ApiEntry) {
    let _ = writeln!(
        s,
        "/* fgft: releases a lock taken through a kernel function: {}() */",
        u.name
    );
    let _ = writeln!(s, "static void {}(void *arg)\n{{", release_name(&u.name));
    if u.params.is_empty() {
        let _ = writeln!(s, "\t{}();", u.name);
    } else {
        let _ = writeln!(s, "\t{}(arg);", u.name);
    }
    s.push_str("}\n\n");
}

/// A `lock = "call"` lock or unlock: the real function takes it, the
/// runtime keeps it to the end and releases it with the unlock function.
fn call_lock_body(s: &mut String, e: &ApiEntry) {
    let key = e
        .lock_arg
        .clone()
        .or_else(|| {
            wparams(e)
                .iter()
                .find(|p| p.kind == ArgSpec::Kobj)
                .map(|p| format!("(void *){}", p.name))
        })
        .unwrap_or_else(|| "NULL".into());
    if e.unlock.is_some() {
        let _ = writeln!(
            s,
            "\tfgft_call_unlock(txn, {key}, {});",
            release_name(&e.name)
        );
        return;
    }
    let rel = release_name(e.release.as_deref().unwrap_or_default());
    let call = format!("{}({})", e.name, call_args(e));
    let held = match e.lock_ok.as_deref() {
        Some("ret") => " 1",
        Some(_) => " 0",
        None => "",
    };
    let _ = writeln!(
        s,
        "\tif (!fgft_call_lock(txn, {key}, {rel}))\n\t\treturn{held};"
    );
    match e.lock_ok.as_deref() {
        None => {
            let _ = writeln!(s, "{}", fgft_stubs::wrap_call(1, &call, ";"));
            let _ = writeln!(s, "\tfgft_call_locked(txn, {key}, {rel});");
        }
        Some(ok) => {
            let _ = writeln!(
                s,
                "{}",
                fgft_stubs::wrap_call(1, &format!("ret = {call}"), ";")
            );
            let _ = writeln!(s, "\tif ({ok})\n\t\tfgft_call_locked(txn, {key}, {rel});");
            s.push_str("\treturn ret;\n");
        }
    }
}

/// A lock or unlock: the runtime takes or releases it for the transaction.
fn lock_body(s: &mut String, e: &ApiEntry) {
    if e.lock.or(e.unlock) == Some(LockKind::Call) {
        call_lock_body(s, e);
        return;
    }
    let params = wparams(e);
    let lock_arg = e.lock_arg.clone().unwrap_or_else(|| {
        params
            .iter()
            .find(|p| p.kind == ArgSpec::Kobj)
            .map(|p| p.name.clone())
            .unwrap_or_default()
    });
    // A raw_spinlock_t has runtime functions of its own (fgft_raw_spin_*).
    let name = |f: &'static str| -> String {
        if e.raw {
            f.replacen("fgft_spin_", "fgft_raw_spin_", 1)
        } else {
            f.to_string()
        }
    };
    if let Some(k) = e.lock.filter(|k| k.is_try()) {
        let _ = writeln!(
            s,
            "\tif (WARN_ON_ONCE(!txn))\n\t\treturn {};",
            k.not_taken()
        );
        let _ = writeln!(
            s,
            "\treturn {}(txn, {lock_arg});",
            name(k.runtime_fn(false))
        );
        return;
    }
    s.push_str("\tif (WARN_ON_ONCE(!txn))\n\t\treturn;\n");
    if let Some(k) = e.lock.or(e.unlock).filter(|k| k.is_section()) {
        let _ = writeln!(s, "\t{}(txn);", name(k.runtime_fn(e.unlock.is_some())));
    } else if let Some(k) = e.lock {
        let _ = writeln!(s, "\t{}(txn, {lock_arg});", name(k.runtime_fn(false)));
    } else if let Some(k) = e.unlock {
        let extra = if k == crate::plan::table::LockKind::SpinIrqsave {
            let f = params
                .iter()
                .find(|p| p.kind != ArgSpec::Kobj)
                .map(|p| p.name.clone())
                .unwrap_or_else(|| "0".into());
            format!(", {f}")
        } else {
            String::new()
        };
        let _ = writeln!(s, "\t{}(txn, {lock_arg}{extra});", name(k.runtime_fn(true)));
    }
}

/// A call deferred to commit (fgft_commit_push(), runtime.h); made at once
/// outside a transaction.
fn commit_body(s: &mut String, d: &str, e: &ApiEntry) {
    let a: Vec<String> = wparams(e)
        .iter()
        .map(|p| format!("(unsigned long){}", p.name))
        .collect();
    let direct = format!("{}({})", e.name, call_args(e));
    if let Some(i) = heap_param(e) {
        let p = &wparams(e)[i].name;
        s.push_str("\tif (!txn)\n");
        let _ = writeln!(s, "\t\tfgft_heap_del(&fgft_{d}_heap, {p});");
    }
    if e.is_void() {
        s.push_str("\tif (!txn) {\n");
        let _ = writeln!(s, "{}", fgft_stubs::wrap_call(2, &direct, ";"));
        s.push_str("\t\treturn;\n\t}\n");
    } else {
        // One statement: no braces (kernel style).
        s.push_str("\tif (!txn)\n");
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(2, &format!("return {direct}"), ";")
        );
    }
    let _ = writeln!(
        s,
        "{}",
        fgft_stubs::wrap_call(
            1,
            &format!("fgft_commit_push(txn, fgft_commit_{}, {})", e.name, four(a)),
            ";"
        )
    );
    if let Some(r) = e.commit_ret.as_deref().filter(|_| !e.is_void()) {
        let _ = writeln!(s, "\treturn {r};");
    }
}

/// The real call, the grants of what it returns, the compensation pushed.
fn call_body(s: &mut String, d: &str, e: &ApiEntry) {
    // Handed over to the kernel: out of the driver's heap, at commit (an
    // abort gives it back to the driver).
    if let Some(i) = heap_param(e) {
        let p = &wparams(e)[i].name;
        let _ = writeln!(s, "\tfgft_heap_out(&fgft_{d}_heap, txn, {p});");
    }
    if let Some(sv) = &e.save {
        let _ = writeln!(s, "\tsaved = (long)({sv});");
    }
    let call = format!("{}({})", e.name, call_args(e));
    if e.is_void() {
        let _ = writeln!(s, "{}", fgft_stubs::wrap_call(1, &call, ";"));
    } else {
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(1, &format!("ret = {call}"), ";")
        );
    }
    let grants = e
        .grant
        .iter()
        .map(|(len, r)| MoreGrant {
            addr: "ret".to_string(),
            len: len.clone(),
            rights: r.clone(),
            when: None,
        })
        .chain(e.grant_more.iter().cloned());
    for g in grants {
        let r = match g.rights.as_str() {
            "r" => "FGFT_R",
            // A new object: an abort drops it, so its old bytes are not
            // kept (restoring them would undo what the kernel linked it
            // into since: lists, hash chains, state).
            "new" => "FGFT_RW | FGFT_NOLOG",
            _ => "FGFT_RW",
        };
        match (&g.when, e.is_void()) {
            (Some(w), _) => {
                let _ = writeln!(
                    s,
                    "{}",
                    fgft_stubs::wrap_call(1, &format!("if (txn && ({w}))"), "")
                );
            }
            (None, true) => s.push_str("\tif (txn)\n"),
            (None, false) => s.push_str("\tif (txn && !IS_ERR_OR_NULL(ret))\n"),
        }
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                2,
                &format!("fgft_map(txn, {}, {}, {r})", g.addr, g.len),
                ";"
            )
        );
    }
    if notes_kret(e) {
        s.push_str("\tif (txn)\n\t\tfgft_kret(txn, ret);\n");
    }
    // Into the driver's heap when the transaction commits.
    if let (Some(_), Some((len, _))) = (&e.heap, &e.grant) {
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                1,
                &format!("fgft_heap_add(&fgft_{d}_heap, txn, ret, {len})"),
                ";"
            )
        );
    }
    if let Some(u) = &e.undo {
        let a: Vec<String> = captures(e, u)
            .iter()
            .map(|c| format!("(unsigned long){}", c.expr))
            .collect();
        match e.undo_if.as_deref().filter(|c| *c != "1") {
            None => s.push_str("\tif (txn)\n"),
            Some(cond) => {
                let _ = writeln!(
                    s,
                    "{}",
                    fgft_stubs::wrap_call(1, &format!("if (txn && ({cond}))"), "")
                );
            }
        }
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                2,
                &format!(
                    "fgft_undo_push{}(txn, fgft_undo_{}, {})",
                    if e.undo_unlocked { "_late" } else { "" },
                    e.name,
                    four(a)
                ),
                ";"
            )
        );
    } else if e.save.is_some() {
        s.push_str("\t(void)saved;\n");
    }
    // A result that comes back locked: held by the transaction (pushed
    // after the undo, so that an abort unlocks it before the undo runs).
    if let (Some(cond), Some(r)) = (&e.locks_result, &e.release) {
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                1,
                &format!("if (txn && !IS_ERR_OR_NULL(ret) && ({cond}))"),
                ""
            )
        );
        let _ = writeln!(
            s,
            "{}",
            fgft_stubs::wrap_call(
                2,
                &format!("fgft_call_locked(txn, (void *)ret, {})", release_name(r)),
                ";"
            )
        );
    }
    if !e.is_void() {
        s.push_str("\treturn ret;\n");
    }
}

/// Checks that the undo texts of the table capture at most four values.
pub fn check_captures(table: &Table) -> Vec<String> {
    let mut out = Vec::new();
    for e in table.apis.values() {
        if let Some(u) = &e.undo {
            let n = captures(e, u).len();
            if n > 4 {
                out.push(format!(
                    "api `{}`: undo `{u}` uses {n} values; the runtime's undo records hold 4",
                    e.name
                ));
            }
        }
        if e.commit && wparams(e).len() > 4 {
            out.push(format!(
                "api `{}`: a call deferred to commit has at most 4 arguments",
                e.name
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
