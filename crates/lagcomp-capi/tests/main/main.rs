//! The C interface, tested from Rust, C, C++ and C#, in one test binary (STYLE.md).

mod alloc;
mod api;
mod c_program;
mod csharp;
mod header;
mod support;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;
