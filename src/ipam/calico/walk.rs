//! The order in which a node visits a pool's blocks, and sets of block indices walked in it.
//!
//! Calico (`ipam_block_reader_writer.go` randomBlockGenerator) walks block indices
//! `start, start+1, …, n−1, 0, …, start−1` where `start` is drawn from Go's `math/rand` seeded
//! with the FNV-1 (not FNV-1a) 32-bit hash of the host name. podnet keeps the FNV-1 seed but
//! not Go's generator: [`start_index`] feeds the hash to SplitMix64 and takes the top bits, a
//! deterministic function of (hash, numBlocks) that spreads nodes over the pool the same way
//! without Go's 607-word lagged-Fibonacci state. Start indices therefore differ from real
//! Calico's (REFERENCE §1.3 lists Go's values); everything downstream of the start is exact.
//! Calico seeds /32 and /128 blocks from the clock; podnet uses the hash for them too.
//!
//! [`IndexRanges`] is a set of `u128` indices stored as disjoint inclusive ranges, so "first
//! member at or after `start`, else the first member" — one step of the walk — is O(log n)
//! even for an IPv6 pool with 2^58 blocks. It does not know about blocks or pools.

use std::collections::BTreeMap;

use crate::model::hash::splitmix64;

/// Go's `hash/fnv.New32`: FNV-1, multiply then xor.
pub fn fnv1_32(data: &[u8]) -> u32 {
    const OFFSET: u32 = 2_166_136_261;
    const PRIME: u32 = 16_777_619;
    data.iter()
        .fold(OFFSET, |h, &b| h.wrapping_mul(PRIME) ^ u32::from(b))
}

/// The index at which `node` starts walking a pool of `2^num_blocks_log2` blocks.
pub fn start_index(node: &str, num_blocks_log2: u8) -> u128 {
    let bits = u32::from(num_blocks_log2.min(128));
    if bits == 0 {
        return 0;
    }
    let mut state = u64::from(fnv1_32(node.as_bytes()));
    let hi = u128::from(splitmix64(&mut state));
    let lo = u128::from(splitmix64(&mut state));
    ((hi << 64) | lo) >> (128 - bits)
}

/// A set of indices kept as disjoint, non-adjacent inclusive ranges `start → last`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IndexRanges {
    ranges: BTreeMap<u128, u128>,
}

impl IndexRanges {
    /// Every index of a pool with `2^log2` blocks.
    pub(crate) fn full(log2: u8) -> IndexRanges {
        let last = if log2 >= 128 {
            u128::MAX
        } else {
            (1u128 << log2) - 1
        };
        let mut ranges = BTreeMap::new();
        ranges.insert(0, last);
        IndexRanges { ranges }
    }

    pub(crate) fn contains(&self, i: u128) -> bool {
        self.ranges
            .range(..=i)
            .next_back()
            .is_some_and(|(_, &last)| last >= i)
    }

    /// The walk's next member: the smallest at or after `from`, else (wrapping) the smallest.
    pub(crate) fn next_wrapping(&self, from: u128) -> Option<u128> {
        self.first_from(from)
            .or_else(|| self.ranges.keys().next().copied())
    }

    /// The smallest member at or after `from`.
    pub(crate) fn first_from(&self, from: u128) -> Option<u128> {
        if self.contains(from) {
            return Some(from);
        }
        self.ranges.range(from..).next().map(|(&s, _)| s)
    }

    pub(crate) fn remove(&mut self, i: u128) {
        self.remove_range(i, i);
    }

    /// Removes every member in `a..=b`.
    pub(crate) fn remove_range(&mut self, a: u128, b: u128) {
        let mut touched: Vec<(u128, u128)> = Vec::new();
        if let Some((&s, &l)) = self.ranges.range(..a).next_back()
            && l >= a
        {
            touched.push((s, l));
        }
        touched.extend(self.ranges.range(a..=b).map(|(&s, &l)| (s, l)));
        for (s, l) in touched {
            self.ranges.remove(&s);
            if s < a {
                self.ranges.insert(s, a - 1);
            }
            if l > b {
                self.ranges.insert(b + 1, l);
            }
        }
    }

    pub(crate) fn insert(&mut self, i: u128) {
        if self.contains(i) {
            return;
        }
        let mut start = i;
        let mut last = i;
        if i > 0
            && let Some((&s, &l)) = self.ranges.range(..i).next_back()
            && l == i - 1
        {
            start = s;
        }
        if i < u128::MAX
            && let Some(&l) = self.ranges.get(&(i + 1))
        {
            self.ranges.remove(&(i + 1));
            last = l;
        }
        self.ranges.insert(start, last);
    }

    #[cfg(test)]
    pub(crate) fn members(&self) -> Vec<u128> {
        self.ranges.iter().flat_map(|(&s, &l)| s..=l).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fnv1_matches_published_values() {
        // FNV-1 (not 1a) 32-bit test vectors from the FNV reference suite.
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0_b262);
        // FNV-1a would give 0xe40c292c for "a": make sure that is not what we compute.
        assert_ne!(fnv1_32(b"a"), 0xe40c_292c);
    }

    #[test]
    fn start_index_is_deterministic_and_in_range() {
        for log2 in [0u8, 1, 2, 6, 10, 14, 58, 64, 100, 128] {
            for node in ["host-a", "host-b", "node1", "node2"] {
                let s = start_index(node, log2);
                assert_eq!(s, start_index(node, log2));
                if log2 < 128 {
                    assert!(s < (1u128 << log2));
                }
            }
        }
        assert_eq!(start_index("anything", 0), 0);
        // Different nodes spread out over a big pool.
        let starts: std::collections::BTreeSet<u128> = (0..100)
            .map(|i| start_index(&format!("n{i}"), 14))
            .collect();
        assert!(starts.len() > 90);
    }

    #[test]
    fn ranges_walk_and_wrap() {
        let mut r = IndexRanges::full(3); // 0..=7
        r.remove(3);
        r.remove(4);
        assert_eq!(r.next_wrapping(3), Some(5));
        r.remove_range(5, 7);
        assert_eq!(r.next_wrapping(3), Some(0));
        r.insert(4);
        assert_eq!(r.next_wrapping(3), Some(4));
        assert_eq!(r.members(), vec![0, 1, 2, 4]);
        r.insert(3);
        assert_eq!(r.members(), vec![0, 1, 2, 3, 4]);
        assert_eq!(r.ranges.len(), 1);
        let mut e = IndexRanges::full(128);
        e.remove(u128::MAX);
        assert_eq!(e.next_wrapping(u128::MAX), Some(0));
    }

    proptest! {
        #[test]
        fn ranges_agree_with_a_btreeset(ops in proptest::collection::vec((any::<bool>(), 0u128..64, 0u128..8), 0..80), probe in 0u128..64) {
            let mut r = IndexRanges::full(6);
            let mut model: std::collections::BTreeSet<u128> = (0..64).collect();
            for (ins, i, len) in ops {
                if ins {
                    r.insert(i);
                    model.insert(i);
                } else {
                    let b = (i + len).min(63);
                    r.remove_range(i, b);
                    for k in i..=b { model.remove(&k); }
                }
            }
            prop_assert_eq!(r.members(), model.iter().copied().collect::<Vec<_>>());
            let expected = model.range(probe..).next().or(model.iter().next()).copied();
            prop_assert_eq!(r.next_wrapping(probe), expected);
        }
    }
}
