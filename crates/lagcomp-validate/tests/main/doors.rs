//! Moving blockers in verdicts (issue 24): a 20-player server with a static wall and a
//! sliding door spawned as a blocker entity. A shot at a player behind the door is judged
//! against the door where the shooter saw it (rewound, like the player): `Blocked` naming
//! the door while it was closed in the shooter's picture, confirmed once it was open, never
//! `tampered_claim`; the same as behind the wall. A shot into the door is blocked by it, not
//! a hit on it, and a claim naming the door is refused as `not_a_target`.

use std::sync::Arc;

use lagcomp::{
    Blocker, BoneTransform, EntityId, EntityRole, EntityState, History, HistoryConfig, Hitbox,
    Pose, Rig, Shape, StaticId, Tick, Vec3, Zone,
};
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RejectReason, RenderTime, RuleSet, ShotClaim, Validator,
    VerdictOutcome, WeaponId,
};

pub(crate) const RATE: f64 = 64.0;
const HEAD: f32 = 0.12;
/// The door is closed (across x = 0) until this tick and slid aside from it on.
pub(crate) const OPENS_AT: u32 = 24;
/// Ticks recorded before shots are judged (0..TICKS), inside the 0.5 s window.
const TICKS: u32 = 40;
/// The door's line, and how far each duellist stands from it on either side.
const SIDE: f32 = 10.0;
/// Where the wall's duel takes place, along x.
const WALL_X: f32 = 20.0;
/// The door: 2 m wide, 3 m high, 10 cm thick; closed at x = 0, open at x = 3.
const DOOR_HALF: Vec3 = Vec3::new(1.0, 1.5, 0.05);
const OPEN_X: f32 = 3.0;

pub(crate) const TIMING: ClientTiming = ClientTiming {
    srtt: 0.1,
    rttvar: 0.005,
    interp_delay: 0.1,
};

/// The players of the door's duel, north (z > 0, looking -z) and south (looking +z).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    North,
    South,
}

impl Side {
    fn z(self) -> f32 {
        match self {
            Self::North => SIDE,
            Self::South => -SIDE,
        }
    }

    fn other(self) -> Self {
        match self {
            Self::North => Self::South,
            Self::South => Self::North,
        }
    }

    /// The way this side looks: towards the other.
    fn forward(self) -> Vec3 {
        Vec3::new(0.0, 0.0, -self.z().signum())
    }
}

/// The server: a history with the door, the wall and 20 players, and its validator.
pub(crate) struct DoorServer {
    pub(crate) history: History,
    pub(crate) validator: Validator,
    pub(crate) door: EntityId,
    pub(crate) wall: StaticId,
    /// The door's duellists, north and south.
    pub(crate) duel: [EntityId; 2],
    /// The wall's duellists, north and south of the wall.
    pub(crate) wall_duel: [EntityId; 2],
}

fn ball() -> Arc<Rig> {
    Arc::new(
        Rig::rigid(vec![Hitbox::new(
            0,
            "head",
            Zone::Head,
            0,
            Shape::sphere(HEAD),
        )])
        .unwrap(),
    )
}

impl DoorServer {
    /// The door spawned with `role` (a blocker, as a game would; a target, as before roles).
    pub(crate) fn new(role: EntityRole) -> Self {
        let mut history = History::new(HistoryConfig {
            tick_rate: RATE,
            max_rewind: 0.5,
        })
        .unwrap();
        let door_rig = Rig::rigid(vec![Hitbox::new(
            0,
            "panel",
            Zone::Custom(7),
            0,
            Shape::cuboid(DOOR_HALF),
        )])
        .unwrap();
        let door = history.spawn_as(Arc::new(door_rig), role);
        let wall = history
            .add_static(
                Shape::cuboid(Vec3::new(2.0, 2.0, 0.1)),
                Pose::from_translation(Vec3::new(WALL_X, 0.0, 0.0)),
                u32::MAX,
            )
            .unwrap();
        // Two duellists at the door, two at the wall, and 16 bystanders well off both
        // lines of fire: 20 players.
        let mut places = vec![
            Vec3::new(0.0, 0.0, SIDE),
            Vec3::new(0.0, 0.0, -SIDE),
            Vec3::new(WALL_X, 0.0, SIDE),
            Vec3::new(WALL_X, 0.0, -SIDE),
        ];
        places.extend((0..16).map(|i| Vec3::new(-40.0 - 3.0 * i as f32, 0.0, 5.0)));
        let players: Vec<EntityId> = places.iter().map(|_| history.spawn(ball())).collect();
        for tick in 0..TICKS {
            let mut frame = history
                .begin_frame(Tick(tick), f64::from(tick) / RATE)
                .unwrap();
            let door_x = if tick < OPENS_AT { 0.0 } else { OPEN_X };
            frame
                .record_rigid(
                    door,
                    BoneTransform::from_translation(Vec3::new(door_x, 0.0, 0.0)),
                    EntityState::default(),
                )
                .unwrap();
            for (&player, &at) in players.iter().zip(&places) {
                frame
                    .record_rigid(
                        player,
                        BoneTransform::from_translation(at),
                        EntityState::default(),
                    )
                    .unwrap();
            }
        }
        let rules = RuleSet::from_toml(&crate::weapon_layers::weapon("rifle", 1, "")).unwrap();
        let mut validator = Validator::new(rules);
        for (i, &player) in players.iter().enumerate() {
            // North players on team 1, south ones on team 2, looking at each other.
            let north = places[i].z > 0.0;
            let side = if north { Side::North } else { Side::South };
            validator.register(
                player,
                Participant {
                    team: if north { 1 } else { 2 },
                    aim_bone: 0,
                    aim_forward: side.forward(),
                },
            );
            validator.set_timing(player, TIMING).unwrap();
        }
        Self {
            history,
            validator,
            door,
            wall,
            duel: [players[0], players[1]],
            wall_duel: [players[2], players[3]],
        }
    }

    fn duellist(&self, side: Side, at_wall: bool) -> EntityId {
        let pair = if at_wall { self.wall_duel } else { self.duel };
        pair[usize::from(side == Side::South)]
    }

    /// The honest shot of `side`'s duellist (at the door, or at the wall) at the other
    /// side's head, drawn at `render_tick`, claiming the head (or not), and when it
    /// arrives.
    pub(crate) fn shot(
        &self,
        side: Side,
        at_wall: bool,
        render_tick: u32,
        claim: bool,
    ) -> (ShotClaim, f64) {
        let x = if at_wall { WALL_X } else { 0.0 };
        let origin = Vec3::new(x, 0.0, side.z());
        let head = Vec3::new(x, 0.0, side.other().z());
        let render = f64::from(render_tick) / RATE;
        let claim = ShotClaim {
            shooter: self.duellist(side, at_wall),
            weapon: WeaponId(1),
            seq: render_tick,
            render_time: RenderTime::Time(render),
            origin,
            direction: side.forward(),
            hit: claim.then_some(ClaimedHit {
                target: self.duellist(side.other(), at_wall),
                hitbox: None,
                // The near side of the head, where the line meets it.
                point: Some(head - side.forward() * HEAD),
            }),
        };
        (claim, render + TIMING.expected_rewind())
    }

    pub(crate) fn judge(&self, (claim, received_at): &(ShotClaim, f64)) -> VerdictOutcome {
        self.validator
            .clone()
            .validate(&self.history, claim, *received_at)
            .outcome
    }
}

/// The cheat and its honest twin for `reasons.rs`: a shot drawn just after the door
/// opened, claiming the door, and the same shot claiming the player behind it. Returns
/// the cheat's reason.
pub(crate) fn not_a_target_and_its_honest_twin() -> RejectReason {
    let server = DoorServer::new(EntityRole::Blocker);
    let honest = server.shot(Side::North, false, OPENS_AT + 1, true);
    let outcome = server.judge(&honest);
    let behind = server.duellist(Side::South, false);
    assert!(
        matches!(outcome, VerdictOutcome::Confirmed(hit) if hit.target == behind),
        "{outcome:?}"
    );
    let (mut cheat, received_at) = honest;
    let claimed = cheat.hit.as_mut().unwrap();
    claimed.target = server.door;
    claimed.point = Some(Vec3::new(OPEN_X, 0.0, DOOR_HALF.z));
    server
        .judge(&(cheat, received_at))
        .reason()
        .expect("a claim on the door is rejected")
}

/// What a row expects.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Confirmed on the other duellist.
    Hit,
    /// Blocked by the door.
    Door,
    /// Blocked by the wall.
    Wall,
}

#[test]
fn a_shot_at_a_player_behind_a_door_is_judged_against_the_door_the_shooter_saw() {
    let server = DoorServer::new(EntityRole::Blocker);
    // (where, shooter's side, tick drawn at, outcome). Each shot arrives an expected
    // rewind (0.15 s, ~10 ticks) after it was drawn.
    let rows = [
        // Closed in the picture and still closed when the shot arrives.
        ("door", Side::North, 12, Expect::Door),
        ("door", Side::South, 12, Expect::Door),
        // Drawn closed, arriving after it opened: the door the shooter saw blocks.
        ("door", Side::North, OPENS_AT - 4, Expect::Door),
        ("door", Side::South, OPENS_AT - 1, Expect::Door),
        // Drawn open: the shot passes where the door no longer was.
        ("door", Side::North, OPENS_AT, Expect::Hit),
        ("door", Side::South, OPENS_AT + 4, Expect::Hit),
        // The wall, for comparison: the same outcome as the closed door.
        ("wall", Side::North, 12, Expect::Wall),
        ("wall", Side::South, OPENS_AT + 4, Expect::Wall),
    ];
    for (place, side, tick, expect) in rows {
        let at_wall = place == "wall";
        let target = server.duellist(side.other(), at_wall);
        for claims in [true, false] {
            let what = format!("{place}, {side:?} side, drawn at tick {tick}, claimed {claims}");
            let outcome = server.judge(&server.shot(side, at_wall, tick, claims));
            match (expect, outcome) {
                (Expect::Hit, VerdictOutcome::Confirmed(hit)) => {
                    assert_eq!(hit.target, target, "{what}");
                }
                (Expect::Door, VerdictOutcome::Blocked { by, distance }) => {
                    assert_eq!(by, Blocker::Entity(server.door), "{what}");
                    // The door's near face, 5 cm before its line, 10 m from the muzzle.
                    assert!(
                        (distance - (SIDE - DOOR_HALF.z)).abs() < 1e-4,
                        "{what}: {distance}"
                    );
                }
                (Expect::Wall, VerdictOutcome::Blocked { by, .. }) => {
                    assert_eq!(by, Blocker::Wall(server.wall), "{what}");
                }
                (_, outcome) => panic!("{what}: expected {expect:?}, got {outcome:?}"),
            }
        }
    }
}

#[test]
fn a_shot_into_the_door_is_blocked_and_a_claim_on_the_door_is_not_a_target() {
    let server = DoorServer::new(EntityRole::Blocker);
    for side in [Side::North, Side::South] {
        let (mut shot, received_at) = server.shot(side, false, 12, true);
        let hit = shot.hit.as_mut().unwrap();
        hit.target = server.door;
        hit.point = Some(Vec3::new(0.0, 0.0, side.z().signum() * DOOR_HALF.z));
        // The claim names the door: refused, whatever else is right about it.
        assert_eq!(
            server.judge(&(shot, received_at)),
            VerdictOutcome::Rejected {
                reason: RejectReason::NotATarget
            },
            "{side:?}"
        );
        // The same shot claiming nothing: the door stops it, and it is no hit on the door.
        shot.hit = None;
        assert!(
            matches!(
                server.judge(&(shot, received_at)),
                VerdictOutcome::Blocked { by: Blocker::Entity(door), .. } if door == server.door
            ),
            "{side:?}"
        );
    }
}

#[test]
fn a_vehicle_is_hit_and_covers_who_stands_behind_it() {
    // The door's entity spawned as a target that blocks (a vehicle parked in the gap).
    let server = DoorServer::new(EntityRole::TargetAndBlocker);
    for side in [Side::North, Side::South] {
        // Unclaimed: the vehicle is hit.
        let outcome = server.judge(&server.shot(side, false, 12, false));
        assert!(
            matches!(outcome, VerdictOutcome::Confirmed(hit) if hit.target == server.door),
            "{side:?}: {outcome:?}"
        );
        // Claiming the player behind it: blocked by the vehicle, not tampered.
        let outcome = server.judge(&server.shot(side, false, 12, true));
        assert!(
            matches!(
                outcome,
                VerdictOutcome::Blocked { by: Blocker::Entity(vehicle), .. } if vehicle == server.door
            ),
            "{side:?}: {outcome:?}"
        );
        // Moved away: the player behind is hit.
        let outcome = server.judge(&server.shot(side, false, OPENS_AT + 2, true));
        assert!(
            matches!(outcome, VerdictOutcome::Confirmed(hit) if hit.target != server.door),
            "{side:?}: {outcome:?}"
        );
    }
}
