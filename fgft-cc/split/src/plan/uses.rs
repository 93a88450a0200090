//! What an entry's closure does with the members of each record type
//! (read, written, used as an array), gathered before marshaling is decided.

use fgft_facts::callgraph::{Closure, Root};
use fgft_facts::ctype::CType;
use fgft_facts::model::{AccessKind, DriverFacts, PtrUseKind, Relation, Site};
use fgft_facts::program::FnId;
use fgft_facts::program::Program;
use std::collections::{BTreeMap, BTreeSet};

/// What the closure does with members of each type.
#[derive(Debug, Default, Clone)]
pub(super) struct Use {
    pub(super) read: bool,
    pub(super) write: bool,
    /// Indexed, sized or used as a string through the member's value.
    pub(super) array_use: Option<(Site, PtrUseKind)>,
}

#[derive(Default)]
pub(super) struct Uses {
    /// (base type, member) -> use
    pub(super) fields: BTreeMap<(CType, String), Use>,
    /// Record types some object of which a kernel call reads or writes as
    /// a whole (`memset(p, 0, sizeof(*p))`, a struct the kernel fills): copied
    /// whole, in and out.
    pub(super) whole: BTreeSet<CType>,
    /// Embedded members known to be of another type: `FieldOf(struct
    /// pci_dev, "dev")` is a `struct device` (container_of, container hints).
    pub(super) aliases: BTreeMap<CType, CType>,
    /// Embedded type -> the records `container_of` finds it in (`struct
    /// inode` -> `struct ext2_inode_info`): code that reads the container
    /// (`EXT2_I(inode)->i_flags`) uses the object it embeds, whose grant
    /// brings the container's (stubs-gen's place functions).
    pub(super) containers: BTreeMap<CType, BTreeSet<CType>>,
    /// Carrier type -> (private area type, its accessor).
    pub(super) priv_of: BTreeMap<CType, (CType, String)>,
    pub(super) conv: BTreeMap<(CType, String), CType>,
    /// For an entry marshaled in place: what its closure dereferences
    /// ([`Closure::deref_roots`]). A pointer member whose value reaches no
    /// dereference is only a value there: its target needs no grant.
    pub(super) in_place: Option<(BTreeSet<Root>, BTreeSet<CType>)>,
}

impl Uses {
    /// Whether member `m` of `base`, a pointer to `target`, is only a
    /// value to an in-place closure: never dereferenced (through any
    /// function of the closure it is passed to), and no pointer to
    /// `target` of unknown root is either.
    pub(super) fn value_only(&self, base: &CType, m: &str, target: &CType) -> bool {
        let Some((roots, unknown)) = &self.in_place else {
            return false;
        };
        !unknown.contains(target) && !roots.contains(&Root::FieldVal(base.clone(), m.to_string()))
    }

    pub(super) fn mark(&mut self, base: &CType, field: &str, k: AccessKind) {
        let e = self
            .fields
            .entry((base.clone(), field.to_string()))
            .or_default();
        if k.reads() {
            e.read = true;
        }
        if k.writes() {
            e.write = true;
        }
    }

    /// Members of `base` with a use (read or written), sorted.
    pub(super) fn members(&self, base: &CType) -> Vec<(String, Use)> {
        self.fields
            .iter()
            .filter(|((b, _), _)| b == base)
            .map(|((_, f), u)| (f.clone(), u.clone()))
            .collect()
    }

    /// Whether anything of `ty` (members, embedded members, private area)
    /// is used.
    pub(super) fn touches(&self, prog: &Program, ty: &CType, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        if self.fields.keys().any(|(b, _)| b == ty) || self.whole.contains(ty) {
            return true;
        }
        if self.priv_of.contains_key(ty) {
            return true;
        }
        // Embedded members of known records.
        if let Some(tag) = ty.record() {
            if let Some(r) = prog.records.get(tag) {
                return r.fields.iter().any(|f| {
                    matches!(f.ty, CType::Record(_)) && self.touches(prog, &f.ty, depth + 1)
                });
            }
        }
        // A container the code reaches from it.
        if let Some(outer) = self.containers.get(ty) {
            if outer
                .iter()
                .any(|o| o != ty && self.touches(prog, o, depth + 1))
            {
                return true;
            }
        }
        // Members known to be of another type.
        for (a, inner) in &self.aliases {
            if (is_field_of(a, ty) || a == ty) && self.touches(prog, inner, depth + 1) {
                return true;
            }
        }
        // Symbolic members of unknown records.
        self.fields.keys().any(|(b, _)| is_field_of(b, ty))
    }
}

impl Uses {
    /// Whether a member of `ty`, or of a record embedded in it, is written.
    pub(super) fn writes_into(&self, ty: &CType) -> bool {
        self.fields
            .iter()
            .any(|((b, _), u)| u.write && (b == ty || is_field_of(b, ty)))
    }
}

pub(super) fn is_field_of(b: &CType, ty: &CType) -> bool {
    match b {
        CType::FieldOf(inner, _) => &**inner == ty || is_field_of(inner, ty),
        _ => false,
    }
}

/// A pointer use resolved to an entry parameter: where, how, read or
/// written, and the pointed-to type.
pub(super) type ParamUse = (Site, PtrUseKind, AccessKind, CType);

/// What pointer uses tell beyond member uses.
#[derive(Default)]
pub(super) struct PtrUses {
    /// Entry parameter (0-based) -> its uses through pointers.
    pub(super) params: BTreeMap<usize, Vec<ParamUse>>,
    /// Driver globals written through a pointer.
    pub(super) global_writes: BTreeSet<String>,
}

impl Uses {
    /// The member accesses and type relations of every function of the
    /// closure.
    pub(super) fn of_closure(prog: &Program, facts: &DriverFacts, closure: &Closure) -> Uses {
        let mut uses = Uses::default();
        for f in &closure.fns {
            let Some(ff) = facts.per_fn.get(f) else {
                continue;
            };
            for a in &ff.accesses {
                match a.kind {
                    AccessKind::Read | AccessKind::Write | AccessKind::ReadWrite => {
                        uses.mark(&a.base, &a.field, a.kind)
                    }
                    AccessKind::Addr | AccessKind::Embed => {
                        uses.fields
                            .entry((a.base.clone(), a.field.clone()))
                            .or_default();
                    }
                }
            }
            for r in &ff.relations {
                match r {
                    Relation::Priv { of, ty, accessor } => {
                        uses.priv_of
                            .insert(of.clone(), (ty.clone(), accessor.clone()));
                    }
                    Relation::Conv { base, field, to } => {
                        uses.conv.insert((base.clone(), field.clone()), to.clone());
                    }
                    Relation::Container {
                        inner,
                        outer,
                        member,
                    } if inner.is_recordish() => {
                        uses.aliases.insert(
                            CType::FieldOf(Box::new(prog.resolve(outer)), member.clone()),
                            inner.clone(),
                        );
                        uses.containers
                            .entry(prog.resolve(inner))
                            .or_default()
                            .insert(prog.resolve(outer));
                    }
                    _ => {}
                }
            }
        }
        uses
    }

    /// Pointer uses resolved to the entry: through member addresses they
    /// are member accesses; through member values they are uses of the
    /// target.
    pub(super) fn add_ptr_uses(
        &mut self,
        prog: &Program,
        facts: &DriverFacts,
        def: FnId,
        closure: &Closure,
    ) -> PtrUses {
        let mut params: BTreeMap<usize, Vec<(Site, PtrUseKind, AccessKind, CType)>> =
            BTreeMap::new();
        let mut global_writes: BTreeSet<String> = BTreeSet::new();
        for (roots, u) in closure.ptr_uses(facts) {
            for r in roots {
                match r {
                    Root::FieldAddr(b, f) => {
                        let k = match u.access {
                            AccessKind::Addr | AccessKind::Embed => AccessKind::ReadWrite,
                            k => k,
                        };
                        self.mark(&b, &f, k);
                    }
                    Root::FieldVal(b, f) => {
                        if let (PtrUseKind::Sized(_), CType::Ptr(t)) =
                            (&u.kind, prog.field_type(&b, &f))
                        {
                            let t = prog.resolve(&t);
                            if t.is_recordish() {
                                self.whole.insert(t);
                                self.mark(&b, &f, AccessKind::Read);
                                continue;
                            }
                        }
                        // A pointer to one record walked as words (bnx2's
                        // `hw_stats = (u32 *)bp->stats_blk; hw_stats[i]`):
                        // the record, copied whole; a walk past its end
                        // faults in SFI code.
                        if let Some(t) = words_of_record(prog, &prog.field_type(&b, &f), u) {
                            self.whole.insert(t);
                            self.mark(&b, &f, u.access);
                            self.mark(&b, &f, AccessKind::Read);
                            continue;
                        }
                        let known_array = matches!(prog.field_type(&b, &f), CType::Array(..));
                        let unknown =
                            matches!(prog.field_type(&b, &f), CType::FieldOf(..) | CType::Unknown);
                        match &u.kind {
                            PtrUseKind::Sized(_) | PtrUseKind::Str | PtrUseKind::Subscript0
                                if known_array || unknown =>
                            {
                                self.mark(&b, &f, u.access);
                                if unknown {
                                    let e = self.fields.entry((b.clone(), f.clone())).or_default();
                                    if e.array_use.is_none() {
                                        e.array_use = Some((u.at.clone(), u.kind.clone()));
                                    }
                                }
                            }
                            PtrUseKind::Index
                            | PtrUseKind::Arith
                            | PtrUseKind::Sized(_)
                            | PtrUseKind::Str => {
                                if known_array {
                                    self.mark(&b, &f, u.access);
                                } else if unknown {
                                    self.mark(&b, &f, u.access);
                                    let e = self.fields.entry((b.clone(), f.clone())).or_default();
                                    if e.array_use.is_none() {
                                        e.array_use = Some((u.at.clone(), u.kind.clone()));
                                    }
                                } else {
                                    let e = self.fields.entry((b.clone(), f.clone())).or_default();
                                    e.read = true;
                                    if e.array_use.is_none() {
                                        e.array_use = Some((u.at.clone(), u.kind.clone()));
                                    }
                                }
                            }
                            PtrUseKind::Deref | PtrUseKind::Subscript0 => {
                                // A store through a pointer to scalars
                                // (a bitmap's word, `*bh->b_data`) writes
                                // the memory the member sizes.
                                let scalars = matches!(
                                    prog.field_type(&b, &f),
                                    CType::Ptr(t) if !prog.resolve(&t).is_recordish()
                                );
                                if known_array || ((scalars || unknown) && u.access.writes()) {
                                    self.mark(&b, &f, u.access);
                                }
                            }
                        }
                    }
                    Root::EntryParam(k) => {
                        if let (PtrUseKind::Sized(_), Some(CType::Ptr(t))) = (
                            &u.kind,
                            prog.fns[def].params.get(k).map(|p| prog.resolve(&p.ty)),
                        ) {
                            if t.is_recordish() {
                                self.whole.insert((*t).clone());
                                continue;
                            }
                        }
                        params.entry(k).or_default().push((
                            u.at.clone(),
                            u.kind.clone(),
                            u.access,
                            u.ty.clone(),
                        ));
                    }
                    Root::Global(g) | Root::GlobalAddr(g) => {
                        if u.access.writes() {
                            global_writes.insert(g);
                        }
                    }
                    Root::Fresh | Root::Stack => {}
                }
            }
        }
        PtrUses {
            params,
            global_writes,
        }
    }
}

/// The record a pointer of type `fty` points to, when `u` indexes it
/// through a cast to a pointer of scalars (`(u32 *)p`, `(u64 *)stats`).
fn words_of_record(prog: &Program, fty: &CType, u: &fgft_facts::model::PtrUse) -> Option<CType> {
    if !matches!(u.kind, PtrUseKind::Index | PtrUseKind::Arith) {
        return None;
    }
    let CType::Ptr(t) = fty else { return None };
    let t = prog.resolve(t);
    if !t.is_recordish() {
        return None;
    }
    let CType::Ptr(elem) = &u.ty else { return None };
    let elem = prog.resolve(elem);
    matches!(elem, CType::Scalar(_) | CType::Named(_)).then_some(t)
}
