//! The model of the driver facts: the types every analysis of fgft-facts
//! speaks (sites, field accesses, origins and uses of pointers, calls, the
//! per-function and per-driver facts, the kernel API models).
//!
//! Job: be the leaf the analyses share, so that `access` (which makes the
//! facts), `callgraph` (which closes over them) and `apicalls` (which reads
//! the kernel calls out of them) import these types from here and never
//! from each other.  Invariant: this module imports no other module of the
//! crate except `ctype` (itself a leaf) and holds data and trivial accessors
//! only, no analysis.

use crate::ctype::CType;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

/// Where something happens in the driver's original text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Site {
    pub file: usize,
    pub range: Range<usize>,
    pub line: usize,
    /// The function it happens in.
    pub func: String,
}

/// How a field or variable is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum AccessKind {
    Read,
    Write,
    ReadWrite,
    /// Its address is taken (what happens through it is found from the
    /// pointer's uses).
    Addr,
    /// It is a struct member that a further `.member` selects into.
    Embed,
}

impl AccessKind {
    pub fn reads(self) -> bool {
        matches!(self, AccessKind::Read | AccessKind::ReadWrite)
    }
    pub fn writes(self) -> bool {
        matches!(self, AccessKind::Write | AccessKind::ReadWrite)
    }
}

/// One access to a member of a record type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldAccess {
    pub base: CType,
    pub field: String,
    pub kind: AccessKind,
    pub at: Site,
}

/// Where a pointer value came from (flow-insensitive, per function).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Origin {
    /// Parameter `index` of the function.
    Param(usize),
    /// The value of a member (`x->f`).
    FieldVal(CType, String),
    /// The address of a member (`&x->f`).
    FieldAddr(CType, String),
    /// The value of a driver global.
    Global(String),
    /// The address of a driver global.
    GlobalAddr(String),
    /// Memory a kernel allocator returned.
    Fresh,
    /// The caller's stack (address of a local).
    Stack,
}

/// How a pointer is used.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum PtrUseKind {
    /// `*p`.
    Deref,
    /// `p[0]` (a pointer or an array of unknown type).
    Subscript0,
    /// `p[i]` with a non-constant or non-zero index.
    Index,
    /// `p + n`.
    Arith,
    /// Handed to a kernel function that accesses `len` bytes through it.
    Sized(String),
    /// Handed to a kernel function that reads it as a string.
    Str,
}

/// One use of a pointer, with the origins of the pointer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PtrUse {
    pub origins: Vec<Origin>,
    pub kind: PtrUseKind,
    pub access: AccessKind,
    /// The pointer's type at the use.
    pub ty: CType,
    pub at: Site,
}

/// A pointer the code accesses memory through (`p->f`, `*p`, `p[i]`, or
/// handed to a kernel function that does), with the pointer's origins
/// (empty: not known) and the type it points to. In-place marshaling
/// grants the target of a member only where the member's value reaches
/// one of these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deref {
    pub origins: Vec<Origin>,
    pub pointee: CType,
}

/// A type relation found in the code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Relation {
    /// Objects of type `of` carry a private area of type `ty`, which
    /// `accessor(o)` returns (the API whose model `returns = "priv"`:
    /// `netdev_priv`).
    Priv {
        of: CType,
        ty: CType,
        accessor: String,
    },
    /// `container_of(p, outer, member)` with `p` of type `inner *`.
    Container {
        inner: CType,
        outer: CType,
        member: String,
    },
    /// Member `field` of `base` (a `void *` or untyped pointer) holds a
    /// pointer to `to`.
    Conv {
        base: CType,
        field: String,
        to: CType,
    },
    /// Parameter `index` of the function is converted to `to`.
    ParamConv { index: usize, to: CType },
}

/// What a call calls.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum CallTarget {
    Driver(String),
    Kernel(String),
    /// Through a pointer; the callee expression as written.
    Indirect(String),
}

/// What a call through a pointer reads the pointer from: the callee
/// expression's origins (a member's value `ops->f`, a parameter, a global
/// function pointer) and the local variable it is read from, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Callee {
    pub origins: Vec<Origin>,
    pub local: Option<String>,
    /// The macro or kernel helper whose expansion holds the call (its
    /// text is the expansion's, not the driver's at the site).
    pub expansion: Option<String>,
}

/// One call.
#[derive(Debug, Clone, Serialize)]
pub struct CallSite {
    pub target: CallTarget,
    pub at: Site,
    /// Origins of each argument.
    pub args: Vec<Vec<Origin>>,
    /// The driver macro whose expansion holds the call, if any.
    pub via_macro: Option<String>,
    /// For a call through a pointer: where the pointer comes from.
    pub callee: Option<Callee>,
    /// Each argument that names a function (through `&` and casts): a
    /// driver function, or a name that is no variable (a kernel function).
    pub arg_names: Vec<Option<String>>,
    /// For a call through a pointer: the driver functions it may call, as
    /// resolved after the facts (fgft-split's `icall`); the call graph and
    /// the closures follow them like direct calls.
    pub targets: Vec<String>,
}

impl CallSite {
    /// A call with no pointer callee, no named argument and no target yet.
    pub fn new(target: CallTarget, at: Site, args: Vec<Vec<Origin>>, via: Option<String>) -> Self {
        CallSite {
            target,
            at,
            args,
            via_macro: via,
            callee: None,
            arg_names: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// The driver functions the call reaches: its direct callee, or the
    /// resolved targets of a call through a pointer.
    pub fn driver_callees(&self) -> impl Iterator<Item = &String> {
        let direct = match &self.target {
            CallTarget::Driver(c) => Some(c),
            _ => None,
        };
        direct.into_iter().chain(self.targets.iter())
    }
}

/// A use of a driver global.
#[derive(Debug, Clone, Serialize)]
pub struct GlobalRef {
    pub name: String,
    pub kind: AccessKind,
    /// For address uses: whether the address only went to a kernel
    /// function that takes it as an object identity (a lock).
    pub kobj_only: bool,
    pub at: Site,
}

/// Everything found in one function.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FnFacts {
    pub calls: Vec<CallSite>,
    /// Driver functions used as values (not called).
    pub fn_refs: Vec<(String, Site)>,
    pub globals: Vec<GlobalRef>,
    pub accesses: Vec<FieldAccess>,
    pub ptr_uses: Vec<PtrUse>,
    /// Every access through a pointer (a superset of `ptr_uses`' sites,
    /// with unknown origins kept).
    pub derefs: Vec<Deref>,
    pub relations: Vec<Relation>,
    /// `static` locals (their storage is not transactional).
    pub local_statics: Vec<Site>,
    /// Kernel identifiers read that are in the API table's globals list.
    pub kernel_globals: BTreeSet<String>,
    /// Origins of each parameter's value inside the function (Param(i) plus
    /// anything assigned to it).
    pub param_origins: Vec<Vec<Origin>>,
}

impl FnFacts {
    /// Adds the facts of another definition of the same function (one per
    /// configuration branch).
    pub fn merge(&mut self, f: FnFacts) {
        let into = self;
        // The first definition (nearly always the only one) is moved, not copied.
        if into.is_empty() {
            *into = f;
            return;
        }
        // Destructured so that a new kind of fact cannot be dropped here.
        let FnFacts {
            calls,
            fn_refs,
            globals,
            accesses,
            ptr_uses,
            derefs,
            relations,
            local_statics,
            kernel_globals,
            param_origins,
        } = f;
        into.calls.extend(calls);
        into.fn_refs.extend(fn_refs);
        into.globals.extend(globals);
        into.accesses.extend(accesses);
        into.ptr_uses.extend(ptr_uses);
        into.derefs.extend(derefs);
        into.relations.extend(relations);
        into.local_statics.extend(local_statics);
        into.kernel_globals.extend(kernel_globals);
        if into.param_origins.len() < param_origins.len() {
            into.param_origins.resize(param_origins.len(), Vec::new());
        }
        for (i, o) in param_origins.into_iter().enumerate() {
            for x in o {
                if !into.param_origins[i].contains(&x) {
                    into.param_origins[i].push(x);
                }
            }
        }
    }

    /// No fact of any kind (what `Default` gives).
    pub fn is_empty(&self) -> bool {
        // Destructured so that a new kind of fact cannot be forgotten here.
        let FnFacts {
            calls,
            fn_refs,
            globals,
            accesses,
            ptr_uses,
            derefs,
            relations,
            local_statics,
            kernel_globals,
            param_origins,
        } = self;
        calls.is_empty()
            && fn_refs.is_empty()
            && globals.is_empty()
            && accesses.is_empty()
            && ptr_uses.is_empty()
            && derefs.is_empty()
            && relations.is_empty()
            && local_statics.is_empty()
            && kernel_globals.is_empty()
            && param_origins.is_empty()
    }
}

/// Facts for every function of the driver.
#[derive(Debug, Default)]
pub struct DriverFacts {
    pub per_fn: BTreeMap<String, FnFacts>,
}

/// Kernel globals fgft knows SFI code may read (given by the caller).
pub type KernelGlobals = BTreeSet<String>;

/// How a kernel function uses one of its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ArgKind {
    /// A plain value.
    Val,
    /// A kernel object used for its identity (a lock, a timer, a device):
    /// the wrapper passes the original object, never an SFI copy.
    Kobj,
    /// Memory the function writes, `len` bytes (a C expression over the
    /// parameter names).
    Out(String),
    /// Memory the function reads, `len` bytes.
    In(String),
    /// Memory the function reads and writes.
    InOut(String),
    /// A NUL-terminated string the function reads.
    InStr,
    /// A function pointer handed to the kernel.
    Func,
}

/// What a call returns, beyond its type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Returns {
    Plain,
    /// Fresh memory owned by the caller (allocators).
    Fresh,
    /// The private area that trails the object of the first argument
    /// (`netdev_priv`).
    Priv,
    /// The object that contains the first argument at member (third
    /// argument) (`container_of`).
    Container,
}

/// The analysis' view of one kernel function.
#[derive(Debug, Clone, Serialize)]
pub struct ApiModel {
    pub name: String,
    /// Parameter names and kinds, in order (empty when unknown).
    pub params: Vec<(String, ArgKind)>,
    /// A C expression over the parameter names that reads and writes what
    /// the function does (e.g. `(dev)->state` for `netif_running`); used
    /// for field-access facts only.
    pub model: Option<String>,
    pub returns: Returns,
    /// Runs inside the SFI module (an inline helper or macro compiled with
    /// the sanitizer) rather than through a wrapper.
    pub inline: bool,
    /// Defined by the kernel's headers (a macro or static inline read from
    /// the preprocessed unit): its model is walked like a driver macro's
    /// expansion, so the calls inside it name it (`via_macro`).
    pub header: bool,
}

/// Models of kernel functions, by name.
#[derive(Debug, Clone, Default)]
pub struct ApiModels {
    pub map: BTreeMap<String, ApiModel>,
}

impl ApiModels {
    pub fn get(&self, name: &str) -> Option<&ApiModel> {
        self.map.get(name)
    }
}
