//! `#[netloop::main]` and `#[netloop::test]`, used as tokio users use them; misuse is
//! checked by the trybuild cases in `macros/ui`.

use std::time::Duration;

#[netloop::test]
async fn test_defaults_to_current_thread() {
    assert_eq!(
        netloop::runtime::Handle::current().runtime_flavor(),
        netloop::runtime::RuntimeFlavor::CurrentThread
    );
}

#[netloop::test(flavor = "multi_thread", worker_threads = 3)]
async fn multi_thread_with_workers() {
    let h = netloop::runtime::Handle::current();
    assert_eq!(h.runtime_flavor(), netloop::runtime::RuntimeFlavor::MultiThread);
    assert_eq!(h.event_loops().len(), 3);
}

#[netloop::test]
async fn result_returning_test_with_question_mark() -> Result<(), Box<dyn std::error::Error>> {
    let n: u32 = "42".parse()?;
    assert_eq!(n, 42);
    Ok(())
}

#[netloop::test(start_paused = true)]
async fn start_paused_makes_long_sleeps_instant() {
    let real = std::time::Instant::now();
    netloop::time::sleep(Duration::from_secs(3600)).await;
    assert!(real.elapsed() < Duration::from_secs(5));
}

#[netloop::test(crate = "netloop")]
async fn crate_path_argument() {}

mod renamed {
    pub use netloop as rt;
}

#[netloop::test(crate = "crate::renamed::rt")]
async fn crate_path_through_a_module() {
    renamed::rt::task::yield_now().await;
}

#[test]
fn misuse_is_a_clear_compile_error() {
    let t = trybuild::TestCases::new();
    t.compile_fail("macros/ui/*.rs");
}

#[netloop::test(name = "a named test runtime")]
async fn the_name_argument_names_the_runtime() {
    assert_eq!(netloop::runtime::Handle::current().name(), Some("a named test runtime"));
}

/// A diverging `main` compiles (tokio issue 4175's shape); it is not run here.
#[netloop::main]
#[allow(dead_code)]
async fn diverging_main() -> ! {
    loop {
        netloop::task::yield_now().await;
    }
}

#[test]
fn a_diverging_main_is_an_ordinary_fn_returning_never() {
    let _: fn() -> ! = diverging_main;
}
