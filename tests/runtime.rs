//! The runtime, spawned from outside and inside.

use std::time::Duration;

#[test]
fn block_on_spawn_and_sleep() {
    let rt = netloop::runtime::Runtime::new().unwrap();
    let v = rt.block_on(async {
        let h = netloop::spawn(async {
            netloop::time::sleep(Duration::from_millis(5)).await;
            7
        });
        h.await.unwrap()
    });
    assert_eq!(v, 7);
}
