//! The server's decoder: whatever bytes a client sends, decoding returns (never panics),
//! and a message that decodes encodes back to exactly the same bytes and decodes again to
//! itself. Each claim of every weapon kind it carries (protocol 6) does the same on its
//! own, in an input that holds only it.

#![no_main]

use lagcomp_wire::{ClientMessage, Input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(message) = ClientMessage::decode(data) else {
        return;
    };
    let mut bytes = Vec::new();
    message
        .encode(&mut bytes)
        .expect("a decoded message encodes");
    // An older version this build still reads is written back as today's: an input
    // before version 6 gains its weapon shots' count, 0.
    let mut written = data.to_vec();
    written[2..4].copy_from_slice(&lagcomp_wire::PROTOCOL_VERSION.to_le_bytes());
    if u16::from_le_bytes([data[2], data[3]]) < 6 {
        written.push(0);
    }
    assert_eq!(bytes, written, "re-encoding changed the bytes of {message:?}");
    assert_eq!(ClientMessage::decode(&bytes).as_ref(), Ok(&message));

    let ClientMessage::Input(input) = &message;
    for shot in &input.weapon_shots {
        let alone = ClientMessage::Input(Input {
            shots: Vec::new(),
            weapon_shots: vec![*shot],
            ..input.clone()
        });
        alone
            .encode(&mut bytes)
            .expect("a decoded weapon shot encodes");
        assert_eq!(
            ClientMessage::decode(&bytes).as_ref(),
            Ok(&alone),
            "a weapon shot alone did not come back"
        );
    }
});
