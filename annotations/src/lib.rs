//! fgft-annotations: what a driver's author tells fgft about a driver.
//!
//! Two equivalent forms produce the same [`Annotations`] value:
//!
//! * a **sidecar** TOML file per driver ([`Annotations::from_sidecar`],
//!   [`parse_sidecar_str`]), documented with a full example in the crate's
//!   `README.md`;
//! * **inline** `FGFT_*` macros from `include/fgft.h` in the C source,
//!   extracted from the source text with tree-sitter ([`inline::scan`]).
//!
//! Command-line `--isolate NAME|GLOB` flags become [`Pattern`]s through
//! [`Pattern::from_cli`]. All forms are combined with [`Annotations::merge`].
//!
//! Every bad input is an [`AnnotError`] carrying a `file:line:col`
//! location ([`Loc`]); nothing here panics on input.

mod error;
pub mod inline;
mod loc;
mod pattern;
mod sidecar;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use error::AnnotError;
pub use loc::Loc;
pub use pattern::Pattern;
pub use sidecar::parse_sidecar_str;

/// The word a blob or shared length may name for the net_device whose
/// private area (`netdev_priv()`) the hinted member's object is:
/// `len = "OWNER_NETDEV->num_tx_queues * sizeof(struct ifb_q_private)"`.
pub const OWNER_NETDEV: &str = "OWNER_NETDEV";

/// Everything fgft is told about one driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Annotations {
    /// `[driver]`: which files make up the driver (sidecar only).
    pub driver: Option<DriverInfo>,
    /// Entry points to run as transactions (names or globs).
    pub isolate: Vec<Pattern>,
    /// Functions never to isolate even if an `isolate` pattern matches them.
    pub exclude: Vec<Pattern>,
    /// Marshaling hints on struct fields and function parameters.
    pub hints: Vec<Hint>,
    /// The driver's device checkpoint function (overrides the one fgft-cc
    /// derives from the PM code).
    pub checkpoint: Option<FnRef>,
    /// The driver's device restore function (same).
    pub restore: Option<FnRef>,
    /// How the transaction's device key (`key`, a `void *`: the entry
    /// point's first pointer parameter) becomes what the checkpoint and
    /// restore functions take (`[checkpoint] key-to-dev`,
    /// `FGFT_KEY_TO_DEV(expr);`). Applies to every entry point that no
    /// [`Annotations::key_to_dev_for`] names.
    pub key_to_dev: Option<KeyToDev>,
    /// `[[checkpoint.key]]`: the same for the entry points `entries` names
    /// (their keys point at other objects).
    pub key_to_dev_for: Vec<KeyToDev>,
    /// `[checkpoint] none = true`: the driver has no device checkpoint, and
    /// says so (no diagnostic for the missing PM code).
    pub no_checkpoint: Option<Loc>,
    /// Kernel functions declared side-effect free: called from SFI code
    /// without a compensation entry.
    pub pure_apis: Vec<String>,
    /// `[recovery] retry`: entry points whose aborted calls run once more
    /// (beside the slots the slot table retries).
    pub retry: Vec<Pattern>,
    /// `[recovery] error`: entry points whose aborted calls return the
    /// abort's value at once, even where the slot table retries.
    pub no_retry: Vec<Pattern>,
    /// `[isolate] unchecked-reads`: closure functions whose loads are not
    /// range-checked (they walk kernel structures no grant covers: fs/fat's
    /// `fat_iget` over the inode hash chains); they must make no store
    /// outside their own frame.
    pub unchecked_reads: Vec<Pattern>,
}

/// `[driver]` of a sidecar.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriverInfo {
    /// Human name of the driver.
    pub name: String,
    /// Kbuild module name (the `.ko` without suffix); defaults to `name`.
    pub module: String,
    /// What relative paths are relative to.
    pub base: SourceBase,
    /// Kernel version the default file lists are for (e.g. "6.12").
    pub tree_version: Option<String>,
    /// Compiled C files, in link order.
    pub sources: Vec<SourceFile>,
    /// Files the sources `#include` that are worth reading: driver-local
    /// headers, or a `.c` file included by another (ens1371.c includes
    /// ens1370.c). Not compiled by themselves.
    pub headers: Vec<SourceFile>,
    /// Extra include directories (`-I`), relative like the sources.
    pub include_dirs: Vec<SourceFile>,
    /// Per-kernel-version overrides of the lists above, keyed by version
    /// ("6.1").
    pub versions: BTreeMap<String, VersionFiles>,
    /// Where `[driver]` was written.
    pub loc: Loc,
}

/// What the relative paths of `[driver]` are relative to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum SourceBase {
    /// The kernel tree given with `--tree` (the default).
    Tree,
    /// The directory holding the sidecar (drivers kept outside a tree).
    Sidecar(PathBuf),
}

/// One path named in `[driver]`, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceFile {
    pub path: PathBuf,
    pub loc: Loc,
}

/// `[driver.version."X.Y"]`: lists that replace the default ones for a
/// given kernel version. A list left out keeps the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VersionFiles {
    pub sources: Option<Vec<SourceFile>>,
    pub headers: Option<Vec<SourceFile>>,
    pub include_dirs: Option<Vec<SourceFile>>,
}

/// The driver's files resolved against a tree and a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedFiles {
    pub sources: Vec<PathBuf>,
    pub headers: Vec<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
}

/// A device-key conversion (`key-to-dev`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyToDev {
    /// The entry points it is for (empty: the default for all).
    pub entries: Vec<Pattern>,
    /// C expression over `key`.
    pub expr: String,
    pub loc: Loc,
}

impl Annotations {
    /// The key conversion annotated for entry point `entry`, if any: the
    /// first `[[checkpoint.key]]` whose patterns match it, else the
    /// default.
    pub fn key_to_dev_of(&self, entry: &str) -> Option<&KeyToDev> {
        self.key_to_dev_for
            .iter()
            .find(|k| k.entries.iter().any(|p| p.matches(entry)))
            .or(self.key_to_dev.as_ref())
    }
}

/// A function named by an annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FnRef {
    pub name: String,
    pub loc: Loc,
}

/// One marshaling hint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hint {
    pub target: HintTarget,
    pub kind: HintKind,
    /// Where the hint is written: the sidecar or inline annotation, the
    /// contract's line in its table, or the evidence an inferred hint
    /// rests on (the allocation site in the driver).
    pub loc: Loc,
    pub source: HintSource,
}

/// Who stated a hint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub enum HintSource {
    /// The driver's annotations (sidecar or inline `FGFT_*` macros).
    #[default]
    Annotation,
    /// A kernel interface contract of the slot named (`contracts.toml`).
    Contract { slot: String },
    /// Inferred from the driver: `how` names the evidence (`kcalloc`).
    Inferred { how: String },
    /// Inferred from an allocation of one object (`kzalloc(sizeof(struct
    /// r))`): used only where the member is indexed like an array
    /// (`x->m[i]`); elsewhere the member is marshaled as the object it is.
    InferredObject { how: String },
}

impl HintSource {
    /// How plan reports name the source (`sidecar`, `contract
    /// ethtool_ops.get_regs`, `inferred from kcalloc`).
    pub fn describe(&self) -> String {
        match self {
            HintSource::Annotation => "annotation".into(),
            HintSource::Contract { slot } => format!("contract {slot}"),
            HintSource::Inferred { how } => format!("inferred from {how}"),
            HintSource::InferredObject { how } => {
                format!("inferred from {how} of one object, where indexed")
            }
        }
    }
}

/// What a hint is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum HintTarget {
    /// A field of a struct (or union), named without the `struct` keyword.
    Field { strukt: String, field: String },
    /// A parameter of a driver function.
    Param { function: String, param: String },
}

/// How the pointer (or array) in a hinted slot is marshaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum HintKind {
    /// A NUL-terminated string: copy up to and including the NUL.
    NullTerm,
    /// A buffer of `len` bytes; `len` is a C expression over the other
    /// fields of the same struct (field hints) or the other parameters of
    /// the same function (parameter hints), e.g. `regs->len`.
    Blob { len: String },
    /// Copy `sizeof(ty)` bytes without looking inside.
    Opaque { ty: String },
    /// Pass the pointer through untranslated and never copy its target
    /// (iomem, locks, `struct pci_dev`).
    NoDeref,
    /// The target is a recursive structure (list, tree): marshal it
    /// through the object tracker, following its links.
    Recursive,
    /// The pointer points at member `member` embedded in a
    /// `struct outer`: marshal the enclosing object (container_of).
    Container { outer: String, member: String },
    /// Memory the SFI code uses in place, never copied: DMA buffers and
    /// rings, device-shared memory.  The pointer crosses untranslated and
    /// the stub grants `[ptr, ptr + len)` (when non-NULL) with `rights` for
    /// the transaction.  Writes through it are not undone by the undo log:
    /// bringing such memory back is the device checkpoint's job.  `len` is
    /// a C expression like a blob's.
    Shared { len: String, rights: Access },
}

/// The access a `shared` hint grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Access {
    /// `rights = "r"`: read only.
    Read,
    /// `rights = "rw"` (the default): read and write.
    ReadWrite,
}

impl Access {
    /// The `rights = "..."` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "r",
            Access::ReadWrite => "rw",
        }
    }
}

impl HintKind {
    /// The `kind = "..."` spelling of this kind.
    pub fn name(&self) -> &'static str {
        match self {
            HintKind::NullTerm => "nullterm",
            HintKind::Blob { .. } => "blob",
            HintKind::Opaque { .. } => "opaque",
            HintKind::NoDeref => "noderef",
            HintKind::Recursive => "recursive",
            HintKind::Container { .. } => "container",
            HintKind::Shared { .. } => "shared",
        }
    }
}

impl std::fmt::Display for HintTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HintTarget::Field { strukt, field } => write!(f, "struct {strukt}.{field}"),
            HintTarget::Param { function, param } => write!(f, "{function}({param})"),
        }
    }
}

impl Annotations {
    /// Reads and validates a sidecar file.
    pub fn from_sidecar(path: &Path) -> Result<Annotations, AnnotError> {
        let text = std::fs::read_to_string(path).map_err(|source| AnnotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        sidecar::parse(path, &text)
    }

    /// Combines two sets of annotations (e.g. a sidecar and the inline
    /// macros of the driver's files, or `--isolate` flags).
    ///
    /// Patterns, hints and pure APIs are united (exact duplicates kept
    /// once). It is an error ([`AnnotError::Conflict`]) when both name a
    /// different driver, a different checkpoint or restore function, or
    /// different hints for the same field or parameter.
    pub fn merge(mut self, other: Annotations) -> Result<Annotations, AnnotError> {
        self.driver = match (self.driver.take(), other.driver) {
            (Some(a), Some(b)) if a != b => {
                return Err(AnnotError::Conflict {
                    loc: b.loc.clone(),
                    msg: format!(
                        "second [driver] section (`{}`) for the same annotations",
                        b.name
                    ),
                    previous: Box::new(a.loc),
                })
            }
            (a, b) => a.or(b),
        };
        self.checkpoint = merge_fn("checkpoint", self.checkpoint.take(), other.checkpoint)?;
        self.restore = merge_fn("restore", self.restore.take(), other.restore)?;
        self.key_to_dev = match (self.key_to_dev.take(), other.key_to_dev) {
            (Some(a), Some(b)) if a.expr != b.expr => {
                return Err(AnnotError::Conflict {
                    loc: b.loc,
                    msg: format!(
                        "key-to-dev `{}` conflicts with `{}` given before",
                        b.expr, a.expr
                    ),
                    previous: Box::new(a.loc),
                })
            }
            (a, b) => a.or(b),
        };
        for k in other.key_to_dev_for {
            if !self.key_to_dev_for.contains(&k) {
                self.key_to_dev_for.push(k);
            }
        }
        self.no_checkpoint = self.no_checkpoint.take().or(other.no_checkpoint);
        for p in other.isolate {
            if !self.isolate.iter().any(|q| q.text() == p.text()) {
                self.isolate.push(p);
            }
        }
        for p in other.exclude {
            if !self.exclude.iter().any(|q| q.text() == p.text()) {
                self.exclude.push(p);
            }
        }
        for h in other.hints {
            validate::add_hint(&mut self.hints, h)?;
        }
        for f in other.pure_apis {
            if !self.pure_apis.contains(&f) {
                self.pure_apis.push(f);
            }
        }
        self.retry.extend(other.retry);
        self.no_retry.extend(other.no_retry);
        self.unchecked_reads.extend(other.unchecked_reads);
        Ok(self)
    }

    /// Whether an aborted call of entry point `name` (stored in `slots`)
    /// runs once more: `[recovery] error` says no, `[recovery] retry` yes;
    /// otherwise `table_retries` (the slot table's `retry`) decides.
    pub fn retries(&self, name: &str, slots: &[String], table_retries: bool) -> bool {
        if self.no_retry.iter().any(|p| p.matches_entry(name, slots)) {
            return false;
        }
        table_retries || self.retry.iter().any(|p| p.matches_entry(name, slots))
    }

    /// True when `function` is to be isolated: some `isolate` pattern
    /// matches it and no `exclude` pattern does.
    pub fn is_isolated(&self, function: &str) -> bool {
        self.isolate.iter().any(|p| p.matches(function))
            && !self.exclude.iter().any(|p| p.matches(function))
    }

    /// True when `function`, stored in `slots` (`struct.field`), is to be
    /// isolated: some `isolate` pattern matches its name or one of its
    /// slots, and no `exclude` pattern does.
    pub fn is_isolated_entry(&self, function: &str, slots: &[String]) -> bool {
        self.isolate
            .iter()
            .any(|p| p.matches_entry(function, slots))
            && !self
                .exclude
                .iter()
                .any(|p| p.matches_entry(function, slots))
    }

    /// The isolated functions among `defined` (name, the slots it is stored
    /// in), in the order given.
    pub fn isolated_entries<'a>(&self, defined: &[(&'a str, Vec<String>)]) -> Vec<&'a str> {
        defined
            .iter()
            .filter(|(f, s)| self.is_isolated_entry(f, s))
            .map(|(f, _)| *f)
            .collect()
    }

    /// `isolate` and `exclude` patterns that match none of `defined` (name,
    /// slots): a misspelt or stale entry point, or a slot nothing fills.
    pub fn unmatched_entries(&self, defined: &[(&str, Vec<String>)]) -> Vec<&Pattern> {
        self.isolate
            .iter()
            .chain(&self.exclude)
            .filter(|p| !defined.iter().any(|(f, s)| p.matches_entry(f, s)))
            .collect()
    }

    /// The isolated functions among `defined`, in the order given.
    pub fn isolated_among<'a>(&self, defined: &[&'a str]) -> Vec<&'a str> {
        defined
            .iter()
            .copied()
            .filter(|f| self.is_isolated(f))
            .collect()
    }

    /// `isolate` and `exclude` patterns that match none of `defined`
    /// (a misspelt or stale entry point).
    pub fn unmatched_patterns(&self, defined: &[&str]) -> Vec<&Pattern> {
        self.isolate
            .iter()
            .chain(&self.exclude)
            .filter(|p| !defined.iter().any(|f| p.matches(f)))
            .collect()
    }

    /// Hints on `struct strukt`'s field `field`.
    pub fn field_hints<'a>(
        &'a self,
        strukt: &'a str,
        field: &'a str,
    ) -> impl Iterator<Item = &'a Hint> + 'a {
        self.hints.iter().filter(move |h| {
            matches!(&h.target, HintTarget::Field { strukt: s, field: f } if s == strukt && f == field)
        })
    }

    /// Hints on parameter `param` of `function`.
    pub fn param_hints<'a>(
        &'a self,
        function: &'a str,
        param: &'a str,
    ) -> impl Iterator<Item = &'a Hint> + 'a {
        self.hints.iter().filter(move |h| {
            matches!(&h.target, HintTarget::Param { function: fun, param: p } if fun == function && p == param)
        })
    }

    /// True when the kernel function `name` was declared side-effect free.
    pub fn is_pure(&self, name: &str) -> bool {
        self.pure_apis.iter().any(|p| p == name)
    }
}

fn merge_fn(what: &str, a: Option<FnRef>, b: Option<FnRef>) -> Result<Option<FnRef>, AnnotError> {
    match (a, b) {
        (Some(a), Some(b)) if a.name != b.name => Err(AnnotError::Conflict {
            loc: b.loc,
            msg: format!(
                "{what} function `{}` conflicts with `{}` given before",
                b.name, a.name
            ),
            previous: Box::new(a.loc),
        }),
        (a, b) => Ok(a.or(b)),
    }
}

impl DriverInfo {
    /// The lists in force for kernel `version` (None: the default lists).
    pub fn files_for(
        &self,
        version: Option<&str>,
    ) -> (&[SourceFile], &[SourceFile], &[SourceFile]) {
        let v = version.and_then(|v| self.versions.get(v));
        let s = v
            .and_then(|v| v.sources.as_deref())
            .unwrap_or(&self.sources);
        let h = v
            .and_then(|v| v.headers.as_deref())
            .unwrap_or(&self.headers);
        let i = v
            .and_then(|v| v.include_dirs.as_deref())
            .unwrap_or(&self.include_dirs);
        (s, h, i)
    }

    /// The sources in force for kernel `version`.
    pub fn sources_for(&self, version: Option<&str>) -> &[SourceFile] {
        self.files_for(version).0
    }

    /// Resolves every listed path against `tree` (for [`SourceBase::Tree`])
    /// or the sidecar's directory, for kernel `version` (None: the version
    /// read from `tree/Makefile`, then the defaults), and checks that each
    /// exists. A missing file is an error at the line that names it.
    pub fn resolve(
        &self,
        tree: Option<&Path>,
        version: Option<&str>,
    ) -> Result<ResolvedFiles, AnnotError> {
        let base: PathBuf = match &self.base {
            SourceBase::Sidecar(dir) => dir.clone(),
            SourceBase::Tree => match tree {
                Some(t) => t.to_path_buf(),
                None => {
                    return Err(AnnotError::Invalid {
                        loc: self.loc.clone(),
                        msg: format!(
                            "driver `{}` names its files relative to a kernel tree: give one with --tree",
                            self.name
                        ),
                    })
                }
            },
        };
        let detected = match (version, &self.base, tree) {
            (Some(v), _, _) => Some(v.to_string()),
            (None, SourceBase::Tree, Some(t)) => tree_version(t),
            _ => None,
        };
        let (s, h, i) = self.files_for(detected.as_deref());
        let check = |list: &[SourceFile], dir: bool| -> Result<Vec<PathBuf>, AnnotError> {
            list.iter()
                .map(|f| {
                    let p = base.join(&f.path);
                    let ok = if dir { p.is_dir() } else { p.is_file() };
                    if ok {
                        Ok(p)
                    } else {
                        Err(AnnotError::Missing {
                            loc: f.loc.clone(),
                            path: p,
                        })
                    }
                })
                .collect()
        };
        Ok(ResolvedFiles {
            sources: check(s, false)?,
            headers: check(h, false)?,
            include_dirs: check(i, true)?,
        })
    }
}

/// Reads `VERSION` and `PATCHLEVEL` from a kernel tree's top Makefile
/// ("6.12"); None when the tree has no readable Makefile.
pub fn tree_version(tree: &Path) -> Option<String> {
    let text = std::fs::read_to_string(tree.join("Makefile")).ok()?;
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    Some(format!("{}.{}", get("VERSION")?, get("PATCHLEVEL")?))
}

#[cfg(test)]
mod tests;
