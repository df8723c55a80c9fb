//! Checks 8 and 9 (see the [parent module](super)): the verdict on what the trace found.
//! The trace's own hit with its target's state (alive, compensated, not a teammate, not
//! spared), or the client's claimed target, hitbox and point against the trace, the
//! leeway and what stood in front of it.

use lagcomp::{
    Blocker, EntityId, EntityRole, History, QueryError, Ray, RewindTarget, Trace, WindowPolicy,
};

use crate::claim::ClaimedHit;
use crate::extrapolated::{Extrapolation, in_front_in_the_picture, line_point_on};
use crate::rules::WeaponRules;
use crate::screening::{leeway, time_reason};
use crate::verdict::{Basis, Confirmed, RejectReason, VerdictOutcome};

use super::Validator;

impl Validator {
    /// The trace's own result, with the hit target's state checked.
    pub(super) fn judge_trace(
        &self,
        history: &History,
        weapon: &WeaponRules,
        team: u16,
        traced: &Trace,
        basis: &mut Basis,
    ) -> Result<VerdictOutcome, RejectReason> {
        let Some(hit) = traced.hit else {
            return Ok(match traced.stopped_by() {
                Some((by, distance)) => VerdictOutcome::Blocked { by, distance },
                None => VerdictOutcome::Miss,
            });
        };
        basis.sample = Some(hit.sample.kind);
        self.check_target(weapon, team, hit.entity, hit.state, hit.sample.rewound())?;
        if let Some(refusal) = self.refusal(history, hit.entity, hit.state) {
            return Ok(VerdictOutcome::Refused {
                target: hit.entity,
                refusal,
                distance: hit.distance,
            });
        }
        Ok(VerdictOutcome::Confirmed(Confirmed {
            target: hit.entity,
            hitbox: hit.hitbox,
            zone: hit.zone,
            damage_multiplier: weapon.damage.of(hit.zone),
            distance: hit.distance,
            point: hit.entry.point,
            by_leeway: false,
        }))
    }

    /// Check 9 for one target.
    pub(crate) fn check_target(
        &self,
        weapon: &WeaponRules,
        team: u16,
        target: EntityId,
        state: lagcomp::EntityState,
        rewound: bool,
    ) -> Result<(), RejectReason> {
        if !state.alive {
            return Err(RejectReason::TargetNotAlive);
        }
        if !state.lag_compensated || !rewound {
            return Err(RejectReason::TargetNotCompensated);
        }
        let friendly = self
            .participants
            .get(&target)
            .is_some_and(|p| p.registered && p.participant.team == team);
        if friendly && !weapon.friendly_fire {
            return Err(RejectReason::FriendlyFire);
        }
        Ok(())
    }

    /// A claim that names a target: its state then, then agreement with the trace or
    /// the leeway.
    #[expect(
        clippy::too_many_arguments,
        reason = "one private step of `judge`, which owns all of these"
    )]
    pub(super) fn judge_claim(
        &self,
        history: &History,
        weapon: &WeaponRules,
        team: u16,
        ray: &Ray,
        (target, window_policy, extrapolation): (RewindTarget, WindowPolicy, Extrapolation),
        traced: &Trace,
        claimed: &ClaimedHit,
        basis: &mut Basis,
    ) -> Result<VerdictOutcome, RejectReason> {
        let then = match extrapolation {
            // The target as the client drew it past its newest snapshot.
            Some((from, by)) => history.entity_extrapolated(claimed.target, from, by),
            None => history.entity_at(claimed.target, target, window_policy),
        };
        let then = then
            .map_err(|e| match e {
                QueryError::Entity(_) => RejectReason::TamperedClaim,
                other => time_reason(&other),
            })?
            .ok_or(RejectReason::TamperedClaim)?;
        basis.sample = Some(then.sample().kind);
        // A door or a lift is never hit, whatever the claim says about it.
        if !history
            .role(claimed.target)
            .is_ok_and(EntityRole::is_target)
        {
            return Err(RejectReason::NotATarget);
        }
        self.check_target(
            weapon,
            team,
            claimed.target,
            then.state(),
            then.sample().rewound(),
        )?;
        // The trace sees only entities on one of its layers; a claim on one it cannot see
        // is no hit, however close the point (the leeway absorbs pose differences, not
        // what can be hit).
        if then.state().layers & weapon.hit_layers == 0 {
            return Err(RejectReason::TamperedClaim);
        }

        // The trace agrees: same entity, same hitbox if named, and a named point on (or
        // within the leeway of) the hitbox the trace hit. (Not for an extrapolated
        // picture: the trace sees the frame it was extrapolated from.)
        if extrapolation.is_none()
            && let Some(hit) = traced.hit
            && hit.entity == claimed.target
            && claimed.hitbox.is_none_or(|h| h == hit.hitbox)
            && claimed.point.is_none_or(|p| {
                hit.placement.distance_to_point(p) <= leeway(weapon, &hit.placement)
            })
        {
            return self.judge_trace(history, weapon, team, traced, basis);
        }

        // Otherwise the claimed point must lie on the shot's line and on the claimed
        // hitbox, both within the leeway, with nothing in front of it.
        let rig = history
            .rig(claimed.target)
            .map_err(|_| RejectReason::TamperedClaim)?;
        // In an extrapolated picture a claim without a point hits where the shot's line
        // first crosses the claimed hitbox as drawn.
        let point = claimed
            .point
            .or_else(|| extrapolation.and_then(|_| line_point_on(&then, rig, ray, claimed.hitbox)))
            .ok_or(RejectReason::TamperedClaim)?;
        // The named hitbox (ids are unique within a rig; one the rig lacks matches none),
        // or any, in the rig's order.
        let (hitbox, _, margin) = rig
            .hitboxes()
            .iter()
            .map(|h| h.id)
            .filter(|&id| claimed.hitbox.is_none_or(|named| named == id))
            .filter_map(|id| {
                let placed = then.hitbox(id)?;
                let margin = leeway(weapon, &placed);
                (placed.distance_to_point(point) <= margin).then_some((id, placed, margin))
            })
            .min_by(|a, b| {
                a.1.distance_to_point(point)
                    .total_cmp(&b.1.distance_to_point(point))
            })
            .ok_or(RejectReason::TamperedClaim)?;
        let along = (point - ray.origin()).dot(ray.dir());
        let off_line = (point - ray.origin() - ray.dir() * along).length();
        if along < -margin || along > weapon.max_range + margin || off_line > margin + weapon.radius
        {
            return Err(RejectReason::TamperedClaim);
        }
        // Walls do not move and every client traces them with the same code, so the
        // leeway (which absorbs a rebuilt pose's differences) does not reach behind one.
        // A blocker entity (a door) is rewound to where the shooter saw it, like the
        // target, and stops the shot the same way: the claim is blocked, not tampered.
        if let Some((by, distance)) = stopped_before(history, weapon, traced, claimed, along) {
            return Ok(VerdictOutcome::Blocked { by, distance });
        }
        if let Some(hit) = traced.hit
            && hit.entity != claimed.target
            && hit.distance < along - margin
            && extrapolation.is_none_or(|picture| {
                in_front_in_the_picture(history, hit.entity, picture, ray, along - margin)
            })
        {
            // Someone else stood in front of the claimed point.
            return Err(RejectReason::TamperedClaim);
        }
        let zone = rig
            .hitboxes()
            .iter()
            .find(|h| h.id == hitbox)
            .map(|h| h.zone)
            .ok_or(RejectReason::TamperedClaim)?;
        if let Some(refusal) = self.refusal(history, claimed.target, then.state()) {
            return Ok(VerdictOutcome::Refused {
                target: claimed.target,
                refusal,
                distance: along.max(0.0),
            });
        }
        Ok(VerdictOutcome::Confirmed(Confirmed {
            target: claimed.target,
            hitbox,
            zone,
            damage_multiplier: weapon.damage.of(zone),
            distance: along.max(0.0),
            point,
            by_leeway: true,
        }))
    }
}

/// What stopped the traced shot before the claimed point (`along` metres from the
/// muzzle): the blocker entity or wall it stopped at, or a vehicle (a target that also
/// blocks the weapon) hit in front of the claimed target.
fn stopped_before(
    history: &History,
    weapon: &WeaponRules,
    traced: &Trace,
    claimed: &ClaimedHit,
    along: f32,
) -> Option<(Blocker, f32)> {
    let vehicle = traced.hit.filter(|hit| {
        hit.entity != claimed.target
            && hit.state.layers & weapon.blocked_by != 0
            && history.role(hit.entity).is_ok_and(EntityRole::blocks)
    });
    let stop = match vehicle {
        Some(hit) => Some((Blocker::Entity(hit.entity), hit.distance)),
        None => traced.stopped_by(),
    };
    stop.filter(|&(_, distance)| distance < along)
}
