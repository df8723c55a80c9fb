//! Storage for the history's rings: one contiguous allocation per lane (bone translations,
//! bone rotations, per-entity frame records) shared by every entity, and the bookkeeping of
//! which entity owns which part of the bone lanes.
//!
//! What lives here: [`Lane`] (a fixed-length array of plain values that, when large, sits on
//! huge pages) and [`BoneRanges`] (first-fit-by-size allocation of bone ranges). How an
//! entity's rows are placed inside the lanes (the layout) is `layout`'s.
//!
//! Why not a `Vec` per entity, as before: a tick writes one row in every entity's ring, and
//! with thousands of entities those rows sat in thousands of separate 4 KiB-paged
//! allocations: a 5,000-entity tick touched 15,000 to 20,000 pages, far more than the TLB
//! holds, and waited on page walks. One allocation per
//! lane can be backed by 2 MiB pages.

use std::alloc::{self, Layout};
use std::fmt;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// Lanes of at least this many bytes are placed on a huge-page boundary and the kernel is
/// asked to back them with transparent huge pages (Linux; x86_64's 2 MiB huge page).
pub(super) const HUGE_PAGE: usize = 2 << 20;

/// Alignment of lanes below the huge-page size: a cache line, so that where rows start in
/// cache lines depends only on the layout, not on the allocator.
const LINE: usize = 64;

/// Where a lane's memory came from, so that it is given back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// Nothing allocated (an empty lane, or one of zero-sized elements).
    None,
    /// The global allocator, with this layout.
    Heap(Layout),
    /// An anonymous mapping of this many bytes (a whole number of pages), huge-page
    /// aligned, advised `MADV_HUGEPAGE`.
    #[cfg(target_os = "linux")]
    Mapped(usize),
}

/// A fixed-length array of `T`, every element initialised, in one allocation; lanes of at
/// least [`HUGE_PAGE`] bytes start on a huge-page boundary and, on Linux, are mapped
/// directly and advised to use transparent huge pages (the kernel then backs each whole
/// 2 MiB of the lane with one page when it can; it stays correct, only slower, when it
/// cannot). Elsewhere (other targets, smaller lanes, a refused mapping) it is a plain
/// cache-line-aligned heap allocation.
///
/// It derefs to a slice: every access is an ordinary (checked or explicitly unchecked)
/// slice access.
pub(super) struct Lane<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    backing: Backing,
}

// SAFETY: a `Lane` owns its elements exclusively (like a `Box<[T]>`): sending it sends the
// `T`s, and `&Lane` hands out only `&[T]`.
unsafe impl<T: Copy + Send> Send for Lane<T> {}
// SAFETY: as above; shared access is through `&[T]` only.
unsafe impl<T: Copy + Sync> Sync for Lane<T> {}

impl<T: Copy> Lane<T> {
    /// An empty lane (allocates nothing).
    pub(super) const fn new() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            backing: Backing::None,
        }
    }

    /// `len` copies of `fill`.
    ///
    /// # Panics
    /// If `len` elements overflow `isize::MAX` bytes. Aborts (as `Vec` does) when the
    /// memory cannot be had.
    pub(super) fn filled(len: usize, fill: T) -> Self {
        let mut lane = Self::uninit(len);
        lane.init_with(|rest| rest.fill(MaybeUninit::new(fill)));
        lane
    }

    /// Bytes of memory this lane holds (its allocation, rounded to whole pages when mapped).
    pub(super) fn held_bytes(&self) -> usize {
        match self.backing {
            Backing::None => 0,
            Backing::Heap(layout) => layout.size(),
            #[cfg(target_os = "linux")]
            Backing::Mapped(bytes) => bytes,
        }
    }

    /// Whether the lane sits in a mapping advised to use huge pages.
    #[cfg(test)]
    pub(super) fn on_huge_pages(&self) -> bool {
        #[cfg(target_os = "linux")]
        if let Backing::Mapped(_) = self.backing {
            return true;
        }
        false
    }

    /// An allocation for `len` elements, not yet initialised: [`Lane::init_with`] must run
    /// before the lane is used as a slice (only the constructors above call this).
    fn uninit(len: usize) -> Self {
        let bytes = len
            .checked_mul(size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize - HUGE_PAGE)
            .expect("a history lane larger than the address space");
        if bytes == 0 {
            return Self {
                ptr: NonNull::dangling(),
                len,
                backing: Backing::None,
            };
        }
        #[cfg(target_os = "linux")]
        if bytes >= HUGE_PAGE
            && let Some((ptr, mapped)) = huge::map(bytes)
        {
            debug_assert!((ptr.as_ptr() as usize).is_multiple_of(HUGE_PAGE) && mapped >= bytes);
            return Self {
                ptr: ptr.cast(),
                len,
                backing: Backing::Mapped(mapped),
            };
        }
        let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { LINE };
        let layout = Layout::from_size_align(bytes, align.max(align_of::<T>()))
            .expect("size checked above, alignment a power of two");
        // SAFETY: the layout's size is not zero (checked above).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else {
            alloc::handle_alloc_error(layout)
        };
        Self {
            ptr,
            len,
            backing: Backing::Heap(layout),
        }
    }

    /// Initialises every element of a lane fresh from [`Lane::uninit`].
    fn init_with(&mut self, init: impl FnOnce(&mut [MaybeUninit<T>])) {
        // SAFETY: the allocation holds `len` elements of `T` (or `len` zero-sized ones at a
        // dangling, aligned pointer) and nothing else refers to it; `MaybeUninit<T>` has
        // `T`'s layout and asks nothing of the contents.
        let all = unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<MaybeUninit<T>>(), self.len)
        };
        init(all);
    }
}

impl<T: Copy> Default for Lane<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> std::ops::Deref for Lane<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: every constructor initialises all `len` elements (`init_with` runs before
        // a lane is returned), the allocation lives as long as `self`, and `&self` forbids
        // writes through `self` for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for Lane<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; `&mut self` makes the slice the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for Lane<T> {
    fn clone(&self) -> Self {
        let mut lane = Self::uninit(self.len);
        lane.init_with(|all| {
            for (dst, &src) in all.iter_mut().zip(self.iter()) {
                *dst = MaybeUninit::new(src);
            }
        });
        lane
    }
}

impl<T: Copy> Drop for Lane<T> {
    fn drop(&mut self) {
        match self.backing {
            Backing::None => {}
            // SAFETY: allocated by `alloc::alloc` with exactly this layout, freed once.
            Backing::Heap(layout) => unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), layout) },
            #[cfg(target_os = "linux")]
            Backing::Mapped(bytes) => {
                // SAFETY: `huge::map` mapped exactly `bytes` at this address for this lane
                // alone; it is unmapped once, and no slice of it outlives `self`.
                unsafe { huge::unmap(self.ptr.cast(), bytes) }
            }
        }
    }
}

impl<T: Copy> fmt::Debug for Lane<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The contents are megabytes of rows: the shape is what a reader wants.
        f.debug_struct("Lane")
            .field("len", &self.len)
            .field("backing", &self.backing)
            .finish()
    }
}

/// Huge-page-aligned anonymous mappings (Linux).
#[cfg(target_os = "linux")]
mod huge {
    use std::ptr::NonNull;

    use super::HUGE_PAGE;

    /// Maps at least `bytes` (a whole number of pages) at a [`HUGE_PAGE`] boundary, advised
    /// `MADV_HUGEPAGE`; returns the address and the mapped length, or `None` if the kernel
    /// refuses the mapping (the caller then allocates from the heap).
    ///
    /// The advice is given before anything is written, so the first touch of each whole
    /// huge page faults in a huge page (when the kernel's THP setting is `madvise` or
    /// `always` and it has one to give); a refused advice leaves ordinary pages.
    pub(super) fn map(bytes: usize) -> Option<(NonNull<u8>, usize)> {
        // SAFETY: `sysconf` reads a constant of the running system.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| p.is_power_of_two() && *p <= HUGE_PAGE)?;
        let len = bytes.next_multiple_of(page);
        // Over-map by a huge page, then unmap the unaligned head and the tail.
        let span = len.checked_add(HUGE_PAGE)?;
        // SAFETY: a fresh private anonymous mapping at an address of the kernel's choosing
        // touches no existing memory.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let head = (base as usize).next_multiple_of(HUGE_PAGE) - base as usize;
        let tail = span - head - len;
        let start = base.cast::<u8>().wrapping_add(head);
        // SAFETY: `head` and `tail` are whole pages (the base, `HUGE_PAGE` and `len` are
        // page multiples) at the two ends of the mapping just made, which nothing else
        // knows of; what stays mapped is `start..start + len`. A failed unmap only leaves
        // unused address space mapped.
        unsafe {
            if head > 0 {
                libc::munmap(base, head);
            }
            if tail > 0 {
                libc::munmap(start.wrapping_add(len).cast(), tail);
            }
            // Advice only: on refusal (an old kernel, THP disabled) pages stay 4 KiB.
            libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE);
        }
        Some((NonNull::new(start)?, len))
    }

    /// Unmaps what [`map`] returned.
    ///
    /// # Safety
    /// `start` and `len` are what `map` returned, and nothing refers to the memory any more.
    pub(super) unsafe fn unmap(start: NonNull<u8>, len: usize) {
        // SAFETY: the caller's contract: this is exactly a mapping `map` made.
        unsafe {
            libc::munmap(start.as_ptr().cast(), len);
        }
    }
}

/// Which ranges of the bone lanes belong to entities: each entity holds a range of as
/// many bone places as its rig has bones; a released range is reused by the next entity
/// it fits (the smallest free range that fits, so entities of one rig refill each other's
/// places exactly), and a new range is taken at the end otherwise.
///
/// A range of [`GROUP`] places or more starts at a multiple of [`GROUP`], so that with a
/// block length that is a multiple of it too, each of the entity's rows starts a group of
/// four translations on a 16-byte boundary (48 bytes: what the recorder's streaming stores
/// need, see `bone_pass`). The places skipped to get there stay free for smaller ranges;
/// rigs of a multiple of four bones leave none.
///
/// Places are bones, not bytes or rows: how many rows of the lanes a place stands for (the
/// ring's length) is the layout's business.
#[derive(Debug, Clone, Default)]
pub(super) struct BoneRanges {
    /// Places in use or free below this; the lanes must hold at least this many.
    end: usize,
    /// Free ranges below `end` as `(first, len)`, sorted by `first`, none adjacent to
    /// another or to `end`.
    free: Vec<(usize, usize)>,
}

/// Bones per group of the recorder's bone pass: ranges at least this long start at a
/// multiple of it.
pub(super) const GROUP: usize = 4;

impl BoneRanges {
    /// The number of places the lanes must hold.
    pub(super) fn end(&self) -> usize {
        self.end
    }

    /// A range of `len` places; returns its first place (a multiple of [`GROUP`] when
    /// `len >= GROUP`).
    pub(super) fn take(&mut self, len: usize) -> usize {
        let align = if len >= GROUP { GROUP } else { 1 };
        let start_in = |first: usize| first.next_multiple_of(align);
        let best = self
            .free
            .iter()
            .enumerate()
            .filter(|&(_, &(first, free))| start_in(first) + len <= first + free)
            .min_by_key(|&(_, &(_, free))| free)
            .map(|(k, _)| k);
        match best {
            Some(k) => {
                let (first, free) = self.free[k];
                let start = start_in(first);
                let after = (start + len, first + free - start - len);
                // What is left on either side stays free (in order: the list is sorted).
                match (start > first, after.1 > 0) {
                    (false, false) => {
                        self.free.remove(k);
                    }
                    (false, true) => self.free[k] = after,
                    (true, false) => self.free[k] = (first, start - first),
                    (true, true) => {
                        self.free[k] = (first, start - first);
                        self.free.insert(k + 1, after);
                    }
                }
                start
            }
            None => {
                let start = start_in(self.end);
                if start > self.end {
                    // No free range ends at `end` (see `free`): the skipped places are one.
                    self.free.push((self.end, start - self.end));
                }
                self.end = start + len;
                start
            }
        }
    }

    /// Gives back the range `first..first + len` (taken earlier, not given back since).
    pub(super) fn give_back(&mut self, first: usize, len: usize) {
        debug_assert!(first + len <= self.end);
        let k = self.free.partition_point(|&(f, _)| f < first);
        debug_assert!(k == 0 || self.free[k - 1].0 + self.free[k - 1].1 <= first);
        debug_assert!(self.free.get(k).is_none_or(|&(f, _)| first + len <= f));
        let (mut first, mut len) = (first, len);
        if let Some(&(next, next_len)) = self.free.get(k)
            && first + len == next
        {
            len += next_len;
            self.free.remove(k);
        }
        if k > 0 {
            let (prev, prev_len) = self.free[k - 1];
            if prev + prev_len == first {
                first = prev;
                len += prev_len;
                self.free.remove(k - 1);
            }
        }
        if first + len == self.end {
            self.end = first;
        } else {
            let k = self.free.partition_point(|&(f, _)| f < first);
            self.free.insert(k, (first, len));
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    use super::*;

    #[test]
    fn a_large_lane_sits_on_huge_page_boundaries_and_a_small_one_on_lines() {
        let small = Lane::filled(1000, [1.0_f32, 2.0, 3.0]);
        assert_eq!(small.as_ptr() as usize % LINE, 0);
        assert!(!small.on_huge_pages());
        assert_eq!(small.held_bytes(), 12_000);
        assert!(small.iter().all(|&v| v == [1.0, 2.0, 3.0]));
        let count = 3 * HUGE_PAGE / 16 + 5;
        let large = Lane::filled(count, [0.0_f32, 0.0, 0.0, 1.0]);
        assert_eq!(large.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(large.held_bytes() >= 16 * count && large.held_bytes() < 16 * count + 65536);
        assert_eq!(large.len(), count);
        assert_eq!(large[count - 1], [0.0, 0.0, 0.0, 1.0]);
        #[cfg(target_os = "linux")]
        assert!(large.on_huge_pages());
    }

    #[test]
    fn a_cloned_lane_is_a_copy_in_its_own_memory() {
        let mut lane = Lane::filled(HUGE_PAGE / 4 + 3, 7_u32);
        for (k, v) in lane.iter_mut().enumerate() {
            *v = k as u32;
        }
        let copy = lane.clone();
        assert!(copy[..] == lane[..]);
        assert_ne!(copy.as_ptr(), lane.as_ptr());
        assert_eq!(copy.held_bytes(), lane.held_bytes());
        lane[5] = 0;
        assert_eq!(copy[5], 5);
        assert_eq!(Lane::<u32>::new().held_bytes(), 0);
        assert!(Lane::filled(0, 1_u8).is_empty());
    }

    /// Ranges handed out never overlap, released ones are reused, and `end` shrinks back
    /// when the last range is released: random takes and releases against a map of owners.
    #[test]
    fn bone_ranges_never_overlap_and_are_reused() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let mut ranges = BoneRanges::default();
        let mut held: Vec<(usize, usize)> = Vec::new();
        let mut high_water = 0;
        for step in 0..20_000 {
            // Up to 300 entities held at once, about 10,000 spawned in all.
            if held.is_empty() || (held.len() < 300 && rng.random_bool(0.5)) {
                let len = [1, 3, 16, 20, 20, 16][rng.random_range(0..6)];
                let first = ranges.take(len);
                assert!(len < GROUP || first % GROUP == 0, "step {step}: {first}");
                high_water = high_water.max(first + len);
                held.push((first, len));
            } else {
                let (first, len) = held.swap_remove(rng.random_range(0..held.len()));
                ranges.give_back(first, len);
            }
            assert!(
                held.iter().all(|&(f, l)| f + l <= ranges.end()),
                "step {step}"
            );
            if step % 97 == 0 {
                let mut owner = vec![false; ranges.end()];
                for &(f, l) in &held {
                    for o in &mut owner[f..f + l] {
                        assert!(!*o, "step {step}: ranges overlap");
                        *o = true;
                    }
                }
                for &(f, l) in &ranges.free {
                    assert!(
                        owner[f..f + l].iter().all(|o| !o),
                        "step {step}: free in use"
                    );
                }
                let used: usize = held.iter().map(|&(_, l)| l).sum();
                let free: usize = ranges.free.iter().map(|&(_, l)| l).sum();
                assert_eq!(used + free, ranges.end(), "step {step}: places lost");
            }
        }
        // Reuse keeps the lanes near what 300 entities of 20 bones need (never reusing
        // would need about 120,000 places).
        assert!(high_water < 9_000, "high water {high_water}");
        for (first, len) in held.drain(..) {
            ranges.give_back(first, len);
        }
        assert_eq!((ranges.end(), ranges.free.len()), (0, 0));
    }
}
