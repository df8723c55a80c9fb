//! The sizes a recording may not exceed, so a corrupt or hostile file is refused with a
//! clear message instead of exhausting memory or time on replay.

/// Longest line, in bytes, not counting its newline. A frame of 64 entities with 20 bones
/// each is about 120 KiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most bones in one rig.
pub const MAX_BONES: u16 = 256;

/// Most hitboxes in one rig. Checked before the rig is built (building checks every pair
/// of hitbox ids).
pub const MAX_HITBOXES: usize = 256;

/// Most entities spawned and not despawned at once.
pub const MAX_ENTITIES: usize = 16_384;

/// Most entities in one frame.
pub const MAX_ENTITIES_PER_FRAME: usize = 4096;

/// Most static colliders (each one rebuilds the static tree on replay, as it does live).
pub const MAX_STATICS: usize = 4096;

/// Most `level` and `level_add` records (each one rebuilds the static tree on replay, as
/// it does live).
pub const MAX_LEVEL_RECORDS: usize = 4096;

/// Most pieces of level geometry of every kind (`static` records included), over the
/// whole recording: removed pieces keep their ids, so they count too.
pub const MAX_LEVEL_PIECES: usize = 1 << 20;

/// Most triangles of level geometry over the whole recording, meshes and heightfield
/// cells (two per grid square) together: about 300 MB of meshes on replay. One mesh of
/// 100,000 triangles takes about 3.5 MB of its line.
pub const MAX_LEVEL_TRIANGLES: u64 = 1 << 23;

/// Most bytes of bone history a replay may have to hold at once: per entity still in the
/// history, its ring of frames times (28 bytes per bone + 36 per frame), as
/// [`lagcomp::History`] stores them.
pub const MAX_HISTORY_BYTES: u64 = 1 << 30;
