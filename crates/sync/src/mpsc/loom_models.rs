//! Loom models of the block list and the receiver's waker.
