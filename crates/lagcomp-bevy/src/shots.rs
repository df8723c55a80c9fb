//! Shot validation: claims in as [`ShotFired`] messages, verdicts out as [`ShotJudged`],
//! both an event on the shooter (for its observers) and a message (for any system).

use bevy_ecs::lifecycle::Insert;
use bevy_ecs::prelude::*;
use lagcomp::{EntityId, HitboxId, Vec3};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, ShotClaim, Verdict, VerdictOutcome, WeaponId,
};

use crate::entities::HitboxEntities;
use crate::plugin::{LagCompClock, LagCompHistory, LagCompValidator};

/// An entity that may fire: its team, aim bone and, once measured, its client's timing.
/// Needs [`crate::Hitboxes`] too (the validator looks up the shooter's aim bone in its
/// past). Changing the component updates the validator.
#[derive(Component, Debug, Clone, Copy, Default, PartialEq)]
pub struct Shooter {
    /// Team and aim bone.
    pub participant: Participant,
    /// Round trip and interpolation delay of its client, from the game's clock sync;
    /// shots are rejected as `no_timing` until it is set.
    pub timing: Option<ClientTiming>,
}

/// A client says it fired: the claim as the game received it, naming Bevy entities.
/// Write it before [`crate::LagCompSystems::Validate`] runs.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub struct ShotFired {
    /// Who fired (from the connection, not from the packet).
    pub shooter: Entity,
    /// With what.
    pub weapon: WeaponId,
    /// The client's sequence number for this shot.
    pub seq: u32,
    /// What the shooter's screen showed.
    pub render_time: RenderTime,
    /// Where the shot started, world space.
    pub origin: Vec3,
    /// Where it went; need not be unit length.
    pub direction: Vec3,
    /// The hit the client saw, if any.
    pub hit: Option<ClaimedTarget>,
    /// When it arrived, server seconds; `None`: the newest recorded frame's time.
    pub received_at: Option<f64>,
}

/// The hit a client claims, naming a Bevy entity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimedTarget {
    /// The entity hit (it may have been despawned since: its past is still checked).
    pub entity: Entity,
    /// The hitbox, if the client says.
    pub hitbox: Option<HitboxId>,
    /// The point on it, world space at the render time, if the client says.
    pub point: Option<Vec3>,
}

/// The verdict on a [`ShotFired`]: triggered on the shooter (observe it with
/// `On<ShotJudged>`) and written as a message.
#[derive(EntityEvent, Message, Debug, Clone, Copy, PartialEq)]
pub struct ShotJudged {
    /// Who fired.
    #[event_target]
    pub shooter: Entity,
    /// The entity hit when confirmed, otherwise the claimed target (if any).
    pub target: Option<Entity>,
    /// The validator's verdict (its entity ids are lagcomp's; see
    /// [`crate::HitboxEntities`]).
    pub verdict: Verdict,
}

/// An id no history issues: what a claim naming an entity without hitboxes carries, so the
/// validator rejects it for what it is (an unknown shooter, a tampered target).
const UNKNOWN: EntityId = EntityId::from_bits(u64::MAX);

pub(crate) fn register_shooter(validator: &mut LagCompValidator, id: EntityId, shooter: &Shooter) {
    validator.register(id, shooter.participant);
    if let Some(timing) = shooter.timing {
        // An invalid timing is refused and the last good one kept.
        let _refused = validator.set_timing(id, timing);
    }
}

/// A [`Shooter`] was added or changed: tell the validator.
pub(crate) fn on_shooter_inserted(
    insert: On<Insert<Shooter>>,
    shooters: Query<&Shooter>,
    entities: Res<HitboxEntities>,
    mut validator: ResMut<LagCompValidator>,
) {
    if let (Ok(shooter), Some(id)) = (shooters.get(insert.entity), entities.core_id(insert.entity))
    {
        register_shooter(&mut validator, id, shooter);
    }
}

/// Tells the validator about shooters changed in place (`&mut Shooter`), which no
/// observer sees.
pub(crate) fn sync_shooters(
    changed: Query<(Entity, &Shooter), Changed<Shooter>>,
    entities: Res<HitboxEntities>,
    mut validator: ResMut<LagCompValidator>,
) {
    for (entity, shooter) in &changed {
        if let Some(id) = entities.core_id(entity) {
            register_shooter(&mut validator, id, shooter);
        }
    }
}

/// Where judged shots are sketched for drawing (feature `debug-draw`); nothing without it.
#[cfg(feature = "debug-draw")]
type Sketches<'w> = Option<ResMut<'w, crate::debug_draw::ShotSketches>>;
#[cfg(not(feature = "debug-draw"))]
type Sketches<'w> = ();

/// Judges the shots fired since the last run against the history.
#[expect(clippy::too_many_arguments, reason = "a system's parameters")]
pub(crate) fn validate_shots(
    mut fired: MessageReader<ShotFired>,
    mut judged: MessageWriter<ShotJudged>,
    history: Res<LagCompHistory>,
    clock: Res<LagCompClock>,
    mut validator: ResMut<LagCompValidator>,
    entities: Res<HitboxEntities>,
    mut commands: Commands,
    #[cfg_attr(
        not(feature = "debug-draw"),
        expect(unused_mut, unused_variables, reason = "only sketched with debug-draw")
    )]
    mut sketches: Sketches,
) {
    let newest = clock.newest().map_or(0.0, |(_, time)| time);
    for shot in fired.read() {
        let claim = ShotClaim {
            shooter: entities.core_id(shot.shooter).unwrap_or(UNKNOWN),
            weapon: shot.weapon,
            seq: shot.seq,
            render_time: shot.render_time,
            origin: shot.origin,
            direction: shot.direction,
            hit: shot.hit.map(|target| ClaimedHit {
                target: entities.core_id(target.entity).unwrap_or(UNKNOWN),
                hitbox: target.hitbox,
                point: target.point,
            }),
        };
        let verdict = validator.validate(&history, &claim, shot.received_at.unwrap_or(newest));
        let target = match verdict.outcome {
            VerdictOutcome::Confirmed(confirmed) => entities.entity(confirmed.target),
            _ => shot.hit.map(|target| target.entity),
        };
        #[cfg(feature = "debug-draw")]
        if let Some(sketches) = sketches.as_mut() {
            let target_id = match verdict.outcome {
                VerdictOutcome::Confirmed(confirmed) => Some(confirmed.target),
                _ => claim.hit.map(|hit| hit.target),
            };
            sketches.note(
                &history,
                crate::debug_draw::JudgedShot {
                    shooter: shot.shooter,
                    target,
                    target_id,
                    origin: shot.origin,
                    direction: shot.direction,
                    range: validator.rules().weapon(shot.weapon).map(|w| w.max_range),
                    verdict: &verdict,
                },
            );
        }
        let judgement = ShotJudged {
            shooter: shot.shooter,
            target,
            verdict,
        };
        if commands.get_entity(shot.shooter).is_ok() {
            commands.trigger(judgement);
        }
        judged.write(judgement);
    }
}
