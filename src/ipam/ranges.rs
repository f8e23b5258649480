//! A compact set of `u128` numbers — addresses of one family (IPv4 addresses occupy
//! `0..2^32`) or a pool's block indices — stored as disjoint, non-adjacent inclusive ranges.
//! Spiderpool keeps a pool's free and reserved addresses in it, Calico the blocks of a pool
//! that no node has claimed.
//!
//! Invariant: the ranges are sorted, disjoint and never touch (adjacent ranges are merged),
//! so equal sets have equal representations and `first` is the lowest member.
//! Every operation is O(log n) in the number of ranges except the set algebra, which is
//! linear in the ranges involved; a /16 of addresses is one entry, not 65,536, and "first
//! member at or after `start`, else the first member" is O(log n) even for an IPv6 pool with
//! 2^58 blocks.
//! This type knows nothing of pools, blocks or families; callers keep families apart.

use std::collections::BTreeMap;

/// A set of `u128` numbers stored as ranges (start → inclusive end).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: BTreeMap<u128, u128>,
}

impl RangeSet {
    pub fn new() -> RangeSet {
        RangeSet::default()
    }

    /// Every number of `lo..=hi`.
    pub fn from_range(lo: u128, hi: u128) -> RangeSet {
        let mut set = RangeSet::new();
        set.insert_range(lo, hi);
        set
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The number of addresses, saturating at `u128::MAX` (only the whole IPv6 space does).
    pub fn count(&self) -> u128 {
        self.ranges.iter().fold(0u128, |n, (s, e)| {
            n.saturating_add((e - s).saturating_add(1))
        })
    }

    /// The lowest member.
    pub fn first(&self) -> Option<u128> {
        self.ranges.keys().next().copied()
    }

    pub fn contains(&self, a: u128) -> bool {
        self.ranges
            .range(..=a)
            .next_back()
            .is_some_and(|(_, &e)| e >= a)
    }

    /// The smallest member at or after `from`.
    pub fn first_from(&self, from: u128) -> Option<u128> {
        if self.contains(from) {
            return Some(from);
        }
        self.ranges.range(from..).next().map(|(&s, _)| s)
    }

    /// The smallest member at or after `from`, else (wrapping round) the smallest: one step of
    /// Calico's walk over a pool's blocks.
    pub fn next_wrapping(&self, from: u128) -> Option<u128> {
        self.first_from(from).or_else(|| self.first())
    }

    /// The ranges, lowest first.
    pub fn ranges(&self) -> impl Iterator<Item = (u128, u128)> + '_ {
        self.ranges.iter().map(|(&s, &e)| (s, e))
    }

    /// Adds `lo..=hi` (empty if `lo > hi`), merging with neighbours it overlaps or touches.
    pub fn insert_range(&mut self, mut lo: u128, mut hi: u128) {
        if lo > hi {
            return;
        }
        if let Some((&s, &e)) = self.ranges.range(..=lo).next_back()
            && (lo == 0 || e >= lo - 1)
        {
            self.ranges.remove(&s);
            lo = s;
            hi = hi.max(e);
        }
        while let Some((&s, &e)) = self.ranges.range(lo..=hi.saturating_add(1)).next() {
            self.ranges.remove(&s);
            hi = hi.max(e);
        }
        self.ranges.insert(lo, hi);
    }

    pub fn insert(&mut self, a: u128) {
        self.insert_range(a, a);
    }

    /// Removes `lo..=hi`, splitting ranges that straddle its ends.
    pub fn remove_range(&mut self, lo: u128, hi: u128) {
        if lo > hi {
            return;
        }
        let mut hit: Vec<(u128, u128)> = Vec::new();
        if let Some((&s, &e)) = self.ranges.range(..lo).next_back()
            && e >= lo
        {
            hit.push((s, e));
        }
        hit.extend(self.ranges.range(lo..=hi).map(|(&s, &e)| (s, e)));
        for (s, e) in hit {
            self.ranges.remove(&s);
            if s < lo {
                self.ranges.insert(s, lo - 1);
            }
            if e > hi {
                self.ranges.insert(hi + 1, e);
            }
        }
    }

    pub fn remove(&mut self, a: u128) {
        self.remove_range(a, a);
    }

    /// `self − other`.
    pub fn subtract(&mut self, other: &RangeSet) {
        for (s, e) in other.ranges() {
            self.remove_range(s, e);
        }
    }

    /// The ranges both sets hold, lowest first.
    pub fn intersection(&self, other: &RangeSet) -> RangeSet {
        let mut out = RangeSet::new();
        for (s, e) in other.ranges() {
            if let Some((&ps, &pe)) = self.ranges.range(..s).next_back()
                && pe >= s
            {
                out.insert_range(s.max(ps), e.min(pe));
            }
            for (&qs, &qe) in self.ranges.range(s..=e) {
                out.insert_range(qs, e.min(qe));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn ranges_merge_split_and_count() {
        let mut s = RangeSet::new();
        s.insert_range(10, 20);
        s.insert_range(21, 25);
        s.insert(5);
        assert_eq!(s.ranges().collect::<Vec<_>>(), vec![(5, 5), (10, 25)]);
        s.remove(15);
        assert_eq!(
            s.ranges().collect::<Vec<_>>(),
            vec![(5, 5), (10, 14), (16, 25)]
        );
        assert_eq!(s.count(), 1 + 5 + 10);
        assert_eq!(s.first(), Some(5));
        assert!(s.contains(16) && !s.contains(15));
        s.insert_range(0, u128::MAX);
        assert_eq!(s.count(), u128::MAX);
        s.remove_range(0, u128::MAX);
        assert!(s.is_empty());
    }

    #[test]
    fn walks_wrap_round() {
        let mut r = RangeSet::from_range(0, 7);
        r.remove(3);
        r.remove(4);
        assert_eq!(r.next_wrapping(3), Some(5));
        r.remove_range(5, 7);
        assert_eq!(r.next_wrapping(3), Some(0));
        r.insert(4);
        assert_eq!(r.next_wrapping(3), Some(4));
        assert_eq!(r.ranges().collect::<Vec<_>>(), vec![(0, 2), (4, 4)]);
        r.insert(3);
        assert_eq!(r.ranges().collect::<Vec<_>>(), vec![(0, 4)]);
        let mut e = RangeSet::from_range(0, u128::MAX);
        e.remove(u128::MAX);
        assert_eq!(e.next_wrapping(u128::MAX), Some(0));
    }

    proptest! {
        /// Model-based: the range set behaves like a BTreeSet of its members.
        #[test]
        fn behaves_like_a_set(ops in prop::collection::vec((any::<bool>(), 0u128..64, 0u128..6), 0..60),
                              other in prop::collection::vec((0u128..64, 0u128..6), 0..6)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for (add, lo, len) in ops {
                if add { set.insert_range(lo, lo + len); } else { set.remove_range(lo, lo + len); }
                for a in lo..=lo + len { if add { model.insert(a); } else { model.remove(&a); } }
            }
            let members: BTreeSet<u128> = set.ranges().flat_map(|(s, e)| s..=e).collect();
            prop_assert_eq!(&members, &model);
            prop_assert_eq!(set.count(), model.len() as u128);
            prop_assert_eq!(set.first(), model.first().copied());
            for probe in 0..72 {
                let wrapped = model.range(probe..).next().or(model.first()).copied();
                prop_assert_eq!(set.next_wrapping(probe), wrapped);
            }
            // Ranges never touch.
            let rs: Vec<_> = set.ranges().collect();
            for w in rs.windows(2) { prop_assert!(w[0].1 + 1 < w[1].0); }
            let mut o = RangeSet::new();
            for (lo, len) in other { o.insert_range(lo, lo + len); }
            let om: BTreeSet<u128> = o.ranges().flat_map(|(s, e)| s..=e).collect();
            let inter: BTreeSet<u128> = set.intersection(&o).ranges().flat_map(|(s, e)| s..=e).collect();
            prop_assert_eq!(inter, model.intersection(&om).copied().collect::<BTreeSet<_>>());
            let mut diff = set.clone();
            diff.subtract(&o);
            let dm: BTreeSet<u128> = diff.ranges().flat_map(|(s, e)| s..=e).collect();
            prop_assert_eq!(dm, model.difference(&om).copied().collect::<BTreeSet<_>>());
        }
    }
}
