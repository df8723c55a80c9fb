//! Scenes from match recordings: the recording re-validated up to the chosen claim, and
//! the picture of that claim taken from the history as it stood then.

use std::collections::BTreeSet;

use lagcomp::{EntityId, History, RewindTarget, Vec3, WindowPolicy};
use lagcomp_validate::recording::{Recording, RecordingEntry, ReplayedClaim, revalidate_until};
use lagcomp_validate::{RuleSet, ShotClaim, Verdict, VerdictOutcome, WeaponRules};
use serde_json::{Map, Value, json};

use crate::error::SceneError;
use crate::scene::{Marker, MarkerKind, SceneHitbox, SceneShot, SceneWall, VerdictScene};

/// How far past the farthest object shown a shot that stopped at nothing is drawn,
/// metres (to its range at most).
const MISS_OVERSHOOT: f32 = 2.0;
/// How far a shot with a weapon the rules do not know is drawn at most, metres.
const UNKNOWN_WEAPON_REACH: f32 = 100.0;

/// Re-validates `recording` (under `rules`, or its own when `None`) up to the claim
/// numbered `seq` by `shooter` and returns its picture ([`scene_of_claim`]).
///
/// Sequence numbers count per shooter: `shooter` (the recording's entity number, as
/// [`EntityId::from_bits`] reads it) may be left out when only one shooter used `seq`.
/// When one shooter sent `seq` more than once (a replayed claim), the first is taken.
///
/// # Errors
/// [`SceneError::NoSuchShot`], [`SceneError::AmbiguousShot`], a
/// [`SceneError::Recording`] for a recording that cannot be re-validated, and
/// [`VerdictScene::check`]'s errors for a claim whose numbers cannot be drawn.
pub fn scene_of_shot(
    recording: &Recording,
    rules: Option<&RuleSet>,
    seq: u32,
    shooter: Option<EntityId>,
) -> Result<VerdictScene, SceneError> {
    let senders: BTreeSet<EntityId> = recording
        .records
        .iter()
        .filter_map(|(_, record)| match record {
            RecordingEntry::Claim { claim, .. } if claim.seq == seq => Some(claim.shooter),
            _ => None,
        })
        .collect();
    let shooter = match shooter {
        Some(s) if senders.contains(&s) => s,
        Some(_) => return Err(SceneError::NoSuchShot { seq, shooter }),
        None => match senders.len() {
            0 => return Err(SceneError::NoSuchShot { seq, shooter }),
            1 => *senders.first().expect("one sender"),
            _ => {
                return Err(SceneError::AmbiguousShot {
                    seq,
                    shooters: senders.into_iter().collect(),
                });
            }
        },
    };
    revalidate_until(recording, rules, |replayed| {
        let claim = &replayed.judged.claim;
        (claim.seq == seq && claim.shooter == shooter).then(|| scene_of_claim(replayed))
    })?
    .unwrap_or(Err(SceneError::NoSuchShot {
        seq,
        shooter: Some(shooter),
    }))
}

/// The picture of one re-validated claim (from [`revalidate_until`], whose `pick` may
/// collect several):
///
/// - the target (the confirmed hit's, else the claimed one's, else, for a shot that
///   named nobody, the entity whose hitboxes passed nearest the shot's line within its
///   range, at the rewound time; extras `target_from` says which): its hitboxes in the newest frame when the claim arrived
///   ([`VerdictScene::present`]) and at the time the trace used, or the time the claim
///   asked for when the verdict came before the trace ([`VerdictScene::rewound`]);
/// - the shot, with the weapon's sweep radius, drawn to the hit or the wall that
///   stopped it, else a little past the farthest thing shown (never past the weapon's
///   range);
/// - every wall it met on the way (all of them: the validator's trace sees every layer);
/// - the server's hit point and the client's claimed point;
/// - the verdict in the extras (see [`verdict_extras`]), with the line of the claim, the
///   present and rewound times, and the recorded verdict's outcome.
///
/// # Errors
/// [`VerdictScene::check`]'s, for a claim whose origin or direction cannot be drawn.
pub fn scene_of_claim(replayed: &ReplayedClaim<'_>) -> Result<VerdictScene, SceneError> {
    let judged = replayed.judged;
    let mut scene = picture(
        replayed.history,
        replayed.validator.rules(),
        (&judged.claim, &judged.verdict),
        &|recorded| replayed.replayed_id(recorded),
        &replayed.spawned(),
    );
    let extra = [
        ("line", json!(judged.line)),
        (
            "recorded_outcome",
            json!(judged.recorded.map(|r| r.outcome.label())),
        ),
        ("changed", json!(judged.changed())),
    ];
    for (key, value) in extra {
        scene.extras.insert(key.into(), value);
    }
    scene.check()?;
    Ok(scene)
}

/// The picture of a shot judged live, against the `history` it was validated on, under
/// `rules` (the validator's, [`Validator::rules`](lagcomp_validate::Validator::rules)),
/// drawn as [`scene_of_claim`] draws a re-validated one: call it right after
/// `validate`, before the next frame is recorded, so the history's newest frame is the
/// present the claim arrived in. `players` are the entities a shot that named nobody
/// and hit nobody is drawn against (the one its line passed nearest); the extras carry
/// the verdict's facts ([`verdict_extras`]) and the picture's times.
///
/// # Errors
/// [`VerdictScene::check`]'s, for a claim whose origin or direction cannot be drawn.
pub fn scene_of_verdict(
    history: &History,
    rules: &RuleSet,
    claim: &ShotClaim,
    verdict: &Verdict,
    players: &[EntityId],
) -> Result<VerdictScene, SceneError> {
    let scene = picture(history, rules, (claim, verdict), &|id| id, players);
    scene.check()?;
    Ok(scene)
}

/// What [`scene_of_claim`] and [`scene_of_verdict`] share: the picture of `claim` and its
/// `verdict` against `history`, the claim's entities numbered for the history by
/// `history_id`, the nearest of `candidates` drawn for a shot that named and hit nobody.
fn picture(
    history: &History,
    rules: &RuleSet,
    (claim, verdict): (&ShotClaim, &Verdict),
    history_id: &dyn Fn(EntityId) -> EntityId,
    candidates: &[EntityId],
) -> VerdictScene {
    let weapon: Option<&WeaponRules> = rules.weapon(claim.weapon);
    let radius = weapon.map_or(0.0, |w| w.radius);
    let range = weapon.map_or(UNKNOWN_WEAPON_REACH, |w| w.max_range);

    let present_time = history.window().map(|(_, newest)| newest);
    let basis = &verdict.basis;
    let (rewound_time, rewound_from) = match (basis.time_used, basis.requested_time) {
        (Some(t), _) => (Some(t), "trace"),
        (None, Some(t)) => (Some(t), "claim"),
        (None, None) => (None, "none"),
    };
    let hitboxes = |target: Option<EntityId>, time: Option<f64>| match (target, time) {
        (Some(target), Some(time)) => hitboxes_at(history, history_id(target), time),
        _ => Vec::new(),
    };

    let direction = claim.direction.normalize_or_zero();
    let (target, target_from) = match (verdict.outcome, claim.hit) {
        (VerdictOutcome::Confirmed(hit), _) => (Some(hit.target), "confirmed"),
        (_, Some(hit)) => (Some(hit.target), "claim"),
        _ => {
            // A shot that named nobody and hit nobody: show whom it passed nearest.
            let nearest = candidates
                .iter()
                .copied()
                .filter(|&e| e != claim.shooter)
                .filter_map(|e| {
                    let gap = hitboxes(Some(e), rewound_time)
                        .iter()
                        .map(|h| gap_to_line(&h.placed, claim.origin, direction, range))
                        .fold(f32::INFINITY, f32::min);
                    gap.is_finite().then_some((gap, e))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            (nearest.map(|(_, e)| e), "nearest")
        }
    };
    let target_from = if target.is_some() {
        target_from
    } else {
        "none"
    };
    let stopped_at = match verdict.outcome {
        VerdictOutcome::Confirmed(hit) => Some(hit.distance),
        VerdictOutcome::Blocked { distance, .. } | VerdictOutcome::Refused { distance, .. } => {
            Some(distance)
        }
        _ => None,
    };
    let mut scene = VerdictScene::new(
        format!(
            "{} seq {}: {}",
            claim.shooter,
            claim.seq,
            verdict.outcome.label()
        ),
        SceneShot {
            origin: claim.origin,
            direction: claim.direction,
            length: 0.0,
            radius,
        },
    );
    scene.present = hitboxes(target, present_time);
    scene.rewound = hitboxes(target, rewound_time);
    let reach = stopped_at.unwrap_or(range);
    if direction != Vec3::ZERO && claim.origin.is_finite() {
        scene.walls = walls_met(history, claim.origin, direction, radius, reach);
    }
    scene.shot.length = stopped_at.unwrap_or_else(|| {
        let farthest = scene
            .present
            .iter()
            .chain(&scene.rewound)
            .map(|h| &h.placed)
            .chain(scene.walls.iter().map(|w| &w.placed))
            .map(|p| (p.pose.translation - claim.origin).dot(direction) + p.shape.bounding_radius())
            .fold(0.0_f32, f32::max);
        if farthest > 0.0 {
            (farthest + MISS_OVERSHOOT).min(range)
        } else {
            range
        }
    });
    if let VerdictOutcome::Confirmed(hit) = verdict.outcome {
        scene.markers.push(Marker {
            name: "hit point".into(),
            point: hit.point,
            kind: MarkerKind::Hit,
        });
    }
    if let Some(point) = claim.hit.and_then(|hit| hit.point) {
        scene.markers.push(Marker {
            name: "claimed point".into(),
            point,
            kind: MarkerKind::Claimed,
        });
    }

    scene.extras = verdict_extras(verdict);
    let extra = [
        ("target", json!(target.map(EntityId::to_bits))),
        ("target_from", json!(target_from)),
        ("present_time", json!(present_time)),
        ("rewound_time", json!(rewound_time)),
        ("rewound_from", json!(rewound_from)),
        ("weapon_range", json!(weapon.map(|w| w.max_range))),
        ("weapon_radius", json!(radius)),
    ];
    for (key, value) in extra {
        scene.extras.insert(key.into(), value);
    }
    scene
}

/// A verdict's facts as a JSON object: `outcome` (the label: `confirmed`, `miss`,
/// `blocked` or the rejection reason), `reason` (or null), `shooter` and `seq`, `weapon`,
/// the times of its basis in seconds of server time (`received_at`, `requested_time`,
/// `time_used`, `oldest`, `newest`), and `verdict`, the whole verdict in a recording's
/// verdict-line shape (`docs/FORMAT.md`).
#[must_use]
pub fn verdict_extras(verdict: &Verdict) -> Map<String, Value> {
    let basis = &verdict.basis;
    let line = serde_json::to_value(RecordingEntry::Verdict(*verdict)).unwrap_or(Value::Null);
    let facts = [
        ("outcome", json!(verdict.outcome.label())),
        ("reason", json!(verdict.outcome.reason().map(|r| r.name()))),
        ("shooter", json!(verdict.shooter.to_bits())),
        ("shooter_name", json!(verdict.shooter.to_string())),
        ("seq", json!(verdict.seq)),
        ("weapon", json!(verdict.weapon.0)),
        ("received_at", json!(basis.received_at)),
        ("requested_time", json!(basis.requested_time)),
        ("time_used", json!(basis.time_used)),
        ("oldest", json!(basis.oldest)),
        ("newest", json!(basis.newest)),
        ("verdict", line),
    ];
    facts.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// How far the shape's bounding sphere stays from the segment from `origin` along unit
/// `direction` for `reach` metres (0 when they touch); infinite when the shape lies
/// behind the origin or beyond the reach, or `direction` is zero.
fn gap_to_line(placed: &lagcomp::PlacedShape, origin: Vec3, direction: Vec3, reach: f32) -> f32 {
    let centre = placed.pose.translation;
    let along = (centre - origin).dot(direction);
    if direction == Vec3::ZERO || !(0.0..=reach).contains(&along) {
        return f32::INFINITY;
    }
    let nearest = origin + direction * along;
    (centre.distance(nearest) - placed.shape.bounding_radius()).max(0.0)
}

/// Every hitbox of `entity` as placed at `time` (clamped to the history's window; none
/// when the entity was not recorded around then).
fn hitboxes_at(history: &History, entity: EntityId, time: f64) -> Vec<SceneHitbox> {
    let (Ok(rig), Ok(Some(at))) = (
        history.rig(entity),
        history.entity_at(entity, RewindTarget::Time(time), WindowPolicy::Clamp),
    ) else {
        return Vec::new();
    };
    rig.hitboxes()
        .iter()
        .filter_map(|h| {
            at.hitbox(h.id)
                .map(|placed| SceneHitbox::new(&*h.name, placed))
        })
        .collect()
}

/// The static geometry a ray or sweep of `radius` from `origin` along unit `direction`
/// touches within `reach` metres, nearest first.
fn walls_met(
    history: &History,
    origin: Vec3,
    direction: Vec3,
    radius: f32,
    reach: f32,
) -> Vec<SceneWall> {
    let mut met: Vec<SceneWall> = history
        .statics()
        .iter()
        .enumerate()
        .filter(|(_, wall)| wall.layers != 0)
        .filter_map(|(index, wall)| {
            let crossing = wall
                .placed
                .cast_sphere_line(origin, direction, radius)?
                .clip(reach)?;
            Some(SceneWall {
                id: lagcomp::StaticId(index as u64),
                placed: wall.placed,
                distance: crossing.enter.max(0.0),
            })
        })
        .collect();
    met.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.id.cmp(&b.id)));
    met
}
