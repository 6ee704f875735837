#[netloop::test]
fn not_async() {}

fn main() {}
