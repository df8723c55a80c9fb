//! The versioned wire protocol between a lagcomp server and its clients (work in progress).
