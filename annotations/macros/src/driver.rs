//! `#[fgft::driver]` on an impl block: expands the `#[fgft::isolate]`
//! methods in it with the whole block in view, and implements
//! `fgft::Device` from its `#[fgft::checkpoint]` and `#[fgft::restore]`
//! methods.

use crate::analysis::Usage;
use crate::isolate::{self, Context, Options};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use std::collections::BTreeMap;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ImplItem, ImplItemFn, ItemImpl, ReturnType, Type};

/// Which fgft attribute an attribute is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Isolate,
    Checkpoint,
    Restore,
    Driver,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Isolate => "isolate",
            Kind::Checkpoint => "checkpoint",
            Kind::Restore => "restore",
            Kind::Driver => "driver",
        }
    }
}

/// `#[fgft::isolate]`, `#[isolate]`, `#[fgft_macros::isolate]`, ...
pub fn kind_of(a: &Attribute) -> Option<Kind> {
    let segs: Vec<String> = a
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let last = match segs.as_slice() {
        [one] => one.as_str(),
        [first, last] if first == "fgft" || first == "fgft_macros" => last.as_str(),
        _ => return None,
    };
    match last {
        "isolate" => Some(Kind::Isolate),
        "checkpoint" => Some(Kind::Checkpoint),
        "restore" => Some(Kind::Restore),
        "driver" => Some(Kind::Driver),
        _ => None,
    }
}

fn attr_args(a: &Attribute) -> TokenStream {
    match &a.meta {
        syn::Meta::List(l) => l.tokens.clone(),
        _ => TokenStream::new(),
    }
}

fn self_name(ty: &Type) -> String {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "Self".to_string(), |s| s.ident.to_string()),
        other => other.to_token_stream().to_string().replace(' ', ""),
    }
}

fn takes_mut_self(f: &ImplItemFn) -> bool {
    match f.sig.inputs.first() {
        Some(FnArg::Receiver(r)) => matches!(&*r.ty, Type::Reference(t) if t.mutability.is_some()),
        _ => false,
    }
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new(
            attr.span(),
            "#[fgft::driver] takes no options",
        ));
    }
    let mut imp: ItemImpl = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            first_span(&item),
            "#[fgft::driver] applies to an impl block (`impl Trait for Driver { .. }` or `impl Driver { .. }`)",
        )
    })?;

    // Usage of every method, for following calls within the block.
    let mut methods: BTreeMap<String, (Usage, bool)> = BTreeMap::new();
    for it in &imp.items {
        if let ImplItem::Fn(f) = it {
            methods.insert(
                f.sig.ident.to_string(),
                (Usage::of_block(&f.block), takes_mut_self(f)),
            );
        }
    }
    let ctx = Context {
        self_name: Some(self_name(&imp.self_ty)),
        impl_methods: Some(&methods),
    };

    let mut checkpoint: Option<(Span, ImplItemFn)> = None;
    let mut restore: Option<(Span, ImplItemFn)> = None;
    let mut errors: Option<syn::Error> = None;
    let mut push_err = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for it in &mut imp.items {
        let ImplItem::Fn(f) = it else {
            continue;
        };
        let mut found: Vec<(Kind, Attribute)> = Vec::new();
        f.attrs.retain(|a| match kind_of(a) {
            Some(k) => {
                found.push((k, a.clone()));
                false
            }
            None => true,
        });
        if found.len() > 1 {
            push_err(syn::Error::new(
                found[1].1.span(),
                format!(
                    "#[fgft::{}] and #[fgft::{}] on the same method",
                    found[0].0.name(),
                    found[1].0.name()
                ),
            ));
            continue;
        }
        let Some((kind, a)) = found.pop() else {
            continue;
        };
        match kind {
            Kind::Isolate => {
                let res = Options::parse(attr_args(&a), f.sig.ident.span())
                    .and_then(|o| isolate::expand(f, &o, &ctx))
                    .and_then(syn::parse2::<ImplItemFn>);
                match res {
                    Ok(nf) => *f = nf,
                    Err(e) => push_err(e),
                }
            }
            Kind::Checkpoint | Kind::Restore => {
                if !attr_args(&a).is_empty() {
                    push_err(syn::Error::new(
                        a.span(),
                        format!("#[fgft::{}] takes no options", kind.name()),
                    ));
                    continue;
                }
                let slot = if kind == Kind::Checkpoint {
                    &mut checkpoint
                } else {
                    &mut restore
                };
                if let Some((prev, _)) = slot {
                    let mut e = syn::Error::new(
                        f.sig.ident.span(),
                        format!("a second #[fgft::{}] in this impl block", kind.name()),
                    );
                    e.combine(syn::Error::new(*prev, "the first one is here"));
                    push_err(e);
                    continue;
                }
                *slot = Some((f.sig.ident.span(), f.clone()));
            }
            Kind::Driver => push_err(syn::Error::new(
                a.span(),
                "#[fgft::driver] belongs on the impl block, not on a method",
            )),
        }
    }

    let device_impl = match (&checkpoint, &restore) {
        (None, None) => None,
        (Some((s, _)), None) => {
            push_err(syn::Error::new(*s, "#[fgft::checkpoint] without #[fgft::restore] in this impl block: mark the method that brings the device back"));
            None
        }
        (None, Some((s, _))) => {
            push_err(syn::Error::new(*s, "#[fgft::restore] without #[fgft::checkpoint] in this impl block: mark the method that saves the device state"));
            None
        }
        (Some((_, c)), Some((_, r))) => match device_impl(&imp, c, r) {
            Ok(ts) => Some(ts),
            Err(e) => {
                push_err(e);
                None
            }
        },
    };
    // Methods in error are kept as written (without fgft attributes), so
    // the rest of the crate still type-checks and reports its own errors.
    let errors = errors.map(syn::Error::into_compile_error);
    Ok(quote! {
        #errors
        #imp
        #device_impl
    })
}

fn first_span(ts: &TokenStream) -> Span {
    ts.clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// `impl fgft::Device for T` from the checkpoint and restore methods.
fn device_impl(imp: &ItemImpl, c: &ImplItemFn, r: &ImplItemFn) -> syn::Result<TokenStream> {
    let cname = &c.sig.ident;
    let rname = &r.sig.ident;
    let bad = |span: Span, msg: &str| Err(syn::Error::new(span, msg.to_string()));
    if c.sig.asyncness.is_some() || r.sig.asyncness.is_some() {
        return bad(
            c.sig.ident.span(),
            "unsupported signature: checkpoint and restore methods cannot be async",
        );
    }
    if !matches!(c.sig.inputs.first(), Some(FnArg::Receiver(_))) {
        return device_of_impl(imp, c, r);
    }
    // checkpoint(&self | &mut self) -> T
    match (c.sig.inputs.first(), c.sig.inputs.len()) {
        (Some(FnArg::Receiver(rc)), 1) if rc.reference.is_some() => {}
        _ => {
            return bad(
                c.sig.ident.span(),
                "unsupported signature: a #[fgft::checkpoint] method takes only `&self` or `&mut self` (or, kernel style, only `dev: &mut T`) and returns the saved state",
            )
        }
    }
    let cp_ty = match &c.sig.output {
        ReturnType::Type(_, t) if !matches!(&**t, Type::ImplTrait(_)) => t.clone(),
        _ => {
            return bad(
                c.sig.ident.span(),
                "unsupported signature: a #[fgft::checkpoint] method returns the saved device state (a named type)",
            )
        }
    };
    // restore(&mut self, cp: &T [, txn: &fgft::Txn]) [-> () | Result<(), E>]
    let restore_call = match (r.sig.inputs.first(), r.sig.inputs.len()) {
        (Some(FnArg::Receiver(rr)), 2) if rr.mutability.is_some() || matches!(&*rr.ty, Type::Reference(t) if t.mutability.is_some()) => {
            let sp = r.sig.inputs[1].span();
            quote_spanned!(sp=> Self::#rname(self, cp))
        }
        (Some(FnArg::Receiver(rr)), 3) if matches!(&*rr.ty, Type::Reference(t) if t.mutability.is_some()) => {
            let sp = r.sig.inputs[1].span();
            quote_spanned!(sp=> Self::#rname(self, cp, txn))
        }
        _ => {
            return bad(
                r.sig.ident.span(),
                "unsupported signature: a #[fgft::restore] method takes `&mut self`, the checkpoint (`&T`) and optionally the aborted transaction (`&fgft::Txn`)",
            )
        }
    };
    let (ig, tg, wc) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    Ok(quote! {
        impl #ig ::fgft::Device for #self_ty #tg #wc {
            type Checkpoint = #cp_ty;
            fn fgft_checkpoint(&mut self) -> Self::Checkpoint {
                Self::#cname(self)
            }
            fn fgft_restore(
                &mut self,
                cp: &Self::Checkpoint,
                txn: &::fgft::Txn,
            ) -> ::core::result::Result<(), ::std::string::String> {
                let _ = txn;
                ::fgft::RestoreResult::into_restore_result(#restore_call)
            }
        }
    })
}

/// `impl fgft::DeviceOf<D> for T` from receiverless (kernel-style)
/// checkpoint and restore functions: `fn save(dev: &mut D) -> S` and
/// `fn restore(dev: &mut D, cp: &S [, txn: &fgft::Txn])`.
fn device_of_impl(imp: &ItemImpl, c: &ImplItemFn, r: &ImplItemFn) -> syn::Result<TokenStream> {
    let cname = &c.sig.ident;
    let rname = &r.sig.ident;
    let bad = |span: Span, msg: &str| Err(syn::Error::new(span, msg.to_string()));
    let dev_ty = match (isolate::state_param(&c.sig), c.sig.inputs.len()) {
        (Some(Ok((_, ty))), 1) => ty,
        (Some(Err(e)), _) => return Err(e),
        _ => {
            return bad(
                c.sig.ident.span(),
                "unsupported signature: a kernel-style #[fgft::checkpoint] function takes only the device (`dev: &mut T`) and returns the saved state",
            )
        }
    };
    let cp_ty = match &c.sig.output {
        ReturnType::Type(_, t) if !matches!(&**t, Type::ImplTrait(_)) => t.clone(),
        _ => {
            return bad(
                c.sig.ident.span(),
                "unsupported signature: a #[fgft::checkpoint] function returns the saved device state (a named type)",
            )
        }
    };
    let restore_call = match (isolate::state_param(&r.sig), r.sig.inputs.len()) {
        (Some(Ok(_)), 2) => {
            let sp = r.sig.inputs[1].span();
            quote_spanned!(sp=> Self::#rname(dev, cp))
        }
        (Some(Ok(_)), 3) => {
            let sp = r.sig.inputs[1].span();
            quote_spanned!(sp=> Self::#rname(dev, cp, txn))
        }
        (Some(Err(e)), _) => return Err(e),
        _ => {
            return bad(
                r.sig.ident.span(),
                "unsupported signature: a kernel-style #[fgft::restore] function takes the device (`dev: &mut T`), the checkpoint (`&S`) and optionally the aborted transaction (`&fgft::Txn`)",
            )
        }
    };
    let (ig, tg, wc) = imp.generics.split_for_impl();
    let self_ty = &imp.self_ty;
    Ok(quote! {
        impl #ig ::fgft::DeviceOf<#dev_ty> for #self_ty #tg #wc {
            type Checkpoint = #cp_ty;
            fn fgft_checkpoint(dev: &mut #dev_ty) -> Self::Checkpoint {
                Self::#cname(dev)
            }
            fn fgft_restore(
                dev: &mut #dev_ty,
                cp: &Self::Checkpoint,
                txn: &::fgft::Txn,
            ) -> ::core::result::Result<(), ::std::string::String> {
                let _ = txn;
                ::fgft::RestoreResult::into_restore_result(#restore_call)
            }
        }
    })
}
