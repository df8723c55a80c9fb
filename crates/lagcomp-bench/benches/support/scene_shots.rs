//! The scene's shots as hitscan claims, and a validator that knows the scene's players:
//! what the benches of every weapon kind start from (a kind's claim is built from the
//! hitscan claim of the same shot). Included with `#[path]` by the benches that use it.

use lagcomp::{BoneTransform, Vec3};
use lagcomp_fixtures::Scene;
use lagcomp_validate::{
    ClaimedHit, ClientTiming, Participant, RenderTime, RuleSet, ShotClaim, Validator, WeaponId,
};

/// The fixture skeleton's eye bone.
pub(crate) const EYE: u16 = 3;

/// A validator with `rules`, every scene entity registered (alternate teams, the eye as
/// aim bone, 100 ms of round trip and interpolation delay).
pub(crate) fn validator(scene: &Scene, rules: &str) -> Validator {
    let mut v = Validator::new(RuleSet::from_toml(rules).expect("valid rules"));
    for (e, &id) in scene.ids.iter().enumerate() {
        v.register(
            id,
            Participant {
                team: (e % 2) as u16,
                aim_bone: EYE,
                aim_forward: Vec3::Z,
            },
        );
        v.set_timing(
            id,
            ClientTiming {
                srtt: 0.1,
                rttvar: 0.005,
                interp_delay: 0.1,
            },
        )
        .expect("a valid timing");
    }
    v
}

/// Each shot as a claim of weapon 1 from a shooter's eye (64 shooters) at its target's
/// chest at the shot's moment, with that chest and when the claim arrives.
pub(crate) fn claims(scene: &Scene) -> Vec<(ShotClaim, Vec3, f64)> {
    let newest = scene.time_of(scene.newest_tick());
    let mut bones = vec![BoneTransform::IDENTITY; scene.bones()];
    let mut seqs = vec![0_u32; 64];
    scene
        .shots
        .iter()
        .enumerate()
        .map(|(i, shot)| {
            let shooter = i % 64;
            let target = if shot.target == shooter {
                (shooter + 1) % scene.ids.len()
            } else {
                shot.target
            };
            scene.entity_bones(shooter, shot.time, &mut bones);
            let eye = bones[usize::from(EYE)].translation;
            scene.entity_bones(target, shot.time, &mut bones);
            let chest = scene.skeleton.chest(&bones);
            seqs[shooter] += 1;
            let claim = ShotClaim {
                shooter: scene.ids[shooter],
                weapon: WeaponId(1),
                seq: seqs[shooter],
                render_time: RenderTime::Time(shot.time),
                origin: eye,
                direction: chest - eye,
                hit: Some(ClaimedHit {
                    target: scene.ids[target],
                    hitbox: None,
                    point: Some(chest),
                }),
            };
            (claim, chest, newest + 0.001)
        })
        .collect()
}
