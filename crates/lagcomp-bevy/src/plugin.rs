//! The plugin, the resources it adds (the history, the validator, the clock) and the
//! system sets it runs in.

use std::fmt;

use bevy_app::{App, FixedPostUpdate, Plugin};
use bevy_ecs::prelude::*;
use bevy_ecs::schedule::{InternedScheduleLabel, ScheduleLabel};
use lagcomp::{ConfigError, History, HistoryConfig, Tick};
use lagcomp_validate::{RuleSet, Validator};

use crate::entities::{self, HitboxEntities};
use crate::record::{self, RecordReport};
use crate::shots::{self, ShotFired, ShotJudged};

/// Gives a Bevy app rewound hitboxes and validated shots.
///
/// Adds [`LagCompHistory`], [`LagCompValidator`], [`LagCompClock`], [`HitboxEntities`]
/// and [`RecordReport`] as resources (and, with the `debug-draw` feature,
/// `ShotSketches`), [`ShotFired`] and [`ShotJudged`] as messages, the observers that
/// follow [`crate::Hitboxes`] and [`crate::Shooter`] components, and, in the recording
/// schedule ([`FixedPostUpdate`] unless [`LagCompPlugin::record_in`] says otherwise), the
/// systems of [`LagCompSystems::Record`] then [`LagCompSystems::Validate`].
///
/// Run the game's movement before [`LagCompSystems::Record`] (any system in `FixedUpdate`
/// is): each fixed tick records the poses that tick produced.
#[derive(Debug, Clone)]
pub struct LagCompPlugin {
    config: HistoryConfig,
    schedule: InternedScheduleLabel,
    rules: RuleSet,
    tick_source: Option<TickSource>,
    /// How many judged shots [`crate::ShotSketches`] keeps.
    #[cfg(feature = "debug-draw")]
    sketched: usize,
}

/// A system that copies a game's tick into the [`LagCompClock`], named for `Debug`.
#[derive(Clone, Copy)]
struct TickSource {
    name: &'static str,
    add: fn(&mut App, InternedScheduleLabel),
}

impl fmt::Debug for TickSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Default for LagCompPlugin {
    /// 64 ticks a second, a one-second window, recording in [`FixedPostUpdate`], no
    /// weapons (every shot is rejected as `unknown_weapon` until rules are given).
    fn default() -> Self {
        Self {
            config: HistoryConfig::default(),
            schedule: FixedPostUpdate.intern(),
            rules: RuleSet {
                policy: lagcomp_validate::Policy::default(),
                weapons: Default::default(),
            },
            tick_source: None,
            #[cfg(feature = "debug-draw")]
            sketched: crate::debug_draw::ShotSketches::DEFAULT_KEEP,
        }
    }
}

impl LagCompPlugin {
    /// A plugin recording `tick_rate` frames a second (the game's fixed timestep rate) and
    /// keeping `max_rewind` seconds of them.
    ///
    /// # Errors
    /// [`ConfigError`] for a rate or window the history refuses (see [`History::new`]).
    pub fn new(tick_rate: f64, max_rewind: f64) -> Result<Self, ConfigError> {
        let config = HistoryConfig {
            tick_rate,
            max_rewind,
        };
        // Checked here so that building the plugin cannot fail.
        History::new(config)?;
        Ok(Self {
            config,
            ..Self::default()
        })
    }

    /// Records (and validates) in `schedule` instead of [`FixedPostUpdate`]. Whatever the
    /// schedule, the recorded poses are computed from the entities' `Transform`s and their
    /// parents' at that moment, not read from `GlobalTransform` (which Bevy only brings up
    /// to date in `PostUpdate`).
    #[must_use]
    pub fn record_in(mut self, schedule: impl ScheduleLabel) -> Self {
        self.schedule = schedule.intern();
        self
    }

    /// Validates shots with `rules` (weapons and timing policy).
    #[must_use]
    pub fn rules(mut self, rules: RuleSet) -> Self {
        self.rules = rules;
        self
    }

    /// Numbers frames with the game's own tick (lightyear's or replicon's, say) instead of
    /// the plugin's counter: before each recording the [`LagCompClock`] is set to
    /// `T::server_tick()`, and a tick that has not advanced since the last frame records
    /// nothing.
    #[must_use]
    pub fn tick_from<T: ServerTick>(mut self) -> Self {
        self.tick_source = Some(TickSource {
            name: std::any::type_name::<T>(),
            add: |app, schedule| {
                app.add_systems(
                    schedule,
                    follow_server_tick::<T>.before(LagCompSystems::Record),
                );
            },
        });
        self
    }

    /// Keeps the last `shots` judged shots (at least one) in [`crate::ShotSketches`] for
    /// drawing, instead of [`crate::ShotSketches::DEFAULT_KEEP`].
    #[cfg(feature = "debug-draw")]
    #[must_use]
    pub fn sketch_shots(mut self, shots: usize) -> Self {
        self.sketched = shots;
        self
    }

    /// The history's configuration.
    #[must_use]
    pub fn config(&self) -> HistoryConfig {
        self.config
    }
}

impl Plugin for LagCompPlugin {
    fn build(&self, app: &mut App) {
        let history = History::new(self.config).expect("LagCompPlugin::new checked the config");
        app.insert_resource(LagCompHistory(history))
            .insert_resource(LagCompValidator(Validator::new(self.rules.clone())))
            .insert_resource(LagCompClock::new(self.config.tick_rate))
            .init_resource::<HitboxEntities>()
            .init_resource::<RecordReport>()
            .init_resource::<record::JointSlots>()
            .add_message::<ShotFired>()
            .add_message::<ShotJudged>()
            .add_observer(entities::on_hitboxes_inserted)
            .add_observer(entities::on_hitboxes_discarded)
            .add_observer(shots::on_shooter_inserted)
            .add_observer(record::on_joints_removed)
            .configure_sets(
                self.schedule,
                (LagCompSystems::Record, LagCompSystems::Validate).chain(),
            )
            .add_systems(
                self.schedule,
                (
                    record::resolve_joints,
                    record::record_frame,
                    entities::forget_aged_out,
                )
                    .chain()
                    .in_set(LagCompSystems::Record),
            )
            .add_systems(
                self.schedule,
                (shots::sync_shooters, shots::validate_shots)
                    .chain()
                    .in_set(LagCompSystems::Validate),
            );
        #[cfg(feature = "debug-draw")]
        app.insert_resource(crate::debug_draw::ShotSketches::new(self.sketched));
        if let Some(source) = self.tick_source {
            (source.add)(app, self.schedule);
        }
    }
}

/// The plugin's systems, in the recording schedule. `Record` runs before `Validate`.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LagCompSystems {
    /// Finds skeletal rigs' joints, records the tick's frame, forgets entities whose
    /// history has aged out. Order the game's movement before it.
    Record,
    /// Judges the [`ShotFired`] messages written before it, against the frame just
    /// recorded.
    Validate,
}

/// The recorded past of every entity with [`crate::Hitboxes`] (and static walls added
/// through it). Queries are easiest through [`crate::RewoundHitboxes`]; the core API is
/// all here for the rest (`add_static`, `reserve`, `entity_at`, ...).
#[derive(Resource, Debug)]
pub struct LagCompHistory(pub History);

impl std::ops::Deref for LagCompHistory {
    type Target = History;
    fn deref(&self) -> &History {
        &self.0
    }
}

impl std::ops::DerefMut for LagCompHistory {
    fn deref_mut(&mut self) -> &mut History {
        &mut self.0
    }
}

/// The shot validator: rules, registered shooters and their timings.
#[derive(Resource, Debug)]
pub struct LagCompValidator(pub Validator);

impl std::ops::Deref for LagCompValidator {
    type Target = Validator;
    fn deref(&self) -> &Validator {
        &self.0
    }
}

impl std::ops::DerefMut for LagCompValidator {
    fn deref_mut(&mut self) -> &mut Validator {
        &mut self.0
    }
}

/// Which tick the next frame is recorded as, and at what server time.
///
/// Frame `tick` is recorded at `tick / tick_rate` seconds: the server time that
/// [`lagcomp::RewindTarget::at`], claims' [`lagcomp_validate::RenderTime::Time`] and
/// `received_at` are measured in. By default the plugin counts ticks itself from 0; with
/// [`LagCompPlugin::tick_from`] (or [`LagCompClock::set_next_tick`]) the game numbers
/// them.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub struct LagCompClock {
    tick_rate: f64,
    next: Tick,
    newest: Option<(Tick, f64)>,
}

impl LagCompClock {
    fn new(tick_rate: f64) -> Self {
        Self {
            tick_rate,
            next: Tick(0),
            newest: None,
        }
    }

    /// The server time of `tick`, seconds.
    #[must_use]
    pub fn time_of(&self, tick: Tick) -> f64 {
        f64::from(tick.0) / self.tick_rate
    }

    /// The tick the next frame will be recorded as.
    #[must_use]
    pub fn next_tick(&self) -> Tick {
        self.next
    }

    /// Records the next frame as `tick`. A tick not after the newest recorded one records
    /// nothing (the frame is skipped until the tick moves on).
    pub fn set_next_tick(&mut self, tick: Tick) {
        self.next = tick;
    }

    /// The newest recorded frame's tick and server time.
    #[must_use]
    pub fn newest(&self) -> Option<(Tick, f64)> {
        self.newest
    }

    /// The tick and time to record now, or `None` when the tick has not advanced.
    pub(crate) fn due(&self) -> Option<(Tick, f64)> {
        match self.newest {
            Some((newest, _)) if self.next <= newest => None,
            _ => Some((self.next, self.time_of(self.next))),
        }
    }

    /// Notes that `tick` was recorded; the next frame is the tick after it.
    pub(crate) fn recorded(&mut self, tick: Tick, time: f64) {
        self.newest = Some((tick, time));
        self.next = Tick(tick.0.saturating_add(1));
    }
}

/// A game's own tick counter (lightyear's `TickManager`, replicon's `RepliconTick`),
/// wrapped in a resource: see [`LagCompPlugin::tick_from`].
///
/// Turning what a client saw into a rewind target:
/// - lightyear shows remote entities an interpolation delay behind the server and stamps
///   inputs with the tick they were made at: a shot made at client tick `t` with delay `d`
///   seconds saw server time `time_of(t) - d`, so claim
///   `RenderTime::Time(clock.time_of(t) - d)`; give the validator the measured round trip
///   and that delay as [`lagcomp_validate::ClientTiming`] (on [`crate::Shooter`]) so it
///   checks the claim against what the connection allows instead of trusting `d`.
/// - a client of `lagcomp-net` stamps each shot with the two snapshot ticks it was
///   interpolating between and the fraction: claim exactly that,
///   `RenderTime::Ticks { from, to, fraction }`.
pub trait ServerTick: Resource {
    /// The tick the frame being recorded now belongs to.
    fn server_tick(&self) -> Tick;
}

fn follow_server_tick<T: ServerTick>(source: Res<T>, mut clock: ResMut<LagCompClock>) {
    clock.set_next_tick(source.server_tick());
}
