//! Patch mode: code written for tokio, built against this crate as `tokio`, relies on
//! the names tokio's macros bring into its scope and on the paths their expansions
//! name (`tokio::macros::support`). Nothing here imports `Pin`.

use std::future::{pending, ready};

/// `tokio::select!` brings `Pin` into its branches (tokio's expansion has
/// `use $crate::macros::support::Pin;`), and `BRANCHES` and `__tokio_select_util`.
#[tokio::test]
async fn select_brings_pin_branches_and_its_util_module() {
    let mut later = Box::pin(ready(1u8));
    let got = tokio::select! {
        v = Pin::as_mut(&mut later), if Option::<Pin<&mut u8>>::None.is_none() => {
            let mask: __tokio_select_util::Mask = 0;
            let boxed: Pin<Box<u8>> = Box::pin(v + mask);
            (*boxed, BRANCHES)
        }
        _ = pending::<()>() => (0, BRANCHES),
        else => (0, 0),
    };
    assert_eq!(got, (1, 2));
}

/// `tokio::macros::support`, which code names (`use tokio::macros::support::{Pin,
/// Poll};`), has every item of tokio's.
#[tokio::test]
async fn macros_support_has_tokios_items() {
    use std::task::Waker;
    use tokio::macros::support::{
        BiasedRotator, Context, Future, IntoFuture, Pin, Poll, Result, Rotator, RotatorSelect, SelectBiased,
        SelectNormal, maybe_done, poll_budget_available, poll_fn, ready, thread_rng_n,
    };

    let mut done = std::pin::pin!(maybe_done(async { 7u8 }));
    poll_fn(|cx| Future::poll(done.as_mut(), cx)).await;
    *done.as_mut().output_mut().unwrap() += 1;
    assert_eq!(done.as_mut().take_output(), Some(8));
    assert_eq!(done.as_mut().take_output(), None);

    let mut normal = <SelectNormal as RotatorSelect>::Rotator::<3>::default();
    let skips: Vec<u32> = (0..4).map(|_| normal.num_skip()).collect();
    assert_eq!(skips, [0, 1, 2, 0]);
    let mut biased = <SelectBiased as RotatorSelect>::Rotator::<3>::default();
    assert_eq!((biased.num_skip(), biased.num_skip()), (0, 0));
    let _: Rotator<2> = Rotator::default();
    let _: BiasedRotator = BiasedRotator::default();

    assert!(thread_rng_n(5) < 5);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(poll_budget_available(&mut cx).is_ready());
    let ok: Result<u8, ()> = Ok(1);
    let polled: Poll<u8> = poll_fn(|_| Poll::Ready(ready!(Poll::Ready(2u8)))).await.into();
    assert_eq!((ok, polled), (Ok(1), Poll::Ready(2)));
    let unit: Pin<&mut _> = std::pin::pin!(IntoFuture::into_future(ready(())));
    unit.await;
}

/// `#[tokio::test]` and `#[tokio::main]` name `tokio` where they are written, as
/// tokio's do: a `tokio` of the caller's module (`use other as tokio;`, a module) is the
/// crate the expansion uses.
mod default_crate_path_resolves_at_the_call_site {
    /// Stands for the crate here: everything is `::tokio`'s, except a
    /// `runtime::Builder` that names the runtime it builds.
    mod tokio {
        pub use ::tokio::*;

        pub mod runtime {
            /// Builds runtimes named "local path".
            pub struct Builder;

            impl Builder {
                pub fn new_current_thread() -> ::tokio::runtime::Builder {
                    let mut builder = ::tokio::runtime::Builder::new_current_thread();
                    builder.name("local path");
                    builder
                }
            }
        }
    }

    #[tokio::test]
    async fn test_attribute() {
        assert_eq!(::tokio::runtime::Handle::current().name(), Some("local path"));
    }

    #[test]
    fn main_attribute() {
        #[tokio::main(flavor = "current_thread")]
        async fn main() -> Option<String> {
            ::tokio::runtime::Handle::current().name().map(str::to_owned)
        }
        assert_eq!(main().as_deref(), Some("local path"));
    }
}

/// tokio's hidden crate-root helper macros, which its `select!` and `task_local!`
/// expand to, are names tokio exports: code names them (`use tokio::select_variant;`).
#[test]
fn tokios_hidden_helper_macros_resolve() {
    #[allow(unused_imports)]
    use tokio::select_variant;

    const THREE: u32 = tokio::count!(_ _ _);
    assert_eq!(THREE, 3);
    assert!(matches!(3u32, tokio::count!(_ _ _)));
    let tuple = ("a", "b", "c");
    assert_eq!(tokio::count_field!(tuple. _ _), "c");

    mod util {
        tokio::select_priv_declare_output_enum!((_ _));
    }
    let mask: util::Mask = u8::MAX;
    let out: util::Out<u8, u16> = tokio::select_variant!(util::Out, (_)(7));
    match out {
        util::Out::_1(v) => assert_eq!((v, mask), (7, u8::MAX)),
        util::Out::_0(_) | util::Out::Disabled => unreachable!(),
    }

    let value = Some(5u8);
    match &value {
        tokio::select_priv_clean_pattern!(Some(ref mut v)) => assert_eq!(*v, 5),
        None => unreachable!(),
    }

    tokio::__task_local_inner!(pub(crate) KEY, u8);
    assert_eq!(KEY.sync_scope(9, || KEY.get()), 9);
}
