//! `slc-buffer` (spec 05 baseline, as in commercial drives): host pages go to the SLC
//! `cache` region while it has room, else straight to the (TLC) data region. With
//! `drain_when_idle = true` on the cache region its data migrates to TLC only while the
//! host is idle (and then all of it); the same placement as `cache-first`.

pub use super::cache_first::{CacheFirst as SlcBuffer, Params};
