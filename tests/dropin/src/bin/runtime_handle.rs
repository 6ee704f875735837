//! A runtime built by hand with `Builder`, driven from plain threads: `block_on`,
//! `Handle`, `enter`, `spawn` from outside, `shutdown_timeout`.

use std::thread;
use std::time::Duration;

use netloop_dropin::rt;
use rt::runtime::{Builder, Handle};

fn main() {
    let runtime = Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("dropin-worker")
        .enable_all()
        .build()
        .expect("build the runtime");

    // Tasks run on the runtime's named threads.
    let name = runtime.block_on(async {
        rt::spawn(async { thread::current().name().unwrap_or_default().to_owned() })
            .await
            .unwrap()
    });
    assert!(name.starts_with("dropin-worker"), "a task ran on {name:?}");

    // A handle drives the runtime from another thread, and `Handle::current` works inside.
    let handle = runtime.handle().clone();
    let doubled = thread::spawn(move || {
        handle.block_on(async {
            let inner = Handle::current();
            inner.spawn(async { 21 * 2 }).await.unwrap()
        })
    })
    .join()
    .unwrap();
    assert_eq!(doubled, 42);

    // Outside async code: `enter` makes `rt::spawn` find the runtime.
    let task = {
        let _guard = runtime.enter();
        rt::spawn(async {
            rt::time::sleep(Duration::from_millis(5)).await;
            "spawned outside"
        })
    };
    assert_eq!(runtime.block_on(task).unwrap(), "spawned outside");
    let blocking = runtime.spawn_blocking(|| 6 * 7);
    assert_eq!(runtime.block_on(blocking).unwrap(), 42);

    // A task still sleeping at shutdown is dropped, and shutdown does not wait for it.
    runtime.spawn(async { rt::time::sleep(Duration::from_secs(60)).await });
    let start = std::time::Instant::now();
    runtime.shutdown_timeout(Duration::from_secs(1));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(1), "shutdown took {took:?}");

    println!("runtime_handle: ok on {}: worker {name:?}", netloop_dropin::RUNTIME);
}
