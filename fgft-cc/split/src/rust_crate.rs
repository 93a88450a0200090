//! `fgft-cc split CRATE_DIR --isolate NAME`: a Rust driver crate.
//!
//! Rust drivers are isolated by fgft's attributes (annotations/macros), so
//! split does not rewrite them: it copies the crate to OUT and adds
//! `#[fgft::isolate]` above each chosen method, and `#[fgft::driver]` above
//! its impl block when the method calls other methods of `self` (the
//! attribute follows those calls only through the block's attribute).
//! Only those lines are added, at the method's own indentation, so the
//! result stays rustfmt-clean; a method that already has the attribute is
//! left as it is.  Methods are chosen by name or `Type::name`, globs
//! allowed; only `&mut self` methods (the attribute's transactions
//! snapshot and restore `self`) and kernel-style methods whose first
//! parameter is `dev: &mut T` (checkpointed through `fgft::DeviceOf<T>`)
//! are.
//!
//! Invariant: every other byte of the crate is copied unchanged; `target/`
//! is not copied.

use crate::{Error, Located};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// Whether `dir` is a Rust crate (has a Cargo.toml and a src/ directory).
pub fn is_crate(dir: &Path) -> bool {
    dir.join("Cargo.toml").is_file() && dir.join("src").is_dir()
}

/// The crate with the attributes added, by path under OUT; a summary line.
pub struct CrateSplit {
    pub out: BTreeMap<PathBuf, Vec<u8>>,
    pub summary: String,
    /// One line per method given the attribute (`src/lib.rs:336 Edu::liveness`).
    pub isolated: Vec<String>,
}

/// A method of an impl block the patterns chose.
struct Chosen {
    /// 1-based line of the `fn` keyword's line.
    fn_line: usize,
    /// 1-based line of the impl block's first line (its attributes' first
    /// line when it has none of ours).
    impl_line: usize,
    impl_has_driver: bool,
    has_isolate: bool,
    calls_self_methods: bool,
    name: String,
}

fn attr_is(a: &syn::Attribute, last: &str) -> bool {
    let p = a.path();
    p.segments.last().is_some_and(|s| s.ident == last)
        && (p.segments.len() == 1 || p.segments.iter().any(|s| s.ident == "fgft"))
}

/// Names of the methods of the block, and whether `body` calls one on self.
struct SelfCalls<'a> {
    methods: &'a [String],
    found: bool,
}

impl<'ast> Visit<'ast> for SelfCalls<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let syn::Expr::Path(p) = &*m.receiver {
            if p.path.is_ident("self") && self.methods.iter().any(|n| m.method == n) {
                self.found = true;
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }
}

fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// A glob over a method's name or `Type::name` (globset's syntax; `:` is
/// not special). A pattern that is not a glob matches itself only.
fn glob(pat: &str, name: &str) -> bool {
    globset::Glob::new(pat)
        .map(|g| g.compile_matcher().is_match(name))
        .unwrap_or(pat == name)
}

/// The chosen methods of one file.
fn choose(file: &syn::File, patterns: &[String]) -> Vec<Chosen> {
    struct V<'p> {
        patterns: &'p [String],
        out: Vec<Chosen>,
    }
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            let ty = type_name(&i.self_ty);
            let methods: Vec<String> = i
                .items
                .iter()
                .filter_map(|it| match it {
                    syn::ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                    _ => None,
                })
                .collect();
            let impl_has_driver = i.attrs.iter().any(|a| attr_is(a, "driver"));
            let impl_line = i
                .attrs
                .first()
                .map(|a| a.span().start().line)
                .unwrap_or_else(|| i.impl_token.span.start().line);
            for it in &i.items {
                let syn::ImplItem::Fn(f) = it else { continue };
                // The attribute makes a `&mut self` method a transaction,
                // or a kernel-style one whose state is its first parameter.
                if !transactional(&f.sig) {
                    continue;
                }
                let name = f.sig.ident.to_string();
                let qualified = format!("{ty}::{name}");
                if !self
                    .patterns
                    .iter()
                    .any(|p| glob(p, &name) || glob(p, &qualified))
                {
                    continue;
                }
                let mut calls = SelfCalls {
                    methods: &methods,
                    found: false,
                };
                calls.visit_block(&f.block);
                // The signature's first line (`const`, `async`, `unsafe`, `fn`).
                let fn_line = f.sig.span().start().line;
                let vis_line = match &f.vis {
                    syn::Visibility::Inherited => fn_line,
                    v => v.span().start().line,
                };
                self.out.push(Chosen {
                    fn_line: vis_line.min(fn_line),
                    impl_line,
                    impl_has_driver,
                    has_isolate: f.attrs.iter().any(|a| attr_is(a, "isolate")),
                    calls_self_methods: calls.found,
                    name: qualified,
                });
            }
            syn::visit::visit_item_impl(self, i);
        }
    }
    let mut v = V {
        patterns,
        out: Vec::new(),
    };
    v.visit_file(file);
    v.out
}

/// `fn m(&mut self, ..)`, or kernel style `fn m(dev: &mut T, ..)` (no
/// receiver; the attribute checkpoints `dev` through `fgft::DeviceOf<T>`).
fn transactional(sig: &syn::Signature) -> bool {
    match sig.inputs.first() {
        Some(syn::FnArg::Receiver(r)) => r.reference.is_some() && r.mutability.is_some(),
        Some(syn::FnArg::Typed(pt)) => {
            matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none())
                && matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_some())
        }
        None => false,
    }
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Splits the crate at `dir` for `patterns`.
pub fn split(dir: &Path, patterns: &[String]) -> Result<CrateSplit, Error> {
    if patterns.is_empty() {
        return Err(Error::Msg(format!(
            "{}: a Rust crate: name the methods to isolate with --isolate (a name, `Type::name`, or a glob)",
            dir.display()
        )));
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files)?;
    let mut out = BTreeMap::new();
    let mut isolated = Vec::new();
    let mut diags = Vec::new();
    let mut matched = 0usize;
    for rel in files {
        let path = dir.join(&rel);
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if rel.extension().is_none_or(|e| e != "rs") {
            out.insert(rel, bytes);
            continue;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let chosen = match read_chosen(&text, patterns) {
            Ok(c) => c,
            Err((at, message)) => {
                diags.push(Located {
                    path: dir.join(&rel),
                    text: text.clone(),
                    range: at.min(text.len())..(at + 1).min(text.len()),
                    message,
                    label: "here".into(),
                    notes: vec![],
                    warning: false,
                });
                continue;
            }
        };
        matched += chosen.len();
        // Lines to insert before (1-based) line numbers.
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut insert: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for c in &chosen {
            if c.has_isolate {
                continue;
            }
            let ind = indent_of(lines.get(c.fn_line - 1).copied().unwrap_or(""));
            insert
                .entry(c.fn_line)
                .or_default()
                .push(format!("{ind}#[fgft::isolate]\n"));
            isolated.push(format!("{}:{} {}", rel.display(), c.fn_line, c.name));
            if c.calls_self_methods && !c.impl_has_driver {
                let ind = indent_of(lines.get(c.impl_line - 1).copied().unwrap_or(""));
                let v = insert.entry(c.impl_line).or_default();
                let d = format!("{ind}#[fgft::driver]\n");
                if !v.contains(&d) {
                    v.insert(0, d);
                }
            }
        }
        let mut s = String::with_capacity(text.len() + 64);
        for (i, l) in lines.iter().enumerate() {
            for add in insert.get(&(i + 1)).into_iter().flatten() {
                s.push_str(add);
            }
            s.push_str(l);
        }
        out.insert(rel, s.into_bytes());
    }
    if !diags.is_empty() {
        return Err(Error::Located(diags));
    }
    if matched == 0 {
        return Err(Error::Msg(format!(
            "{}: no method of an impl block taking `&mut self` (or, kernel style, `dev: &mut T` first) matches {} (#[fgft::isolate] makes such a method a transaction)",
            dir.display(),
            patterns
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let cargo = String::from_utf8_lossy(out.get(Path::new("Cargo.toml")).map_or(&[][..], |v| v));
    if !cargo.contains("fgft-rt") && !cargo.contains("fgft =") {
        return Err(Error::Msg(format!(
            "{}/Cargo.toml: the crate does not depend on the fgft runtime crate (fgft-rt, library fgft), which the attributes come from: add it to [dependencies]",
            dir.display()
        )));
    }
    let summary = format!(
        "fgft-cc split {}: {} method(s) isolated by attribute",
        dir.display(),
        isolated.len()
    );
    Ok(CrateSplit {
        out,
        summary,
        isolated,
    })
}

/// The chosen methods of one file's text; or where and why it cannot be
/// read: nesting too deep for syn's recursive parse (checked first,
/// [`fgft_base::rust_depth`]) or not valid Rust.  The parse, the visit and
/// the tree's drop run on a stack sized for any text that passes.
fn read_chosen(text: &str, patterns: &[String]) -> Result<Vec<Chosen>, (usize, String)> {
    fgft_base::rust_depth::check(text).map_err(|e| (e.offset, e.message))?;
    fgft_base::rust_depth::on_deep_stack(|| {
        let file = syn::parse_file(text).map_err(|e| {
            let start = e.span().start();
            let at = line_offset(text, start.line) + start.column;
            (at, format!("not valid Rust: {e}"))
        })?;
        Ok(choose(&file, patterns))
    })
}

fn line_offset(text: &str, line: usize) -> usize {
    text.split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum()
}

/// Every file under `dir` but `target/` and hidden ones, relative, sorted.
fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut entries: Vec<std::fs::DirEntry> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || (dir == root && name == "target") {
            continue;
        }
        let p = e.path();
        let ft = e.file_type().map_err(|source| Error::Io {
            path: p.clone(),
            source,
        })?;
        if ft.is_dir() {
            walk(root, &p, out)?;
        } else if ft.is_file() {
            out.push(p.strip_prefix(root).unwrap_or(&p).to_path_buf());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs() {
        assert!(glob("factorial*", "factorial_irq"));
        assert!(glob("Edu::*", "Edu::liveness"));
        assert!(glob("f?ctorial", "factorial"));
        assert!(!glob("factorial", "factorial_irq"));
        assert!(!glob("Edu::x*", "Edu::liveness"));
    }
}
