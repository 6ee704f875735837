//! `select!`, `join!` and `try_join!`: the proc-macro halves behind the `netloop`
//! crate's declarative wrappers (which pass `$crate` as the first tokens).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Pat, Path, Token};

/// `$crate;` followed by the user's input.
struct WithCrate<T> {
    krate: Path,
    inner: T,
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

struct Branch {
    pat: Pat,
    fut: Expr,
    cond: Option<Expr>,
    handler: Expr,
}

struct Select {
    biased: bool,
    branches: Vec<Branch>,
    else_branch: Option<Expr>,
}

impl Parse for Select {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let biased = parse_biased(input)?;
        let mut branches = Vec::new();
        let mut else_branch = None;
        while !input.is_empty() {
            if input.peek(Token![else]) {
                input.parse::<Token![else]>()?;
                input.parse::<Token![=>]>()?;
                let e: Expr = input.parse()?;
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
                if else_branch.replace(e).is_some() {
                    return Err(input.error("select! has more than one `else` branch"));
                }
                continue;
            }
            let pat = Pat::parse_multi_with_leading_vert(input)?;
            input.parse::<Token![=]>()?;
            let fut: Expr = input.parse()?;
            let cond = if input.peek(Token![,]) && input.peek2(Token![if]) {
                input.parse::<Token![,]>()?;
                input.parse::<Token![if]>()?;
                Some(input.parse::<Expr>()?)
            } else {
                None
            };
            input.parse::<Token![=>]>()?;
            let handler: Expr = input.parse()?;
            let is_block = matches!(handler, Expr::Block(_));
            if input.peek(Token![,]) {
                input.parse::<Token![,]>()?;
            } else if !is_block && !input.is_empty() {
                return Err(input.error("expected `,` after a select! branch whose handler is not a block"));
            }
            branches.push(Branch {
                pat,
                fut,
                cond,
                handler,
            });
        }
        if branches.is_empty() && else_branch.is_none() {
            return Err(syn::Error::new(Span::call_site(), "select! needs at least one branch"));
        }
        if branches.len() > 64 {
            return Err(syn::Error::new(
                Span::call_site(),
                "select! supports at most 64 branches",
            ));
        }
        Ok(Select {
            biased,
            branches,
            else_branch,
        })
    }
}

/// The branch pattern as used to test `&output` when the future completes: binding
/// modifiers (`mut`, `ref`) dropped, since bindings there are by reference (tokio's
/// `clean_pattern`).
fn clean_pattern(pat: &mut Pat) {
    match pat {
        Pat::Ident(ident) => {
            ident.by_ref = None;
            ident.mutability = None;
            if let Some((_, sub)) = &mut ident.subpat {
                clean_pattern(sub);
            }
        }
        Pat::Or(or) => or.cases.iter_mut().for_each(clean_pattern),
        Pat::Paren(p) => clean_pattern(&mut p.pat),
        Pat::Reference(r) => clean_pattern(&mut r.pat),
        Pat::Slice(s) => s.elems.iter_mut().for_each(clean_pattern),
        Pat::Struct(s) => s.fields.iter_mut().for_each(|f| clean_pattern(&mut f.pat)),
        Pat::Tuple(t) => t.elems.iter_mut().for_each(clean_pattern),
        Pat::TupleStruct(t) => t.elems.iter_mut().for_each(clean_pattern),
        Pat::Type(t) => clean_pattern(&mut t.pat),
        _ => {}
    }
}

pub(crate) fn select(input: TokenStream) -> syn::Result<TokenStream> {
    let WithCrate { krate, inner } = syn::parse2::<WithCrate<Select>>(input)?;
    let Select {
        biased,
        branches,
        else_branch,
    } = inner;
    let n = branches.len();
    if n == 0 {
        // Only `else`: nothing to wait for, so it runs at once (as tokio's does).
        let e = else_branch.expect("parse rejects a select! with neither branches nor else");
        return Ok(quote! {{ #e }});
    }
    let support = quote! { #krate::__private };
    let futs: Vec<_> = (0..n).map(|i| format_ident!("__select_fut_{}", i)).collect();
    let variants: Vec<_> = (0..n).map(|i| format_ident!("_{}", i)).collect();
    let generics: Vec<_> = (0..n).map(|i| format_ident!("T{}", i)).collect();

    // The futures are first written into one tuple, as they are given: a `let` of a tuple
    // extends the life of temporaries borrowed there (`&mut ready(())`) to the block.
    // Then they move into one pinned struct, projected field by field (pin-project-lite,
    // no unsafe code), so the state kept across the await is the futures, the mask and
    // one pinned reference: tokio's layout, and its future sizes.
    let fut_exprs = branches.iter().map(|b| &b.fut);
    let params: Vec<_> = (0..n).map(|i| format_ident!("F{}", i)).collect();
    let indices = (0..n).map(syn::Index::from);
    let fut_decls = quote! {
        let __select_init = (#(#fut_exprs,)*);
        #support::pin_project! {
            #[allow(non_camel_case_types)]
            struct __NetloopSelect<#(#params),*> {
                #(#[pin] #futs: #params,)*
            }
        }
        let mut __select_futs = ::core::pin::pin!(__NetloopSelect {
            #(#futs: ::core::future::IntoFuture::into_future(__select_init.#indices),)*
        });
    };
    // The smallest mask that has a bit per branch.
    let mask = match n {
        0..=8 => quote! { u8 },
        9..=16 => quote! { u16 },
        17..=32 => quote! { u32 },
        _ => quote! { u64 },
    };
    let conds = branches.iter().enumerate().filter_map(|(i, b)| {
        b.cond.as_ref().map(|c| {
            let bit = proc_macro2::Literal::u64_unsuffixed(1u64 << i);
            quote! { if !(#c) { __select_disabled |= #bit; } }
        })
    });
    let arms = branches.iter().enumerate().map(|(i, b)| {
        let f = &futs[i];
        let v = &variants[i];
        let mut pat = b.pat.clone();
        clean_pattern(&mut pat);
        let bit = proc_macro2::Literal::u64_unsuffixed(1u64 << i);
        quote! {
            #i => {
                if *__select_mask & #bit != 0 {
                    continue;
                }
                // The `continue` arm makes the output's type a diverging one when nothing
                // else fixes it (`poll_fn(|_| panic!())`), as in tokio's expansion.
                let __select_out = match ::core::future::Future::poll(__select_proj.#f.as_mut(), __select_cx) {
                    ::core::task::Poll::Ready(__select_out) => __select_out,
                    ::core::task::Poll::Pending => {
                        __select_pending = true;
                        continue;
                    }
                };
                // Complete: never polled again, whether or not the output matches.
                *__select_mask |= #bit;
                #[allow(unused_variables, unreachable_patterns, clippy::redundant_pattern_matching)]
                if let #pat = &__select_out {
                    return ::core::task::Poll::Ready(__SelectOut::#v(__select_out));
                }
            }
        }
    });
    let handlers = branches.iter().enumerate().map(|(i, b)| {
        let v = &variants[i];
        let pat = &b.pat;
        let h = &b.handler;
        quote! {
            #[allow(unreachable_patterns)]
            __SelectOut::#v(#pat) => #h,
        }
    });
    let else_arm = match else_branch {
        Some(e) => quote! { __SelectOut::Disabled => #e, },
        None => quote! {
            __SelectOut::Disabled => ::core::panic!("all branches are disabled and there is no else branch"),
        },
    };
    let start = if biased || n == 1 {
        quote! { 0 }
    } else {
        quote! { #support::thread_rng_n(#n as u32) as usize }
    };
    // No `% 1` in a one-branch expansion: clippy's modulo_one would fire in user code.
    let branch_index = if n == 1 {
        quote! { __select_start + __select_i }
    } else {
        quote! { (__select_start + __select_i) % #n }
    };
    Ok(quote! {{
        enum __SelectOut<#(#generics,)*> {
            #(#variants(#generics),)*
            Disabled,
        }
        let mut __select_disabled: #mask = 0;
        #(#conds)*
        let __select_output = {
            #fut_decls
            // The closure owns the pinned reference and a reference to the mask, and
            // nothing else: no local needs keeping across the await just to be borrowed.
            let __select_mask = &mut __select_disabled;
            ::core::future::poll_fn(move |__select_cx| {
                // A task whose budget is spent yields here: budget-aware branches would
                // return `Pending` anyway, and the others would not yield at all.
                ::core::task::ready!(#support::poll_budget_available(__select_cx));
                let mut __select_proj = __select_futs.as_mut().project();
                let __select_start: usize = #start;
                let mut __select_pending = false;
                for __select_i in 0..#n {
                    let __select_branch = #branch_index;
                    match __select_branch {
                        #(#arms)*
                        _ => ::core::unreachable!(),
                    }
                }
                if __select_pending {
                    ::core::task::Poll::Pending
                } else {
                    ::core::task::Poll::Ready(__SelectOut::Disabled)
                }
            })
            .await
        };
        #[allow(unused_mut)]
        let mut __select_output = __select_output;
        #[allow(unreachable_patterns, unused_variables)]
        match __select_output {
            #(#handlers)*
            #else_arm
            _ => ::core::unreachable!("a select! output matched its pattern when it completed"),
        }
    }})
}

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

/// Consumes a leading `biased;`, if present.
fn parse_biased(input: ParseStream<'_>) -> syn::Result<bool> {
    if input.peek(syn::Ident) && input.peek2(Token![;]) && input.fork().parse::<syn::Ident>()? == "biased" {
        input.parse::<syn::Ident>()?;
        input.parse::<Token![;]>()?;
        return Ok(true);
    }
    Ok(false)
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
    // The futures live in one pinned struct, projected field by field (pin-project-lite,
    // no unsafe code); the poll_fn closure holds a pinned reference to it and, unless
    // biased, the index of the future to poll first, rotated each poll so that none is
    // starved of the cooperative budget. That is tokio's layout, and its future sizes.
    let fields: Vec<_> = (0..n).map(|i| format_ident!("f{}", i)).collect();
    let params: Vec<_> = (0..n).map(|i| format_ident!("F{}", i)).collect();
    let rotate = !biased;
    let (rotator_decl, start) = if rotate {
        (
            quote! { let mut __join_rotator: u32 = 0; },
            quote! {{
                let __start = __join_rotator;
                __join_rotator = if __start + 1 == #n as u32 { 0 } else { __start + 1 };
                __start as usize
            }},
        )
    } else {
        (quote! {}, quote! { 0usize })
    };
    let polls = fields.iter().enumerate().map(|(i, f)| {
        let check = if try_join {
            quote! {
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
            quote! {}
        };
        quote! {
            #i => {
                if __join_all.#f.as_mut().poll_done(__join_cx).is_pending() {
                    __join_done = false;
                }
                #check
            }
        }
    });
    let outputs = fields.iter().map(|f| {
        if try_join {
            quote! {
                match __join_all.#f.as_mut().take_output().expect("output taken once") {
                    ::core::result::Result::Ok(v) => v,
                    ::core::result::Result::Err(_) => ::core::unreachable!(),
                }
            }
        } else {
            quote! { __join_all.#f.as_mut().take_output().expect("output taken once") }
        }
    });
    let ready = if try_join {
        quote! { ::core::result::Result::Ok((#(#outputs,)*)) }
    } else {
        quote! { (#(#outputs,)*) }
    };
    let inits = fields.iter().zip(&exprs).map(|(f, e)| {
        quote! { #f: #support::MaybeDone::new(::core::future::IntoFuture::into_future(#e)) }
    });
    Ok(quote! {{
        #support::pin_project! {
            #[allow(non_camel_case_types)]
            struct __NetloopJoin<#(#params),*> {
                #(#[pin] #fields: #params,)*
            }
        }
        let mut __join = ::core::pin::pin!(__NetloopJoin { #(#inits,)* });
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
