//! Rewound queries: rays, sphere sweeps, overlaps and one entity at a past moment, with
//! results written into the caller's buffers. Queries change nothing; they lock the
//! history like every other call, so a query waits for a tick being recorded.

use lagcomp::{
    History, Obb, Overlap, Query, QueryError, Ray, RewindError, RewindTarget, StaticHit, Trace,
    WindowPolicy,
};

use crate::args::{input, optional, output, slice, slice_out};
use crate::history::{HistoryState, LagcompHistory, with_history};
use crate::status::{
    Failure, LAGCOMP_BAD_LENGTH, LAGCOMP_BUFFER_TOO_SMALL, LAGCOMP_INVALID_ARGUMENT,
    LAGCOMP_NOT_FINITE, LAGCOMP_REWIND, LAGCOMP_UNKNOWN_ENTITY, LagcompStatus, fail, guard,
};
use crate::types::{
    LagcompBoneTransform, LagcompEntityState, LagcompHit, LagcompOverlap, LagcompQuat,
    LagcompRewind, LagcompSample, LagcompVec3, c_bone, c_vec3, entity, finite, finite_vec3, quat,
    tick,
};

/// `LagcompQuery::target`: an absolute server time, `time`.
pub const LAGCOMP_TARGET_TIME: u32 = 0;
/// `LagcompQuery::target`: what a client drew, `from_tick` to `to_tick` at `fraction`.
pub const LAGCOMP_TARGET_TICKS: u32 = 1;
/// `LagcompQuery::target`: `latency` seconds before `time` (the present).
pub const LAGCOMP_TARGET_LATENCY: u32 = 2;
/// `LagcompQuery::window_policy`: refuse a target outside the window (`LAGCOMP_REWIND`).
pub const LAGCOMP_WINDOW_REJECT: u32 = 0;
/// `LagcompQuery::window_policy`: move it to the window's nearest edge and say so.
pub const LAGCOMP_WINDOW_CLAMP: u32 = 1;

/// The moment and filters of a query. Fill with `lagcomp_query_default`, then set the
/// target.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LagcompQuery {
    /// `sizeof(LagcompQuery)` as the caller compiled it.
    pub struct_size: u32,
    /// `LAGCOMP_TARGET_*`.
    pub target: u32,
    /// Server seconds: the target time, or the present for a latency target.
    pub time: f64,
    /// Seconds before `time`, for a latency target; not negative.
    pub latency: f64,
    /// The older tick a client interpolated from.
    pub from_tick: u32,
    /// The newer tick it interpolated towards (equal to `from_tick` for a held frame).
    pub to_tick: u32,
    /// Progress from `from_tick` to `to_tick`, 0 to 1.
    pub fraction: f32,
    /// `LAGCOMP_WINDOW_*`.
    pub window_policy: u32,
    /// Only entities and walls whose layers share a bit with this mask are seen.
    pub layers: u32,
    /// Must be 0.
    pub reserved: u32,
    /// Entities never reported (the shooter), or null.
    pub ignore: *const u64,
    /// How many ids `ignore` holds.
    pub ignore_count: usize,
}

/// A ray: where it starts, where it goes (any non-zero length) and how far it reaches.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompRay {
    /// Start, world space.
    pub origin: LagcompVec3,
    /// Direction; normalized by the library.
    pub direction: LagcompVec3,
    /// Reach, in [0, 4e6].
    pub max_distance: f32,
}

/// An oriented box for overlap queries.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompObb {
    /// Centre.
    pub center: LagcompVec3,
    /// Orientation; unit length.
    pub rotation: LagcompQuat,
    /// Half the size along its axes; not negative.
    pub half_extents: LagcompVec3,
}

/// What a trace came to: the closest entity hit before any wall, and the first wall.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompTrace {
    /// 1 when `hit` holds the closest hit.
    pub has_hit: u8,
    /// 1 when the `blocker_*` fields hold the first wall within reach.
    pub has_blocker: u8,
    /// 1 when the `blocking_*` fields hold the blocker entity (a door,
    /// `LAGCOMP_ROLE_BLOCKER`) the trace stopped at, as it stood at the rewound time,
    /// before every hit and wall.
    pub has_blocking_entity: u8,
    /// Must be ignored.
    pub reserved: u8,
    /// The wall's id (from `lagcomp_history_add_static`).
    pub blocker_id: u32,
    /// Distance along the ray to the wall.
    pub blocker_distance: f32,
    /// Where the wall was touched.
    pub blocker_point: LagcompVec3,
    /// The wall's outward normal there.
    pub blocker_normal: LagcompVec3,
    /// The moment looked at.
    pub rewind: LagcompRewind,
    /// The closest hit, when `has_hit`.
    pub hit: LagcompHit,
    /// The blocker entity's id, when `has_blocking_entity`.
    pub blocking_entity: u64,
    /// Distance along the trace to it, metres.
    pub blocking_distance: f32,
    /// Its hitbox the trace met.
    pub blocking_hitbox: u16,
    /// Must be ignored.
    pub reserved2: u16,
}

/// `lagcomp_history_entity_at` `mode`: the pose a shot would be tested against (the
/// present pose while the entity's lag compensation was off).
pub const LAGCOMP_ENTITY_AS_HIT: u32 = 0;
/// `lagcomp_history_entity_at` `mode`: always the pose recorded at the target (for a
/// shooter's own position and view).
pub const LAGCOMP_ENTITY_AS_RECORDED: u32 = 1;

/// One entity as it was at a query's moment.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagcompEntitySample {
    /// 0 when the entity was not recorded around that moment (nothing else is set).
    pub found: u8,
    /// Must be ignored.
    pub reserved: [u8; 3],
    /// Its state then.
    pub state: LagcompEntityState,
    /// How it was sampled.
    pub sample: LagcompSample,
    /// The moment looked at.
    pub rewind: LagcompRewind,
}

/// Fills `out` with a query at server time 0 (set the target), rejecting targets
/// outside the window, every layer, nothing ignored.
///
/// # Safety
/// `out` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_query_default(out: *mut LagcompQuery) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { output("out", out) }?;
        *out = LagcompQuery {
            struct_size: size_of::<LagcompQuery>() as u32,
            target: LAGCOMP_TARGET_TIME,
            time: 0.0,
            latency: 0.0,
            from_tick: 0,
            to_tick: 0,
            fraction: 0.0,
            window_policy: LAGCOMP_WINDOW_REJECT,
            layers: u32::MAX,
            reserved: 0,
            ignore: std::ptr::null(),
            ignore_count: 0,
        };
        Ok(())
    })
}

/// A checked query: its target, window policy, layers and ignore list.
pub(crate) struct QuerySpec {
    pub(crate) target: RewindTarget,
    pub(crate) policy: WindowPolicy,
    layers: u32,
}

impl LagcompQuery {
    /// Checks the query and copies its ignore list (`ids`, read from `self.ignore`) into
    /// `ignore`.
    pub(crate) fn to_spec(
        self,
        ids: &[u64],
        ignore: &mut Vec<lagcomp::EntityId>,
    ) -> Result<QuerySpec, Failure> {
        if (self.struct_size as usize) < size_of::<LagcompQuery>() {
            return fail(
                LAGCOMP_BAD_LENGTH,
                format!(
                    "query struct_size {} is smaller than LagcompQuery ({})",
                    self.struct_size,
                    size_of::<LagcompQuery>()
                ),
            );
        }
        let target = match self.target {
            LAGCOMP_TARGET_TIME => RewindTarget::at(self.time),
            LAGCOMP_TARGET_TICKS => {
                finite("the query's fraction", &[self.fraction])?;
                RewindTarget::between(tick(self.from_tick), tick(self.to_tick), self.fraction)
            }
            LAGCOMP_TARGET_LATENCY => {
                if !self.latency.is_finite() {
                    return fail(LAGCOMP_NOT_FINITE, "the query's latency is not finite");
                }
                RewindTarget::latency(self.time, self.latency)
            }
            other => {
                return fail(
                    LAGCOMP_INVALID_ARGUMENT,
                    format!("unknown query target {other}"),
                );
            }
        };
        if self.target != LAGCOMP_TARGET_TICKS && !self.time.is_finite() {
            return fail(LAGCOMP_NOT_FINITE, "the query's time is not finite");
        }
        let policy = match self.window_policy {
            LAGCOMP_WINDOW_REJECT => WindowPolicy::Reject,
            LAGCOMP_WINDOW_CLAMP => WindowPolicy::Clamp,
            other => {
                return fail(
                    LAGCOMP_INVALID_ARGUMENT,
                    format!("unknown window policy {other}"),
                );
            }
        };
        ignore.clear();
        ignore.extend(ids.iter().map(|&bits| entity(bits)));
        Ok(QuerySpec {
            target,
            policy,
            layers: self.layers,
        })
    }
}

impl QuerySpec {
    fn on<'h, 'f>(&self, history: &'h History, ignore: &'f [lagcomp::EntityId]) -> Query<'h, 'f> {
        history
            .query(self.target)
            .layers(self.layers)
            .window_policy(self.policy)
            .ignore(ignore)
    }
}

/// Status of a refused query.
pub(crate) fn query_failure(error: QueryError) -> Failure {
    let status = match error {
        QueryError::Rewind(RewindError::InvalidTime(t)) if !t.is_finite() => LAGCOMP_NOT_FINITE,
        QueryError::Rewind(RewindError::InvalidFraction(f)) if !f.is_finite() => LAGCOMP_NOT_FINITE,
        QueryError::Rewind(RewindError::InvalidExtrapolation(by)) if !by.is_finite() => {
            LAGCOMP_NOT_FINITE
        }
        QueryError::Rewind(
            RewindError::InvalidTime(_)
            | RewindError::InvalidFraction(_)
            | RewindError::InvalidExtrapolation(_),
        ) => LAGCOMP_INVALID_ARGUMENT,
        QueryError::Rewind(_) => LAGCOMP_REWIND,
        QueryError::Ray(lagcomp::RayError::NonFiniteDirection)
        | QueryError::Ray(lagcomp::RayError::Origin(
            lagcomp::TransformError::NonFiniteTranslation,
        )) => LAGCOMP_NOT_FINITE,
        QueryError::Radius(r) if !r.is_finite() => LAGCOMP_NOT_FINITE,
        QueryError::Ray(_) | QueryError::Radius(_) | QueryError::Volume => LAGCOMP_INVALID_ARGUMENT,
        QueryError::Entity(_) | QueryError::UnknownHitbox(_) => LAGCOMP_UNKNOWN_ENTITY,
    };
    Failure::new(status, error)
}

fn ray(r: &LagcompRay) -> Result<Ray, Failure> {
    finite_vec3("the ray origin", r.origin)?;
    finite_vec3("the ray direction", r.direction)?;
    finite("the ray's max_distance", &[r.max_distance])?;
    Ray::new(
        crate::types::vec3(r.origin),
        crate::types::vec3(r.direction),
        r.max_distance,
    )
    .map_err(|e| query_failure(QueryError::Ray(e)))
}

fn c_trace(trace: &Trace) -> LagcompTrace {
    let blocker = trace.blocker.unwrap_or(StaticHit {
        id: lagcomp::StaticId(0),
        distance: 0.0,
        point: lagcomp::Vec3::ZERO,
        normal: lagcomp::Vec3::ZERO,
    });
    LagcompTrace {
        has_hit: u8::from(trace.hit.is_some()),
        has_blocker: u8::from(trace.blocker.is_some()),
        has_blocking_entity: u8::from(trace.blocking_entity.is_some()),
        reserved: 0,
        // The C interface adds only the history's own pieces, numbered below u32::MAX.
        blocker_id: u32::try_from(blocker.id.0).unwrap_or(u32::MAX),
        blocker_distance: blocker.distance,
        blocker_point: c_vec3(blocker.point),
        blocker_normal: c_vec3(blocker.normal),
        rewind: LagcompRewind::from_rust(trace.rewind),
        hit: trace
            .hit
            .as_ref()
            .map_or_else(empty_hit, LagcompHit::from_rust),
        blocking_entity: trace.blocking_entity.map_or(0, |b| b.entity.to_bits()),
        blocking_distance: trace.blocking_entity.map_or(0.0, |b| b.distance),
        blocking_hitbox: trace.blocking_entity.map_or(0, |b| b.hitbox.0),
        reserved2: 0,
    }
}

fn empty_hit() -> LagcompHit {
    // SAFETY: `LagcompHit` is plain integers and floats (and arrays and structs of them),
    // for which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

/// Copies `results` into the caller's buffer: as many as fit, and the full count.
fn copy_out<R, C>(
    results: &[R],
    out: &mut [C],
    count: &mut usize,
    convert: impl Fn(&R) -> C,
) -> Result<(), Failure> {
    *count = results.len();
    for (slot, r) in out.iter_mut().zip(results) {
        *slot = convert(r);
    }
    if results.len() > out.len() {
        return fail(
            LAGCOMP_BUFFER_TOO_SMALL,
            format!(
                "{} results, room for {}: the first {} were written",
                results.len(),
                out.len(),
                out.len()
            ),
        );
    }
    Ok(())
}

/// A query argument and its ignore list.
///
/// # Safety
/// `query` is null or points to a valid query whose `ignore` is null or points to
/// `ignore_count` ids.
unsafe fn read_query<'a>(
    query: *const LagcompQuery,
) -> Result<(&'a LagcompQuery, &'a [u64]), Failure> {
    // SAFETY: the caller's contract.
    let query = unsafe { input("query", query) }?;
    // SAFETY: the caller's contract.
    let ids = unsafe { slice("query.ignore", query.ignore, query.ignore_count) }?;
    Ok((query, ids))
}

/// Runs one query with the history locked.
fn traced(
    history: *mut LagcompHistory,
    (query, ids): (&LagcompQuery, &[u64]),
    body: impl FnOnce(&mut HistoryState, &QuerySpec) -> Result<(), Failure>,
) -> Result<(), Failure> {
    with_history(history, |state| {
        let spec = query.to_spec(ids, &mut state.ignore)?;
        body(state, &spec)
    })
}

/// The closest entity a ray hits at the query's moment, and the first wall, into
/// `*out`. A miss is `LAGCOMP_OK` with `has_hit` 0.
///
/// # Errors
/// `LAGCOMP_REWIND` for a moment outside the window (under `LAGCOMP_WINDOW_REJECT`) or
/// before anything was recorded; `LAGCOMP_NOT_FINITE` / `LAGCOMP_INVALID_ARGUMENT` for a
/// malformed ray or query.
///
/// # Safety
/// `query` and `ray` are null or valid (the query's ignore list too); `out` is null or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_ray(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    ray: *const LagcompRay,
    out: *mut LagcompTrace,
) -> LagcompStatus {
    // SAFETY: passed through.
    unsafe { sweep_closest(history, query, ray, None, out) }
}

/// The closest entity a sphere of `radius` moving along the ray touches (a thick
/// trace); distances are of the sphere's centre.
///
/// # Errors
/// As `lagcomp_history_ray`, and `LAGCOMP_INVALID_ARGUMENT` for a radius out of range.
///
/// # Safety
/// As `lagcomp_history_ray`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_sweep(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    ray: *const LagcompRay,
    radius: f32,
    out: *mut LagcompTrace,
) -> LagcompStatus {
    // SAFETY: passed through.
    unsafe { sweep_closest(history, query, ray, Some(radius), out) }
}

/// # Safety
/// As `lagcomp_history_ray`.
unsafe fn sweep_closest(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    ray_in: *const LagcompRay,
    radius: Option<f32>,
    out: *mut LagcompTrace,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (ray_in, out) = unsafe { (input("ray", ray_in)?, output("out", out)?) };
        let ray = ray(ray_in)?;
        // SAFETY: the caller's contract.
        let query = unsafe { read_query(query) }?;
        traced(history, query, |state, spec| {
            let mut q = spec.on(&state.history, &state.ignore);
            let trace = match radius {
                Some(r) => q.sweep(&ray, r),
                None => q.ray(&ray),
            }
            .map_err(query_failure)?;
            *out = c_trace(&trace);
            Ok(())
        })
    })
}

/// Every hitbox a ray (`radius` 0) or sphere sweep passes through before the first wall,
/// one per (entity, hitbox), nearest first, into `hits` (room for `capacity`).
/// `*out_count` receives how many there are; `*out_trace` (may be null) the closest hit,
/// the wall and the moment.
///
/// # Errors
/// `LAGCOMP_BUFFER_TOO_SMALL` when there are more than `capacity`: the first `capacity`
/// were written and `*out_count` says how many to make room for. Otherwise as
/// `lagcomp_history_sweep`.
///
/// # Safety
/// As `lagcomp_history_ray`; `hits` points to `capacity` writable hits (may be null when
/// `capacity` is 0); `out_trace` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_trace_all(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    ray_in: *const LagcompRay,
    radius: f32,
    hits: *mut LagcompHit,
    capacity: usize,
    out_count: *mut usize,
    out_trace: *mut LagcompTrace,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (ray_in, hits, count) = unsafe {
            (
                input("ray", ray_in)?,
                slice_out("hits", hits, capacity)?,
                output("out_count", out_count)?,
            )
        };
        // SAFETY: the caller's contract.
        let trace_out = unsafe { optional("out_trace", out_trace.cast_const()) }?.is_some();
        let ray = ray(ray_in)?;
        // SAFETY: the caller's contract.
        let query = unsafe { read_query(query) }?;
        traced(history, query, |state, spec| {
            let mut found = std::mem::take(&mut state.hits);
            let result = spec
                .on(&state.history, &state.ignore)
                .sweep_all(&ray, radius, &mut found);
            let outcome = result.map_err(query_failure).and_then(|trace| {
                if trace_out {
                    // SAFETY: checked non-null and aligned above.
                    unsafe { *out_trace = c_trace(&trace) };
                }
                copy_out(&found, hits, count, LagcompHit::from_rust)
            });
            state.hits = found;
            outcome
        })
    })
}

/// Runs a volume query into the history's scratch and copies the overlaps out.
///
/// # Safety
/// `query` is null or valid with a valid ignore list; `overlaps` points to `capacity`
/// writable overlaps; `out_count` is null or writable.
unsafe fn overlaps_into(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    (overlaps, capacity, out_count): (*mut LagcompOverlap, usize, *mut usize),
    run: impl FnOnce(&mut Query<'_, '_>, &mut Vec<Overlap>) -> Result<lagcomp::Rewind, QueryError>,
) -> Result<(), Failure> {
    // SAFETY: the caller's contract.
    let (out, count, query) = unsafe {
        (
            slice_out("overlaps", overlaps, capacity)?,
            output("out_count", out_count)?,
            read_query(query)?,
        )
    };
    traced(history, query, |state, spec| {
        let mut found = std::mem::take(&mut state.overlaps);
        let result = run(&mut spec.on(&state.history, &state.ignore), &mut found);
        let outcome = result
            .map_err(query_failure)
            .and_then(|_| copy_out(&found, out, count, LagcompOverlap::from_rust));
        state.overlaps = found;
        outcome
    })
}

/// Every hitbox overlapping a sphere at the query's moment, nearest the centre first,
/// into `overlaps` (room for `capacity`); `*out_count` receives how many there are.
///
/// # Errors
/// `LAGCOMP_BUFFER_TOO_SMALL` as for `lagcomp_history_trace_all`; `LAGCOMP_REWIND`;
/// `LAGCOMP_NOT_FINITE` / `LAGCOMP_INVALID_ARGUMENT` for a bad centre or radius.
///
/// # Safety
/// `query` and `center` are null or valid; `overlaps` points to `capacity` writable
/// overlaps; `out_count` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_overlap_sphere(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    center: *const LagcompVec3,
    radius: f32,
    overlaps: *mut LagcompOverlap,
    capacity: usize,
    out_count: *mut usize,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let center = unsafe { input("center", center) }?;
        let center = finite_vec3("the sphere's centre", *center)?;
        finite("the sphere's radius", &[radius])?;
        // SAFETY: the caller's contract.
        unsafe {
            overlaps_into(
                history,
                query,
                (overlaps, capacity, out_count),
                |q, found| q.overlap_sphere(center, radius, found),
            )
        }
    })
}

/// Every hitbox overlapping an oriented box at the query's moment, nearest its centre
/// first. As `lagcomp_history_overlap_sphere`.
///
/// # Safety
/// As `lagcomp_history_overlap_sphere`, with `box` for `center`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_overlap_box(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    obb: *const LagcompObb,
    overlaps: *mut LagcompOverlap,
    capacity: usize,
    out_count: *mut usize,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let obb = unsafe { input("box", obb) }?;
        let center = finite_vec3("the box's centre", obb.center)?;
        let half = finite_vec3("the box's half extents", obb.half_extents)?;
        let r = obb.rotation;
        finite("the box's rotation", &[r.x, r.y, r.z, r.w])?;
        let obb = Obb::new(center, quat(r), half);
        // SAFETY: the caller's contract.
        unsafe {
            overlaps_into(
                history,
                query,
                (overlaps, capacity, out_count),
                |q, found| q.overlap_box(&obb, found),
            )
        }
    })
}

/// One entity at the query's moment (its target and window policy; layers and ignore
/// list do not apply): `*out` receives its state and how it was sampled, and `bones`
/// (room for `capacity`, may be null when 0) its bones' world transforms then, in bone
/// order; `*out_bone_count` receives its rig's bone count. `mode` is
/// `LAGCOMP_ENTITY_AS_HIT` or `LAGCOMP_ENTITY_AS_RECORDED`. An entity not recorded
/// around that moment is `LAGCOMP_OK` with `found` 0.
///
/// # Errors
/// `LAGCOMP_UNKNOWN_ENTITY` for an unknown or stale id; `LAGCOMP_REWIND`;
/// `LAGCOMP_BUFFER_TOO_SMALL` when the rig has more bones than `capacity` (the first
/// `capacity` were written).
///
/// # Safety
/// `query` is null or valid; `bones` points to `capacity` writable transforms;
/// `out_bone_count` and `out` are null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lagcomp_history_entity_at(
    history: *mut LagcompHistory,
    query: *const LagcompQuery,
    entity_id: u64,
    mode: u32,
    bones: *mut LagcompBoneTransform,
    capacity: usize,
    out_bone_count: *mut usize,
    out: *mut LagcompEntitySample,
) -> LagcompStatus {
    guard(|| {
        // SAFETY: the caller's contract.
        let (bones, count, out) = unsafe {
            (
                slice_out("bones", bones, capacity)?,
                output("out_bone_count", out_bone_count)?,
                output("out", out)?,
            )
        };
        if mode > LAGCOMP_ENTITY_AS_RECORDED {
            return fail(
                LAGCOMP_INVALID_ARGUMENT,
                format!("unknown entity_at mode {mode}"),
            );
        }
        // SAFETY: the caller's contract.
        let query = unsafe { read_query(query) }?;
        traced(history, query, |state, spec| {
            let history = &state.history;
            let id = entity(entity_id);
            let found = if mode == LAGCOMP_ENTITY_AS_HIT {
                history.entity_at(id, spec.target, spec.policy)
            } else {
                history.entity_as_recorded(id, spec.target, spec.policy)
            }
            .map_err(query_failure)?;
            let rig_bones = history.rig(id).map_or(0, |rig| rig.bone_count());
            *count = usize::from(rig_bones);
            let Some(at) = found else {
                // SAFETY: all-zero bytes are a valid `LagcompEntitySample` (integers
                // and floats).
                *out = unsafe { std::mem::zeroed() };
                return Ok(());
            };
            *out = LagcompEntitySample {
                found: 1,
                reserved: [0; 3],
                state: LagcompEntityState::from_rust(at.state()),
                sample: LagcompSample::from_rust(at.sample()),
                rewind: LagcompRewind::from_rust(at.rewind()),
            };
            for (b, slot) in bones.iter_mut().enumerate().take(usize::from(rig_bones)) {
                if let Some(t) = at.bone(b as u16) {
                    *slot = c_bone(t);
                }
            }
            if usize::from(rig_bones) > bones.len() {
                return fail(
                    LAGCOMP_BUFFER_TOO_SMALL,
                    format!("the rig has {rig_bones} bones, room for {}", bones.len()),
                );
            }
            Ok(())
        })
    })
}
