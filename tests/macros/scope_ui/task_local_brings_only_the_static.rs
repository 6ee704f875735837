// `task_local!` brings in its static only; the thread-local behind it is not nameable.
netloop::task_local! {
    static KEY: u8;
}

fn main() {
    let _ = &KEY;
    SLOT.with(|_| ());
    __KEY.with(|_| ());
}
