//! The history the game thread records into while other threads query it.
//!
//! What lives here: [`SharedHistory`] (a [`History`] behind a reader-writer lock, with a
//! count of writes), its guards, and [`AsOf`], the stamp every answer carries to say which
//! state of the history it was computed on. Running queries and claims is in
//! [`crate::service`] and [`crate::batch`].
//!
//! Why a plain `RwLock`: a rewound query holds the read lock for one query (microseconds),
//! and recording a tick holds the write lock for one tick's recording (ten to twenty times
//! a query's work for 200 players of 20 bones), once per tick. So readers wait at most one
//! tick's recording, and the recorder at most the queries in flight: std's lock is
//! writer-preferring (new readers queue behind a waiting writer), so a stream of queries
//! cannot starve the game thread. The alternatives cost the recorder more than that wait.
//! Publishing a copy of the history every tick (an `Arc` swap) copies the whole ring: 4.2
//! MB of poses for those 200 players, and `History::clone` took about 180 times as long as
//! recording the tick (this crate's benchmark, `history/*`). Keeping two copies and
//! recording every tick into both (left-right) doubles the recording and needs a log of
//! every spawn, despawn and wall to replay on the second copy. Measured here: recording
//! through this lock costs what recording the history directly does (`record_shared`
//! against `record`), and recording while another thread queries as fast as it can took
//! two to three times as long on a loaded two-core machine, where the two threads also
//! share a core.

use std::ops::{Deref, DerefMut};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use lagcomp::{FrameRecorder, History, RecordError, Tick};

/// Which state of the history an answer was computed on.
///
/// Two answers with the same `revision` saw the same history. `newest` names the newest
/// frame then: with every write a recorded frame, it alone identifies the state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AsOf {
    /// Writes made through the [`SharedHistory`] before the answer was computed (frames,
    /// spawns, despawns, static geometry: one per [`SharedHistory::write`] or
    /// [`SharedHistory::record`]).
    pub revision: u64,
    /// The newest recorded tick and its server time then; `None` before the first frame.
    pub newest: Option<(Tick, f64)>,
}

impl AsOf {
    /// The newest recorded tick then.
    #[must_use]
    pub fn newest_tick(&self) -> Option<Tick> {
        self.newest.map(|(tick, _)| tick)
    }
}

/// A [`History`] that one thread writes and any number read, each read seeing a whole
/// state: between two frames, never inside one.
///
/// Share it in an `Arc` between the game thread (which records) and a
/// [`crate::QueryService`] (whose workers query).
#[derive(Debug)]
pub struct SharedHistory {
    inner: RwLock<Stamped>,
}

#[derive(Debug)]
struct Stamped {
    history: History,
    revision: u64,
}

impl Stamped {
    fn as_of(&self) -> AsOf {
        AsOf {
            revision: self.revision,
            newest: self.history.span().map(|(_, newest)| newest),
        }
    }
}

impl SharedHistory {
    /// Shares `history` (revision 0).
    #[must_use]
    pub fn new(history: History) -> Self {
        Self {
            inner: RwLock::new(Stamped {
                history,
                revision: 0,
            }),
        }
    }

    /// Read access: queries see one whole state until the guard is dropped, and the game
    /// thread waits for it to record. Keep it short.
    #[must_use]
    pub fn read(&self) -> HistoryReader<'_> {
        // A panic while writing cannot leave a half-written frame (the recorder finishes
        // the frame when it is dropped, unwinding included), so a poisoned lock still
        // holds a consistent history.
        HistoryReader {
            guard: self.inner.read().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Write access, counted as one write: spawn, despawn, add walls, or record frames.
    /// Readers wait until the guard is dropped.
    #[must_use]
    pub fn write(&self) -> HistoryWriter<'_> {
        let mut guard = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        guard.revision += 1;
        HistoryWriter { guard }
    }

    /// Records the frame of `tick` at server `time`: `fill` records each entity into it
    /// (see [`FrameRecorder::record`]), under the write lock. Compute the bones before
    /// calling: readers wait for as long as `fill` runs.
    ///
    /// # Errors
    /// [`RecordError`] from [`History::begin_frame`] (time not finite, tick or time not
    /// increasing); nothing is recorded then. Errors of single records are `fill`'s.
    pub fn record<R>(
        &self,
        tick: Tick,
        time: f64,
        fill: impl FnOnce(&mut FrameRecorder<'_>) -> R,
    ) -> Result<R, RecordError> {
        let mut writer = self.write();
        let mut frame = writer.begin_frame(tick, time)?;
        let out = fill(&mut frame);
        frame.finish();
        Ok(out)
    }

    /// Which state the history is in now.
    #[must_use]
    pub fn as_of(&self) -> AsOf {
        self.read().as_of()
    }

    /// The history, unshared.
    #[must_use]
    pub fn into_inner(self) -> History {
        self.inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .history
    }
}

/// Read access to a [`SharedHistory`]: dereferences to the [`History`].
#[derive(Debug)]
pub struct HistoryReader<'a> {
    guard: RwLockReadGuard<'a, Stamped>,
}

impl HistoryReader<'_> {
    /// Which state this guard sees.
    #[must_use]
    pub fn as_of(&self) -> AsOf {
        self.guard.as_of()
    }
}

impl Deref for HistoryReader<'_> {
    type Target = History;

    fn deref(&self) -> &History {
        &self.guard.history
    }
}

/// Write access to a [`SharedHistory`]: dereferences to the [`History`].
#[derive(Debug)]
pub struct HistoryWriter<'a> {
    guard: RwLockWriteGuard<'a, Stamped>,
}

impl HistoryWriter<'_> {
    /// The state readers will see once this guard is dropped, if nothing else is written.
    #[must_use]
    pub fn as_of(&self) -> AsOf {
        self.guard.as_of()
    }
}

impl Deref for HistoryWriter<'_> {
    type Target = History;

    fn deref(&self) -> &History {
        &self.guard.history
    }
}

impl DerefMut for HistoryWriter<'_> {
    fn deref_mut(&mut self) -> &mut History {
        &mut self.guard.history
    }
}
