//! Integration tests of netloop live beside this file; this library is empty.
