//! `select!`: the proc-macro half behind the `netloop` crate's declarative wrapper
//! (which passes `$crate` as the first tokens).

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Pat, Token};

use crate::shared::{WithCrate, numbered, parse_biased, pinned_struct};

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
pub(crate) fn clean_pattern(pat: &mut Pat) {
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
        // Only `else`: nothing to wait for, so it runs at once, and it is all the
        // expansion holds (no `Pin`, no `BRANCHES`), as tokio's.
        let e = else_branch.expect("parse rejects a select! with neither branches nor else");
        return Ok(quote! {{ #e }});
    }
    let support = quote! { #krate::__private };
    let futs = numbered("__select_fut_", n);
    let fut_decls = declare_futures(&support, &branches, &futs);
    let util = util_module(n);
    let conds = preconditions(&branches);
    let arms = poll_arms(&branches, &futs);
    let handlers = handler_arms(&branches);
    let else_arm = else_arm(else_branch);
    let (start, branch_index) = poll_order(&support, biased, n);
    let branch_count = Literal::u32_unsuffixed(u32::try_from(n).expect("at most 64 branches"));
    // The names tokio's expansion brings into the block that holds the branches (items
    // are not hygienic): `Pin`, `BRANCHES` and `__tokio_select_util`. Its locals are
    // hygienic, and so are these: every identifier the expansion makes has the mixed
    // site's hygiene, as a `macro_rules!` body's has (its locals are its own, its items
    // and paths are the caller's).
    Ok(quote_spanned! {Span::mixed_site()=> {
        #util
        // Brought into the branches' scope, as tokio's `select!` brings it.
        #[allow(unused_imports)]
        use #krate::macros::support::Pin;
        const BRANCHES: u32 = #branch_count;
        let mut __select_disabled: __tokio_select_util::Mask = 0;
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
                let __select_start: u32 = #start;
                let mut __select_pending = false;
                for __select_i in 0..BRANCHES {
                    let __select_branch = #branch_index;
                    match __select_branch {
                        #(#arms)*
                        _ => ::core::unreachable!(),
                    }
                }
                if __select_pending {
                    ::core::task::Poll::Pending
                } else {
                    ::core::task::Poll::Ready(__tokio_select_util::Out::Disabled)
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

/// The module tokio's expansion declares in the caller's block, holding
/// [`output_enum`].
fn util_module(n: usize) -> TokenStream {
    let items = output_enum(n);
    quote_spanned! {Span::mixed_site()=>
        #[doc(hidden)]
        mod __tokio_select_util {
            #items
        }
    }
}

/// `Out`, the output enum of a `select!` of `n` branches (a variant per branch, then
/// `Disabled`), and `Mask`, the type of its mask of disabled branches (the smallest
/// with a bit per branch), both `pub(super)`: what tokio's `__tokio_select_util`
/// holds.
pub(crate) fn output_enum(n: usize) -> TokenStream {
    let variants = (0..n).map(variant);
    let generics = numbered("T", n);
    let mask = match n {
        0..=8 => quote! { u8 },
        9..=16 => quote! { u16 },
        17..=32 => quote! { u32 },
        _ => quote! { u64 },
    };
    quote_spanned! {Span::mixed_site()=>
        pub(super) enum Out<#(#generics,)*> {
            #(#variants(#generics),)*
            Disabled,
        }
        pub(super) type Mask = #mask;
    }
}

/// The futures, first written into one tuple, as they are given: a `let` of a tuple
/// extends the life of temporaries borrowed there (`&mut ready(())`) to the block.
/// Then they move into one pinned struct, so the state kept across the await is the
/// futures, the mask and one pinned reference: tokio's layout, and its future sizes.
/// The struct is declared in a block of its own, where no caller's code is: the
/// caller cannot name it.
fn declare_futures(support: &TokenStream, branches: &[Branch], futs: &[Ident]) -> TokenStream {
    let fut_exprs = branches.iter().map(|b| &b.fut);
    let indices = (0..branches.len()).map(syn::Index::from);
    let state = pinned_struct(support, "__NetloopSelect", futs);
    quote_spanned! {Span::mixed_site()=>
        let __select_init = (#(#fut_exprs,)*);
        let mut __select_futs = ::core::pin::pin!({
            #state
            __NetloopSelect {
                #(#futs: ::core::future::IntoFuture::into_future(__select_init.#indices),)*
            }
        });
    }
}

/// Where a poll starts (random unless `biased`, so that no branch is starved), and the
/// branch the `__select_i`-th step of the poll tries.
fn poll_order(support: &TokenStream, biased: bool, n: usize) -> (TokenStream, TokenStream) {
    let start = if biased || n == 1 {
        quote! { 0 }
    } else {
        quote_spanned! {Span::mixed_site()=> #support::thread_rng_n(BRANCHES) }
    };
    // No `% 1` in a one-branch expansion: clippy's modulo_one would fire in user code.
    let branch_index = if n == 1 {
        quote_spanned! {Span::mixed_site()=> __select_start + __select_i }
    } else {
        quote_spanned! {Span::mixed_site()=> (__select_start + __select_i) % BRANCHES }
    };
    (start, branch_index)
}

/// The bit of branch `i` in the mask.
fn bit(i: usize) -> Literal {
    Literal::u64_unsuffixed(1u64 << i)
}

/// The branches' preconditions, each disabling its branch when false.
fn preconditions(branches: &[Branch]) -> impl Iterator<Item = TokenStream> + '_ {
    branches.iter().enumerate().filter_map(|(i, b)| {
        b.cond.as_ref().map(|c| {
            let bit = bit(i);
            quote_spanned! {Span::mixed_site()=> if !(#c) { __select_disabled |= #bit; } }
        })
    })
}

/// For each branch, the arm that polls its future and returns its output if it
/// matches the branch's pattern.
fn poll_arms<'a>(branches: &'a [Branch], futs: &'a [Ident]) -> impl Iterator<Item = TokenStream> + 'a {
    branches.iter().enumerate().map(|(i, b)| {
        let f = &futs[i];
        let v = variant(i);
        let index = Literal::u32_unsuffixed(u32::try_from(i).expect("at most 64 branches"));
        let mut pat = b.pat.clone();
        clean_pattern(&mut pat);
        let bit = bit(i);
        quote_spanned! {Span::mixed_site()=>
            #index => {
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
                    return ::core::task::Poll::Ready(__tokio_select_util::Out::#v(__select_out));
                }
            }
        }
    })
}

/// The variant of `Out` of branch `i`: `_0`, `_1`, ...
fn variant(i: usize) -> Ident {
    Ident::new(&format!("_{i}"), Span::mixed_site())
}

/// For each branch, the arm that runs its handler on its output.
fn handler_arms(branches: &[Branch]) -> impl Iterator<Item = TokenStream> + '_ {
    branches.iter().enumerate().map(|(i, b)| {
        let v = variant(i);
        let pat = &b.pat;
        let h = &b.handler;
        quote_spanned! {Span::mixed_site()=>
            #[allow(unreachable_patterns)]
            __tokio_select_util::Out::#v(#pat) => #h,
        }
    })
}

/// The arm for "every branch disabled": the `else` branch, or tokio's panic.
fn else_arm(else_branch: Option<Expr>) -> TokenStream {
    match else_branch {
        Some(e) => quote_spanned! {Span::mixed_site()=> __tokio_select_util::Out::Disabled => #e, },
        None => quote_spanned! {Span::mixed_site()=>
            __tokio_select_util::Out::Disabled => ::core::panic!("all branches are disabled and there is no else branch"),
        },
    }
}
