//! Where the [`StateTable`](super::StateTable)'s tiles live: zeroed memory in slabs of 2 MiB,
//! each aligned to 2 MiB and offered to the kernel for a transparent huge page
//! (`madvise(MADV_HUGEPAGE)`, which THP's default `madvise` mode honours).
//!
//! Why: the table is the one large thing the BGP engine reads at random — 5,000 speakers ×
//! 5,000 prefixes is 100 MB, and a client applying a prefix reads a line of it no other
//! recent message read. With 4 KiB pages nearly every such read also misses the TLB and
//! walks the page table; a huge page covers 128 tiles, so the 100 MB need 50 TLB entries
//! instead of 25,000 (rr-5000 `check`: about 15 % less time; `docs/performance-history.md`,
//! session 14).
//!
//! Invariants: a tile, once handed out, stays at its address until the slabs are dropped;
//! every tile starts zeroed, which is [`EMPTY`](super::EMPTY) in every slot (`StateId` is a
//! transparent `u32`). Where huge pages are not available (another OS, THP `never`, no free
//! huge page) the kernel backs the slab with small pages and nothing else changes.
//!
//! What it is not: a general allocator. Tiles are never freed one at a time; all go with
//! the table.

use std::ptr::NonNull;

use super::StateId;

/// A tile's contents: the state ids of [`LANES`](super::LANES) speakers for
/// [`CHUNK`](super::CHUNK) prefixes.
pub(super) type Tile = [[StateId; super::LANES]; super::CHUNK];

/// A slab's size and alignment: one x86-64 / AArch64 (4 KiB granule) huge page.
const SLAB_BYTES: usize = 2 << 20;

/// How many tiles one slab holds.
const PER_SLAB: usize = SLAB_BYTES / std::mem::size_of::<Tile>();

const _: () = assert!(
    PER_SLAB >= 1 && SLAB_BYTES.is_multiple_of(std::mem::size_of::<Tile>()),
    "tiles fill a slab exactly"
);

/// Which tile: its index in hand-out order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TileRef(u32);

/// A tile handed out by one [`Tiles`]: its index and its address, which holds while those
/// tiles are kept (a tile never moves), so reaching it reads the address rather than
/// indexing the slabs. Only [`Tiles::add`] and [`Tiles::placed`] make one; [`Tiles::get`]
/// and [`Tiles::get_mut`] may be given only one made by the same `Tiles` (their safety
/// contract; checked in debug builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Placed {
    id: TileRef,
    at: NonNull<Tile>,
}

// SAFETY: a `Placed` is an index and an address into the slabs of the `Tiles` that made it,
// which are `Send` and `Sync`; it is only dereferenced through a borrow of that `Tiles`.
unsafe impl Send for Placed {}
unsafe impl Sync for Placed {}

impl Placed {
    /// The tile's index in hand-out order.
    pub(super) fn id(self) -> TileRef {
        self.id
    }
}

/// The tiles handed out so far, [`PER_SLAB`] to a slab.
#[derive(Debug, Default)]
pub(super) struct Tiles {
    slabs: Vec<Slab>,
    len: usize,
}

impl Tiles {
    /// A new tile, every slot [`EMPTY`](super::EMPTY).
    pub(super) fn add(&mut self) -> Placed {
        if self.len == self.slabs.len() * PER_SLAB {
            self.slabs.push(Slab::new());
        }
        self.len += 1;
        self.placed(TileRef((self.len - 1) as u32))
    }

    /// Tile `id` with its address.
    pub(super) fn placed(&self, id: TileRef) -> Placed {
        let i = id.0 as usize;
        assert!(i < self.len, "tile {i} of {}", self.len);
        // `wrapping_add` stays inside the slab: `i % PER_SLAB` is below its tile count.
        let at = self.slabs[i / PER_SLAB]
            .start
            .as_ptr()
            .wrapping_add(i % PER_SLAB);
        Placed {
            id,
            at: NonNull::new(at).expect("inside a mapped slab"),
        }
    }

    /// Tile `t`.
    ///
    /// # Safety
    /// `t` was made by this `Tiles` ([`Tiles::add`], [`Tiles::placed`]).
    #[inline]
    pub(super) unsafe fn get(&self, t: Placed) -> &Tile {
        debug_assert_eq!(t, self.placed(t.id), "a tile of these slabs");
        // SAFETY: by the contract `t` points at a tile inside one of `self`'s slabs, which
        // stay mapped and in place while `self` lives; every byte pattern is a valid tile,
        // and the shared borrow of `self` excludes any `&mut` (tiles are written only
        // through `get_mut` and `in_order_mut`, which borrow `self` mutably).
        unsafe { t.at.as_ref() }
    }

    /// Tile `t`, to write.
    ///
    /// # Safety
    /// As [`Tiles::get`].
    #[inline]
    pub(super) unsafe fn get_mut(&mut self, t: Placed) -> &mut Tile {
        debug_assert_eq!(t, self.placed(t.id), "a tile of these slabs");
        // SAFETY: as `get`; the exclusive borrow of `self` makes this the only reference
        // to any tile while it lives.
        unsafe { &mut *t.at.as_ptr() }
    }

    /// The tiles `order` names, in that order, each at most once.
    pub(super) fn in_order_mut(
        &mut self,
        order: Vec<TileRef>,
    ) -> impl Iterator<Item = &mut Tile> + '_ {
        let len = self.len;
        let mut all: Vec<Option<&mut Tile>> = self
            .slabs
            .iter_mut()
            .flat_map(|slab| slab.tiles_mut().iter_mut())
            .take(len)
            .map(Some)
            .collect();
        order
            .into_iter()
            .map(move |t| all[t.0 as usize].take().expect("each tile named once"))
    }
}

/// [`PER_SLAB`] zeroed tiles in one anonymous mapping of [`SLAB_BYTES`], aligned to its size.
#[derive(Debug)]
struct Slab {
    start: NonNull<Tile>,
}

// SAFETY: a slab owns its mapping outright (nothing else points into it), so it may move to
// and be read from another thread like a `Box<[Tile]>`.
unsafe impl Send for Slab {}
unsafe impl Sync for Slab {}

impl Slab {
    #[cfg(target_os = "linux")]
    fn new() -> Slab {
        // Map twice the size, keep the aligned half and give back the rest: the kernel can
        // only back a 2 MiB range with a huge page where it is 2 MiB-aligned.
        let span = 2 * SLAB_BYTES;
        // SAFETY: an anonymous private mapping at an address the kernel chooses touches no
        // existing memory; the result is checked before use.
        let mapped = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(Self::layout());
        }
        let base = mapped as usize;
        let start = base.next_multiple_of(SLAB_BYTES);
        let (head, tail) = (start - base, base + span - (start + SLAB_BYTES));
        // SAFETY: both ranges lie inside the mapping just made and outside the kept slab;
        // `madvise` only advises. A failure of either leaves a mapped, zeroed slab.
        unsafe {
            if head > 0 {
                libc::munmap(mapped, head);
            }
            if tail > 0 {
                libc::munmap((start + SLAB_BYTES) as *mut libc::c_void, tail);
            }
            libc::madvise(start as *mut libc::c_void, SLAB_BYTES, libc::MADV_HUGEPAGE);
        }
        Slab {
            start: NonNull::new(start as *mut Tile).expect("mmap never maps page zero"),
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn new() -> Slab {
        // SAFETY: the layout has a non-zero size.
        let start = unsafe { std::alloc::alloc_zeroed(Self::layout()) };
        match NonNull::new(start.cast::<Tile>()) {
            Some(start) => Slab { start },
            None => std::alloc::handle_alloc_error(Self::layout()),
        }
    }

    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(SLAB_BYTES, SLAB_BYTES).expect("a power of two")
    }

    fn tiles_mut(&mut self) -> &mut [Tile] {
        // SAFETY: the slab is `SLAB_BYTES` of memory it owns, zeroed when made, so it holds
        // `PER_SLAB` valid tiles (all-zero bytes are a valid `StateId`, a transparent `u32`);
        // the exclusive borrow of `self` (through `Tiles::in_order_mut`, which borrows the
        // `Tiles` mutably) makes this the only view while it lives.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), PER_SLAB) }
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: the slab's range was mapped (or allocated) by `new` and nothing borrows it
        // any more.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), SLAB_BYTES);
        }
        #[cfg(not(target_os = "linux"))]
        unsafe {
            std::alloc::dealloc(self.start.as_ptr().cast(), Self::layout());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::rib::EMPTY;

    #[test]
    fn tiles_start_empty_and_keep_what_is_written_across_slabs_at_their_address() {
        let mut tiles = Tiles::default();
        let refs: Vec<Placed> = (0..PER_SLAB * 2 + 3).map(|_| tiles.add()).collect();
        assert_eq!(tiles.slabs.len(), 3);
        for (i, &t) in refs.iter().enumerate() {
            // SAFETY (here and below): every tile in `refs` was handed out by `tiles`.
            assert!(
                unsafe { tiles.get(t) }
                    .iter()
                    .flatten()
                    .all(|&id| id == EMPTY),
                "tile {i}"
            );
            let tile = unsafe { tiles.get_mut(t) };
            tile[i % super::super::CHUNK][i % super::super::LANES] = StateId(i as u32 + 1);
        }
        for (i, &t) in refs.iter().enumerate() {
            assert_eq!(tiles.placed(t.id()), t);
            let set: Vec<(usize, usize, StateId)> = unsafe { tiles.get(t) }
                .iter()
                .enumerate()
                .flat_map(|(p, line)| line.iter().enumerate().map(move |(l, &id)| (p, l, id)))
                .filter(|&(_, _, id)| id != EMPTY)
                .collect();
            let (p, l) = (i % super::super::CHUNK, i % super::super::LANES);
            assert_eq!(set, vec![(p, l, StateId(i as u32 + 1))], "tile {i}");
        }
    }

    #[test]
    fn slabs_are_aligned_to_a_huge_page() {
        let mut tiles = Tiles::default();
        tiles.add();
        let start = tiles.slabs[0].start.as_ptr() as usize;
        assert_eq!(start % SLAB_BYTES, 0);
    }
}
