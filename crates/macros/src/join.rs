//! `join!` and `try_join!`: the proc-macro half behind the `netloop` crate's
//! declarative wrappers (which pass `$crate` as the first tokens).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Token};

use crate::shared::{WithCrate, numbered, parse_biased, pinned_struct};

/// Comma-separated futures, optionally after `biased;`.
struct Futures {
    biased: bool,
    exprs: Vec<Expr>,
}

impl Parse for Futures {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let biased = parse_biased(input)?;
        let list = syn::punctuated::Punctuated::<Expr, Token![,]>::parse_terminated(input)?;
        Ok(Futures {
            biased,
            exprs: list.into_iter().collect(),
        })
    }
}

pub(crate) fn join(input: TokenStream, try_join: bool) -> syn::Result<TokenStream> {
    let WithCrate {
        krate,
        inner: Futures { biased, exprs },
    } = syn::parse2::<WithCrate<Futures>>(input)?;
    let support = quote! { #krate::__private };
    let n = exprs.len();
    if n == 0 {
        return Ok(if try_join {
            quote! { ::core::result::Result::Ok(()) }
        } else {
            quote! { () }
        });
    }
    // The futures live in one pinned struct; the poll_fn closure holds a pinned
    // reference to it and, unless biased, the index of the future to poll first,
    // rotated each poll so that none is starved of the cooperative budget. That is
    // tokio's layout, and its future sizes.
    //
    // tokio's `join!` brings no name into the caller's scope, and neither does this:
    // the struct is declared in a block of its own, which gives back its constructor,
    // so that the caller's expressions (the constructor's arguments) cannot name it;
    // every identifier made here has the mixed site's hygiene, as a `macro_rules!`
    // body's has, so that the caller's expressions see their own locals.
    let fields = numbered("f", n);
    let params = numbered("F", n);
    let (rotator_decl, start) = rotation(biased, n);
    let polls = poll_arms(&fields, try_join);
    let ready = output(&fields, try_join);
    let args = exprs.iter().map(|e| {
        quote_spanned! {Span::mixed_site()=>
            #support::MaybeDone::new(::core::future::IntoFuture::into_future(#e))
        }
    });
    let state = pinned_struct(&support, "__NetloopJoin", &fields);
    Ok(quote_spanned! {Span::mixed_site()=> {
        let __join_new = {
            #state
            fn __new<#(#params),*>(#(#fields: #params),*) -> __NetloopJoin<#(#params),*> {
                __NetloopJoin { #(#fields),* }
            }
            __new
        };
        let mut __join = ::core::pin::pin!(__join_new(#(#args),*));
        #rotator_decl
        ::core::future::poll_fn(move |__join_cx| {
            let mut __join_all = __join.as_mut().project();
            let mut __join_done = true;
            let __join_start: usize = #start;
            for __join_i in 0..#n {
                let __join_index = __join_start + __join_i;
                match if __join_index >= #n { __join_index - #n } else { __join_index } {
                    #(#polls)*
                    _ => ::core::unreachable!(),
                }
            }
            if !__join_done {
                return ::core::task::Poll::Pending;
            }
            ::core::task::Poll::Ready(#ready)
        })
        .await
    }})
}

/// The declaration of the rotator (the index of the future to poll first) and the
/// expression that gives each poll's start: rotated unless `biased`.
fn rotation(biased: bool, n: usize) -> (TokenStream, TokenStream) {
    if biased {
        return (TokenStream::new(), quote! { 0usize });
    }
    (
        quote_spanned! {Span::mixed_site()=> let mut __join_rotator: u32 = 0; },
        quote_spanned! {Span::mixed_site()=>{
            let __start = __join_rotator;
            __join_rotator = if __start + 1 == #n as u32 { 0 } else { __start + 1 };
            __start as usize
        }},
    )
}

/// For each future, the arm that polls it; for `try_join!`, one that failed ends the
/// join with its error at once.
fn poll_arms(fields: &[Ident], try_join: bool) -> impl Iterator<Item = TokenStream> + '_ {
    fields.iter().enumerate().map(move |(i, f)| {
        let check = if try_join {
            quote_spanned! {Span::mixed_site()=>
                if let ::core::option::Option::Some(::core::result::Result::Err(_)) = __join_all.#f.as_mut().output_ref() {
                    return match __join_all.#f.as_mut().take_output() {
                        ::core::option::Option::Some(::core::result::Result::Err(e)) => {
                            ::core::task::Poll::Ready(::core::result::Result::Err(e))
                        }
                        _ => ::core::unreachable!(),
                    };
                }
            }
        } else {
            TokenStream::new()
        };
        quote_spanned! {Span::mixed_site()=>
            #i => {
                if __join_all.#f.as_mut().poll_done(__join_cx).is_pending() {
                    __join_done = false;
                }
                #check
            }
        }
    })
}

/// The join's output: every future's, as a tuple (in `Ok` for `try_join!`).
fn output(fields: &[Ident], try_join: bool) -> TokenStream {
    let outputs = fields.iter().map(|f| {
        if try_join {
            quote_spanned! {Span::mixed_site()=>
                match __join_all.#f.as_mut().take_output().expect("output taken once") {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(_) => ::core::unreachable!(),
                }
            }
        } else {
            quote_spanned! {Span::mixed_site()=> __join_all.#f.as_mut().take_output().expect("output taken once") }
        }
    });
    if try_join {
        quote_spanned! {Span::mixed_site()=> ::core::result::Result::Ok((#(#outputs,)*)) }
    } else {
        quote_spanned! {Span::mixed_site()=> (#(#outputs,)*) }
    }
}
