//! Which of many prefixes overlap a given one, without comparing every pair (issue #19).
//!
//! Two CIDR prefixes of one family overlap exactly when one contains the other. The prefixes
//! are kept ordered by (address, length): those contained in `net`, or starting at its
//! address with a shorter length, are one contiguous range of that order; those containing
//! `net` from a lower address are among its at most 128 supernets, each looked up by value.
//! Equal prefixes share one entry. A query visits each distinct prefix it reports once, so
//! checking every pool or rack subnet against all others costs O(n · (log n + bits)) for
//! distinct prefixes instead of O(n²) comparisons.
//!
//! Invariant: [`Prefixes::overlapping`] returns the same set as comparing `net` with every
//! prefix inserted (`contains` both ways, same family), cut to `limit` in index order. It is
//! not a routing table (`forwarding` has that).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

/// A set of prefixes, each with the indices it was inserted under.
#[derive(Default)]
pub struct Prefixes {
    /// (network address, prefix length) → indices, ascending.
    by_net: BTreeMap<(IpAddr, u8), Vec<usize>>,
}

/// The prefixes overlapping one: the first ones by index, and how many there are in all.
#[derive(Debug, PartialEq, Eq)]
pub struct Overlaps {
    pub first: Vec<usize>,
    pub total: usize,
}

impl Prefixes {
    /// Indexes `nets` by their position.
    pub fn new(nets: impl IntoIterator<Item = IpNet>) -> Prefixes {
        let mut index = Prefixes::default();
        for (i, net) in nets.into_iter().enumerate() {
            index.insert(net, i);
        }
        index
    }

    /// Adds `net` under `index` (indices are inserted in ascending order).
    pub fn insert(&mut self, net: IpNet, index: usize) {
        let net = net.trunc();
        self.by_net
            .entry((net.network(), net.prefix_len()))
            .or_default()
            .push(index);
    }

    /// The indices of the prefixes overlapping `net`, except `skip`: the `limit` smallest, and
    /// the count of all of them.
    pub fn overlapping(&self, net: IpNet, skip: Option<usize>, limit: usize) -> Overlaps {
        let net = net.trunc();
        let (lo, hi) = (net.network(), net.broadcast());
        // Every prefix whose address lies in [lo, hi] overlaps `net`: a longer or equal one is
        // inside it; an aligned shorter one starting at `lo` contains it.
        let inside = self.by_net.range((lo, 0)..=(hi, u8::MAX)).map(|(_, v)| v);
        // Shorter prefixes containing `net` that start below `lo`.
        let above = (0..net.prefix_len())
            .filter_map(|len| IpNet::new(lo, len).ok().map(|s| s.trunc()))
            .filter(|s| s.network() < lo)
            .filter_map(|s| self.by_net.get(&(s.network(), s.prefix_len())));
        let mut total = 0;
        let mut first = Vec::new();
        for indices in inside.chain(above) {
            let skipped = skip.is_some_and(|k| indices.binary_search(&k).is_ok());
            total += indices.len() - usize::from(skipped);
            first.extend(indices.iter().filter(|&&i| Some(i) != skip).take(limit));
        }
        first.sort_unstable();
        first.truncate(limit);
        Overlaps { first, total }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(texts: &[&str]) -> Vec<IpNet> {
        texts.iter().map(|t| t.parse().expect("cidr")).collect()
    }

    #[test]
    fn finds_what_comparing_every_pair_finds() {
        let all = nets(&[
            "10.0.0.0/8",
            "10.1.0.0/16",
            "10.1.2.0/24",
            "10.2.0.0/16",
            "10.1.0.0/16",
            "192.168.0.0/16",
            "0.0.0.0/0",
            "fd00::/8",
            "10.1.2.128/25",
            "11.0.0.0/8",
        ]);
        let index = Prefixes::new(all.iter().copied());
        for (i, net) in all.iter().enumerate() {
            let expected: Vec<usize> = (0..all.len())
                .filter(|&j| j != i)
                .filter(|&j| {
                    let other = all[j];
                    net.network().is_ipv4() == other.network().is_ipv4()
                        && (net.contains(&other.network()) || other.contains(&net.network()))
                })
                .collect();
            let got = index.overlapping(*net, Some(i), usize::MAX);
            assert_eq!(got.first, expected, "{net}");
            assert_eq!(got.total, expected.len(), "{net}");
        }
        // Cut to the smallest indices, with the total.
        let cut = index.overlapping(all[2], Some(2), 2);
        assert_eq!(
            cut,
            Overlaps {
                first: vec![0, 1],
                total: 5
            }
        );
        // Built one at a time, a prefix meets only those inserted before it.
        let mut growing = Prefixes::default();
        for (i, net) in all.iter().take(4).enumerate() {
            growing.insert(*net, i);
        }
        assert_eq!(growing.overlapping(all[4], None, 10).first, vec![0, 1, 2]);
    }
}
