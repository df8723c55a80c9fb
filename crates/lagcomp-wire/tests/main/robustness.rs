//! Bad bytes never panic: every decoder is fed random bytes and a few hundred thousand
//! mutations of valid messages (a short, bounded, deterministic fuzz run inside
//! `cargo test`; the long runs are the cargo-fuzz targets in `fuzz/`). Whatever decodes
//! must encode back to the same bytes.

use crate::common;
use lagcomp_wire::{ClientMessage, MAGIC, MAX_MESSAGE_BYTES, PROTOCOL_VERSION, ServerMessage};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Decodes `bytes` both ways; a message that decodes must re-encode to `bytes` (written
/// in today's version: an older version this build still reads is written as today's)
/// and decode to itself again. Returns how many decoded.
fn decode_both(bytes: &[u8]) -> usize {
    let mut written = bytes.to_vec();
    if written.len() >= 4 {
        written[2..4].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    }
    let mut decoded = 0;
    let mut again = Vec::new();
    if let Ok(message) = ClientMessage::decode(bytes) {
        // An input older than version 6 has no weapon shots: today's writes their count, 0.
        let mut written = written.clone();
        if u16::from_le_bytes([bytes[2], bytes[3]]) < 6 {
            written.push(0);
        }
        message
            .encode(&mut again)
            .expect("a decoded message encodes");
        assert_eq!(
            again, written,
            "client message {message:?} re-encoded differently"
        );
        assert_eq!(ClientMessage::decode(&again).as_ref(), Ok(&message));
        decoded += 1;
    }
    if let Ok(message) = ServerMessage::decode(bytes) {
        message
            .encode(&mut again)
            .expect("a decoded message encodes");
        assert_eq!(
            again, written,
            "server message {message:?} re-encoded differently"
        );
        assert_eq!(ServerMessage::decode(&again).as_ref(), Ok(&message));
        decoded += 1;
    }
    decoded
}

/// One random change of the kinds a fuzzer makes.
fn mutate(rng: &mut Pcg64Mcg, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = input.len();
    match rng.random_range(0..9) {
        // Flip one bit.
        0 | 1 if len > 0 => {
            let i = rng.random_range(0..len);
            input[i] ^= 1 << rng.random_range(0..8);
        }
        // Set a byte to something interesting.
        2 if len > 0 => {
            let i = rng.random_range(0..len);
            input[i] = [0, 1, 0x7f, 0x80, 0xff, rng.random()][rng.random_range(0..6)];
        }
        // Overwrite four bytes with a float's or a count's pattern (NaN, inf, big counts).
        3 if len >= 4 => {
            let i = rng.random_range(0..=len - 4);
            let pattern = [
                f32::NAN.to_bits(),
                f32::INFINITY.to_bits(),
                f32::NEG_INFINITY.to_bits(),
                0xffff_ffff,
                0x0000_ffff,
                0x0000_0101,
            ][rng.random_range(0..6)];
            input[i..i + 4].copy_from_slice(&pattern.to_le_bytes());
        }
        // Cut the end off.
        4 if len > 0 => input.truncate(rng.random_range(0..len)),
        // Remove a range.
        5 if len > 0 => {
            let a = rng.random_range(0..len);
            let b = rng.random_range(a..=len.min(a + 16));
            input.drain(a..b);
        }
        // Insert random bytes.
        6 => {
            let at = rng.random_range(0..=len);
            let n = rng.random_range(1..16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            input.splice(at..at, bytes);
        }
        // Splice in the tail of another valid message.
        7 => {
            let other = &corpus[rng.random_range(0..corpus.len())];
            let from = rng.random_range(0..=other.len());
            let at = rng.random_range(0..=len);
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
        // Repeat a range (lengths that seem to fit).
        _ if len > 0 => {
            let a = rng.random_range(0..len);
            let b = rng.random_range(a..=len.min(a + 32));
            let copy = input[a..b].to_vec();
            input.splice(b..b, copy);
        }
        _ => input.push(rng.random()),
    }
}

#[test]
fn mutated_valid_messages_never_panic() {
    let corpus = common::seed_corpus(400);
    let mut rng = Pcg64Mcg::seed_from_u64(0x11fe_5eed);
    let mut inputs = 0_u64;
    let mut decoded = 0;
    let mut input = Vec::new();
    while inputs < 300_000 {
        input.clone_from(&corpus[rng.random_range(0..corpus.len())]);
        // Up to four stacked mutations: each one is decoded.
        for _ in 0..rng.random_range(1..=4) {
            mutate(&mut rng, &mut input, &corpus);
            decoded += decode_both(&input);
            inputs += 1;
        }
    }
    eprintln!("{inputs} mutated inputs, {decoded} decoded");
    // Some mutations leave a valid message (a flipped bit in a float, say): the check
    // that those re-encode exactly must have run, or this test checked little.
    assert!(
        decoded > 10_000,
        "only {decoded} of {inputs} mutated inputs decoded"
    );
    assert!(
        decoded < inputs as usize / 2,
        "{decoded} of {inputs} decoded"
    );
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut decoded = 0;
    for round in 0..50_000 {
        let len = rng.random_range(0..600);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        // Most rounds get a valid header, so the bodies are what gets tested.
        if round % 8 != 0 && bytes.len() >= 5 {
            bytes[..2].copy_from_slice(&MAGIC);
            bytes[2..4].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
            bytes[4] = [0x01, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86][rng.random_range(0..7)];
        }
        decoded += decode_both(&bytes);
    }
    // Fixed-size messages with random bodies decode now and then (a probe is any id and
    // most f64s): the re-encoding check ran.
    assert!(decoded > 0);
}

#[test]
fn oversized_input_is_refused_unread() {
    let mut bytes = vec![0_u8; MAX_MESSAGE_BYTES + 1];
    bytes[..2].copy_from_slice(&MAGIC);
    for decoded in [
        ClientMessage::decode(&bytes).unwrap_err(),
        ServerMessage::decode(&bytes).unwrap_err(),
    ] {
        assert_eq!(
            decoded,
            lagcomp_wire::DecodeError::TooLong {
                len: MAX_MESSAGE_BYTES + 1,
                max: MAX_MESSAGE_BYTES
            }
        );
    }
}
