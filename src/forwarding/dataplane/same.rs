//! Whether two dataplanes are one forwarding state with the pods named differently.
//!
//! Two runs of one scenario that differ only in `seed` usually end with the same routes and
//! the same set of pod places (a node and an address), with different pods in them: which pod
//! id the scheduler put where is what the seed changes. [`Dataplane::same_but_pod_keys`] says
//! so exactly: there is a one-to-one map of the pods of one onto the pods of the other under
//! which every field of the dataplane is equal. Then every packet is handled the same way in
//! both, pod for mapped pod, so any count over all pods (the all-pairs reachability's pairs,
//! reachable pairs and the size of each unreachable group) is the same in both; only the
//! pods named in a result (an unreachable group's smallest example) can differ.
//!
//! The map: a pod-network pod is matched with the pod holding its address (the builder gives
//! an address to one pod-network pod only); host-network pods share their node's address and
//! nothing names them, so those of one node are interchangeable and compared as a multiset.
//! The [`Routing`] names no pod (a `Local` FIB entry and a segment owner stand for the pod
//! holding the address), so it is compared as it is: one shared by both dataplanes at once
//! (a [`DataplaneMemo`](super::DataplaneMemo) gives one routing only to builds whose pods are
//! at the same places), otherwise field by field, shared tables by content, each pair once.
//!
//! Invariants: `a.same_but_pod_keys(b)` implies all-pairs reachability counts are equal (a
//! test checks it against the computation); every field of [`Routing`] is compared (the
//! destructuring below fails to compile when a field is added). What this is not: not an
//! equality of routing *behaviour* (two FIBs that route the same way with different entries
//! are not the same here), and not a diff (`diff/`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Attachment, Dataplane, PodInfo, Routing};
use ipnet::IpNet;

use crate::forwarding::fib::{DeviceFib, Flat4, SharedTable, Stored, Table};

impl Dataplane {
    /// Whether `other` is this dataplane with its pods renamed (see the module documentation).
    pub fn same_but_pod_keys(&self, other: &Dataplane) -> bool {
        if Arc::ptr_eq(&self.routing, &other.routing) {
            return true;
        }
        self.pods.len() == other.pods.len()
            && self.routing.same_as(&other.routing)
            && same_pods(self, other)
    }
}

impl Routing {
    /// Every field equal (compiled tables compared through their compiled entries).
    pub(super) fn same_as(&self, other: &Routing) -> bool {
        let Routing {
            devices,
            racks,
            fibs,
            igp,
            igp_flat,
            lens,
            links,
            pools,
            owners,
            device_by_address,
            externals,
            equal_paths,
        } = self;
        *devices == other.devices
            && *racks == other.racks
            && *lens == other.lens
            && *links == other.links
            && *pools == other.pools
            && *device_by_address == other.device_by_address
            && *externals == other.externals
            && *equal_paths == other.equal_paths
            && *owners == other.owners
            && igp.len() == other.igp.len()
            && igp_flat.len() == other.igp_flat.len()
            && (0..igp.len()).all(|i| {
                same_table(
                    (&igp[i], igp_flat[i].as_ref()),
                    (&other.igp[i], other.igp_flat[i].as_ref()),
                )
            })
            && fibs.len() == other.fibs.len()
            && same_fibs(fibs, &other.fibs)
    }
}

/// Every pod-network pod of `a` has a counterpart at its address in `b` equal but for its
/// key, and the host-network pods are equal as multisets (the counts are equal already).
fn same_pods(a: &Dataplane, b: &Dataplane) -> bool {
    let but_key = |p: &PodInfo| (p.ip, p.node, p.device, p.rack, p.attachment, p.wrong_subnet);
    let host = |dp: &Dataplane| {
        let mut host: Vec<_> = dp
            .pods
            .values()
            .filter(|p| p.attachment == Attachment::Host)
            .map(but_key)
            .collect();
        host.sort_unstable();
        host
    };
    a.pods
        .values()
        .filter(|p| p.attachment != Attachment::Host)
        .all(|p| b.pod_by_ip(p.ip).is_some_and(|q| but_key(p) == but_key(q)))
        && host(a) == host(b)
}

/// Two tables, each with its IPv4 part compiled when it is (then the compiled entries, a
/// sorted array, are compared rather than the trie walked: the same entries, faster).
fn same_table((a, fa): (&Table, Option<&Flat4>), (b, fb): (&Table, Option<&Flat4>)) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (fa, fb) {
        (Some(fa), Some(fb)) => {
            fa.entries() == fb.entries()
                && a.v6_map()
                    .iter()
                    .zip(b.v6_map().iter())
                    .all(|((pa, ea), (pb, eb))| (pa, ea) == (pb, eb))
        }
        _ => a
            .iter()
            .zip(b.iter())
            .all(|((pa, ea), (pb, eb)): ((IpNet, &Stored), (IpNet, &Stored))| pa == pb && ea == eb),
    }
}

/// Every device's overlay and shared tables; each pair of shared tables is compared once,
/// however many devices hold it.
fn same_fibs(a: &[DeviceFib], b: &[DeviceFib]) -> bool {
    let mut compared: BTreeMap<(*const SharedTable, *const SharedTable), bool> = BTreeMap::new();
    a.iter().zip(b).all(|(fa, fb)| {
        fa.shared.len() == fb.shared.len()
            && same_table(
                (&fa.overlay, fa.flat.as_ref()),
                (&fb.overlay, fb.flat.as_ref()),
            )
            && fa.shared.iter().zip(&fb.shared).all(|(ta, tb)| {
                *compared
                    .entry((Arc::as_ptr(ta), Arc::as_ptr(tb)))
                    .or_insert_with(|| {
                        same_table((&ta.table, Some(&ta.flat)), (&tb.table, Some(&tb.flat)))
                    })
            })
    })
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use std::sync::Arc;

    use crate::forwarding::testutil::*;
    use crate::forwarding::{Attachment, Dataplane, DataplaneMemo, PodKey};
    use crate::model::network::EncapMode;
    use crate::model::topology::DeviceId;
    use crate::model::topology::{NodeId, Topology};

    /// One thing that differs from the base cluster.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Change {
        None,
        PodOnAnotherNode,
        PodAtAnotherAddress,
        OneMorePod,
        HostPodOnAnotherNode,
        SegmentPodRoutedByCalico,
        ExtraRoute,
        ExtraBlackhole,
        OtherSharedTable,
        SecondPool,
        NodeDown,
    }

    /// Two racks of two nodes (`testutil::topology`), Calico blocks with three pods per node,
    /// a Spiderpool pod on rack a0's segment and a host-network pod on a1-n0; pod keys through
    /// `rename`, then `change`.
    fn cluster(rename: impl Fn(u64) -> PodKey, change: Change) -> Dataplane {
        cluster_built(rename, change, false, None)
    }

    /// [`cluster`], the pods told in the opposite order when `reverse`, built with `memo`.
    fn cluster_built(
        rename: impl Fn(u64) -> PodKey,
        change: Change,
        reverse: bool,
        memo: Option<&DataplaneMemo>,
    ) -> Dataplane {
        let mut t: Topology = topology(&[&[2, 2]]);
        if change == Change::NodeDown {
            t.node_mut(NodeId(1)).down = true;
        }
        let mut pods: Vec<(u64, IpAddr, usize, Attachment)> = Vec::new();
        for i in 0..4 {
            for j in 0..3 {
                pods.push((pod_key(i, j).0, pod_ip(i, j), i, Attachment::Calico));
            }
        }
        let segment = Attachment::Segment { gateway: None };
        pods.push((900, ip("10.0.0.100"), 0, segment));
        pods.push((901, ip("10.1.0.10"), 2, Attachment::Host));
        match change {
            Change::PodOnAnotherNode => pods[11].2 = 2,
            Change::PodAtAnotherAddress => pods[0].1 = ip("10.200.0.50"),
            Change::OneMorePod => pods.push((950, pod_ip(1, 5), 1, Attachment::Calico)),
            Change::HostPodOnAnotherNode => pods[13].2 = 3,
            Change::SegmentPodRoutedByCalico => pods[12].3 = Attachment::Calico,
            _ => {}
        }
        let mut b = calico(&t, EncapMode::CrossSubnet, EncapMode::Never, 0);
        if reverse {
            pods.reverse();
        }
        for (key, addr, node, attachment) in pods {
            assert!(b.pod(rename(key), addr, NodeId(node as u32), attachment));
        }
        let n0 = dev(&t, "a0-n0");
        match change {
            Change::ExtraRoute => {
                b.learned(n0, net("10.9.0.0/16"), ip("10.0.0.11"));
            }
            Change::ExtraBlackhole => {
                b.blackhole(n0, net("10.9.0.0/16"));
            }
            Change::OtherSharedTable => {
                let other = b.shared_table([(net("10.9.0.0/16"), ip("10.0.0.11"))]);
                b.use_shared(n0, other);
            }
            Change::SecondPool => {
                b.pool(net("10.201.0.0/16"), EncapMode::Never, EncapMode::Always);
            }
            _ => {}
        }
        b.build_with(memo)
    }

    fn as_is(key: u64) -> PodKey {
        PodKey(key)
    }

    /// Reverses the keys' order.
    fn reversed(key: u64) -> PodKey {
        PodKey(10_000 - key)
    }

    #[test]
    fn a_dataplane_is_the_same_as_itself_with_its_pods_renamed() {
        let base = cluster(as_is, Change::None);
        assert!(base.same_but_pod_keys(&base));
        assert!(base.same_but_pod_keys(&cluster(reversed, Change::None)));
        assert!(cluster(reversed, Change::None).same_but_pod_keys(&base));
        // Swapping the names of two pods of one node, of two nodes, and of the host-network
        // pod with a Calico pod.
        for (x, y) in [(0, 1), (0, 302), (901, 5)] {
            let swap = move |k: u64| {
                PodKey(if k == x {
                    y
                } else if k == y {
                    x
                } else {
                    k
                })
            };
            assert!(
                base.same_but_pod_keys(&cluster(swap, Change::None)),
                "{x} ↔ {y}"
            );
        }
    }

    /// A memo that kept the cluster's routing gives it to the cluster with its pods renamed
    /// and told in the opposite order, among the other routings it keeps, and what it gives
    /// lists every FIB entry (a local one naming its pod) and every pod as building alone does.
    #[test]
    fn a_memo_gives_its_routing_to_the_same_forwarding_state_with_other_names() {
        let memo = DataplaneMemo::default();
        let base = cluster_built(as_is, Change::None, false, Some(&memo));
        let down = cluster_built(as_is, Change::NodeDown, false, Some(&memo));
        assert_eq!(memo.given(), 0);
        let renamed = cluster_built(reversed, Change::None, true, Some(&memo));
        assert_eq!(memo.given(), 1);
        assert!(Arc::ptr_eq(&renamed.routing, &base.routing));
        assert!(!Arc::ptr_eq(&renamed.routing, &down.routing));
        let alone = cluster_built(reversed, Change::None, true, None);
        for d in 0..alone.devices.len() {
            let d = DeviceId(d as u32);
            assert_eq!(renamed.entries(d), alone.entries(d), "{d:?}");
            assert_eq!(renamed.fib_len(d), alone.fib_len(d), "{d:?}");
        }
        let pods = |dp: &Dataplane| dp.pods().copied().collect::<Vec<_>>();
        assert_eq!(pods(&renamed), pods(&alone));
        assert!(renamed.same_but_pod_keys(&base) && alone.same_but_pod_keys(&base));
    }

    #[test]
    fn any_other_difference_makes_another_forwarding_state() {
        let base = cluster(as_is, Change::None);
        for change in [
            Change::PodOnAnotherNode,
            Change::PodAtAnotherAddress,
            Change::OneMorePod,
            Change::HostPodOnAnotherNode,
            Change::SegmentPodRoutedByCalico,
            Change::ExtraRoute,
            Change::ExtraBlackhole,
            Change::OtherSharedTable,
            Change::SecondPool,
            Change::NodeDown,
        ] {
            for rename in [as_is, reversed] {
                let other = cluster(rename, change);
                assert!(!base.same_but_pod_keys(&other), "{change:?}");
                assert!(!other.same_but_pod_keys(&base), "{change:?}");
                // Nor does a memo that kept the cluster's routing give it.
                let memo = DataplaneMemo::default();
                cluster_built(as_is, Change::None, false, Some(&memo));
                let other = cluster_built(rename, change, true, Some(&memo));
                assert_eq!(memo.given(), 0, "{change:?}");
                assert!(!base.same_but_pod_keys(&other), "{change:?}");
            }
        }
    }
}
