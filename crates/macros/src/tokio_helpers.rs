//! tokio's hidden crate-root helper macros (`tokio::count!`, `count_field!`,
//! `select_variant!`, `select_priv_declare_output_enum!`, `select_priv_clean_pattern!`):
//! tokio's `select!` expands to them, so they are names tokio exports, and code names
//! them (`use tokio::select_variant;`). netloop's `select!` does not use them; the
//! `tokio` crate re-exports these under tokio's names, with tokio's inputs and outputs.

use proc_macro2::{Delimiter, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::Pat;
use syn::parse::Parser;

use crate::select::{clean_pattern, output_enum};

/// The number of `_` in `tokens`, which must hold nothing else.
fn underscores(tokens: TokenStream) -> syn::Result<usize> {
    let mut n = 0;
    for token in tokens {
        match token {
            TokenTree::Ident(ref i) if i == "_" => n += 1,
            other => return Err(syn::Error::new(other.span(), "expected `_`")),
        }
    }
    Ok(n)
}

/// `count!(_ _ _)`: `3`, an unsuffixed integer literal (an expression or a pattern).
pub(crate) fn count(input: TokenStream) -> syn::Result<TokenStream> {
    let n = underscores(input)?;
    Ok(Literal::usize_unsuffixed(n).into_token_stream())
}

/// `count_field!(var. _ _)`: `var.2`, the field of the tuple `var` at the count.
pub(crate) fn count_field(input: TokenStream) -> syn::Result<TokenStream> {
    let mut tokens = input.into_iter();
    let var = match tokens.next() {
        Some(TokenTree::Ident(var)) => var,
        other => return Err(error_at(other, "expected the tuple's name")),
    };
    match tokens.next() {
        Some(TokenTree::Punct(p)) if p.as_char() == '.' => {}
        other => return Err(error_at(other, "expected `.`")),
    }
    let index = Literal::usize_unsuffixed(underscores(tokens.collect())?);
    let mut out = TokenStream::new();
    out.extend([
        TokenTree::Ident(var),
        TokenTree::Punct(Punct::new('.', Spacing::Alone)),
        TokenTree::Literal(index),
    ]);
    Ok(out)
}

/// `select_variant!(path::Out, (_ _) rest...)`: `path::Out::_2 rest...`.
pub(crate) fn select_variant(input: TokenStream) -> syn::Result<TokenStream> {
    let mut path = TokenStream::new();
    let mut tokens = input.into_iter();
    for token in tokens.by_ref() {
        match token {
            TokenTree::Punct(ref p) if p.as_char() == ',' => break,
            other => path.extend([other]),
        }
    }
    let n = match tokens.next() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => underscores(g.stream())?,
        other => return Err(error_at(other, "expected `(_ ...)`")),
    };
    let variant = Ident::new(&format!("_{n}"), Span::call_site());
    let rest: TokenStream = tokens.collect();
    Ok(quote! { #path::#variant #rest })
}

/// `select_priv_declare_output_enum!((_ _))`: the enum `Out` of a `select!` of that
/// many branches and its `Mask` type, as items `pub(super)`.
pub(crate) fn declare_output_enum(input: TokenStream) -> syn::Result<TokenStream> {
    let n = match input.into_iter().next() {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => underscores(g.stream())?,
        other => return Err(error_at(other, "expected `(_ ...)`")),
    };
    if n > 64 {
        return Err(syn::Error::new(
            Span::call_site(),
            "select! supports at most 64 branches",
        ));
    }
    Ok(output_enum(n))
}

/// `select_priv_clean_pattern!(pat)`: the pattern without its binding modifiers; input
/// that is not a pattern comes back as it is.
pub(crate) fn clean_pattern_macro(input: TokenStream) -> TokenStream {
    match Pat::parse_multi_with_leading_vert.parse2(input.clone()) {
        Ok(mut pat) => {
            clean_pattern(&mut pat);
            pat.into_token_stream()
        }
        Err(_) => input,
    }
}

fn error_at(token: Option<TokenTree>, message: &str) -> syn::Error {
    let span = token.map_or_else(Span::call_site, |t| t.span());
    syn::Error::new(span, message)
}
