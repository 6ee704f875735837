//! The arguments of `#[netloop::main]` and `#[netloop::test]`, checked as tokio checks
//! them, with tokio's error messages.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitBool, LitStr, Meta, MetaNameValue, Path, Token};

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Flavor {
    CurrentThread,
    MultiThread,
    /// A current-thread `LocalRuntime`: `!Send` tasks may be spawned onto it.
    Local,
}

/// Which crate the attribute was invoked through: its name in error messages and the
/// default of the `crate` argument.
#[derive(Clone, Copy)]
pub(crate) enum Dialect {
    /// `#[netloop::main]`, `#[netloop::test]`: expands to `netloop::` paths.
    Netloop,
    /// `#[tokio::main]`, `#[tokio::test]` through netloop's `tokio` crate (patch mode):
    /// expands to `tokio::` paths, which are netloop's there.
    Tokio,
}

impl Dialect {
    fn crate_name(self) -> &'static str {
        match self {
            Dialect::Netloop => "netloop",
            Dialect::Tokio => "tokio",
        }
    }
}

pub(crate) struct Config {
    pub(crate) flavor: Flavor,
    pub(crate) worker_threads: Option<(usize, Span)>,
    pub(crate) start_paused: Option<(bool, Span)>,
    pub(crate) name: Option<LitStr>,
    pub(crate) krate: Path,
    /// `unhandled_panic = "ignore" | "shutdown_runtime"`: the variant's name. Expanded
    /// to the builder's `unhandled_panic` call, as tokio expands it (where it needs
    /// `tokio_unstable`).
    pub(crate) unhandled_panic: Option<(&'static str, Span)>,
}

/// The arguments as given, each checked on its own.
#[derive(Default)]
struct Args {
    flavor: Option<Flavor>,
    worker_threads: Option<(usize, Span)>,
    start_paused: Option<(bool, Span)>,
    name: Option<LitStr>,
    krate: Option<Path>,
    unhandled_panic: Option<(&'static str, Span)>,
}

/// Parses and checks the attribute's arguments; `is_test` for `#[netloop::test]`.
pub(crate) fn parse_config(args: TokenStream, is_test: bool, dialect: Dialect) -> syn::Result<Config> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut args = Args::default();
    for meta in metas {
        let Meta::NameValue(MetaNameValue { path, value, .. }) = &meta else {
            return Err(syn::Error::new_spanned(
                &meta,
                "Unknown attribute inside the macro; expected `name = value`",
            ));
        };
        args.set(path, value)?;
    }
    let default = if is_test {
        Flavor::CurrentThread
    } else {
        Flavor::MultiThread
    };
    let flavor = args.flavor.unwrap_or(default);
    check_flavor_options(flavor, &args, is_test, dialect)?;
    Ok(Config {
        flavor,
        worker_threads: args.worker_threads,
        start_paused: args.start_paused,
        name: args.name,
        unhandled_panic: args.unhandled_panic,
        // The crate's name, resolved where the attribute is written, as tokio's `tokio`
        // is: a `use other as tokio;` or a module of that name in the caller's scope is
        // the crate the expansion uses (not necessarily the extern crate).
        krate: args.krate.unwrap_or_else(|| {
            let name = syn::Ident::new(dialect.crate_name(), Span::call_site());
            Path::from(name)
        }),
    })
}

impl Args {
    /// Records the argument `path = value`.
    fn set(&mut self, path: &Path, value: &Expr) -> syn::Result<()> {
        let name = path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match name.as_str() {
            "flavor" => self.flavor = Some(parse_flavor(value)?),
            "worker_threads" => self.worker_threads = Some((parse_worker_threads(value)?, value.span())),
            "start_paused" => self.start_paused = Some((parse_start_paused(value)?, value.span())),
            "crate" => self.krate = Some(lit_str(value, "crate")?.parse::<Path>()?),
            "name" => self.name = Some(lit_str(value, "name")?),
            "unhandled_panic" => {
                if self.unhandled_panic.is_some() {
                    return Err(syn::Error::new(value.span(), "`unhandled_panic` set multiple times."));
                }
                self.unhandled_panic = Some((parse_unhandled_panic(value)?, value.span()));
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    path,
                    format!(
                        "Unknown attribute {} is specified; expected one of: `flavor`, `worker_threads`, `start_paused`, `crate`, `unhandled_panic`, `name`.",
                        path.to_token_stream()
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn parse_flavor(value: &Expr) -> syn::Result<Flavor> {
    let s = lit_str(value, "flavor")?;
    match s.value().as_str() {
        "current_thread" => Ok(Flavor::CurrentThread),
        "multi_thread" => Ok(Flavor::MultiThread),
        "local" => Ok(Flavor::Local),
        "single_thread" => Err(syn::Error::new_spanned(
            s,
            "The single threaded runtime flavor is called `current_thread`.",
        )),
        "basic_scheduler" => Err(syn::Error::new_spanned(
            s,
            "The `basic_scheduler` runtime flavor has been renamed to `current_thread`.",
        )),
        "threaded_scheduler" => Err(syn::Error::new_spanned(
            s,
            "The `threaded_scheduler` runtime flavor has been renamed to `multi_thread`.",
        )),
        other => Err(syn::Error::new_spanned(
            s,
            format!(
                "No such runtime flavor `{other}`. The runtime flavors are `current_thread`, `local`, and `multi_thread`."
            ),
        )),
    }
}

/// The `UnhandledPanic` variant an `unhandled_panic` value names.
fn parse_unhandled_panic(value: &Expr) -> syn::Result<&'static str> {
    let s = lit_str(value, "unhandled_panic")?;
    match s.value().as_str() {
        "ignore" => Ok("Ignore"),
        "shutdown_runtime" => Ok("ShutdownRuntime"),
        other => Err(syn::Error::new_spanned(
            s,
            format!(
                "No such unhandled panic behavior `{other}`. The unhandled panic behaviors are `ignore` and `shutdown_runtime`."
            ),
        )),
    }
}

fn parse_worker_threads(value: &Expr) -> syn::Result<usize> {
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
    Ok(n)
}

fn parse_start_paused(value: &Expr) -> syn::Result<bool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(LitBool { value, .. }),
            ..
        }) => Ok(*value),
        other => Err(syn::Error::new_spanned(
            other,
            "Failed to parse value of `start_paused` as bool.",
        )),
    }
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

/// The options that only one flavor takes: `worker_threads` (multi_thread) and a true
/// `start_paused` (current_thread).
fn check_flavor_options(flavor: Flavor, args: &Args, is_test: bool, dialect: Dialect) -> syn::Result<()> {
    let macro_name = format!("{}::{}", dialect.crate_name(), if is_test { "test" } else { "main" });
    if let (Flavor::CurrentThread | Flavor::Local, Some((_, span))) = (flavor, args.worker_threads) {
        return Err(syn::Error::new(
            span,
            format!(
                "The `worker_threads` option requires the `multi_thread` runtime flavor. Use `#[{macro_name}(flavor = \"multi_thread\")]`"
            ),
        ));
    }
    if let (Flavor::MultiThread, Some((_, span))) = (flavor, args.unhandled_panic) {
        return Err(syn::Error::new(
            span,
            format!(
                "The `unhandled_panic` option requires the `current_thread` runtime flavor. Use `#[{macro_name}(flavor = \"current_thread\")]`"
            ),
        ));
    }
    if let (Flavor::MultiThread, Some((true, span))) = (flavor, args.start_paused) {
        return Err(syn::Error::new(
            span,
            format!(
                "The `start_paused` option requires the `current_thread` runtime flavor. Use `#[{macro_name}(flavor = \"current_thread\")]`"
            ),
        ));
    }
    Ok(())
}
