//! Checked reads of the caller's pointers: null and misaligned pointers are refused with a
//! status before anything is read or written through them.

use crate::status::{Failure, LAGCOMP_INVALID_ARGUMENT, LAGCOMP_NULL_POINTER, fail};

fn check<T>(what: &str, ptr: *const T) -> Result<(), Failure> {
    if ptr.is_null() {
        return fail(LAGCOMP_NULL_POINTER, format!("{what} is null"));
    }
    if !ptr.is_aligned() {
        return fail(
            LAGCOMP_INVALID_ARGUMENT,
            format!("{what} is not aligned to {} bytes", align_of::<T>()),
        );
    }
    Ok(())
}

/// The value behind an input pointer.
///
/// # Safety
/// `ptr` is null or points to a `T` that stays valid and unchanged for the call.
pub(crate) unsafe fn input<'a, T>(what: &str, ptr: *const T) -> Result<&'a T, Failure> {
    check(what, ptr)?;
    // SAFETY: checked non-null and aligned; the caller's contract for the rest.
    Ok(unsafe { &*ptr })
}

/// The value behind an optional input pointer (null: `None`).
///
/// # Safety
/// As [`input`].
pub(crate) unsafe fn optional<'a, T>(what: &str, ptr: *const T) -> Result<Option<&'a T>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: passed through.
    unsafe { input(what, ptr) }.map(Some)
}

/// The place behind an output pointer.
///
/// # Safety
/// `ptr` is null or points to writable memory for one `T` that nothing else accesses for
/// the call.
pub(crate) unsafe fn output<'a, T>(what: &str, ptr: *mut T) -> Result<&'a mut T, Failure> {
    check(what, ptr)?;
    // SAFETY: checked non-null and aligned; the caller's contract for the rest. `T` is a
    // plain C struct: any previous content is overwritten, never read or dropped.
    Ok(unsafe { &mut *ptr })
}

/// Checks an array argument of `len` elements: not null, aligned, not absurdly long.
fn check_array<T>(what: &str, ptr: *const T, len: usize) -> Result<(), Failure> {
    check(what, ptr)?;
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|bytes| bytes > isize::MAX as usize)
    {
        return fail(
            LAGCOMP_INVALID_ARGUMENT,
            format!("{what}: {len} elements is absurd"),
        );
    }
    Ok(())
}

/// `len` values from `ptr`; an empty slice when `len` is 0, whatever `ptr` is.
///
/// # Safety
/// When `len > 0`: `ptr` is null or points to `len` valid `T`s that stay unchanged for the
/// call.
pub(crate) unsafe fn slice<'a, T>(
    what: &str,
    ptr: *const T,
    len: usize,
) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    check_array(what, ptr, len)?;
    // SAFETY: checked non-null, aligned and not too long; the caller's contract for the rest.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `len` writable places from `ptr`; empty when `len` is 0.
///
/// # Safety
/// When `len > 0`: `ptr` is null or points to `len` writable `T`s nothing else accesses
/// for the call.
pub(crate) unsafe fn slice_out<'a, T>(
    what: &str,
    ptr: *mut T,
    len: usize,
) -> Result<&'a mut [T], Failure> {
    if len == 0 {
        return Ok(&mut []);
    }
    check_array(what, ptr.cast_const(), len)?;
    // SAFETY: checked non-null, aligned and not too long; the caller's contract for the rest.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}
