//! The server's decoder: whatever bytes a client sends, decoding returns (never panics),
//! and a message that decodes encodes back to exactly the same bytes and decodes again to
//! itself.

#![no_main]

use lagcomp_wire::ClientMessage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = ClientMessage::decode(data) else {
        return;
    };
    let mut bytes = Vec::new();
    message
        .encode(&mut bytes)
        .expect("a decoded message encodes");
    // An older version this build still reads is written back as today's.
    let mut written = data.to_vec();
    written[2..4].copy_from_slice(&lagcomp_wire::PROTOCOL_VERSION.to_le_bytes());
    assert_eq!(bytes, written, "re-encoding changed the bytes of {message:?}");
    assert_eq!(ClientMessage::decode(&bytes).as_ref(), Ok(&message));
});
