//! The humanoid's stance between the simulator's type and the wire's: the server sends
//! each body as the [`Stance`] its bones were recorded from, and a client rebuilds the
//! bones with the same [`Stance::pose`], so it draws what the server recorded, bit for bit
//! (the condition is in [`HumanoidStance`]'s documentation).

use lagcomp::BoneTransform;
use lagcomp_game::body::{BONES, Stance};
use lagcomp_wire::HumanoidStance;

/// The stance as it goes on the wire.
pub(crate) fn to_wire(stance: &Stance) -> HumanoidStance {
    HumanoidStance {
        position: stance.position,
        yaw: stance.yaw,
        crouch: stance.crouch,
        phase: stance.phase,
        aim: stance.aim,
    }
}

/// The stance as it came off the wire.
pub(crate) fn from_wire(stance: &HumanoidStance) -> Stance {
    Stance {
        position: stance.position,
        yaw: stance.yaw,
        crouch: stance.crouch,
        phase: stance.phase,
        aim: stance.aim,
    }
}

/// The bones of a stance a server sent, or `None` when they are not bones a history would
/// record (the wire carries any finite numbers: a zero aim, or a position so far out that
/// the bones overflow, is refused here rather than drawn).
pub(crate) fn rebuild(stance: &HumanoidStance) -> Option<Vec<BoneTransform>> {
    let mut bones = vec![BoneTransform::IDENTITY; BONES];
    from_wire(stance).pose(&mut bones);
    bones.iter().all(|b| b.validate().is_ok()).then_some(bones)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lagcomp::{EntityId, Quat, Tick, Vec3};
    use lagcomp_game::body::ArenaSpec;
    use lagcomp_game::server::{CoreConfig, ServerCore};
    use lagcomp_wire::{EntityFrame, EntityPose, ServerMessage, SnapshotEncoder};
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn bits(bones: &[BoneTransform]) -> Vec<[u32; 10]> {
        bones.iter().map(BoneTransform::to_bits).collect()
    }

    /// Every body of a running match, sent as its stance through the encoder and decoded,
    /// rebuilds exactly the bones the server recorded, tick after tick (walking, turning,
    /// crouching, respawning, with aims set between ticks).
    #[test]
    fn stances_sent_rebuild_the_recorded_bones_bit_for_bit() {
        let mut core = ServerCore::new(
            CoreConfig {
                tick_rate: 64.0,
                max_rewind: 0.5,
                respawn_rate: 0.5,
                dodge_rate: 0.5,
                no_rewind_above_rtt: None,
            },
            ArenaSpec::STANDARD.build().expect("valid"),
        )
        .expect("valid");
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let players: Vec<EntityId> = (0..12).map(|_| core.join(&mut rng)).collect();
        let mut encoder = SnapshotEncoder::default();
        let mut compared = 0;
        for tick in 0..640_u32 {
            let time = f64::from(tick) / 64.0;
            for (i, &id) in players.iter().enumerate() {
                // Aims as clients send them: anything normalized, between ticks.
                let aim = Quat::from_rotation_y(tick as f32 * 0.031 + i as f32)
                    * Quat::from_rotation_x((tick as f32 * 0.017).sin());
                let input = lagcomp_game::traffic::ClientInput {
                    frame: tick,
                    aim,
                    ping: None,
                    probe_reply: None,
                    shots: Vec::new(),
                    interp_delay: 0.1,
                    newest_tick: None,
                };
                let _ = core.receive(id, input, time);
            }
            core.tick(Tick(tick), time, 1.0 / 64.0, &mut rng)
                .expect("in order");
            let frames: Vec<EntityFrame> = core
                .bodies(time)
                .map(|b| EntityFrame {
                    id: b.id,
                    alive: true,
                    last_teleport: b.last_teleport,
                    protected: b.protected,
                    in_view_since: None,
                    velocity: b.velocity,
                    pose: EntityPose::Humanoid(to_wire(&b.stance)),
                })
                .collect();
            let recorded: Vec<Vec<BoneTransform>> = core
                .recorded()
                .map(|(_, _, bones)| bones.to_vec())
                .collect();
            let mut decoded = Vec::new();
            for bytes in encoder.encode(Tick(tick), time, &frames).expect("valid") {
                let Ok(ServerMessage::Snapshot(part)) = ServerMessage::decode(bytes) else {
                    panic!("a snapshot part");
                };
                decoded.extend(part.entities);
            }
            assert_eq!(decoded.len(), recorded.len());
            for (frame, bones) in decoded.iter().zip(&recorded) {
                let EntityPose::Humanoid(stance) = &frame.pose else {
                    panic!("sent as a stance");
                };
                let rebuilt = rebuild(stance).expect("valid bones");
                assert_eq!(bits(&rebuilt), bits(bones), "tick {tick}, {:?}", frame.id);
                compared += 1;
            }
        }
        assert_eq!(compared, 640 * 12);
    }

    #[test]
    fn a_stance_whose_bones_are_not_valid_is_refused() {
        let good = HumanoidStance {
            position: Vec3::new(3.0, 0.0, -4.0),
            yaw: 1.0,
            crouch: 0.5,
            phase: 2.0,
            aim: Quat::IDENTITY,
        };
        assert!(rebuild(&good).is_some());
        let zero_aim = HumanoidStance {
            aim: Quat::from_xyzw(0.0, 0.0, 0.0, 0.0),
            ..good
        };
        assert!(rebuild(&zero_aim).is_none());
        let far = HumanoidStance {
            position: Vec3::splat(f32::MAX),
            ..good
        };
        assert!(rebuild(&far).is_none());
    }
}
