#[netloop::test(flavour = "multi_thread")]
async fn typo() {}

fn main() {}
