//! lagcomp over real UDP sockets (work in progress).
