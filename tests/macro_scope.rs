//! The names the macros bring into the caller's scope, and the names they keep to
//! themselves: tokio 1.54's, exactly (`docs/compatibility.md`, "Names tokio's macros
//! bring into scope"). Code written for tokio relies on them: a `select!` branch that
//! names `Pin` without importing it builds on tokio, so it must build here.
//!
//! Nothing in this file imports `Pin`. The cases that must not build (a name tokio's
//! macro does not bring) are the trybuild cases in `macros/scope_ui`.

use std::future::{pending, ready};

use netloop::{join, pin, select, try_join};

/// A constant of the caller's with the name of the one `select!` declares.
const BRANCHES: usize = 10;

/// `select!` brings `Pin` (`std::pin::Pin`) into its futures, preconditions, handlers
/// and `else` branch, as tokio's `use $crate::macros::support::Pin;` does.
#[netloop::test]
async fn select_brings_pin_into_its_branches() {
    let got = select! {
        v = async { Box::pin(1u8) as Pin<Box<u8>> }, if Option::<Pin<&mut u8>>::None.is_none() => {
            let v: Pin<Box<u8>> = v;
            *v
        }
        else => {
            let zero: Pin<Box<u8>> = Box::pin(0);
            *zero
        }
    };
    assert_eq!(got, 1);
    // A handler that pins a future by hand, as code written for tokio does.
    let mut later = Box::pin(ready(2u8));
    let got = select! {
        v = Pin::as_mut(&mut later) => Pin::new(&mut Some(v)).take().unwrap(),
    };
    assert_eq!(got, 2);
    // The `else` branch of a `select!` with branches sees it too (every branch disabled).
    let got = select! {
        _ = ready(()), if false => 0u8,
        else => *Pin::new(&3u8),
    };
    assert_eq!(got, 3);
}

/// `select!` declares `const BRANCHES: u32`, its number of branches, which shadows a
/// caller's `BRANCHES` inside it.
#[netloop::test]
async fn select_declares_branches_as_its_branch_count() {
    let n: u32 = select! {
        _ = ready(()) => BRANCHES,
        _ = pending::<()>() => BRANCHES,
        _ = pending::<()>() => BRANCHES,
    };
    assert_eq!(n, 3);
    assert_eq!(BRANCHES, 10, "outside the select! the caller's constant");
}

/// `select!` declares the module `__tokio_select_util`, with its output enum `Out` and
/// the type of its mask of disabled branches, `Mask` (`u8` up to 8 branches).
#[netloop::test]
async fn select_declares_its_util_module() {
    let got = select! {
        v = ready(4u8) => {
            let mask: __tokio_select_util::Mask = 0b1;
            let out: __tokio_select_util::Out<u8> = __tokio_select_util::Out::_0(v);
            match out {
                __tokio_select_util::Out::_0(v) => v + mask,
                __tokio_select_util::Out::Disabled => 0,
            }
        }
    };
    assert_eq!(got, 5);
}

/// The locals of `select!`'s expansion are hygienic: the caller's variables of the same
/// names (tokio's, and netloop's own) are the ones its branches see.
#[netloop::test]
#[allow(clippy::too_many_lines)]
async fn select_keeps_its_locals_to_itself() {
    let output = "output";
    let futures = "futures";
    let futures_init = "futures_init";
    let disabled = "disabled";
    let start = "start";
    let mask = "mask";
    let out = "out";
    let fut = "fut";
    let is_pending = "is_pending";
    let branch = "branch";
    let cx = "cx";
    let i = "i";
    let __select_output = "__select_output";
    let __select_disabled = "__select_disabled";
    let __select_futs = "__select_futs";
    let __select_init = "__select_init";
    let __select_mask = "__select_mask";
    let __select_cx = "__select_cx";
    let __select_out = "__select_out";
    let __select_start = "__select_start";
    let __select_pending = "__select_pending";
    let __select_i = "__select_i";
    let __select_branch = "__select_branch";
    let __select_proj = "__select_proj";
    let seen = select! {
        v = ready([output, futures, futures_init, disabled, start, mask]), if cx == "cx" => {
            [
                v.join(" "),
                [out, fut, is_pending, branch, cx, i].join(" "),
                [__select_output, __select_disabled, __select_futs, __select_init].join(" "),
                [__select_mask, __select_cx, __select_out, __select_start].join(" "),
                [__select_pending, __select_i, __select_branch, __select_proj].join(" "),
            ]
            .join(" ")
        }
        _ = pending::<()>() => String::new(),
    };
    assert_eq!(
        seen,
        "output futures futures_init disabled start mask out fut is_pending branch cx i \
         __select_output __select_disabled __select_futs __select_init __select_mask \
         __select_cx __select_out __select_start __select_pending __select_i \
         __select_branch __select_proj"
    );
}

/// `join!` and `try_join!` bring nothing into scope, and their locals are hygienic.
#[netloop::test]
async fn join_and_try_join_keep_their_locals_to_themselves() {
    let futures = 1u8;
    let rotator = 2u8;
    let skip = 3u8;
    let to_run = 4u8;
    let is_pending = 5u8;
    let fut = 6u8;
    let cx = 7u8;
    let __join = 8u8;
    let __join_all = 9u8;
    let __join_cx = 10u8;
    let __join_rotator = 11u8;
    let __join_done = 12u8;
    let __join_start = 13u8;
    let __join_i = 14u8;
    let __join_index = 15u8;
    let __join_new = 16u8;
    let (a, b, c) = join!(
        ready([futures, rotator, skip, to_run, is_pending, fut, cx]),
        ready([__join, __join_all, __join_cx, __join_rotator, __join_done]),
        ready([__join_start, __join_i, __join_index, __join_new]),
    );
    assert_eq!(a, [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(b, [8, 9, 10, 11, 12]);
    assert_eq!(c, [13, 14, 15, 16]);
    let r: Result<_, ()> = try_join!(
        ready(Ok([futures, rotator, skip, to_run, is_pending, fut, cx])),
        ready(Ok([__join, __join_all, __join_cx, __join_rotator, __join_done])),
        ready(Ok([__join_start, __join_i, __join_index, __join_new])),
    );
    assert_eq!(r, Ok((a, b, c)));
}

/// `pin!` brings in exactly the variables it pins, each now a `Pin<&mut T>` (and not
/// `Pin` itself).
#[netloop::test]
async fn pin_brings_only_the_pinned_variables() {
    let first = ready(1u8);
    let second = ready(2u8);
    pin!(first, second);
    pin! {
        let third = ready(3u8);
    }
    let first: std::pin::Pin<&mut std::future::Ready<u8>> = first;
    let third: std::pin::Pin<&mut std::future::Ready<u8>> = third;
    assert_eq!((first.await, second.await, third.await), (1, 2, 3));
}

mod keys {
    netloop::task_local! {
        /// A documented key.
        pub static REQUEST: u32;
        pub(crate) static NAME: &'static str;
    }
}

/// `task_local!` brings in the statics it declares, with their visibility and
/// attributes, and nothing else.
#[netloop::test]
async fn task_local_brings_only_its_statics() {
    let got = keys::REQUEST
        .scope(
            7,
            keys::NAME.scope("seven", async { (keys::REQUEST.get(), keys::NAME.get()) }),
        )
        .await;
    assert_eq!(got, (7, "seven"));
}

/// The attributes' default `crate` path is the name `netloop` resolved where the
/// attribute is written, as tokio's `tokio` is: a `netloop` of the caller's module (a
/// `use other as netloop;`, a module) is the one the expansion uses, not the extern
/// crate.
mod default_crate_path_resolves_at_the_call_site {
    /// Stands for the crate here: everything is `::netloop`'s, except a
    /// `runtime::Builder` that names the runtime it builds.
    mod netloop {
        pub use ::netloop::*;

        pub mod runtime {
            /// Builds runtimes named "local path".
            pub struct Builder;

            impl Builder {
                pub fn new_current_thread() -> ::netloop::runtime::Builder {
                    let mut builder = ::netloop::runtime::Builder::new_current_thread();
                    builder.name("local path");
                    builder
                }
            }
        }
    }

    #[netloop::test]
    async fn test_attribute() {
        assert_eq!(::netloop::runtime::Handle::current().name(), Some("local path"));
    }

    #[test]
    fn main_attribute() {
        #[netloop::main(flavor = "current_thread")]
        async fn main() -> Option<String> {
            ::netloop::runtime::Handle::current().name().map(str::to_owned)
        }
        assert_eq!(main().as_deref(), Some("local path"));
    }
}

/// The names a macro does not bring into scope (tokio's do not either) are not there:
/// each case fails to build.
#[test]
fn names_the_macros_do_not_bring_are_not_in_scope() {
    let t = trybuild::TestCases::new();
    t.compile_fail("macros/scope_ui/*.rs");
}
