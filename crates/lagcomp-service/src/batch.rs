//! Many queries or claims against one history at once, on rayon's threads: for servers
//! that judge all of a tick's shots together, between recording two ticks.
//!
//! What lives here: [`rays`], [`queries`] and [`validate_batch`]. Each returns its answers
//! in input order, exactly as the synchronous calls one by one would. They run on rayon's
//! global pool, or on the pool whose `install` they are called in.

use lagcomp::{History, QueryError, Ray, RewindTarget, Trace};
use lagcomp_validate::{ShotClaim, Validator, Verdict};
use rayon::prelude::*;

use crate::request::{Found, RewoundRequest};

/// The closest hit of each ray at its target (`history.query(target).ray(&ray)`), in
/// parallel, in input order.
#[must_use]
pub fn rays(history: &History, shots: &[(RewindTarget, Ray)]) -> Vec<Result<Trace, QueryError>> {
    shots
        .par_iter()
        .map(|(target, ray)| history.query(*target).ray(ray))
        .collect()
}

/// Every query's [`RewoundRequest::run`], in parallel, in input order.
#[must_use]
pub fn queries(history: &History, queries: &[RewoundRequest]) -> Vec<Result<Found, QueryError>> {
    queries.par_iter().map(|query| query.run(history)).collect()
}

/// The verdicts [`Validator::validate`] gives `claims` (each with the server time it
/// arrived) one by one in this order, same values, same order, and the validator left in
/// the same state.
///
/// How: every claim is examined in parallel ([`Validator::examine`]: the time, origin and
/// angle checks and the trace, which read only the history and the configuration), then
/// settled in order on this thread ([`Validator::settle`]: sequence numbers and fire rate,
/// which depend on the shooter's earlier claims, a few comparisons each). A claim that a
/// replay or fire-rate check rejects has been traced for nothing; cheap next to the
/// traces that run in parallel.
pub fn validate_batch(
    history: &History,
    validator: &mut Validator,
    claims: &[(ShotClaim, f64)],
) -> Vec<Verdict> {
    let examined: Vec<_> = {
        let validator = &*validator;
        claims
            .par_iter()
            .map(|(claim, received_at)| validator.examine(history, claim, *received_at))
            .collect()
    };
    examined
        .into_iter()
        .map(|shot| match validator.settle(shot) {
            Ok(verdict) => verdict,
            // Not while `validator` is borrowed here; judged whole all the same.
            Err(stale) => validator.validate(history, &stale.claim, stale.received_at),
        })
        .collect()
}
