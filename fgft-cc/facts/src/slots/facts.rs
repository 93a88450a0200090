//! Type facts of one file and of its headers (`Facts`, `FactSet`): what the
//! finder needs to resolve the structure on the left of `x->f = fn`.
//!
//! Invariant: a lookup reads the file first, then its headers in order; a
//! header layer is parsed only when one of its names is asked for.

use fgft_parse::{walk, ParsedFile};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tree_sitter::Node;

/// Type facts of one file, read with tree-sitter (no preprocessing): enough to
/// resolve the structure on the left of `x->f = fn`.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// struct name -> field -> type name (`struct X` gives `X`; typedef names
    /// are kept and resolved through `typedefs`).
    pub struct_fields: HashMap<String, HashMap<String, String>>,
    /// typedef name -> the type it names (struct name or another typedef).
    pub typedefs: HashMap<String, String>,
    /// Global variables -> type name.
    pub globals: HashMap<String, String>,
    /// Functions defined or declared.
    pub functions: HashSet<String>,
}

impl Facts {
    /// Adds `other`'s facts (ours win on conflicts).
    pub fn merge(&mut self, other: &Facts) {
        for (k, v) in &other.struct_fields {
            self.struct_fields
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        for (k, v) in &other.typedefs {
            self.typedefs.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in &other.globals {
            self.globals.entry(k.clone()).or_insert_with(|| v.clone());
        }
        self.functions.extend(other.functions.iter().cloned());
    }

    /// Resolves a type name through typedefs to a struct name.
    pub fn resolve<'a>(&'a self, mut t: &'a str) -> &'a str {
        for _ in 0..8 {
            match self.typedefs.get(t) {
                Some(n) if n != t => t = n,
                _ => break,
            }
        }
        t
    }
}

/// Which table of [`Facts`] a lookup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactKey {
    /// [`Facts::functions`]
    Function,
    /// [`Facts::globals`]
    Global,
    /// [`Facts::struct_fields`]
    Struct,
    /// [`Facts::typedefs`]
    Typedef,
}

/// Facts made only when a lookup may find something in them (a header is
/// parsed only when one of its names is asked for).
pub trait LazyFacts: Send + Sync + std::fmt::Debug {
    /// `false` only when the facts certainly hold no `name` in table `key`.
    fn may_have(&self, key: FactKey, name: &str) -> bool;
    /// The facts (made on the first call).
    fn facts(&self) -> &Facts;
}

#[derive(Debug, Clone)]
pub(super) enum Layer {
    Eager(Arc<Facts>),
    Lazy(Arc<dyn LazyFacts>),
}

impl Layer {
    /// The layer's facts when they may hold `name` in table `key`.
    fn get(&self, key: FactKey, name: &str) -> Option<&Facts> {
        match self {
            Layer::Eager(f) => Some(f),
            Layer::Lazy(l) => l.may_have(key, name).then(|| l.facts()),
        }
    }
}

/// The facts of a file and of its headers, looked up layer by layer (the
/// file first), so headers shared by many files are never copied.
#[derive(Debug, Clone, Default)]
pub struct FactSet {
    layers: Vec<Layer>,
}

impl From<Facts> for FactSet {
    fn from(f: Facts) -> FactSet {
        FactSet {
            layers: vec![Layer::Eager(Arc::new(f))],
        }
    }
}

impl FactSet {
    /// Adds a lower-priority layer.
    pub fn push(&mut self, f: Arc<Facts>) {
        self.layers.push(Layer::Eager(f));
    }

    /// Adds a lower-priority layer made on demand: lookups give what they
    /// would give with its facts pushed, as long as `may_have` never says
    /// `false` for a name the facts hold.
    pub fn push_lazy(&mut self, f: Arc<dyn LazyFacts>) {
        self.layers.push(Layer::Lazy(f));
    }

    /// Whether any layer defines or declares function `n`.
    pub fn is_function(&self, n: &str) -> bool {
        self.layers.iter().any(|l| {
            l.get(FactKey::Function, n)
                .is_some_and(|f| f.functions.contains(n))
        })
    }

    /// The type of global variable `n`.
    pub fn global(&self, n: &str) -> Option<&String> {
        self.layers
            .iter()
            .find_map(|l| l.get(FactKey::Global, n)?.globals.get(n))
    }

    /// The field types of struct `st`.
    pub fn struct_fields(&self, st: &str) -> Option<&HashMap<String, String>> {
        self.layers
            .iter()
            .find_map(|l| l.get(FactKey::Struct, st)?.struct_fields.get(st))
    }

    /// Resolves a type name through typedefs to a struct name.
    pub fn resolve<'a>(&'a self, mut t: &'a str) -> &'a str {
        for _ in 0..8 {
            match self
                .layers
                .iter()
                .find_map(|l| l.get(FactKey::Typedef, t)?.typedefs.get(t))
            {
                Some(n) if n != t => t = n,
                _ => break,
            }
        }
        t
    }
}

/// The type name a type node names: `struct X` -> `X`, `foo_t` -> `foo_t`.
pub(super) fn type_name<'a>(pf: &'a ParsedFile, t: Node<'_>) -> Option<&'a str> {
    let k = walk::kinds();
    let id = t.kind_id();
    if id == k.struct_specifier || id == k.union_specifier {
        k.child(t, k.f_name).map(|n| pf.node_text(n))
    } else if id == k.type_identifier {
        Some(pf.node_text(t))
    } else {
        None
    }
}

/// The name a declarator declares, and whether it declares an array.
pub(super) fn declarator_name<'a>(
    pf: &'a ParsedFile,
    mut d: Node<'_>,
) -> Option<(&'a str, bool, bool)> {
    let k = walk::kinds();
    let mut array = false;
    let mut function = false;
    for _ in 0..32 {
        let id = d.kind_id();
        if id == k.identifier || id == k.field_identifier || id == k.type_identifier {
            return Some((pf.node_text(d), array, function));
        } else if id == k.array_declarator {
            array = true;
        } else if id == k.function_declarator {
            function = true;
        }
        d = match k.child(d, k.f_declarator) {
            Some(x) => x,
            None => d.named_child(0)?,
        };
    }
    None
}

/// The children of `n` in field `f`, in order.
pub(super) fn children_by_field<'t>(
    n: Node<'t>,
    f: Option<std::num::NonZeroU16>,
) -> impl Iterator<Item = Node<'t>> {
    fgft_parse::walk::children_with_fields(n)
        .filter(move |(_, id)| f.is_some() && *id == f)
        .map(|(x, _)| x)
}

/// Inserts `k -> v` written by the node spanning `r`.  Facts used to be
/// collected walking the tree backwards (later items first, a node before
/// its children), where the last write won; in a forward walk that is: keep
/// the first writer, unless the new one lies inside it.
pub(super) fn put<V>(
    map: &mut HashMap<String, V>,
    spans: &mut HashMap<String, (usize, usize)>,
    k: &str,
    v: V,
    r: (usize, usize),
) {
    match spans.get(k) {
        Some(&(s, e)) if !(s <= r.0 && r.1 <= e) => {}
        _ => {
            spans.insert(k.to_string(), r);
            map.insert(k.to_string(), v);
        }
    }
}
