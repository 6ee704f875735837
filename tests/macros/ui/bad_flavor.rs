#[netloop::main(flavor = "work_stealing")]
async fn main() {}
