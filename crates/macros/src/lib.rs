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
//! | `crate = "path"` | where `netloop` is | `::netloop` |

#![deny(missing_docs)]

mod select;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, ItemFn, Lit, LitBool, LitInt, LitStr, Meta, MetaNameValue, Path, Token};

#[derive(Clone, Copy, PartialEq)]
enum Flavor {
    CurrentThread,
    MultiThread,
    /// A current-thread `LocalRuntime`: `!Send` tasks may be spawned onto it.
    Local,
}

struct Config {
    flavor: Flavor,
    worker_threads: Option<(usize, Span)>,
    start_paused: Option<(bool, Span)>,
    name: Option<LitStr>,
    krate: Path,
}

fn lit_str(expr: &Expr, name: &str) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.clone()),
        other => Err(syn::Error::new_spanned(
            other,
            format!("Failed to parse value of `{name}` as string."),
        )),
    }
}

fn parse_config(args: TokenStream2, is_test: bool) -> syn::Result<Config> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut flavor = None;
    let mut worker_threads = None;
    let mut start_paused = None;
    let mut runtime_name = None;
    let mut krate = None;
    for meta in metas {
        let Meta::NameValue(MetaNameValue { path, value, .. }) = &meta else {
            return Err(syn::Error::new_spanned(
                &meta,
                "Unknown attribute inside the macro; expected `name = value`",
            ));
        };
        let name = path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match name.as_str() {
            "flavor" => {
                let s = lit_str(value, "flavor")?;
                flavor = Some(match s.value().as_str() {
                    "current_thread" => Flavor::CurrentThread,
                    "multi_thread" => Flavor::MultiThread,
                    "local" => Flavor::Local,
                    other => {
                        return Err(syn::Error::new_spanned(
                            s,
                            format!(
                                "No such runtime flavor `{other}`. The runtime flavors are `current_thread`, `local` and `multi_thread`."
                            ),
                        ));
                    }
                });
            }
            "worker_threads" => {
                let n = match value {
                    Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<usize>()?,
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "Failed to parse value of `worker_threads` as integer.",
                        ));
                    }
                };
                if n == 0 {
                    return Err(syn::Error::new_spanned(value, "`worker_threads` may not be 0."));
                }
                worker_threads = Some((n, value.span()));
            }
            "start_paused" => {
                let b = match value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(LitBool { value, .. }),
                        ..
                    }) => *value,
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "Failed to parse value of `start_paused` as bool.",
                        ));
                    }
                };
                start_paused = Some((b, value.span()));
            }
            "crate" => {
                krate = Some(lit_str(value, "crate")?.parse::<Path>()?);
            }
            "name" => {
                runtime_name = Some(lit_str(value, "name")?);
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    path,
                    format!(
                        "Unknown attribute {} is specified; expected one of: `flavor`, `worker_threads`, `start_paused`, `crate`, `name`",
                        path.to_token_stream()
                    ),
                ));
            }
        }
    }
    let default = if is_test {
        Flavor::CurrentThread
    } else {
        Flavor::MultiThread
    };
    let flavor = flavor.unwrap_or(default);
    let macro_name = if is_test { "netloop::test" } else { "netloop::main" };
    if let (Flavor::CurrentThread | Flavor::Local, Some((_, span))) = (flavor, worker_threads) {
        return Err(syn::Error::new(
            span,
            format!(
                "The `worker_threads` option requires the `multi_thread` runtime flavor. Use `#[{macro_name}(flavor = \"multi_thread\")]`"
            ),
        ));
    }
    if let (Flavor::MultiThread, Some((true, span))) = (flavor, start_paused) {
        return Err(syn::Error::new(
            span,
            format!(
                "The `start_paused` option requires the `current_thread` runtime flavor. Use `#[{macro_name}(flavor = \"current_thread\")]`"
            ),
        ));
    }
    Ok(Config {
        flavor,
        worker_threads,
        start_paused,
        name: runtime_name,
        krate: krate.unwrap_or_else(|| syn::parse_quote!(::netloop)),
    })
}

fn expand(args: TokenStream, item: TokenStream, is_test: bool) -> TokenStream {
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
        let config = parse_config(args.into(), is_test)?;
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
    expand(args, item, false)
}

/// Marks an `async fn` as a test, run on a netloop runtime (current-thread by default).
/// Arguments as tokio's: `flavor`, `worker_threads`, `start_paused`, `crate`.
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    expand(args, item, true)
}

/// The engine of `netloop::select!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn select_internal(input: TokenStream) -> TokenStream {
    select::select(input.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The engine of `netloop::join!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn join_internal(input: TokenStream) -> TokenStream {
    select::join(input.into(), false)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The engine of `netloop::try_join!`; use that macro, not this one.
#[doc(hidden)]
#[proc_macro]
pub fn try_join_internal(input: TokenStream) -> TokenStream {
    select::join(input.into(), true)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
