//! Whom a bot's client shoots at: choosing a target now and then (a cheat choosing the ones
//! it cheats on), and what it knows of who is spawn-protected near its line. The brain that
//! fires at them is the `brain` module.

use glam::Vec3;
use lagcomp_net::interp::View;
use rand::Rng;

use super::{BotBrain, armed_cheats};
use crate::body::{self, Arena};
use crate::cheat::Cheat;

impl BotBrain {
    /// Picks a new target now and then (never itself); a cheat picks the ones it cheats on.
    pub(super) fn choose_target(&mut self, me: usize, now: f64, eye: Vec3, arena: &Arena) {
        let bots = self.remotes.len();
        let wanted = |c: &Self, i: usize| -> bool {
            let remote = &c.remotes[i];
            if i == me || remote.view.is_none() {
                return false;
            }
            match c.cheat {
                Some(Cheat::ThroughWalls) => {
                    c.behind_cover(eye, remote.scratch[body::CHEST as usize].translation, arena)
                }
                // Unprotected ones only: what refuses its claims is the wall, nothing else.
                Some(Cheat::ThroughTheWallSniper) => {
                    c.shown_protected(i) == Some(false)
                        && c.behind_cover(
                            eye,
                            remote.scratch[body::CHEST as usize].translation,
                            arena,
                        )
                }
                Some(Cheat::BlastThroughWall) => c.blast_spot(eye, i, arena).is_some(),
                // Unprotected ones only: what stops its shots is the door, nothing else.
                Some(Cheat::ThroughDoor) => {
                    c.shown_protected(i) == Some(false)
                        && c.behind_door(
                            eye,
                            remote.scratch[body::CHEST as usize].translation,
                            arena,
                        )
                }
                Some(Cheat::Invulnerable) => remote.flags.back().is_some_and(|f| f.1),
                // In sight, past the knife's reach and near enough to lunge at.
                Some(Cheat::LongKnife) => {
                    let chest = remote.scratch[body::CHEST as usize].translation;
                    let (near, far) = armed_cheats::LONG_KNIFE;
                    !c.behind_cover(eye, chest, arena) && (near..far).contains(&chest.distance(eye))
                }
                // A player picks someone it can see: not behind a wall or the level (a
                // door or the tram may still slide into the line).
                _ => !c.behind_cover(eye, remote.scratch[body::CHEST as usize].translation, arena),
            }
        };
        let stale = now - self.target_since > 3.0 || self.target == me;
        let cheat_needs_new = matches!(
            self.cheat,
            Some(
                Cheat::ThroughWalls
                    | Cheat::ThroughDoor
                    | Cheat::Invulnerable
                    | Cheat::BlastThroughWall
                    | Cheat::LongKnife
                    | Cheat::ThroughTheWallSniper
            )
        ) && !wanted(self, self.target);
        if stale || cheat_needs_new {
            let start = self.rng.random_range(0..bots);
            if let Some(next) = (0..bots)
                .map(|k| (start + k) % bots)
                .find(|&i| wanted(self, i))
            {
                if next != self.target {
                    self.target = next;
                    self.target_since = now;
                }
            } else if self.target == me {
                self.target = (me + 1) % bots;
                self.target_since = now;
            }
        }
    }

    /// Whether entity `i` is protected (lag compensation off) in the picture drawn, by
    /// the core's rule: the state of the frame shown, or of the older frame of a blend.
    /// `None` without a view or without that snapshot's flags.
    pub(super) fn shown_protected(&self, i: usize) -> Option<bool> {
        let remote = &self.remotes[i];
        let tick = match remote.view? {
            View::Interpolated { from, .. } => from,
            view => view.shown_tick()?,
        };
        remote
            .flags
            .iter()
            .rev()
            .find(|(t, _)| *t == tick)
            .map(|&(_, protected)| protected)
    }

    /// Whether any other entity shown protected (or not known to be unprotected) is drawn
    /// within reach of the line from `eye` through `point`: the server tests a protected
    /// entity where it is now, which may be a window's worth of running from where it is
    /// drawn.
    pub(super) fn protected_near_line(&self, me: usize, eye: Vec3, point: Vec3) -> bool {
        /// A window (0.5 s) of running at full speed, plus a body's width.
        const REACH: f32 = 4.0;
        let along = (point - eye).normalize_or_zero();
        (0..self.remotes.len()).any(|i| {
            if i == me || self.remotes[i].view.is_none() || self.shown_protected(i) == Some(false) {
                return false;
            }
            let body = self.remotes[i].scratch[body::CHEST as usize].translation - eye;
            let ahead = body.dot(along).max(0.0);
            (body - along * ahead).length() < REACH
        })
    }
}
