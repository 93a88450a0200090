//! `#[fgft::isolate(...)]`: options, signature checks and the transaction
//! wrapper.

use crate::analysis::Usage;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::{BTreeMap, BTreeSet};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ImplItemFn, LitStr, ReturnType, Type};

/// Options of one `#[fgft::isolate(...)]`.
#[derive(Default)]
pub struct Options {
    /// `err = EIO` (a name of `fgft::errno`) or `err = path::TO_ERRNO`.
    pub err: Option<Expr>,
    /// `skip(field, ...)`: fields left out of the snapshot.
    pub skip: BTreeMap<String, Span>,
    /// `snapshot(field = "path::save_fn")`: `fn(&T) -> T` copies the field.
    pub snapshot: BTreeMap<String, (Span, syn::Path)>,
    /// `fields(a, b)`: fields snapshotted in addition to those found; also
    /// accepts calls and whole-`self` uses the analysis cannot follow.
    pub fields: BTreeMap<String, Span>,
    /// Span of the attribute (for errors about the whole entry point).
    pub span: Option<Span>,
}

fn field_key(m: &syn::meta::ParseNestedMeta) -> syn::Result<(String, Span)> {
    if let Some(id) = m.path.get_ident() {
        return Ok((id.to_string(), id.span()));
    }
    Err(m.error("expected a field name"))
}

impl Options {
    pub fn parse(attr: TokenStream, span: Span) -> syn::Result<Options> {
        let mut o = Options {
            span: Some(span),
            ..Options::default()
        };
        if attr.is_empty() {
            return Ok(o);
        }
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("err") {
                o.err = Some(meta.value()?.parse()?);
                Ok(())
            } else if meta.path.is_ident("skip") {
                meta.parse_nested_meta(|f| {
                    let (k, s) = field_key(&f)?;
                    o.skip.insert(k, s);
                    Ok(())
                })
            } else if meta.path.is_ident("fields") {
                meta.parse_nested_meta(|f| {
                    let (k, s) = field_key(&f)?;
                    o.fields.insert(k, s);
                    Ok(())
                })
            } else if meta.path.is_ident("snapshot") {
                meta.parse_nested_meta(|f| {
                    let (k, s) = field_key(&f)?;
                    let lit: LitStr = f.value()?.parse()?;
                    let path: syn::Path = lit.parse()?;
                    o.snapshot.insert(k, (s, path));
                    Ok(())
                })
            } else {
                Err(meta.error(
                    "unknown #[fgft::isolate] option; expected `err = NAME`, `skip(field, ..)`, \
                     `snapshot(field = \"path::save_fn\")` or `fields(field, ..)`",
                ))
            }
        });
        syn::parse::Parser::parse2(parser, attr)?;
        for k in o.skip.keys() {
            if let Some((s, _)) = o.snapshot.get(k) {
                return Err(syn::Error::new(
                    *s,
                    format!("field `{k}` is both skipped and snapshotted"),
                ));
            }
        }
        Ok(o)
    }

    fn err_expr(&self) -> TokenStream {
        match &self.err {
            None => quote!(::fgft::errno::EIO),
            Some(Expr::Path(p)) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident();
                quote_spanned!(p.span()=> ::fgft::errno::#id)
            }
            Some(e) => quote!(#e),
        }
    }
}

/// Where an isolated entry point keeps the state a transaction protects.
pub enum Subject {
    /// `&mut self`: the fields of `self` are snapshotted, the device is
    /// checkpointed through `fgft::Device`.
    SelfRef,
    /// Kernel style, `fn read_status(dev: &mut phy::Device)`: no receiver,
    /// the state is behind the first parameter and the device checkpoint is
    /// `<Self as fgft::DeviceOf<phy::Device>>`.
    Param { ident: Ident, ty: Box<Type> },
}

/// The state parameter of a kernel-style method: `dev` and `phy::Device`
/// in `dev: &mut phy::Device` (also `mut dev: &mut ..`). `Err` carries the
/// reason a first parameter that is a reference cannot be one.
pub fn state_param(f: &syn::Signature) -> Option<syn::Result<(Ident, Box<Type>)>> {
    let Some(FnArg::Typed(pt)) = f.inputs.first() else {
        return None;
    };
    let Type::Reference(r) = &*pt.ty else {
        return None;
    };
    let name = &f.ident;
    let ident = match &*pt.pat {
        syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => pi.ident.clone(),
        other => {
            return Some(Err(syn::Error::new(
                other.span(),
                format!("unsupported signature: `{name}` takes its state through a pattern; name the parameter (`dev: &mut T`)"),
            )))
        }
    };
    if r.mutability.is_none() {
        return Some(Err(syn::Error::new(
            pt.span(),
            format!(
                "unsupported signature: `{name}` takes `{ident}` by shared reference: the state it \
                 would restore cannot be written through it; a kernel-style entry point takes \
                 `{ident}: &mut T` first"
            ),
        )));
    }
    let mut found = None;
    find_impl_trait(&r.elem, &mut found);
    if let Some(sp) = found {
        return Some(Err(syn::Error::new(
            sp,
            format!("unsupported signature: the type of `{ident}` contains `impl Trait`; name it (a generic parameter works)"),
        )));
    }
    Some(Ok((ident, r.elem.clone())))
}

/// Rejects what an entry point cannot be, and says where its state is.
pub fn check_signature(f: &ImplItemFn) -> syn::Result<Subject> {
    let sig = &f.sig;
    let name = &sig.ident;
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(
            a.span(),
            format!("unsupported signature: `{name}` is async; a transaction cannot span an await point"),
        ));
    }
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new(
            c.span(),
            format!(
                "unsupported signature: `{name}` is a const fn; it cannot run as a transaction"
            ),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new(
            v.span(),
            "unsupported signature: variadic entry point",
        ));
    }
    let subject = match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => {
            let mutable_ref = match &*r.ty {
                Type::Reference(t) => t.mutability.is_some() && is_self_type(&t.elem),
                _ => false,
            };
            if !mutable_ref {
                let how = if r.reference.is_some() {
                    "`&self`: the state it would restore cannot be written through a shared reference"
                } else if r.colon_token.is_some() {
                    "a typed receiver; only `&mut self` is supported"
                } else {
                    "`self` by value: after an abort there is nothing left to restore"
                };
                return Err(syn::Error::new(
                    r.span(),
                    format!("unsupported signature: `{name}` takes {how}; an isolated entry point takes `&mut self`"),
                ));
            }
            Subject::SelfRef
        }
        _ => match state_param(sig) {
            Some(Ok((ident, ty))) => Subject::Param { ident, ty },
            Some(Err(e)) => return Err(e),
            None => {
                return Err(not_a_method(
                    name.span(),
                    &format!("`{name}` takes neither `self` nor a `&mut` state parameter first"),
                ))
            }
        },
    };
    match &sig.output {
        ReturnType::Default => Err(syn::Error::new(
            name.span(),
            format!(
                "unsupported signature: `{name}` returns nothing, so it cannot report an aborted \
                 transaction; return `Result<T, E>` with `E: fgft::FromAbort`, or an errno integer"
            ),
        )),
        ReturnType::Type(_, t) => check_return_type(name, t),
    }
    .map(|()| subject)
}

fn is_self_type(t: &Type) -> bool {
    matches!(t, Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
}

fn check_return_type(name: &Ident, t: &Type) -> syn::Result<()> {
    let bad = |span: Span, what: &str| {
        Err(syn::Error::new(
            span,
            format!("unsupported signature: `{name}` returns {what}; an isolated entry point returns `Result<T, E>` with `E: fgft::FromAbort`, or an errno integer"),
        ))
    };
    match t {
        Type::Tuple(tt) if tt.elems.is_empty() => {
            bad(t.span(), "`()`, which cannot carry an error")
        }
        Type::Never(_) => bad(t.span(), "`!`"),
        Type::ImplTrait(_) => bad(t.span(), "`impl Trait`"),
        _ => {
            let mut found = None;
            find_impl_trait(t, &mut found);
            match found {
                Some(s) => bad(s, "a type containing `impl Trait`"),
                None => Ok(()),
            }
        }
    }
}

fn find_impl_trait(t: &Type, found: &mut Option<Span>) {
    struct V<'a>(&'a mut Option<Span>);
    impl<'ast> syn::visit::Visit<'ast> for V<'_> {
        fn visit_type_impl_trait(&mut self, i: &'ast syn::TypeImplTrait) {
            self.0.get_or_insert(i.span());
        }
    }
    syn::visit::Visit::visit_type(&mut V(found), t);
}

pub fn not_a_method(span: Span, what: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "#[fgft::isolate] applies to a method of an impl block (a fn taking `&mut self`, or kernel style `dev: &mut T` first): {what}"
        ),
    )
}

/// Where the isolated method sits.
pub struct Context<'a> {
    /// `Edu` in `impl EduOps for Edu` (for the entry point's name).
    pub self_name: Option<String>,
    /// Direct usage of every method of the same impl block.
    pub impl_methods: Option<&'a BTreeMap<String, (Usage, bool)>>,
}

/// Fields to snapshot: the method's own changes and those of the
/// `&mut self` methods of the same impl it calls, transitively.
fn changed_fields(
    f: &ImplItemFn,
    own: &Usage,
    ctx: &Context,
    opts: &Options,
) -> syn::Result<BTreeMap<String, Span>> {
    let mut changed = own.changed.clone();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut work: Vec<(String, Span)> = own.calls.clone();
    let mut whole = own.whole;
    let explicit = !opts.fields.is_empty();
    seen.insert(f.sig.ident.to_string());
    while let Some((m, span)) = work.pop() {
        if !seen.insert(m.clone()) {
            continue;
        }
        match ctx.impl_methods.and_then(|ms| ms.get(&m)) {
            Some((u, mutable)) => {
                if *mutable {
                    for (k, s) in &u.changed {
                        changed.entry(k.clone()).or_insert(*s);
                    }
                    work.extend(u.calls.iter().cloned());
                    whole = whole.or(u.whole);
                }
            }
            None if explicit => {}
            None => {
                let how = if ctx.impl_methods.is_some() {
                    "is not a method of this impl block"
                } else {
                    "cannot be followed without #[fgft::driver] on the impl block"
                };
                return Err(syn::Error::new(
                    span,
                    format!(
                        "`self.{m}()` {how}, so fgft cannot see which fields it changes; \
                         move it into this impl block{}, or list the fields it changes with \
                         #[fgft::isolate(fields(..))]",
                        if ctx.impl_methods.is_none() {
                            " and put #[fgft::driver] on it"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
    }
    if let (Some(span), false) = (whole, explicit) {
        return Err(syn::Error::new(
            span,
            "this uses `self` as a whole, so fgft cannot see which fields change; use its fields, \
             or list them with #[fgft::isolate(fields(..))]",
        ));
    }
    for (k, s) in &opts.fields {
        changed.entry(k.clone()).or_insert(*s);
    }
    for (k, s) in &opts.skip {
        if !changed.contains_key(k) {
            return Err(syn::Error::new(
                *s,
                format!("skip({k}): `{k}` is not a field this method can change"),
            ));
        }
    }
    for (k, (s, _)) in &opts.snapshot {
        if !changed.contains_key(k) {
            return Err(syn::Error::new(
                *s,
                format!("snapshot({k} = ..): `{k}` is not a field this method can change"),
            ));
        }
    }
    Ok(changed)
}

fn marker_ident(field: &str, span: Span) -> Ident {
    if field.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        Ident::new(&format!("_{field}"), span)
    } else if let Some(raw) = field.strip_prefix("r#") {
        Ident::new_raw(raw, span)
    } else {
        Ident::new(field, span)
    }
}

fn member_tokens(field: &str, span: Span) -> TokenStream {
    if let Ok(i) = field.parse::<u32>() {
        let idx = syn::Index { index: i, span };
        quote!(#idx)
    } else if let Some(raw) = field.strip_prefix("r#") {
        let id = Ident::new_raw(raw, span);
        quote!(#id)
    } else {
        let id = Ident::new(field, span);
        quote!(#id)
    }
}

/// `skip`, `snapshot` and `fields` name fields of `self`; a kernel-style
/// method has none.
fn param_options(f: &ImplItemFn, ident: &Ident, opts: &Options) -> syn::Result<()> {
    let first = opts
        .skip
        .iter()
        .map(|(k, s)| ("skip", k, *s))
        .chain(opts.fields.iter().map(|(k, s)| ("fields", k, *s)))
        .chain(opts.snapshot.iter().map(|(k, (s, _))| ("snapshot", k, *s)))
        .next();
    match first {
        None => Ok(()),
        Some((opt, k, s)) => Err(syn::Error::new(
            s,
            format!(
                "{opt}({k}): `{}` has no `self`; it keeps its state in `{ident}`, which the \
                 device checkpoint of its type saves and restores (fgft::DeviceOf)",
                f.sig.ident
            ),
        )),
    }
}

/// The transaction wrapper around one method.
pub fn expand(f: &ImplItemFn, opts: &Options, ctx: &Context) -> syn::Result<TokenStream> {
    let subject = check_signature(f)?;
    let changed = match &subject {
        Subject::SelfRef => changed_fields(f, &Usage::of_block(&f.block), ctx, opts)?,
        Subject::Param { ident, .. } => {
            param_options(f, ident, opts)?;
            BTreeMap::new()
        }
    };

    let attr_span = opts.span.unwrap_or_else(Span::call_site);
    let name = &f.sig.ident;
    let entry_name = match &ctx.self_name {
        Some(s) => format!("{s}::{name}"),
        None => name.to_string(),
    };
    let entry_name = match &ctx.self_name {
        Some(_) => quote!(#entry_name),
        None => quote!(::core::concat!(::core::module_path!(), "::", #entry_name)),
    };
    let err = opts.err_expr();
    let ret = match &f.sig.output {
        ReturnType::Type(_, t) => quote!(#t),
        ReturnType::Default => quote!(()),
    };

    let mut markers = Vec::new();
    let mut takes = Vec::new();
    let mut puts = Vec::new();
    for (i, (field, span)) in changed.iter().enumerate() {
        if opts.skip.contains_key(field) {
            continue;
        }
        let saved = format_ident!("__fgft_saved_{}", i);
        let member = member_tokens(field, *span);
        let marker = marker_ident(field, *span);
        let take = match opts.snapshot.get(field) {
            Some((s, path)) => quote_spanned!(*s=> ::fgft::snap::Kept(#path(&self.#member))),
            None => {
                markers.push(quote_spanned!(*span=> pub struct #marker;));
                quote_spanned!(*span=>
                    (&&&::fgft::__private::Field::<_, __fgft_fields::#marker>::new(&self.#member))
                        .fgft_snapshot())
            }
        };
        takes.push(quote! {
            let #saved = if __fgft_guard.is_some() { ::core::option::Option::Some(#take) } else { ::core::option::Option::None };
        });
        puts.push(quote! {
            if let ::core::option::Option::Some(s) = #saved { s.put_back(&mut self.#member); }
        });
    }

    let (checkpoint, restore) = match &subject {
        Subject::SelfRef => (
            quote_spanned!(attr_span=> <Self as ::fgft::Device>::fgft_checkpoint(self)),
            quote_spanned!(attr_span=> <Self as ::fgft::Device>::fgft_restore(self, cp, txn)),
        ),
        Subject::Param { ident, ty } => (
            quote_spanned!(attr_span=> <Self as ::fgft::DeviceOf<#ty>>::fgft_checkpoint(&mut *#ident)),
            quote_spanned!(attr_span=> <Self as ::fgft::DeviceOf<#ty>>::fgft_restore(&mut *#ident, cp, txn)),
        ),
    };
    let from_abort = quote_spanned!(f.sig.output.span()=> <#ret as ::fgft::AbortValue>::from_abort);

    let attrs = &f.attrs;
    let vis = &f.vis;
    let defaultness = &f.defaultness;
    let sig = &f.sig;
    let body = &f.block;
    Ok(quote! {
        #(#attrs)*
        #vis #defaultness #sig {
            #[allow(non_camel_case_types, dead_code, unused_imports)]
            mod __fgft_fields {
                #(#markers)*
            }
            #[allow(unused_imports)]
            use ::fgft::__private::{ViaClone as _, ViaDevice as _, ViaNone as _};
            static __FGFT_ENTRY: ::fgft::Entry =
                ::fgft::Entry::new(#entry_name, ::core::concat!(::core::file!(), ":", ::core::line!()));
            let mut __fgft_guard = ::fgft::Txn::begin(&__FGFT_ENTRY);
            let __fgft_cp = match &mut __fgft_guard {
                ::core::option::Option::Some(g) => match g.checkpoint(|| #checkpoint, #err) {
                    ::core::result::Result::Ok(cp) => ::core::option::Option::Some(cp),
                    ::core::result::Result::Err(abort) => return #from_abort(abort),
                },
                ::core::option::Option::None => ::core::option::Option::None,
            };
            #(#takes)*
            #[allow(unused_mut)]
            let mut __fgft_body = || -> #ret #body;
            match __fgft_guard {
                ::core::option::Option::None => __fgft_body(),
                ::core::option::Option::Some(mut g) => match g.call(__fgft_body) {
                    ::core::result::Result::Ok(v) => {
                        g.commit();
                        v
                    }
                    ::core::result::Result::Err(failed) => {
                        let abort = failed.abort(#err, |txn| {
                            #(#puts)*
                            match &__fgft_cp {
                                ::core::option::Option::Some(cp) => #restore,
                                ::core::option::Option::None => ::core::result::Result::Ok(()),
                            }
                        });
                        #from_abort(abort)
                    }
                },
            }
        }
    })
}
