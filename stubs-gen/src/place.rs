//! In-place marshaling (the I/O path, [`crate::EntrySpec::in_place`]): the
//! objects the closure uses are granted where they are instead of copied.
//! One pair of functions per marshaled type walks what the closure reaches
//! from an object (the members it follows, arrays, containers, the private
//! area) and grants each object once (`fgft_place_obj()`); the runtime logs
//! the old bytes of every store the body makes, and writes them back on
//! abort.  Nothing is copied out.

use crate::wrap::wrap_call;
use crate::{EntrySpec, FieldHow, FieldSpec, Rights};
use std::fmt::Write as _;

/// The two signatures of the place functions of type `i`, in the order of
/// [`emit_type`] (without `;`).
pub(crate) fn prototypes(e: &EntrySpec, i: usize) -> [String; 2] {
    [
        format!(
            "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov)",
            e.fn_placef(i)
        ),
        format!(
            "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov)",
            e.fn_place(i)
        ),
    ]
}

/// Appends the place functions of type `i`.
pub(crate) fn emit_type(s: &mut String, e: &EntrySpec, i: usize, private: &[Option<String>]) {
    let protos = prototypes(e, i);
    place_fields(s, e, i, &protos[0], private);
    place(s, e, i, &protos[1], private);
}

fn stmt(s: &mut String, indent: usize, text: &str) {
    let _ = writeln!(s, "{}", wrap_call(indent, text, ";"));
}

fn bail(s: &mut String, indent: usize, cond: &str) {
    let t = "\t".repeat(indent);
    let _ = writeln!(s, "{t}if ({cond})\n{t}\treturn ret;");
}

/// Whether placing member `f` does anything (a scalar is granted with its
/// object).
fn walks(f: &FieldSpec) -> bool {
    !f.path.is_empty() && !matches!(f.how, FieldHow::Assign | FieldHow::Bytes)
}

fn place_fields(s: &mut String, e: &EntrySpec, i: usize, proto: &str, pa: &[Option<String>]) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let _ = writeln!(
        s,
        "/* fgft: in-place grants of what {} ({}) leads to, for {} ({}) */",
        t.c_type, t.why, e.name, e.origin
    );
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n");
    let fields: Vec<&FieldSpec> = t.fields.iter().filter(|f| f.copy_in && walks(f)).collect();
    if fields.is_empty() && t.priv_area.is_none() {
        s.push_str("\t(void)txn;\n\t(void)ov;\n\treturn 0;\n}\n\n");
        return;
    }
    let _ = writeln!(s, "\tconst {ty} *o = ov;");
    s.push_str("\tint ret;\n\n");
    for f in fields {
        place_field(s, e, f);
    }
    if let Some(p) = t.priv_area {
        let acc = pa[i].as_deref().unwrap_or("FGFT_NO_PRIVATE_ACCESSOR");
        stmt(s, 1, &format!("ret = {}(txn, {acc}(o))", e.fn_placef(p)));
        bail(s, 1, "ret");
    }
    s.push_str("\treturn 0;\n}\n\n");
}

/// The grants member `f` of `o` leads to.
fn place_field(s: &mut String, e: &EntrySpec, f: &FieldSpec) {
    let p = &f.path;
    match &f.how {
        FieldHow::Assign | FieldHow::Bytes => {}
        FieldHow::Ptr { target } => {
            stmt(s, 1, &format!("ret = {}(txn, o->{p})", e.fn_place(*target)));
            bail(s, 1, "ret");
        }
        FieldHow::Blob { len, elem: None } => {
            let rights = if f.copy_out { "FGFT_RW" } else { "FGFT_R" };
            stmt(
                s,
                1,
                &format!("ret = fgft_place_obj(txn, o->{p}, {len}, {rights})"),
            );
            bail(s, 1, "ret < 0");
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
                    "ret = fgft_place_obj(txn, o->{p}, {len}, {})",
                    et.rights.c()
                ),
            );
            bail(s, 1, "ret < 0");
            let walk = et.fields.iter().any(|f| f.copy_in && walks(f)) || et.priv_area.is_some();
            if walk {
                s.push_str("\tif (ret == 1) {\n\t\tsize_t i, n;\n\n");
                stmt(s, 2, &format!("n = ({len}) / sizeof(*o->{p})"));
                s.push_str("\t\tfor (i = 0; i < n; i++) {\n");
                stmt(
                    s,
                    3,
                    &format!("ret = {}(txn, &o->{p}[i])", e.fn_placef(*t2)),
                );
                bail(s, 3, "ret");
                s.push_str("\t\t}\n\t}\n");
            }
        }
        FieldHow::PtrArray { len, target } => {
            let rights = if f.copy_out { "FGFT_RW" } else { "FGFT_R" };
            stmt(
                s,
                1,
                &format!("ret = fgft_place_obj(txn, o->{p}, {len}, {rights})"),
            );
            bail(s, 1, "ret < 0");
            s.push_str("\tif (ret == 1) {\n\t\tsize_t i, n;\n\n");
            stmt(s, 2, &format!("n = ({len}) / sizeof(*o->{p})"));
            s.push_str("\t\tfor (i = 0; i < n; i++) {\n");
            stmt(
                s,
                3,
                &format!("ret = {}(txn, o->{p}[i])", e.fn_place(*target)),
            );
            bail(s, 3, "ret");
            s.push_str("\t\t}\n\t}\n");
        }
        FieldHow::Shared { len, rights } => {
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
            stmt(s, 1, &format!("ret = fgft_place_str(txn, o->{p})"));
            bail(s, 1, "ret");
        }
        FieldHow::Container { outer, member } => {
            let ot = &e.types[*outer].c_type;
            let _ = writeln!(s, "\tif (o->{p}) {{");
            stmt(
                s,
                2,
                &format!(
                    "ret = {}(txn, container_of(o->{p}, {ot}, {member}))",
                    e.fn_place(*outer)
                ),
            );
            bail(s, 2, "ret");
            s.push_str("\t}\n");
        }
    }
}

/// Grants the object (with its private area) once, then what it leads to.
fn place(s: &mut String, e: &EntrySpec, i: usize, proto: &str, pa: &[Option<String>]) {
    let t = &e.types[i];
    let ty = &t.c_type;
    let _ = writeln!(s, "/* fgft: grants a {ty} in place ({}) */", e.name);
    let _ = writeln!(s, "{}", wrap_call(0, proto, ""));
    s.push_str("{\n");
    let _ = writeln!(s, "\tconst {ty} *o = ov;");
    let _ = writeln!(s, "\tsize_t size = sizeof(*o);");
    s.push_str("\tint ret;\n\n");
    // Most pointers a ring walk meets are empty slots: no runtime call.
    s.push_str("\tif (!o)\n\t\treturn 0;\n");
    if let Some(p) = t.priv_area {
        let acc = pa[i].as_deref().unwrap_or("FGFT_NO_PRIVATE_ACCESSOR");
        stmt(
            s,
            1,
            &format!(
                "size = FGFT_PRIV_OFFSET(o, {acc}(o)) + sizeof({})",
                e.types[p].c_type
            ),
        );
    }
    stmt(
        s,
        1,
        &format!("ret = fgft_place_obj(txn, o, size, {})", t.rights.c()),
    );
    bail(s, 1, "ret <= 0");
    if let Some((outer, member)) = &t.container {
        // The driver's container around it, granted in place as it is, or
        // read-write when the SFI code writes the container alone.
        let rights = if t.container_rw { Rights::RW } else { t.rights };
        let _ = writeln!(s, "\t/* the {outer} around it ({member}) */");
        stmt(
            s,
            1,
            &format!(
                "ret = fgft_place_obj(txn, (const char *)o - offsetof({outer}, {member}), sizeof({outer}), {})",
                rights.c()
            ),
        );
        bail(s, 1, "ret < 0");
    }
    let _ = writeln!(s, "\treturn {}(txn, o);", e.fn_placef(i));
    s.push_str("}\n\n");
}
