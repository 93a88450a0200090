//! `fgft-cc tables audit`: the compensation table checked against the
//! kernel's own source.
//!
//! For every wrapped entry of compensations.toml, the audit finds the
//! function's C definition in a kernel source tree ([`index`]), reads what
//! it stores through each parameter ([`effects`]), follows the calls it
//! hands a parameter to, to a fixed depth (a callee that is itself in the
//! table is taken at its word), and compares what it found with what the
//! entry declares:
//! - a store through a parameter declared `val`, `in(...)`, `str` or
//!   `func`, or through a kernel object of a `pure` entry, is an error (the
//!   wrapper checks no write there);
//! - a store through a pointer loaded from a parameter that is not a kernel
//!   object (`*data` of `ethtool_puts(u8 **data, ...)`) is an error unless
//!   a `reach` of the entry names that parameter with write rights.
//!
//! An entry with no C definition in the tree (a macro, assembly) is an
//! error until it is reviewed by hand and marked `audit = "why"`; a marked
//! entry is listed with its reason and not analysed.
//!
//! Invariant: the audit reads the tree and the tables and writes nothing;
//! its report is in the table's order (entry names), so it is deterministic.

pub mod effects;
pub mod index;

use effects::{FnEffects, Members};
use fgft_split::plan::table::{ApiEntry, ArgSpec, Table};
use index::{Def, Index};
use std::collections::HashMap;
use std::path::PathBuf;

/// What can stop an audit.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a kernel source tree (no {} in it)", path.display(), what)]
    NotATree { path: PathBuf, what: &'static str },
    #[error("parse options: {0}")]
    Parse(String),
}

/// How deep the audit follows calls that hand on a parameter.
pub const DEFAULT_DEPTH: usize = 3;

#[derive(Debug, Clone)]
pub struct Options {
    pub tree: PathBuf,
    pub depth: usize,
    /// Directories of the tree to read (relative to it); empty: the tree.
    pub dirs: Vec<PathBuf>,
    /// Entries to audit; empty: every one.
    pub entries: Vec<String>,
}

/// One problem the audit found in an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub entry: String,
    /// The table file the entry came from.
    pub table: PathBuf,
    pub message: String,
    /// Where in the kernel tree the evidence is (file relative to the tree,
    /// 1-based line).
    pub at: Option<(PathBuf, usize)>,
}

/// The audit's result.
#[derive(Debug, Default)]
pub struct Report {
    pub tree: PathBuf,
    /// Entries with a wrapper (the audit's subject).
    pub wrapped: usize,
    /// Of those, entries analysed against a definition.
    pub analysed: usize,
    /// Inline helpers (compiled into SFI code, their accesses checked there).
    pub inline: usize,
    /// Entries marked `audit = "..."`, with the reason.
    pub by_hand: Vec<(String, String)>,
    /// Entries this kernel neither defines nor declares.
    pub absent: Vec<String>,
    pub findings: Vec<Finding>,
    pub files: usize,
    pub bytes: usize,
    /// Files of the tree that could not be read, with why (skipped).
    pub unreadable: Vec<(PathBuf, String)>,
}

struct IndexMembers<'a> {
    ix: &'a Index,
    cache: std::cell::RefCell<HashMap<String, Option<String>>>,
}

impl Members for IndexMembers<'_> {
    fn is_array(&self, st: &str, field: &str) -> Option<bool> {
        let body = {
            let mut c = self.cache.borrow_mut();
            c.entry(st.to_string())
                .or_insert_with(|| self.ix.structs.get(st).and_then(|d| self.ix.text(d).ok()))
                .clone()?
        };
        member_kind(&body, field)
    }
}

/// Whether `field` is declared as an array (`name[16]`) or a pointer
/// (`*name`) in a struct body's text.
fn member_kind(body: &str, field: &str) -> Option<bool> {
    for decl in body.split(';') {
        let toks: Vec<&str> = decl
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|t| !t.is_empty())
            .collect();
        if toks.last() != Some(&field) && !decl.contains(&format!("{field}[")) {
            continue;
        }
        let Some(at) = find_word(decl, field) else {
            continue;
        };
        let after = decl[at + field.len()..].trim_start();
        if after.starts_with('[') {
            return Some(true);
        }
        let before = decl[..at].trim_end();
        if before.ends_with('*') {
            return Some(false);
        }
        // A scalar or an embedded struct: what is stored in it is in the
        // object.
        return Some(true);
    }
    None
}

/// Where `w` stands in `s` as an identifier token.
fn find_word(s: &str, w: &str) -> Option<usize> {
    fgft_base::lex::ident_tokens(s)
        .into_iter()
        .find(|r| &s[r.clone()] == w)
        .map(|r| r.start)
}

/// What a function does through one parameter, its callees included.
#[derive(Debug, Clone, Default)]
struct Summary {
    /// A store through the parameter (level 0), with its evidence.
    shallow: Option<Evidence>,
    /// A store through a pointer loaded from it.
    deep: Option<Evidence>,
}

#[derive(Debug, Clone)]
struct Evidence {
    file: PathBuf,
    line: usize,
    what: String,
}

struct Auditor<'a> {
    ix: &'a Index,
    table: &'a Table,
    popts: fgft_parse::Options,
    members: IndexMembers<'a>,
    /// By function name: the summary of each parameter (the union over
    /// its definitions), made once.
    memo: HashMap<String, Option<Vec<Summary>>>,
}

/// Runs the audit over `table` against the tree of `opts`.
pub fn run(opts: &Options, table: &Table) -> Result<Report, Error> {
    for what in ["Makefile", "include/linux"] {
        if !opts.tree.join(what).exists() {
            return Err(Error::NotATree {
                path: opts.tree.clone(),
                what,
            });
        }
    }
    let ix = Index::build(&opts.tree, &opts.dirs).map_err(|source| Error::Io {
        path: opts.tree.clone(),
        source,
    })?;
    let popts =
        fgft_parse::Options::with_default_hints().map_err(|e| Error::Parse(e.to_string()))?;
    let mut a = Auditor {
        ix: &ix,
        table,
        popts,
        members: IndexMembers {
            ix: &ix,
            cache: Default::default(),
        },
        memo: HashMap::new(),
    };
    let mut r = Report {
        tree: opts.tree.clone(),
        files: ix.files,
        bytes: ix.bytes,
        unreadable: ix.unreadable.clone(),
        ..Default::default()
    };
    for (name, e) in &table.apis {
        if !opts.entries.is_empty() && !opts.entries.contains(name) {
            continue;
        }
        if e.inline {
            r.inline += 1;
            continue;
        }
        r.wrapped += 1;
        if let Some(why) = &e.audit {
            r.by_hand.push((name.clone(), why.clone()));
            continue;
        }
        match a.summary(name, opts.depth) {
            Some(s) => {
                r.analysed += 1;
                r.findings.extend(compare(name, e, &s));
            }
            None if !a.ix.macros.contains_key(name)
                && !a.ix.asm.contains_key(name)
                && !a.ix.declared.contains(name) =>
            {
                // Not in this kernel at all: no module built against it can
                // call it (an entry kept for another version).
                r.absent.push(name.clone());
            }
            None => r.findings.push(Finding {
                entry: name.clone(),
                table: e.source.clone(),
                message: format!(
                    "no C definition in {} ({}); review its declaration by hand and mark it `audit = \"why\"`",
                    opts.tree.display(),
                    a.undefined_why(name)
                ),
                at: a.undefined_at(name),
            }),
        }
    }
    Ok(r)
}

fn mode(s: &ArgSpec) -> &'static str {
    match s {
        ArgSpec::Val => "val",
        ArgSpec::Kobj => "kobj",
        ArgSpec::Out(_) => "out",
        ArgSpec::In(_) => "in",
        ArgSpec::InOut(_) => "inout",
        ArgSpec::Str(_) => "str",
        ArgSpec::Func => "func",
        _ => "other",
    }
}

/// The findings of one entry, from its parameters' summaries.
fn compare(name: &str, e: &ApiEntry, s: &[Summary]) -> Vec<Finding> {
    let mut out = Vec::new();
    let pure = e.effect == "pure";
    for (i, p) in e.params.iter().enumerate() {
        let Some(sum) = s.get(i) else { continue };
        // Device memory (the checkpoint restores it) and user memory (the
        // kernel function checks it itself) are not the transaction's.
        if p.decl.contains("__iomem") || p.decl.contains("__user") {
            continue;
        }
        let declared = mode(&p.kind);
        let finding = |msg: String, ev: &Evidence| Finding {
            entry: name.to_string(),
            table: e.source.clone(),
            message: msg,
            at: Some((ev.file.clone(), ev.line)),
        };
        let shallow_ok = match &p.kind {
            ArgSpec::Out(_) | ArgSpec::InOut(_) => true,
            ArgSpec::Kobj => !pure,
            ArgSpec::Val | ArgSpec::In(_) | ArgSpec::Str(_) | ArgSpec::Func => false,
            _ => true,
        };
        if let (false, Some(ev)) = (shallow_ok, &sum.shallow) {
            let what = if matches!(p.kind, ArgSpec::Kobj) {
                "a kernel object of an entry whose effect is `pure`".to_string()
            } else {
                format!("`{declared}`")
            };
            out.push(finding(
                format!(
                    "`{}` writes through `{}`, declared {what}: `{}` (declare `out(...)` or `inout(...)`, or the effect that undoes it)",
                    name, p.name, ev.what
                ),
                ev,
            ));
        }
        let deep_ok = matches!(p.kind, ArgSpec::Kobj)
            || e.reach
                .iter()
                .any(|r| r.rights.contains('W') && mentions(&r.addr, &p.name));
        if let (false, Some(ev)) = (deep_ok, &sum.deep) {
            out.push(finding(
                format!(
                    "`{}` writes memory reached through a pointer loaded from `{}` (`{}`), which no `reach` with write rights declares",
                    name, p.name, ev.what
                ),
                ev,
            ));
        }
    }
    out
}

fn mentions(expr: &str, name: &str) -> bool {
    fgft_base::lex::has_token(expr, name)
}

impl Auditor<'_> {
    fn undefined_why(&self, name: &str) -> String {
        if let Some((f, l)) = self.ix.macros.get(name) {
            format!("a macro, {}:{l}", f.display())
        } else if let Some((f, l)) = self.ix.asm.get(name) {
            format!("assembly, {}:{l}", f.display())
        } else {
            "declared, but defined by a macro's expansion".to_string()
        }
    }

    fn undefined_at(&self, name: &str) -> Option<(PathBuf, usize)> {
        self.ix
            .macros
            .get(name)
            .or_else(|| self.ix.asm.get(name))
            .cloned()
    }

    /// The summary of each parameter of `name`, following callees `depth`
    /// levels down; `None` when the tree defines no such function.
    fn summary(&mut self, name: &str, depth: usize) -> Option<Vec<Summary>> {
        if let Some(m) = self.memo.get(name) {
            return m.clone();
        }
        let defs: Vec<Def> = self.ix.kernel_defs(name).into_iter().cloned().collect();
        if defs.is_empty() {
            return None;
        }
        // Cut a cycle: a call back into a function being summarised adds
        // nothing.
        self.memo.insert(name.to_string(), Some(Vec::new()));
        let mut sums: Vec<Summary> = Vec::new();
        for d in &defs {
            let Some(fx) = self.effects_of(d) else {
                continue;
            };
            if sums.len() < fx.params.len() {
                sums.resize(fx.params.len(), Summary::default());
            }
            for (i, p) in fx.params.iter().enumerate() {
                for st in &p.stores {
                    let ev = Evidence {
                        file: d.file.clone(),
                        line: st.line,
                        what: st.text.clone(),
                    };
                    let slot = if st.level == 0 {
                        &mut sums[i].shallow
                    } else {
                        &mut sums[i].deep
                    };
                    slot.get_or_insert(ev);
                }
                for pass in &p.passes {
                    let (sh, dp) = self.callee_effect(name, pass, depth);
                    let ev = |what: String| Evidence {
                        file: d.file.clone(),
                        line: pass.line,
                        what,
                    };
                    if sh {
                        let slot = if pass.level == 0 {
                            &mut sums[i].shallow
                        } else {
                            &mut sums[i].deep
                        };
                        slot.get_or_insert(ev(format!(
                            "{}() writes through its argument {}",
                            pass.callee,
                            pass.arg + 1
                        )));
                    }
                    if dp {
                        sums[i].deep.get_or_insert(ev(format!(
                            "{}() writes through a pointer loaded from its argument {}",
                            pass.callee,
                            pass.arg + 1
                        )));
                    }
                }
            }
        }
        self.memo.insert(name.to_string(), Some(sums.clone()));
        Some(sums)
    }

    /// Whether the callee of `pass` writes through its argument (level 0)
    /// and deeper: from its table entry when it has one, else from its
    /// definition while `depth` lasts.
    fn callee_effect(&mut self, caller: &str, pass: &effects::Pass, depth: usize) -> (bool, bool) {
        if pass.callee == caller {
            return (false, false);
        }
        if let Some(e) = self.table.apis.get(&pass.callee) {
            // A lock taken and released inside changes nothing the caller
            // sees.
            if e.lock.is_some() || e.unlock.is_some() {
                return (false, false);
            }
            if !e.inline && !e.params.is_empty() {
                let Some(p) = e.params.get(pass.arg) else {
                    return (false, false);
                };
                let shallow = matches!(p.kind, ArgSpec::Out(_) | ArgSpec::InOut(_));
                let deep = e
                    .reach
                    .iter()
                    .any(|r| r.rights.contains('W') && mentions(&r.addr, &p.name));
                return (shallow, deep);
            }
        }
        if depth == 0 {
            return (false, false);
        }
        match self.summary(&pass.callee, depth - 1) {
            Some(s) => s
                .get(pass.arg)
                .map(|x| (x.shallow.is_some(), x.deep.is_some()))
                .unwrap_or((false, false)),
            None => (false, false),
        }
    }

    fn effects_of(&self, d: &Def) -> Option<FnEffects> {
        let text = self.ix.text(d).ok()?;
        let pf = fgft_parse::parse_text_with(&d.file, text, &self.popts).ok()?;
        let root = pf.tree.root_node();
        let mut c = root.walk();
        let def = root
            .named_children(&mut c)
            .find(|n| n.kind() == "function_definition")?;
        Some(effects::of(&pf, def, d.line, &self.members))
    }
}

/// The report as text: one line per finding (`file:line: entry: message`,
/// the file in the kernel tree where there is evidence, else the table),
/// then the hand-reviewed entries and a summary.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    for f in &r.findings {
        match &f.at {
            Some((p, l)) => s.push_str(&format!(
                "{}:{l}: error: [api.{}] ({}): {}\n",
                r.tree.join(p).display(),
                f.entry,
                f.table.display(),
                f.message
            )),
            None => s.push_str(&format!(
                "{}: error: [api.{}]: {}\n",
                f.table.display(),
                f.entry,
                f.message
            )),
        }
    }
    for (p, why) in &r.unreadable {
        s.push_str(&format!(
            "{}: warning: skipped, not readable: {why}\n",
            r.tree.join(p).display()
        ));
    }
    s.push_str(&format!(
        "tables audit of {}: {} files ({} MB) read; {} wrapped entries, {} analysed against their definitions, {} reviewed by hand, {} not in this kernel, {} inline helpers (checked in SFI code); {} finding(s)\n",
        r.tree.display(),
        r.files,
        r.bytes >> 20,
        r.wrapped,
        r.analysed,
        r.by_hand.len(),
        r.absent.len(),
        r.inline,
        r.findings.len()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_kinds() {
        let body = "{\n\tchar name[16];\n\tu8 *data;\n\tint count;\n\tstruct list_head list;\n}";
        assert_eq!(member_kind(body, "name"), Some(true));
        assert_eq!(member_kind(body, "data"), Some(false));
        assert_eq!(member_kind(body, "count"), Some(true));
        assert_eq!(member_kind(body, "missing"), None);
    }
}
