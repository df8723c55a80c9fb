//! lagcomp-udp's integration tests in one binary (one link instead of one per file): the
//! proxy on real sockets, and the game server with bots. `allocations.rs` stays a binary of
//! its own: it installs a counting global allocator.

mod proxy;
mod serve_bots;
#[path = "../support/mod.rs"]
mod support;
