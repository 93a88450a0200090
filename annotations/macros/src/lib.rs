//! fgft attributes for Rust drivers. Use them through the runtime crate
//! (`fgft-rt`, library name `fgft`): `#[fgft::driver]`, `#[fgft::isolate]`,
//! `#[fgft::checkpoint]`, `#[fgft::restore]`.
//!
//! ```ignore
//! #[fgft::driver]
//! impl EduOps for Edu {
//!     #[fgft::isolate(err = EIO)]
//!     fn factorial(&mut self, n: u32) -> Result<u32, EduError> { .. }
//! }
//!
//! #[fgft::driver]
//! impl Edu {
//!     #[fgft::checkpoint]
//!     fn save(&self) -> EduCheckpoint { .. }
//!     #[fgft::restore]
//!     fn restore(&mut self, cp: &EduCheckpoint, txn: &fgft::Txn) { .. }
//! }
//! ```
//!
//! `#[fgft::isolate]` makes a call a transaction: device checkpoint,
//! snapshot of the fields of `self` the method (and the `&mut self` methods
//! of the same impl block it calls) can change, the body under
//! `catch_unwind`; on a panic or a refused checked access the fields and the
//! device are restored and the method returns the error its return type
//! carries (`err = EIO` by default). Method signatures do not change.
//!
//! Kernel-style methods, whose state is their first parameter
//! (`fn read_status(dev: &mut phy::Device) -> Result<u16>`, no receiver),
//! are accepted too: the device is checkpointed through
//! `<Self as fgft::DeviceOf<phy::Device>>`, which `#[fgft::driver]`
//! implements from receiverless `#[fgft::checkpoint] fn(dev: &mut T) -> S`
//! and `#[fgft::restore] fn(dev: &mut T, cp: &S)` (see fgft-rt's README).
//!
//! `#[fgft::isolate]` works alone on a method whose body calls no other
//! method of `self`; `#[fgft::driver]` on the impl block lets it follow
//! calls into the block, and is required for `#[fgft::checkpoint]` and
//! `#[fgft::restore]` (it implements `fgft::Device` from them).

mod analysis;
mod driver;
mod isolate;

use proc_macro::TokenStream;
use proc_macro2::Span;
use syn::spanned::Spanned;

fn into_ts(r: syn::Result<proc_macro2::TokenStream>) -> TokenStream {
    r.unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Put on an impl block that holds isolated entry points or the device's
/// checkpoint and restore methods.
#[proc_macro_attribute]
pub fn driver(attr: TokenStream, item: TokenStream) -> TokenStream {
    into_ts(driver::expand(attr.into(), item.into()))
}

/// Makes a `&mut self` method (or a kernel-style one taking `dev: &mut T`
/// first) a transaction. Options: `err = EIO`,
/// `skip(field, ..)`, `snapshot(field = "path::save_fn")`, `fields(field, ..)`.
#[proc_macro_attribute]
pub fn isolate(attr: TokenStream, item: TokenStream) -> TokenStream {
    into_ts(isolate_alone(attr.into(), item.into()))
}

fn isolate_alone(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let parsed: syn::Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(_) => {
            let span = item
                .clone()
                .into_iter()
                .next()
                .map_or_else(Span::call_site, |t| t.span());
            return Err(isolate::not_a_method(
                span,
                "this is not a function with a body",
            ));
        }
    };
    let f = match parsed {
        syn::Item::Fn(f) => f,
        other => {
            let what = match &other {
                syn::Item::Struct(_) => "this is a struct",
                syn::Item::Enum(_) => "this is an enum",
                syn::Item::Impl(_) => "this is an impl block; put #[fgft::driver] on it and #[fgft::isolate] on its methods",
                syn::Item::Trait(_) => "this is a trait",
                syn::Item::Mod(_) => "this is a module",
                syn::Item::Const(_) | syn::Item::Static(_) => "this is a constant",
                _ => "this is not a function",
            };
            return Err(isolate::not_a_method(item_span(&other), what));
        }
    };
    if !matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)))
        && isolate::state_param(&f.sig).is_none()
    {
        return Err(isolate::not_a_method(
            f.sig.ident.span(),
            &format!(
                "`{}` is a free function (no `self` receiver, and no `&mut` state parameter first)",
                f.sig.ident
            ),
        ));
    }
    let m = syn::ImplItemFn {
        attrs: f.attrs,
        vis: f.vis,
        defaultness: None,
        sig: f.sig,
        block: *f.block,
    };
    let opts = isolate::Options::parse(attr, m.sig.ident.span())?;
    isolate::expand(
        &m,
        &opts,
        &isolate::Context {
            self_name: None,
            impl_methods: None,
        },
    )
}

fn item_span(i: &syn::Item) -> Span {
    match i {
        syn::Item::Struct(s) => s.ident.span(),
        syn::Item::Enum(e) => e.ident.span(),
        syn::Item::Trait(t) => t.ident.span(),
        syn::Item::Mod(m) => m.ident.span(),
        syn::Item::Const(c) => c.ident.span(),
        syn::Item::Static(s) => s.ident.span(),
        other => other.span(),
    }
}

/// Marks the method that saves the device state (`&self` or `&mut self`,
/// or kernel style `dev: &mut T`; returning the checkpoint). Needs
/// `#[fgft::driver]` on its impl block.
#[proc_macro_attribute]
pub fn checkpoint(_attr: TokenStream, item: TokenStream) -> TokenStream {
    alone("checkpoint", item)
}

/// Marks the method that restores the device (`&mut self` or kernel style
/// `dev: &mut T`, `&Checkpoint`, optionally `&fgft::Txn`). Needs
/// `#[fgft::driver]` on its impl block.
#[proc_macro_attribute]
pub fn restore(_attr: TokenStream, item: TokenStream) -> TokenStream {
    alone("restore", item)
}

fn alone(name: &str, item: TokenStream) -> TokenStream {
    let item: proc_macro2::TokenStream = item.into();
    let span = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(syn::Item::Fn(f)) => f.sig.ident.span(),
        _ => item
            .clone()
            .into_iter()
            .next()
            .map_or_else(Span::call_site, |t| t.span()),
    };
    let err = syn::Error::new(
        span,
        format!("#[fgft::{name}] needs #[fgft::driver] on the impl block that holds this method"),
    )
    .into_compile_error();
    quote::quote!(#err #item).into()
}
