//! The argument block, the thunk and the stub of one entry point.

use crate::wrap::wrap_call;
use crate::{normalize, signature, AbortReturn, EntrySpec, FieldHow, ParamHow};
use std::fmt::Write as _;

pub(crate) fn args_struct(e: &EntrySpec) -> String {
    format!("fgft_args_{}", e.name)
}

pub(crate) fn emit_thunk(s: &mut String, e: &EntrySpec, checked: &[bool]) {
    let _ = writeln!(
        s,
        "/* fgft: arguments of {} across fgft_txn_call() */",
        e.name
    );
    let _ = writeln!(s, "struct {} {{", args_struct(e));
    for p in &e.params {
        let _ = writeln!(s, "\t{};", normalize(&p.decl));
    }
    if e.ret.trim() != "void" {
        let r = e.ret.trim();
        let sep = if r.ends_with('*') { "" } else { " " };
        let _ = writeln!(s, "\t{r}{sep}ret;");
    }
    if e.params.is_empty() && e.ret.trim() == "void" {
        s.push_str("\tint unused;\n");
    }
    s.push_str("};\n\n");
    let _ = writeln!(
        s,
        "/* fgft: runs the SFI copy of {} ({}) */",
        e.name, e.origin
    );
    let _ = writeln!(s, "static long fgft_thunk_{}(void *arg)", e.name);
    s.push_str("{\n");
    let checks = out_checks(e, checked);
    let _ = writeln!(s, "\tstruct {} *a = arg;", args_struct(e));
    if !checks.is_empty() {
        s.push_str("\tstruct fgft_txn *txn = fgft_current();\n");
    }
    s.push('\n');
    let args: Vec<String> = e.params.iter().map(|p| format!("a->{}", p.name)).collect();
    let call = format!("{}({})", e.sfi_name(), args.join(", "));
    if e.ret.trim() == "void" {
        let _ = writeln!(s, "{}", wrap_call(1, &call, ";"));
        if e.params.is_empty() {
            s.push_str("\t(void)a;\n");
        }
    } else if let Some(len) = ret_ptr_len(&e.ret) {
        // A pointer goes back to the kernel only through the boundary:
        // translated from a copy, or inside what the call was granted.
        let _ = writeln!(
            s,
            "{}",
            wrap_call(1, &format!("a->ret = fgft_ret_ptr({call}, {len})"), ";")
        );
    } else {
        let _ = writeln!(s, "{}", wrap_call(1, &format!("a->ret = {call}"), ";"));
    }
    // A value the kernel's caller trusts a range of (a count, a
    // frequency): outside it the call fails, as a fault does.
    if let (Some((ok, why)), false) = (&e.ret_ok, e.ret.trim() == "void") {
        let _ = writeln!(s, "\t/* {} */", why.replace("*/", "* /"));
        let _ = writeln!(s, "{}", wrap_call(1, &format!("if (!({ok}))"), ""));
        s.push_str("\t\tfgft_fail_cause(FGFT_CAUSE_RET);\n");
    }
    // The pointers copy-out will store in kernel objects, checked while
    // the body can still fail (copy-out writes the originals).
    for c in &checks {
        let _ = writeln!(s, "{}", wrap_call(1, c, ";"));
    }
    s.push_str("\treturn 0;\n}\n\n");
}

/// The thunk's calls of the pointer checks, one per parameter whose
/// marshaled type copy-out may store pointers through.
fn out_checks(e: &EntrySpec, checked: &[bool]) -> Vec<String> {
    let mut v = Vec::new();
    for p in &e.params {
        let n = &p.name;
        match &p.how {
            // The body got the copy: the checks start at its original.
            ParamHow::Obj { ty } if checked[*ty] => {
                v.push(format!(
                    "{}(txn, fgft_obj_to_orig(txn, a->{n}), NULL)",
                    e.fn_chk(*ty)
                ));
            }
            ParamHow::Container { outer, member } if checked[*outer] => {
                let ot = &e.types[*outer].c_type;
                v.push(format!(
                    "{}(txn, fgft_obj_to_orig(txn, container_of(a->{n}, {ot}, {member})), NULL)",
                    e.fn_chk(*outer)
                ));
            }
            _ => {}
        }
    }
    v
}

/// For an entry returning a data pointer, the bytes behind it that the
/// kernel's caller may read (`fgft_ret_ptr()`'s length): the pointee's size,
/// 1 for `void *`.  None for other returns (function pointers go through
/// the indirect-call dispatch).
fn ret_ptr_len(ret: &str) -> Option<String> {
    let r = ret.trim();
    if !r.ends_with('*') || r.contains('(') {
        return None;
    }
    let pointee: Vec<&str> = r[..r.len() - 1]
        .split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "__iomem" | "__user" | "__rcu"))
        .collect();
    if pointee == ["void"] {
        Some("1".into())
    } else {
        Some("sizeof(*a->ret)".into())
    }
}

pub(crate) fn emit_stub(s: &mut String, e: &EntrySpec) {
    let void = e.ret.trim() == "void";
    let _ = writeln!(
        s,
        "/*\n * fgft: stub of {} ({}): runs it as a transaction.",
        e.name, e.origin
    );
    match &e.abort {
        AbortReturn::Void => s.push_str(
            " * On abort the call has no effect (outputs untouched; the abort is\n * counted by the runtime).\n",
        ),
        AbortReturn::Error => s.push_str(" * On abort it returns the entry's error code.\n"),
        AbortReturn::Value(v) => match &e.abort_extra.run {
            Some((run, why)) => {
                let _ = writeln!(
                    s,
                    " * On abort it runs {}, and returns {v}: {why}.",
                    run_prose(run)
                );
            }
            None => {
                let _ = writeln!(s, " * On abort it returns {v}.");
            }
        },
    }
    if let Some(r) = restored(e) {
        let what = match &r.run {
            Some(run) => format!("runs {}, and returns {}", run_prose(run), r.value),
            None => format!("returns {}", r.value),
        };
        let _ = writeln!(
            s,
            " * Once the body ran and the device was restored, it {what} instead: {}.",
            r.why
        );
    }
    if e.retry {
        s.push_str(" * An aborted call runs once more (recovery policy retry): a second\n * abort returns.\n");
    }
    s.push_str(" */\n");
    let st = if e.is_static { "static " } else { "" };
    let sig = format!("{st}{}", signature(&e.ret, &e.stub_name(), &e.params));
    let _ = writeln!(s, "{}", wrap_call(0, &sig, ""));
    s.push_str("{\n");
    let _ = writeln!(s, "\tstruct {} a = {{", args_struct(e));
    for p in &e.params {
        let _ = writeln!(s, "\t\t.{0} = {0},", p.name);
    }
    s.push_str("\t};\n");
    s.push_str("\tstruct fgft_txn *txn;\n");
    if e.retry {
        // The retry's start (fgft_txn_retry()), 0 before one.
        s.push_str("\tu64 retried = 0;\n");
    }
    s.push_str("\tint err;\n");
    if e.stage_times {
        s.push_str("\tu64 fgft_ts[FGFT_ST_NR + 1];\n");
    }
    s.push('\n');
    dev_ensure(s, e);
    if e.retry {
        s.push_str("again:\n");
    }
    stamp(s, e, "FGFT_ST_BEGIN");
    begin(s, e);
    stamp(s, e, "FGFT_ST_GRANT");
    marshal(s, e);
    stamp(s, e, "FGFT_ST_BODY");
    let _ = writeln!(s, "\tfgft_txn_call(txn, fgft_thunk_{}, &a);", e.name);
    stamp(s, e, "FGFT_ST_COPY_OUT");
    s.push_str("\tif (fgft_txn_failed(txn))\n\t\tgoto abort;\n");
    copy_out(s, e);
    stamp(s, e, "FGFT_ST_COMMIT");
    s.push_str("\tfgft_txn_commit(txn);\n");
    if e.retry {
        let _ = writeln!(
            s,
            "\tif (retried)\n\t\tfgft_txn_retried(&{}, retried);",
            e.ep_name()
        );
    }
    if e.stage_times {
        stamp(s, e, "FGFT_ST_NR");
        let _ = writeln!(s, "\tfgft_stage_add(&{}, fgft_ts);", e.ep_name());
    }
    if void {
        s.push_str("\treturn;\n");
    } else {
        s.push_str("\treturn a.ret;\n");
    }
    if e.retry {
        // Recovery policy `retry`: the abort left no trace; once more (not
        // after a call no abort undoes, nor a second time).
        s.push_str("abort:\n\tif (!retried && !fgft_txn_retriable(txn))\n\t\tretried = 1;\n");
        s.push_str("\terr = fgft_txn_abort(txn);\n");
        let _ = writeln!(
            s,
            "\tif (!retried) {{\n\t\tretried = fgft_txn_retry(&{}, err);\n\t\tif (retried)\n\t\t\tgoto again;\n\t}}",
            e.ep_name()
        );
    } else {
        s.push_str("abort:\n\terr = fgft_txn_abort(txn);\n");
    }
    match restored(e) {
        Some(r) => {
            // The abort restored the device (or queued its restore).
            s.push_str("\t(void)err;\n");
            if let Some(run) = &r.run {
                s.push_str(&run_lines(1, run));
            }
            let _ = writeln!(s, "\treturn {};", r.value);
        }
        None => s.push_str(&abort_return(e, 1)),
    }
    s.push_str("}\n");
}

/// Why an abort of `e` restores its device even when the call touched no
/// register: its restored abort relies on the restore, or an access the
/// runtime cannot see.
pub(crate) fn always_restore(e: &EntrySpec) -> Option<String> {
    if restored(e).is_some() {
        return Some("its abort relies on the device restore".into());
    }
    let why = e.always_restore.as_ref()?;
    e.dev_ops.as_ref()?;
    Some(format!("restore always: {why}"))
}

/// The restored-device abort of `e`, when it has one and a device
/// checkpoint to restore.
fn restored(e: &EntrySpec) -> Option<&crate::RestoredAbort> {
    e.dev_ops.as_ref()?;
    e.abort_extra.restored.as_ref()
}

/// Stamp `k` of a `--stage-times` stub: taken before stage `k`.
fn stamp(s: &mut String, e: &EntrySpec, k: &str) {
    if e.stage_times {
        let _ = writeln!(s, "\tfgft_ts[{k}] = fgft_stamp();");
    }
}

/// The device's checkpoint callbacks, registered on first use; the
/// transaction takes the checkpoint at begin, restores it on abort.
fn dev_ensure(s: &mut String, e: &EntrySpec) {
    if let Some(ops) = &e.dev_ops {
        // The device's checkpoint callbacks, registered on first use; the
        // transaction takes the checkpoint at begin, restores it on abort.
        let _ = writeln!(
            s,
            "{}",
            wrap_call(
                1,
                &format!("err = fgft_dev_ensure((void *){}, &{ops})", e.dev_key),
                ";"
            )
        );
        let ret = abort_return(e, 2);
        if ret.lines().count() == 1 {
            s.push_str("\tif (err)\n");
            s.push_str(&ret);
        } else {
            s.push_str("\tif (err) {\n");
            s.push_str(&ret);
            s.push_str("\t}\n");
        }
    }
}

/// Begins the transaction; with isolation off, calls the original.
fn begin(s: &mut String, e: &EntrySpec) {
    let void = e.ret.trim() == "void";
    let _ = writeln!(
        s,
        "{}",
        wrap_call(
            1,
            &format!(
                "txn = fgft_txn_begin(&{}, {})",
                e.ep_name(),
                // No device key: the driver registers no device.
                if e.dev_key == "NULL" {
                    "NULL".to_string()
                } else {
                    format!("(void *){}", e.dev_key)
                }
            ),
            ";"
        )
    );
    // Isolation off: the original.
    let orig_args: Vec<String> = e.params.iter().map(|p| p.name.clone()).collect();
    let orig = format!(
        "{}({})",
        e.orig.as_deref().unwrap_or(&e.name),
        orig_args.join(", ")
    );
    if e.stage_times {
        // Timed from the begin stamp: the call with isolation off.
        s.push_str("\tif (!txn) {\n");
        let call = if void {
            orig
        } else {
            format!("a.ret = {orig}")
        };
        let _ = writeln!(s, "{}", wrap_call(2, &call, ";"));
        let _ = writeln!(
            s,
            "\t\tfgft_stage_plain(&{}, fgft_ts[FGFT_ST_BEGIN]);",
            e.ep_name()
        );
        s.push_str(if void {
            "\t\treturn;\n"
        } else {
            "\t\treturn a.ret;\n"
        });
        s.push_str("\t}\n");
    } else if void {
        s.push_str("\tif (!txn) {\n");
        let _ = writeln!(s, "{}", wrap_call(2, &orig, ";"));
        s.push_str("\t\treturn;\n");
        s.push_str("\t}\n");
    } else {
        s.push_str("\tif (!txn)\n");
        let _ = writeln!(s, "{}", wrap_call(2, &format!("return {orig}"), ";"));
    }
    s.push_str("\tif (IS_ERR(txn)) {\n\t\terr = PTR_ERR(txn);\n");
    s.push_str(&abort_return(e, 2));
    s.push_str("\t}\n");
}

/// Copies of the globals, copies of the arguments.  (The kernel variables
/// SFI code reads are granted once, by the SFI module at load: the grant
/// stage of `--stage-times` is empty.)
fn marshal(s: &mut String, e: &EntrySpec) {
    stamp(s, e, "FGFT_ST_COPY_IN");
    if e.in_place {
        place_params(s, e);
        return;
    }
    for g in &e.globals {
        let _ = writeln!(s, "\terr = fgft_global_in_{}_{}(txn);", e.driver, g.name);
        s.push_str("\tif (err)\n\t\tgoto abort;\n");
    }
    for p in &e.params {
        let n = &p.name;
        let line = match &p.how {
            ParamHow::Value => continue,
            ParamHow::Obj { ty } => format!("err = {}(txn, {n}, (void **)&a.{n})", e.fn_in(*ty)),
            ParamHow::Blob { len, rights, .. } => format!(
                "err = fgft_copy_blob(txn, {n}, {len}, {}, (void **)&a.{n})",
                rights.c()
            ),
            ParamHow::Str => format!("err = fgft_copy_str(txn, {n}, (void **)&a.{n})"),
            ParamHow::Shared {
                len,
                rights,
                members,
            } => {
                let mut line = format!("err = fgft_grant_shared(txn, {n}, {len}, {})", rights.c());
                for (m, mlen, mr) in members {
                    let _ = writeln!(s, "{}", wrap_call(1, &line, ";"));
                    s.push_str("\tif (err)\n\t\tgoto abort;\n");
                    line = format!("err = fgft_grant_shared(txn, {n}->{m}, {mlen}, {})", mr.c());
                }
                line
            }
            ParamHow::Container { outer, member } => {
                container_param(s, e, n, *outer, member);
                continue;
            }
        };
        let _ = writeln!(s, "{}", wrap_call(1, &line, ";"));
        s.push_str("\tif (err)\n\t\tgoto abort;\n");
    }
}

/// A pointer to a member of a marshaled object: the enclosing object is
/// copied, and the argument points into the copy.
fn container_param(s: &mut String, e: &EntrySpec, n: &str, outer: usize, member: &str) {
    let ot = &e.types[outer].c_type;
    let _ = writeln!(s, "\t{{");
    let _ = writeln!(s, "\t\t{ot} *oc = NULL;");
    let owner = owner_link(e, outer);
    if owner.is_some() {
        s.push_str("\t\tvoid *owner;\n");
    }
    s.push('\n');
    if let Some((ow, path)) = &owner {
        // The container is another object's private area: copy
        // the owner first, so the container is found inside its
        // copy (one copy of the memory, as the code expects).
        let _ = writeln!(
            s,
            "\t\t/* {ot} is the private area of a {} */",
            e.types[*ow].c_type
        );
        let _ = writeln!(
            s,
            "{}",
            wrap_call(
                2,
                &format!(
                    "err = {}(txn, container_of({n}, {ot}, {member})->{path}, &owner)",
                    e.fn_in(*ow)
                ),
                ";"
            )
        );
        s.push_str("\t\tif (!err)\n");
    }
    let _ = writeln!(
        s,
        "{}",
        wrap_call(
            2 + usize::from(owner.is_some()),
            &format!(
                "err = {}(txn, container_of({n}, {ot}, {member}), (void **)&oc)",
                e.fn_in(outer)
            ),
            ";"
        )
    );
    let _ = writeln!(s, "\t\tif (!err && oc)\n\t\t\ta.{n} = &oc->{member};");
    let _ = writeln!(s, "\t}}");
    s.push_str("\tif (err)\n\t\tgoto abort;\n");
}

/// In-place marshaling: the stores of the body are logged, and the
/// globals and the arguments' objects granted where they are.
fn place_params(s: &mut String, e: &EntrySpec) {
    s.push_str("\tfgft_txn_log_stores(txn);\n");
    // A read-only global is granted while the driver is registered.
    for g in e.globals.iter().filter(|g| !g.mapped) {
        let _ = writeln!(s, "\terr = fgft_global_place_{}_{}(txn);", e.driver, g.name);
        s.push_str("\tif (err)\n\t\tgoto abort;\n");
    }
    for p in &e.params {
        let n = &p.name;
        let line = match &p.how {
            ParamHow::Value => continue,
            ParamHow::Obj { ty } => format!("err = {}(txn, {n})", e.fn_place(*ty)),
            ParamHow::Blob { len, rights, .. } => {
                format!("err = fgft_place_blob(txn, {n}, {len}, {})", rights.c())
            }
            ParamHow::Str => format!("err = fgft_place_str(txn, {n})"),
            ParamHow::Shared {
                len,
                rights,
                members,
            } => {
                let mut line = format!("err = fgft_grant_shared(txn, {n}, {len}, {})", rights.c());
                for (m, mlen, mr) in members {
                    let _ = writeln!(s, "{}", wrap_call(1, &line, ";"));
                    s.push_str("\tif (err)\n\t\tgoto abort;\n");
                    line = format!("err = fgft_grant_shared(txn, {n}->{m}, {mlen}, {})", mr.c());
                }
                line
            }
            ParamHow::Container { outer, member } => {
                let ot = &e.types[*outer].c_type;
                // A private area is placed with its owner (one grant).
                let target = match owner_link(e, *outer) {
                    Some((ow, path)) => format!(
                        "{}(txn, container_of({n}, {ot}, {member})->{path})",
                        e.fn_place(ow)
                    ),
                    None => format!(
                        "{}(txn, container_of({n}, {ot}, {member}))",
                        e.fn_place(*outer)
                    ),
                };
                format!("err = {target}")
            }
        };
        let _ = writeln!(s, "{}", wrap_call(1, &line, ";"));
        s.push_str("\tif (err)\n\t\tgoto abort;\n");
    }
}

/// Copy-out of the arguments and globals after a body that did not fail
/// (in place: nothing, the body wrote where they are).
fn copy_out(s: &mut String, e: &EntrySpec) {
    if e.in_place {
        return;
    }
    for p in &e.params {
        let n = &p.name;
        match &p.how {
            ParamHow::Obj { ty } => {
                let _ = writeln!(s, "\t{}(txn, (void *){n}, NULL);", e.fn_out(*ty));
            }
            ParamHow::Container { outer, member } => {
                let ot = &e.types[*outer].c_type;
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!(
                            "{}(txn, container_of({n}, {ot}, {member}), NULL)",
                            e.fn_out(*outer)
                        ),
                        ";"
                    )
                );
            }
            ParamHow::Blob {
                len,
                copy_out: true,
                ..
            } => {
                let _ = writeln!(s, "\tfgft_blob_out(txn, (void *){n}, {len});");
            }
            _ => {}
        }
    }
    for g in e.globals.iter().filter(|g| g.copy_out) {
        let _ = writeln!(s, "\tfgft_global_out_{}_{}(txn);", e.driver, g.name);
    }
}

/// When objects of type `t` are the private area of objects of another
/// marshaled type, and `t` has a marshaled pointer back to its owner: the
/// owner's type and that member.
fn owner_link(e: &EntrySpec, t: usize) -> Option<(usize, String)> {
    let ow = e.types.iter().position(|o| o.priv_area == Some(t))?;
    let f = e.types[t]
        .fields
        .iter()
        .find(|f| f.copy_in && matches!(f.how, FieldHow::Ptr { target } if target == ow))?;
    Some((ow, f.path.clone()))
}

fn abort_return(e: &EntrySpec, indent: usize) -> String {
    let tabs = "\t".repeat(indent);
    match &e.abort {
        // At the end of the function a `return;` would be noise.
        AbortReturn::Void if indent == 1 => format!("{tabs}(void)err;\n"),
        AbortReturn::Void => format!("{tabs}(void)err;\n{tabs}return;\n"),
        AbortReturn::Error => format!("{tabs}return err;\n"),
        AbortReturn::Value(v) => {
            let run = match &e.abort_extra.run {
                Some((r, _)) => run_lines(indent, r),
                None => String::new(),
            };
            format!("{tabs}(void)err;\n{run}{tabs}return {v};\n")
        }
    }
}

/// The statements of a table's `run`, one per line.
fn run_lines(indent: usize, run: &str) -> String {
    run.split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| format!("{}\n", wrap_call(indent, t, ";")))
        .collect()
}

/// The statements of a table's `run` for a comment: `a(x) and b(y)`.
fn run_prose(run: &str) -> String {
    let st: Vec<&str> = run
        .split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    match st.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => st.join(""),
    }
}
