//! What the `select!` and `join!` expansions share: the `$crate;` prefix of their
//! input, a leading `biased;`, and one pinned struct holding the futures.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Path, Token};

/// `$crate;` followed by the user's input.
pub(crate) struct WithCrate<T> {
    pub(crate) krate: Path,
    pub(crate) inner: T,
}

impl<T: Parse> Parse for WithCrate<T> {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let krate = input.call(Path::parse_mod_style)?;
        input.parse::<Token![;]>()?;
        Ok(WithCrate {
            krate,
            inner: input.parse()?,
        })
    }
}

/// Consumes a leading `biased;`, if present.
pub(crate) fn parse_biased(input: ParseStream<'_>) -> syn::Result<bool> {
    if input.peek(syn::Ident) && input.peek2(Token![;]) && input.fork().parse::<syn::Ident>()? == "biased" {
        input.parse::<syn::Ident>()?;
        input.parse::<Token![;]>()?;
        return Ok(true);
    }
    Ok(false)
}

/// `{prefix}0`, `{prefix}1`, ... : `n` names for the expansion's items.
pub(crate) fn numbered(prefix: &str, n: usize) -> Vec<Ident> {
    (0..n).map(|i| format_ident!("{}{}", prefix, i)).collect()
}

/// A struct `name` with one pinned field per future, named `fields`, of generic types
/// `F0`, `F1`, ...: the expansion's pinned state, projected field by field by
/// pin-project-lite (no unsafe code), as tokio's layout is.
pub(crate) fn pinned_struct(support: &TokenStream, name: &str, fields: &[Ident]) -> TokenStream {
    let name = format_ident!("{}", name);
    let params = numbered("F", fields.len());
    quote! {
        #support::pin_project! {
            #[allow(non_camel_case_types)]
            struct #name<#(#params),*> {
                #(#[pin] #fields: #params,)*
            }
        }
    }
}
