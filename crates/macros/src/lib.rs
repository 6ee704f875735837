//! # netloop-macros: `#[netloop::main]` and `#[netloop::test]`
//!
//! The same attributes, arguments and errors as tokio's, building a netloop runtime.
//! Use them through the `netloop` crate:
//!
//! ```ignore
//! #[netloop::main]
//! async fn main() -> std::io::Result<()> {
//!     Ok(())
//! }
//!
//! #[netloop::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn works() {}
//! ```
//!
//! | argument | meaning | default |
//! |---|---|---|
//! | `flavor = "multi_thread" \| "current_thread" \| "local"` | the runtime kind (`local`: a `LocalRuntime`, whose tasks may be `!Send`) | `main`: multi_thread, `test`: current_thread |
//! | `worker_threads = N` | event loops (multi_thread only) | available cores |
//! | `start_paused = bool` | start with time paused (current_thread; `test-util`) | false |
//! | `crate = "path"` | where `netloop` is | `netloop`, resolved where the attribute is written (as tokio's `tokio`) |
//! | `unhandled_panic = "ignore" \| "shutdown_runtime"` | accepted and checked as tokio checks it; expands to the builder's `unhandled_panic`, which exists with `--cfg tokio_unstable`, as tokio's (without it the expansion does not compile, as on tokio) | none |

#![deny(missing_docs)]

mod config;
mod join;
mod select;
mod shared;
mod tokio_helpers;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, LitInt};

use config::{Config, Dialect, Flavor, parse_config};

fn expand(args: TokenStream, item: TokenStream, is_test: bool, dialect: Dialect) -> TokenStream {
    let input: ItemFn = match syn::parse(item.clone()) {
        Ok(f) => f,
        Err(e) => return token_stream_with_error(item, e),
    };
    let result = (|| {
        if input.sig.asyncness.is_none() {
            return Err(syn::Error::new_spanned(
                input.sig.fn_token,
                "the `async` keyword is missing from the function declaration",
            ));
        }
        if !is_test && input.sig.ident == "main" && !input.sig.inputs.is_empty() {
            return Err(syn::Error::new_spanned(
                &input.sig.inputs,
                "the main function cannot accept arguments",
            ));
        }
        if is_test && !input.sig.inputs.is_empty() {
            return Err(syn::Error::new_spanned(
                &input.sig.inputs,
                "the test function cannot accept arguments",
            ));
        }
        if is_test && let Some(attr) = input.attrs.iter().find(|a| a.path().is_ident("test")) {
            return Err(syn::Error::new_spanned(
                attr,
                "second test attribute is supplied, consider removing it",
            ));
        }
        let config = parse_config(args.into(), is_test, dialect)?;
        Ok(build(input.clone(), config, is_test))
    })();
    match result {
        Ok(ts) => ts.into(),
        Err(e) => stub_with_error(input, e),
    }
}

/// On a parse failure, emit the item untouched with the error.
fn token_stream_with_error(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut out = TokenStream2::from(item);
    out.extend(error.into_compile_error());
    out.into()
}

/// On a usage error, emit a non-async stub of the function with the error, so the rest
/// of the crate still resolves the name and the user sees this one error, not a
/// cascade (such as "`main` function is not allowed to be `async`").
fn stub_with_error(mut input: ItemFn, error: syn::Error) -> TokenStream {
    input.sig.asyncness = None;
    input.sig.inputs.clear();
    input.block = syn::parse_quote!({ ::core::unimplemented!() });
    let mut out = input.into_token_stream();
    out.extend(error.into_compile_error());
    out.into()
}

fn build(mut input: ItemFn, config: Config, is_test: bool) -> TokenStream2 {
    let krate = &config.krate;
    let mut builder = match config.flavor {
        Flavor::CurrentThread | Flavor::Local => quote! { #krate::runtime::Builder::new_current_thread() },
        Flavor::MultiThread => quote! { #krate::runtime::Builder::new_multi_thread() },
    };
    let build = match config.flavor {
        Flavor::Local => quote! { build_local(::core::default::Default::default()) },
        _ => quote! { build() },
    };
    if let Some((n, span)) = config.worker_threads {
        let n = LitInt::new(&n.to_string(), span);
        builder = quote! { #builder.worker_threads(#n) };
    }
    if let Some((true, _)) = config.start_paused {
        builder = quote! { #builder.start_paused(true) };
    }
    if let Some((variant, span)) = config.unhandled_panic {
        let variant = syn::Ident::new(variant, span);
        builder = quote! { #builder.unhandled_panic(#krate::runtime::UnhandledPanic::#variant) };
    }
    if let Some(name) = &config.name {
        builder = quote! { #builder.name(#name) };
    }
    let body = &input.block;
    let output = &input.sig.output;
    let span = body.span();
    input.sig.asyncness = None;
    let body_ty = match output {
        syn::ReturnType::Default => quote! { () },
        syn::ReturnType::Type(_, ty) => quote! { #ty },
    };
    // The annotation gives `?` in the body its error type, as tokio's expansion does.
    // `!` cannot be named there on stable Rust; a diverging body needs no annotation.
    let never = matches!(output, syn::ReturnType::Type(_, ty) if matches!(**ty, syn::Type::Never(_)));
    let pinned = if never {
        quote! { let body = ::core::pin::pin!(body); }
    } else {
        quote! {
            let body: ::core::pin::Pin<&mut dyn ::core::future::Future<Output = #body_ty>> =
                ::core::pin::pin!(body);
        }
    };
    let new_body = quote_spanned! {span=>
        {
            let body = async #body;
            #pinned
            #[allow(clippy::expect_used, clippy::diverging_sub_expression, clippy::needless_return)]
            {
                return #builder
                    .enable_all()
                    .#build
                    .expect("Failed building the Runtime")
                    .block_on(body);
            }
        }
    };
    input.block = syn::parse2(new_body).expect("a block");
    let header = if is_test {
        quote! { #[::core::prelude::v1::test] }
    } else {
        quote! {}
    };
    quote! {
        #header
        #input
    }
}

/// Marks `async fn main` as the program's entry point, run on a netloop runtime
/// (multi-thread by default). Arguments as tokio's: `flavor`, `worker_threads`,
/// `start_paused`, `crate`.
#[proc_macro_attribute]
pub fn main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, false, Dialect::Netloop)
}

/// Marks an `async fn` as a test, run on a netloop runtime (current-thread by default).
/// Arguments as tokio's: `flavor`, `worker_threads`, `start_paused`, `crate`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, true, Dialect::Netloop)
}

/// `#[tokio::main]` of netloop's `tokio` crate (patch mode): as [`main`], with `tokio`
/// (resolved where the attribute is written) as the default `crate` and tokio's name in
/// its errors. Use it as `tokio::main`.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn tokio_main(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, false, Dialect::Tokio)
}

/// `#[tokio::test]` of netloop's `tokio` crate (patch mode): as [`test`], with `tokio`
/// (resolved where the attribute is written) as the default `crate` and tokio's name in
/// its errors. Use it as `tokio::test`.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn tokio_test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, true, Dialect::Tokio)
}

/// The engine of `netloop::select!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn select_internal(input: TokenStream) -> TokenStream {
    emit(select::select(input.into()))
}

/// The engine of `netloop::join!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn join_internal(input: TokenStream) -> TokenStream {
    emit(join::join(input.into(), false))
}

/// The engine of `netloop::try_join!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn try_join_internal(input: TokenStream) -> TokenStream {
    emit(join::join(input.into(), true))
}

/// An expansion, or its error as a `compile_error!`.
fn emit(expansion: syn::Result<TokenStream2>) -> TokenStream {
    expansion.unwrap_or_else(syn::Error::into_compile_error).into()
}

/// tokio's hidden `count!` (the `tokio` crate's): `count!(_ _ _)` is `3`.
#[doc(hidden)]
#[proc_macro]
pub fn tokio_count(input: TokenStream) -> TokenStream {
    emit(tokio_helpers::count(input.into()))
}

/// tokio's hidden `count_field!` (the `tokio` crate's): `count_field!(t. _ _)` is `t.2`.
#[doc(hidden)]
#[proc_macro]
pub fn tokio_count_field(input: TokenStream) -> TokenStream {
    emit(tokio_helpers::count_field(input.into()))
}

/// tokio's hidden `select_variant!` (the `tokio` crate's):
/// `select_variant!(m::Out, (_ _) (x))` is `m::Out::_2 (x)`.
#[doc(hidden)]
#[proc_macro]
pub fn tokio_select_variant(input: TokenStream) -> TokenStream {
    emit(tokio_helpers::select_variant(input.into()))
}

/// tokio's hidden `select_priv_declare_output_enum!` (the `tokio` crate's): the output
/// enum `Out` and the `Mask` type of a `select!` of as many branches as `_` given.
#[doc(hidden)]
#[proc_macro]
pub fn tokio_select_priv_declare_output_enum(input: TokenStream) -> TokenStream {
    emit(tokio_helpers::declare_output_enum(input.into()))
}

/// tokio's hidden `select_priv_clean_pattern!` (the `tokio` crate's): the pattern
/// without its `ref` and `mut` binding modifiers.
#[doc(hidden)]
#[proc_macro]
pub fn tokio_select_priv_clean_pattern(input: TokenStream) -> TokenStream {
    tokio_helpers::clean_pattern_macro(input.into()).into()
}
