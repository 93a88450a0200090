//! One isolated entry point: its checks, kernel calls, member uses,
//! parameters, globals, slots and abort value.  `plan_entry` runs the
//! phases in order; each phase is a function of the inputs and what the
//! phases before it found.

use super::{
    abort_for, sfi_dup_ok, shown_origin, slot_abort, slot_name, type_restored, EntryPlan, FileRole,
    Inputs, Refs, TypeBuilder, Uses, ValueRefs,
};
use crate::diag::Located;
use crate::kernel::{Class, Kernel};
use crate::plan::table::ApiEntry;
use fgft_annotations::HintKind;
use fgft_facts::apicalls::{self, ApiUse};
use fgft_facts::callgraph::Closure;
use fgft_facts::ctype::CType;
use fgft_facts::model::{AccessKind, CallTarget};
use fgft_facts::program::{FileId, FnDef, FnId};
use fgft_stubs::{EntrySpec, GlobalSpec, ParamSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// Sites already warned about (one warning per site, whatever the entries
/// that reach it).
pub(super) type Reported = BTreeSet<(FileId, usize)>;

/// Plans one entry point; its diagnostics go to `diags`.
pub(super) fn plan_entry(
    inp: &Inputs<'_>,
    driver: &str,
    reported: &mut Reported,
    def: FnId,
    closure: Closure,
    refs: &Refs,
    diags: &mut Vec<Located>,
) -> EntryPlan {
    let d = &inp.prog.fns[def];
    let name = d.name.clone();
    let value_refs = refs.of(inp.prog, inp.facts, &name);
    diags.extend(entry_warnings(inp, d, &value_refs));
    diags.extend(closure_warnings(inp, reported, &name, &closure));
    let (apis, mut kdiags) = kernel_calls(inp, &name, &closure);
    diags.append(&mut kdiags);

    let mut uses = Uses::of_closure(inp.prog, inp.facts, &closure);
    let ptr = uses.add_ptr_uses(inp.prog, inp.facts, def, &closure);
    container_hints(inp, d, &mut uses);
    let slots = slots(inp, &name, refs);
    let in_place = slots.iter().any(|s| inp.slots.is_in_place(s));
    if in_place {
        uses.in_place = Some(closure.deref_roots(inp.facts));
    }

    let mut b = TypeBuilder::new(inp, &uses, &name);
    let mut params = Vec::new();
    for (k, p) in d.params.iter().enumerate() {
        let hints: Vec<&fgft_annotations::Hint> = inp.ann.param_hints(&name, &p.name).collect();
        let pu = ptr.params.get(&k).cloned().unwrap_or_default();
        let how = b.param(d, k, &hints, &pu);
        params.push(ParamSpec {
            name: p.name.clone(),
            decl: p.text.clone(),
            how,
        });
    }
    let (mut types, mut tdiags, hints) = b.finish();
    diags.append(&mut tdiags);
    if in_place {
        embedded_in(inp, &closure, &uses, &mut types);
    }
    let home = match stub_home(inp, d, &types) {
        Ok(h) => h,
        Err(mut u) => {
            diags.append(&mut u);
            None
        }
    };

    let includes = stub_includes(inp, home.unwrap_or(d.file), &types);
    let (globals, kernel_globals) = globals(inp, &closure, &ptr.global_writes);
    let (abort, abort_extra) = slot_abort(&slots, d, inp.slots).unwrap_or_else(|| {
        (
            abort_for(&d.ret, &d.ret_text, inp.slots),
            type_restored(&d.ret_text, d, inp.slots),
        )
    });
    let key = dev_key(inp, d);
    let retry = inp
        .ann
        .retries(&name, &slots, slots.iter().any(|s| inp.slots.is_retry(s)));
    let always_restore = unmarked_accessor(inp, &closure);
    let ret_ok = super::abort::slot_return(&slots, d, inp.slots);
    let spec = EntrySpec {
        driver: driver.to_string(),
        name: name.clone(),
        origin: inp.origin(def),
        slots,
        ret: d.ret_text.trim().to_string(),
        abort,
        abort_extra,
        err: "-EIO".into(),
        params,
        dev_key: key.expr.clone(),
        dev_ops: None,
        types,
        globals,
        kernel_globals,
        is_static: d.is_static && home.is_none(),
        orig: home.map(|_| format!("fgft_orig_{name}")),
        stage_times: false,
        in_place,
        always_restore,
        retry,
        heap: None,
        ret_ok,
    };
    EntryPlan {
        spec,
        def,
        closure,
        apis,
        refs: value_refs,
        pasted: pasted_slots(inp, &name),
        hints,
        home,
        dev_key_ty: key.ty,
        dev_key_param: key.param,
        includes,
    }
}

/// The kernel headers that define the records `types` walks, where the
/// unit `unit` does not see them.
fn stub_includes(
    inp: &Inputs<'_>,
    unit: FileId,
    types: &[fgft_stubs::TypeSpec],
) -> BTreeSet<String> {
    let Some(k) = inp.kernel else {
        return BTreeSet::new();
    };
    let path = &inp.prog.files[unit].path;
    types
        .iter()
        .filter_map(|t| {
            let tag = t
                .c_type
                .strip_prefix("struct ")
                .or_else(|| t.c_type.strip_prefix("union "))?;
            k.header_for(path, tag).map(str::to_string)
        })
        .collect()
}

/// A register access of the closure that the SFI module's redefined
/// accessors do not see: one in a driver header (its static inline is
/// compiled before the SFI header redefines the accessors).  Then an abort
/// restores the device whether or not the call touched it; the reason.
fn unmarked_accessor(inp: &Inputs<'_>, closure: &Closure) -> Option<String> {
    for f in &closure.fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        for c in &ff.calls {
            let CallTarget::Kernel(k) = &c.target else {
                continue;
            };
            if inp.table.device_accessors([k]).is_empty() {
                continue;
            }
            if inp
                .files
                .get(c.at.file)
                .is_some_and(|x| x.role == FileRole::Header)
            {
                return Some(format!(
                    "{k}() in {}, a header compiled before the SFI module redefines the register accessors",
                    shown_origin(inp, c.at.file, c.at.line)
                ));
            }
        }
    }
    None
}

/// The top-level items holding a slot of `name` whose text does not name
/// it (a macro pastes the name together).
fn pasted_slots(inp: &Inputs<'_>, name: &str) -> Vec<(FileId, Range<usize>)> {
    let prog = inp.prog;
    let mut pasted: Vec<(FileId, Range<usize>)> = Vec::new();
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
        let has_ident = fgft_base::lex::has_token(&pf.text[item.clone()], name);
        if !has_ident && !pasted.contains(&(*fid, item.clone())) {
            pasted.push((*fid, item));
        }
    }
    pasted
}

/// The device key of an entry's transactions.
struct DevKey {
    /// C expression over the parameters (`dev`, `napi->dev`; `NULL`).
    expr: String,
    /// Its type (a pointer; Unknown for none).
    ty: CType,
    /// The parameter it comes from (empty for none).
    param: String,
}

/// The device key a transaction is keyed by (pm-rules.toml `[keys]` and
/// `[key-via]`): the first pointer parameter of a key type; else the key a
/// parameter leads to (a frame's device); else a `void *` parameter the
/// entry casts to a key type (an interrupt handler's dev_instance); else
/// the first pointer parameter.  An entry whose key conversion is
/// annotated keeps its first pointer parameter, which the annotation's
/// expression is written over.
fn dev_key(inp: &Inputs<'_>, d: &FnDef) -> DevKey {
    let prog = inp.prog;
    let ptrs: Vec<_> = d.params.iter().filter(|p| p.ty.is_pointer()).collect();
    let record = |t: &CType| match prog.resolve(t) {
        CType::Ptr(p) => prog.resolve(&p).record().map(str::to_string),
        _ => None,
    };
    let first = || match ptrs.first() {
        Some(p) => DevKey {
            expr: p.name.clone(),
            ty: prog.resolve(&p.ty),
            param: p.name.clone(),
        },
        None => DevKey {
            expr: "NULL".into(),
            ty: CType::Unknown,
            param: String::new(),
        },
    };
    if inp.ann.key_to_dev_of(&d.name).is_some() {
        return first();
    }
    let rules = inp.pm_rules;
    for p in &ptrs {
        if let Some(r) = record(&p.ty).filter(|r| rules.key_to_dev(r).is_some()) {
            return DevKey {
                expr: p.name.clone(),
                ty: CType::ptr(CType::Record(r)),
                param: p.name.clone(),
            };
        }
    }
    for p in &ptrs {
        if let Some(v) = record(&p.ty).and_then(|r| rules.key_via(&r)) {
            return DevKey {
                expr: v.key.replace('$', &p.name),
                ty: CType::ptr(CType::Record(v.ty.clone())),
                param: p.name.clone(),
            };
        }
    }
    let text = &prog.files[d.file].text;
    let body = text.get(d.body.clone()).unwrap_or_default();
    for p in &ptrs {
        if !matches!(prog.resolve(&p.ty), CType::Ptr(t) if *t == CType::Void) {
            continue;
        }
        if let Some(r) = cast_of(body, &p.name).filter(|r| rules.key_to_dev(r).is_some()) {
            return DevKey {
                expr: p.name.clone(),
                ty: CType::ptr(CType::Record(r)),
                param: p.name.clone(),
            };
        }
    }
    first()
}

/// The record type a function body gives its `void *` parameter `name`:
/// `(struct X *)name`, or `struct X *v = name;`.
fn cast_of(body: &str, name: &str) -> Option<String> {
    for r in fgft_base::lex::ident_tokens(body) {
        if &body[r.clone()] != name {
            continue;
        }
        let before = body[..r.start].trim_end();
        let after = body[r.end..].trim_start();
        // `(struct X *) name`
        if let Some(b) = before.strip_suffix(')') {
            let b = b.trim_end();
            if let Some(b) = b.strip_suffix('*') {
                if let Some(open) = b.rfind('(') {
                    let ty = b[open + 1..].trim();
                    if ty.starts_with("struct ") && fgft_base::ident::is_ident(ty[7..].trim()) {
                        return Some(format!("struct {}", ty[7..].trim()));
                    }
                }
            }
        }
        // `struct X *v = name;`
        if after.starts_with(';') || after.starts_with(',') {
            if let Some(b) = before.strip_suffix('=') {
                let b = b.trim_end();
                let b = b.trim_end_matches(|c: char| fgft_base::ident::is_char(c));
                if let Some(b) = b.trim_end().strip_suffix('*') {
                    let line = b.rsplit([';', '{', '}', '\n']).next().unwrap_or(b).trim();
                    if let Some(tag) = line.strip_prefix("struct ") {
                        if fgft_base::ident::is_ident(tag.trim()) {
                            return Some(format!("struct {}", tag.trim()));
                        }
                    }
                }
            }
        }
    }
    None
}

/// Warnings about the entry itself: never stored in a slot, defined
/// conditionally, variadic.
fn entry_warnings(inp: &Inputs<'_>, d: &FnDef, refs: &ValueRefs) -> Vec<Located> {
    let name = &d.name;
    let mut diags = Vec::new();
    // The entry must sit in a slot, or its stub is unreachable.
    let nrefs = refs.sites.len()
        + inp
            .roots
            .iter()
            .filter(|(_, r)| r.function == *name)
            .count();
    if nrefs == 0 {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            true,
            format!("`{name}` is isolated but never stored in a slot: its stub will not be called"),
            "not used as a value anywhere",
            vec![],
        ));
    }
    if d.conditional {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            true,
            format!(
                "`{name}` is defined inside #if/#ifdef: its stub is not, so a configuration without the definition does not build"
            ),
            "conditional definition",
            vec![],
        ));
    }
    if d.variadic {
        diags.push(inp.diag_at(
            d.file,
            d.name_range.clone(),
            false,
            format!("`{name}` is variadic: fgft cannot isolate variadic entry points"),
            "variadic",
            vec![],
        ));
    }
    diags
}

/// Warnings about the entry's closure: functions defined in headers,
/// static locals, calls through pointers.
fn closure_warnings(
    inp: &Inputs<'_>,
    reported: &mut Reported,
    name: &str,
    closure: &Closure,
) -> Vec<Located> {
    let prog = inp.prog;
    let mut diags = Vec::new();
    for f in &closure.fns {
        let Some(&fd) = prog.defs(f).first() else {
            continue;
        };
        let fdef = &prog.fns[fd];
        // A header's function is compiled as written: only its calls of
        // kernel functions that have wrappers (or no entry) go around them.
        let wrapped_calls = || {
            inp.facts.per_fn.get(f).is_some_and(|ff| {
                ff.calls.iter().any(|c| match &c.target {
                    CallTarget::Kernel(k) => inp
                        .table
                        .apis
                        .get(k)
                        .map_or(!inp.ann.is_pure(k), |e| !e.inline),
                    _ => false,
                })
            })
        };
        if inp.files[fdef.file].role == FileRole::Header
            && f != name
            && wrapped_calls()
            && reported.insert((fdef.file, fdef.range.start))
        {
            diags.push(inp.diag_at(
                fdef.file,
                fdef.name_range.clone(),
                true,
                format!(
                    "`{f}` (reached from `{name}`) is defined in a header: it is compiled into the SFI module as written, so its kernel calls do not go through wrappers"
                ),
                "defined in a header",
                vec![],
            ));
        }
        if let Some(ff) = inp.facts.per_fn.get(f) {
            for s in &ff.local_statics {
                if !reported.insert((s.file, s.range.start)) {
                    continue;
                }
                diags.push(inp.diag(
                    s,
                    true,
                    format!("`{f}` (reached from `{name}`) has a static local: the SFI copy has its own, which is not transactional"),
                    "static local",
                    vec![],
                ));
            }
        }
    }
    diags.extend(super::icall::warnings(inp, reported, name, closure));
    diags
}

/// The kernel functions the closure calls, and an error for each that the
/// compensation table does not know.  With the kernel's view (`--kdir`), a
/// macro or static inline of the kernel's headers is no kernel call: it is
/// compiled into SFI code, and what it reaches is checked instead.
fn kernel_calls(inp: &Inputs<'_>, name: &str, closure: &Closure) -> (Vec<String>, Vec<Located>) {
    let mut diags = Vec::new();
    let uses = apicalls::kernel_calls(inp.facts, closure);
    let mut apis = Vec::new();
    for u in &uses {
        // A call that `#if` blocks of this configuration drop (atl2's
        // `ethtool_ioctl` under `#ifdef ETHTOOL_OPS_COMPAT`) is no call.
        // A driver macro renaming it (atl1.h: `#define atlx_hash_set
        // atl1_hash_set`) leaves no trace of the name either.
        let unknown = |k: &Kernel| {
            k.def(&u.name).is_none()
                && !k.is_exported(&u.name)
                && !inp.prog.macros.contains_key(&u.name)
        };
        if !inp.table.knows(&u.name)
            && inp
                .kernel
                .is_some_and(|k| unknown(k) && k.compiled_out(&u.name))
        {
            continue;
        }
        // The driver's own tracepoint: fired from the main module (plan
        // `tracepoints`), no kernel call.
        if !inp.table.knows(&u.name) && inp.prog.tracepoint_call(&u.name).is_some() {
            continue;
        }
        apis.push(u.name.clone());
        if inp.table.knows(&u.name) || inp.ann.is_pure(&u.name) {
            if let Some(e) = inp.table.apis.get(&u.name) {
                if !e.inline && !e.variadic {
                    diags.extend(arity_diags(inp, u, e));
                }
            }
            continue;
        }
        let site = &u.sites[0];
        let mut notes = Vec::new();
        if let Some(k) = inp.kernel {
            // Inside a kernel macro or inline: the classification of the
            // outer name covers it.
            if !u.direct && u.via_macro.iter().all(|m| k.def(m).is_some()) {
                continue;
            }
            // Another name of a function the table knows: that function's
            // wrapper serves it (the alias expands in SFI code).
            let target = k.resolve(&u.name);
            if target != u.name && (inp.table.knows(target) || inp.ann.is_pure(target)) {
                apis.push(target.to_string());
                continue;
            }
            match k.classify(&u.name, inp.table, &inp.ann.pure_apis) {
                Class::Header(_) => continue,
                Class::Blocked(problems) => {
                    for (what, fix) in problems {
                        diags.push(inp.diag(
                            site,
                            false,
                            format!("`{}`, called from the closure of isolated `{name}`: {what}", u.name),
                            "kernel helper reaches an unwrapped call",
                            vec![fix],
                        ));
                    }
                    continue;
                }
                Class::Exported => notes.push(format!(
                    "`{}` is exported by the kernel (Module.symvers of --kdir)",
                    u.name
                )),
                Class::Unknown => notes.push(format!(
                    "`{}` is neither exported by the kernel nor defined by the headers of the driver's units",
                    u.name
                )),
            }
        }
        let via = if u.via_macro.is_empty() {
            String::new()
        } else {
            format!(" (inside macro `{}`)", u.via_macro.join("`, `"))
        };
        let mut all_notes = vec![
            format!(
                "add [api.{}] to a compensations.toml in FGFT_TABLES or --tables, or declare it side-effect free: [kernel-api] pure = [\"{}\"] (or FGFT_PURE({});)",
                u.name, u.name, u.name
            ),
            format!("called {} time(s) in this closure", u.sites.len()),
        ];
        all_notes.extend(notes);
        if inp.kernel.is_none() {
            all_notes.push(
                "with --kdir, fgft reads the kernel's headers and tells macros and static inline helpers (no entry needed) from exported functions".into(),
            );
        }
        diags.push(inp.diag(
            site,
            false,
            format!(
                "kernel function `{}` is called from the closure of isolated `{name}`{via} but has no entry in the compensation table",
                u.name
            ),
            "unknown kernel function",
            all_notes,
        ));
    }
    (apis, diags)
}

/// The driver's containers of the objects `types` grants in place: a type
/// the closure converts with `container_of` to one driver record only
/// (`MSDOS_I(inode)`: a `struct msdos_inode_info` around the `struct
/// inode` at `vfs_inode`), whose members the closure uses.  Every object of
/// the type the operation gets is then embedded (the file system's own
/// inodes), and its container is granted in place with it.
fn embedded_in(
    inp: &Inputs<'_>,
    closure: &fgft_facts::callgraph::Closure,
    uses: &super::uses::Uses,
    types: &mut [fgft_stubs::TypeSpec],
) {
    let mut by: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    let mut written: BTreeSet<String> = BTreeSet::new();
    for c in super::containers_of(inp, &closure.fns) {
        let o = c.outer_tag.as_str();
        if inp.prog.records.contains_key(o) && uses.touches(inp.prog, &c.outer, 0) {
            by.entry(c.inner.to_string())
                .or_default()
                .insert((o.to_string(), c.member.to_string()));
            if uses.writes_into(&c.outer) {
                written.insert(o.to_string());
            }
        }
    }
    for t in types.iter_mut() {
        if let Some(set) = by.get(&t.c_type).filter(|s| s.len() == 1) {
            t.container = set.iter().next().cloned();
            t.container_rw = set.iter().any(|(o, _)| written.contains(o));
        }
    }
}

/// Where the stub is compiled.  The stub and its copy functions need the
/// definition of every driver record they copy; the entry's own unit sees
/// those of its own file and of headers.  A record another translation
/// unit defines (`struct ensoniq` of ens1370.c, reached from
/// ak4531_codec.c through `ak4531->private_data`) sends the stub to that
/// unit when it sees all the others: Ok(Some(unit)), with a trampoline to
/// the original left in the entry's unit.  Ok(None): the entry's unit.
/// No unit sees them all: the diagnostics.
fn stub_home(
    inp: &Inputs<'_>,
    d: &FnDef,
    types: &[fgft_stubs::TypeSpec],
) -> Result<Option<FileId>, Vec<Located>> {
    // The records it copies, and the containers it grants (offsetof).
    let recs: Vec<(&fgft_stubs::TypeSpec, FileId, usize)> = types
        .iter()
        .flat_map(|t| {
            let container = t.container.as_ref().map(|c| c.0.as_str());
            std::iter::once(t.c_type.as_str())
                .chain(container)
                .filter_map(move |c| inp.prog.records.get(c).map(|r| (t, r.file, r.line)))
        })
        .collect();
    let sees = |unit: FileId, file: FileId| {
        let f = &inp.files[file];
        file == unit
            || f.role == FileRole::Header
            || (f.role == FileRole::IncludedC && f.included_by.contains(&unit))
    };
    let unit = d.file;
    if recs.iter().all(|(_, f, _)| sees(unit, *f)) {
        return Ok(None);
    }
    let home = (0..inp.files.len())
        .filter(|&u| u != unit && inp.files[u].role == FileRole::Tu)
        .find(|&u| recs.iter().all(|(_, f, _)| sees(u, *f)));
    if home.is_some() {
        return Ok(home);
    }
    let mut out = Vec::new();
    for (t, file, line) in recs.iter().filter(|(_, f, _)| !sees(unit, *f)) {
        let site = fgft_facts::model::Site {
            file: unit,
            range: d.name_range.clone(),
            line: d.line,
            func: d.name.clone(),
        };
        out.push(inp.diag(
            &site,
            false,
            format!(
                "isolated `{}` needs a copy of {} ({}), which another translation unit defines ({}): the stub, compiled in {}, cannot see it, and no unit sees every record it copies",
                d.name,
                t.c_type,
                t.why,
                inp.files[*file].shown.display(),
                inp.files[unit].shown.display()
            ),
            "the stub's unit cannot see the type",
            vec![format!(
                "move the definition of {} into a header both units include (it is at {})",
                t.c_type,
                super::shown_origin(inp, *file, *line)
            )],
        ));
    }
    Err(out)
}

/// The arity of every call of `u` against the table's prototype.
fn arity_diags(inp: &Inputs<'_>, u: &ApiUse, e: &ApiEntry) -> Vec<Located> {
    let mut out = Vec::new();
    // Arity check at every site.
    for s in &u.sites {
        if let Some(ff) = inp.facts.per_fn.get(&s.func) {
            if let Some(c) = ff
                .calls
                .iter()
                .find(|c| c.at == *s && c.target == CallTarget::Kernel(u.name.clone()))
            {
                if c.args.len() != e.params.len() && c.via_macro.is_none() {
                    out.push(inp.diag(
                            s,
                            false,
                            format!(
                                "`{}` called with {} arguments; the compensation table's prototype has {}",
                                u.name,
                                c.args.len(),
                                e.params.len()
                            ),
                            "arity differs from the table",
                            vec![format!("table prototype from {}", e.source.display())],
                        ));
                }
            }
        }
    }
    out
}

/// Container hints on parameters: the member is of the parameter's type.
fn container_hints(inp: &Inputs<'_>, d: &FnDef, uses: &mut Uses) {
    let name = &d.name;
    for p in &d.params {
        for h in inp.ann.param_hints(name, &p.name) {
            if let (HintKind::Container { outer, member }, CType::Ptr(inner)) = (&h.kind, &p.ty) {
                uses.aliases.insert(
                    CType::FieldOf(Box::new(super::hint_record(outer)), member.clone()),
                    (**inner).clone(),
                );
            }
        }
    }
}

/// The driver globals the closure uses (copied in, and out when written)
/// and the kernel globals it names.
fn globals(
    inp: &Inputs<'_>,
    closure: &Closure,
    global_writes: &BTreeSet<String>,
) -> (Vec<GlobalSpec>, Vec<String>) {
    let prog = inp.prog;
    let mut globals = Vec::new();
    let mut kglobals = BTreeSet::new();
    let mut gnames: BTreeMap<String, (bool, bool)> = BTreeMap::new(); // name -> (copy, written)
    for f in &closure.fns {
        let Some(ff) = inp.facts.per_fn.get(f) else {
            continue;
        };
        kglobals.extend(ff.kernel_globals.iter().cloned());
        for g in &ff.globals {
            if sfi_dup_ok(prog, &g.name, &closure.fns)
                || prog.global_def(&g.name).is_none()
                || inp.compiled_out(&g.name)
            {
                continue;
            }
            let e = gnames.entry(g.name.clone()).or_insert((false, false));
            match g.kind {
                AccessKind::Addr if g.kobj_only => {}
                AccessKind::Write | AccessKind::ReadWrite => {
                    e.0 = true;
                    e.1 = true;
                }
                _ => e.0 = true,
            }
        }
    }
    for (g, (copy, written)) in gnames {
        if copy {
            globals.push(GlobalSpec {
                copy_out: written || global_writes.contains(&g),
                mapped: false,
                name: g,
            });
        }
    }
    (globals, kglobals.into_iter().collect())
}

/// The slots (`struct.field`) the entry is stored in.
fn slots(inp: &Inputs<'_>, name: &str, refs: &Refs) -> Vec<String> {
    let prog = inp.prog;
    let mut slots: Vec<String> = Vec::new();
    for (_, r) in inp.roots.iter().filter(|(_, r)| r.function == name) {
        let sl = format!("{}.{}", r.struct_name, r.field);
        if !slots.contains(&sl) {
            slots.push(sl);
        }
    }
    if let Some(rs) = refs.file_scope.get(name) {
        for (fid, r) in rs {
            if let Some(s) = slot_name(prog, *fid, r) {
                if !slots.contains(&s) {
                    slots.push(s);
                }
            }
        }
    }
    slots
}

#[cfg(test)]
mod tests {
    use super::cast_of;

    #[test]
    fn the_type_a_body_gives_its_void_parameter() {
        let c = |b: &str| cast_of(b, "dev_instance");
        assert_eq!(
            c("{\n\tstruct net_device *dev = dev_instance;\n\tint x;").as_deref(),
            Some("struct net_device")
        );
        assert_eq!(
            c("{ struct net_device *dev = (struct net_device *) dev_instance; }").as_deref(),
            Some("struct net_device")
        );
        assert_eq!(
            c("{ return foo((struct pci_dev *)dev_instance); }").as_deref(),
            Some("struct pci_dev")
        );
        assert_eq!(c("{ int *n = dev_instance; }"), None);
        assert_eq!(c("{ bar(dev_instance); }"), None);
    }
}
