//! Which fields of `self` a method can change, which methods of `self` it
//! calls, and whether it uses `self` as a whole.
//!
//! A field counts as changed when it is the root of an assignment target
//! (`self.f = ..`, `self.f.g += ..`, `self.f[i] = ..`), borrowed mutably
//! (`&mut self.f`), the receiver of a method call (`self.f.push(..)`: the
//! method may take `&mut self`), or named inside a macro call (macro
//! arguments are token soup; counted conservatively). A plain read
//! (`let x = self.f;`) does not need a snapshot.

use proc_macro2::{Span, TokenStream, TokenTree};
use std::collections::BTreeMap;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Block, Expr, ExprPath, Member};

/// What one method body does with `self`.
#[derive(Debug, Default, Clone)]
pub struct Usage {
    /// Fields that can change, with the span of their first such use.
    pub changed: BTreeMap<String, Span>,
    /// Fields only read.
    pub read: BTreeMap<String, Span>,
    /// `self.m(..)` and `Self::m(self, ..)` calls.
    pub calls: Vec<(String, Span)>,
    /// First use of `self` as a whole value (`helper(self)`, `&mut *self`).
    pub whole: Option<Span>,
}

/// The name fgft uses for a field (`regs`, or `0` for a tuple field).
pub fn member_name(m: &Member) -> String {
    match m {
        Member::Named(i) => i.to_string(),
        Member::Unnamed(i) => i.index.to_string(),
    }
}

fn is_self_path(e: &Expr) -> bool {
    matches!(e, Expr::Path(ExprPath { qself: None, path, .. }) if path.is_ident("self"))
}

/// The field `f` when `e` is `self.f`.
fn self_field(e: &Expr) -> Option<(String, Span)> {
    match e {
        Expr::Field(f) if is_self_path(&f.base) => Some((member_name(&f.member), f.member.span())),
        _ => None,
    }
}

/// The root field of a place expression: `self.f.g[i]`, `*self.f` -> `f`.
fn root_field(mut e: &Expr) -> Option<(String, Span)> {
    loop {
        if let Some(f) = self_field(e) {
            return Some(f);
        }
        e = match e {
            Expr::Field(f) => &f.base,
            Expr::Index(i) => &i.expr,
            Expr::Paren(p) => &p.expr,
            Expr::Unary(u) => &u.expr,
            Expr::MethodCall(m) => &m.receiver,
            _ => return None,
        };
    }
}

impl Usage {
    pub fn of_block(b: &Block) -> Usage {
        let mut u = Usage::default();
        u.visit_block(b);
        u
    }

    fn change(&mut self, (name, span): (String, Span)) {
        self.read.remove(&name);
        self.changed.entry(name).or_insert(span);
    }

    fn read_field(&mut self, (name, span): (String, Span)) {
        if !self.changed.contains_key(&name) {
            self.read.entry(name).or_insert(span);
        }
    }

    fn place(&mut self, e: &Expr) {
        if let Some(f) = root_field(e) {
            self.change(f);
        }
    }

    /// Macro arguments: `self . name` is a changed field, `self . name (..)`
    /// a call, any other `self` a whole use.
    fn scan_tokens(&mut self, ts: TokenStream) {
        let toks: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                TokenTree::Group(g) => self.scan_tokens(g.stream()),
                TokenTree::Ident(id) if id == "self" => {
                    let dot =
                        matches!(toks.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.');
                    match (dot, toks.get(i + 2)) {
                        (true, Some(TokenTree::Ident(name))) => {
                            let call = matches!(toks.get(i + 3),
                                Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
                            if call {
                                self.calls.push((name.to_string(), name.span()));
                            } else {
                                self.change((name.to_string(), name.span()));
                            }
                            i += 2;
                        }
                        (true, Some(TokenTree::Literal(l))) => {
                            let s = l.to_string();
                            if s.chars().all(|c| c.is_ascii_digit()) {
                                self.change((s, l.span()));
                            }
                            i += 2;
                        }
                        _ => {
                            self.whole.get_or_insert(id.span());
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Usage {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => {
                self.place(&a.left);
                self.visit_expr(&a.left);
                self.visit_expr(&a.right);
            }
            Expr::Binary(b) if is_compound_assign(&b.op) => {
                self.place(&b.left);
                self.visit_expr(&b.left);
                self.visit_expr(&b.right);
            }
            Expr::Reference(r) if r.mutability.is_some() => {
                self.place(&r.expr);
                self.visit_expr(&r.expr);
            }
            Expr::MethodCall(m) => {
                if is_self_path(&m.receiver) {
                    self.calls.push((m.method.to_string(), m.method.span()));
                } else {
                    self.place(&m.receiver);
                    self.visit_expr(&m.receiver);
                }
                for a in &m.args {
                    self.visit_expr(a);
                }
            }
            Expr::Call(c) => {
                // `Self::m(self, ..)`
                if let Expr::Path(p) = &*c.func {
                    let segs: Vec<String> = p
                        .path
                        .segments
                        .iter()
                        .map(|s| s.ident.to_string())
                        .collect();
                    if segs.len() == 2
                        && segs[0] == "Self"
                        && c.args.first().is_some_and(is_self_path)
                    {
                        self.calls
                            .push((segs[1].clone(), p.path.segments[1].ident.span()));
                        for a in c.args.iter().skip(1) {
                            self.visit_expr(a);
                        }
                        return;
                    }
                }
                visit::visit_expr_call(self, c);
            }
            Expr::Field(f) => match self_field(e) {
                Some(field) => self.read_field(field),
                None => self.visit_expr(&f.base),
            },
            Expr::Path(p) if p.qself.is_none() && p.path.is_ident("self") => {
                self.whole.get_or_insert(p.span());
            }
            Expr::Macro(m) => self.scan_tokens(m.mac.tokens.clone()),
            _ => visit::visit_expr(self, e),
        }
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.scan_tokens(m.mac.tokens.clone());
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {
        // Nested items cannot see `self`.
    }
}

fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(src: &str) -> Usage {
        let b: Block = syn::parse_str(src).unwrap();
        Usage::of_block(&b)
    }

    fn keys(m: &BTreeMap<String, Span>) -> Vec<&str> {
        m.keys().map(String::as_str).collect()
    }

    #[test]
    fn classifies_field_uses() {
        let u = usage(
            "{ let x = self.a + self.b; self.c = x; self.d.e += 1; self.f[2] = 0;
               let r = &mut self.g; self.h.push(1); *self.i = 3; let _ = &self.j;
               self.k.l.m = 4; self.n.len(); }",
        );
        assert_eq!(keys(&u.changed), ["c", "d", "f", "g", "h", "i", "k", "n"]);
        assert_eq!(keys(&u.read), ["a", "b", "j"]);
        assert!(u.calls.is_empty() && u.whole.is_none());
    }

    #[test]
    fn finds_calls_and_whole_uses() {
        let u = usage("{ self.helper(1); Self::other(self, 2); let y = self.0; }");
        let calls: Vec<&str> = u.calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(calls, ["helper", "other"]);
        assert_eq!(keys(&u.read), ["0"]);
        assert!(u.whole.is_none());
        assert!(usage("{ helper(self); }").whole.is_some());
        assert!(usage("{ let me = &mut *self; }").whole.is_some());
    }

    #[test]
    fn macros_closures_and_nested_items() {
        let u = usage(
            "{ println!(\"{}\", self.a); assert_eq!(self.b.get(), 1, \"{}\", self.c());
               let f = || self.d = 1; fn inner() { let s = 1; } vec![self.e; 3]; }",
        );
        assert_eq!(keys(&u.changed), ["a", "b", "d", "e"]);
        let calls: Vec<&str> = u.calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(calls, ["c"]);
        assert!(usage("{ log!(self); }").whole.is_some());
    }
}
