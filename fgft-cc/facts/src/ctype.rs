//! C types as far as tree-sitter can tell them.
//!
//! Driver structs and typedefs are parsed from the driver's own files; kernel
//! structs are usually not (their headers are not read), so the type of a
//! member of a struct whose definition is unknown is kept symbolic as
//! [`CType::FieldOf`]: "the type of member path `p` of struct `S`".  Generated
//! C spells such types with `typeof`, so the compiler supplies what the
//! analysis does not know.

use fgft_parse::ParsedFile;
use serde::Serialize;
use tree_sitter::Node;

/// A C type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum CType {
    /// Not known (macro constants, unresolved expressions).
    #[default]
    Unknown,
    Void,
    /// Arithmetic, enum, bool, or a typedef known to be one.
    Scalar(String),
    /// `struct tag` or `union tag` (spelled with the keyword).
    Record(String),
    /// A typedef whose definition fgft did not read (a kernel typedef such as
    /// `spinlock_t` or `dma_addr_t`).
    Named(String),
    Ptr(Box<CType>),
    /// Element type and the size expression as written.
    Array(Box<CType>, Option<String>),
    /// A function (the target of a function pointer).
    Func,
    /// The type of member path `.1` of the record type `.0`, when `.0`'s
    /// definition is unknown.
    FieldOf(Box<CType>, String),
    /// What a pointer of symbolic type `.0` points to.
    PointeeOf(Box<CType>),
}

impl CType {
    pub fn ptr(t: CType) -> CType {
        CType::Ptr(Box::new(t))
    }

    /// The pointee (for pointers) or element (for arrays) type.
    pub fn pointee(&self) -> CType {
        match self {
            CType::Ptr(t) | CType::Array(t, _) => (**t).clone(),
            CType::FieldOf(..) | CType::PointeeOf(_) => CType::PointeeOf(Box::new(self.clone())),
            _ => CType::Unknown,
        }
    }

    pub fn is_pointer(&self) -> bool {
        matches!(self, CType::Ptr(_))
    }

    pub fn is_void_ptr(&self) -> bool {
        matches!(self, CType::Ptr(t) if **t == CType::Void)
    }

    /// Whether values of this type are structs or unions that can hold
    /// fields (known records, or symbolic member types that are used as
    /// records).
    pub fn is_recordish(&self) -> bool {
        matches!(
            self,
            CType::Record(_) | CType::FieldOf(..) | CType::Named(_) | CType::PointeeOf(_)
        )
    }

    /// The record tag (`struct foo`) when this is a known record type.
    pub fn record(&self) -> Option<&str> {
        match self {
            CType::Record(s) => Some(s),
            _ => None,
        }
    }

    /// C spelling of the type as a type name usable in a cast or `typeof`.
    pub fn c_spelling(&self) -> String {
        match self {
            CType::Unknown => "void".into(),
            CType::Void => "void".into(),
            CType::Scalar(s) | CType::Record(s) | CType::Named(s) => s.clone(),
            CType::Ptr(t) => match &**t {
                CType::Func => "void *".into(),
                CType::Array(..) => format!("typeof({}) *", t.c_spelling()),
                inner => {
                    let s = inner.c_spelling();
                    if s.ends_with('*') {
                        format!("{s}*")
                    } else {
                        format!("{s} *")
                    }
                }
            },
            CType::Array(t, n) => format!(
                "typeof({}[{}])",
                t.c_spelling(),
                n.clone().unwrap_or_default()
            ),
            CType::Func => "void".into(),
            CType::FieldOf(base, path) => {
                format!("typeof((({} *)0)->{path})", base.c_spelling())
            }
            CType::PointeeOf(p) => format!("typeof(*(({})0))", p.c_spelling()),
        }
    }

    /// A short identifier-safe name for this type (used in generated
    /// function names).
    pub fn ident(&self) -> String {
        let s = match self {
            CType::Record(s) => s
                .trim_start_matches("struct ")
                .trim_start_matches("union ")
                .to_string(),
            CType::FieldOf(b, p) => format!("{}__{}", b.ident(), p),
            CType::PointeeOf(b) => format!("{}__to", b.ident()),
            CType::Ptr(t) => format!("p_{}", t.ident()),
            CType::Array(t, _) => format!("a_{}", t.ident()),
            CType::Scalar(s) | CType::Named(s) => s.clone(),
            CType::Void => "void".into(),
            CType::Unknown => "unknown".into(),
            CType::Func => "fn".into(),
        };
        fgft_base::ident::underscored(&s)
            .split('_')
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("_")
    }
}

impl std::fmt::Display for CType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CType::FieldOf(b, p) => write!(f, "typeof({b}.{p})"),
            CType::PointeeOf(b) => write!(f, "*({b})"),
            CType::Ptr(t) => write!(f, "{t} *"),
            CType::Array(t, n) => write!(f, "{t}[{}]", n.clone().unwrap_or_default()),
            other => f.write_str(&other.c_spelling()),
        }
    }
}

/// Names of kernel scalar typedefs that are known to be arithmetic.
pub fn is_scalar_typedef(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "u8",
        "u16",
        "u32",
        "u64",
        "s8",
        "s16",
        "s32",
        "s64",
        "__u8",
        "__u16",
        "__u32",
        "__u64",
        "__s8",
        "__s16",
        "__s32",
        "__s64",
        "__le16",
        "__le32",
        "__le64",
        "__be16",
        "__be32",
        "__be64",
        "bool",
        "size_t",
        "ssize_t",
        "loff_t",
        "dma_addr_t",
        "phys_addr_t",
        "resource_size_t",
        "gfp_t",
        "uint",
        "ulong",
        "ushort",
        "uint8_t",
        "uint16_t",
        "uint32_t",
        "uint64_t",
        "int8_t",
        "int16_t",
        "int32_t",
        "int64_t",
        "u_char",
        "u_short",
        "u_int",
        "u_long",
        "netdev_tx_t",
        "netdev_features_t",
        "irqreturn_t",
        "pci_power_t",
        "pm_message_t",
        "atomic_t",
        "atomic64_t",
        "ktime_t",
        "time64_t",
        "umode_t",
        "off_t",
        "pid_t",
        "uid_t",
        "gid_t",
        "dev_t",
        "sector_t",
        "blkcnt_t",
        "fmode_t",
        "uintptr_t",
        "__sum16",
        "__wsum",
        "snd_pcm_uframes_t",
        "snd_pcm_sframes_t",
        "snd_pcm_format_t",
    ];
    NAMES.contains(&name)
}

/// Reads the base type of a declaration from its `type` node.
pub fn base_type(pf: &ParsedFile, ty: Node<'_>) -> CType {
    let text = pf.node_text(ty).trim();
    match ty.kind() {
        "primitive_type" => {
            if text == "void" {
                CType::Void
            } else if pf.hinted.get(ty.byte_range()).map(str::trim) != Some(text) {
                // A respelled declaration macro (DEFINE_SPINLOCK(x) -> int x):
                // the type is whatever the macro declares.
                CType::Unknown
            } else {
                CType::Scalar(text.to_string())
            }
        }
        "sized_type_specifier" => CType::Scalar(normalize_ws(text)),
        "type_identifier" => {
            if is_scalar_typedef(text) {
                CType::Scalar(text.to_string())
            } else {
                CType::Named(text.to_string())
            }
        }
        "struct_specifier" | "union_specifier" => {
            let kw = if ty.kind() == "struct_specifier" {
                "struct"
            } else {
                "union"
            };
            match ty.child_by_field_name("name") {
                Some(n) => CType::Record(format!("{kw} {}", pf.node_text(n))),
                None => CType::Unknown,
            }
        }
        "enum_specifier" => CType::Scalar(match ty.child_by_field_name("name") {
            Some(n) => format!("enum {}", pf.node_text(n)),
            None => "int".into(),
        }),
        "macro_type_specifier" => CType::Unknown,
        _ => CType::Unknown,
    }
}

fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Applies a declarator to a base type; returns the declared name (if any)
/// and its full type.
pub fn apply_declarator(pf: &ParsedFile, base: CType, decl: Node<'_>) -> (Option<String>, CType) {
    let mut ty = base;
    let mut d = decl;
    // Declarators nest outside-in (`*a[3]` is pointer_declarator(array_declarator)),
    // so collect the chain and apply it inside-out.
    let mut chain: Vec<Node<'_>> = Vec::new();
    let mut name = None;
    loop {
        match d.kind() {
            "identifier" | "field_identifier" | "type_identifier" => {
                name = Some(pf.node_text(d).to_string());
                break;
            }
            "init_declarator" => match d.child_by_field_name("declarator") {
                Some(x) => d = x,
                None => break,
            },
            "pointer_declarator"
            | "abstract_pointer_declarator"
            | "array_declarator"
            | "abstract_array_declarator"
            | "function_declarator"
            | "abstract_function_declarator"
            | "parenthesized_declarator"
            | "abstract_parenthesized_declarator"
            | "attributed_declarator" => {
                chain.push(d);
                match d.child_by_field_name("declarator") {
                    Some(x) => d = x,
                    None => {
                        // parenthesized declarators hold their inner one unnamed
                        match d.named_children(&mut d.walk()).find(|c| {
                            c.kind().ends_with("declarator")
                                || c.kind() == "identifier"
                                || c.kind() == "field_identifier"
                        }) {
                            Some(x) if d.kind().contains("parenthesized") => d = x,
                            _ => break,
                        }
                    }
                }
            }
            _ => break,
        }
    }
    // C declarators read inside-out: the outermost declarator node applies
    // last to the type... except that the base type binds to the innermost.
    // `int *a[3]`: array_declarator(pointer? no) -- tree-sitter gives
    // pointer_declarator(declarator: array_declarator(a, 3)), meaning
    // a is array of 3 pointers: apply outer (pointer) first, then array.
    for n in chain.iter() {
        ty = match n.kind() {
            "pointer_declarator" | "abstract_pointer_declarator" => CType::ptr(ty),
            "array_declarator" | "abstract_array_declarator" => {
                let size = n
                    .child_by_field_name("size")
                    .map(|s| pf.node_text(s).to_string());
                CType::Array(Box::new(ty), size)
            }
            "function_declarator" | "abstract_function_declarator" => CType::Func,
            _ => ty,
        };
    }
    (name, ty)
}

/// Type named by a `type_descriptor` (casts, sizeof).
pub fn type_descriptor(pf: &ParsedFile, td: Node<'_>) -> CType {
    let base = match td.child_by_field_name("type") {
        Some(t) => base_type(pf, t),
        None => return CType::Unknown,
    };
    match td.child_by_field_name("declarator") {
        Some(d) => apply_declarator(pf, base, d).1,
        None => base,
    }
}

/// Parses a type spelled as text (`struct foo`, `struct foo *`, `u32`), as in
/// the respelled type argument of `container_of`.
pub fn from_text(text: &str) -> CType {
    let t = text.trim();
    let stars = t
        .chars()
        .rev()
        .take_while(|c| *c == '*' || c.is_whitespace())
        .filter(|c| *c == '*')
        .count();
    let core = t.trim_end_matches(|c: char| c == '*' || c.is_whitespace());
    let core = normalize_ws(core);
    let core = core
        .trim_start_matches("const ")
        .trim_start_matches("volatile ")
        .to_string();
    let mut ty = if core.starts_with("struct ") || core.starts_with("union ") {
        CType::Record(core)
    } else if core == "void" {
        CType::Void
    } else if core.starts_with("enum ") || is_scalar_typedef(&core) || is_primitive(&core) {
        CType::Scalar(core)
    } else if core.is_empty() {
        CType::Unknown
    } else {
        CType::Named(core)
    };
    for _ in 0..stars {
        ty = CType::ptr(ty);
    }
    ty
}

fn is_primitive(s: &str) -> bool {
    s.split_whitespace().all(|w| {
        matches!(
            w,
            "int"
                | "char"
                | "short"
                | "long"
                | "unsigned"
                | "signed"
                | "float"
                | "double"
                | "_Bool"
        )
    })
}
