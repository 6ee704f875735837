//! `ToSocketAddrs`: every address form tokio's `bind` and `connect` accept.

use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::vec;

mod sealed {
    pub trait Sealed {}
}

/// Types that can be turned into socket addresses (tokio's `net::ToSocketAddrs`).
///
/// Literal addresses resolve at once. Host names go through the system resolver on the
/// runtime's blocking pool, so a slow DNS lookup never stalls an event loop.
///
/// Take `impl ToSocketAddrs` to accept every form that `bind` and `connect` do:
///
/// ```
/// use std::net::{Ipv4Addr, SocketAddr};
/// use netloop_net::{TcpListener, ToSocketAddrs};
///
/// async fn listen(addr: impl ToSocketAddrs) -> std::io::Result<TcpListener> {
///     TcpListener::bind(addr).await
/// }
///
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// listen("127.0.0.1:0").await?;
/// listen((Ipv4Addr::LOCALHOST, 0)).await?;
/// listen(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub trait ToSocketAddrs: sealed::Sealed {
    #[doc(hidden)]
    fn to_addrs(&self) -> Resolve;
}

#[doc(hidden)]
pub enum Resolve {
    Ready(io::Result<Vec<SocketAddr>>),
    Lookup(String),
}

impl Resolve {
    pub(crate) async fn resolve(self) -> io::Result<vec::IntoIter<SocketAddr>> {
        match self {
            Resolve::Ready(r) => r.map(Vec::into_iter),
            Resolve::Lookup(host) => {
                let lookup = move || std::net::ToSocketAddrs::to_socket_addrs(&host).map(|a| a.collect::<Vec<_>>());
                match netloop_scheduler::runtime::Handle::try_current() {
                    Ok(h) => h
                        .spawn_blocking(lookup)
                        .await
                        .map_err(io::Error::from)?
                        .map(Vec::into_iter),
                    Err(_) => lookup().map(Vec::into_iter),
                }
            }
        }
    }
}

/// Resolves `host` to its socket addresses (tokio's `net::lookup_host`): a literal
/// address at once, a host name (`"localhost:80"`, `("example.org", 443)`) through the
/// system resolver on the blocking pool.
///
/// ```
/// # let rt = netloop_scheduler::runtime::Builder::new_current_thread().enable_all().build()?;
/// # rt.block_on(async {
/// let addrs: Vec<_> = netloop_net::lookup_host("127.0.0.1:8080").await?.collect();
/// assert_eq!(addrs, ["127.0.0.1:8080".parse().unwrap()]);
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn lookup_host<T: ToSocketAddrs>(host: T) -> io::Result<impl Iterator<Item = SocketAddr>> {
    host.to_addrs().resolve().await
}

/// Runs `op` on each address `addr` resolves to, in turn, until one succeeds: its
/// output, or the last error (`InvalidInput` if `addr` resolved to none). What `bind`
/// and `connect` do with several addresses.
pub(crate) async fn try_each_addr<A, T, F>(addr: A, mut op: impl FnMut(SocketAddr) -> F) -> io::Result<T>
where
    A: ToSocketAddrs,
    F: Future<Output = io::Result<T>>,
{
    let mut last = None;
    for addr in addr.to_addrs().resolve().await? {
        match op(addr).await {
            Ok(out) => return Ok(out),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "could not resolve to any address")))
}

macro_rules! literal {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ToSocketAddrs for $t {
            fn to_addrs(&self) -> Resolve {
                Resolve::Ready(std::net::ToSocketAddrs::to_socket_addrs(self).map(Iterator::collect))
            }
        }
    )*};
}

literal!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16)
);

impl sealed::Sealed for &[SocketAddr] {}
impl ToSocketAddrs for &[SocketAddr] {
    fn to_addrs(&self) -> Resolve {
        Resolve::Ready(Ok(self.to_vec()))
    }
}

fn host_port(s: &str) -> Resolve {
    match s.parse::<SocketAddr>() {
        Ok(addr) => Resolve::Ready(Ok(vec![addr])),
        Err(_) => Resolve::Lookup(s.to_owned()),
    }
}

impl sealed::Sealed for str {}
impl ToSocketAddrs for str {
    fn to_addrs(&self) -> Resolve {
        host_port(self)
    }
}

impl sealed::Sealed for String {}
impl ToSocketAddrs for String {
    fn to_addrs(&self) -> Resolve {
        host_port(self)
    }
}

impl sealed::Sealed for (&str, u16) {}
impl ToSocketAddrs for (&str, u16) {
    fn to_addrs(&self) -> Resolve {
        match self.0.parse::<IpAddr>() {
            Ok(ip) => Resolve::Ready(Ok(vec![SocketAddr::new(ip, self.1)])),
            Err(_) => Resolve::Lookup(format!("{}:{}", self.0, self.1)),
        }
    }
}

impl sealed::Sealed for (String, u16) {}
impl ToSocketAddrs for (String, u16) {
    fn to_addrs(&self) -> Resolve {
        (self.0.as_str(), self.1).to_addrs()
    }
}

impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {}
impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {
    fn to_addrs(&self) -> Resolve {
        (**self).to_addrs()
    }
}
