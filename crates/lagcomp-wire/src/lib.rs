//! The versioned wire protocol between a lagcomp server and its clients.
//!
//! Each message is one transport message (renet carries the inputs and the welcome;
//! everything else the server sends goes as records of one datagram per client per tick,
//! [`datagram`]; connections, encryption and fragmentation are the transport's business,
//! not this crate's; shot verdicts are made reliable here, by repetition). The
//! messages carry exactly what the simulator's server and bots exchange
//! (`lagcomp-sim`'s skirmish), so a real server and real bots can run the same protocol:
//!
//! - client to server, [`ClientMessage`]: [`Input`] every frame (view, clock-sync
//!   [`lagcomp_net::Ping`], [`ProbeReply`], interpolation delay, newest tick, the
//!   redundant [`lagcomp_validate::ShotClaim`]s, and from version 6 claims of every weapon
//!   kind, [`lagcomp_validate::WeaponClaim`]s);
//! - server to client, [`ServerMessage`]: [`Welcome`], snapshot parts ([`SnapshotPart`]
//!   of [`EntityFrame`]s, split by [`SnapshotEncoder`]), [`lagcomp_net::Pong`],
//!   [`RttProbe`], a cumulative shot acknowledgement, and the shots' [`WireVerdict`]s,
//!   numbered and repeated until acknowledged ([`Verdicts`], [`verdicts`]).
//!
//! Decoding never panics and never allocates more than the input's length justifies:
//! every length is checked against the bytes left and a hard cap, non-finite numbers,
//! unknown kinds, tags and flag bits, other versions and trailing bytes are all
//! [`DecodeError`]s that say what and where. Encoding writes into a buffer the caller
//! keeps, and refuses ([`EncodeError`]) what the other side would refuse. Bad messages are
//! counted per sender by a [`MalformedGuard`], which says when to disconnect.
//!
//! No I/O and no clocks: whoever needs "now" passes it in as `f64` seconds.
//!
//! - [`client`]: client messages.
//! - [`server`]: server messages other than snapshots.
//! - [`shot_result`]: one shot's verdict as its shooter gets it.
//! - [`snapshot`]: snapshot parts, entities and the splitting encoder.
//! - [`verdicts`]: shot verdicts delivered by repetition: the server's
//!   [`VerdictOutbox`], the client's [`VerdictInbox`].
//! - [`datagram`]: several messages (and transport packets) in one datagram, as
//!   `lagcomp serve` sends a client's tick.
//! - [`guard`]: the per-sender malformed-message guard.
//! - [`error`]: decode and encode errors.
//!
//! # Byte layout (version 6)
//!
//! All integers and floats little-endian; floats are IEEE 754 bits as they are (never
//! quantized, never NaN or infinite). Every message starts with a 5-byte header:
//! [`MAGIC`] `"LW"`, [`PROTOCOL_VERSION`] as `u16`, a kind byte (client kinds below
//! `0x80`, server kinds from `0x80`). Optional fields are announced by a flags byte
//! before them (in brackets below); undefined flag bits are errors. No message is longer than
//! [`MAX_MESSAGE_BYTES`], and none has bytes after its last field. The full layout of
//! every message is in `docs/WIRE.md`; in short:
//!
//! | kind | message | body |
//! | --- | --- | --- |
//! | `0x01` | [`Input`] | frame `u32`, flags, \[ping\], \[probe reply\], aim `4×f32`, interp delay `f64`, \[newest tick\], \[verdicts received `u32`\], shots `u8` × (seq `u32`, claim), weapon shots `u8` × (seq `u32`, kind `u8`, that kind's claim) |
//! | `0x81` | [`Welcome`] | entity `u64`, tick rate, send rate, max rewind `f64`, bones `u16`, arena half size `f32`, walls `u16`, seed `u64` |
//! | `0x82` | [`SnapshotPart`] | tick `u32`, server time `f64`, part `u8`, parts `u8`, entities `u16` × (id `u64`, flags, velocity, \[last teleport `u32`\], \[in view since `u32`\], bones `u16` × (translation, rotation, \[scale\]) \| stance (position, yaw, crouch, phase `f32`, aim)) |
//! | `0x83` | [`lagcomp_net::Pong`] | id `u32`, three `f64` times |
//! | `0x84` | [`RttProbe`] | id `u32`, server time `f64` |
//! | `0x85` | shot ack | up-to sequence `u32` |
//! | `0x86` | [`Verdicts`] | first number `u32`, count `u8` × (seq `u32`, outcome tag, \[target `u64` + hitbox `u16` \| rejection code `u16`\]) |
//!
//! # Example
//!
//! A client's input, and the server decoding it (or counting it as malformed).
//!
//! ```
//! use lagcomp::{EntityId, Quat, Tick, Vec3};
//! use lagcomp_net::Ping;
//! use lagcomp_validate::{RenderTime, ShotClaim, WeaponId};
//! use lagcomp_wire::{ClientMessage, GuardConfig, Input, MalformedGuard, Penalty};
//!
//! let claim = ShotClaim {
//!     shooter: EntityId::from_bits(3),
//!     weapon: WeaponId(1),
//!     seq: 12,
//!     render_time: RenderTime::Ticks { from: Tick(40), to: Tick(42), fraction: 0.25 },
//!     origin: Vec3::new(1.0, 1.6, -2.0),
//!     direction: Vec3::NEG_Z,
//!     hit: None,
//! };
//! let input = ClientMessage::Input(Input {
//!     frame: 900,
//!     ping: Some(Ping { id: 5, client_send: 31.25 }),
//!     probe_reply: None,
//!     aim: Quat::IDENTITY,
//!     interp_delay: 0.105,
//!     newest_tick: Some(Tick(44)),
//!     verdicts_received: Some(3),
//!     shots: vec![(12, claim)],
//!     weapon_shots: Vec::new(),
//! });
//! let mut buffer = Vec::new(); // kept and reused frame after frame
//! input.encode(&mut buffer)?;
//!
//! // The server side.
//! let mut guard = MalformedGuard::new(GuardConfig::default())?;
//! assert_eq!(ClientMessage::decode(&buffer)?, input);
//! let cut = &buffer[..buffer.len() - 1];
//! let error = ClientMessage::decode(cut).unwrap_err();
//! assert!(error.to_string().contains("truncated"), "{error}");
//! assert_eq!(guard.record(7_u64, 0.0), Penalty::Drop);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod client;
mod codec;
pub mod datagram;
pub mod error;
pub mod guard;
pub mod server;
pub mod shot_result;
pub mod snapshot;
pub mod verdicts;
mod weapons;

pub use client::{ClientMessage, Input, ProbeReply};
pub use error::{DecodeError, Direction, EncodeError};
pub use guard::{GuardConfig, GuardConfigError, MalformedGuard, Penalty};
pub use server::{RttProbe, ServerMessage, Welcome};
pub use shot_result::{WireOutcome, WireVerdict};
pub use snapshot::{
    EncodedEntities, EntityFrame, EntityPose, HumanoidStance, SnapshotEncoder, SnapshotPart,
    SnapshotParts,
};
pub use verdicts::{MAX_VERDICTS_PER_MESSAGE, VerdictInbox, VerdictOutbox, Verdicts};

/// The first two bytes of every message.
pub const MAGIC: [u8; 2] = *b"LW";

/// The protocol version this build writes. Bump it with any change to a message's layout
/// (including a new rejection reason). Version 5 added the extrapolated render time
/// (tag 2: from tick `u32`, by `f64` seconds), the rejection code 405
/// (`extrapolated_too_far`) and refused shot results (outcome tag 4: spawn protection, a
/// dodge). Version 6 added an input's weapon shots: claims of every weapon kind
/// (projectile hits, pellets, melee strikes, blasts), each after a kind byte.
pub const PROTOCOL_VERSION: u16 = 6;

/// The oldest version this build reads: every message of a version from this one to
/// [`PROTOCOL_VERSION`] decodes (version 4's messages are version 5's without the
/// extrapolated render time, code 405 and refused results; version 5's inputs are version
/// 6's without weapon shots); any other is refused.
pub const OLDEST_READ_VERSION: u16 = 4;

/// No message is longer than this, bytes; a longer one is refused before it is read.
/// A snapshot entity with [`MAX_BONES`] scaled bones still fits in one part.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

/// The most shots one [`Input`] carries (a [`lagcomp_net::ShotSender`] with redundancy up
/// to this).
pub const MAX_SHOTS_PER_INPUT: usize = 8;

/// The most bones one snapshot entity carries.
pub const MAX_BONES: usize = 256;

/// The most parts one tick's snapshot is split into.
pub const MAX_SNAPSHOT_PARTS: usize = 255;
