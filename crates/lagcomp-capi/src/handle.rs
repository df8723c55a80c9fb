//! Handles: what a C caller holds instead of a pointer to a Rust object.
//!
//! A handle is a slot number, the slot's generation and the kind of object, packed into a
//! pointer-sized value that is never dereferenced. The objects live in a table per kind;
//! freeing one empties its slot and bumps the generation, so a freed (stale) handle, a
//! handle of the other kind, or an arbitrary value is looked up, not followed, and is
//! answered with [`LAGCOMP_STALE_HANDLE`].
//!
//! Why a table and not a `Box` pointer with a magic tag: reading a tag through a freed
//! pointer is already a use-after-free (undefined behaviour, and what valgrind reports),
//! and the memory may hold a new object by then. A table answers "is this handle alive?"
//! without touching freed memory, at the cost of one read-locked lookup and an `Arc`
//! clone per call (a few nanoseconds).

use std::sync::{Arc, PoisonError, RwLock};

use crate::status::{Failure, LAGCOMP_NULL_POINTER, LAGCOMP_STALE_HANDLE};

#[cfg(not(target_pointer_width = "64"))]
compile_error!("lagcomp-capi packs handles into 64-bit pointers: build it for a 64-bit target");

const INDEX_BITS: u32 = 32;
const GENERATION_BITS: u32 = 28;
const GENERATION_MASK: u64 = (1 << GENERATION_BITS) - 1;

/// Which table a handle belongs to (the top four bits; never 0, so no handle is null).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    History = 1,
    Validator = 2,
}

struct Slot<T> {
    generation: u64,
    object: Option<Arc<T>>,
}

/// The live objects of one kind.
pub(crate) struct Table<T> {
    kind: Kind,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Table<T> {
    pub(crate) const fn new(kind: Kind) -> Self {
        Self {
            kind,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    fn pack(&self, index: u32, generation: u64) -> u64 {
        ((self.kind as u64) << (INDEX_BITS + GENERATION_BITS))
            | ((generation & GENERATION_MASK) << INDEX_BITS)
            | u64::from(index)
    }

    /// The slot a handle names, if it is of this kind and its generation is current.
    fn unpack(&self, bits: u64) -> Option<usize> {
        if bits >> (INDEX_BITS + GENERATION_BITS) != self.kind as u64 {
            return None;
        }
        let index = (bits & u64::from(u32::MAX)) as usize;
        let generation = (bits >> INDEX_BITS) & GENERATION_MASK;
        let slot = self.slots.get(index)?;
        (slot.generation & GENERATION_MASK == generation && slot.object.is_some()).then_some(index)
    }

    /// Stores `object` and returns its handle bits.
    fn insert(&mut self, object: Arc<T>) -> u64 {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    object: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.object = Some(object);
        let generation = slot.generation;
        self.pack(index, generation)
    }
}

/// A table behind a lock, shared by every thread.
pub(crate) struct Registry<T>(RwLock<Table<T>>);

impl<T> Registry<T> {
    pub(crate) const fn new(kind: Kind) -> Self {
        Self(RwLock::new(Table::new(kind)))
    }

    /// Registers `object`; the returned pointer is its handle.
    pub(crate) fn insert<H>(&self, object: T) -> *mut H {
        let bits = self
            .0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(Arc::new(object));
        std::ptr::without_provenance_mut(bits as usize)
    }

    /// The object a handle names.
    ///
    /// # Errors
    /// [`LAGCOMP_NULL_POINTER`] for null, [`LAGCOMP_STALE_HANDLE`] for a freed handle, a
    /// handle of another kind, or a value this library never handed out.
    pub(crate) fn get<H>(&self, handle: *const H) -> Result<Arc<T>, Failure> {
        let bits = handle.addr() as u64;
        if bits == 0 {
            return Err(Failure::new(LAGCOMP_NULL_POINTER, "the handle is null"));
        }
        let table = self.0.read().unwrap_or_else(PoisonError::into_inner);
        match table.unpack(bits) {
            Some(index) => Ok(Arc::clone(
                table.slots[index]
                    .object
                    .as_ref()
                    .expect("unpack checks the slot is occupied"),
            )),
            None => Err(stale(table.kind)),
        }
    }

    /// Takes the object out of its slot; the handle is stale from now on. Calls still
    /// running on it (on other threads) finish with their own `Arc`.
    ///
    /// # Errors
    /// As [`Registry::get`].
    pub(crate) fn remove<H>(&self, handle: *const H) -> Result<Arc<T>, Failure> {
        let bits = handle.addr() as u64;
        if bits == 0 {
            return Err(Failure::new(LAGCOMP_NULL_POINTER, "the handle is null"));
        }
        let mut table = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let Some(index) = table.unpack(bits) else {
            return Err(stale(table.kind));
        };
        let slot = &mut table.slots[index];
        let object = slot
            .object
            .take()
            .expect("unpack checks the slot is occupied");
        slot.generation = slot.generation.wrapping_add(1);
        table.free.push(index as u32);
        Ok(object)
    }
}

fn stale(kind: Kind) -> Failure {
    let what = match kind {
        Kind::History => "history",
        Kind::Validator => "validator",
    };
    Failure::new(
        LAGCOMP_STALE_HANDLE,
        format!("the {what} handle was freed or is not a {what} handle of this library"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Opaque;

    #[test]
    fn freed_and_foreign_handles_are_refused_and_slots_are_reused() {
        let histories = Registry::<u32>::new(Kind::History);
        let validators = Registry::<u32>::new(Kind::Validator);
        let a: *mut Opaque = histories.insert(7);
        assert_eq!(*histories.get(a).unwrap(), 7);
        // The same bits are not a validator.
        assert_eq!(validators.get(a).unwrap_err().status, LAGCOMP_STALE_HANDLE);
        assert_eq!(*histories.remove(a).unwrap(), 7);
        assert_eq!(histories.get(a).unwrap_err().status, LAGCOMP_STALE_HANDLE);
        assert_eq!(
            histories.remove(a).unwrap_err().status,
            LAGCOMP_STALE_HANDLE
        );
        // The slot is reused under a new generation: the old handle stays stale.
        let b: *mut Opaque = histories.insert(8);
        assert_ne!(a, b);
        assert_eq!(*histories.get(b).unwrap(), 8);
        assert_eq!(histories.get(a).unwrap_err().status, LAGCOMP_STALE_HANDLE);
        let null: *const Opaque = std::ptr::null();
        assert_eq!(
            histories.get(null).unwrap_err().status,
            LAGCOMP_NULL_POINTER
        );
        let junk: *const Opaque = std::ptr::without_provenance(0xdead_beef);
        assert_eq!(
            histories.get(junk).unwrap_err().status,
            LAGCOMP_STALE_HANDLE
        );
    }
}
