// `join!` and `try_join!` bring no name into scope: not `Pin`, not their own types.
async fn joins() {
    let _ = netloop::join!(async {
        let _: Option<Pin<&mut u8>> = None;
    });
    let _: Result<((),), ()> = netloop::try_join!(async {
        let _: Option<Pin<&mut u8>> = None;
        Ok(())
    });
    let _ = netloop::join!(std::future::ready(Option::<__NetloopJoin<u8>>::None));
}

fn main() {
    drop(joins());
}
