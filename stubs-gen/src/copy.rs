//! The copy functions of one marshaled type: copy-in of the members the
//! closure uses (into a copy), find-or-make of the copy, write-back of the
//! members it writes, and the cycle-safe copy-out.

use crate::wrap::wrap_call;
use crate::{EntrySpec, FieldHow, FieldSpec};
use std::fmt::Write as _;

/// The four signatures of the copy functions of type `i`, in the order of
/// [`emit_type`] (without `;`).
pub(crate) fn prototypes(e: &EntrySpec, i: usize) -> [String; 4] {
    [
        format!(
            "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void *cv)",
            e.fn_inf(i)
        ),
        format!(
            "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void **cp)",
            e.fn_in(i)
        ),
        format!(
            "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, void *cv, \
             const struct fgft_visit *up)",
            e.fn_outf(i)
        ),
        format!(
            "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, \
             const struct fgft_visit *up)",
            e.fn_out(i)
        ),
    ]
}

/// The accessor of the private area type `i` carries (checked to exist by
/// `EntrySpec::check`, on the spelling before typeof types got macro names).
fn accessor<'a>(_e: &EntrySpec, i: usize, private: &'a Accessors) -> &'a str {
    private[i].as_deref().unwrap_or("FGFT_NO_PRIVATE_ACCESSOR")
}

/// The private-area accessor of each marshaled type, by index.
pub(crate) type Accessors = [Option<String>];

/// Appends the copy functions of type `i`.
pub(crate) fn emit_type(s: &mut String, e: &EntrySpec, i: usize, private: &Accessors) {
    let protos = prototypes(e, i);
    copy_in_fields(s, e, i, &protos[0], private);
    copy_in(s, e, i, &protos[1], private);
    copy_out_fields(s, e, i, &protos[2], private);
    copy_out(s, e, i, &protos[3]);
}

/// `if (ret)\n\treturn ret;` at `indent`.
fn bail(s: &mut String, indent: usize, cond: &str) {
    let t = "\t".repeat(indent);
    let _ = writeln!(s, "{t}if ({cond})\n{t}\treturn ret;");
}

fn stmt(s: &mut String, indent: usize, text: &str) {
    let _ = writeln!(s, "{}", wrap_call(indent, text, ";"));
}

fn copy_in_fields(s: &mut String, e: &EntrySpec, i: usize, proto: &str, pa: &Accessors) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let _ = writeln!(
        s,
        "/* fgft: copy-in of {} ({}) for {} ({}) */",
        t.c_type, t.why, e.name, e.origin
    );
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n");
    let uses_o = t.fields.iter().any(|f| f.copy_in) || t.priv_area.is_some();
    if uses_o {
        let _ = writeln!(s, "\tconst {ty} *o = ov;");
        // Members are written through `c`: its type must not be const (a
        // type with no named member, `void` among them, stays as it is).
        let members = t.fields.iter().any(|f| f.copy_in && !f.path.is_empty());
        let cty = if members {
            crate::writable(ty)
        } else {
            ty.to_string()
        };
        let _ = writeln!(s, "\t{cty} *c = cv;");
    }
    let need_ret = t.fields.iter().any(|f| {
        f.copy_in && !f.path.is_empty() && !matches!(f.how, FieldHow::Assign | FieldHow::Bytes)
    }) || t.priv_area.is_some();
    if need_ret {
        s.push_str("\tint ret;\n");
    }
    if uses_o {
        s.push('\n');
    }
    for f in t.fields.iter().filter(|f| f.copy_in) {
        copy_in_field(s, e, f);
    }
    if let Some(p) = t.priv_area {
        let acc = accessor(e, i, pa);
        stmt(
            s,
            1,
            &format!("ret = {}(txn, {acc}(o), {acc}(c))", e.fn_inf(p)),
        );
        bail(s, 1, "ret");
    }
    if !uses_o {
        s.push_str("\t(void)txn;\n\t(void)ov;\n\t(void)cv;\n");
    }
    s.push_str("\treturn 0;\n}\n\n");
}

/// Copy-in of one member (`o` the original, `c` the copy).
fn copy_in_field(s: &mut String, e: &EntrySpec, f: &FieldSpec) {
    let p = &f.path;
    if p.is_empty() {
        s.push_str("\tmemcpy(c, o, sizeof(*o));\n");
        return;
    }
    match &f.how {
        FieldHow::Assign => {
            let _ = writeln!(s, "\tc->{p} = o->{p};");
        }
        FieldHow::Bytes => {
            let _ = writeln!(s, "\tFGFT_COPY(c->{p}, o->{p});");
        }
        FieldHow::Ptr { target } => {
            stmt(
                s,
                1,
                &format!("ret = {}(txn, o->{p}, (void **)&c->{p})", e.fn_in(*target)),
            );
            bail(s, 1, "ret");
        }
        FieldHow::Blob { len, elem: None } | FieldHow::PtrArray { len, .. } => {
            let rights = if f.copy_out { "FGFT_RW" } else { "FGFT_R" };
            stmt(
                s,
                1,
                &format!("ret = fgft_copy_blob(txn, o->{p}, {len}, {rights}, (void **)&c->{p})"),
            );
            bail(s, 1, "ret");
        }
        FieldHow::Blob {
            len,
            elem: Some(t2),
        } => {
            let et = &e.types[*t2];
            stmt(
                s,
                1,
                &format!(
                    "ret = fgft_copy_obj(txn, o->{p}, {len}, {len}, {}, (void **)&c->{p})",
                    et.rights.c()
                ),
            );
            bail(s, 1, "ret < 0");
            s.push_str("\tif (ret == 1) {\n\t\tsize_t i, n;\n\n");
            stmt(s, 2, &format!("n = ({len}) / sizeof(*o->{p})"));
            s.push_str("\t\tfor (i = 0; i < n; i++) {\n");
            stmt(
                s,
                3,
                &format!("ret = {}(txn, &o->{p}[i], &c->{p}[i])", e.fn_inf(*t2)),
            );
            bail(s, 3, "ret");
            s.push_str("\t\t}\n\t}\n");
        }
        FieldHow::Shared { len, rights } => {
            let _ = writeln!(s, "\tc->{p} = o->{p};");
            stmt(
                s,
                1,
                &format!(
                    "ret = fgft_grant_shared(txn, o->{p}, {len}, {})",
                    rights.c()
                ),
            );
            bail(s, 1, "ret");
        }
        FieldHow::Str => {
            stmt(
                s,
                1,
                &format!("ret = fgft_copy_str(txn, o->{p}, (void **)&c->{p})"),
            );
            bail(s, 1, "ret");
        }
        FieldHow::Container { outer, member } => {
            let ot = &e.types[*outer].c_type;
            let _ = writeln!(s, "\tif (o->{p}) {{");
            s.push_str("\t\tvoid *oc;\n\n");
            stmt(
                s,
                2,
                &format!(
                    "ret = {}(txn, container_of(o->{p}, {ot}, {member}), &oc)",
                    e.fn_in(*outer)
                ),
            );
            bail(s, 2, "ret");
            let _ = writeln!(s, "\t\tc->{p} = &(({ot} *)oc)->{member};");
            s.push_str("\t}\n");
        }
    }
}

/// Finds or makes the copy (large enough for a private area), then copies
/// the members in.
fn copy_in(s: &mut String, e: &EntrySpec, i: usize, proto: &str, pa: &Accessors) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let _ = writeln!(
        s,
        "/* fgft: find or make the copy of a {ty} ({}) */",
        e.name
    );
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n");
    let _ = writeln!(s, "\tconst {ty} *o = ov;");
    let _ = writeln!(s, "\tsize_t size = sizeof(*o);");
    s.push_str("\tint ret;\n\n");
    if let Some(p) = t.priv_area {
        let acc = accessor(e, i, pa);
        let _ = writeln!(s, "\tif (o)");
        stmt(
            s,
            2,
            &format!(
                "size = FGFT_PRIV_OFFSET(o, {acc}(o)) + sizeof({})",
                e.types[p].c_type
            ),
        );
    }
    stmt(
        s,
        1,
        &format!(
            "ret = fgft_copy_obj(txn, o, size, size, {}, cp)",
            t.rights.c()
        ),
    );
    bail(s, 1, "ret <= 0");
    let _ = writeln!(s, "\treturn {}(txn, o, *cp);", e.fn_inf(i));
    s.push_str("}\n\n");
}

/// The members copy-out visits: written ones, and the pointers it follows.
fn outs(fields: &[FieldSpec]) -> Vec<&FieldSpec> {
    fields
        .iter()
        .filter(|f| f.copy_out || follows(&f.how))
        .collect()
}

/// Members whose targets copy-out visits.
fn follows(how: &FieldHow) -> bool {
    matches!(
        how,
        FieldHow::Ptr { .. } | FieldHow::Blob { elem: Some(_), .. } | FieldHow::Container { .. }
    )
}

fn copy_out_fields(s: &mut String, e: &EntrySpec, i: usize, proto: &str, pa: &Accessors) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let _ = writeln!(
        s,
        "/* fgft: copy-out of {ty} for {} ({}) */",
        e.name, e.origin
    );
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n");
    let outs = outs(&t.fields);
    let uses = !outs.is_empty() || t.priv_area.is_some() || !t.out_ptrs.is_empty();
    if uses {
        let _ = writeln!(s, "\t{ty} *o = ov;");
        let _ = writeln!(s, "\t{ty} *c = cv;");
        let _ = writeln!(s, "\tstruct fgft_visit me = {{ .obj = ov, .up = up }};\n");
    }
    // Follow pointers first (the original's pointers, before write-back).
    for f in &outs {
        follow_pointer(s, e, f);
    }
    for f in outs
        .iter()
        .filter(|f| f.copy_out || matches!(f.how, FieldHow::Blob { elem: Some(_), .. }))
        .filter(|f| !(f.how == FieldHow::Assign && t.out_ptrs.contains(&f.path)))
    {
        write_back_field(s, e, f);
    }
    // Pointer values copied back: a pointer into a copy is stored as its
    // original's (the thunk checked every one before copy-out).
    for p in &t.out_ptrs {
        let (om, cm) = (member("o", p), member("c", p));
        stmt(s, 1, &format!("{om} = fgft_orig_or_self(txn, {cm})"));
    }
    if let Some(p) = t.priv_area {
        let acc = accessor(e, i, pa);
        stmt(
            s,
            1,
            &format!("{}(txn, {acc}(o), {acc}(c), &me)", e.fn_outf(p)),
        );
    }
    let uses_c = t.priv_area.is_some()
        || !t.out_ptrs.is_empty()
        || outs.iter().any(|f| {
            f.copy_out && !matches!(f.how, FieldHow::Blob { elem: Some(_), .. } | FieldHow::Str)
        });
    let uses_me = t.priv_area.is_some() || outs.iter().any(|f| follows(&f.how));
    if !uses {
        s.push_str("\t(void)txn;\n\t(void)ov;\n\t(void)cv;\n\t(void)up;\n");
    } else {
        if !uses_c {
            s.push_str("\t(void)c;\n");
        }
        if !uses_me {
            s.push_str("\t(void)me;\n");
        }
    }
    s.push_str("}\n\n");
}

/// Copy-out of the object a marshaled pointer member points at.
fn follow_pointer(s: &mut String, e: &EntrySpec, f: &FieldSpec) {
    if let FieldHow::Ptr { target } = f.how {
        stmt(
            s,
            1,
            &format!("{}(txn, (void *)o->{}, &me)", e.fn_out(target), f.path),
        );
    }
    if let FieldHow::Container { outer, member } = &f.how {
        let ot = &e.types[*outer].c_type;
        let _ = writeln!(s, "\tif (o->{})", f.path);
        stmt(
            s,
            2,
            &format!(
                "{}(txn, (void *)container_of(o->{}, {ot}, {member}), &me)",
                e.fn_out(*outer),
                f.path
            ),
        );
    }
}

/// Write-back of one member from the copy `c` to the original `o`.
fn write_back_field(s: &mut String, e: &EntrySpec, f: &FieldSpec) {
    let p = &f.path;
    if p.is_empty() {
        s.push_str("\tmemcpy(o, c, sizeof(*o));\n");
        return;
    }
    match &f.how {
        FieldHow::Assign | FieldHow::Shared { .. } => {
            let _ = writeln!(s, "\to->{p} = c->{p};");
        }
        FieldHow::Bytes => {
            let _ = writeln!(s, "\tFGFT_COPY(o->{p}, c->{p});");
        }
        FieldHow::Ptr { .. } | FieldHow::Container { .. } => {
            stmt(s, 1, &format!("o->{p} = fgft_orig_or_self(txn, c->{p})"));
        }
        FieldHow::Blob { len, elem: None } | FieldHow::PtrArray { len, .. } => {
            stmt(s, 1, &format!("fgft_blob_out(txn, (void *)o->{p}, {len})"));
        }
        FieldHow::Blob {
            len,
            elem: Some(t2),
        } => elem_loop(s, p, len, &e.fn_outf(*t2)),
        FieldHow::Str => {}
    }
}

/// The cycle-safe copy-out: write back the members of the copy of `ov`
/// unless the chain `up` visits it already.
fn copy_out(s: &mut String, e: &EntrySpec, i: usize, proto: &str) {
    let ty = &e.types[i].c_type;
    let _ = writeln!(
        s,
        "/* fgft: copy-out of a {ty} for {} ({}) */",
        e.name, e.origin
    );
    cycle_safe(s, proto, &e.fn_outf(i));
}

/// The body of a cycle-safe visit: `fields` on the copy of `ov`, unless the
/// chain `up` visits `ov` already or it has no copy.
fn cycle_safe(s: &mut String, proto: &str, fields: &str) {
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n\tvoid *c;\n\n");
    s.push_str("\tif (!ov || fgft_visited(up, ov))\n\t\treturn;\n");
    s.push_str("\tc = fgft_obj_to_copy(txn, ov);\n");
    s.push_str("\tif (!c || c == ov)\n\t\treturn;\n");
    let _ = writeln!(s, "\t{fields}(txn, ov, c, up);");
    s.push_str("}\n\n");
}

/// `fields` on each element of array member `p` (`len` bytes) and its
/// copy, when the array has one.
fn elem_loop(s: &mut String, p: &str, len: &str, fields: &str) {
    let _ = writeln!(s, "\tif (o->{p}) {{");
    let _ = writeln!(s, "\t\ttypeof(o->{p}) ce;");
    s.push_str("\t\tsize_t i, n;\n\n");
    stmt(s, 2, &format!("ce = fgft_obj_to_copy(txn, o->{p})"));
    stmt(s, 2, &format!("n = ({len}) / sizeof(*o->{p})"));
    let _ = writeln!(
        s,
        "{}",
        wrap_call(
            2,
            &format!("for (i = 0; ce && ce != o->{p} && i < n; i++)"),
            ""
        )
    );
    stmt(s, 3, &format!("{fields}(txn, &o->{p}[i], &ce[i], &me)"));
    s.push_str("\t}\n");
}

/// Member `path` of the object `base` points to (`*base` for the whole
/// object, when it is itself a pointer).
fn member(base: &str, path: &str) -> String {
    if path.is_empty() {
        format!("*{base}")
    } else {
        format!("{base}->{path}")
    }
}

/// The types whose copy-out stores a pointer value into a kernel object,
/// itself or through the objects it follows: those the entry's thunk
/// checks before copy-out (`fgft_out_ptr()`).  None for an in-place entry
/// (nothing is copied out).
pub(crate) fn checked_types(e: &EntrySpec) -> Vec<bool> {
    if e.in_place {
        return vec![false; e.types.len()];
    }
    let mut need: Vec<bool> = e
        .types
        .iter()
        .map(|t| {
            !t.out_ptrs.is_empty()
                || t.fields.iter().any(|f| {
                    f.copy_out && matches!(f.how, FieldHow::Ptr { .. } | FieldHow::Container { .. })
                })
        })
        .collect();
    loop {
        let mut changed = false;
        for i in 0..e.types.len() {
            if need[i] {
                continue;
            }
            let t = &e.types[i];
            let via = t.priv_area.is_some_and(|p| need[p])
                || t.fields.iter().any(|f| match &f.how {
                    FieldHow::Ptr { target } => need[*target],
                    FieldHow::Container { outer, .. } => need[*outer],
                    FieldHow::Blob { elem: Some(t2), .. } => need[*t2],
                    _ => false,
                });
            if via {
                need[i] = true;
                changed = true;
            }
        }
        if !changed {
            return need;
        }
    }
}

/// The two signatures of the pointer checks of type `i` (without `;`).
pub(crate) fn check_prototypes(e: &EntrySpec, i: usize) -> [String; 2] {
    [
        format!(
            "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, void *cv, \
             const struct fgft_visit *up)",
            e.fn_chkf(i)
        ),
        format!(
            "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, \
             const struct fgft_visit *up)",
            e.fn_chk(i)
        ),
    ]
}

/// The pointer checks of type `i` (a type of [`checked_types`]): what its
/// copy-out will store as pointer values, each checked against the
/// original's (`fgft_out_ptr()`), then the objects it follows, visited as
/// copy-out visits them.
pub(crate) fn emit_check(s: &mut String, e: &EntrySpec, i: usize, need: &[bool], pa: &Accessors) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let protos = check_prototypes(e, i);
    let _ = writeln!(
        s,
        "/*\n * fgft: the pointers copy-out of {ty} stores for {} ({}), checked\n * in the body before copy-out\n */",
        e.name, e.origin
    );
    let _ = writeln!(s, "{}", wrap_call(0, &protos[0], ""));
    s.push_str("{\n");
    let _ = writeln!(s, "\t{ty} *o = ov;");
    let _ = writeln!(s, "\t{ty} *c = cv;");
    let _ = writeln!(s, "\tstruct fgft_visit me = {{ .obj = ov, .up = up }};\n");
    let mut used_me = false;
    let mut stored: Vec<String> = t
        .fields
        .iter()
        .filter(|f| {
            f.copy_out && matches!(f.how, FieldHow::Ptr { .. } | FieldHow::Container { .. })
        })
        .map(|f| f.path.clone())
        .collect();
    stored.extend(t.out_ptrs.iter().cloned());
    stored.sort();
    stored.dedup();
    for p in &stored {
        stmt(
            s,
            1,
            &format!("fgft_out_ptr({}, {})", member("o", p), member("c", p)),
        );
    }
    for f in outs(&t.fields) {
        match &f.how {
            FieldHow::Ptr { target } if need[*target] => {
                used_me = true;
                stmt(
                    s,
                    1,
                    &format!("{}(txn, (void *)o->{}, &me)", e.fn_chk(*target), f.path),
                );
            }
            FieldHow::Container { outer, member: m } if need[*outer] => {
                used_me = true;
                let ot = &e.types[*outer].c_type;
                let _ = writeln!(s, "\tif (o->{})", f.path);
                stmt(
                    s,
                    2,
                    &format!(
                        "{}(txn, (void *)container_of(o->{}, {ot}, {m}), &me)",
                        e.fn_chk(*outer),
                        f.path
                    ),
                );
            }
            FieldHow::Blob {
                len,
                elem: Some(t2),
            } if need[*t2] => {
                used_me = true;
                elem_loop(s, &f.path, len, &e.fn_chkf(*t2));
            }
            _ => {}
        }
    }
    let mut used_c = !stored.is_empty();
    if let Some(p) = t.priv_area.filter(|p| need[*p]) {
        used_me = true;
        used_c = true;
        let acc = accessor(e, i, pa);
        stmt(
            s,
            1,
            &format!("{}(txn, {acc}(o), {acc}(c), &me)", e.fn_chkf(p)),
        );
    }
    if !used_c {
        s.push_str("\t(void)c;\n");
    }
    if !used_me {
        s.push_str("\t(void)me;\n");
    }
    s.push_str("}\n\n");
    let _ = writeln!(
        s,
        "/* fgft: the pointer checks of a {ty} for {} ({}), cycle-safe */",
        e.name, e.origin
    );
    cycle_safe(s, &protos[1], &e.fn_chkf(i));
}
