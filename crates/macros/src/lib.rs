//! # netloop-macros (skeleton)
//!
//! Will hold `#[netloop::main]` and `#[netloop::test]`.
