//! fgft-stubs: the main-module side of an isolated entry point.
//!
//! For each entry point the planner (fgft-cc) describes what crosses into the
//! SFI copy ([`EntrySpec`]): which parameters point at objects and of which
//! marshaled type, which members of each type the closure reads and writes,
//! which pointers are buffers (blob hints) or strings (nullterm hints), which
//! driver globals the closure uses.  This crate turns that into C:
//!
//! * per type, a copy-in function (find the object's copy in the object
//!   tracker or make one, grant it in the range table, copy the members the
//!   closure reads or writes, follow marshaled pointer members) and a copy-out
//!   function (write back the members the closure writes, translating
//!   pointers from copies back to originals, following pointers, with a
//!   visited chain against cycles);
//! * the argument block and thunk `fgft_txn_call` runs, which calls the SFI
//!   copy of the entry point;
//! * the stub that takes the entry point's slot: same C signature; begins the
//!   transaction (the runtime checkpoints the device), marshals, calls,
//!   commits with copy-out or aborts, returning the entry's error where the
//!   slot's return type can carry one.  With isolation switched off
//!   (`fgft_txn_begin` returns NULL) it calls the original function.
//!
//! All C emitted is kernel style and every function names its origin.

use fgft_base::ident;
use serde::Serialize;
use std::fmt::Write as _;

/// Errors of the stub generator.
#[derive(Debug, thiserror::Error)]
pub enum StubError {
    #[error("entry `{entry}`: {msg}")]
    Spec { entry: String, msg: String },
}

/// Range-table rights of a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rights {
    R,
    RW,
}

impl Rights {
    pub fn c(self) -> &'static str {
        match self {
            Rights::R => "FGFT_R",
            Rights::RW => "FGFT_RW",
        }
    }
}

/// How one member is copied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum FieldHow {
    /// Plain assignment (scalars, bitfields, pointers kept as they are).
    Assign,
    /// Byte copy of the member (arrays, members of unknown type).
    Bytes,
    /// A pointer to an object of marshaled type `target` (index into
    /// [`EntrySpec::types`]).
    Ptr { target: usize },
    /// A pointer to `len` bytes (`len` is a C expression over `o`, the
    /// original object), from a blob hint.  When the target is an array of
    /// a marshaled type (`elem`), each element is copied member by member.
    Blob { len: String, elem: Option<usize> },
    /// A pointer to a NUL-terminated string (nullterm hint).
    Str,
    /// A pointer to member `member` of an object of marshaled type `outer`
    /// (a container hint): the enclosing object is copied.
    Container { outer: usize, member: String },
    /// Memory used in place (shared hint: DMA buffers, rings): the pointer
    /// is kept as it is and `[ptr, ptr + len)` is granted with `rights`
    /// when it is not NULL (`len` over `o`).  Never copied, never undone.
    Shared { len: String, rights: Rights },
}

/// One member of a marshaled type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldSpec {
    /// Member path (`hw.mac_type`).
    pub path: String,
    pub copy_in: bool,
    pub copy_out: bool,
    pub how: FieldHow,
}

/// One marshaled object type of an entry point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeSpec {
    /// Identifier-safe name used in function names.
    pub ident: String,
    /// C spelling (`struct e1000_adapter`, or a `typeof(...)`).
    pub c_type: String,
    pub fields: Vec<FieldSpec>,
    /// A private area trailing objects of this type (`netdev_priv`): the
    /// index of its type; the copy is made large enough to hold it.
    pub priv_area: Option<usize>,
    /// The SFI code writes objects of this type (grant read-write).
    pub rights: Rights,
    /// Only ever marshaled as another object's private area.
    pub priv_only: bool,
    /// What the type was found from (for the comment).
    pub why: String,
}

/// How a parameter crosses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ParamHow {
    /// Passed as it is (values, pointers the closure never dereferences).
    Value,
    /// A pointer to an object of marshaled type (index).
    Obj { ty: usize },
    /// A pointer to `len` bytes (blob hint; `len` over the parameters).
    Blob {
        len: String,
        copy_out: bool,
        rights: Rights,
    },
    /// A NUL-terminated string (nullterm hint).
    Str,
    /// A pointer to member `member` of an object of marshaled type `outer`
    /// (container_of).
    Container { outer: usize, member: String },
    /// Memory used in place (shared hint): passed as it is, `[p, p + len)`
    /// granted with `rights` when not NULL (`len` over the parameters).
    Shared { len: String, rights: Rights },
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamSpec {
    pub name: String,
    /// The declaration as written (`struct net_device *netdev`).
    pub decl: String,
    pub how: ParamHow,
}

/// What the stub returns when the transaction aborts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum AbortReturn {
    /// `void` slot: nothing (the caller sees no effect; the abort is counted).
    Void,
    /// The error code (slots returning int, long, ssize_t...).
    Error,
    /// A fixed value (e.g. `0` for u32/bool getters, `NULL`, `IRQ_NONE`).
    Value(String),
}

/// A driver global the closure uses through a copy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GlobalSpec {
    pub name: String,
    pub copy_out: bool,
}

/// Everything about one isolated entry point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntrySpec {
    /// Driver (module) name, a C identifier (prefix of shared symbols).
    pub driver: String,
    pub name: String,
    /// `path:line` of the definition.
    pub origin: String,
    /// The slots it is stored in (`ethtool_ops.get_regs`).
    pub slots: Vec<String>,
    /// Return type as written (`void`, `int`, `u32`...).
    pub ret: String,
    pub abort: AbortReturn,
    /// The error the runtime returns for this entry (`-EIO`).
    pub err: String,
    pub params: Vec<ParamSpec>,
    /// Device key for fgft_txn_begin (C expression over the parameters).
    pub dev_key: String,
    /// The `struct fgft_dev_ops` holding the device checkpoint and restore
    /// for this entry's key: the stub registers the key with it
    /// (`fgft_dev_ensure`) before the transaction begins.  None: no device
    /// checkpoint.
    pub dev_ops: Option<String>,
    pub types: Vec<TypeSpec>,
    pub globals: Vec<GlobalSpec>,
    /// Kernel variables the closure names (all the table's are granted
    /// read-only by the SFI module's grant function; listed for the plan).
    pub kernel_globals: Vec<String>,
}

impl EntrySpec {
    pub fn stub_name(&self) -> String {
        format!("fgft_stub_{}", self.name)
    }
    /// The SFI module's exported trampoline to the entry's SFI copy.
    pub fn sfi_name(&self) -> String {
        format!("fgft_sfi_entry_{}", self.name)
    }
    pub fn ep_name(&self) -> String {
        format!("fgft_ep_{}", self.name)
    }
    fn fn_in(&self, t: usize) -> String {
        format!("fgft_in_{}_{}", self.name, self.types[t].ident)
    }
    fn fn_inf(&self, t: usize) -> String {
        format!("fgft_inf_{}_{}", self.name, self.types[t].ident)
    }
    fn fn_out(&self, t: usize) -> String {
        format!("fgft_out_{}_{}", self.name, self.types[t].ident)
    }
    fn fn_outf(&self, t: usize) -> String {
        format!("fgft_outf_{}_{}", self.name, self.types[t].ident)
    }

    fn check(&self) -> Result<(), StubError> {
        let bad = |msg: String| StubError::Spec {
            entry: self.name.clone(),
            msg,
        };
        let n = self.types.len();
        for t in &self.types {
            if let Some(p) = t.priv_area {
                if p >= n {
                    return Err(bad(format!(
                        "type {} has a bad private-area index",
                        t.ident
                    )));
                }
            }
            for f in &t.fields {
                if let FieldHow::Container { outer: target, .. } | FieldHow::Ptr { target } = f.how
                {
                    if target >= n {
                        return Err(bad(format!("member {} points at a bad type index", f.path)));
                    }
                }
            }
        }
        for p in &self.params {
            match &p.how {
                ParamHow::Obj { ty } | ParamHow::Container { outer: ty, .. } if *ty >= n => {
                    return Err(bad(format!("parameter {} has a bad type index", p.name)))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Text of the signature `RET NAME(PARAMS)` given a declarator text.
pub fn signature(ret: &str, name: &str, params: &[ParamSpec]) -> String {
    let ps: Vec<String> = params.iter().map(|p| normalize(&p.decl)).collect();
    let plist = if ps.is_empty() {
        "void".to_string()
    } else {
        ps.join(", ")
    };
    let sep = if ret.ends_with('*') { "" } else { " " };
    format!("{ret}{sep}{name}({plist})")
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Wraps a C declaration or call at 80 columns on its argument list, kernel
/// style (continuation aligned after the opening parenthesis when it fits,
/// else two tabs).
pub fn wrap_call(indent: usize, text: &str, suffix: &str) -> String {
    let width = |s: &str| {
        s.chars().fold(
            0usize,
            |w, c| if c == '\t' { (w / 8 + 1) * 8 } else { w + 1 },
        )
    };
    let tabs = "\t".repeat(indent);
    let line = format!("{tabs}{text}{suffix}");
    if width(&line) <= 80 {
        return line;
    }
    let Some(open) = text.find('(') else {
        return line;
    };
    let head = &text[..=open];
    let inner = &text[open + 1..text.len() - 1];
    let args = split_top(inner);
    let col = width(&format!("{tabs}{head}"));
    let cont = if col <= 48 {
        format!("{}{}", "\t".repeat(col / 8), " ".repeat(col % 8))
    } else {
        "\t".repeat(indent + 2)
    };
    let mut out = format!("{tabs}{head}");
    let mut cur_w = width(&out);
    for (i, a) in args.iter().enumerate() {
        let piece = if i + 1 == args.len() {
            format!("{a}){suffix}")
        } else {
            format!("{a},")
        };
        let need = if i == 0 { 0 } else { 1 } + width(&piece);
        if i > 0 && cur_w + need > 80 {
            out.push('\n');
            out.push_str(&cont);
            cur_w = width(&cont);
            out.push_str(&piece);
            cur_w += width(&piece);
        } else {
            if i > 0 {
                out.push(' ');
                cur_w += 1;
            }
            out.push_str(&piece);
            cur_w += width(&piece);
        }
    }
    out
}

fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Rewraps comments of generated C at 80 columns: a one-line `/* ... */`
/// that is too long becomes a block comment, and long ` * ` lines of block
/// comments are wrapped.
pub fn wrap_comments(text: &str) -> String {
    let width = |s: &str| {
        s.chars().fold(
            0usize,
            |w, c| if c == '\t' { (w / 8 + 1) * 8 } else { w + 1 },
        )
    };
    let fill = |lead: &str, words: &str, out: &mut String| {
        let mut line = lead.to_string();
        let mut empty = true;
        for w in words.split_whitespace() {
            if !empty && width(&line) + 1 + w.len() > 80 {
                out.push_str(line.trim_end());
                out.push('\n');
                line = lead.to_string();
                empty = true;
            }
            if !empty {
                line.push(' ');
            }
            line.push_str(w);
            empty = false;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    };
    let mut out = String::with_capacity(text.len());
    for l in text.split_inclusive('\n') {
        let body = l.trim_end_matches('\n');
        if width(body) <= 80 {
            out.push_str(l);
            continue;
        }
        let indent: String = body.chars().take_while(|c| *c == '\t').collect();
        let rest = &body[indent.len()..];
        if let Some(inner) = rest.strip_prefix("/* ").and_then(|r| r.strip_suffix(" */")) {
            out.push_str(&format!("{indent}/*\n"));
            fill(&format!("{indent} * "), inner, &mut out);
            out.push_str(&format!("{indent} */"));
            if l.ends_with('\n') {
                out.push('\n');
            }
        } else if let Some(inner) = rest.strip_prefix(" * ") {
            fill(&format!("{indent} * "), inner, &mut out);
        } else {
            out.push_str(l);
        }
    }
    out
}

/// The prototype of the SFI module's trampoline for `e` (declared in the
/// main module's shared header).
pub fn sfi_prototype(e: &EntrySpec) -> String {
    wrap_call(0, &signature(&e.ret, &e.sfi_name(), &e.params), ";")
}

/// Struct and union tags a parameter list names (for forward declarations).
pub fn param_tags(params: &[ParamSpec]) -> Vec<String> {
    let mut out = Vec::new();
    for p in params {
        let toks: Vec<&str> = p.decl.split_whitespace().collect();
        for w in toks.windows(2) {
            if w[0] == "struct" || w[0] == "union" {
                let name: String = w[1].chars().take_while(|&c| ident::is_char(c)).collect();
                let t = format!("{} {name}", w[0]);
                if !name.is_empty() && !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// The helpers header every generated main-module file includes
/// (`fgft_stubs.h`).
pub fn helpers_header() -> String {
    let mut s = String::new();
    s.push_str(
        r#"/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for stubs generated by fgft-cc split (stubs-gen).
 * Generated file: do not edit.
 */
#ifndef _FGFT_STUBS_H
#define _FGFT_STUBS_H

#include <linux/err.h>
#include <linux/string.h>
#include <fgft/runtime.h>

/* A chain of objects being copied out, against cycles. */
struct fgft_visit {
	const void *obj;
	const struct fgft_visit *up;
};

static inline bool fgft_visited(const struct fgft_visit *v, const void *obj)
{
	for (; v; v = v->up)
		if (v->obj == obj)
			return true;
	return false;
}

/* Copies a member whatever its type (arrays included). */
#define FGFT_COPY(dst, src) memcpy(&(dst), &(src), sizeof(dst))

/* The original of a pointer that may point into an SFI copy. */
static inline void *fgft_orig_or_self(struct fgft_txn *txn, const void *p)
{
	void *o = p ? fgft_obj_to_orig(txn, p) : NULL;

	return o ? o : (void *)p;
}

/*
 * Finds or makes the copy of @o (@ksize bytes, @csize for the copy) and
 * grants it.  Returns 1 for a new copy (fields still to copy), 0 for one
 * that exists, -errno on failure.
 */
static inline int fgft_copy_obj(struct fgft_txn *txn, const void *o,
				size_t ksize, size_t csize, unsigned int rights,
				void **cp)
{
	void *c;

	*cp = NULL;
	if (!o)
		return 0;
	c = fgft_obj_to_copy(txn, o);
	if (c) {
		*cp = c;
		return 0;
	}
	c = fgft_obj_copy(txn, o, ksize, csize);
	if (!c)
		return -ENOMEM;
	if (fgft_map(txn, c, csize, rights))
		return -ENOMEM;
	*cp = c;
	return 1;
}

/* Copies @len bytes at @o into a granted copy (blob hints). */
static inline int fgft_copy_blob(struct fgft_txn *txn, const void *o,
				 size_t len, unsigned int rights, void **cp)
{
	int ret = fgft_copy_obj(txn, o, len, len, rights, cp);

	if (ret == 1)
		memcpy(*cp, o, len);
	return ret < 0 ? ret : 0;
}

/* Copies a NUL-terminated string, read-only (nullterm hints). */
static inline int fgft_copy_str(struct fgft_txn *txn, const char *o,
				void **cp)
{
	size_t len = o ? strlen(o) + 1 : 0;

	return fgft_copy_blob(txn, o, len, FGFT_R, cp);
}

/*
 * Grants memory the SFI code uses in place (shared hints: DMA buffers and
 * rings).  Nothing is copied; writes through it are not undone on abort
 * (the device checkpoint restores such memory).
 */
static inline int fgft_grant_shared(struct fgft_txn *txn, const void *p,
				    size_t len, unsigned int rights)
{
	if (!p || !len)
		return 0;
	return fgft_map(txn, p, len, rights);
}

/* Writes a blob copy back. */
static inline void fgft_blob_out(struct fgft_txn *txn, void *o, size_t len)
{
	void *c = o ? fgft_obj_to_copy(txn, o) : NULL;

	if (c && c != o)
		memcpy(o, c, len);
}

#endif /* _FGFT_STUBS_H */
"#,
    );
    s
}

/// The C block appended to the main-module file that defines the entry
/// point: entry object, copy functions, thunk and stub.
pub fn emit_entry(e: &EntrySpec) -> Result<String, StubError> {
    e.check()?;
    // Types spelled with typeof (members of kernel structs fgft does not
    // read) get a macro name: declarations stay readable, and checkpatch
    // reads them as declarations.
    let mut e = e.clone();
    let mut type_macros = Vec::new();
    for (i, t) in e.types.iter_mut().enumerate() {
        if t.c_type.contains("typeof") {
            let m = format!("FGFT_TYPE_{}_{}", e.name.to_uppercase(), i);
            type_macros.push(format!("#define {m} {}", t.c_type));
            t.c_type = m;
        }
    }
    let e = &e;
    let mut s = String::new();
    let slots = if e.slots.is_empty() {
        String::new()
    } else {
        format!(", slot {}", e.slots.join(", "))
    };
    let _ = writeln!(
        s,
        "\n/* fgft: isolated entry point {} ({}{}) */\n",
        e.name, e.origin, slots
    );
    if !type_macros.is_empty() {
        let _ = writeln!(
            s,
            "/* fgft: kernel member types {} reaches ({}) */",
            e.name, e.origin
        );
        for m in &type_macros {
            let _ = writeln!(s, "{m}");
        }
        s.push('\n');
    }
    // Entry object.
    let _ = writeln!(s, "/* fgft: runtime entry of {} ({}) */", e.name, e.origin);
    let _ = writeln!(s, "struct fgft_entry {} = {{", e.ep_name());
    let _ = writeln!(s, "\t.name = \"{}\",", e.name);
    let _ = writeln!(s, "\t.origin = \"{}\",", e.origin);
    let _ = writeln!(s, "\t.err = {},", e.err);
    let _ = writeln!(s, "}};\n");
    // Forward declarations of copy functions (types may refer to each other).
    for i in 0..e.types.len() {
        {
            let _ = writeln!(
                s,
                "{}",
                wrap_call(
                    0,
                    &format!(
                        "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void **cp)",
                        e.fn_in(i)
                    ),
                    ";"
                )
            );
            let _ = writeln!(
                s,
                "{}",
                wrap_call(
                    0,
                    &format!(
                        "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, const struct fgft_visit *up)",
                        e.fn_out(i)
                    ),
                    ";"
                )
            );
        }
        let _ = writeln!(
            s,
            "{}",
            wrap_call(
                0,
                &format!(
                    "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void *cv)",
                    e.fn_inf(i)
                ),
                ";"
            )
        );
        let _ = writeln!(
            s,
            "{}",
            wrap_call(
                0,
                &format!(
                    "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, void *cv, const struct fgft_visit *up)",
                    e.fn_outf(i)
                ),
                ";"
            )
        );
    }
    if !e.types.is_empty() {
        s.push('\n');
    }
    for i in 0..e.types.len() {
        emit_type(&mut s, e, i);
    }
    emit_thunk(&mut s, e);
    emit_stub(&mut s, e);
    Ok(wrap_comments(&s))
}

fn emit_type(s: &mut String, e: &EntrySpec, i: usize) {
    let t = &e.types[i];
    let ty = &t.c_type;
    // Field copy-in.
    let _ = writeln!(
        s,
        "/* fgft: copy-in of {} ({}) for {} ({}) */",
        t.c_type, t.why, e.name, e.origin
    );
    let _ = writeln!(
        s,
        "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void *cv)",
        e.fn_inf(i)
    );
    s.push_str("{\n");
    let uses_o = t.fields.iter().any(|f| f.copy_in) || t.priv_area.is_some();
    if uses_o {
        let _ = writeln!(s, "\tconst {ty} *o = ov;");
        let _ = writeln!(s, "\t{ty} *c = cv;");
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
        let p = &f.path;
        if p.is_empty() {
            s.push_str("\tmemcpy(c, o, sizeof(*o));\n");
            continue;
        }
        match &f.how {
            FieldHow::Assign => {
                let _ = writeln!(s, "\tc->{p} = o->{p};");
            }
            FieldHow::Bytes => {
                let _ = writeln!(s, "\tFGFT_COPY(c->{p}, o->{p});");
            }
            FieldHow::Ptr { target } => {
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!("ret = {}(txn, o->{p}, (void **)&c->{p})", e.fn_in(*target)),
                        ";"
                    )
                );
                s.push_str("\tif (ret)\n\t\treturn ret;\n");
            }
            FieldHow::Blob { len, elem: None } => {
                let rights = if f.copy_out { "FGFT_RW" } else { "FGFT_R" };
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!(
                            "ret = fgft_copy_blob(txn, o->{p}, {len}, {rights}, (void **)&c->{p})"
                        ),
                        ";"
                    )
                );
                s.push_str("\tif (ret)\n\t\treturn ret;\n");
            }
            FieldHow::Blob {
                len,
                elem: Some(t2),
            } => {
                let et = &e.types[*t2];
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!(
                            "ret = fgft_copy_obj(txn, o->{p}, {len}, {len}, {}, (void **)&c->{p})",
                            et.rights.c()
                        ),
                        ";"
                    )
                );
                s.push_str("\tif (ret < 0)\n\t\treturn ret;\n");
                s.push_str("\tif (ret == 1) {\n");
                let _ = writeln!(s, "\t\tsize_t i, n = ({len}) / sizeof(*o->{p});\n");
                s.push_str("\t\tfor (i = 0; i < n; i++) {\n");
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        3,
                        &format!("ret = {}(txn, &o->{p}[i], &c->{p}[i])", e.fn_inf(*t2)),
                        ";"
                    )
                );
                s.push_str("\t\t\tif (ret)\n\t\t\t\treturn ret;\n\t\t}\n\t}\n");
            }
            FieldHow::Shared { len, rights } => {
                let _ = writeln!(s, "\tc->{p} = o->{p};");
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!(
                            "ret = fgft_grant_shared(txn, o->{p}, {len}, {})",
                            rights.c()
                        ),
                        ";"
                    )
                );
                s.push_str("\tif (ret)\n\t\treturn ret;\n");
            }
            FieldHow::Str => {
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        1,
                        &format!("ret = fgft_copy_str(txn, o->{p}, (void **)&c->{p})"),
                        ";"
                    )
                );
                s.push_str("\tif (ret)\n\t\treturn ret;\n");
            }
            FieldHow::Container { outer, member } => {
                let ot = &e.types[*outer].c_type;
                let _ = writeln!(s, "\tif (o->{p}) {{");
                s.push_str("\t\tvoid *oc;\n\n");
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        2,
                        &format!(
                            "ret = {}(txn, container_of(o->{p}, {ot}, {member}), &oc)",
                            e.fn_in(*outer)
                        ),
                        ";"
                    )
                );
                s.push_str("\t\tif (ret)\n\t\t\treturn ret;\n");
                let _ = writeln!(s, "\t\tc->{p} = &(({ot} *)oc)->{member};");
                s.push_str("\t}\n");
            }
        }
    }
    if let Some(p) = t.priv_area {
        let _ = writeln!(
            s,
            "\tret = {}(txn, netdev_priv(o), netdev_priv(c));",
            e.fn_inf(p)
        );
        s.push_str("\tif (ret)\n\t\treturn ret;\n");
    }
    if !uses_o {
        s.push_str("\t(void)txn;\n\t(void)ov;\n\t(void)cv;\n");
    }
    s.push_str("\treturn 0;\n}\n\n");

    // Allocation + copy-in.
    {
        let _ = writeln!(
            s,
            "/* fgft: find or make the copy of a {ty} ({}) */",
            e.name
        );
        let _ = writeln!(
            s,
            "static int __maybe_unused {}(struct fgft_txn *txn, const void *ov, void **cp)",
            e.fn_in(i)
        );
        s.push_str("{\n");
        let _ = writeln!(s, "\tconst {ty} *o = ov;");
        let _ = writeln!(s, "\tsize_t size = sizeof(*o);");
        s.push_str("\tint ret;\n\n");
        if let Some(p) = t.priv_area {
            let _ = writeln!(s, "\tif (o)");
            let _ = writeln!(
                s,
                "{}",
                wrap_call(
                    2,
                    &format!(
                        "size = (size_t)((const char *)netdev_priv(o) - (const char *)o) + sizeof({})",
                        e.types[p].c_type
                    ),
                    ";"
                )
            );
        }
        let _ = writeln!(
            s,
            "\tret = fgft_copy_obj(txn, o, size, size, {}, cp);",
            t.rights.c()
        );
        s.push_str("\tif (ret <= 0)\n\t\treturn ret;\n");
        let _ = writeln!(s, "\treturn {}(txn, o, *cp);", e.fn_inf(i));
        s.push_str("}\n\n");
    }

    // Field copy-out.
    let _ = writeln!(
        s,
        "/* fgft: copy-out of {ty} for {} ({}) */",
        e.name, e.origin
    );
    let _ = writeln!(
        s,
        "{}",
        wrap_call(
            0,
            &format!(
                "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, void *cv, const struct fgft_visit *up)",
                e.fn_outf(i)
            ),
            ""
        )
    );
    s.push_str("{\n");
    let outs: Vec<&FieldSpec> = t
        .fields
        .iter()
        .filter(|f| {
            f.copy_out
                || matches!(
                    f.how,
                    FieldHow::Ptr { .. }
                        | FieldHow::Blob { elem: Some(_), .. }
                        | FieldHow::Container { .. }
                )
        })
        .collect();
    let uses = !outs.is_empty() || t.priv_area.is_some();
    if uses {
        let _ = writeln!(s, "\t{ty} *o = ov;");
        let _ = writeln!(s, "\t{ty} *c = cv;");
        let _ = writeln!(s, "\tstruct fgft_visit me = {{ .obj = ov, .up = up }};\n");
    }
    // Follow pointers first (the original's pointers, before write-back).
    for f in &outs {
        if let FieldHow::Ptr { target } = f.how {
            let _ = writeln!(
                s,
                "{}",
                wrap_call(
                    1,
                    &format!("{}(txn, (void *)o->{}, &me)", e.fn_out(target), f.path),
                    ";"
                )
            );
        }
        if let FieldHow::Container { outer, member } = &f.how {
            let ot = &e.types[*outer].c_type;
            let _ = writeln!(s, "\tif (o->{})", f.path);
            let _ = writeln!(
                s,
                "{}",
                wrap_call(
                    2,
                    &format!(
                        "{}(txn, (void *)container_of(o->{}, {ot}, {member}), &me)",
                        e.fn_out(*outer),
                        f.path
                    ),
                    ";"
                )
            );
        }
    }
    for f in outs
        .iter()
        .filter(|f| f.copy_out || matches!(f.how, FieldHow::Blob { elem: Some(_), .. }))
    {
        let p = &f.path;
        if p.is_empty() {
            s.push_str("\tmemcpy(o, c, sizeof(*o));\n");
            continue;
        }
        match &f.how {
            FieldHow::Assign | FieldHow::Shared { .. } => {
                let _ = writeln!(s, "\to->{p} = c->{p};");
            }
            FieldHow::Bytes => {
                let _ = writeln!(s, "\tFGFT_COPY(o->{p}, c->{p});");
            }
            FieldHow::Ptr { .. } | FieldHow::Container { .. } => {
                let _ = writeln!(s, "\to->{p} = fgft_orig_or_self(txn, c->{p});");
            }
            FieldHow::Blob { len, elem: None } => {
                let _ = writeln!(s, "\tfgft_blob_out(txn, (void *)o->{p}, {len});");
            }
            FieldHow::Blob {
                len,
                elem: Some(t2),
            } => {
                s.push_str("\tif (o->");
                let _ = writeln!(s, "{p}) {{");
                let _ = writeln!(s, "\t\ttypeof(o->{p}) ce = fgft_obj_to_copy(txn, o->{p});");
                let _ = writeln!(s, "\t\tsize_t i, n = ({len}) / sizeof(*o->{p});\n");
                s.push_str("\t\tfor (i = 0; ce && ce != o->");
                let _ = writeln!(s, "{p} && i < n; i++)");
                let _ = writeln!(
                    s,
                    "{}",
                    wrap_call(
                        3,
                        &format!("{}(txn, &o->{p}[i], &ce[i], &me)", e.fn_outf(*t2)),
                        ";"
                    )
                );
                s.push_str("\t}\n");
            }
            FieldHow::Str => {}
        }
    }
    if let Some(p) = t.priv_area {
        let _ = writeln!(
            s,
            "\t{}(txn, netdev_priv(o), netdev_priv(c), &me);",
            e.fn_outf(p)
        );
    }
    let uses_c = t.priv_area.is_some()
        || outs.iter().any(|f| {
            f.copy_out && !matches!(f.how, FieldHow::Blob { elem: Some(_), .. } | FieldHow::Str)
        });
    let uses_me = t.priv_area.is_some()
        || outs.iter().any(|f| {
            matches!(
                f.how,
                FieldHow::Ptr { .. }
                    | FieldHow::Blob { elem: Some(_), .. }
                    | FieldHow::Container { .. }
            )
        });
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

    {
        let _ = writeln!(
            s,
            "/* fgft: copy-out of a {ty} for {} ({}) */",
            e.name, e.origin
        );
        let _ = writeln!(
            s,
            "{}",
            wrap_call(
                0,
                &format!(
                    "static void __maybe_unused {}(struct fgft_txn *txn, void *ov, const struct fgft_visit *up)",
                    e.fn_out(i)
                ),
                ""
            )
        );
        s.push_str("{\n\tvoid *c;\n\n");
        s.push_str("\tif (!ov || fgft_visited(up, ov))\n\t\treturn;\n");
        s.push_str("\tc = fgft_obj_to_copy(txn, ov);\n");
        s.push_str("\tif (!c || c == ov)\n\t\treturn;\n");
        let _ = writeln!(s, "\t{}(txn, ov, c, up);", e.fn_outf(i));
        s.push_str("}\n\n");
    }
}

fn args_struct(e: &EntrySpec) -> String {
    format!("fgft_args_{}", e.name)
}

fn emit_thunk(s: &mut String, e: &EntrySpec) {
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
    let _ = writeln!(s, "\tstruct {} *a = arg;\n", args_struct(e));
    let args: Vec<String> = e.params.iter().map(|p| format!("a->{}", p.name)).collect();
    let call = format!("{}({})", e.sfi_name(), args.join(", "));
    if e.ret.trim() == "void" {
        let _ = writeln!(s, "{}", wrap_call(1, &call, ";"));
        if e.params.is_empty() {
            s.push_str("\t(void)a;\n");
        }
    } else {
        let _ = writeln!(s, "{}", wrap_call(1, &format!("a->ret = {call}"), ";"));
    }
    s.push_str("\treturn 0;\n}\n\n");
}

fn emit_stub(s: &mut String, e: &EntrySpec) {
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
        AbortReturn::Value(v) => {
            let _ = writeln!(s, " * On abort it returns {v}.");
        }
    }
    s.push_str(" */\n");
    let sig = format!("static {}", signature(&e.ret, &e.stub_name(), &e.params));
    let _ = writeln!(s, "{}", wrap_call(0, &sig, ""));
    s.push_str("{\n");
    let _ = writeln!(s, "\tstruct {} a = {{", args_struct(e));
    for p in &e.params {
        let _ = writeln!(s, "\t\t.{0} = {0},", p.name);
    }
    s.push_str("\t};\n");
    s.push_str("\tstruct fgft_txn *txn;\n");
    s.push_str("\tint err;\n\n");
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
    let _ = writeln!(
        s,
        "{}",
        wrap_call(
            1,
            &format!(
                "txn = fgft_txn_begin(&{}, (void *){})",
                e.ep_name(),
                e.dev_key
            ),
            ";"
        )
    );
    // Isolation off: the original.
    let orig_args: Vec<String> = e.params.iter().map(|p| p.name.clone()).collect();
    let orig = format!("{}({})", e.name, orig_args.join(", "));
    if void {
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
    // Kernel variables SFI code reads (the SFI module knows their headers).
    let _ = writeln!(s, "\terr = fgft_sfi_{}_grant(txn);", e.driver);
    s.push_str("\tif (err)\n\t\tgoto abort;\n");
    for g in &e.globals {
        let _ = writeln!(s, "\terr = fgft_gin_{}_{}(txn);", e.driver, g.name);
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
            ParamHow::Shared { len, rights } => {
                format!("err = fgft_grant_shared(txn, {n}, {len}, {})", rights.c())
            }
            ParamHow::Container { outer, member } => {
                let ot = &e.types[*outer].c_type;
                let _ = writeln!(s, "\t{{");
                let _ = writeln!(s, "\t\t{ot} *oc = NULL;");
                let owner = owner_link(e, *outer);
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
                            e.fn_in(*outer)
                        ),
                        ";"
                    )
                );
                let _ = writeln!(s, "\t\tif (!err && oc)\n\t\t\ta.{n} = &oc->{member};");
                let _ = writeln!(s, "\t}}");
                s.push_str("\tif (err)\n\t\tgoto abort;\n");
                continue;
            }
        };
        let _ = writeln!(s, "{}", wrap_call(1, &line, ";"));
        s.push_str("\tif (err)\n\t\tgoto abort;\n");
    }
    let _ = writeln!(s, "\tfgft_txn_call(txn, fgft_thunk_{}, &a);", e.name);
    s.push_str("\tif (fgft_txn_failed(txn))\n\t\tgoto abort;\n");
    // Copy-out.
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
        let _ = writeln!(s, "\tfgft_gout_{}_{}(txn);", e.driver, g.name);
    }
    s.push_str("\tfgft_txn_commit(txn);\n");
    if void {
        s.push_str("\treturn;\n");
    } else {
        s.push_str("\treturn a.ret;\n");
    }
    s.push_str("abort:\n\terr = fgft_txn_abort(txn);\n");
    s.push_str(&abort_return(e, 1));
    s.push_str("}\n");
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
        AbortReturn::Value(v) => format!("{tabs}(void)err;\n{tabs}return {v};\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> EntrySpec {
        EntrySpec {
            driver: "drv".into(),
            name: "drv_get_thing".into(),
            origin: "drv.c:10".into(),
            slots: vec!["ethtool_ops.get_thing".into()],
            ret: "int".into(),
            abort: AbortReturn::Error,
            err: "-EIO".into(),
            params: vec![
                ParamSpec {
                    name: "netdev".into(),
                    decl: "struct net_device *netdev".into(),
                    how: ParamHow::Obj { ty: 0 },
                },
                ParamSpec {
                    name: "buf".into(),
                    decl: "void *buf".into(),
                    how: ParamHow::Blob {
                        len: "64".into(),
                        copy_out: true,
                        rights: Rights::RW,
                    },
                },
            ],
            dev_key: "netdev".into(),
            dev_ops: Some("fgft_dev_ops_drv".into()),
            types: vec![
                TypeSpec {
                    ident: "net_device".into(),
                    c_type: "struct net_device".into(),
                    fields: vec![FieldSpec {
                        path: "mtu".into(),
                        copy_in: true,
                        copy_out: false,
                        how: FieldHow::Assign,
                    }],
                    priv_area: Some(1),
                    rights: Rights::RW,
                    priv_only: false,
                    why: "parameter netdev".into(),
                },
                TypeSpec {
                    ident: "drv_priv".into(),
                    c_type: "struct drv_priv".into(),
                    fields: vec![FieldSpec {
                        path: "msg_enable".into(),
                        copy_in: true,
                        copy_out: true,
                        how: FieldHow::Assign,
                    }],
                    priv_area: None,
                    rights: Rights::RW,
                    priv_only: true,
                    why: "netdev_priv".into(),
                },
            ],
            globals: vec![],
            kernel_globals: vec!["jiffies".into()],
        }
    }

    #[test]
    fn stub_has_every_step() {
        let c = emit_entry(&entry()).unwrap();
        for needle in [
            "fgft_txn_begin(&fgft_ep_drv_get_thing, (void *)netdev)",
            "err = fgft_dev_ensure((void *)netdev, &fgft_dev_ops_drv);\n\tif (err)\n\t\treturn err;\n\ttxn = fgft_txn_begin",
            "return drv_get_thing(netdev, buf);",
            "fgft_in_drv_get_thing_net_device(txn, netdev, (void **)&a.netdev)",
            "fgft_copy_blob(txn, buf, 64, FGFT_RW, (void **)&a.buf)",
            "fgft_txn_call(txn, fgft_thunk_drv_get_thing, &a);",
            "fgft_blob_out(txn, (void *)buf, 64);",
            "o->msg_enable = c->msg_enable;",
            "err = fgft_sfi_drv_grant(txn);",
            "err = fgft_txn_abort(txn);\n\treturn err;",
            "a->ret = fgft_sfi_entry_drv_get_thing(a->netdev, a->buf);",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        assert!(!c.lines().any(|l| l.ends_with(' ') || l.ends_with('\t')));
    }

    #[test]
    fn shared_memory_is_granted_not_copied() {
        let mut e = entry();
        e.types[1].fields.push(FieldSpec {
            path: "rx_ring".into(),
            copy_in: true,
            copy_out: false,
            how: FieldHow::Shared {
                len: "RX_LEN".into(),
                rights: Rights::RW,
            },
        });
        e.params[1].how = ParamHow::Shared {
            len: "64".into(),
            rights: Rights::R,
        };
        let c = emit_entry(&e).unwrap();
        for needle in [
            "\tc->rx_ring = o->rx_ring;\n\tret = fgft_grant_shared(txn, o->rx_ring, RX_LEN, FGFT_RW);\n\tif (ret)\n\t\treturn ret;",
            "err = fgft_grant_shared(txn, buf, 64, FGFT_R);\n\tif (err)\n\t\tgoto abort;",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        // Neither copied nor written back nor translated.
        assert!(!c.contains("fgft_copy_blob(txn, buf"), "{c}");
        assert!(!c.contains("fgft_blob_out(txn, (void *)buf"), "{c}");
        assert!(!c.contains("(void **)&a.buf"), "{c}");
        assert!(!c.contains("o->rx_ring = "), "{c}");
        assert!(helpers_header().contains("static inline int fgft_grant_shared("));
    }

    #[test]
    fn long_comments_are_wrapped() {
        let w = wrap_comments(&format!("\t/* {} */\nint x;\n", "word ".repeat(30).trim()));
        assert!(w.lines().all(|l| l.len() <= 80), "{w}");
        assert!(w.starts_with("\t/*\n\t * word"), "{w}");
        assert!(w.ends_with("\t */\nint x;\n"), "{w}");
    }

    #[test]
    fn bad_index_is_an_error() {
        let mut e = entry();
        e.types[0].priv_area = Some(7);
        assert!(emit_entry(&e).is_err());
    }

    #[test]
    fn wrapping_keeps_80_columns() {
        let w = wrap_call(
            1,
            "err = fgft_in_e1000_get_ringparam_e1000_adapter(txn, o->something_long, (void **)&c->something_long)",
            ";",
        );
        for l in w.lines() {
            let width = l
                .chars()
                .fold(0, |w, c| if c == '\t' { (w / 8 + 1) * 8 } else { w + 1 });
            assert!(width <= 80, "{l}");
        }
    }
}
