// What `select!` brings is inside it only: after it, `Pin`, `BRANCHES` and
// `__tokio_select_util` are not there.
async fn after() {
    netloop::select! {
        _ = std::future::ready(()) => {}
    }
    let _: Option<Pin<&mut u8>> = None;
    let _: u32 = BRANCHES;
    let _: Option<__tokio_select_util::Mask> = None;
}

fn main() {
    drop(after());
}
