//! Unit tests of the channel's core, small enough for miri.
