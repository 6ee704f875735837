//! `RuntimeFlavor`: which kind of runtime this is.

/// Which kind of runtime this is (tokio's `RuntimeFlavor`).
///
/// Library code can ask, for instance to avoid
/// [`block_in_place`](crate::task::block_in_place), which panics on a current-thread
/// runtime:
///
/// ```
/// use netloop_scheduler::runtime::{Builder, Handle, RuntimeFlavor};
///
/// let rt = Builder::new_current_thread().build()?;
/// rt.block_on(async {
///     let flavor = Handle::current().runtime_flavor();
///     assert_eq!(flavor, RuntimeFlavor::CurrentThread);
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeFlavor {
    /// One loop, driven by the thread inside `block_on`.
    CurrentThread,
    /// A group of loops, one thread each.
    MultiThread,
}
