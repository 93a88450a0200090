//! Hints inferred from the driver: the size of an array or ring member from
//! the place the driver allocates it.
//!
//! Job: for every `x->m = ALLOC(args)` in the driver (any function: probe
//! and open allocate what management entry points later walk), where ALLOC
//! is a kernel allocator whose compensation-table entry states what it
//! grants (`kcalloc`: `n * size`), turn the granted length into a length
//! over the other members of `x`'s struct (`count * sizeof(struct
//! e1000_tx_buffer)`) and hint member `m` of that struct with it: a blob,
//! or `shared` when the allocator returns device-visible memory (`memory =
//! "shared"`: `dma_alloc_coherent`).
//!
//! Invariants: a hint is inferred only when every allocation site of the
//! member gives the same length, and that length names nothing but members
//! of the struct, constants, macros and `sizeof` (a local assigned once in
//! the same function is replaced by its value); the driver's own hints are
//! never overridden; each inferred hint is located at its evidence (the
//! first allocation site).

use crate::plan::table::{Memory, Table};
use crate::plan::DriverFile;
use fgft_annotations::{Access, Annotations, Hint, HintKind, HintSource, HintTarget, Loc};
use fgft_base::{ident, lex};
use fgft_facts::ctype::CType;
use fgft_facts::model::{DriverFacts, Origin, PtrUseKind};
use fgft_facts::program::{FnDef, Program};
use std::collections::{BTreeMap, BTreeSet};
use tree_sitter::Node;

mod values;
use values::{
    alloc_call, body_of, local_alloc, local_value, ops_alloc, strip_casts, wrapped_alloc,
};

/// One allocation site of a member.
#[derive(Clone)]
struct Site {
    file: usize,
    range: std::ops::Range<usize>,
    api: String,
    len: Option<String>,
    /// What the allocator returns: an MMIO mapping (`memory = "io"`:
    /// ioremap) is a cookie, never dereferenced; device memory is used in
    /// place.
    memory: Memory,
    /// `x->m = &x->n[K]`: a pointer into member `n`'s memory, `K` elements
    /// in.
    interior: Option<(String, String)>,
    /// Bytes the pointer may stand past element `K` (`ALIGN(x->n, 8)`:
    /// `8 - 1`).
    slack: Option<String>,
    /// `x->m = dma_pool_alloc(x->p, ...)`: a block of the pool member `p`
    /// of the same struct holds (sized where the pool is created).
    pool: Option<String>,
}

impl Site {
    /// A site of `api` in `file` at `range`, with nothing more known.
    fn new(file: usize, range: std::ops::Range<usize>, api: String, memory: Memory) -> Site {
        Site {
            file,
            range,
            api,
            len: None,
            memory,
            interior: None,
            slack: None,
            pool: None,
        }
    }
}

/// Where the driver's allocation sites are: members allocated, and the
/// block sizes of the pools members hold (`x->p = dma_pool_create(..,
/// size, ..)`), both by (struct, member).
#[derive(Default)]
struct Scan {
    by: BTreeMap<(String, String), Vec<Site>>,
    pools: BTreeMap<(String, String), Vec<Option<String>>>,
}

/// The hints the driver's allocation sites give, in (struct, member) order.
pub fn hints(
    prog: &Program,
    facts: &DriverFacts,
    table: &Table,
    files: &[DriverFile],
    ann: &Annotations,
    icalls: &crate::icall::Icalls,
) -> Vec<Hint> {
    let mut scan = Scan::default();
    for d in &prog.fns {
        scan_fn(prog, facts, (table, icalls), d, &mut scan);
    }
    let Scan { mut by, pools } = scan;
    for ((strukt, _), sites) in by.iter_mut() {
        for s in sites.iter_mut() {
            if let Some(p) = &s.pool {
                s.len = pool_block(&pools, strukt, p);
            }
        }
    }
    let mut out = Vec::new();
    let mut interior: Vec<((String, String), Vec<Site>)> = Vec::new();
    for ((strukt, field), mut sites) in by {
        if ann.field_hints(&strukt, &field).next().is_some() {
            continue;
        }
        if sites.iter().any(|s| s.interior.is_some()) {
            interior.push(((strukt, field), sites));
            continue;
        }
        sites.sort_by_key(|s| (s.file, s.range.start));
        // An MMIO mapping at every site: a cookie the accessors take.
        if sites.iter().any(|s| s.memory == Memory::Io) {
            if sites.iter().all(|s| s.memory == Memory::Io) {
                let how = sites[0].api.clone();
                out.push(inferred(
                    prog,
                    files,
                    &sites[0],
                    strukt,
                    field,
                    HintKind::NoDeref,
                    how,
                ));
            }
            continue;
        }
        // Device memory at one site and plain memory at another (b44's
        // `kzalloc` fallback when `dma_alloc_coherent` fails): used in
        // place, as the device memory is.
        let shared = sites.iter().any(|s| s.memory == Memory::Shared);
        let Some(first) = sites
            .iter()
            .find(|s| (s.memory == Memory::Shared) == shared)
        else {
            continue;
        };
        let Some(len) = &first.len else { continue };
        if sites.iter().any(|s| s.len.as_deref() != Some(len)) {
            continue;
        }
        // One object (`kzalloc(sizeof(*p))`) is marshaled as the object it
        // is; only arrays and device memory need the hint. Indexed
        // (`x->m[0]`) it is an array of one: the hint applies only there.
        if !shared && is_one_object(len) {
            let mut h = inferred(
                prog,
                files,
                first,
                strukt,
                field,
                HintKind::Blob { len: len.clone() },
                first.api.clone(),
            );
            let how = first.api.clone();
            h.source = HintSource::InferredObject { how };
            out.push(h);
            continue;
        }
        let kind = if shared {
            HintKind::Shared {
                len: len.clone(),
                rights: Access::ReadWrite,
            }
        } else {
            HintKind::Blob { len: len.clone() }
        };
        let how = first.api.clone();
        out.push(inferred(prog, files, first, strukt, field, kind, how));
    }
    // Pointers into another member's memory: that memory's kind, from the
    // pointer on. A pointer into a pointer into memory (`mini = jumbo + K`,
    // `jumbo = std + K`) waits for the hint of what it points into.
    let mut pending = interior;
    loop {
        let before = pending.len();
        let mut left = Vec::new();
        for (key, sites) in pending {
            if !interior_hint(prog, files, ann, &mut out, &key, sites.clone()) {
                left.push((key, sites));
            }
        }
        pending = left;
        if pending.len() == before || pending.is_empty() {
            break;
        }
    }
    out
}

/// Parameters that point to a record and that the function reads or writes
/// at byte offsets (`(char *)psmouse + offset`, e1000's statistics at
/// `(char *)netdev + stat_offset`): the object is copied whole, its size
/// that of the record; a `struct net_device` whose private area the driver
/// reaches (`netdev_priv`, one private type) is copied with that area,
/// which follows it.  Only where no annotation or contract sizes the
/// parameter; the use site is the evidence.
pub fn param_objects(
    prog: &Program,
    facts: &DriverFacts,
    files: &[DriverFile],
    ann: &Annotations,
) -> Vec<Hint> {
    let mut privs: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for ff in facts.per_fn.values() {
        for r in &ff.relations {
            if let fgft_facts::model::Relation::Priv { of, ty, accessor } = r {
                if let (Some(o), Some(t)) = (of.record(), ty.record()) {
                    privs
                        .entry(o.to_string())
                        .or_default()
                        .insert((t.to_string(), accessor.clone()));
                }
            }
        }
    }
    let mut out = Vec::new();
    for d in &prog.fns {
        let Some(ff) = facts.per_fn.get(&d.name) else {
            continue;
        };
        for (k, p) in d.params.iter().enumerate() {
            let CType::Ptr(pointee) = &p.ty else { continue };
            let Some(rec) = prog.resolve(pointee).record().map(str::to_string) else {
                continue;
            };
            if ann.param_hints(&d.name, &p.name).next().is_some() {
                continue;
            }
            // Byte arithmetic on the parameter, cast away from its record.
            let Some(u) = ff.ptr_uses.iter().find(|u| {
                matches!(u.kind, PtrUseKind::Arith | PtrUseKind::Index)
                    && u.origins.contains(&Origin::Param(k))
                    && matches!(&u.ty, CType::Ptr(t) if is_byte(t))
            }) else {
                continue;
            };
            let len = match privs
                .get(&rec)
                .filter(|s| s.len() == 1)
                .and_then(|s| s.first())
            {
                Some((ty, acc)) if rec == "struct net_device" => format!(
                    "(size_t)((char *){acc}({n}) - (char *){n}) + sizeof({ty})",
                    n = p.name
                ),
                _ => format!("sizeof({rec})"),
            };
            let pf = &prog.files[u.at.file];
            let shown = files
                .get(u.at.file)
                .map(|f| f.shown.clone())
                .unwrap_or_else(|| pf.path.clone());
            out.push(Hint {
                target: HintTarget::Param {
                    function: d.name.clone(),
                    param: p.name.clone(),
                },
                kind: HintKind::Blob { len },
                loc: Loc::from_span(&shown, &pf.text, u.at.range.start, u.at.range.end),
                source: HintSource::Inferred {
                    how: "byte offsets into the object".into(),
                },
            });
        }
    }
    out
}

/// Members the driver hands to `container_of(x->m, T, f)` (a misc device's
/// `file->private_data`, which points at the `misc` member of the
/// driver's device): a container hint, `m` points at member `f` of a `T`,
/// when every such use agrees.  Only where no annotation or contract
/// covers the member; the first use is the evidence.
pub fn containers(
    prog: &Program,
    facts: &DriverFacts,
    files: &[DriverFile],
    ann: &Annotations,
) -> Vec<Hint> {
    type Key = (String, String);
    let mut by: BTreeMap<Key, Vec<(String, String, fgft_facts::model::Site)>> = BTreeMap::new();
    for ff in facts.per_fn.values() {
        for c in &ff.calls {
            if !matches!(&c.target, fgft_facts::model::CallTarget::Kernel(k) if k == "container_of")
            {
                continue;
            }
            let text = &prog.files[c.at.file].text;
            let Some(call) = text.get(c.at.range.clone()) else {
                continue;
            };
            let Some(inner) = call
                .strip_prefix("container_of")
                .map(str::trim_start)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
            else {
                continue;
            };
            let args = fgft_facts::macros::split_args(inner);
            let [_, outer, member] = args.as_slice() else {
                continue;
            };
            let outer = outer.trim();
            let outer = outer
                .strip_prefix("struct ")
                .unwrap_or(outer)
                .trim()
                .to_string();
            let member = member.trim().to_string();
            if !ident::is_ident(&outer) || !ident::is_ident(&member) {
                continue;
            }
            for o in c.args.first().into_iter().flatten() {
                if let Origin::FieldVal(ty, m) = o {
                    let Some(tag) = ty.record() else { continue };
                    let tag = tag
                        .trim_start_matches("struct ")
                        .trim_start_matches("union ")
                        .to_string();
                    by.entry((tag, m.clone())).or_default().push((
                        outer.clone(),
                        member.clone(),
                        c.at.clone(),
                    ));
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((strukt, field), uses) in by {
        if ann.field_hints(&strukt, &field).next().is_some() {
            continue;
        }
        let (outer, member, _) = &uses[0];
        if uses.iter().any(|(o, m, _)| o != outer || m != member) {
            continue;
        }
        let mut sites: Vec<&fgft_facts::model::Site> = uses.iter().map(|u| &u.2).collect();
        sites.sort_by_key(|s| (s.file, s.range.start));
        let site = sites[0];
        let pf = &prog.files[site.file];
        let shown = files
            .get(site.file)
            .map(|f| f.shown.clone())
            .unwrap_or_else(|| pf.path.clone());
        out.push(Hint {
            target: HintTarget::Field { strukt, field },
            kind: HintKind::Container {
                outer: outer.clone(),
                member: member.clone(),
            },
            loc: Loc::from_span(&shown, &pf.text, site.range.start, site.range.end),
            source: HintSource::Inferred {
                how: "container_of".into(),
            },
        });
    }
    out
}

/// `char`, `u8`, `void` and their kin: what a pointer is cast to for byte
/// offsets.
fn is_byte(t: &CType) -> bool {
    match t {
        CType::Void => true,
        CType::Scalar(s) | CType::Named(s) => matches!(
            s.trim_start_matches("const ").trim(),
            "char" | "unsigned char" | "signed char" | "u8" | "__u8" | "uint8_t" | "s8"
        ),
        _ => false,
    }
}

/// The hint of a member that points into another's memory, pushed onto
/// `out` once that other member has one; false while it has none.
fn interior_hint(
    prog: &Program,
    files: &[DriverFile],
    ann: &Annotations,
    out: &mut Vec<Hint>,
    (strukt, field): &(String, String),
    mut sites: Vec<Site>,
) -> bool {
    let (strukt, field) = (strukt.clone(), field.clone());
    {
        sites.sort_by_key(|s| (s.file, s.range.start));
        let Some((n, k)) = sites[0].interior.clone() else {
            return true;
        };
        if sites
            .iter()
            .any(|s| s.interior.as_ref() != Some(&(n.clone(), k.clone())))
        {
            return true;
        }
        let base = ann
            .field_hints(&strukt, &n)
            .chain(out.iter().filter(|h| {
                matches!(&h.target, HintTarget::Field { strukt: s, field: f } if *s == strukt && *f == n)
            }))
            .next()
            .map(|h| h.kind.clone());
        let slack = sites[0].slack.clone();
        if sites.iter().any(|s| s.slack != slack) {
            return true;
        }
        let rest = |len: &str| {
            let mut r = if k == "0" {
                format!("({len})")
            } else {
                format!("({len}) - ({k}) * sizeof(*{n})")
            };
            if let Some(sl) = &slack {
                r.push_str(&format!(" - ({sl})"));
            }
            r
        };
        let kind = match base {
            Some(HintKind::Shared { len, rights }) => HintKind::Shared {
                len: rest(&len),
                rights,
            },
            Some(HintKind::Blob { len }) => HintKind::Blob { len: rest(&len) },
            Some(_) => return true,
            None => return false,
        };
        let how = format!("a pointer into {n}");
        out.push(inferred(prog, files, &sites[0], strukt, field, kind, how));
        true
    }
}

/// The inferred hint on `strukt.field`, located at its evidence `site`
/// (shown by the driver file's path as the user gave it).
fn inferred(
    prog: &Program,
    files: &[DriverFile],
    site: &Site,
    strukt: String,
    field: String,
    kind: HintKind,
    how: String,
) -> Hint {
    let pf = &prog.files[site.file];
    let shown = files
        .get(site.file)
        .map(|f| f.shown.clone())
        .unwrap_or_else(|| pf.path.clone());
    Hint {
        target: HintTarget::Field { strukt, field },
        kind,
        loc: Loc::from_span(&shown, &pf.text, site.range.start, site.range.end),
        source: HintSource::Inferred { how },
    }
}

/// The block size of the pool member `p` of `strukt` holds, when every
/// creation of it gives the same.
fn pool_block(
    pools: &BTreeMap<(String, String), Vec<Option<String>>>,
    strukt: &str,
    p: &str,
) -> Option<String> {
    let sizes = pools.get(&(strukt.to_string(), p.to_string()))?;
    let first = sizes.first()?.clone()?;
    sizes
        .iter()
        .all(|s| s.as_deref() == Some(first.as_str()))
        .then_some(first)
}

/// Every `x->m = ALLOC(...)` in `d`.
fn scan_fn(
    prog: &Program,
    facts: &DriverFacts,
    (table, icalls): (&Table, &crate::icall::Icalls),
    d: &FnDef,
    scan: &mut Scan,
) {
    let by = &mut scan.by;
    let pf = &prog.files[d.file];
    let Some(body) = body_of(pf, d) else {
        return;
    };
    let text = pf.text.as_str();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
        let Some((left, right)) = fgft_parse::walk::plain_assignment(text, n) else {
            continue;
        };
        if left.kind() != "field_expression" {
            continue;
        }
        // `x->m = ALLOC(...)`, or `x->m = local` with `local = ALLOC(...)`
        // the only value the function gives it.
        if let Some(site) = interior_site(prog, facts, d, n, left, right, text) {
            by.entry(site.0).or_default().push(site.1);
            continue;
        }
        // Through casts (`hw->ep_shm_info = (struct ep_share_mem_info
        // *)buf;`).  `x->m = &local[K]` (or `local + K`) with `local =
        // ALLOC(...)`: what the allocation grants, less K elements
        // (minix's `sbi->s_zmap = &map[sbi->s_imap_blocks]`).
        let (right, skip) = local_interior(body, text, right).unwrap_or((right, None));
        let bare = strip_casts(right).unwrap_or(right);
        let call = alloc_call(right, text)
            .or_else(|| {
                (bare.kind() == "identifier")
                    .then(|| local_alloc(body, text, &text[bare.byte_range()]))
                    .flatten()
            })
            .or_else(|| ops_alloc(prog, icalls, d.file, bare, text));
        let Some((api, args)) = call else {
            continue;
        };
        // A driver function that returns what a kernel allocator does
        // (fjes' `hw->base = fjes_hw_iomap(hw)` returns `ioremap(...)`):
        // that call, over this site's arguments.
        let (api, args) = match table.apis.get(&api) {
            Some(_) => (api, args),
            None => match wrapped_alloc(prog, &api, &args) {
                Some(x) => x,
                None => continue,
            },
        };
        let Some(e) = table.apis.get(&api) else {
            continue;
        };
        // What sizes the member: the call's grant, the pool it makes or the
        // pool its block is of; none for an MMIO mapping (a cookie).  A
        // length over what the call returns (`sizeof(*ret)` of an sk_buff)
        // sizes a kernel object, not an array of the driver's.
        let grant = e
            .grant
            .as_ref()
            .map(|g| &g.0)
            .or(e.makes.as_ref())
            .or(e.block_of.as_ref());
        let grant = match grant {
            _ if e.memory == Memory::Io => None,
            Some(g) if !lex::has_token(g, "ret") => Some(g),
            _ => continue,
        };
        let (Some(base), Some(field), Some(op)) = (
            left.child_by_field_name("argument"),
            left.child_by_field_name("field"),
            left.child_by_field_name("operator"),
        ) else {
            continue;
        };
        let m = &text[field.byte_range()];
        let Some(tag) = member_struct(prog, facts, d, left, m) else {
            continue;
        };
        let key = (tag, m.to_string());
        let Some(grant) = grant else {
            by.entry(key)
                .or_default()
                .push(Site::new(d.file, n.byte_range(), api, e.memory));
            continue;
        };
        let tag = &key.0;
        let rec = ["struct", "union"]
            .iter()
            .find_map(|k| prog.records.get(&format!("{k} {tag}")));
        let Some(rec) = rec else { continue };
        if !rec
            .fields
            .iter()
            .any(|f| f.name == m && matches!(f.ty, fgft_facts::ctype::CType::Ptr(_)))
        {
            continue;
        }
        let prefix = format!("{}{}", &text[base.byte_range()], &text[op.byte_range()]);
        if let Some(b) = &e.block_of {
            // A block of a pool the same object holds (`nic->cbs =
            // dma_pool_zalloc(nic->cbs_pool, ...)`).
            let Some(i) = e.params.iter().position(|p| &p.name == b) else {
                continue;
            };
            let arg: String = args
                .get(i)
                .map_or("", |a| a.as_str())
                .split_whitespace()
                .collect();
            let compact: String = prefix.split_whitespace().collect();
            let Some(pool) = arg.strip_prefix(&compact).filter(|p| ident::is_ident(p)) else {
                continue;
            };
            by.entry(key).or_default().push(Site {
                pool: Some(pool.to_string()),
                ..Site::new(d.file, n.byte_range(), api, e.memory)
            });
            continue;
        }
        // The granted length over the call's arguments.
        let names: Vec<&str> = e.params.iter().map(|p| p.name.as_str()).collect();
        if names.len() != args.len() {
            continue;
        }
        let mut granted = lex_subst(grant, |id| {
            names.iter().position(|n| *n == id).map(|i| atom(&args[i]))
        });
        if let Some((local, k)) = &skip {
            granted = format!("({granted}) - {} * sizeof(*{local})", atom(k));
        }
        let members: Vec<&str> = rec.fields.iter().map(|f| f.name.as_str()).collect();
        let at = n.start_byte();
        let len = over_members(prog, table, pf, d, (&granted, at), &prefix, &members);
        if e.makes.is_some() {
            scan.pools.entry(key).or_default().push(len);
            continue;
        }
        by.entry(key).or_default().push(Site {
            len,
            ..Site::new(d.file, n.byte_range(), api, e.memory)
        });
    }
}

/// `&A[K]` or `A + K`: (A, K).
fn element_at<'t>(e: Node<'t>, text: &str) -> Option<(Node<'t>, Node<'t>)> {
    match e.kind() {
        "pointer_expression" if text[e.byte_range()].starts_with('&') => {
            let sub = e.child_by_field_name("argument")?;
            if sub.kind() != "subscript_expression" {
                return None;
            }
            Some((
                sub.child_by_field_name("argument")?,
                sub.child_by_field_name("index")?,
            ))
        }
        "binary_expression"
            if e.child_by_field_name("operator")
                .is_some_and(|o| &text[o.byte_range()] == "+") =>
        {
            Some((
                e.child_by_field_name("left")?,
                e.child_by_field_name("right")?,
            ))
        }
        _ => None,
    }
}

/// `&local[K]` or `local + K` where `local` is given one value in `body`,
/// an allocation: the local (as a node) and, unless K is 0, (local, K).
fn local_interior<'t>(
    body: Node<'t>,
    text: &str,
    right: Node<'t>,
) -> Option<(Node<'t>, Option<(String, String)>)> {
    let (arr, idx) = element_at(strip_casts(right)?, text)?;
    if arr.kind() != "identifier" {
        return None;
    }
    let local = &text[arr.byte_range()];
    local_alloc(body, text, local)?;
    let k = text[idx.byte_range()].trim();
    let skip = (k != "0").then(|| (local.to_string(), k.to_string()));
    Some((arr, skip))
}

/// `x->m = &x->n[K]` or `x->m = x->n + K` (K constant-like): the site,
/// keyed by (struct, m).
fn interior_site(
    prog: &Program,
    facts: &DriverFacts,
    d: &FnDef,
    assign: Node<'_>,
    left: Node<'_>,
    right: Node<'_>,
    text: &str,
) -> Option<((String, String), Site)> {
    // `&x->n[K]`, or `x->n + K`: the same place (through casts and
    // parentheses: vmxnet3's `(struct Vmxnet3_RxQueueDesc *)(adapter->
    // tqd_start + adapter->num_tx_queues)`).
    let mut right = strip_casts(right)?;
    // `ALIGN((unsigned long)x->n, A)` (tlan's lists in its DMA storage):
    // the start of `n`'s memory, up to A - 1 bytes in.
    let mut slack = None;
    if let Some((f, args)) = alloc_call(right, text) {
        let a = right.child_by_field_name("arguments")?;
        if ["ALIGN", "PTR_ALIGN"].contains(&f.as_str()) && args.len() == 2 {
            let inner = a.named_child(0)?;
            let al = args[1].trim();
            if !al.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            slack = Some(format!("{al} - 1"));
            right = strip_casts(inner)?;
        }
    }
    let (arr, idx) = match right.kind() {
        "field_expression" if slack.is_some() => (right, right),
        _ => element_at(right, text)?,
    };
    if arr.kind() != "field_expression" {
        return None;
    }
    let same_base = |f: Node<'_>| {
        f.child_by_field_name("argument")
            .map(|b| text[b.byte_range()].to_string())
    };
    if same_base(arr)? != same_base(left)? {
        return None;
    }
    let m = &text[left.child_by_field_name("field")?.byte_range()];
    let n = &text[arr.child_by_field_name("field")?.byte_range()];
    let k = if idx == arr {
        "0".to_string()
    } else {
        text[idx.byte_range()].trim().to_string()
    };
    // K a constant, or another member of the same object (spelled bare,
    // as a hint's length names members).
    let base: String = same_base(left)?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>();
    let compact: String = k.chars().filter(|c| !c.is_whitespace()).collect();
    let member = ["->", "."]
        .iter()
        .find_map(|op| compact.strip_prefix(&format!("{base}{op}")))
        .filter(|r| ident::is_ident(r))
        .map(str::to_string);
    let constant = k
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let k = match member {
        Some(mem) => mem,
        None if constant => k,
        None => return None,
    };
    let tag = member_struct(prog, facts, d, left, m)?;
    Some((
        (tag, m.to_string()),
        Site {
            interior: Some((n.to_string(), k)),
            slack,
            ..Site::new(d.file, assign.byte_range(), String::new(), Memory::Plain)
        },
    ))
}

/// The struct (tag without keyword) whose member `m` the field expression
/// `left` writes, from the function's field-access facts.
fn member_struct(
    prog: &Program,
    facts: &DriverFacts,
    d: &FnDef,
    left: Node<'_>,
    m: &str,
) -> Option<String> {
    let r = left.byte_range();
    let ff = facts.per_fn.get(&d.name)?;
    let a = ff.accesses.iter().find(|a| {
        a.field == m
            && a.at.file == d.file
            && a.at.range.start >= r.start
            && a.at.range.end <= r.end
            && a.kind.writes()
    })?;
    let t = prog.resolve(&a.base);
    t.record().map(|s| {
        s.trim_start_matches("struct ")
            .trim_start_matches("union ")
            .to_string()
    })
}

/// An argument as an operand: parenthesized when an operator stands
/// outside its parentheses (`a + b`), kept as is otherwise (`ring->count`,
/// `sizeof(struct x)`, `f(a, b)`).
fn atom(a: &str) -> String {
    let a = a.trim();
    let b = a.as_bytes();
    let mut depth = 0i32;
    let mut bare_op = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'-' if depth == 0 && b.get(i + 1) == Some(&b'>') => {}
            b'>' if depth == 0 && i > 0 && b[i - 1] == b'-' => {}
            b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'&' | b'|' | b'^' | b'?' | b':'
            | b',' | b'=' | b' ' | b'\t'
                if depth == 0 =>
            {
                bare_op = true
            }
            _ => {}
        }
    }
    if bare_op {
        format!("({a})")
    } else {
        a.to_string()
    }
}

/// Replaces identifier tokens of `s` (outside literals) by `f(token)`.
fn lex_subst(s: &str, f: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut pos = 0;
    for t in lex::ident_tokens(s) {
        if let Some(r) = f(&s[t.start..t.end]) {
            out.push_str(&s[pos..t.start]);
            out.push_str(&r);
            pos = t.end;
        }
    }
    out.push_str(&s[pos..]);
    out
}

/// `len` with the allocating object's prefix (`ring->`) removed, and
/// locals replaced by their one value in `d`, when what is left names only
/// members, constants, macros and types; None otherwise.
fn over_members(
    prog: &Program,
    table: &Table,
    pf: &fgft_parse::ParsedFile,
    d: &FnDef,
    (len, at): (&str, usize),
    prefix: &str,
    members: &[&str],
) -> Option<String> {
    let expanded = expand_macros(prog, len);
    let mut cur = sizeof_locals(pf, d, &expanded)?;
    let compact: String = prefix.split_whitespace().collect();
    for _ in 0..4 {
        // Bare identifiers other than the allocating object are locals (a
        // member is only ever reached through the object).
        let local = idents(&cur).into_iter().find_map(|(id, in_sizeof, at)| {
            let ok = in_sizeof
                || constant_like(prog, table, &id)
                || cur[at..].starts_with(&compact)
                || (id == OWNER_NETDEV && cur[at + id.len()..].starts_with("->"));
            (!ok).then_some(id)
        });
        let Some(local) = local else {
            let stripped = strip_prefix_all(&cur, prefix);
            let only_members = idents(&stripped).into_iter().all(|(id, in_sizeof, _)| {
                in_sizeof
                    || members.contains(&id.as_str())
                    || constant_like(prog, table, &id)
                    || id == OWNER_NETDEV
            });
            return only_members.then(|| canon(&stripped));
        };
        // The net_device whose private area the allocating object is
        // (`dp = netdev_priv(dev)`, then `kcalloc(dev->num_tx_queues,
        // ...)`): `OWNER_NETDEV`, which stubs reach from the object itself.
        if owner_of(pf, d, &compact, at).as_deref() == Some(local.as_str()) {
            cur = lex_subst(&cur, |id| (id == local).then(|| OWNER_NETDEV.to_string()));
            continue;
        }
        // A local the function also stores into a member of the same
        // object (`lp->rx_ring_size = entries;` beside `lp->rx_ring =
        // new_ring`, a resize) is that member's count.
        let v = match member_holding(pf, d, &compact, &local) {
            Some(m) => format!("{compact}{m}"),
            None => format!("({})", local_value(pf, d, &local, at)?),
        };
        cur = lex_subst(&cur, |id| (id == local).then(|| v.clone()));
        // The value may name locals inside sizeof too (`size = n * sizeof(*d)`).
        cur = sizeof_locals(pf, d, &cur)?;
    }
    None
}

/// The word a hint's length names the net_device by whose private area
/// (`netdev_priv()`) the object is (`OWNER_NETDEV->num_tx_queues`).
pub const OWNER_NETDEV: &str = fgft_annotations::OWNER_NETDEV;

/// The local whose private area the allocating object (`compact`: `dp->`)
/// is in `d`: `dp = netdev_priv(dev)` gives `dev`.
fn owner_of(pf: &fgft_parse::ParsedFile, d: &FnDef, compact: &str, at: usize) -> Option<String> {
    let base = compact.strip_suffix("->").filter(|b| ident::is_ident(b))?;
    let v = local_value(pf, d, base, at)?;
    let v: String = v.split_whitespace().collect();
    let inner = v.strip_prefix("netdev_priv(")?.strip_suffix(')')?;
    ident::is_ident(inner).then(|| inner.to_string())
}

/// `len` with the driver's function-like macros expanded (qede's
/// `QEDE_QUEUE_CNT(edev)` is `((edev)->num_queues)`), and `(x)->` spelled
/// `x->`, so that the members it names show.  At most a few rounds.
fn expand_macros(prog: &Program, len: &str) -> String {
    let mut cur = len.to_string();
    for _ in 0..3 {
        let b = cur.as_bytes();
        let mut out = String::new();
        let mut last = 0;
        let mut changed = false;
        for r in lex::ident_tokens(&cur) {
            if r.start < last {
                continue;
            }
            let name = &cur[r.clone()];
            let Some(m) = prog.macros.get(name) else {
                continue;
            };
            let Some(list) = &m.params else { continue };
            let open = cur[r.end..]
                .find(|c: char| !c.is_whitespace())
                .map(|o| r.end + o);
            let Some(open) = open.filter(|&o| b[o] == b'(') else {
                continue;
            };
            // The byte after the `)`.
            let Some(close) = lex::close_paren(b, open) else {
                continue;
            };
            let args: Vec<String> = lex::split_top(&cur[open + 1..close - 1], b',')
                .into_iter()
                .map(|a| a.trim().to_string())
                .collect();
            let params = fgft_facts::macros::MacroParams::from_list(list, &m.params_raw);
            let exp = fgft_facts::macros::expand(&params, &m.body, &args);
            out.push_str(&cur[last..r.start]);
            out.push_str(&format!("({})", exp.trim()));
            last = close;
            changed = true;
        }
        if !changed {
            break;
        }
        out.push_str(&cur[last..]);
        cur = out;
    }
    // `(edev)->m` -> `edev->m`.
    let mut out = String::new();
    let mut rest = cur.as_str();
    while let Some(i) = rest.find('(') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let n = after.bytes().take_while(|&c| ident::is_byte(c)).count();
        if n > 0 && after[n..].starts_with(")->") {
            out.push_str(&after[..n]);
            rest = &after[n + 1..];
        } else {
            out.push('(');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `len` with each `sizeof` of a local or parameter of `d` (`sizeof(*e)`
/// where `struct skge_element *e;`) spelled with its declared type
/// (`sizeof(struct skge_element)`): the local does not exist where the
/// length is used. None when such a local's type cannot be read.
fn sizeof_locals(pf: &fgft_parse::ParsedFile, d: &FnDef, len: &str) -> Option<String> {
    let b = len.as_bytes();
    let mut out = String::new();
    let mut pos = 0;
    for t in lex::ident_tokens(len) {
        if &len[t.start..t.end] != "sizeof" || t.start < pos {
            continue;
        }
        // sizeof [(] [*...] ID [)]
        let mut i = t.end;
        let skip_ws = |i: &mut usize| {
            while *i < b.len() && b[*i].is_ascii_whitespace() {
                *i += 1;
            }
        };
        skip_ws(&mut i);
        let paren = b.get(i) == Some(&b'(');
        if paren {
            i += 1;
            skip_ws(&mut i);
        }
        let mut derefs = 0usize;
        while b.get(i) == Some(&b'*') {
            derefs += 1;
            i += 1;
            skip_ws(&mut i);
        }
        let id_start = i;
        while i < b.len() && ident::is_byte(b[i]) {
            i += 1;
        }
        if i == id_start || b[id_start].is_ascii_digit() {
            continue;
        }
        let id = &len[id_start..i];
        skip_ws(&mut i);
        if paren {
            if b.get(i) != Some(&b')') {
                continue; // `sizeof(e->x)`, `sizeof(struct x)`: not a bare local
            }
            i += 1;
        } else if b
            .get(i)
            .is_some_and(|&c| c == b'-' || c == b'.' || c == b'[')
        {
            continue;
        }
        let Some((base, ptrs)) = declared_type(pf, d, id) else {
            if derefs > 0 {
                return None; // `*id` of something that is not a local: unknown
            }
            continue; // a type name (`sizeof(u64)`)
        };
        if derefs > ptrs {
            return None;
        }
        out.push_str(&len[pos..t.start]);
        // Kernel style: `sizeof(struct buffer_head *)`.
        let stars = "*".repeat(ptrs - derefs);
        let sep = if stars.is_empty() { "" } else { " " };
        out.push_str(&format!("sizeof({base}{sep}{stars})"));
        pos = i;
    }
    out.push_str(&len[pos..]);
    Some(out)
}

/// The declared type of local or parameter `name` of `d`: the base type as
/// written (`struct skge_element`) and its pointer depth.
fn declared_type(pf: &fgft_parse::ParsedFile, d: &FnDef, name: &str) -> Option<(String, usize)> {
    let text = pf.text.as_str();
    let root = pf.tree.root_node();
    let def = root.descendant_for_byte_range(d.range.start, d.range.end)?;
    let mut stack = vec![def];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for ch in n.named_children(&mut c) {
            stack.push(ch);
        }
        if !matches!(n.kind(), "declaration" | "parameter_declaration") {
            continue;
        }
        let Some(ty) = n.child_by_field_name("type") else {
            continue;
        };
        let mut c = n.walk();
        for decl in n.children_by_field_name("declarator", &mut c) {
            let mut t = decl;
            let mut ptrs = 0;
            loop {
                match t.kind() {
                    "init_declarator" => t = t.child_by_field_name("declarator")?,
                    "pointer_declarator" => {
                        ptrs += 1;
                        t = t.child_by_field_name("declarator")?;
                    }
                    _ => break,
                }
            }
            if t.kind() == "identifier" && &text[t.byte_range()] == name {
                let base: String = text[ty.byte_range()]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                return Some((base, ptrs));
            }
        }
    }
    None
}

/// `e` in one spelling for equal products: outer parentheses dropped,
/// whitespace collapsed, the factors of a top-level product sorted
/// (`(sizeof(struct b) * count)` and `count * sizeof(struct b)` agree).
fn canon(e: &str) -> String {
    let mut t: String = e.split_whitespace().collect::<Vec<_>>().join(" ");
    while let Some(inner) = t.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
        if !balanced(inner) {
            break;
        }
        t = inner.trim().to_string();
    }
    let b = t.as_bytes();
    let mut depth = 0i32;
    let mut cuts = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'*' if depth == 0 => cuts.push(i),
            b'+' | b'/' | b'%' | b'<' | b'&' | b'|' | b'^' | b'?' | b',' if depth == 0 => {
                return t;
            }
            b'-' if depth == 0 && b.get(i + 1) != Some(&b'>') => return t,
            b'>' if depth == 0 && (i == 0 || b[i - 1] != b'-') => return t,
            _ => {}
        }
    }
    if cuts.is_empty() {
        return t;
    }
    let mut factors = Vec::new();
    let mut from = 0;
    for c in cuts.into_iter().chain([t.len()]) {
        let f = t[from..c].trim();
        if f.is_empty() {
            return t;
        }
        // A factor keeps the parentheses its operators need (`(a + b)`).
        factors.push(atom(&canon(f)));
        from = c + 1;
    }
    factors.sort();
    factors.join(" * ")
}

/// A length that is one `sizeof(...)`: a single object.
fn is_one_object(len: &str) -> bool {
    let t = canon(len);
    t.starts_with("sizeof") && !t.contains(" * ") && {
        let rest = t.trim_start_matches("sizeof").trim_start();
        rest.starts_with('(')
            && balanced(rest)
            && rest.ends_with(')')
            && balanced(&rest[1..rest.len() - 1])
    }
}

/// Whether `s` has balanced parentheses that never close below zero.
fn balanced(s: &str) -> bool {
    let mut d = 0i32;
    for c in s.bytes() {
        match c {
            b'(' => d += 1,
            b')' => {
                d -= 1;
                if d < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    d == 0
}

/// `s` with every `prefix` (`ring->`, `adapter->tx.`) that starts an
/// operand removed.
fn strip_prefix_all(s: &str, prefix: &str) -> String {
    let p: String = prefix.split_whitespace().collect();
    let compact_ok = !p.is_empty();
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < s.len() {
        if compact_ok
            && s[i..].starts_with(&p)
            && (i == 0 || !(ident::is_byte(b[i - 1]) || b[i - 1] == b'.' || b[i - 1] == b'>'))
        {
            i += p.len();
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// The identifier tokens of `s` that are not members selected by `.` or
/// `->`, each with whether it is inside a `sizeof` and where it starts.
fn idents(s: &str) -> Vec<(String, bool, usize)> {
    let b = s.as_bytes();
    let toks = lex::ident_tokens(s);
    let mut out = Vec::new();
    let mut sizeof_until = 0usize;
    for t in &toks {
        let id = &s[t.start..t.end];
        if t.start < sizeof_until {
            out.push((id.to_string(), true, t.start));
            continue;
        }
        if id.as_bytes()[0].is_ascii_digit() {
            continue;
        }
        if id == "sizeof" {
            // The operand: a parenthesized group, or the next token.
            let mut j = t.end;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if j < b.len() && b[j] == b'(' {
                sizeof_until = lex::close_paren(b, j).unwrap_or(b.len());
            } else {
                let mut k = j;
                while k < b.len()
                    && (ident::is_byte(b[k]) || matches!(b[k], b'-' | b'>' | b'.' | b'*'))
                {
                    k += 1;
                }
                sizeof_until = k;
            }
            continue;
        }
        let before = s[..t.start].trim_end();
        if before.ends_with('.') || before.ends_with("->") {
            continue;
        }
        out.push((id.to_string(), false, t.start));
    }
    out
}

/// Constants, macros and type words a length may name besides members.
fn constant_like(prog: &Program, table: &Table, id: &str) -> bool {
    const WORDS: &[&str] = &[
        "struct", "union", "unsigned", "signed", "int", "long", "short", "char", "u8", "u16",
        "u32", "u64", "size_t",
    ];
    WORDS.contains(&id)
        || prog.enumerators.contains(id)
        || prog.macros.contains_key(id)
        || table.inline_names.contains(id)
        || id
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The one member of the object `prefix` (`lp->`, written without spaces)
/// that `d` stores local `name` into (`lp->rx_ring_size = name;`).
fn member_holding(
    pf: &fgft_parse::ParsedFile,
    d: &FnDef,
    prefix: &str,
    name: &str,
) -> Option<String> {
    let text = pf.text.as_str();
    let body = body_of(pf, d)?;
    let mut found: Vec<String> = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        let Some((l, r)) = fgft_parse::walk::plain_assignment(text, n) else {
            continue;
        };
        if r.kind() != "identifier" || &text[r.byte_range()] != name {
            continue;
        }
        let (Some(b), Some(op), Some(f)) = (
            l.child_by_field_name("argument"),
            l.child_by_field_name("operator"),
            l.child_by_field_name("field"),
        ) else {
            continue;
        };
        let p: String = format!("{}{}", &text[b.byte_range()], &text[op.byte_range()])
            .split_whitespace()
            .collect();
        if p == prefix {
            found.push(text[f.byte_range()].to_string());
        }
    }
    found.sort();
    found.dedup();
    if found.len() > 1 {
        // Several members take the count (xen-netback's `num_queues` and
        // `stalled_queues`, which later counts down): the one named as a
        // count.
        found.retain(|m| is_count_name(m));
    }
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// A member name that says it holds a count (`num_queues`, `rx_count`,
/// `nr_rings`, `ring_size`).
fn is_count_name(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    m.split('_').any(|w| {
        matches!(
            w,
            "num" | "nr" | "count" | "cnt" | "size" | "len" | "entries" | "n"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_stripped_at_operands_only() {
        assert_eq!(
            strip_prefix_all("ring->count * sizeof(struct x)", "ring->"),
            "count * sizeof(struct x)"
        );
        assert_eq!(strip_prefix_all("myring->count", "ring->"), "myring->count");
        assert_eq!(
            strip_prefix_all("adapter->tx.count + 1", "adapter->tx."),
            "count + 1"
        );
    }

    #[test]
    fn idents_skip_sizeof_operands_and_selected_members() {
        let v = idents("n * sizeof(struct foo) + a->b + sizeof x");
        let free: Vec<&str> = v.iter().filter(|x| !x.1).map(|x| x.0.as_str()).collect();
        assert_eq!(free, ["n", "a"]);
    }

    #[test]
    fn equal_products_agree() {
        assert_eq!(
            canon("(sizeof(struct b) * count)"),
            canon("count * sizeof(struct b)")
        );
        assert_eq!(canon("(a) + (b)"), "(a) + (b)");
        assert_ne!(canon("a * b + c"), canon("c + a * b"));
        // A sum stays one factor (minix's bitmap map).
        assert_eq!(
            canon("((a + b) * sizeof(struct x *))"),
            "(a + b) * sizeof(struct x *)"
        );
    }

    #[test]
    fn one_object_is_not_an_array() {
        assert!(is_one_object("sizeof(*rtl_fw)"));
        assert!(is_one_object("(sizeof(struct x))"));
        assert!(!is_one_object("count * sizeof(struct x)"));
        assert!(!is_one_object("sizeof(a) + sizeof(b)"));
    }

    #[test]
    fn arguments_become_operands() {
        assert_eq!(atom("ring->count"), "ring->count");
        assert_eq!(atom("a + b"), "(a + b)");
        assert_eq!(atom("sizeof(struct x)"), "sizeof(struct x)");
        assert_eq!(atom("-n"), "(-n)");
    }
}
