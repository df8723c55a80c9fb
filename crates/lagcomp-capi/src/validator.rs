//! The shot validator: rules from TOML, participants and their timing, claims in,
//! verdicts out, and the audit log.
//!
//! A validator is bound to one history when it is created and judges claims against it.
//! Thread safety: each validator sits behind its own mutex; `lagcomp_validator_validate`
//! locks the validator, then its history (never the other way round, so a thread
//! recording a tick and another validating a shot wait for each other, never deadlock).

use std::ffi::{CStr, c_char};
use std::fs::File;
use std::io::BufWriter;
use std::sync::{Arc, Mutex, MutexGuard};

use lagcomp::{Blocker, HitboxId, Tick};
use lagcomp_validate::{
    AuditLog, ClaimedHit, ClientTiming, Participant, Refusal, RejectReason, RenderTime, RuleSet,
    ShotClaim, Validator, Verdict, VerdictOutcome, WeaponId,
};

use crate::args::{input, output};
use crate::handle::{Kind, Registry};
use crate::history::{HistoryCell, LagcompHistory, cell_of, lock as lock_history};
use crate::status::{
    Failure, LAGCOMP_INVALID_ARGUMENT, LAGCOMP_INVALID_STATE, LAGCOMP_IO, LAGCOMP_NOT_FINITE,
    LAGCOMP_PANIC, LAGCOMP_RULES, LagcompStatus, fail, guard,
};
use crate::types::{
    LagcompSample, LagcompVec3, c_vec3, c_zone, entity, finite_vec3, required_text, vec3,
};

/// A shot validator bound to a history. Opaque: created by `lagcomp_validator_new`, freed
/// by `lagcomp_validator_free`.
pub struct LagcompValidator {
    _private: (),
}

struct ValidatorState {
    validator: Validator,
    history: Arc<HistoryCell>,
    audit: Option<AuditLog<BufWriter<File>>>,
}

type ValidatorCell = Mutex<ValidatorState>;

static VALIDATORS: Registry<ValidatorCell> = Registry::new(Kind::Validator);

fn lock(cell: &ValidatorCell) -> Result<MutexGuard<'_, ValidatorState>, Failure> {
    cell.lock().map_err(|_| {
        Failure::new(
            LAGCOMP_PANIC,
            "an earlier call panicked while using this validator; it may be inconsistent: free it",
        )
    })
}

fn with_validator(
    handle: *const LagcompValidator,
    body: impl FnOnce(&mut ValidatorState) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let cell = VALIDATORS.get(handle)?;
    let mut state = lock(&cell)?;
    body(&mut state)
}

/// A shooter or target as the validator knows it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompParticipant {
    /// Team number; shots between equal teams are friendly fire.
    pub team: u16,
    /// The bone whose origin is the eye or muzzle and whose rotation is the view.
    pub aim_bone: u16,
    /// The view's forward direction in the aim bone's local axes, unit length (Unreal's
    /// +X, Unity's +Z, in the units' axes you record in).
    pub aim_forward: LagcompVec3,
}

/// What the server measured about a client's connection, seconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompClientTiming {
    /// Smoothed round-trip time.
    pub srtt: f64,
    /// Round-trip time variation.
    pub rttvar: f64,
    /// How far in the past the client draws other entities (interpolation delay).
    pub interp_delay: f64,
}

/// `LagcompShotClaim::render_kind`: the client drew `from_tick` to `to_tick` at `fraction`.
pub const LAGCOMP_RENDER_TICKS: u32 = 0;
/// `LagcompShotClaim::render_kind`: the client drew server time `render_time`.
pub const LAGCOMP_RENDER_TIME: u32 = 1;
/// `LagcompShotClaim::render_kind`: the client ran out of snapshots and extrapolated the
/// newest, `from_tick`, by `render_time` seconds (each entity moved on at its velocity);
/// judged on that picture, up to the policy's `max_extrapolation`.
pub const LAGCOMP_RENDER_EXTRAPOLATED: u32 = 2;
/// `LagcompShotClaim::hit_flags`: the client claims a hit on `target`.
pub const LAGCOMP_CLAIM_HIT: u16 = 1;
/// `LagcompShotClaim::hit_flags`: and names the hitbox `hitbox`.
pub const LAGCOMP_CLAIM_HITBOX: u16 = 2;
/// `LagcompShotClaim::hit_flags`: and the point `point` on it.
pub const LAGCOMP_CLAIM_POINT: u16 = 4;

/// A client's "I fired", as the server decoded it. Numbers come from the client: NaN or
/// absurd values are not refused here but judged (`non_finite` rejection).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompShotClaim {
    /// `sizeof(LagcompShotClaim)` as the caller compiled it.
    pub struct_size: u32,
    /// `LAGCOMP_RENDER_*`.
    pub render_kind: u32,
    /// Who fired (from the connection, not the packet).
    pub shooter: u64,
    /// The client's shot sequence number, increasing by one per shot.
    pub seq: u32,
    /// The weapon's id (as in the rules).
    pub weapon: u16,
    /// `LAGCOMP_CLAIM_*` bits.
    pub hit_flags: u16,
    /// The older snapshot tick drawn; with `LAGCOMP_RENDER_EXTRAPOLATED`, the newest
    /// snapshot's tick.
    pub from_tick: u32,
    /// The newer snapshot tick drawn.
    pub to_tick: u32,
    /// How far from `from_tick` to `to_tick`, 0 to 1.
    pub fraction: f32,
    /// Must be 0.
    pub reserved: u32,
    /// The server time drawn, for `LAGCOMP_RENDER_TIME`; seconds past `from_tick`, for
    /// `LAGCOMP_RENDER_EXTRAPOLATED`.
    pub render_time: f64,
    /// Where the shot started (muzzle or eye), world space.
    pub origin: LagcompVec3,
    /// Where it went; any non-zero length.
    pub direction: LagcompVec3,
    /// The entity the client hit, with `LAGCOMP_CLAIM_HIT`.
    pub target: u64,
    /// The hitbox, with `LAGCOMP_CLAIM_HITBOX`.
    pub hitbox: u16,
    /// Must be 0.
    pub reserved2: u16,
    /// The point hit, world space at the render time, with `LAGCOMP_CLAIM_POINT`.
    pub point: LagcompVec3,
}

/// `LagcompVerdict::outcome`: the shot hit (`target`, `hitbox`, `damage_multiplier`...).
pub const LAGCOMP_OUTCOME_CONFIRMED: u32 = 0;
/// `LagcompVerdict::outcome`: the shot hit nothing within range.
pub const LAGCOMP_OUTCOME_MISS: u32 = 1;
/// `LagcompVerdict::outcome`: a wall was in the way (`wall`, `wall_distance`).
pub const LAGCOMP_OUTCOME_BLOCKED: u32 = 2;
/// `LagcompVerdict::outcome`: the claim was refused (`reason_code`, `label`).
pub const LAGCOMP_OUTCOME_REJECTED: u32 = 3;
/// `LagcompVerdict::outcome`: a good hit on `target`, `distance` away, that the game's
/// rules deny damage; not a cheat. `reason_code` holds the refusal's code (1001
/// invulnerable: spawn protection; 1002 dodged) and `label` its name.
pub const LAGCOMP_OUTCOME_REFUSED: u32 = 4;

/// What a verdict was decided on. Times are server seconds; NaN when the check that would
/// set them was not reached.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompVerdictBasis {
    /// When the claim arrived.
    pub received_at: f64,
    /// The time the claim asked for.
    pub requested_time: f64,
    /// The time the trace used.
    pub time_used: f64,
    /// The oldest time the history held then.
    pub oldest: f64,
    /// The newest time it held.
    pub newest: f64,
    /// The shooter's measured one-way latency.
    pub shooter_latency: f64,
    /// The shooter's interpolation delay.
    pub interp_delay: f64,
    /// How the hit entity (or claimed target) was sampled; `kind` is
    /// `LAGCOMP_SAMPLE_NONE` when not reached.
    pub sample: LagcompSample,
    /// 1 when the trace was rewound (0 above the weapon's no-rewind latency).
    pub rewound: u8,
    /// 1 when the claimed time was replaced by the server's estimate.
    pub fallback: u8,
    /// Must be ignored.
    pub reserved: [u8; 6],
}

/// The validator's answer to a claim.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompVerdict {
    /// `LAGCOMP_OUTCOME_*`.
    pub outcome: u32,
    /// The rejection's stable code (1xx malformed, 2xx replay, 3xx fire rate, 4xx time,
    /// 5xx origin, 6xx angle, 8xx claim, 9xx target), or the refusal's (1001
    /// invulnerable, 1002 dodged); 0 unless rejected or refused.
    pub reason_code: u16,
    /// The claim's weapon.
    pub weapon: u16,
    /// Who fired.
    pub shooter: u64,
    /// The claim's sequence number.
    pub seq: u32,
    /// Confirmed: the hitbox hit.
    pub hitbox: u16,
    /// Confirmed: its `LAGCOMP_ZONE_*`.
    pub zone: u16,
    /// Confirmed: the entity hit. Blocked by an entity (`wall` is `u32::MAX`): that
    /// entity.
    pub target: u64,
    /// Confirmed: the zone's number for `LAGCOMP_ZONE_CUSTOM`.
    pub zone_custom: u16,
    /// Confirmed: 1 when the claimed point was accepted within the weapon's leeway
    /// rather than by the server's own trace.
    pub by_leeway: u8,
    /// Must be ignored.
    pub reserved: u8,
    /// Confirmed: the weapon's damage multiplier for the zone.
    pub damage_multiplier: f32,
    /// Confirmed: distance from the muzzle.
    pub distance: f32,
    /// Confirmed: where it hit, world space at the rewound time.
    pub point: LagcompVec3,
    /// Blocked: the wall's id, or `u32::MAX` when an entity blocked (a door: `target`
    /// then holds it).
    pub wall: u32,
    /// Blocked: where along the shot.
    pub wall_distance: f32,
    /// `"confirmed"`, `"miss"`, `"blocked"`, the rejection's or the refusal's stable name
    /// (`"backtrack"`): a static NUL-terminated string, never freed, never null.
    pub label: *const c_char,
    /// What it was decided on.
    pub basis: LagcompVerdictBasis,
}

/// The labels a verdict can carry, NUL-terminated for C.
const LABELS: [&CStr; 40] = [
    c"confirmed",
    c"miss",
    c"blocked",
    c"non_finite",
    c"zero_direction",
    c"unknown_weapon",
    c"unknown_shooter",
    c"shooter_not_alive",
    c"replayed",
    c"sequence_too_old",
    c"fire_rate",
    c"no_timing",
    c"time_in_future",
    c"time_too_old",
    c"backtrack",
    c"extrapolated_too_far",
    c"origin_too_far",
    c"angle_too_far",
    c"tampered_claim",
    c"target_not_alive",
    c"target_not_compensated",
    c"friendly_fire",
    c"not_a_target",
    c"wrong_weapon_kind",
    c"projectile_off_path",
    c"projectile_too_early",
    c"pellet_count_mismatch",
    c"pellet_seed_mismatch",
    c"pellet_off_target",
    c"splash_through_wall",
    c"splash_out_of_radius",
    c"splash_beyond_range",
    c"melee_not_melee",
    c"melee_swing_too_large",
    c"melee_out_of_reach",
    c"melee_outside_arc",
    c"penetration_beyond_power",
    c"penetration_off_chain",
    c"invulnerable",
    c"dodged",
];

fn c_label(label: &str) -> *const c_char {
    LABELS
        .iter()
        .find(|l| l.to_bytes() == label.as_bytes())
        .map_or(c"unknown".as_ptr(), |l| l.as_ptr())
}

/// The stable name of a rejection code (`404` -> `"backtrack"`) or of a refusal code
/// (`1002` -> `"dodged"`), or null for a code that names neither. A static string: never
/// freed.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_reject_reason_name(code: u16) -> *const c_char {
    let rejection = RejectReason::ALL
        .iter()
        .find(|r| r.code() == code)
        .map(|r| r.name());
    let refusal = || {
        Refusal::ALL
            .iter()
            .find(|r| r.code() == code)
            .map(|r| r.name())
    };
    rejection.or_else(refusal).map_or(std::ptr::null(), c_label)
}

fn c_verdict(v: &Verdict) -> LagcompVerdict {
    let nan = f64::NAN;
    let b = &v.basis;
    let mut out = LagcompVerdict {
        outcome: 0,
        reason_code: 0,
        weapon: v.weapon.0,
        shooter: v.shooter.to_bits(),
        seq: v.seq,
        hitbox: 0,
        zone: 0,
        target: 0,
        zone_custom: 0,
        by_leeway: 0,
        reserved: 0,
        damage_multiplier: 0.0,
        distance: 0.0,
        point: LagcompVec3::default(),
        wall: 0,
        wall_distance: 0.0,
        label: c_label(v.outcome.label()),
        basis: LagcompVerdictBasis {
            received_at: b.received_at,
            requested_time: b.requested_time.unwrap_or(nan),
            time_used: b.time_used.unwrap_or(nan),
            oldest: b.oldest.unwrap_or(nan),
            newest: b.newest.unwrap_or(nan),
            shooter_latency: b.shooter_latency.unwrap_or(nan),
            interp_delay: b.interp_delay.unwrap_or(nan),
            sample: b.sample.map_or(
                LagcompSample {
                    time: nan,
                    kind: crate::types::LAGCOMP_SAMPLE_NONE,
                    nearest_reason: 0,
                    reserved: 0,
                    from_tick: 0,
                    to_tick: 0,
                    alpha: 0.0,
                },
                |kind| LagcompSample::from_kind(b.time_used.unwrap_or(nan), kind),
            ),
            rewound: u8::from(b.rewound),
            fallback: u8::from(b.fallback),
            reserved: [0; 6],
        },
    };
    match v.outcome {
        VerdictOutcome::Confirmed(hit) => {
            let (zone, zone_custom) = c_zone(hit.zone);
            out.outcome = LAGCOMP_OUTCOME_CONFIRMED;
            out.target = hit.target.to_bits();
            out.hitbox = hit.hitbox.0;
            out.zone = zone;
            out.zone_custom = zone_custom;
            out.by_leeway = u8::from(hit.by_leeway);
            out.damage_multiplier = hit.damage_multiplier;
            out.distance = hit.distance;
            out.point = c_vec3(hit.point);
        }
        VerdictOutcome::Miss => out.outcome = LAGCOMP_OUTCOME_MISS,
        VerdictOutcome::Blocked { by, distance } => {
            out.outcome = LAGCOMP_OUTCOME_BLOCKED;
            match by {
                // The C interface adds only the history's own pieces, numbered below
                // u32::MAX.
                Blocker::Wall(wall) => out.wall = u32::try_from(wall.0).unwrap_or(u32::MAX),
                Blocker::Entity(entity) => {
                    out.wall = u32::MAX;
                    out.target = entity.to_bits();
                }
            }
            out.wall_distance = distance;
        }
        VerdictOutcome::Rejected { reason } => {
            out.outcome = LAGCOMP_OUTCOME_REJECTED;
            out.reason_code = reason.code();
        }
        VerdictOutcome::Refused {
            target,
            refusal,
            distance,
        } => {
            out.outcome = LAGCOMP_OUTCOME_REFUSED;
            out.reason_code = refusal.code();
            out.target = target.to_bits();
            out.distance = distance;
        }
    }
    out
}

impl LagcompShotClaim {
    fn to_rust(self) -> Result<ShotClaim, Failure> {
        if (self.struct_size as usize) < size_of::<Self>() {
            return fail(
                crate::status::LAGCOMP_BAD_LENGTH,
                format!(
                    "claim struct_size {} is smaller than LagcompShotClaim ({})",
                    self.struct_size,
                    size_of::<Self>()
                ),
            );
        }
        let render_time = match self.render_kind {
            LAGCOMP_RENDER_TICKS => RenderTime::Ticks {
                from: Tick(self.from_tick),
                to: Tick(self.to_tick),
                fraction: self.fraction,
            },
            LAGCOMP_RENDER_TIME => RenderTime::Time(self.render_time),
            LAGCOMP_RENDER_EXTRAPOLATED => RenderTime::Extrapolated {
                from: Tick(self.from_tick),
                by: self.render_time,
            },
            other => {
                return fail(
                    LAGCOMP_INVALID_ARGUMENT,
                    format!("unknown render_kind {other}"),
                );
            }
        };
        let known = LAGCOMP_CLAIM_HIT | LAGCOMP_CLAIM_HITBOX | LAGCOMP_CLAIM_POINT;
        if self.hit_flags & !known != 0
            || (self.hit_flags != 0 && self.hit_flags & LAGCOMP_CLAIM_HIT == 0)
        {
            return fail(
                LAGCOMP_INVALID_ARGUMENT,
                format!(
                    "hit_flags {:#x}: unknown bits, or a hitbox or point without LAGCOMP_CLAIM_HIT",
                    self.hit_flags
                ),
            );
        }
        let hit = (self.hit_flags & LAGCOMP_CLAIM_HIT != 0).then(|| ClaimedHit {
            target: entity(self.target),
            hitbox: (self.hit_flags & LAGCOMP_CLAIM_HITBOX != 0).then_some(HitboxId(self.hitbox)),
            point: (self.hit_flags & LAGCOMP_CLAIM_POINT != 0).then(|| vec3(self.point)),
        });
        Ok(ShotClaim {
            shooter: entity(self.shooter),
            weapon: WeaponId(self.weapon),
            seq: self.seq,
            render_time,
            origin: vec3(self.origin),
            direction: vec3(self.direction),
            hit,
        })
    }
}

/// Creates a validator bound to `history`, with the rules in `rules_toml` (the format of
/// `lagcomp_validate::rules`: `[policy]` and one `[weapons.NAME]` table per weapon).
/// `*out` receives its handle. With a match recording on the history, the rules are
/// recorded; such a history takes one validator.
///
/// # Errors
/// `LAGCOMP_RULES` for TOML that does not parse or a value out of range (the message names
/// the field); `LAGCOMP_INVALID_STATE` for a second validator on a recording history.
///
/// # Safety
/// `rules_toml` is null or a NUL-terminated UTF-8 string; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_validator_new(
    history: *mut LagcompHistory,
    rules_toml: *const c_char,
    out: *mut *mut LagcompValidator,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (text, out) = unsafe {
            (
                required_text("rules_toml", rules_toml)?,
                output("out", out)?,
            )
        };
        let rules = RuleSet::from_toml(text).map_err(|e| Failure::new(LAGCOMP_RULES, e))?;
        let cell = cell_of(history)?;
        {
            let mut state = lock_history(&cell)?;
            if state.recording.is_some() && state.validator_bound {
                return fail(
                    LAGCOMP_INVALID_STATE,
                    "a history recording a match takes one validator",
                );
            }
            state.used = true;
            state.validator_bound = true;
            state.record_line(|w| w.rules(&rules))?;
        }
        *out = VALIDATORS.insert(Mutex::new(ValidatorState {
            validator: Validator::new(rules),
            history: cell,
            audit: None,
        }));
        Ok(())
    })
}

/// Frees a validator; its handle is stale from now on. An open audit log is flushed and
/// closed.
///
/// # Errors
/// `LAGCOMP_IO` when flushing the audit log fails (the validator is freed all the same).
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_validator_free(validator: *mut LagcompValidator) -> LagcompStatus {
    guard(|| {
        let cell = VALIDATORS.remove(validator)?;
        let mut state = lock(&cell)?;
        close_audit(&mut state)
    })
}

/// Registers (or updates) an entity that may shoot or be shot. Unregistered shooters are
/// rejected (`unknown_shooter`); unregistered targets have no team.
///
/// # Safety
/// `participant` is null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_validator_register(
    validator: *mut LagcompValidator,
    entity_id: u64,
    participant: *const LagcompParticipant,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let p = unsafe { input("participant", participant) }?;
        let participant = Participant {
            team: p.team,
            aim_bone: p.aim_bone,
            aim_forward: finite_vec3("aim_forward", p.aim_forward)?,
        };
        with_validator(validator, |state| {
            let id = entity(entity_id);
            state.validator.register(id, participant);
            lock_history(&state.history)?.record_line(|w| w.register(id, &participant))
        })
    })
}

/// Forgets an entity and its per-shooter state (sequence numbers, fire rate, timing).
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_validator_forget(
    validator: *mut LagcompValidator,
    entity_id: u64,
) -> LagcompStatus {
    guard(|| {
        with_validator(validator, |state| {
            let id = entity(entity_id);
            state.validator.forget(id);
            lock_history(&state.history)?.record_line(|w| w.forget(id))
        })
    })
}

/// Sets what the server measured about a shooter's connection; update it as the
/// measurement moves. Claims from a shooter without timing are rejected (`no_timing`).
///
/// # Errors
/// `LAGCOMP_NOT_FINITE` or `LAGCOMP_INVALID_ARGUMENT` for a value that is not finite, is
/// negative, or is 5 s or more (milliseconds given as seconds); nothing is changed.
///
/// # Safety
/// `timing` is null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_validator_set_timing(
    validator: *mut LagcompValidator,
    shooter: u64,
    timing: *const LagcompClientTiming,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let t = unsafe { input("timing", timing) }?;
        let timing = ClientTiming {
            srtt: t.srtt,
            rttvar: t.rttvar,
            interp_delay: t.interp_delay,
        };
        if ![t.srtt, t.rttvar, t.interp_delay]
            .iter()
            .all(|v| v.is_finite())
        {
            return fail(LAGCOMP_NOT_FINITE, "timing values must be finite");
        }
        if let Err(e) = timing.check() {
            // Negative, or 5 s or more (milliseconds given as seconds): the error says which.
            return fail(LAGCOMP_INVALID_ARGUMENT, e);
        }
        with_validator(validator, |state| {
            let id = entity(shooter);
            if let Err(e) = state.validator.set_timing(id, timing) {
                return fail(LAGCOMP_INVALID_ARGUMENT, e);
            }
            lock_history(&state.history)?.record_line(|w| w.timing(id, &timing))
        })
    })
}

/// Judges a claim that arrived at server time `received_at` against the bound history,
/// and writes the verdict to `*out`. A refused claim is a verdict (`outcome` rejected,
/// with its reason), not an error status. The verdict is appended to the audit log and
/// the match recording when they are open.
///
/// # Errors
/// `LAGCOMP_NOT_FINITE` for a non-finite `received_at`; `LAGCOMP_INVALID_ARGUMENT` for an
/// unknown `render_kind` or `hit_flags`; `LAGCOMP_IO` when the audit log or recording
/// cannot be written (the verdict in `*out` stands; the file is closed).
///
/// # Safety
/// `claim` is null or valid; `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_validator_validate(
    validator: *mut LagcompValidator,
    claim: *const LagcompShotClaim,
    received_at: f64,
    out: *mut LagcompVerdict,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (claim, out) = unsafe { (input("claim", claim)?, output("out", out)?) };
        let claim = claim.to_rust()?;
        if !received_at.is_finite() {
            return fail(LAGCOMP_NOT_FINITE, "received_at is not finite");
        }
        with_validator(validator, |state| {
            let cell = Arc::clone(&state.history);
            let mut history = lock_history(&cell)?;
            let verdict = state
                .validator
                .validate(&history.history, &claim, received_at);
            *out = c_verdict(&verdict);
            let recorded = history.record_line(|w| {
                w.claim(received_at, &claim)?;
                w.verdict(&verdict)
            });
            drop(history);
            let audited = match state.audit.as_mut() {
                Some(log) => log.write(&verdict).map_err(|e| {
                    state.audit = None;
                    Failure::new(
                        LAGCOMP_IO,
                        format!("the verdict stands, but the audit log failed and was closed: {e}"),
                    )
                }),
                None => Ok(()),
            };
            recorded.and(audited)
        })
    })
}

/// Appends every later verdict to the file at `path` (created or truncated) as JSON
/// Lines, one verdict object per line, the shape `lagcomp validate --json` prints.
/// Replaces an audit log already open (which is flushed and closed first).
///
/// # Safety
/// `path` is null or a NUL-terminated UTF-8 path.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_validator_open_audit_log(
    validator: *mut LagcompValidator,
    path: *const c_char,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { required_text("path", path) }?;
        with_validator(validator, |state| {
            close_audit(state)?;
            let file =
                File::create(path).map_err(|e| Failure::new(LAGCOMP_IO, format!("{path}: {e}")))?;
            state.audit = Some(AuditLog::new(BufWriter::new(file)));
            Ok(())
        })
    })
}

fn close_audit(state: &mut ValidatorState) -> Result<(), Failure> {
    match state.audit.take() {
        Some(log) => log
            .finish()
            .map(drop)
            .map_err(|e| Failure::new(LAGCOMP_IO, format!("flushing the audit log: {e}"))),
        None => Ok(()),
    }
}

/// Flushes and closes the audit log.
///
/// # Errors
/// `LAGCOMP_INVALID_STATE` when none is open; `LAGCOMP_IO` when flushing fails.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_validator_close_audit_log(
    validator: *mut LagcompValidator,
) -> LagcompStatus {
    guard(|| {
        with_validator(validator, |state| {
            if state.audit.is_none() {
                return fail(LAGCOMP_INVALID_STATE, "no audit log is open");
            }
            close_audit(state)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reject_reason_has_its_c_name() {
        for reason in RejectReason::ALL {
            let name = lagcomp_reject_reason_name(reason.code());
            assert!(!name.is_null(), "{reason:?} has no C label");
            // SAFETY: labels are static NUL-terminated strings.
            let name = unsafe { CStr::from_ptr(name) };
            assert_eq!(name.to_str().unwrap(), reason.name());
        }
        assert!(lagcomp_reject_reason_name(0).is_null());
        assert!(lagcomp_reject_reason_name(999).is_null());
    }

    #[test]
    fn each_render_kind_reads_as_its_render_time() {
        let zero = LagcompVec3 {
            x: 0.0,
            y: 0.0,
            z: 0.0,
        };
        let claim = |render_kind| LagcompShotClaim {
            struct_size: size_of::<LagcompShotClaim>() as u32,
            render_kind,
            shooter: 1,
            seq: 1,
            weapon: 1,
            hit_flags: 0,
            from_tick: 40,
            to_tick: 41,
            fraction: 0.5,
            reserved: 0,
            render_time: 0.05,
            origin: zero,
            direction: LagcompVec3 { z: -1.0, ..zero },
            target: 0,
            hitbox: 0,
            reserved2: 0,
            point: zero,
        };
        let read = |kind| claim(kind).to_rust().map(|c| c.render_time).ok();
        assert_eq!(
            read(LAGCOMP_RENDER_TICKS),
            Some(RenderTime::Ticks {
                from: Tick(40),
                to: Tick(41),
                fraction: 0.5
            })
        );
        assert_eq!(read(LAGCOMP_RENDER_TIME), Some(RenderTime::Time(0.05)));
        assert_eq!(
            read(LAGCOMP_RENDER_EXTRAPOLATED),
            Some(RenderTime::Extrapolated {
                from: Tick(40),
                by: 0.05
            })
        );
        assert_eq!(read(3), None);
    }
}
