//! Concurrent access to a lagcomp history (work in progress).
