//! Task dumps (tokio's unstable `runtime::dump`, `Handle::dump`, with the `taskdump`
//! feature): each task's id and the stack of futures it waits in.
//!
//! How netloop takes one. Every task spawned onto a runtime's loops has an entry in
//! the runtime's `Tracer`. `Handle::dump` marks each entry whose task is not being
//! polled at that moment and wakes the task (a spurious wake-up, which every future
//! tolerates); the task's next poll, on its own loop, is a traced one: every leaf it
//! reaches (a sleep, `yield_now`, a channel, a lock, a socket, a `JoinHandle`) records
//! the stack above it and returns `Pending`, and the task is woken again to be polled
//! for real. The dump is complete once every marked task has been traced or has ended.
//!
//! What differs from tokio's: tokio traces every task at once, from the worker, while
//! the runtime stands still; netloop traces each task at its next poll, so the traces
//! of two tasks may be taken at slightly different moments. A task that is being
//! polled when the dump starts (one blocked in `block_in_place`, or the task awaiting
//! the dump) is left out, as tokio leaves it out; so are the tasks of a `LocalSet` or
//! a `LocalRuntime`, and blocking tasks. A task whose loop cannot poll it (a `!Send`
//! task of a loop whose thread blocks in place) holds the dump back until it can.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

pub use netloop_reactor::trace::{Root, TraceMeta, trace_with};

use crate::sync::lock;
use crate::task::id::Id;

/// A snapshot of a runtime's tasks (tokio's `runtime::Dump`), from
/// [`Handle::dump`](super::Handle::dump).
#[derive(Debug)]
pub struct Dump {
    tasks: Tasks,
}

impl Dump {
    /// The tasks of the dump.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }
}

/// The tasks of a [`Dump`].
#[derive(Debug)]
pub struct Tasks {
    tasks: Vec<Task>,
}

impl Tasks {
    /// Each task of the dump, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter()
    }
}

/// One task of a [`Dump`]: its id and its trace.
#[derive(Debug)]
pub struct Task {
    id: Id,
    trace: Trace,
}

impl Task {
    /// The task's id.
    pub fn id(&self) -> Id {
        self.id
    }

    /// The stacks of futures the task waited in when it was traced.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }
}

/// The stacks of futures a task (or a future under [`Trace::capture`]) waited in:
/// one backtrace per leaf reached, from the leaf up to the root (the task, or the
/// innermost [`Trace::root`]). Its `Display` is a tree of the frames' functions, each
/// with its file, line and column.
#[derive(Clone)]
pub struct Trace {
    backtraces: Vec<Vec<backtrace::BacktraceFrame>>,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("backtraces", &self.backtraces.len())
            .finish()
    }
}

impl Trace {
    /// Runs `f` (typically a future's `poll`) as a trace: each leaf the poll reaches
    /// records its stack and returns `Pending` (see [`trace_with`]).
    pub fn capture<F, R>(f: F) -> (R, Trace)
    where
        F: FnOnce() -> R,
    {
        let mut trace = Trace { backtraces: Vec::new() };
        let out = trace_with(f, |meta| trace.backtraces.push(frames_between(meta)));
        (out, trace)
    }

    /// Marks `future` as the root of the traces taken inside it: their frames end at
    /// its poll.
    pub fn root<F: Future>(future: F) -> Root<F> {
        Root::new(future)
    }

    /// The backtraces, their symbols resolved (names, files, lines).
    pub fn resolve_backtraces(&self) -> Vec<Backtrace> {
        self.backtraces
            .iter()
            .map(|frames| {
                let mut resolved = backtrace::Backtrace::from(frames.clone());
                resolved.resolve();
                Backtrace {
                    frames: resolved.frames().iter().map(BacktraceFrame::new).collect(),
                }
            })
            .collect()
    }
}

/// Polls a task's future as the root of the traces taken in it: a trace's frames end
/// below this function (whose frame it recognises by its address), so they are the
/// task's own futures.
#[inline(never)]
pub(crate) fn poll_root<F: Future>(future: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
    let _root = netloop_reactor::trace::enter_root(poll_root::<F> as *const std::ffi::c_void);
    future.poll(cx)
}

/// The frames between the leaf that reported `meta` and its root; none without a root
/// (as tokio: a trace outside any root has no bound).
#[inline(never)]
fn frames_between(meta: &TraceMeta) -> Vec<backtrace::BacktraceFrame> {
    let mut frames = Vec::new();
    let Some(root) = meta.root_addr else {
        return frames;
    };
    let mut above_leaf = false;
    backtrace::trace(|frame| {
        let at_root = std::ptr::eq(frame.symbol_address(), root);
        if above_leaf && !at_root {
            frames.push(backtrace::BacktraceFrame::from(frame.clone()));
        }
        if std::ptr::eq(frame.symbol_address(), meta.trace_leaf_addr) {
            above_leaf = true;
        }
        !at_root
    });
    frames
}

impl fmt::Display for Trace {
    /// A tree: the root's callee first, each leaf's stack below the frames it shares
    /// with the others.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut tree = Node::default();
        for backtrace in self.resolve_backtraces() {
            let mut node = &mut tree;
            // Outermost first: the frames nearest the root.
            for frame in backtrace.frames.iter().rev() {
                for symbol in frame.symbols.iter().rev() {
                    let line = symbol.to_string();
                    let at = match node.children.iter().position(|(l, _)| *l == line) {
                        Some(at) => at,
                        None => {
                            node.children.push((line, Node::default()));
                            node.children.len() - 1
                        }
                    };
                    node = &mut node.children[at].1;
                }
            }
        }
        tree.write(f, "")
    }
}

/// A frame of the tree that `Trace`'s `Display` prints, with the frames below it.
#[derive(Default)]
struct Node {
    children: Vec<(String, Node)>,
}

impl Node {
    fn write(&self, f: &mut fmt::Formatter<'_>, indent: &str) -> fmt::Result {
        let last = self.children.len().saturating_sub(1);
        for (i, (line, child)) in self.children.iter().enumerate() {
            let (branch, next) = if i == last {
                ("└╼ ", "   ")
            } else {
                ("├╼ ", "│  ")
            };
            writeln!(f, "{indent}{branch}{line}")?;
            child.write(f, &format!("{indent}{next}"))?;
        }
        Ok(())
    }
}

/// A resolved backtrace of a [`Trace`].
#[derive(Clone, Debug)]
pub struct Backtrace {
    frames: Box<[BacktraceFrame]>,
}

impl Backtrace {
    /// The frames, innermost (the leaf's caller) first.
    pub fn frames(&self) -> impl Iterator<Item = &BacktraceFrame> {
        self.frames.iter()
    }
}

/// An address, only ever printed or compared.
#[derive(Clone, Copy, Debug)]
struct Address(*mut std::ffi::c_void);

// SAFETY: the pointer is never dereferenced; it is an address to print or compare.
unsafe impl Send for Address {}
// SAFETY: as above.
unsafe impl Sync for Address {}

/// A frame of a resolved [`Backtrace`].
#[derive(Clone, Debug)]
pub struct BacktraceFrame {
    ip: Address,
    symbol_address: Address,
    symbols: Box<[BacktraceSymbol]>,
}

impl BacktraceFrame {
    fn new(frame: &backtrace::BacktraceFrame) -> BacktraceFrame {
        BacktraceFrame {
            ip: Address(frame.ip()),
            symbol_address: Address(frame.symbol_address()),
            symbols: frame.symbols().iter().map(BacktraceSymbol::new).collect(),
        }
    }

    /// The instruction pointer of the frame.
    pub fn ip(&self) -> *mut std::ffi::c_void {
        self.ip.0
    }

    /// The address where the frame's function starts.
    pub fn symbol_address(&self) -> *mut std::ffi::c_void {
        self.symbol_address.0
    }

    /// The frame's symbols: more than one where functions were inlined into it.
    pub fn symbols(&self) -> impl Iterator<Item = &BacktraceSymbol> {
        self.symbols.iter()
    }
}

/// A symbol of a [`BacktraceFrame`]: a function, where its code is.
#[derive(Clone, Debug)]
pub struct BacktraceSymbol {
    name: Option<Box<[u8]>>,
    name_demangled: Option<Box<str>>,
    addr: Option<Address>,
    filename: Option<std::path::PathBuf>,
    lineno: Option<u32>,
    colno: Option<u32>,
}

impl BacktraceSymbol {
    fn new(symbol: &backtrace::BacktraceSymbol) -> BacktraceSymbol {
        let name = symbol.name();
        BacktraceSymbol {
            name: name.as_ref().map(|n| n.as_bytes().into()),
            name_demangled: name.map(|n| n.to_string().into()),
            addr: symbol.addr().map(Address),
            filename: symbol.filename().map(Path::to_path_buf),
            lineno: symbol.lineno(),
            colno: symbol.colno(),
        }
    }

    /// The symbol's name as the binary has it (mangled).
    pub fn name_raw(&self) -> Option<&[u8]> {
        self.name.as_deref()
    }

    /// The symbol's name, demangled.
    pub fn name_demangled(&self) -> Option<&str> {
        self.name_demangled.as_deref()
    }

    /// The symbol's address.
    pub fn addr(&self) -> Option<*mut std::ffi::c_void> {
        self.addr.map(|a| a.0)
    }

    /// The source file.
    pub fn filename(&self) -> Option<&Path> {
        self.filename.as_deref()
    }

    /// The line in [`filename`](Self::filename).
    pub fn lineno(&self) -> Option<u32> {
        self.lineno
    }

    /// The column in [`filename`](Self::filename).
    pub fn colno(&self) -> Option<u32> {
        self.colno
    }
}

impl fmt::Display for BacktraceSymbol {
    /// `path::to::function at file:line:column`, without the hash rustc appends.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name_demangled {
            let name = match name.rsplit_once("::h") {
                Some((path, hash)) if !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => path,
                _ => name,
            };
            f.write_str(name)?;
        }
        if let Some(file) = &self.filename {
            write!(f, " at {}", file.display())?;
            if let Some(line) = self.lineno {
                write!(f, ":{line}")?;
                if let Some(col) = self.colno {
                    write!(f, ":{col}")?;
                }
            }
        }
        Ok(())
    }
}

/// A runtime's traceable tasks: those spawned onto its loops, by id.
#[derive(Default)]
pub(crate) struct Tracer {
    tasks: Mutex<HashMap<Id, Arc<TaskSlot>>>,
}

impl Tracer {
    /// Enters a new task: its entry, which it keeps in its `Origin`.
    pub(crate) fn enter(self: &Arc<Tracer>, id: Id) -> Arc<TaskSlot> {
        let slot = Arc::new(TaskSlot {
            id,
            tracer: Arc::downgrade(self),
            polling: AtomicBool::new(false),
            requested: AtomicBool::new(false),
            state: Mutex::new(SlotState::default()),
        });
        lock(&self.tasks).insert(id, slot.clone());
        slot
    }
}

/// One task's entry in its runtime's [`Tracer`].
pub(crate) struct TaskSlot {
    id: Id,
    tracer: Weak<Tracer>,
    /// The task is being polled (on its loop's thread or its stand-in's).
    polling: AtomicBool,
    /// A dump waits for this task's trace (`state.request`).
    requested: AtomicBool,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The waker of the task's last poll: woken to have it traced. Held quietly: the
    /// task's own code did not take it (no waker events for it with `tracing`).
    waker: Option<netloop_reactor::task::QuietWaker>,
    /// The dump waiting for this task's trace.
    request: Option<Arc<Request>>,
}

impl TaskSlot {
    /// A poll of the task: a traced one if a dump asked for it.
    pub(crate) fn poll<F: Future>(&self, id: Id, cx: &mut Context<'_>, future: Pin<&mut F>) -> Poll<F::Output> {
        self.polling.store(true, SeqCst);
        let request = {
            let mut state = lock(&self.state);
            if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                state.waker = Some(netloop_reactor::task::QuietWaker::new(cx.waker()));
            }
            if self.requested.swap(false, SeqCst) {
                state.request.take()
            } else {
                None
            }
        };
        let out = match request {
            None => poll_root(future, cx),
            Some(request) => {
                let (out, trace) = Trace::capture(|| poll_root(future, cx));
                request.done(Some(Task { id, trace }));
                out
            }
        };
        self.polling.store(false, SeqCst);
        out
    }

    /// The task has ended: a dump waiting for it is told, and the entry leaves the
    /// runtime's list.
    pub(crate) fn ended(&self) {
        let request = {
            let mut state = lock(&self.state);
            state.waker = None;
            self.requested.store(false, SeqCst);
            state.request.take()
        };
        if let Some(request) = request {
            request.done(None);
        }
        if let Some(tracer) = self.tracer.upgrade() {
            lock(&tracer.tasks).remove(&self.id);
        }
    }

    /// Asks for the task's trace at its next poll, and wakes it for that poll. False
    /// if the task is being polled (it cannot be traced until it returns).
    fn request(&self, request: &Arc<Request>) -> bool {
        if self.polling.load(SeqCst) {
            return false;
        }
        let waker = {
            let mut state = lock(&self.state);
            if state.request.is_some() {
                // Another dump waits for it already.
                return false;
            }
            state.request = Some(request.clone());
            self.requested.store(true, SeqCst);
            state.waker.as_deref().map(netloop_reactor::task::QuietWaker::new)
        };
        if let Some(waker) = waker {
            waker.wake_by_ref();
        }
        true
    }
}

/// A dump in progress: the traces come in as the tasks are polled.
pub(crate) struct Request {
    state: Mutex<RequestState>,
}

#[derive(Default)]
struct RequestState {
    awaited: usize,
    tasks: Vec<Task>,
    waker: Option<Waker>,
}

impl Request {
    /// Asks every task of `tracer` but `skip` (the task awaiting the dump) for its
    /// trace at its next poll.
    pub(crate) fn new(tracer: &Tracer, skip: Option<Id>) -> Arc<Request> {
        let request = Arc::new(Request {
            state: Mutex::new(RequestState::default()),
        });
        let slots: Vec<Arc<TaskSlot>> = lock(&tracer.tasks)
            .values()
            .filter(|slot| Some(slot.id) != skip)
            .cloned()
            .collect();
        // Counted before any is asked, one more than there are: a task traced at once
        // must not take the count to zero before the others are asked.
        lock(&request.state).awaited = slots.len() + 1;
        let asked = slots.iter().filter(|slot| slot.request(&request)).count();
        lock(&request.state).awaited -= slots.len() + 1 - asked;
        request
    }

    /// The dump, once every task asked has answered.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<Dump> {
        let mut state = lock(&self.state);
        if state.awaited == 0 {
            return Poll::Ready(Dump {
                tasks: Tasks {
                    tasks: std::mem::take(&mut state.tasks),
                },
            });
        }
        if !state.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    fn done(&self, task: Option<Task>) {
        let waker = {
            let mut state = lock(&self.state);
            state.tasks.extend(task);
            state.awaited = state.awaited.saturating_sub(1);
            if state.awaited == 0 { state.waker.take() } else { None }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}
