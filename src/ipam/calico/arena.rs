//! [`Blocks`]: every allocation block, stored flat and found by key or by a small id.
//!
//! Layout: the blocks themselves sit in one `Vec` (the arena), each at a stable [`BlockId`]
//! for as long as it exists; a freed slot is reused by the next block created. Next to it,
//! `by_key` orders the ids by block key (family, network address) for everything that needs
//! address order or a lookup by CIDR: reports, pool adoption, GC, the claim and borrow walks.
//!
//! Why: an allocation touches the same block several times (is there room, take, record,
//! reindex). Following an id is one indexed load into the arena, where a lookup by key walks
//! a tree whose nodes are spread over the heap; per-node affine-block lists and per-handle
//! holdings therefore store ids, and only the rarer paths go through `by_key`.
//!
//! Invariant: `by_key` maps exactly the occupied slots, each under its block's own key.
//! An id is only valid while its block exists; a block is deleted only once it is empty, so
//! an id held by a handle (which keeps the block non-empty) never dangles.

use std::collections::BTreeMap;
use std::ops::RangeBounds;

use super::block::{Block, BlockKey};

/// A block's slot in the arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct BlockId(u32);

/// All blocks, by id and in key order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocks {
    arena: Vec<Option<Block>>,
    /// Empty slots of `arena`, reused last-freed first.
    vacant: Vec<BlockId>,
    by_key: BTreeMap<BlockKey, BlockId>,
}

impl Blocks {
    /// The block at `id`. Panics if the slot is empty: holding a dangling id is a bug.
    pub(crate) fn at(&self, id: BlockId) -> &Block {
        self.arena[id.0 as usize]
            .as_ref()
            .expect("block id of a deleted block")
    }

    pub(crate) fn at_mut(&mut self, id: BlockId) -> &mut Block {
        self.arena[id.0 as usize]
            .as_mut()
            .expect("block id of a deleted block")
    }

    pub(crate) fn id_of(&self, key: &BlockKey) -> Option<BlockId> {
        self.by_key.get(key).copied()
    }

    pub(crate) fn get(&self, key: &BlockKey) -> Option<&Block> {
        self.id_of(key).map(|id| self.at(id))
    }

    pub(crate) fn get_mut(&mut self, key: &BlockKey) -> Option<&mut Block> {
        self.id_of(key).map(|id| self.at_mut(id))
    }

    pub(crate) fn contains_key(&self, key: &BlockKey) -> bool {
        self.by_key.contains_key(key)
    }

    /// Adds a block whose key is not in use yet and returns its id.
    pub(crate) fn insert(&mut self, block: Block) -> BlockId {
        let key = block.key();
        debug_assert!(!self.by_key.contains_key(&key), "block {key:?} exists");
        let id = match self.vacant.pop() {
            Some(id) => {
                self.arena[id.0 as usize] = Some(block);
                id
            }
            None => {
                let id = BlockId(u32::try_from(self.arena.len()).expect("2^32 blocks"));
                self.arena.push(Some(block));
                id
            }
        };
        self.by_key.insert(key, id);
        id
    }

    /// Removes the block with `key`, freeing its id; returns the id it had and the block.
    pub(crate) fn remove(&mut self, key: &BlockKey) -> Option<(BlockId, Block)> {
        let id = self.by_key.remove(key)?;
        self.vacant.push(id);
        self.arena[id.0 as usize].take().map(|b| (id, b))
    }

    /// Block keys in key order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &BlockKey> {
        self.by_key.keys()
    }

    /// Blocks in key order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Block> {
        self.by_key.values().map(|&id| self.at(id))
    }

    /// Blocks whose keys lie in `range`, in key order.
    pub(crate) fn range<R: RangeBounds<BlockKey>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (&BlockKey, &Block)> {
        self.by_key.range(range).map(|(k, &id)| (k, self.at(id)))
    }
}
