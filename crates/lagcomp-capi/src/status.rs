//! Status codes, the thread-local last error, and the guard every entry point runs in.
//!
//! Every fallible function returns a [`LagcompStatus`]; on anything but [`LAGCOMP_OK`] the
//! calling thread's last error holds a sentence saying what was wrong
//! ([`lagcomp_last_error`]). No panic leaves the library: every entry point catches it and turns it
//! into [`LAGCOMP_PANIC`] with the panic's message.

use std::cell::RefCell;
use std::ffi::{CString, c_char};
use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a call came to: [`LAGCOMP_OK`] or the kind of failure. A fixed-width integer
/// rather than a C enum, so its size never depends on the compiler.
pub type LagcompStatus = i32;

/// The call did what it says.
pub const LAGCOMP_OK: LagcompStatus = 0;
/// A pointer argument that must not be null was null.
pub const LAGCOMP_NULL_POINTER: LagcompStatus = 1;
/// A length or count does not fit: a bone count that is not the entities' total, a config
/// struct's `struct_size` smaller than its first version.
pub const LAGCOMP_BAD_LENGTH: LagcompStatus = 2;
/// A number is NaN or infinite.
pub const LAGCOMP_NOT_FINITE: LagcompStatus = 3;
/// An argument is out of its range or malformed: an unknown enum value or flag, a shape
/// dimension, a rotation that is not unit length, a string that is not UTF-8.
pub const LAGCOMP_INVALID_ARGUMENT: LagcompStatus = 4;
/// The history or validator handle was freed, or never came from this library.
pub const LAGCOMP_STALE_HANDLE: LagcompStatus = 5;
/// An entity id is unknown, stale, despawned (for recording), or has no recorded frame.
pub const LAGCOMP_UNKNOWN_ENTITY: LagcompStatus = 6;
/// A tick or frame time does not follow the newest recorded one.
pub const LAGCOMP_OUT_OF_ORDER: LagcompStatus = 7;
/// A rewind target cannot be resolved: nothing recorded yet, outside the window (under
/// the reject policy), or a tick the history does not hold.
pub const LAGCOMP_REWIND: LagcompStatus = 8;
/// The caller's output buffer is too small: as many results as fit were written and the
/// count out-parameter says how many there are.
pub const LAGCOMP_BUFFER_TOO_SMALL: LagcompStatus = 9;
/// The rules (TOML) do not parse or a value is out of range.
pub const LAGCOMP_RULES: LagcompStatus = 10;
/// A file could not be opened or written (audit log, match recording).
pub const LAGCOMP_IO: LagcompStatus = 11;
/// The call does not fit the object's state: a match recording started after the history
/// was used, a second recording, a record the recording's checks refuse.
pub const LAGCOMP_INVALID_STATE: LagcompStatus = 12;
/// The library panicked (a bug). The message is in the last error. A history or validator
/// that was in use then answers every later call with this status: free it.
pub const LAGCOMP_PANIC: LagcompStatus = 100;

/// A failure on its way out of an entry point: its status and what to tell the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) status: LagcompStatus,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: LagcompStatus, message: impl Display) -> Self {
        Self {
            status,
            message: message.to_string(),
        }
    }
}

/// The result of an entry point's body.
pub(crate) type CallOutcome = Result<(), Failure>;

/// Fails with `status` and `message`.
pub(crate) fn fail<T>(status: LagcompStatus, message: impl Display) -> Result<T, Failure> {
    Err(Failure::new(status, message))
}

thread_local! {
    /// The calling thread's last error. A `CString` so [`lagcomp_last_error`] can hand out
    /// a pointer to it without copying.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // An interior NUL would cut the C string short; no message of ours has one, but a
    // panic message or a path may.
    let text = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
}

/// Runs an entry point's body: a panic becomes [`LAGCOMP_PANIC`], a failure sets the last
/// error, and the status is returned.
pub(crate) fn guard(body: impl FnOnce() -> CallOutcome) -> LagcompStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => LAGCOMP_OK,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_owned());
            set_last_error(&format!("lagcomp panicked: {message}"));
            LAGCOMP_PANIC
        }
    }
}

/// What the last call on this thread that did not return [`LAGCOMP_OK`] said was wrong: a
/// NUL-terminated UTF-8 sentence, empty when no call has failed yet. Never null. The
/// pointer stays valid until the next failing call on this thread; copy the text to keep
/// it.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The constant's name for a status (`"LAGCOMP_REWIND"`), or `"LAGCOMP_UNKNOWN_STATUS"`.
/// A static string: never freed, never null.
#[unsafe(no_mangle)]
pub extern "C" fn lagcomp_status_name(status: LagcompStatus) -> *const c_char {
    let name: &'static [u8] = match status {
        LAGCOMP_OK => b"LAGCOMP_OK\0",
        LAGCOMP_NULL_POINTER => b"LAGCOMP_NULL_POINTER\0",
        LAGCOMP_BAD_LENGTH => b"LAGCOMP_BAD_LENGTH\0",
        LAGCOMP_NOT_FINITE => b"LAGCOMP_NOT_FINITE\0",
        LAGCOMP_INVALID_ARGUMENT => b"LAGCOMP_INVALID_ARGUMENT\0",
        LAGCOMP_STALE_HANDLE => b"LAGCOMP_STALE_HANDLE\0",
        LAGCOMP_UNKNOWN_ENTITY => b"LAGCOMP_UNKNOWN_ENTITY\0",
        LAGCOMP_OUT_OF_ORDER => b"LAGCOMP_OUT_OF_ORDER\0",
        LAGCOMP_REWIND => b"LAGCOMP_REWIND\0",
        LAGCOMP_BUFFER_TOO_SMALL => b"LAGCOMP_BUFFER_TOO_SMALL\0",
        LAGCOMP_RULES => b"LAGCOMP_RULES\0",
        LAGCOMP_IO => b"LAGCOMP_IO\0",
        LAGCOMP_INVALID_STATE => b"LAGCOMP_INVALID_STATE\0",
        LAGCOMP_PANIC => b"LAGCOMP_PANIC\0",
        _ => b"LAGCOMP_UNKNOWN_STATUS\0",
    };
    name.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn last_error() -> String {
        // SAFETY: `lagcomp_last_error` returns a NUL-terminated string owned by this
        // thread, alive until the next failing call on it.
        unsafe { CStr::from_ptr(lagcomp_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_with_its_message() {
        let status = guard(|| panic!("the hitbox fell off"));
        assert_eq!(status, LAGCOMP_PANIC);
        assert_eq!(last_error(), "lagcomp panicked: the hitbox fell off");
        let status = guard(|| panic!("{} bones", 3));
        assert_eq!(status, LAGCOMP_PANIC);
        assert_eq!(last_error(), "lagcomp panicked: 3 bones");
    }

    #[test]
    fn a_failure_sets_the_last_error_and_success_keeps_it() {
        assert_eq!(guard(|| fail(LAGCOMP_REWIND, "too old")), LAGCOMP_REWIND);
        assert_eq!(last_error(), "too old");
        assert_eq!(guard(|| Ok(())), LAGCOMP_OK);
        assert_eq!(last_error(), "too old");
        // A NUL inside a message does not truncate it.
        guard(|| fail(LAGCOMP_IO, "a\0b"));
        assert_eq!(last_error(), "a\\0b");
    }

    #[test]
    fn every_status_has_a_name() {
        for status in [
            LAGCOMP_OK,
            LAGCOMP_NULL_POINTER,
            LAGCOMP_BAD_LENGTH,
            LAGCOMP_NOT_FINITE,
            LAGCOMP_INVALID_ARGUMENT,
            LAGCOMP_STALE_HANDLE,
            LAGCOMP_UNKNOWN_ENTITY,
            LAGCOMP_OUT_OF_ORDER,
            LAGCOMP_REWIND,
            LAGCOMP_BUFFER_TOO_SMALL,
            LAGCOMP_RULES,
            LAGCOMP_IO,
            LAGCOMP_INVALID_STATE,
            LAGCOMP_PANIC,
        ] {
            // SAFETY: status names are static NUL-terminated strings.
            let name = unsafe { CStr::from_ptr(lagcomp_status_name(status)) };
            assert!(name.to_str().unwrap().starts_with("LAGCOMP_"));
            assert_ne!(name.to_str().unwrap(), "LAGCOMP_UNKNOWN_STATUS");
        }
    }
}
