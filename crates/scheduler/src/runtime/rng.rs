//! The random numbers of `select!` and `join!` (which branch they poll first), and
//! tokio's unstable `RngSeed` and `Builder::rng_seed`, which make them repeatable per
//! runtime (the seeding exists only under `tokio_unstable`).
//!
//! Every thread keeps its own generator ([`thread_rng_n`]). A runtime built with a
//! seed hands each thread that starts driving it (a loop's thread when it starts, the
//! caller of `block_on`) the next seed of its own sequence, so two runtimes built with
//! the same seed, driven the same way, draw the same numbers. Without a seed a
//! runtime leaves the threads' generators alone.

#![cfg_attr(not(tokio_unstable), allow(dead_code))]

use std::cell::Cell;
use std::hash::Hasher;
use std::sync::Mutex;

use crate::sync::lock;

/// A seed for a runtime's random numbers (tokio's `runtime::RngSeed`), for
/// [`Builder::rng_seed`](super::Builder::rng_seed).
#[derive(Clone, Debug)]
pub struct RngSeed(u64);

impl RngSeed {
    /// The seed that `bytes` hash to: the same bytes give the same seed, in every
    /// process.
    pub fn from_bytes(bytes: &[u8]) -> RngSeed {
        // `DefaultHasher::new` has fixed keys: the hash is the same in every process
        // (of one Rust release).
        let mut hasher = std::hash::DefaultHasher::new();
        hasher.write(bytes);
        RngSeed(hasher.finish())
    }
}

/// A runtime's sequence of seeds, one per thread that starts driving it.
#[derive(Debug)]
pub(crate) struct SeedSequence(Mutex<u64>);

impl SeedSequence {
    pub(crate) fn new(seed: &RngSeed) -> SeedSequence {
        SeedSequence(Mutex::new(seed.0))
    }

    /// The next seed (splitmix64 over the runtime's state).
    pub(crate) fn next(&self) -> u64 {
        let mut state = lock(&self.0);
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

thread_local! {
    /// This thread's generator (xorshift64; never zero).
    static STATE: Cell<u64> = Cell::new({
        // Seeded from the thread-local's address and the clock: distinct per thread.
        let addr = &() as *const () as u64;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::from(d.subsec_nanos()));
        (addr ^ nanos.rotate_left(32)) | 1
    });
}

/// A uniform random number in `0..n` from this thread's generator (what `select!`
/// draws its first branch with).
#[doc(hidden)]
pub fn thread_rng_n(n: u32) -> u32 {
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (((x >> 32) * u64::from(n)) >> 32) as u32
    })
}

/// Puts this thread's generator back as it was when dropped.
pub(crate) struct Reseeded(Option<u64>);

/// Seeds this thread's generator with `seed` until the guard is dropped.
pub(crate) fn reseed(seed: u64) -> Reseeded {
    Reseeded(STATE.try_with(|s| s.replace(seed | 1)).ok())
}

impl Drop for Reseeded {
    fn drop(&mut self) {
        if let Some(prev) = self.0 {
            let _ = STATE.try_with(|s| s.set(prev));
        }
    }
}
