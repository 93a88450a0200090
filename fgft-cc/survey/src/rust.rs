//! Rust drivers, read with syn.
//!
//! Entry points come from:
//! - `#[vtable] impl Trait for T { fn m(..) }`: `T::m`, slot `Trait.m`;
//! - module macros (`module_phy_driver! { drivers: [A, B], .. }`,
//!   `module! { type: M, .. }`, `module_*_driver!`): each driver or module
//!   type named there, slot `macro.key`.
//!
//! Rust entry points have kind `rust`; a vtable method named like a PM
//! callback (`suspend`, `resume`, ...) counts as one.

use crate::model::{FailKind, Failure, FileSummary, FnSum, Lang, RootSum};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use std::path::Path;
use syn::visit::Visit;

/// Slot kind of Rust entry points.
pub const KIND: &str = "rust";

/// Summarizes the Rust file at `path` (`rel` is its name in the report).
pub fn summarize_file(path: &Path, rel: &Path) -> FileSummary {
    let mut out = FileSummary::empty(rel.to_path_buf(), Lang::Rust);
    match std::fs::read(path) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => {
                let mut s = summarize_text(&t, out);
                if let Some(f) = s.failure.as_mut() {
                    f.message = format!("{}: {}", path.display(), f.message);
                }
                s
            }
            Err(e) => {
                out.bytes = e.as_bytes().len();
                let off = e.utf8_error().valid_up_to();
                let line = e.as_bytes()[..off].iter().filter(|&&c| c == b'\n').count() + 1;
                out.failure = Some(Failure {
                    kind: FailKind::NotSource,
                    offset: off,
                    line,
                    message: format!("{}: not UTF-8 text at byte {off}", path.display()),
                });
                out
            }
        },
        Err(e) => {
            out.failure = Some(Failure {
                kind: FailKind::Unreadable,
                offset: 0,
                line: 1,
                message: format!("{}: cannot read: {e}", path.display()),
            });
            out
        }
    }
}

/// Summarizes Rust source text.  A text that nests too deep for syn's
/// recursive parse is refused at the bracket or token that goes too deep
/// ([`fgft_base::rust_depth`]); the parse and the visit run on a stack
/// sized for any text that passes.
pub fn summarize_text(text: &str, mut out: FileSummary) -> FileSummary {
    out.bytes = text.len();
    if let Err(e) = fgft_base::rust_depth::check(text) {
        out.failure = Some(Failure {
            kind: FailKind::TooDeep,
            offset: e.offset,
            line: e.line,
            message: e.message,
        });
        return out;
    }
    let parsed = fgft_base::rust_depth::on_deep_stack(|| {
        // The tree is visited and dropped on this stack too.
        let file = syn::parse_file(text).map_err(|e| {
            let lc = e.span().start();
            Failure {
                kind: FailKind::Syntax,
                offset: offset_of(text, lc.line, lc.column),
                line: lc.line.max(1),
                message: format!("syn cannot parse it: {e}"),
            }
        })?;
        let mut v = Visitor::default();
        v.visit_file(&file);
        Ok::<_, Failure>((v.roots, v.fns))
    });
    let (mut roots, mut fns) = match parsed {
        Ok(r) => r,
        Err(f) => {
            out.failure = Some(f);
            return out;
        }
    };
    roots.sort();
    roots.dedup();
    fns.sort_by(|a, b| (a.line, &a.name).cmp(&(b.line, &b.name)));
    out.roots = roots;
    out.functions = fns;
    out
}

fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (k, l) in text.split_inclusive('\n').enumerate() {
        if k + 1 == line {
            return off + l.char_indices().nth(col).map_or(l.len(), |(i, _)| i);
        }
        off += l.len();
    }
    text.len()
}

#[derive(Default)]
struct Visitor {
    roots: Vec<RootSum>,
    fns: Vec<FnSum>,
}

/// Token text without spaces (`phy :: Driver` -> `phy::Driver`).
fn compact(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

fn has_vtable(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "vtable")
    })
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if let (true, Some((_, trait_path, _))) = (has_vtable(&i.attrs), &i.trait_) {
            let ty = compact(&i.self_ty);
            let tr = compact(trait_path);
            for item in &i.items {
                if let syn::ImplItem::Fn(f) = item {
                    let line = f.sig.ident.span().start().line;
                    let name = format!("{ty}::{}", f.sig.ident);
                    self.roots.push(RootSum {
                        function: name.clone(),
                        struct_name: tr.clone(),
                        field: f.sig.ident.to_string(),
                        kind: KIND.into(),
                        line,
                    });
                    self.fns.push(FnSum {
                        name,
                        line,
                        broken: false,
                        is_macro: false,
                        calls: Vec::new(),
                        field_uses: Vec::new(),
                    });
                }
            }
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let Some(last) = m.path.segments.last() else {
            return;
        };
        let mac = last.ident.to_string();
        if mac.starts_with("module") {
            let line = last.ident.span().start().line;
            for (key, ty) in module_types(m.tokens.clone()) {
                self.roots.push(RootSum {
                    function: ty,
                    struct_name: mac.clone(),
                    field: key,
                    kind: KIND.into(),
                    line,
                });
            }
        }
    }
}

/// `key: value` pairs of a module macro whose values name types: `type: T`
/// and `drivers: [A, B]` (a `driver: T` form too).
fn module_types(tokens: TokenStream) -> Vec<(String, String)> {
    let toks: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // key
        let key = match &toks[i] {
            TokenTree::Ident(id) => id.to_string(),
            _ => {
                i += 1;
                continue;
            }
        };
        let is_colon = matches!(toks.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':')
            && !matches!(toks.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ':');
        if !is_colon {
            i += 1;
            continue;
        }
        // value: up to the next top-level comma
        let start = i + 2;
        let mut end = start;
        while end < toks.len() && !matches!(&toks[end], TokenTree::Punct(p) if p.as_char() == ',') {
            end += 1;
        }
        let value = &toks[start..end];
        match key.as_str() {
            "type" | "driver" => {
                let s: String = value.iter().map(|t| t.to_string()).collect();
                if !s.is_empty() {
                    out.push((key.clone(), s));
                }
            }
            "drivers" => {
                if let Some(TokenTree::Group(g)) = value.first() {
                    if g.delimiter() == Delimiter::Bracket {
                        let mut cur = String::new();
                        for t in g.stream() {
                            match &t {
                                TokenTree::Punct(p) if p.as_char() == ',' => {
                                    if !cur.is_empty() {
                                        out.push((key.clone(), std::mem::take(&mut cur)));
                                    }
                                }
                                t => cur.push_str(&t.to_string()),
                            }
                        }
                        if !cur.is_empty() {
                            out.push((key.clone(), cur));
                        }
                    }
                }
            }
            _ => {}
        }
        i = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(src: &str) -> FileSummary {
        summarize_text(src, FileSummary::empty("x.rs".into(), Lang::Rust))
    }

    #[test]
    fn vtable_impls_and_module_macros() {
        let s = sum(
            "use kernel::prelude::*;\n\
             kernel::module_phy_driver! {\n    drivers: [PhyA, PhyB],\n    device_table: [DeviceId::new_with_driver::<PhyA>()],\n    name: \"x\",\n}\n\
             struct PhyA;\n#[vtable]\nimpl Driver for PhyA {\n    const NAME: &'static CStr = c_str!(\"a\");\n\
             fn read_status(dev: &mut phy::Device) -> Result<u16> { Ok(0) }\n\
             fn suspend(dev: &mut phy::Device) -> Result { Ok(()) }\n}\n\
             impl Drop for PhyA { fn drop(&mut self) {} }\n\
             mod inner { #[kernel::macros::vtable] impl phy::Driver for super::PhyB { fn probe(d: &mut D) -> Result { Ok(()) } } }\n\
             module! { type: MyMod, name: \"m\", }\n",
        );
        assert!(s.failure.is_none());
        let r: Vec<String> = s
            .roots
            .iter()
            .map(|r| format!("{} {}.{} {}", r.function, r.struct_name, r.field, r.line))
            .collect();
        assert_eq!(
            r,
            [
                "MyMod module.type 16",
                "PhyA module_phy_driver.drivers 2",
                "PhyA::read_status Driver.read_status 11",
                "PhyA::suspend Driver.suspend 12",
                "PhyB module_phy_driver.drivers 2",
                "super::PhyB::probe phy::Driver.probe 15",
            ]
        );
        assert_eq!(s.functions.len(), 3);
    }

    #[test]
    fn syntax_errors_are_located() {
        let s = sum("fn ok() {}\nfn broken( {\n");
        let f = s.failure.unwrap();
        assert_eq!(f.kind, FailKind::Syntax);
        assert!(f.line >= 2, "{f:?}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let src = format!(
            "fn ok() {{}}\nfn f() {}{}\n",
            "{".repeat(5000),
            "}".repeat(5000)
        );
        let f = sum(&src).failure.unwrap();
        assert_eq!(f.kind, FailKind::TooDeep);
        assert_eq!(f.line, 2);
        assert_eq!(&src[f.offset..f.offset + 1], "{");
        // Just under the limits: parsed, on the deep stack.
        let n = fgft_base::rust_depth::MAX_BRACKETS - 2;
        let src = format!("fn f() {}{}\n", "{".repeat(n), "}".repeat(n));
        assert!(sum(&src).failure.is_none());
        let src = format!("type T = {}u8{};\n", "A<".repeat(500), ">".repeat(500));
        assert!(sum(&src).failure.is_none());
    }
}
