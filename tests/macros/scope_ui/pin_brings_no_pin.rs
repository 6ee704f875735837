// `pin!` brings in the variables it pins, not `Pin`.
fn main() {
    let fut = std::future::ready(1u8);
    netloop::pin!(fut);
    let _: Pin<&mut std::future::Ready<u8>> = fut;
}
