//! Append-only interning of names (IPAM handles, node names) to dense `u32` ids.
//!
//! Layout: every name is stored back to back in one `String`, `ends[i]` marking where name
//! `i` ends (it starts where name `i − 1` ends). Interning therefore allocates nothing per
//! name beyond the amortised growth of two buffers, and a name is read back from memory that
//! neighbouring names keep warm. `by_hash` maps the hash of a name to the last id
//! interned with that hash and `same_hash` chains the earlier ones, so growing the map never
//! reads a name back from the buffer and a miss (the usual case when a pod is created)
//! compares no bytes at all.
//!
//! Ids are positions in interning order and are never reused: an id stays valid, and keeps
//! naming the same string, for the life of the interner.

use std::collections::hash_map::Entry;

use crate::model::hash::{FastMap, hash_of};

/// Names interned to dense ids, in interning order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Interner {
    /// All names, back to back.
    text: String,
    /// `ends[i]`: the end of name `i` in `text`.
    ends: Vec<usize>,
    /// `same_hash[i]`: the previously interned id whose name has the same hash as name `i`.
    same_hash: Vec<Option<u32>>,
    /// Name hash → the last id interned with that hash.
    by_hash: FastMap<u64, u32>,
}

impl Interner {
    /// The number of names interned.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Name `id`. Panics on an id this interner did not hand out.
    pub(crate) fn name(&self, id: u32) -> &str {
        name_in(&self.text, &self.ends, id)
    }

    /// The id of `name`, if it has been interned.
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.find(hash_of(name), name)
    }

    /// The id of `name`, interning it if new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        let id = u32::try_from(self.ends.len()).expect("more than 2^32 interned names");
        // One probe of the map: look the name up and insert it in the same entry.
        let previous = match self.by_hash.entry(hash_of(name)) {
            Entry::Vacant(slot) => {
                slot.insert(id);
                None
            }
            Entry::Occupied(mut slot) => {
                let last = *slot.get();
                if let Some(found) = chain_find(&self.text, &self.ends, &self.same_hash, last, name)
                {
                    return found;
                }
                Some(slot.insert(id))
            }
        };
        self.text.push_str(name);
        self.ends.push(self.text.len());
        self.same_hash.push(previous);
        id
    }

    fn find(&self, hash: u64, name: &str) -> Option<u32> {
        let last = *self.by_hash.get(&hash)?;
        chain_find(&self.text, &self.ends, &self.same_hash, last, name)
    }
}

/// Name `id` of an interner's `text` and `ends`.
fn name_in<'a>(text: &'a str, ends: &[usize], id: u32) -> &'a str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &text[start..ends[i]]
}

/// Walks a same-hash chain from `last` for the id whose name is `name`.
fn chain_find(
    text: &str,
    ends: &[usize],
    same_hash: &[Option<u32>],
    last: u32,
    name: &str,
) -> Option<u32> {
    let mut next = Some(last);
    while let Some(id) = next {
        // Compared as bytes: the same test as on `str`, without its char-boundary checks.
        let i = id as usize;
        let start = if i == 0 { 0 } else { ends[i - 1] };
        if text.as_bytes().get(start..ends[i]) == Some(name.as_bytes()) {
            return Some(id);
        }
        next = same_hash[id as usize];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_stable_and_round_trip() {
        let mut i = Interner::default();
        assert_eq!(i.get("a"), None);
        assert_eq!(i.intern("a"), 0);
        assert_eq!(i.intern(""), 1);
        assert_eq!(i.intern("default/pod-1"), 2);
        assert_eq!(i.intern("a"), 0);
        assert_eq!(i.len(), 3);
        assert_eq!(
            (i.name(0), i.name(1), i.name(2)),
            ("a", "", "default/pod-1")
        );
        assert_eq!(i.get("default/pod-1"), Some(2));
        assert_eq!(i.get("default/pod-2"), None);
    }

    #[test]
    fn names_sharing_a_hash_are_chained() {
        let mut i = Interner::default();
        let a = i.intern("a");
        let b = i.intern("b");
        // Force a collision: make "c" look like it shares "a"'s hash.
        let hash = hash_of("a");
        let id = i.ends.len() as u32;
        i.text.push('c');
        i.ends.push(i.text.len());
        i.same_hash.push(i.by_hash.insert(hash, id));
        assert_eq!(i.find(hash, "a"), Some(a));
        assert_eq!(i.find(hash, "c"), Some(id));
        assert_eq!(i.get("b"), Some(b));
    }
}
