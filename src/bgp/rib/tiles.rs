//! Where the [`StateTable`](super::StateTable)'s tiles live: zeroed memory in slabs of 2 MiB,
//! each aligned to 2 MiB and offered to the kernel for a transparent huge page
//! (`madvise(MADV_HUGEPAGE)`, which THP's default `madvise` mode honours).
//!
//! Why: the table is the one large thing the BGP engine reads at random — 5,000 speakers ×
//! 5,000 prefixes is 100 MB, and a client applying a prefix reads a line of it no other
//! recent message read. With 4 KiB pages nearly every such read also misses the TLB and
//! walks the page table; a huge page covers 128 tiles, so the 100 MB need 50 TLB entries
//! instead of 25,000 (rr-5000 `check`: about 15 % less time; see the README).
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

/// The tiles handed out so far, [`PER_SLAB`] to a slab.
#[derive(Debug, Default)]
pub(super) struct Tiles {
    slabs: Vec<Slab>,
    len: usize,
}

impl Tiles {
    /// A new tile, every slot [`EMPTY`](super::EMPTY).
    pub(super) fn add(&mut self) -> TileRef {
        if self.len == self.slabs.len() * PER_SLAB {
            self.slabs.push(Slab::new());
        }
        self.len += 1;
        TileRef((self.len - 1) as u32)
    }

    pub(super) fn get(&self, t: TileRef) -> &Tile {
        let i = t.0 as usize;
        &self.slabs[i / PER_SLAB].tiles()[i % PER_SLAB]
    }

    pub(super) fn get_mut(&mut self, t: TileRef) -> &mut Tile {
        let i = t.0 as usize;
        &mut self.slabs[i / PER_SLAB].tiles_mut()[i % PER_SLAB]
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

impl Clone for Tiles {
    fn clone(&self) -> Self {
        let mut copy = Tiles::default();
        for i in 0..self.len {
            let t = copy.add();
            *copy.get_mut(t) = *self.get(TileRef(i as u32));
        }
        copy
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

    fn tiles(&self) -> &[Tile] {
        // SAFETY: the slab is `SLAB_BYTES` of memory it owns, zeroed when made and written
        // only through `tiles_mut`, so it holds `PER_SLAB` valid tiles (all-zero bytes are a
        // valid `StateId`, a transparent `u32`); the borrow of `self` keeps it alive and
        // unaliased by any `&mut`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), PER_SLAB) }
    }

    fn tiles_mut(&mut self) -> &mut [Tile] {
        // SAFETY: as `tiles`, and the exclusive borrow of `self` makes this the only view.
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
    fn tiles_start_empty_and_keep_what_is_written_across_slabs() {
        let mut tiles = Tiles::default();
        let refs: Vec<TileRef> = (0..PER_SLAB * 2 + 3).map(|_| tiles.add()).collect();
        assert_eq!(tiles.slabs.len(), 3);
        for (i, &t) in refs.iter().enumerate() {
            assert!(
                tiles.get(t).iter().flatten().all(|&id| id == EMPTY),
                "tile {i}"
            );
            tiles.get_mut(t)[i % super::super::CHUNK][i % super::super::LANES] =
                StateId(i as u32 + 1);
        }
        let copy = tiles.clone();
        for (i, &t) in refs.iter().enumerate() {
            for table in [&tiles, &copy] {
                let tile = table.get(t);
                let set: Vec<(usize, usize, StateId)> = tile
                    .iter()
                    .enumerate()
                    .flat_map(|(p, line)| line.iter().enumerate().map(move |(l, &id)| (p, l, id)))
                    .filter(|&(_, _, id)| id != EMPTY)
                    .collect();
                let (p, l) = (i % super::super::CHUNK, i % super::super::LANES);
                assert_eq!(set, vec![(p, l, StateId(i as u32 + 1))], "tile {i}");
            }
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
