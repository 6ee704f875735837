#[netloop::main(flavor = "basic_scheduler")]
async fn main() {}

#[netloop::test(flavor = "threaded_scheduler")]
async fn renamed() {}
