//! Interest management: which entities each player is sent, as battle-royale servers
//! decide it. A player's own body always; any other body once it comes within
//! [`InterestConfig::radius`] of the player's, until it is further than the radius plus
//! [`InterestConfig::hysteresis`] (so a body walking along the edge does not flicker in
//! and out of view). Distances are measured on the floor (x and z).
//!
//! [`Interest`] keeps, for each viewer, the entities in its view and the tick each came
//! into it ([`InView::since`]): a client told that tick drops what it held of the entity
//! from before, rather than blending across the time it was out of view
//! ([`crate::client::EntityUpdate::in_view_since`]).
//!
//! No clock, no transport, no allocation once every viewer's lists have grown. The
//! server's history keeps every body whatever anyone is sent, so shot validation does
//! not depend on any of this.

use glam::Vec3;
use lagcomp::{EntityId, Tick};

/// How far a player sees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InterestConfig {
    /// A body this close (metres, on the floor) comes into view.
    pub radius: f32,
    /// A body in view leaves it only beyond `radius + hysteresis` metres.
    pub hysteresis: f32,
}

impl InterestConfig {
    /// Whether both distances are finite and not negative.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.radius.is_finite()
            && self.hysteresis.is_finite()
            && self.radius >= 0.0
            && self.hysteresis >= 0.0
    }
}

/// One entity in a viewer's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InView {
    /// Its index in the bodies given to [`Interest::update`].
    pub index: usize,
    /// The entity.
    pub id: EntityId,
    /// The tick it came into view (and has stayed in since).
    pub since: Tick,
}

/// One viewer's view.
#[derive(Debug, Clone)]
struct Viewer {
    id: EntityId,
    /// In the bodies' order.
    view: Vec<InView>,
    /// The same, sorted by entity, to look up what was in view last time.
    by_id: Vec<(EntityId, Tick)>,
}

/// Every viewer's view (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub struct Interest {
    config: InterestConfig,
    viewers: Vec<Viewer>,
    /// Scratch: the previous sorted list of the viewer being updated.
    previous: Vec<(EntityId, Tick)>,
}

impl Interest {
    /// No viewers yet. A configuration that is not valid ([`InterestConfig::is_valid`])
    /// sees nothing but the viewer itself.
    #[must_use]
    pub fn new(config: InterestConfig) -> Self {
        Self {
            config,
            viewers: Vec::new(),
            previous: Vec::new(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> InterestConfig {
        self.config
    }

    /// Starts keeping `id`'s view (empty until the next [`Interest::update`]). Adding a
    /// viewer twice changes nothing.
    pub fn add_viewer(&mut self, id: EntityId) {
        if self.viewers.iter().all(|v| v.id != id) {
            self.viewers.push(Viewer {
                id,
                view: Vec::new(),
                by_id: Vec::new(),
            });
        }
    }

    /// Forgets `id`'s view; `false` when it was not a viewer.
    pub fn remove_viewer(&mut self, id: EntityId) -> bool {
        let before = self.viewers.len();
        self.viewers.retain(|v| v.id != id);
        self.viewers.len() < before
    }

    /// Recomputes every viewer's view at `tick` from where every body is (`bodies`, the
    /// order snapshots list them in). A viewer without a body among them sees nothing.
    pub fn update(&mut self, tick: Tick, bodies: &[(EntityId, Vec3)]) {
        let enter = self.config.radius * self.config.radius;
        let keep = (self.config.radius + self.config.hysteresis).powi(2);
        let valid = self.config.is_valid();
        for viewer in &mut self.viewers {
            std::mem::swap(&mut self.previous, &mut viewer.by_id);
            viewer.view.clear();
            viewer.by_id.clear();
            let Some(eye) = bodies.iter().find(|b| b.0 == viewer.id).map(|b| b.1) else {
                continue;
            };
            for (index, &(id, at)) in bodies.iter().enumerate() {
                let (dx, dz) = (at.x - eye.x, at.z - eye.z);
                let distance = dx * dx + dz * dz;
                let own = id == viewer.id;
                if !(own || (valid && distance <= keep)) {
                    // Most bodies are far: no need to look them up.
                    continue;
                }
                let was = self
                    .previous
                    .binary_search_by_key(&id.to_bits(), |e| e.0.to_bits())
                    .ok()
                    .map(|i| self.previous[i].1);
                if own || distance <= enter || was.is_some() {
                    let since = was.unwrap_or(tick);
                    viewer.view.push(InView { index, id, since });
                    viewer.by_id.push((id, since));
                }
            }
            viewer.by_id.sort_unstable_by_key(|e| e.0.to_bits());
        }
    }

    /// What `viewer` sees, in the bodies' order (empty for an unknown viewer).
    #[must_use]
    pub fn view(&self, viewer: EntityId) -> &[InView] {
        self.viewers
            .iter()
            .find(|v| v.id == viewer)
            .map_or(&[], |v| v.view.as_slice())
    }

    /// Entities in every viewer's view, together (what a server sends per snapshot).
    #[must_use]
    pub fn total_in_view(&self) -> usize {
        self.viewers.iter().map(|v| v.view.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: u64) -> EntityId {
        EntityId::from_bits(i)
    }

    fn ids(view: &[InView]) -> Vec<u64> {
        view.iter().map(|e| e.id.to_bits()).collect()
    }

    #[test]
    fn a_body_enters_within_the_radius_and_leaves_only_past_the_hysteresis() {
        let mut interest = Interest::new(InterestConfig {
            radius: 10.0,
            hysteresis: 2.0,
        });
        interest.add_viewer(id(1));
        // Rows: the other body's x at each tick, and whether it is in view then.
        let steps = [
            (11.0, false), // beyond the radius: not yet
            (10.0, true),  // at the radius: in
            (11.5, true),  // within the hysteresis: stays
            (12.0, true),  // at its edge: stays
            (12.1, false), // past it: out
            (11.0, false), // back within the hysteresis but not the radius: still out
            (3.0, true),   // in again
        ];
        let mut since = Vec::new();
        for (t, (x, seen)) in steps.into_iter().enumerate() {
            let bodies = [
                (id(1), Vec3::ZERO),
                (id(2), Vec3::new(x, 5.0, 0.0)), // height does not count
            ];
            interest.update(Tick(t as u32), &bodies);
            let view = interest.view(id(1));
            assert_eq!(
                ids(view),
                if seen { vec![1, 2] } else { vec![1] },
                "tick {t}"
            );
            assert_eq!(view[0].since, Tick(0), "its own body, always");
            if seen {
                assert_eq!(view[1].index, 1);
                since.push((t, view[1].since));
            }
        }
        // In view from tick 1 to 3, then again from 6: the tick it came in each time.
        assert_eq!(
            since,
            vec![(1, Tick(1)), (2, Tick(1)), (3, Tick(1)), (6, Tick(6))]
        );
    }

    #[test]
    fn views_follow_the_bodies_order_and_viewers_come_and_go() {
        let mut interest = Interest::new(InterestConfig {
            radius: 5.0,
            hysteresis: 1.0,
        });
        let bodies = [
            (id(9), Vec3::new(0.0, 0.0, 4.0)),
            (id(3), Vec3::ZERO),
            (id(7), Vec3::new(0.0, 0.0, -4.0)),
            (id(5), Vec3::new(30.0, 0.0, 0.0)),
        ];
        interest.add_viewer(id(3));
        interest.add_viewer(id(5));
        interest.add_viewer(id(5));
        interest.add_viewer(id(42)); // no body
        interest.update(Tick(10), &bodies);
        assert_eq!(ids(interest.view(id(3))), vec![9, 3, 7]);
        let indices: Vec<usize> = interest.view(id(3)).iter().map(|e| e.index).collect();
        assert_eq!(indices, vec![0, 1, 2]);
        assert_eq!(ids(interest.view(id(5))), vec![5]);
        assert!(interest.view(id(42)).is_empty());
        assert!(interest.view(id(77)).is_empty(), "not a viewer");
        assert_eq!(interest.total_in_view(), 4);
        assert!(interest.remove_viewer(id(3)));
        assert!(!interest.remove_viewer(id(3)));
        assert!(interest.view(id(3)).is_empty());
    }

    #[test]
    fn a_bad_configuration_shows_only_the_viewer_itself() {
        for (radius, hysteresis) in [(f32::NAN, 1.0), (5.0, -1.0), (f32::INFINITY, 0.0)] {
            let mut interest = Interest::new(InterestConfig { radius, hysteresis });
            interest.add_viewer(id(1));
            interest.update(
                Tick(0),
                &[(id(1), Vec3::ZERO), (id(2), Vec3::new(1.0, 0.0, 0.0))],
            );
            assert_eq!(ids(interest.view(id(1))), vec![1], "{radius} {hysteresis}");
        }
    }
}
