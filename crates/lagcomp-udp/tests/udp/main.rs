//! lagcomp-udp's integration tests in one binary (one link instead of one per file): the
//! proxy on real sockets, the game server with bots, and its metrics endpoint.
//! `allocations.rs` stays a binary of its own: it installs a counting global allocator.

mod metrics;
mod proxy;
mod serve_bots;
#[path = "../support/mod.rs"]
mod support;
