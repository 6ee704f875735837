//! # tokio, made of netloop
//!
//! This crate is netloop under tokio's name: package `tokio`, a version above every
//! tokio 1.x release, tokio's module layout and API, netloop's event loops underneath.
//! It exists for one line in an application's `Cargo.toml`:
//!
//! ```toml
//! [patch.crates-io]
//! tokio = { path = "path/to/netloop/crates/tokio" }
//! ```
//!
//! With it, every crate of the dependency graph that depends on tokio 1.x (tokio-util,
//! hyper-util, tower, axum, reqwest, database drivers...) builds against this crate, with
//! no source change, and the graph holds no other tokio (`cargo tree -i tokio` lists this
//! crate alone). All of them share one runtime and one clock, and each socket is driven
//! by the loop of the task that uses it. See `docs/patch-mode.md` in netloop's
//! repository.
//!
//! What is netloop's own here is everything: the runtime, tasks, timers, sockets, `io`,
//! `sync`, `fs`, `process`, `signal` and the macros. Every tokio feature name is
//! accepted; netloop builds every part whatever the features say, except the paused
//! clock, which `test-util` adds as in tokio, and task dumps, which `taskdump` adds with
//! `--cfg tokio_unstable`, also as in tokio. With that flag (set through `RUSTFLAGS`)
//! the crate has tokio's unstable API: `task::Builder`, the runtime's task hooks,
//! `UnhandledPanic`, the unstable metrics; without it none of that is built.
//!
//! netloop's own API (placing a task on a given loop, the group of loops, `serve`, the
//! loops' metrics) is under [`netloop`]:
//!
//! ```
//! #[tokio::main(worker_threads = 2)]
//! async fn main() {
//!     let loops = tokio::netloop::runtime::Handle::current().event_loops().len();
//!     assert_eq!(loops, 2);
//!     let second = tokio::netloop::runtime::Handle::current().event_loops().get(1).unwrap().clone();
//!     let on_second = tokio::netloop::task::spawn_on(&second, async {
//!         tokio::netloop::runtime::worker_index()
//!     });
//!     assert_eq!(on_second.await.unwrap(), Some(1));
//! }
//! ```
//!
//! The cycle rule: nothing this crate builds depends on a `tokio` crate, since in a
//! patched graph that name is this crate. netloop's features that bridge to the
//! registry's tokio (`tokio-io`, `tokio-compat`, `hyper`) are off here, and have no use
//! in a graph where tokio is netloop.

#![deny(missing_docs)]

pub use netloop::{fs, io, net, process, runtime, signal, spawn, sync, task, time};
pub use netloop::{join, pin, select, task_local, try_join};

/// What tokio's macros expand to, public (and hidden) under the same path as tokio's,
/// for code that names it: `tokio::macros::support`.
#[doc(hidden)]
pub use netloop::macros;

// tokio's hidden crate-root helper macros, which its `select!` and `task_local!` expand
// to: names tokio exports, which code may name (`use tokio::select_variant;`).
#[doc(hidden)]
pub use netloop_macros::{
    tokio_count as count, tokio_count_field as count_field,
    tokio_select_priv_clean_pattern as select_priv_clean_pattern,
    tokio_select_priv_declare_output_enum as select_priv_declare_output_enum, tokio_select_variant as select_variant,
};

/// tokio's hidden `__task_local_inner!`: one task-local key, `$vis $name, $t`.
#[doc(hidden)]
#[macro_export]
macro_rules! __task_local_inner {
    ($(#[$attr:meta])* $vis:vis $name:ident, $t:ty) => {
        $crate::task_local! {
            $(#[$attr])*
            $vis static $name: $t;
        }
    };
}

/// Marks `async fn main` as the program's entry point, run on a netloop runtime
/// (multi-thread by default), with tokio's arguments (`flavor`, `worker_threads`,
/// `start_paused`, `crate`, `name`) and errors.
pub use netloop_macros::tokio_main as main;

/// Marks an `async fn` as a test, run on a netloop runtime (current-thread by default),
/// with tokio's arguments (`flavor`, `worker_threads`, `start_paused`, `crate`, `name`)
/// and errors.
pub use netloop_macros::tokio_test as test;

/// Empty, as tokio's: tokio 1.x's stream utilities are in the `tokio-stream` crate
/// (which builds on this crate in a patched graph), since `Stream` is not in `std`.
pub mod stream {}

/// netloop's own API, beyond tokio's: placing a task on a given loop
/// (`netloop::task::spawn_on`), the group of loops (`netloop::event_loop`), `serve`, the
/// loops' metrics. The same crate as `tokio` itself, under its own name.
pub use netloop;
