// The body of `#[netloop::main]` sees what the function's body would see, nothing of
// the expansion: no `Builder`, no `Pin`, no `body`. (`#[netloop::test]` wraps its body
// the same way; trybuild builds without `--test`, where a test function is not built.)
#[netloop::main]
async fn main() {
    let _: Option<Builder> = None;
    let _: Option<Pin<&mut u8>> = None;
    let _ = &body;
}
