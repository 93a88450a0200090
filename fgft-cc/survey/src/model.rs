//! What the survey keeps of each file: a small summary, never a tree.

use crate::csum::HeaderInfo;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

/// Source language of a surveyed file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    C,
    Rust,
}

/// How a file could not be surveyed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailKind {
    /// The parse ran out of its budget.
    Budget,
    /// The file (or directory) could not be read.
    Unreadable,
    /// A FIFO, socket or device where a source was expected: not read.
    NotRegular,
    /// Not source text (binary data).
    NotSource,
    /// A Rust file syn rejects.
    Syntax,
    /// A Rust file that nests too deep for syn's recursive parse.
    TooDeep,
    /// tree-sitter gave up.
    Parser,
}

/// Why one file could not be surveyed (or not fully).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub kind: FailKind,
    /// Byte offset of the problem (0 when unknown).
    #[serde(skip)]
    pub offset: usize,
    /// 1-based line of the problem.
    pub line: usize,
    pub message: String,
}

/// A function stored in a kernel slot (from the slot facts, or from a Rust
/// vtable impl or module macro).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RootSum {
    pub function: String,
    pub struct_name: String,
    pub field: String,
    pub kind: String,
    pub line: usize,
}

/// How a struct member is used in a way that needs its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UseKind {
    /// `x->f[i]`
    Index,
    /// `x->f + n`, `x->f - n`
    Arith,
    /// handed to a string function (`strcpy(x->f, ...)`)
    Str,
}

/// One member use of [`UseKind`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FieldUse {
    pub field: String,
    pub kind: UseKind,
    pub line: usize,
}

/// A function (or function-like macro) of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FnSum {
    pub name: String,
    pub line: usize,
    /// The definition holds an ERROR or MISSING node.
    pub broken: bool,
    /// A `#define` rather than a function.
    pub is_macro: bool,
    /// Names called directly, each with the line of its first call, sorted
    /// by name.
    pub calls: Vec<(String, usize)>,
    pub field_uses: Vec<FieldUse>,
}

/// How a struct member is declared.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldKind {
    /// A data pointer to `pointee` (the base type as written).
    Ptr {
        pointee: String,
    },
    /// An `__iomem` pointer: MMIO, never dereferenced by C code, passed
    /// through as it is (no marshaling, no hint).
    IoMem,
    Array,
    FnPtr,
    Value,
}

/// One member of a struct or union defined in the driver.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FieldDecl {
    pub record: String,
    pub field: String,
    pub kind: FieldKind,
}

/// Everything the survey keeps of one file.
#[derive(Debug, Clone, Serialize)]
pub struct FileSummary {
    /// Path relative to the surveyed tree.
    pub path: PathBuf,
    pub lang: Lang,
    pub bytes: usize,
    pub functions: Vec<FnSum>,
    pub roots: Vec<RootSum>,
    /// Struct members declared in the file.
    pub fields: Vec<FieldDecl>,
    /// Local headers the file includes (as found on disk), with what they
    /// define: the module sees their members, inline functions and macros.
    #[serde(skip)]
    pub headers: Vec<(PathBuf, Arc<HeaderInfo>)>,
    /// `.c` files it includes (`#include "other.c"`), relative to the tree:
    /// they belong to the same module.
    #[serde(skip)]
    pub included: Vec<PathBuf>,
    /// ERROR/MISSING nodes outside every function.
    pub stray_errors: usize,
    pub failure: Option<Failure>,
}

impl FileSummary {
    pub fn empty(path: PathBuf, lang: Lang) -> FileSummary {
        FileSummary {
            path,
            lang,
            bytes: 0,
            functions: Vec::new(),
            roots: Vec::new(),
            fields: Vec::new(),
            headers: Vec::new(),
            included: Vec::new(),
            stray_errors: 0,
            failure: None,
        }
    }
}
