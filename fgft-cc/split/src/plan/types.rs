//! Marshaled types: how each parameter and member crosses into the SFI
//! copy (copied, translated through the object tracker, sized by a hint,
//! shared in place or opaque).

use super::uses::ParamUse;
use super::{bare_tag, Inputs, Use, Uses};
use crate::diag::Located;
use fgft_annotations::{Access, HintKind, HintSource, HintTarget};
use fgft_base::ident;
use fgft_facts::ctype::CType;
use fgft_facts::model::{AccessKind, PtrUseKind, Relation, Site};
use fgft_facts::program::Program;
use fgft_stubs::{FieldHow, FieldSpec, ParamHow, Rights, TypeSpec};
use std::collections::{BTreeMap, BTreeSet};

pub(super) struct TypeBuilder<'a, 'b> {
    inp: &'a Inputs<'b>,
    uses: &'a Uses,
    types: Vec<TypeSpec>,
    index: BTreeMap<CType, usize>,
    diags: Vec<Located>,
    entry: String,
    /// The hints applied so far ([`super::hints::describe`]).
    pub(super) used: std::collections::BTreeSet<String>,
}

impl<'a, 'b> TypeBuilder<'a, 'b> {
    pub(super) fn new(inp: &'a Inputs<'b>, uses: &'a Uses, entry: &str) -> Self {
        TypeBuilder {
            inp,
            uses,
            types: Vec::new(),
            index: BTreeMap::new(),
            diags: Vec::new(),
            entry: entry.to_string(),
            used: Default::default(),
        }
    }

    /// The marshaled types built so far, and the problems found.
    pub(super) fn finish(
        self,
    ) -> (
        Vec<TypeSpec>,
        Vec<Located>,
        std::collections::BTreeSet<String>,
    ) {
        (self.types, self.diags, self.used)
    }
}

impl TypeBuilder<'_, '_> {
    pub(super) fn param(
        &mut self,
        d: &fgft_facts::program::FnDef,
        k: usize,
        hints: &[&fgft_annotations::Hint],
        pu: &[ParamUse],
    ) -> ParamHow {
        let p = &d.params[k];
        let name = &p.name;
        if let Some(h) = hints.first() {
            self.used.insert(super::hints::describe(h));
            return self.param_hinted(p, h, pu);
        }
        let CType::Ptr(pointee) = &p.ty else {
            return ParamHow::Value;
        };
        // Used as an array or a string: needs a hint.
        let array_use = pu.iter().find(|u| {
            matches!(
                u.1,
                PtrUseKind::Index | PtrUseKind::Arith | PtrUseKind::Sized(_)
            )
        });
        let str_use = pu.iter().find(|u| matches!(u.1, PtrUseKind::Str));
        if let Some((site, kind, _, _)) = array_use.or(str_use) {
            let (hint, what) = if matches!(kind, PtrUseKind::Str) {
                ("kind = \"nullterm\"".to_string(), "read as a string")
            } else {
                (
                    "kind = \"blob\", len = \"<bytes, over the other parameters>\"".to_string(),
                    "used as a buffer",
                )
            };
            let fgft_macro = if matches!(kind, PtrUseKind::Str) {
                "FGFT_NULLTERM".to_string()
            } else {
                "FGFT_BLOB(len)".to_string()
            };
            self.diags.push(self.inp.diag(
                site,
                false,
                format!(
                    "parameter `{name}` of isolated `{}` is {what} here, and fgft cannot tell its size",
                    self.entry
                ),
                "needs a marshaling hint",
                vec![
                    format!(
                        "add to the sidecar: [[hint]] function = \"{}\", param = \"{name}\", {hint}",
                        self.entry
                    ),
                    format!("or inline: `{} {}` in the parameter's declaration", p.text.trim(), fgft_macro),
                ],
            ));
            return ParamHow::Value;
        }
        // A pointer to a member of a bigger object that the function itself
        // converts with container_of (`napi` in a NAPI poll): marshal the
        // container, as a container hint would.
        if let Some((outer, member)) = self.param_container(d, k) {
            let ty = self.ty(&outer, format!("container of parameter `{name}`"));
            return ParamHow::Container { outer: ty, member };
        }
        let mut target = (**pointee).clone();
        if target == CType::Void {
            // A void * converted to a record by the closure.
            let conv = self.inp.facts.per_fn.get(&d.name).and_then(|ff| {
                ff.relations.iter().find_map(|r| match r {
                    Relation::ParamConv { index, to } if *index == k => Some(to.clone()),
                    _ => None,
                })
            });
            match conv {
                Some(t) if t.is_recordish() => target = t,
                _ => {
                    if let Some((site, ..)) = pu.first() {
                        self.diags.push(self.inp.diag(
                            site,
                            false,
                            format!(
                                "parameter `{name}` (void *) of isolated `{}` is dereferenced and fgft cannot tell what it points to",
                                self.entry
                            ),
                            "needs a marshaling hint",
                            vec![format!(
                                "add to the sidecar: [[hint]] function = \"{}\", param = \"{name}\", kind = \"opaque\", type = \"<C type>\" (or kind = \"blob\")",
                                self.entry
                            )],
                        ));
                    }
                    return ParamHow::Value;
                }
            }
        }
        if target.is_recordish() && self.uses.touches(self.inp.prog, &target, 0) {
            let ty = self.ty(&target, format!("parameter `{name}`"));
            return ParamHow::Obj { ty };
        }
        if !pu.is_empty() && !target.is_recordish() {
            // A single scalar through a pointer.
            let ty = self.scalar_obj(&target, &p.text, pu);
            if let Some(ty) = ty {
                return ParamHow::Obj { ty };
            }
        }
        ParamHow::Value
    }

    /// How a parameter with a marshaling hint crosses.
    fn param_hinted(
        &mut self,
        p: &fgft_facts::program::Param,
        h: &fgft_annotations::Hint,
        pu: &[ParamUse],
    ) -> ParamHow {
        let name = &p.name;
        match &h.kind {
            HintKind::NullTerm => ParamHow::Str,
            HintKind::Blob { len } => ParamHow::Blob {
                len: len.clone(),
                copy_out: pu.iter().any(|u| u.2.writes()) || !is_const_ptr(&p.text),
                rights: if pu.iter().any(|u| u.2.writes()) || !is_const_ptr(&p.text) {
                    Rights::RW
                } else {
                    Rights::R
                },
            },
            HintKind::Opaque { ty } => ParamHow::Blob {
                len: format!("sizeof({ty})"),
                copy_out: !is_const_ptr(&p.text),
                rights: if is_const_ptr(&p.text) {
                    Rights::R
                } else {
                    Rights::RW
                },
            },
            HintKind::NoDeref | HintKind::Recursive => {
                if let CType::Ptr(t) = &p.ty {
                    if matches!(h.kind, HintKind::Recursive)
                        && self.uses.touches(self.inp.prog, t, 0)
                    {
                        let ty = self.ty(t, format!("parameter `{name}`"));
                        return ParamHow::Obj { ty };
                    }
                }
                ParamHow::Value
            }
            HintKind::Shared { len, rights } => {
                let pointee = match &p.ty {
                    CType::Ptr(t) => Some(self.inp.prog.resolve(t)),
                    _ => None,
                };
                let mut members = Vec::new();
                if let Some(t) = pointee.filter(|t| t.is_recordish()) {
                    // A kernel contract passes the object by reference only
                    // where no pointer in it has to lead to a copy.
                    if matches!(h.source, HintSource::Contract { .. }) && self.follows_pointers(&t)
                    {
                        let ty = self.ty(
                            &t,
                            format!(
                                "parameter `{name}` (copied: the closure follows its pointers)"
                            ),
                        );
                        return ParamHow::Obj { ty };
                    }
                    members = self.shared_members(&t, name);
                }
                ParamHow::Shared {
                    len: len.clone(),
                    rights: shared_rights(*rights),
                    members,
                }
            }
            HintKind::Container { outer, member } => {
                let ot = super::hint_record(outer);
                let ty = self.ty(&ot, format!("container of parameter `{name}`"));
                ParamHow::Container {
                    outer: ty,
                    member: member.clone(),
                }
            }
        }
    }

    /// The container (`struct outer`, member) that function `d` converts
    /// its parameter `k` to with container_of, when that is the only
    /// parameter of its type and every such conversion agrees.
    fn param_container(&self, d: &fgft_facts::program::FnDef, k: usize) -> Option<(CType, String)> {
        let prog = self.inp.prog;
        let CType::Ptr(pointee) = &d.params[k].ty else {
            return None;
        };
        let pointee = prog.resolve(pointee);
        if !pointee.is_recordish() {
            return None;
        }
        let same_type = d
            .params
            .iter()
            .filter(|p| matches!(&p.ty, CType::Ptr(t) if prog.resolve(t) == pointee))
            .count();
        if same_type != 1 {
            return None;
        }
        let ff = self.inp.facts.per_fn.get(&d.name)?;
        let mut found: Option<(CType, String)> = None;
        for r in &ff.relations {
            if let Relation::Container {
                inner,
                outer,
                member,
            } = r
            {
                if prog.resolve(inner) != pointee {
                    continue;
                }
                let outer = prog.resolve(outer);
                if !outer.is_recordish() {
                    return None;
                }
                match &found {
                    Some((o, m)) if *o != outer || m != member => return None,
                    _ => found = Some((outer, member.clone())),
                }
            }
        }
        found
    }

    /// A pointer to one scalar (`u32 *data`): copied whole.
    fn scalar_obj(
        &mut self,
        target: &CType,
        _decl: &str,
        pu: &[(Site, PtrUseKind, AccessKind, CType)],
    ) -> Option<usize> {
        if *target == CType::Unknown {
            return None;
        }
        let key = CType::ptr(target.clone());
        if let Some(&i) = self.index.get(&key) {
            return Some(i);
        }
        let writes = pu.iter().any(|u| u.2.writes());
        let i = self.types.len();
        self.index.insert(key, i);
        self.types.push(TypeSpec {
            ident: format!("scalar_{}", target.ident()),
            c_type: target.c_spelling(),
            fields: Vec::new(),
            priv_area: None,
            priv_accessor: None,
            rights: if writes { Rights::RW } else { Rights::R },
            priv_only: false,
            container: None,
            container_rw: false,
            // A pointer behind a pointer (`void **out`): copy-out writes
            // the pointer itself back.
            out_ptrs: if writes && is_data_ptr(&self.inp.prog.resolve(target)) {
                vec![String::new()]
            } else {
                Vec::new()
            },
            why: "a value behind a pointer parameter".into(),
        });
        // Whole-value copy: a pseudo member covering the object.
        self.types[i].fields.push(FieldSpec {
            path: String::new(),
            copy_in: true,
            copy_out: writes,
            how: FieldHow::Bytes,
        });
        Some(i)
    }

    /// Index of the marshaled type for `t`, building it on first use.
    fn ty(&mut self, t: &CType, why: String) -> usize {
        if let Some(&i) = self.index.get(t) {
            return i;
        }
        let i = self.types.len();
        self.index.insert(t.clone(), i);
        self.types.push(TypeSpec {
            ident: t.ident(),
            c_type: t.c_spelling(),
            fields: Vec::new(),
            priv_area: None,
            priv_accessor: None,
            rights: Rights::R,
            priv_only: false,
            container: None,
            container_rw: false,
            out_ptrs: Vec::new(),
            why,
        });
        let mut fields = Vec::new();
        let mut writes = false;
        if self.uses.whole.contains(t) {
            fields.push(FieldSpec {
                path: String::new(),
                copy_in: true,
                copy_out: true,
                how: FieldHow::Bytes,
            });
            writes = true;
        }
        self.collect_fields(t, t, "", 0, &mut fields, &mut writes);
        fields.sort_by(|a, b| a.path.cmp(&b.path));
        fields.dedup_by(|a, b| a.path == b.path);
        // Private area.
        if let Some((pt, accessor)) = self.uses.priv_of.get(t).cloned() {
            let p = self.ty(&pt, format!("private area of {}", t.c_spelling()));
            self.types[p].priv_only = !self.index_is_reached_elsewhere(&pt);
            if self.types[p].rights == Rights::RW {
                writes = true;
            }
            self.types[i].priv_area = Some(p);
            self.types[i].priv_accessor = Some(accessor);
        }
        self.types[i].out_ptrs = out_pointers(self.inp.prog, t, &fields);
        self.types[i].fields = fields;
        if writes {
            self.types[i].rights = Rights::RW;
        }
        i
    }

    fn index_is_reached_elsewhere(&self, _t: &CType) -> bool {
        // A private area is reached through its owner; a pointer to it found
        // elsewhere resolves to the same copy through the object tracker.
        false
    }

    /// Members of `t` used by the closure, with `prefix`; recurses into
    /// embedded records.  `root` is the type of the object being copied.
    fn collect_fields(
        &mut self,
        root: &CType,
        t: &CType,
        prefix: &str,
        depth: usize,
        out: &mut Vec<FieldSpec>,
        writes: &mut bool,
    ) {
        if depth > 8 {
            return;
        }
        let prog = self.inp.prog;
        let members = self.uses.members(t);
        let known = t.record().and_then(|tag| prog.records.get(tag)).cloned();
        // Embedded records of known structs that have used members.
        if let Some(r) = &known {
            for f in &r.fields {
                if let CType::Record(_) = &f.ty {
                    if self.uses.touches(prog, &f.ty, 0)
                        && !members
                            .iter()
                            .any(|(m, u)| m == &f.name && (u.read || u.write))
                    {
                        let pfx = format!("{prefix}{}.", f.name);
                        self.collect_fields(root, &f.ty.clone(), &pfx, depth + 1, out, writes);
                    }
                }
            }
        }
        // Members known (by alias) to be of another type, used or not.
        for (a, inner) in self.uses.aliases.clone() {
            if let CType::FieldOf(b, m) = &a {
                if **b == *t && !m.contains('.') {
                    let pfx = format!("{prefix}{m}.");
                    self.collect_fields(root, &inner, &pfx, depth + 1, out, writes);
                }
            }
        }
        for (m, u) in &members {
            let path = format!("{prefix}{m}");
            let fty = prog.resolve(&prog.field_type(t, m));
            // Embedded symbolic members (`netdev->dev.parent`).
            let sub = CType::FieldOf(Box::new(t.clone()), m.clone());
            let sym_sub = if let CType::FieldOf(..) = fty {
                fty.clone()
            } else {
                sub.clone()
            };
            if !u.read && !u.write {
                // Address taken or embedded only: descend into embedded
                // records; nothing to copy for the member itself.
                if let CType::Record(_) = &fty {
                    if self.uses.touches(prog, &fty, 0) {
                        let pfx = format!("{path}.");
                        self.collect_fields(root, &fty, &pfx, depth + 1, out, writes);
                    }
                } else if known.is_none() || matches!(fty, CType::FieldOf(..)) {
                    let pfx = format!("{path}.");
                    self.collect_fields(root, &sym_sub, &pfx, depth + 1, out, writes);
                }
                continue;
            }
            // A member used whole whose own members are written
            // (`&dev->stats` handed to a call, `dev->stats.rx_missed_errors
            // += n`): the written scalars are copied out one by one (other
            // contexts update their neighbours meanwhile); a written member
            // that is no scalar makes the whole member written.
            let inner = if u.write {
                Vec::new()
            } else {
                self.written_inside(&fty, &sym_sub)
            };
            let write = u.write || inner.iter().any(|(_, scalar)| !scalar);
            if write || !inner.is_empty() {
                *writes = true;
            }
            if !write {
                for (sub, _) in &inner {
                    out.push(FieldSpec {
                        path: format!("{path}.{sub}"),
                        copy_in: false,
                        copy_out: true,
                        how: FieldHow::Assign,
                    });
                }
            }
            // Hints on this member.
            // A hint inferred from one object's allocation counts only
            // where the member is indexed.
            let hint = bare_tag(t).and_then(|tag| {
                self.inp
                    .ann
                    .field_hints(&tag, m)
                    .find(|h| {
                        u.array_use.is_some()
                            || !matches!(h.source, HintSource::InferredObject { .. })
                    })
                    .cloned()
            });
            let how = if let Some(h) = &hint {
                self.used.insert(super::hints::describe(h));
                self.field_hinted(h, t, m, &fty, prefix, u)
            } else if prog.field(t, m).is_some_and(|f| f.iomem) {
                // An MMIO cookie (`void __iomem *`): C code never dereferences
                // it, the accessor wrappers (ioread32, writel, ...) take it as
                // is, so the pointer value is all the copy needs.
                FieldHow::Assign
            } else if is_flexible(&fty) || self.kernel_flexible(t, m) {
                // `u8 priv[]`: the object's tail, of a size only the code
                // that allocated the object knows.
                // Not copied: only indexed through does it need one (its
                // address alone is checked where it is dereferenced).
                if let Some((site, _)) = &u.array_use {
                    // A kernel record spelled symbolically is named by its tag.
                    let shown = match self.kernel_member(t, m) {
                        Some((_, tag, _)) if bare_tag(t).is_none() => {
                            CType::Record(format!("struct {tag}"))
                        }
                        _ => t.clone(),
                    };
                    self.flexible_member_diag(&shown, m, site);
                }
                continue;
            } else if let Some((site, kind)) = &u.array_use {
                if !matches!(fty, CType::Ptr(_)) {
                    // A member of unknown type used as an array: an array.
                    out.push(FieldSpec {
                        path,
                        copy_in: true,
                        copy_out: write,
                        how: FieldHow::Bytes,
                    });
                    continue;
                }
                self.array_member_diag(t, m, site, kind);
                FieldHow::Assign
            } else {
                self.ptr_how(&fty, t, m, u)
            };
            let _ = root;
            out.push(FieldSpec {
                path,
                copy_in: true,
                copy_out: write,
                how,
            });
        }
        self.shared_fields(t, prefix, out);
    }

    /// The written members inside a member of type `fty` (or, symbolically,
    /// `sym`), sorted: `written_paths` of both.
    fn written_inside(&self, fty: &CType, sym: &CType) -> Vec<(String, bool)> {
        let mut inner = Vec::new();
        self.written_paths(fty, "", 0, &mut inner);
        if fty != sym {
            self.written_paths(sym, "", 0, &mut inner);
        }
        inner.sort();
        inner.dedup();
        inner
    }

    /// The members of an embedded record of type `t` the closure writes,
    /// at any depth (`rx_missed_errors`, `a.b`), each with whether it is a
    /// scalar. A member of a kernel record the program does not lay out is
    /// typed symbolically (`FieldOf(struct net_device, stats)`).
    fn written_paths(&self, t: &CType, prefix: &str, depth: usize, out: &mut Vec<(String, bool)>) {
        if depth > 8 || !matches!(t, CType::Record(_) | CType::FieldOf(..)) {
            return;
        }
        let prog = self.inp.prog;
        for (m, u) in self.uses.members(t) {
            let fty = prog.resolve(&prog.field_type(t, &m));
            let path = format!("{prefix}{m}");
            if u.write {
                let scalar = !matches!(
                    fty,
                    CType::Record(_) | CType::Ptr(_) | CType::Array(..) | CType::Unknown
                );
                out.push((path, scalar));
                continue;
            }
            let pfx = format!("{path}.");
            self.written_paths(&fty, &pfx, depth + 1, out);
            let sub = CType::FieldOf(Box::new(t.clone()), m.clone());
            if fty != sub {
                self.written_paths(&sub, &pfx, depth + 1, out);
            }
        }
    }

    /// How a member with a marshaling hint is copied.
    fn field_hinted(
        &mut self,
        h: &fgft_annotations::Hint,
        t: &CType,
        m: &str,
        fty: &CType,
        prefix: &str,
        u: &Use,
    ) -> FieldHow {
        let prog = self.inp.prog;
        match &h.kind {
            HintKind::NullTerm => FieldHow::Str,
            HintKind::Blob { len } => {
                // An array of pointers whose targets the closure follows,
                // granted where they are (in place only: a copy would have
                // to swizzle every element).
                if let (CType::Ptr(el), true) = (&fty, self.uses.in_place.is_some()) {
                    if let CType::Ptr(target) = prog.resolve(el) {
                        let target = prog.resolve(&target);
                        if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                            let i = self.ty(
                                &target,
                                format!("targets of member {m} of {}", t.c_spelling()),
                            );
                            return FieldHow::PtrArray {
                                len: field_len_expr(prog, t, len, prefix),
                                target: i,
                            };
                        }
                    }
                }
                let elem = match &fty {
                    CType::Ptr(target) => {
                        let target = prog.resolve(target);
                        if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                            Some(self.ty(
                                &target,
                                format!("elements of member {m} of {}", t.c_spelling()),
                            ))
                        } else {
                            None
                        }
                    }
                    _ => None,
                };
                FieldHow::Blob {
                    len: field_len_expr(prog, t, len, prefix),
                    elem,
                }
            }
            HintKind::Opaque { ty } => FieldHow::Blob {
                len: format!("sizeof({ty})"),
                elem: None,
            },
            HintKind::NoDeref => FieldHow::Assign,
            HintKind::Shared { len, rights } => FieldHow::Shared {
                len: field_len_expr(prog, t, len, prefix),
                rights: shared_rights(*rights),
            },
            HintKind::Container { outer, member } => {
                let ot = super::hint_record(outer);
                let i = self.ty(
                    &ot,
                    format!("container of member {m} of {}", t.c_spelling()),
                );
                FieldHow::Container {
                    outer: i,
                    member: member.clone(),
                }
            }
            HintKind::Recursive => self.ptr_how(fty, t, m, u),
        }
    }

    /// A pointer member used as an array or a string: an error asking for
    /// the hint that sizes its target.
    fn flexible_member_diag(&mut self, t: &CType, m: &str, site: &Site) {
        let tag = bare_tag(t).unwrap_or_else(|| t.c_spelling());
        self.diags.push(self.inp.diag(
            site,
            false,
            format!(
                "member `{m}` of `{}` is a flexible array (the object's tail) used in the closure of isolated `{}`, and fgft cannot tell its size",
                t.c_spelling(),
                self.entry
            ),
            "needs a marshaling hint",
            vec![format!(
                "give what points to the `{tag}` a blob hint that covers the tail: [[hint]] ..., kind = \"blob\", len = \"sizeof(struct {tag}) + <tail bytes>\""
            )],
        ));
    }

    fn array_member_diag(&mut self, t: &CType, m: &str, site: &Site, kind: &PtrUseKind) {
        let tag = bare_tag(t).unwrap_or_else(|| t.c_spelling());
        let (what, hint) = if matches!(kind, PtrUseKind::Str) {
            ("read as a string", "kind = \"nullterm\"".to_string())
        } else {
            (
                "used as an array",
                "kind = \"blob\", len = \"<bytes, over the struct's members>\"".to_string(),
            )
        };
        self.diags.push(self.inp.diag(
            site,
            false,
            format!(
                "member `{m}` of `{}` is a pointer {what} in the closure of isolated `{}`, and fgft cannot tell the size of its target",
                t.c_spelling(),
                self.entry
            ),
            "needs a marshaling hint",
            vec![format!(
                "add to the sidecar: [[hint]] struct = \"{tag}\", field = \"{m}\", {hint}"
            )],
        ));
    }

    /// Shared memory is granted with every object of the struct that
    /// crosses, even when the closure reaches it only through other
    /// pointers (bounce buffers pointing into a DMA region).
    fn shared_fields(&mut self, t: &CType, prefix: &str, out: &mut Vec<FieldSpec>) {
        let prog = self.inp.prog;
        if let Some(tag) = bare_tag(t) {
            let shared: Vec<(String, String, Access, String)> = self
                .inp
                .ann
                .hints
                .iter()
                .filter_map(|h| match (&h.target, &h.kind) {
                    (HintTarget::Field { strukt, field }, HintKind::Shared { len, rights })
                        if *strukt == tag =>
                    {
                        Some((
                            field.clone(),
                            len.clone(),
                            *rights,
                            super::hints::describe(h),
                        ))
                    }
                    _ => None,
                })
                .collect();
            for (field, len, rights, desc) in shared {
                let path = format!("{prefix}{field}");
                if out.iter().any(|f| f.path == path) {
                    continue;
                }
                self.used.insert(desc);
                out.push(FieldSpec {
                    path,
                    copy_in: true,
                    copy_out: false,
                    how: FieldHow::Shared {
                        len: field_len_expr(prog, t, &len, prefix),
                        rights: shared_rights(rights),
                    },
                });
            }
        }
    }

    /// Whether the closure follows a pointer member of `t` to an object it
    /// marshals (so that an object of `t` used in place would lead the SFI
    /// code to the original instead of the copy).
    fn follows_pointers(&self, t: &CType) -> bool {
        let prog = self.inp.prog;
        self.uses.members(t).iter().any(|(m, u)| {
            if !(u.read || u.write) {
                return false;
            }
            let sym = CType::FieldOf(Box::new(t.clone()), m.clone());
            match prog.resolve(&prog.field_type(t, m)) {
                CType::Ptr(target) => {
                    let target = prog.resolve(&target);
                    (target.is_recordish() && self.uses.touches(prog, &target, 0))
                        || self.uses.touches(prog, &sym, 0)
                }
                _ => self.uses.touches(prog, &sym, 0),
            }
        })
    }

    /// The memory an object of `t` used in place through parameter `param`
    /// points to and that its `shared` member hints grant in place too:
    /// (member, length over the parameter, rights).
    fn shared_members(&mut self, t: &CType, param: &str) -> Vec<(String, String, Rights)> {
        let Some(tag) = bare_tag(t) else {
            return Vec::new();
        };
        let prog = self.inp.prog;
        let mut out = Vec::new();
        for h in &self.inp.ann.hints {
            if let (HintTarget::Field { strukt, field }, HintKind::Shared { len, rights }) =
                (&h.target, &h.kind)
            {
                if *strukt == tag {
                    self.used.insert(super::hints::describe(h));
                    out.push((
                        field.clone(),
                        len_expr_on(prog, t, len, "", param),
                        shared_rights(*rights),
                    ));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// How a read or written member of type `fty` is copied.
    fn ptr_how(&mut self, fty: &CType, base: &CType, m: &str, _u: &Use) -> FieldHow {
        let prog = self.inp.prog;
        match fty {
            CType::Ptr(target) => {
                let mut target = (**target).clone();
                if target == CType::Void || target == CType::Unknown {
                    if let Some(to) = self.uses.conv.get(&(base.clone(), m.to_string())) {
                        target = to.clone();
                    }
                }
                let target = prog.resolve(&target);
                if target.is_recordish()
                    && self.uses.touches(prog, &target, 0)
                    && !self.uses.value_only(base, m, &target)
                {
                    let i = self.ty(&target, format!("member {m} of {}", base.c_spelling()));
                    FieldHow::Ptr { target: i }
                } else {
                    FieldHow::Assign
                }
            }
            CType::Array(..) => FieldHow::Bytes,
            CType::FieldOf(..)
            | CType::Unknown
            | CType::Named(_)
            | CType::Record(_)
            | CType::PointeeOf(_) => {
                // A member of a kernel struct whose type is not known here
                // (`kcontrol->private_data`) that the closure converts to a
                // typed pointer (`struct chip *c = snd_kcontrol_chip(k)`).
                if let Some(to) = self.uses.conv.get(&(base.clone(), m.to_string())) {
                    let target = prog.resolve(to);
                    if target.is_recordish() && self.uses.touches(prog, &target, 0) {
                        let i = self.ty(&target, format!("member {m} of {}", base.c_spelling()));
                        return FieldHow::Ptr { target: i };
                    }
                }
                // Unknown member type: a pointer whose target is used, or bytes.
                let pointee = CType::PointeeOf(Box::new(if let CType::FieldOf(..) = fty {
                    fty.clone()
                } else {
                    CType::FieldOf(Box::new(base.clone()), m.to_string())
                }));
                if self.uses.touches(prog, &pointee, 0) {
                    let i = self.ty(
                        &pointee,
                        format!("target of member {m} of {}", base.c_spelling()),
                    );
                    FieldHow::Ptr { target: i }
                } else if self.kernel_array(base, m) {
                    // The kernel's headers declare it an array
                    // (`net_device.name`): copied as bytes.
                    FieldHow::Bytes
                } else {
                    // Unknown type with no sign of an array: plain assignment
                    // (right for scalars, bit-fields, structs and pointers).
                    // Without the kernel's headers that is a guess that does
                    // not compile for an array member (`char name[16]`).
                    if self.inp.kernel.is_none() && !self.inp.guess_kernel_types {
                        self.no_headers_diag(base, m);
                    }
                    FieldHow::Assign
                }
            }
            CType::Scalar(_) | CType::Void | CType::Func => FieldHow::Assign,
        }
    }
}

impl TypeBuilder<'_, '_> {
    /// A member of a kernel record whose type only the kernel's headers
    /// tell, copied with no headers read: refused at the entry point.
    fn no_headers_diag(&mut self, base: &CType, m: &str) {
        let prog = self.inp.prog;
        let Some(d) = prog.fns.iter().find(|f| f.name == self.entry) else {
            return;
        };
        let message = format!(
            "isolated `{}` copies member `{m}` of `{}`, whose type only the kernel's headers tell, and no kernel headers were read",
            self.entry,
            base.c_spelling()
        );
        if self.diags.iter().any(|x| x.message == message) {
            return;
        }
        let site = Site {
            file: d.file,
            range: d.name_range.clone(),
            line: d.line,
            func: d.name.clone(),
        };
        self.diags.push(self.inp.diag(
            &site,
            false,
            message,
            "its copy-in and copy-out need the member's type",
            vec![
                "give the kernel build directory with --kdir (e.g. /lib/modules/$(uname -r)/build), or install the linux-headers package of the target kernel: fgft-cc uses the running kernel's, or the newest installed, by default".into(),
            ],
        ));
    }

    /// Whether the kernel's headers (with --kdir) declare member `m` of the
    /// record `base` an array.
    fn kernel_array(&self, base: &CType, m: &str) -> bool {
        self.kernel_member(base, m)
            .is_some_and(|(k, tag, m)| k.member_is_array(&tag, &m).unwrap_or(false))
    }

    /// Whether the kernel's headers declare member `m` of `base` a
    /// flexible array.
    fn kernel_flexible(&self, base: &CType, m: &str) -> bool {
        self.kernel_member(base, m)
            .is_some_and(|(k, tag, m)| k.member_is_flexible(&tag, &m))
    }

    /// The kernel record and member path that member `m` of `base` is.
    fn kernel_member(
        &self,
        base: &CType,
        m: &str,
    ) -> Option<(&crate::kernel::Kernel, String, String)> {
        let k = self.inp.kernel?;
        // A record reached through a kernel member is spelled
        // symbolically (`typeof(((struct sk_buff *)0)->dev)`, or a member
        // path of an unnamed struct member, `link_modes`): the kernel's
        // headers name its tag, or the path within it.
        fn locate(k: &crate::kernel::Kernel, t: &CType) -> Option<(String, String)> {
            match t {
                CType::PointeeOf(inner) => match inner.as_ref() {
                    CType::FieldOf(rec, path) => {
                        let (outer, pre) = locate(k, rec)?;
                        let to = k.member_pointee(&outer, &format!("{pre}{path}"))?;
                        Some((to.to_string(), String::new()))
                    }
                    _ => None,
                },
                CType::FieldOf(rec, path) => {
                    let (tag, pre) = locate(k, rec)?;
                    Some((tag, format!("{pre}{path}.")))
                }
                _ => bare_tag(t).map(|tag| (tag, String::new())),
            }
        }
        let (tag, pre) = locate(k, base)?;
        Some((k, tag, format!("{pre}{m}")))
    }
}

/// Range-table rights of a shared hint.
fn shared_rights(a: Access) -> Rights {
    match a {
        Access::Read => Rights::R,
        Access::ReadWrite => Rights::RW,
    }
}

/// A flexible array member (`u8 priv[]`, or the old `[0]`).
fn is_flexible(t: &CType) -> bool {
    matches!(t, CType::Array(_, n) if n.as_deref().is_none_or(|n| n.trim() == "0" || n.trim().is_empty()))
}

fn is_const_ptr(decl: &str) -> bool {
    decl.trim_start().starts_with("const ")
}

/// A field hint's length over `o` (the original object): bare member names
/// and `x->member` spellings become `o->member`.
/// A pointer to data (not to a function: the indirect-call dispatch owns
/// those).
fn is_data_ptr(t: &CType) -> bool {
    matches!(t, CType::Ptr(p) if **p != CType::Func)
}

/// The member at `path` (`a.b`) of a record of type `t`, when its layout
/// is known all the way.
fn member_at<'p>(
    prog: &'p Program,
    t: &CType,
    path: &str,
) -> Option<&'p fgft_facts::program::Field> {
    let mut ty = t.clone();
    let mut found = None;
    for m in path.split('.') {
        let r = ty.record().and_then(|tag| prog.records.get(tag))?;
        let f = r.fields.iter().find(|f| f.name == m)?;
        ty = prog.resolve(&f.ty);
        found = Some(f);
    }
    found
}

/// The data-pointer members of a struct of type `t` at any depth, with
/// `prefix`.  Not entered: unions, and members of anonymous unions (their
/// bytes may be another member's), records whose layout fgft did not read,
/// arrays; nor bitfields and `__iomem` cookies.
fn pointer_paths(prog: &Program, t: &CType, prefix: &str, depth: usize, out: &mut Vec<String>) {
    if depth > 8 {
        return;
    }
    let Some(r) = t
        .record()
        .filter(|tag| tag.starts_with("struct "))
        .and_then(|tag| prog.records.get(tag))
    else {
        return;
    };
    for f in r
        .fields
        .iter()
        .filter(|f| !f.overlaid && !f.iomem && !f.bitfield)
    {
        let fty = prog.resolve(&f.ty);
        let path = format!("{prefix}{}", f.name);
        if is_data_ptr(&fty) {
            out.push(path);
        } else if let CType::Record(_) = fty {
            pointer_paths(prog, &fty, &format!("{path}."), depth + 1, out);
        }
    }
}

/// What copy-out of an object of type `t` writes back as pointer values:
/// the data-pointer members it assigns, and those inside the members (or
/// the whole object) it copies as bytes.  Sorted.
fn out_pointers(prog: &Program, t: &CType, fields: &[FieldSpec]) -> Vec<String> {
    let mut out = Vec::new();
    for f in fields.iter().filter(|f| f.copy_out) {
        match &f.how {
            FieldHow::Bytes if f.path.is_empty() => pointer_paths(prog, t, "", 0, &mut out),
            FieldHow::Bytes => {
                if let Some(m) = member_at(prog, t, &f.path) {
                    let mt = prog.resolve(&m.ty);
                    pointer_paths(prog, &mt, &format!("{}.", f.path), 1, &mut out);
                }
            }
            FieldHow::Assign => {
                if let Some(m) = member_at(prog, t, &f.path) {
                    if !m.overlaid && !m.iomem && is_data_ptr(&prog.resolve(&m.ty)) {
                        out.push(f.path.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

fn field_len_expr(prog: &Program, t: &CType, len: &str, prefix: &str) -> String {
    len_expr_on(prog, t, len, prefix, "o")
}

/// [`field_len_expr`] over the object `base` (a C identifier) instead of `o`.
fn len_expr_on(prog: &Program, t: &CType, len: &str, prefix: &str, base: &str) -> String {
    let members: BTreeSet<String> = t
        .record()
        .and_then(|tag| prog.records.get(tag))
        .map(|r| r.fields.iter().map(|f| f.name.clone()).collect())
        .unwrap_or_default();
    let mut out = String::new();
    let b = len.as_bytes();
    let mut i = 0;
    let mut prev_sig = String::new();
    while i < b.len() {
        let c = b[i];
        if ident::is_start(c) {
            let st = i;
            i = ident::word_end(b, i);
            let id = &len[st..i];
            let rest = len[i..].trim_start();
            // A tag (`sizeof(struct mem)`) is no member, whatever its name.
            let after_tag_word = ["struct", "union", "enum"].iter().any(|k| {
                prev_sig
                    .strip_suffix(k)
                    .is_some_and(|p| !p.ends_with(|c: char| ident::is_char(c)))
            });
            let after_arrow = prev_sig.ends_with("->") || prev_sig.ends_with('.') || after_tag_word;
            if rest.starts_with("->") && !members.contains(id) {
                let r2 = rest[2..].trim_start();
                let next: String = r2.chars().take_while(|c| ident::is_char(*c)).collect();
                if members.contains(&next) || members.is_empty() {
                    // `x->member`: the member of the object being copied.
                    out.push_str(base);
                    out.push_str("->");
                    out.push_str(prefix);
                    // Skip the `->` (and blanks) that follow.
                    while i < b.len() && b[i] != b'>' {
                        i += 1;
                    }
                    i += 1;
                    while i < b.len() && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    prev_sig = "->".into();
                    continue;
                }
            }
            if id == fgft_annotations::OWNER_NETDEV && !after_arrow && !members.contains(id) {
                // The net_device of the object's private area.
                match prefix.strip_suffix('.') {
                    Some(p) => out.push_str(&format!("fgft_priv_netdev(&{base}->{p})")),
                    None => out.push_str(&format!("fgft_priv_netdev({base})")),
                }
                prev_sig = id.to_string();
                continue;
            }
            if members.contains(id) && !after_arrow {
                out.push_str(base);
                out.push_str("->");
                out.push_str(prefix);
            }
            out.push_str(id);
            prev_sig = id.to_string();
        } else {
            out.push(c as char);
            if !c.is_ascii_whitespace() {
                prev_sig.push(c as char);
            }
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn len_expr_prefixes_members() {
        let src = "struct a { int n; int *buf; };\n";
        let pf = fgft_parse::parse_text(Path::new("a.h"), src.into()).unwrap();
        let prog = Program::new(vec![pf]);
        let t = CType::Record("struct a".into());
        assert_eq!(field_len_expr(&prog, &t, "n * 4", ""), "o->n * 4");
        assert_eq!(field_len_expr(&prog, &t, "adapter->n", ""), "o->n");
        assert_eq!(
            field_len_expr(&prog, &t, "sizeof(int) * n", ""),
            "sizeof(int) * o->n"
        );
        assert_eq!(field_len_expr(&prog, &t, "n * 4", "in."), "o->in.n * 4");
        assert_eq!(field_len_expr(&prog, &t, "a->n", "in."), "o->in.n");
        // A struct tag that is also a member's name stays a tag.
        let src = "struct a { struct buf *buf; int n; };\n";
        let pf = fgft_parse::parse_text(Path::new("a.h"), src.into()).unwrap();
        let prog = Program::new(vec![pf]);
        assert_eq!(
            field_len_expr(&prog, &t, "n * sizeof(struct buf)", ""),
            "o->n * sizeof(struct buf)"
        );
    }
}
