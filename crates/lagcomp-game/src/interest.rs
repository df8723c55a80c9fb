//! Interest management: which entities each player is sent, as battle-royale servers
//! decide it. A player's own body always; any other body once it comes within
//! [`InterestConfig::radius`] of the player's, until it is further than the radius plus
//! [`InterestConfig::hysteresis`] (so a body walking along the edge does not flicker in
//! and out of view). Distances are measured on the floor (x and z).
//!
//! [`Interest`] keeps, for each viewer, the entities in its view and the tick each came
//! into it ([`InView::since`]): a client told that tick drops what it held of the entity
//! from before, rather than blending across the time it was out of view
//! ([`crate::traffic::EntityUpdate::in_view_since`]).
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
    /// Scratch: where the bodies are this tick.
    grid: Grid,
    /// Scratch: the bodies near the viewer being updated, by index.
    near: Vec<u32>,
}

/// The bodies of one tick sorted into square cells on the floor at least as wide as the
/// keep distance, so a viewer looks at the 3 x 3 cells around it instead of every body
/// (200 viewers among 200 bodies: 40,000 distances a tick became about 4,000; the tick
/// spent 8 % of its time here before). Rebuilt each tick in place.
#[derive(Debug, Clone, Default)]
struct Grid {
    /// The corner of cell (0, 0), x and z.
    origin: (f32, f32),
    /// A cell's side, metres.
    cell: f32,
    /// Cells along x and along z.
    size: (usize, usize),
    /// Body indices ordered by cell; cell `c`'s are `order[starts[c]..starts[c + 1]]`.
    order: Vec<u32>,
    starts: Vec<u32>,
    /// Each body's cell.
    cell_of: Vec<u32>,
    /// Scratch for the counting sort: the next free slot of each cell.
    fill: Vec<u32>,
    /// Each body's entity and index, sorted by entity, to find a viewer's own body.
    by_id: Vec<(u64, u32)>,
}

/// At most this many cells along a side: a world spread far wider than the view gets
/// wider cells rather than a huge grid.
const MAX_CELLS: usize = 256;

impl Grid {
    /// Sorts `bodies` into cells of at least `keep` metres; `false` (and a grid not to be
    /// used) when a position or the distance is not finite, or there are more bodies than
    /// a `u32` counts.
    fn build(&mut self, bodies: &[(EntityId, Vec3)], keep: f32) -> bool {
        if u32::try_from(bodies.len()).is_err() || !keep.is_finite() {
            return false;
        }
        self.by_id.clear();
        self.by_id.extend(
            bodies
                .iter()
                .enumerate()
                .map(|(i, b)| (b.0.to_bits(), i as u32)),
        );
        self.by_id.sort_unstable();
        let mut low = (f32::INFINITY, f32::INFINITY);
        let mut high = (f32::NEG_INFINITY, f32::NEG_INFINITY);
        for (_, at) in bodies {
            if !(at.x.is_finite() && at.z.is_finite()) {
                return false;
            }
            low = (low.0.min(at.x), low.1.min(at.z));
            high = (high.0.max(at.x), high.1.max(at.z));
        }
        let extent = (high.0 - low.0).max(high.1 - low.1).max(0.0);
        // A little wider than the keep distance: two bodies within it are never more than
        // one cell apart, whatever the rounding of the cell arithmetic.
        let cell = (keep * 1.001 + 1e-3).max(extent / MAX_CELLS as f32);
        if !(cell.is_finite() && cell > 0.0) {
            return false;
        }
        self.origin = if bodies.is_empty() { (0.0, 0.0) } else { low };
        self.cell = cell;
        let cells = |span: f32| ((span.max(0.0) / cell) as usize + 1).min(MAX_CELLS + 1);
        self.size = (cells(high.0 - low.0), cells(high.1 - low.1));
        let count = self.size.0 * self.size.1;
        self.starts.clear();
        self.starts.resize(count + 1, 0);
        self.cell_of.clear();
        for (_, at) in bodies {
            let (cx, cz) = self.cell_at(*at);
            let c = cz * self.size.0 + cx;
            self.cell_of.push(c as u32);
            self.starts[c + 1] += 1;
        }
        for c in 0..count {
            self.starts[c + 1] += self.starts[c];
        }
        // Counting sort: each cell's bodies in the bodies' order.
        self.order.clear();
        self.order.resize(bodies.len(), 0);
        self.fill.clear();
        self.fill.extend_from_slice(&self.starts[..count]);
        for (i, &c) in self.cell_of.iter().enumerate() {
            let slot = &mut self.fill[c as usize];
            self.order[*slot as usize] = i as u32;
            *slot += 1;
        }
        true
    }

    /// The cell a point falls in (clamped into the grid).
    fn cell_at(&self, at: Vec3) -> (usize, usize) {
        let along = |v: f32, origin: f32, size: usize| {
            (((v - origin) / self.cell).max(0.0) as usize).min(size - 1)
        };
        (
            along(at.x, self.origin.0, self.size.0),
            along(at.z, self.origin.1, self.size.1),
        )
    }

    /// The index of `id`'s body, if it has one.
    fn index_of(&self, id: EntityId) -> Option<usize> {
        let bits = id.to_bits();
        self.by_id
            .binary_search_by_key(&bits, |e| e.0)
            .ok()
            .map(|i| self.by_id[i].1 as usize)
    }

    /// Appends the bodies in the 3 x 3 cells around `at` to `out`, row by row (each
    /// cell's in the bodies' order, not the whole).
    fn near(&self, at: Vec3, out: &mut Vec<u32>) {
        let (cx, cz) = self.cell_at(at);
        for z in cz.saturating_sub(1)..=(cz + 1).min(self.size.1 - 1) {
            let row = z * self.size.0;
            let from = self.starts[row + cx.saturating_sub(1)] as usize;
            let to = self.starts[row + (cx + 1).min(self.size.0 - 1) + 1] as usize;
            out.extend_from_slice(&self.order[from..to]);
        }
    }
}

/// What one viewer's update needs to decide on each body.
struct Look<'a> {
    tick: Tick,
    /// Squared distances: coming into view, staying in it.
    enter: f32,
    keep: f32,
    valid: bool,
    /// The viewer's view before this update, sorted by entity.
    previous: &'a [(EntityId, Tick)],
}

impl Look<'_> {
    /// Puts body `index` (seen from `eye`) in the viewer's view if it belongs there.
    fn consider(&self, viewer: &mut Viewer, bodies: &[(EntityId, Vec3)], index: usize, eye: Vec3) {
        let (id, at) = bodies[index];
        let (dx, dz) = (at.x - eye.x, at.z - eye.z);
        let distance = dx * dx + dz * dz;
        let own = id == viewer.id;
        if !(own || (self.valid && distance <= self.keep)) {
            // Most bodies are far: no need to look them up.
            return;
        }
        let was = self
            .previous
            .binary_search_by_key(&id.to_bits(), |e| e.0.to_bits())
            .ok()
            .map(|i| self.previous[i].1);
        if own || distance <= self.enter || was.is_some() {
            let since = was.unwrap_or(self.tick);
            viewer.view.push(InView { index, id, since });
            viewer.by_id.push((id, since));
        }
    }
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
            grid: Grid::default(),
            near: Vec::new(),
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
        let reach = self.config.radius + self.config.hysteresis;
        let keep = reach.powi(2);
        let valid = self.config.is_valid();
        // Without a usable grid (a bad configuration, a position that is not finite),
        // every viewer looks at every body.
        let grid = valid && self.grid.build(bodies, reach);
        for viewer in &mut self.viewers {
            std::mem::swap(&mut self.previous, &mut viewer.by_id);
            viewer.view.clear();
            viewer.by_id.clear();
            let look = Look {
                tick,
                enter,
                keep,
                valid,
                previous: &self.previous,
            };
            if grid {
                let Some(eye) = self.grid.index_of(viewer.id) else {
                    continue;
                };
                self.near.clear();
                self.grid.near(bodies[eye].1, &mut self.near);
                for &index in &self.near {
                    look.consider(viewer, bodies, index as usize, bodies[eye].1);
                }
                // The few in view back into the bodies' order (cheaper than sorting
                // every body near).
                viewer.view.sort_unstable_by_key(|e| e.index);
            } else {
                let Some(eye) = bodies.iter().find(|b| b.0 == viewer.id).map(|b| b.1) else {
                    continue;
                };
                for index in 0..bodies.len() {
                    look.consider(viewer, bodies, index, eye);
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

    /// The grid against the rule itself, written out the slow way: random walkers in
    /// worlds from cramped to spread out (some bodies without viewers, some viewers
    /// without bodies, one body far off), tick after tick.
    #[test]
    fn the_grid_sees_exactly_what_looking_at_every_body_sees() {
        use rand::{Rng, SeedableRng};
        use std::collections::HashMap;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut compared = 0;
        for (spread, radius, hysteresis) in [
            (30.0_f32, 10.0, 2.0),
            (230.0, 20.0, 5.0),
            (500.0, 3.0, 0.0),
            (50.0, 70.0, 5.0),
            (1.0e6, 20.0, 5.0),
        ] {
            let config = InterestConfig { radius, hysteresis };
            let mut interest = Interest::new(config);
            let mut bodies: Vec<(EntityId, Vec3)> = (0..120)
                .map(|i| {
                    let at = Vec3::new(
                        rng.random_range(-spread..spread) * 0.5,
                        0.0,
                        rng.random_range(-spread..spread) * 0.5,
                    );
                    (id(i), at)
                })
                .collect();
            bodies.push((id(500), Vec3::new(spread * 40.0, 0.0, -spread * 40.0)));
            for viewer in (0..100).chain([500, 900]) {
                interest.add_viewer(id(viewer));
            }
            let mut expected: HashMap<u64, HashMap<u64, Tick>> = HashMap::new();
            let step = (radius + hysteresis) * 0.3;
            for t in 0..60_u32 {
                for body in bodies.iter_mut().take(120) {
                    body.1.x += rng.random_range(-step..step);
                    body.1.z += rng.random_range(-step..step);
                }
                interest.update(Tick(t), &bodies);
                for viewer in (0..100).chain([500, 900]) {
                    let before = expected.remove(&viewer).unwrap_or_default();
                    let mut now = HashMap::new();
                    let mut view = Vec::new();
                    if let Some(eye) = bodies.iter().find(|b| b.0 == id(viewer)).map(|b| b.1) {
                        for (index, &(other, at)) in bodies.iter().enumerate() {
                            let d = (at.x - eye.x).hypot(at.z - eye.z);
                            let was = before.get(&other.to_bits()).copied();
                            let seen = other == id(viewer)
                                || d <= radius
                                || (was.is_some() && d <= radius + hysteresis);
                            if seen {
                                let since = was.unwrap_or(Tick(t));
                                now.insert(other.to_bits(), since);
                                view.push(InView {
                                    index,
                                    id: other,
                                    since,
                                });
                            }
                        }
                    }
                    assert_eq!(
                        interest.view(id(viewer)),
                        view.as_slice(),
                        "viewer {viewer} at tick {t}, spread {spread}"
                    );
                    compared += view.len();
                    expected.insert(viewer, now);
                }
            }
        }
        assert!(compared > 10_000, "{compared}");
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
