#[netloop::main]
async fn main(_args: Vec<String>) {}
