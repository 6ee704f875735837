#[netloop::main(unhandled_panic = "shutdown_runtime")]
async fn main() {}

#[netloop::test(unhandled_panic = "abort")]
async fn unknown_behaviour() {}
