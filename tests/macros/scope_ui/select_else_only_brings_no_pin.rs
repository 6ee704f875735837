// A `select!` with only an `else` branch is that branch, and nothing more (tokio's
// expands to `{ $else }`): no `Pin`.
async fn only_else() -> u8 {
    netloop::select! {
        else => {
            let none: Option<Pin<&mut u8>> = None;
            u8::from(none.is_none())
        }
    }
}

fn main() {
    drop(only_else());
}
