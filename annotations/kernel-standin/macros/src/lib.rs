//! `#[vtable]`, as the kernel's `macros` crate defines it: on a trait, a
//! `const HAS_<METHOD>: bool = false` for every method with a default body;
//! on an impl of that trait, `const HAS_<METHOD>: bool = true` for every
//! method the impl defines. C vtables are filled from these constants, so a
//! method left out stays NULL in the C `struct phy_driver`.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{ImplItem, Item, TraitItem};

#[proc_macro_attribute]
pub fn vtable(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(proc_macro2::Span::call_site(), "#[vtable] takes no options")
            .into_compile_error()
            .into();
    }
    let item = syn::parse_macro_input!(item as Item);
    match item {
        Item::Trait(mut t) => {
            let mut consts = Vec::new();
            for it in &t.items {
                if let TraitItem::Fn(f) = it {
                    if f.default.is_some() {
                        let c = has_const(&f.sig.ident);
                        consts.push(quote!(
                            #[doc(hidden)]
                            const #c: bool = false;
                        ));
                    }
                }
            }
            for c in consts {
                t.items.push(syn::parse2(c).expect("a trait const parses"));
            }
            quote!(#t).into()
        }
        Item::Impl(mut i) if i.trait_.is_some() => {
            let mut consts = Vec::new();
            for it in &i.items {
                if let ImplItem::Fn(f) = it {
                    let c = has_const(&f.sig.ident);
                    consts.push(quote!(const #c: bool = true;));
                }
            }
            for c in consts {
                i.items.push(syn::parse2(c).expect("an impl const parses"));
            }
            quote!(#i).into()
        }
        other => {
            syn::Error::new_spanned(other, "#[vtable] applies to a trait or to an impl of one")
                .into_compile_error()
                .into()
        }
    }
}

fn has_const(method: &syn::Ident) -> syn::Ident {
    format_ident!("HAS_{}", method.to_string().to_uppercase())
}
