//! Decoding allocates no more than the input's length justifies: a counting allocator
//! measures every decode of valid, mutated and hostile messages.

use crate::common;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lagcomp_validate::WeaponClaim;
use lagcomp_wire::{ClientMessage, MAGIC, MAX_SHOTS_PER_INPUT, PROTOCOL_VERSION, ServerMessage};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

thread_local! {
    /// Bytes requested by this thread (so parallel tests do not count each other).
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; counting touches
// only a const-initialised thread local, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + layout.size()));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through `alloc`/`realloc` above with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATED.try_with(|a| a.set(a.get() + new_size));
        // SAFETY: as for `dealloc`, and the caller upholds `realloc`'s size contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocated_by(f: impl FnOnce()) -> usize {
    let before = ALLOCATED.with(Cell::get);
    f();
    ALLOCATED.with(Cell::get) - before
}

/// The most bytes decoding may allocate for an input of `len` bytes: the in-memory forms
/// are at most about five times their wire size (an entity's smallest encoding, 23 bytes
/// with no bones, becomes a 112-byte frame: the frame holds a humanoid's stance inline,
/// and its aim quaternion is 16-byte aligned). Protocol 2's frames were 72 bytes and this
/// bound was 3. Version 6's weapon shots add at most one in-memory claim per shot the
/// count announces (about 0.9 KB: a pellet claim holds its 32 pellets inline), so at
/// most [`MAX_SHOTS_PER_INPUT`] of them, whatever the message's length.
fn budget(len: usize) -> usize {
    5 * len + MAX_SHOTS_PER_INPUT * std::mem::size_of::<(u32, WeaponClaim)>()
}

fn check(bytes: &[u8]) {
    let client = allocated_by(|| {
        let _ = std::hint::black_box(ClientMessage::decode(bytes));
    });
    let server = allocated_by(|| {
        let _ = std::hint::black_box(ServerMessage::decode(bytes));
    });
    assert!(
        client <= budget(bytes.len()) && server <= budget(bytes.len()),
        "decoding {} bytes allocated {client} (client) and {server} (server) bytes: {bytes:02x?}",
        bytes.len()
    );
}

#[test]
fn decoding_allocates_in_proportion_to_the_input() {
    let corpus = common::seed_corpus(200);
    let mut rng = Pcg64Mcg::seed_from_u64(99);
    let mut ratio = 0.0_f64;
    for bytes in &corpus {
        check(bytes);
        let used = allocated_by(|| {
            let _ = std::hint::black_box(ServerMessage::decode(bytes));
            let _ = std::hint::black_box(ClientMessage::decode(bytes));
        });
        ratio = ratio.max(used as f64 / bytes.len() as f64);
        for _ in 0..200 {
            let mut mutated = bytes.clone();
            let i = rng.random_range(0..mutated.len());
            mutated[i] = rng.random();
            let cut = rng.random_range(0..=mutated.len());
            mutated.truncate(cut);
            check(&mutated);
        }
    }
    eprintln!("largest allocation per input byte of a valid message: {ratio:.2}");
    // The valid messages did allocate (snapshots and shot lists), so the bound was tested.
    assert!(ratio > 0.5, "largest allocation ratio {ratio}");
}

#[test]
fn lying_counts_allocate_nothing() {
    let header = |kind: u8| {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        bytes.push(kind);
        bytes
    };
    // A snapshot part claiming 65535 entities in 4 bytes.
    let mut snapshot = header(0x82);
    snapshot.extend_from_slice(&7_u32.to_le_bytes());
    snapshot.extend_from_slice(&1.0_f64.to_le_bytes());
    snapshot.extend_from_slice(&[0, 1]);
    snapshot.extend_from_slice(&u16::MAX.to_le_bytes());
    snapshot.extend_from_slice(&[0; 4]);
    let mut result = None;
    let used = allocated_by(|| result = Some(ServerMessage::decode(&snapshot)));
    let error = result.expect("ran").unwrap_err();
    assert!(error.to_string().contains("65535"), "{error}");
    assert_eq!(used, 0);
    // One entity claiming 256 bones with none there.
    let mut entity = header(0x82);
    entity.extend_from_slice(&7_u32.to_le_bytes());
    entity.extend_from_slice(&1.0_f64.to_le_bytes());
    entity.extend_from_slice(&[0, 1]);
    entity.extend_from_slice(&1_u16.to_le_bytes());
    entity.extend_from_slice(&[0; 8]); // id
    entity.push(0b1000); // scaled
    entity.extend_from_slice(&[0; 12]); // velocity
    entity.extend_from_slice(&256_u16.to_le_bytes());
    let used = allocated_by(|| {
        assert!(ServerMessage::decode(&entity).is_err());
    });
    // The entity list (one frame) may be allocated, the bones may not.
    assert!(
        used <= std::mem::size_of::<lagcomp_wire::EntityFrame>(),
        "{used} bytes"
    );
    assert!(used <= 112, "{used} bytes");
}
