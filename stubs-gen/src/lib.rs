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

mod copy;
mod helpers;
mod place;
mod stub;
mod wrap;

pub use helpers::helpers_header;
pub use wrap::{tidy, width, wrap_call, wrap_comments, HARD, WRAP};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
    /// A pointer to `len` bytes of pointers (a blob hint on a `T **`
    /// member), each to an object of marshaled type `target` the closure
    /// follows (minix's `sbi->s_imap[i]->b_data`).  Granted where they are
    /// by in-place entries; a copying entry copies the array's bytes, as
    /// `Blob` without `elem` does.
    PtrArray { len: String, target: usize },
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
    /// With `priv_area`: the accessor that returns the area of an object
    /// of this type (`netdev_priv`; the API the relation was found through).
    pub priv_accessor: Option<String>,
    /// The SFI code writes objects of this type (grant read-write).
    pub rights: Rights,
    /// Only ever marshaled as another object's private area.
    pub priv_only: bool,
    /// What the type was found from (for the comment).
    pub why: String,
    /// Objects of this type used in place are embedded in the driver's
    /// container (`container_of`: `struct msdos_inode_info` around a
    /// `struct inode` at `vfs_inode`): (container's C type, member).  The
    /// container is granted in place with the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<(String, String)>,
    /// The SFI code writes the container though not the object (fat's
    /// readdir adds to the cluster cache of an inode it only reads): the
    /// container is granted read-write.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub container_rw: bool,
    /// The data-pointer members copy-out writes back as values (members
    /// of pointer type it assigns, and those inside what it copies whole):
    /// each is checked by the entry's thunk (`fgft_out_ptr()`) before
    /// copy-out, and written as its original when it points into a copy.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub out_ptrs: Vec<String>,
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
    /// `members`: memory the object points to, granted in place with it
    /// (member, length over the parameters, rights), from the `shared`
    /// member hints of its type.
    Shared {
        len: String,
        rights: Rights,
        members: Vec<(String, String, Rights)>,
    },
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

/// What an aborting stub does besides returning (slots.toml `run` and
/// `restored`).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AbortExtra {
    /// C statements run before the return on every abort path (parameter
    /// names substituted), and why.
    pub run: Option<(String, String)>,
    /// Once the body ran and the device was restored (used only when the
    /// entry has a device checkpoint): the value returned instead, the
    /// statements run before, and why.
    pub restored: Option<RestoredAbort>,
}

/// The abort of a call whose device was restored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestoredAbort {
    pub value: String,
    pub run: Option<String>,
    pub why: String,
}

/// A driver global the closure uses through a copy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GlobalSpec {
    pub name: String,
    pub copy_out: bool,
    /// Read only in every entry that uses it, and used in place by one:
    /// granted once, read only, while the driver is registered
    /// (`fgft_global_map`), so an in-place entry places nothing per call.
    pub mapped: bool,
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
    /// What the abort does besides returning.
    pub abort_extra: AbortExtra,
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
    /// The entry is `static`: so is its stub (a non-static entry's slot
    /// may be filled in another unit, which then names the stub).
    pub is_static: bool,
    /// What the stub calls with isolation off when that is not the entry
    /// itself: a trampoline of the entry's own unit, for a stub compiled in
    /// another unit (one that sees every type it copies).
    pub orig: Option<String>,
    /// Stamp the cycle counter between the transaction's stages and hand
    /// the stamps to the runtime (`split --stage-times`, benchmarks only).
    #[serde(skip)]
    pub stage_times: bool,
    /// Marshal in place (an I/O-path slot, slots.toml `in_place`): the
    /// objects are granted where they are, the runtime logs the body's
    /// stores and writes them back on abort; nothing is copied in or out.
    /// An aborted call runs once more (the recovery policy `retry`): the
    /// abort left no trace, so the stub begins a second transaction; a
    /// second abort returns the abort's value.
    pub retry: bool,
    /// What the kernel's caller trusts of the value the entry returns (the
    /// slot table's `returns`): a C condition over `a->ret` and the
    /// arguments `a->NAME`, tested in the thunk (a value outside fails the
    /// body, cause ret), and what the caller does with the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ret_ok: Option<(String, String)>,
    pub in_place: bool,
    /// Why an abort restores the device even when the call touched none of
    /// its registers (the runtime's default restores only a touched one),
    /// besides a restored abort (`abort_extra.restored`), which relies on it.
    pub always_restore: Option<String>,
    /// The driver's heap an in-place body may touch (runtime.h `struct
    /// fgft_heap`, defined by the SFI module): its variable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heap: Option<String>,
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
    /// Finds or makes the copy of an object of type `t`, then copies in.
    fn fn_in(&self, t: usize) -> String {
        format!("fgft_copy_in_{}_{}", self.name, self.types[t].ident)
    }
    /// Copies the members of type `t` the closure uses into a copy.
    fn fn_inf(&self, t: usize) -> String {
        format!("fgft_copy_in_fields_{}_{}", self.name, self.types[t].ident)
    }
    /// Copies an object of type `t` out of its copy (cycle-safe).
    fn fn_out(&self, t: usize) -> String {
        format!("fgft_copy_out_{}_{}", self.name, self.types[t].ident)
    }
    /// Writes the members of type `t` the closure writes back.
    fn fn_outf(&self, t: usize) -> String {
        format!("fgft_copy_out_fields_{}_{}", self.name, self.types[t].ident)
    }
    /// Checks the pointers copy-out of an object of type `t` stores
    /// (cycle-safe).
    fn fn_chk(&self, t: usize) -> String {
        format!("fgft_check_out_{}_{}", self.name, self.types[t].ident)
    }
    /// Checks the pointers copy-out of the members of type `t` stores.
    fn fn_chkf(&self, t: usize) -> String {
        format!(
            "fgft_check_out_fields_{}_{}",
            self.name, self.types[t].ident
        )
    }
    /// Grants an object of type `t` in place, once, and what it leads to.
    fn fn_place(&self, t: usize) -> String {
        format!("fgft_place_{}_{}", self.name, self.types[t].ident)
    }
    /// Grants what the members of an object of type `t` lead to.
    fn fn_placef(&self, t: usize) -> String {
        format!("fgft_place_fields_{}_{}", self.name, self.types[t].ident)
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
                if t.priv_accessor.is_none() {
                    return Err(bad(format!(
                        "{} carries a private area, but its accessor is not known",
                        t.c_type
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

pub(crate) fn normalize(s: &str) -> String {
    let t = s.split_whitespace().collect::<Vec<_>>().join(" ");
    // Kernel style binds `*` to the name: `u64 * data` -> `u64 *data`,
    // `char * const p` -> `char *const p`.
    let cs: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    for (i, &c) in cs.iter().enumerate() {
        let after_star = i > 0 && cs[i - 1] == '*';
        let before_name = cs
            .get(i + 1)
            .is_some_and(|&n| ident::is_char(n) || n == '*');
        if c == ' ' && after_star && before_name {
            continue;
        }
        out.push(c);
    }
    out
}

/// The prototype of the SFI module's trampoline for `e` (declared in the
/// main module's shared header).
pub fn sfi_prototype(e: &EntrySpec) -> String {
    wrap_call(0, &signature(&e.ret, &e.sfi_name(), &e.params), ";")
}

/// Struct, union and enum tags a parameter list names (for forward
/// declarations).
pub fn param_tags(params: &[ParamSpec]) -> Vec<String> {
    let mut out = Vec::new();
    for p in params {
        let toks: Vec<&str> = p.decl.split_whitespace().collect();
        for w in toks.windows(2) {
            // `enum x;` too: GNU C takes the forward declaration, and a
            // prototype naming an unknown enum is a warning.
            if w[0] == "struct" || w[0] == "union" || w[0] == "enum" {
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

/// The prefix of the macro names given to types spelled with typeof.
const TYPE_MACRO: &str = "FGFT_TYPE_";
/// The suffix of such a type's unqualified twin.
const WRITABLE: &str = "_RW";

/// The type a copy-in function writes its copy through: a type spelled
/// with typeof (a member of a kernel struct) may be const-qualified (`const
/// struct mii_phy_def *def`), and the copy is fgft's own, so its
/// qualifiers are dropped (`FGFT_UNQUAL`, under a macro name of its own).
pub(crate) fn writable(ty: &str) -> String {
    if ty.starts_with(TYPE_MACRO) {
        format!("{ty}{WRITABLE}")
    } else {
        ty.to_string()
    }
}

/// The C block appended to the main-module file that defines the entry
/// point: entry object, copy functions, thunk and stub.
pub fn emit_entry(e: &EntrySpec) -> Result<String, StubError> {
    e.check()?;
    // Types spelled with typeof (members of kernel structs fgft does not
    // read) get a macro name: declarations stay readable, and checkpatch
    // reads them as declarations.
    let accessors: Vec<Option<String>> = e.types.iter().map(|t| t.priv_accessor.clone()).collect();
    let mut e = e.clone();
    let mut type_macros = Vec::new();
    for (i, t) in e.types.iter_mut().enumerate() {
        if t.c_type.contains("typeof") {
            let m = format!("{TYPE_MACRO}{}_{}", e.name.to_uppercase(), i);
            type_macros.push(format!("#define {m} {}", t.c_type));
            let written = t.fields.iter().any(|f| f.copy_in && !f.path.is_empty());
            if written {
                // What its copy is written through (see `writable`).
                type_macros.push(format!("#define {m}{WRITABLE} FGFT_UNQUAL({m})"));
            }
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
    if let Some(why) = stub::always_restore(e) {
        let _ = writeln!(s, "\t/* {why} */");
        let _ = writeln!(s, "\t.always_restore = true,");
    }
    if let Some(h) = &e.heap {
        // The driver's heap, which its in-place bodies may touch (the SFI
        // module defines it).
        let _ = writeln!(s, "\t.heap = &{h},");
    }
    let _ = writeln!(s, "}};\n");
    // Forward declarations of copy (or place) functions (types may refer
    // to each other).
    let checked = copy::checked_types(e);
    for (i, &check) in checked.iter().enumerate() {
        let mut protos: Vec<String> = if e.in_place {
            place::prototypes(e, i).into()
        } else {
            copy::prototypes(e, i).into()
        };
        if check {
            protos.extend(copy::check_prototypes(e, i));
        }
        for p in protos {
            let _ = writeln!(s, "{}", wrap_call(0, &p, ";"));
        }
    }
    if !e.types.is_empty() {
        s.push('\n');
    }
    for i in 0..e.types.len() {
        if e.in_place {
            place::emit_type(&mut s, e, i, &accessors);
        } else {
            copy::emit_type(&mut s, e, i, &accessors);
        }
        if checked[i] {
            copy::emit_check(&mut s, e, i, &checked, &accessors);
        }
    }
    stub::emit_thunk(&mut s, e, &checked);
    stub::emit_stub(&mut s, e);
    Ok(tidy(&s))
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
            abort_extra: AbortExtra::default(),
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
                    priv_accessor: Some("netdev_priv".into()),
                    rights: Rights::RW,
                    priv_only: false,
                    container: None,
                    container_rw: false,
                    out_ptrs: Vec::new(),
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
                    priv_accessor: None,
                    rights: Rights::RW,
                    priv_only: true,
                    container: None,
                    container_rw: false,
                    out_ptrs: Vec::new(),
                    why: "netdev_priv".into(),
                },
            ],
            globals: vec![],
            kernel_globals: vec!["jiffies".into()],
            is_static: true,
            orig: None,
            stage_times: false,
            in_place: false,
            always_restore: None,
            heap: None,
            retry: false,
            ret_ok: None,
        }
    }

    #[test]
    fn a_retry_entry_runs_an_aborted_call_once_more() {
        let mut e = entry();
        let plain = emit_entry(&e).unwrap();
        assert!(!plain.contains("fgft_txn_retry"), "{plain}");
        e.retry = true;
        let c = emit_entry(&e).unwrap();
        let again = c.find("again:\n").expect("label");
        let begin = c.find("txn = fgft_txn_begin(").expect("begin");
        assert!(again < begin, "{c}");
        assert!(
            c.contains("abort:\n\tif (!retried && !fgft_txn_retriable(txn))\n\t\tretried = 1;\n\terr = fgft_txn_abort(txn);\n\tif (!retried) {\n\t\tretried = fgft_txn_retry(&fgft_ep_drv_get_thing, err);\n\t\tif (retried)\n\t\t\tgoto again;\n\t}\n"),
            "{c}"
        );
        // The retry's time, from its start to its commit.
        assert!(
            c.contains("\tfgft_txn_commit(txn);\n\tif (retried)\n\t\tfgft_txn_retried(&fgft_ep_drv_get_thing, retried);\n"),
            "{c}"
        );
    }

    #[test]
    fn a_returned_value_the_caller_trusts_is_tested_in_the_thunk() {
        let mut e = entry();
        assert!(!emit_entry(&e).unwrap().contains("FGFT_CAUSE_RET"));
        e.ret_ok = Some((
            "a->ret <= 0 || a->ret <= HZ / 2".into(),
            "a frequency".into(),
        ));
        let c = emit_entry(&e).unwrap();
        let call = c
            .find("a->ret = fgft_sfi_entry_drv_get_thing(")
            .expect("call");
        let test = c
            .find("\t/* a frequency */\n\tif (!(a->ret <= 0 || a->ret <= HZ / 2))\n\t\tfgft_fail_cause(FGFT_CAUSE_RET);\n")
            .unwrap_or_else(|| panic!("{c}"));
        assert!(call < test, "{c}");
    }

    #[test]
    fn pointers_copy_out_stores_are_checked_in_the_body_first() {
        let mut e = entry();
        let plain = emit_entry(&e).unwrap();
        assert!(!plain.contains("fgft_out_ptr"), "nothing to check: {plain}");
        // The private area stores a pointer (`last`) copy-out writes back.
        e.types[1].fields.push(FieldSpec {
            path: "last".into(),
            copy_in: true,
            copy_out: true,
            how: FieldHow::Assign,
        });
        e.types[1].out_ptrs = vec!["last".into()];
        let c = emit_entry(&e).unwrap();
        // The thunk checks from the copy's original, after the body.
        let call = c
            .find("a->ret = fgft_sfi_entry_drv_get_thing(")
            .expect("call");
        let check = c
            .find("fgft_check_out_drv_get_thing_net_device(txn,\n\t\t\tfgft_obj_to_orig(txn, a->netdev), NULL);")
            .or_else(|| c.find("fgft_check_out_drv_get_thing_net_device(txn, fgft_obj_to_orig(txn, a->netdev),"))
            .unwrap_or_else(|| panic!("the thunk checks: {c}"));
        assert!(call < check, "{c}");
        assert!(
            c.contains("\tstruct fgft_txn *txn = fgft_current();\n"),
            "{c}"
        );
        // The owner reaches the private area's check, which checks `last`.
        assert!(
            c.contains("fgft_check_out_fields_drv_get_thing_drv_priv(txn, netdev_priv(o),"),
            "{c}"
        );
        assert!(c.contains("\tfgft_out_ptr(o->last, c->last);\n"), "{c}");
        // Copy-out stores a copy's original, not the raw value.
        assert!(
            c.contains("\to->last = fgft_orig_or_self(txn, c->last);\n"),
            "{c}"
        );
        assert!(!c.contains("\to->last = c->last;"), "{c}");
        // In place, nothing is copied out and nothing is checked here.
        e.in_place = true;
        assert!(!emit_entry(&e).unwrap().contains("fgft_out_ptr"));
    }

    #[test]
    fn an_embedded_object_used_in_place_is_granted_with_its_container() {
        let mut e = entry();
        e.in_place = true;
        e.types[0].container = Some(("struct drv_inode".into(), "vfs".into()));
        let c = emit_entry(&e).unwrap();
        assert!(
            c.contains("\tret = fgft_place_obj(txn,\n\t\t\t     (const char *)o - offsetof(struct drv_inode, vfs),\n\t\t\t     sizeof(struct drv_inode), FGFT_RW);\n\tif (ret < 0)\n\t\treturn ret;\n"),
            "{c}"
        );
        e.types[0].container = None;
        assert!(!emit_entry(&e).unwrap().contains("offsetof"));
    }

    #[test]
    fn in_place_entries_grant_objects_where_they_are_and_copy_nothing() {
        let mut e = entry();
        e.in_place = true;
        e.types[1].fields.push(FieldSpec {
            path: "ring".into(),
            copy_in: true,
            copy_out: false,
            how: FieldHow::Blob {
                len: "o->count * sizeof(*o->ring)".into(),
                elem: None,
            },
        });
        let c = emit_entry(&e).unwrap();
        for needle in [
            "\tfgft_txn_log_stores(txn);\n\terr = fgft_place_drv_get_thing_net_device(txn, netdev);\n\tif (err)\n\t\tgoto abort;",
            "err = fgft_place_blob(txn, buf, 64, FGFT_RW);",
            // The net_device with its private area, once.
            "size = FGFT_PRIV_OFFSET(o, netdev_priv(o)) +",
            "ret = fgft_place_obj(txn, o, size, FGFT_RW);\n\tif (ret <= 0)\n\t\treturn ret;\n\treturn fgft_place_fields_drv_get_thing_net_device(txn, o);",
            "ret = fgft_place_fields_drv_get_thing_drv_priv(txn, netdev_priv(o));",
            "ret = fgft_place_obj(txn, o->ring, o->count * sizeof(*o->ring), FGFT_R);\n\tif (ret < 0)\n\t\treturn ret;",
            "fgft_txn_call(txn, fgft_thunk_drv_get_thing, &a);\n\tif (fgft_txn_failed(txn))\n\t\tgoto abort;\n\tfgft_txn_commit(txn);",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        // No copy is made, written back or translated.
        for absent in [
            "fgft_copy_",
            "fgft_blob_out",
            "(void **)&a.",
            "o->msg_enable = ",
        ] {
            assert!(!c.contains(absent), "`{absent}` in:\n{c}");
        }
        assert!(helpers_header().contains("static inline int fgft_place_blob("));
    }

    #[test]
    fn stub_has_every_step() {
        let c = emit_entry(&entry()).unwrap();
        for needle in [
            "fgft_txn_begin(&fgft_ep_drv_get_thing, (void *)netdev)",
            "err = fgft_dev_ensure((void *)netdev, &fgft_dev_ops_drv);\n\tif (err)\n\t\treturn err;\n\ttxn = fgft_txn_begin",
            "return drv_get_thing(netdev, buf);",
            "err = fgft_copy_in_drv_get_thing_net_device(txn, netdev,\n",
            "fgft_copy_blob(txn, buf, 64, FGFT_RW, (void **)&a.buf)",
            "fgft_txn_call(txn, fgft_thunk_drv_get_thing, &a);",
            "fgft_blob_out(txn, (void *)buf, 64);",
            "o->msg_enable = c->msg_enable;",
            "err = fgft_txn_abort(txn);\n\treturn err;",
            "a->ret = fgft_sfi_entry_drv_get_thing(a->netdev, a->buf);",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        assert!(!c.lines().any(|l| l.ends_with(' ') || l.ends_with('\t')));
    }

    #[test]
    fn aborts_run_the_tables_statements_and_a_restored_device_its_own() {
        let mut e = entry();
        e.ret = "int".into();
        e.abort = AbortReturn::Value("7".into());
        e.abort_extra = AbortExtra {
            run: Some(("drop_it(buf); count(netdev);".into(), "why".into())),
            restored: Some(RestoredAbort {
                value: "0".into(),
                run: Some("finish(netdev);".into()),
                why: "restored".into(),
            }),
        };
        let c = emit_entry(&e).unwrap();
        // Begin failures: the base abort, its statements one per line.
        assert!(
            c.contains("\t\t(void)err;\n\t\tdrop_it(buf);\n\t\tcount(netdev);\n\t\treturn 7;\n"),
            "{c}"
        );
        // After the body: the restored device's abort.
        assert!(
            c.contains("abort:\n\terr = fgft_txn_abort(txn);\n\t(void)err;\n\tfinish(netdev);\n\treturn 0;\n}"),
            "{c}"
        );
        assert!(c.contains("drop_it(buf) and count(netdev)"), "{c}");
        // No device checkpoint: nothing is restored, the base abort stays.
        e.dev_ops = None;
        let c = emit_entry(&e).unwrap();
        assert!(
            c.contains("abort:\n\terr = fgft_txn_abort(txn);\n\t(void)err;\n\tdrop_it(buf);\n\tcount(netdev);\n\treturn 7;\n}"),
            "{c}"
        );
        assert!(!c.contains("finish("), "{c}");
    }

    #[test]
    fn stage_times_stamp_every_stage_and_the_plain_call() {
        let mut e = entry();
        e.stage_times = true;
        let c = emit_entry(&e).unwrap();
        for needle in [
            "\tu64 fgft_ts[FGFT_ST_NR + 1];\n",
            "fgft_ts[FGFT_ST_BEGIN] = fgft_stamp();\n\ttxn = fgft_txn_begin(",
            "a.ret = drv_get_thing(netdev, buf);\n\t\tfgft_stage_plain(&fgft_ep_drv_get_thing,\n\t\t\t\t fgft_ts[FGFT_ST_BEGIN]);\n\t\treturn a.ret;",
            "fgft_ts[FGFT_ST_GRANT] = fgft_stamp();\n\tfgft_ts[FGFT_ST_COPY_IN] = fgft_stamp();",
            "fgft_ts[FGFT_ST_BODY] = fgft_stamp();\n\tfgft_txn_call(",
            "fgft_ts[FGFT_ST_COMMIT] = fgft_stamp();\n\tfgft_txn_commit(txn);\n\tfgft_ts[FGFT_ST_NR] = fgft_stamp();\n\tfgft_stage_add(&fgft_ep_drv_get_thing, fgft_ts);",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        assert!(!emit_entry(&entry()).unwrap().contains("fgft_stamp"));
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
            members: vec![("head".into(), "buf->end + 8".into(), Rights::RW)],
        };
        let c = emit_entry(&e).unwrap();
        for needle in [
            "\tc->rx_ring = o->rx_ring;\n\tret = fgft_grant_shared(txn, o->rx_ring, RX_LEN, FGFT_RW);\n\tif (ret)\n\t\treturn ret;",
            "err = fgft_grant_shared(txn, buf, 64, FGFT_R);\n\tif (err)\n\t\tgoto abort;",
            "err = fgft_grant_shared(txn, buf->head, buf->end + 8, FGFT_RW);\n\tif (err)\n\t\tgoto abort;",
        ] {
            assert!(c.contains(needle), "missing `{needle}` in:\n{c}");
        }
        // Neither copied nor written back nor translated.
        assert!(!c.contains("fgft_copy_blob(txn, buf"), "{c}");
        assert!(!c.contains("fgft_blob_out(txn, (void *)buf"), "{c}");
        assert!(!c.contains("(void **)&a.buf"), "{c}");
        assert!(!c.contains("o->rx_ring = "), "{c}");
        assert!(helpers_header().contains("#define fgft_grant_shared("));
    }

    #[test]
    fn long_comments_are_wrapped() {
        let w = wrap_comments(&format!("\t/* {} */\nint x;\n", "word ".repeat(30).trim()));
        assert!(w.lines().all(|l| l.len() <= 80), "{w}");
        assert!(w.starts_with("\t/*\n\t * word"), "{w}");
        assert!(w.ends_with("\t */\nint x;\n"), "{w}");
    }

    #[test]
    fn private_areas_use_the_relations_accessor() {
        let c = emit_entry(&entry()).unwrap();
        assert!(c.contains("FGFT_PRIV_OFFSET(o, netdev_priv(o))"), "{c}");
        let mut other = entry();
        other.types[0].priv_accessor = Some("my_priv".into());
        let c = emit_entry(&other).unwrap();
        assert!(
            c.contains("my_priv(c)") && !c.contains("netdev_priv("),
            "{c}"
        );
        let mut none = entry();
        none.types[0].priv_accessor = None;
        assert!(emit_entry(&none).is_err());
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
            "err = fgft_copy_in_e1000_get_ringparam_e1000_adapter(txn, o->something_long, (void **)&c->something_long)",
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
