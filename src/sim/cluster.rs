//! Workloads and their pods: which pods each workload wants, which exist, where they run.
//!
//! Invariants: pod ids grow with creation order and are never reused, so iterating pods by id
//! is iterating them in creation order; a (namespace, name) maps to at most one live pod; a
//! workload's wanted slots are its replica ordinals (Deployment, StatefulSet, Pod) or one slot
//! per node (DaemonSet). Scheduling and addressing decisions are made by the engine; this
//! module only keeps the books.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use smallvec::SmallVec;

use super::addressing::PodAddress;
use crate::ipam::calico::IpamError;
use crate::ipam::spiderpool::SpiderError;
use crate::model::hash::{FastMap, hash_of};
use crate::model::topology::{NodeId, Topology};
use crate::model::workload::{PodStatus, Workload, WorkloadId};

/// A pod, by creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodId(pub u64);

impl PodId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Which of its workload's pods this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodSlot {
    /// Deployment, StatefulSet and bare Pod: the replica ordinal (`web-3` is 3).
    Ordinal(u32),
    /// DaemonSet: the node the pod belongs to.
    Daemon(NodeId),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pod {
    pub id: PodId,
    pub workload: WorkloadId,
    pub slot: PodSlot,
    pub namespace: String,
    pub name: String,
    pub node: Option<NodeId>,
    /// Written through [`Cluster::set_status`], which keeps the pending set.
    status: PodStatus,
    /// Why it is Pending.
    pub reason: Option<PendingReason>,
    /// Its IPAM address (a host-network pod never has one).
    pub address: Option<PodAddress>,
    /// `hostNetwork: true`: it runs in its node's network namespace with the node's address
    /// and asks IPAM for nothing.
    pub host_network: bool,
}

/// Why a pod is Pending, in the words of the component that keeps it there (kube-scheduler,
/// Calico's CNI plugin and IPAM, Spiderpool), so that the reason can be looked up in that
/// component's code and logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingReason {
    /// kube-scheduler found no node the pod may run on.
    Unschedulable,
    /// Calico IPAM handed out no address.
    CalicoIpam(IpamError),
    /// Calico's CNI plugin could not use the pod's address annotations (podnet's words).
    CalicoAnnotation(String),
    /// Spiderpool handed out no address.
    Spiderpool(SpiderError),
}

impl PendingReason {
    /// The pod was scheduled but got no address: IPAM (or the CNI plugin in front of it)
    /// keeps it Pending, and a retry may succeed when addresses are freed.
    pub fn is_addressing(&self) -> bool {
        !matches!(self, PendingReason::Unschedulable)
    }

    /// Calico refused an address because the node is at its block limit.
    pub fn reaches_block_limit(&self) -> bool {
        matches!(self, PendingReason::CalicoIpam(e) if e.reaches_block_limit())
    }

    /// A pod with this status, placement and reason is scheduled and Pending for an address.
    pub fn holds_scheduled(status: PodStatus, scheduled: bool, reason: Option<&Self>) -> bool {
        status == PodStatus::Pending && scheduled && reason.is_some_and(Self::is_addressing)
    }
}

impl fmt::Display for PendingReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PendingReason::Unschedulable => f.write_str("Unschedulable"),
            PendingReason::CalicoIpam(e) => write!(f, "{e}"),
            PendingReason::CalicoAnnotation(problem) => f.write_str(problem),
            PendingReason::Spiderpool(e) => write!(f, "{e}"),
        }
    }
}

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        pod_key(&self.namespace, &self.name)
    }

    /// Whether it has its network: an IPAM address, or a node for a host-network pod.
    pub fn networked(&self) -> bool {
        self.address.is_some() || (self.host_network && self.node.is_some())
    }

    /// The address it is reached at: its IPAM address, or its node's for a host-network pod
    /// (`None` until it has one).
    pub fn ip(&self, topology: &Topology) -> Option<IpAddr> {
        match (&self.address, self.node) {
            (Some(a), _) => Some(a.ip),
            (None, Some(node)) if self.host_network => Some(topology.node(node).ip),
            (None, _) => None,
        }
    }

    pub fn status(&self) -> PodStatus {
        self.status
    }

    pub fn pending_for_ipam(&self) -> bool {
        PendingReason::holds_scheduled(self.status, self.node.is_some(), self.reason.as_ref())
    }
}

/// A pod's `namespace/name`, as log lines name it. Built without `format!`: a cold start of
/// 150,000 pods names each three times, and the formatting machinery cost a thousand
/// instructions a name (callgrind, rr-1000).
pub fn pod_key(namespace: &str, name: &str) -> String {
    let mut key = String::with_capacity(namespace.len() + 1 + name.len());
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key
}

/// The pods of a [`Cluster`] in creation order, knowing how many are left.
struct Pods<'a> {
    slots: std::slice::Iter<'a, Option<Pod>>,
    left: usize,
}

impl<'a> Iterator for Pods<'a> {
    type Item = &'a Pod;

    fn next(&mut self) -> Option<&'a Pod> {
        let pod = self.slots.find_map(Option::as_ref)?;
        self.left -= 1;
        Some(pod)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Pods<'_> {}

#[derive(Clone, Debug, Default)]
pub struct Cluster {
    /// Every pod added, at its id's index (ids are handed out in order and never reused),
    /// `None` once removed. `place` looks its pod up a dozen times: in a tree of 150,000
    /// pods those searches were half of its own instructions (`perf`, rr-5000).
    pods: Vec<Option<Pod>>,
    /// How many of `pods` are `Some`: [`Cluster::pods`] says its length, so what collects
    /// its pods (150,000 rows in a snapshot) allocates once.
    live: usize,
    /// Pods by the hash of their (namespace, name) ([`name_key`]), looked up only: the pods
    /// under a hash are told apart by their own names, so the index keeps no copy of them
    /// (two strings a pod, allocated with it and freed with the world, when it was keyed by
    /// the names; a tree of string pairs before that was half of adding a pod). `find`
    /// without a namespace reads the pods themselves.
    by_name: FastMap<u64, SmallVec<[PodId; 1]>>,
    /// Per workload, the slots it wants filled.
    wanted: Vec<BTreeSet<PodSlot>>,
    /// Per workload and slot, the pod filling it.
    filled: BTreeMap<(WorkloadId, PodSlot), PodId>,
    /// Per node (at its index), its pods.
    per_node: Vec<BTreeSet<PodId>>,
    /// The pods whose status is Pending, so a retry looks at those alone.
    pending: BTreeSet<PodId>,
}

/// A pod's key in [`Cluster`]'s index by name.
fn name_key(namespace: &str, name: &str) -> u64 {
    hash_of(&(namespace, name))
}

impl Cluster {
    pub fn new(workloads: &[Workload]) -> Cluster {
        Cluster {
            wanted: vec![BTreeSet::new(); workloads.len()],
            ..Cluster::default()
        }
    }

    /// The workload's wanted ordinals, in order (slots order ordinals before DaemonSet nodes,
    /// so they are one range of the set).
    fn ordinals(&self, w: WorkloadId) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.wanted[w.index()]
            .range(PodSlot::Ordinal(0)..=PodSlot::Ordinal(u32::MAX))
            .filter_map(|s| match s {
                PodSlot::Ordinal(o) => Some(*o),
                PodSlot::Daemon(_) => None,
            })
    }

    /// How many ordinals the workload wants: the set's size less its DaemonSet slots, which
    /// sort after every ordinal (a workload has slots of one kind, so this counts nothing
    /// for a Deployment and the nodes for a DaemonSet, never the ordinals).
    fn ordinal_count(&self, w: WorkloadId) -> usize {
        let set = &self.wanted[w.index()];
        set.len() - set.range(PodSlot::Daemon(NodeId(0))..).count()
    }

    /// Wants `n` more ordinals, the lowest unused ones; returns them. Without gaps (the
    /// highest wanted is the count less one, as after any scaling that removed no pod from
    /// the middle) they follow the highest: O(n). Otherwise one walk over the wanted ordinals
    /// finds the gaps, O(wanted + n), not O(wanted × n).
    pub fn add_ordinals(&mut self, w: WorkloadId, n: usize) -> Vec<u32> {
        let next = self
            .ordinals(w)
            .next_back()
            .map_or(0, |h| h.saturating_add(1));
        if next as usize == self.ordinal_count(w)
            && (next as usize).saturating_add(n) <= u32::MAX as usize
        {
            let added: Vec<u32> = (next..).take(n).collect();
            self.wanted[w.index()].extend(added.iter().map(|o| PodSlot::Ordinal(*o)));
            return added;
        }
        let mut added = Vec::with_capacity(n);
        let mut candidate = 0u32;
        for used in self.ordinals(w) {
            while candidate < used && added.len() < n {
                added.push(candidate);
                candidate += 1;
            }
            if added.len() == n {
                break;
            }
            candidate = used.saturating_add(1);
        }
        while added.len() < n {
            added.push(candidate);
            candidate = candidate.saturating_add(1);
        }
        self.wanted[w.index()].extend(added.iter().map(|o| PodSlot::Ordinal(*o)));
        added
    }

    /// Grows the workload to `replicas` wanted ordinals; returns the new ones.
    pub fn scale_to(&mut self, w: WorkloadId, replicas: u32) -> Vec<u32> {
        let have = self.ordinal_count(w);
        let want = replicas as usize;
        if want > have {
            self.add_ordinals(w, want - have)
        } else {
            Vec::new()
        }
    }

    /// Shrinks the workload to `replicas` ordinals, dropping the highest; returns the existing
    /// pods that must go (not-yet-created ones are simply no longer wanted).
    pub fn scale_down_to(&mut self, w: WorkloadId, replicas: u32) -> Vec<PodId> {
        let mut victims = Vec::new();
        let have = self.ordinal_count(w);
        for _ in replicas as usize..have {
            let Some(highest) = self.ordinals(w).next_back() else {
                break;
            };
            let slot = PodSlot::Ordinal(highest);
            self.wanted[w.index()].remove(&slot);
            if let Some(id) = self.filled.get(&(w, slot)) {
                victims.push(*id);
            }
        }
        victims
    }

    /// Whether a creation for this slot should still happen (wanted and not filled). A
    /// DaemonSet slot is wanted as soon as it is asked for.
    pub fn wants(&mut self, w: WorkloadId, slot: PodSlot) -> bool {
        if let PodSlot::Daemon(_) = slot {
            self.wanted[w.index()].insert(slot);
        }
        self.wanted[w.index()].contains(&slot) && !self.filled.contains_key(&(w, slot))
    }

    pub fn forget_slot(&mut self, w: WorkloadId, slot: PodSlot) {
        self.wanted[w.index()].remove(&slot);
    }

    pub fn add_pod(
        &mut self,
        w: WorkloadId,
        slot: PodSlot,
        namespace: &str,
        name: &str,
        host_network: bool,
    ) -> PodId {
        let id = PodId(self.pods.len() as u64);
        self.live += 1;
        self.pods.push(Some(Pod {
            id,
            workload: w,
            slot,
            namespace: namespace.to_string(),
            name: name.to_string(),
            node: None,
            status: PodStatus::Pending,
            reason: None,
            address: None,
            host_network,
        }));
        self.by_name
            .entry(name_key(namespace, name))
            .or_default()
            .push(id);
        self.filled.insert((w, slot), id);
        self.pending.insert(id);
        id
    }

    pub fn set_status(&mut self, id: PodId, status: PodStatus) {
        let pod = self.pod_mut(id);
        pod.status = status;
        if status == PodStatus::Pending {
            self.pending.insert(id);
        } else {
            self.pending.remove(&id);
        }
    }

    pub fn bind(&mut self, id: PodId, node: NodeId) {
        if let Some(pod) = self.slot_mut(id) {
            pod.node = Some(node);
            if self.per_node.len() <= node.index() {
                self.per_node.resize_with(node.index() + 1, BTreeSet::new);
            }
            self.per_node[node.index()].insert(id);
        }
    }

    pub fn remove_pod(&mut self, id: PodId) -> Pod {
        let pod = self
            .pods
            .get_mut(id.index())
            .and_then(Option::take)
            .expect("removing a pod that exists");
        self.live -= 1;
        let key = name_key(&pod.namespace, &pod.name);
        if let Some(ids) = self.by_name.get_mut(&key) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_name.remove(&key);
            }
        }
        self.filled.remove(&(pod.workload, pod.slot));
        self.pending.remove(&id);
        if let Some(node) = pod.node
            && let Some(set) = self.per_node.get_mut(node.index())
        {
            set.remove(&id);
        }
        pod
    }

    pub fn pod(&self, id: PodId) -> &Pod {
        self.pods
            .get(id.index())
            .and_then(Option::as_ref)
            .expect("a pod that exists")
    }

    pub fn pod_mut(&mut self, id: PodId) -> &mut Pod {
        self.slot_mut(id).expect("a pod that exists")
    }

    fn slot_mut(&mut self, id: PodId) -> Option<&mut Pod> {
        self.pods.get_mut(id.index()).and_then(Option::as_mut)
    }

    /// Pods in creation order.
    pub fn pods(&self) -> impl ExactSizeIterator<Item = &Pod> {
        Pods {
            slots: self.pods.iter(),
            left: self.live,
        }
    }

    pub fn pods_on(&self, node: NodeId) -> usize {
        self.per_node.get(node.index()).map_or(0, BTreeSet::len)
    }

    pub fn pods_of_node(&self, node: NodeId) -> Vec<PodId> {
        self.per_node
            .get(node.index())
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Pending pods, in creation order (from the pending set, not a scan of every pod).
    pub fn pending(&self) -> Vec<PodId> {
        self.pending.iter().copied().collect()
    }

    /// The `count` existing pods of a workload with the highest ordinals (DaemonSet pods in
    /// reverse node order).
    pub fn highest_pods(&self, w: WorkloadId, count: usize) -> Vec<PodId> {
        self.filled
            .range((w, PodSlot::Ordinal(0))..=(w, PodSlot::Daemon(NodeId(u32::MAX))))
            .rev()
            .take(count)
            .map(|(_, id)| *id)
            .collect()
    }

    /// A pod by `name` (any namespace, first in name order) or `namespace/name`.
    pub fn find(&self, reference: &str) -> Option<PodId> {
        match reference.split_once('/') {
            Some((ns, name)) => self
                .by_name
                .get(&name_key(ns, name))?
                .iter()
                .copied()
                .find(|id| {
                    self.pods[id.index()]
                        .as_ref()
                        .is_some_and(|p| p.namespace == ns && p.name == name)
                }),
            None => self
                .pods()
                .filter(|p| p.name == reference)
                .min_by(|a, b| a.namespace.cmp(&b.namespace))
                .map(|p| p.id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_workload() -> (Cluster, WorkloadId) {
        let cluster = Cluster {
            wanted: vec![BTreeSet::new()],
            ..Cluster::default()
        };
        (cluster, WorkloadId(0))
    }

    #[test]
    fn the_pending_pods_are_those_whose_status_is_pending_in_creation_order() {
        // A retry looks only at the pending set: it must follow every status change and
        // removal, and list the pods in creation order as the pods themselves are ordered.
        let (mut c, w) = one_workload();
        let ids: Vec<PodId> = (0..4)
            .map(|i| {
                c.add_pod(
                    w,
                    PodSlot::Ordinal(i),
                    "default",
                    &format!("web-{i}"),
                    false,
                )
            })
            .collect();
        assert_eq!(c.pending(), ids, "a new pod is Pending");
        c.set_status(ids[0], PodStatus::Running);
        c.set_status(ids[2], PodStatus::Unknown);
        assert_eq!(c.pending(), vec![ids[1], ids[3]]);
        c.set_status(ids[2], PodStatus::Pending);
        c.remove_pod(ids[3]);
        assert_eq!(c.pending(), vec![ids[1], ids[2]]);
        let scanned: Vec<PodId> = c
            .pods()
            .filter(|p| p.status() == PodStatus::Pending)
            .map(|p| p.id)
            .collect();
        assert_eq!(c.pending(), scanned);
    }

    #[test]
    fn removed_pods_leave_the_others_in_creation_order_and_their_ids_unused() {
        // Pods are kept at their id's index: a removal must not shift the others, a new pod
        // takes a new id after every earlier one, and the per-node sets follow both.
        let (mut c, w) = one_workload();
        let add = |c: &mut Cluster, i: u32| {
            c.add_pod(
                w,
                PodSlot::Ordinal(i),
                "default",
                &format!("web-{i}"),
                false,
            )
        };
        let ids: Vec<PodId> = (0..4).map(|i| add(&mut c, i)).collect();
        let (n0, n7) = (NodeId(0), NodeId(7));
        c.bind(ids[0], n7);
        c.bind(ids[1], n0);
        c.bind(ids[2], n7);
        assert_eq!(c.pods_of_node(n7), vec![ids[0], ids[2]]);
        assert_eq!((c.pods_on(n0), c.pods_on(NodeId(3))), (1, 0));
        let removed = c.remove_pod(ids[0]);
        assert_eq!((removed.id, removed.node), (ids[0], Some(n7)));
        c.remove_pod(ids[3]);
        let again = add(&mut c, 0);
        assert!(ids.iter().all(|id| *id < again), "ids are never reused");
        assert_eq!(
            c.pods().len(),
            3,
            "the iterator knows how many pods are left"
        );
        let names: Vec<(PodId, &str)> = c.pods().map(|p| (p.id, p.name.as_str())).collect();
        assert_eq!(
            names,
            vec![(ids[1], "web-1"), (ids[2], "web-2"), (again, "web-0")]
        );
        assert_eq!(c.pod(ids[2]).name, "web-2");
        assert_eq!(c.pods_of_node(n7), vec![ids[2]]);
        assert_eq!(c.find("default/web-0"), Some(again));
    }

    #[test]
    #[should_panic(expected = "a pod that exists")]
    fn looking_up_a_removed_pod_is_a_bug() {
        let (mut c, w) = one_workload();
        let id = c.add_pod(w, PodSlot::Ordinal(0), "default", "web-0", false);
        c.remove_pod(id);
        let _ = c.pod(id);
    }

    #[test]
    fn a_pod_is_found_by_namespace_and_name_or_by_name_first_in_name_order() {
        // `deletePods: {pod: NAME}` may name a pod without its namespace: the first in
        // (namespace, name) order, whichever was created first and however many there are.
        let (mut c, w) = one_workload();
        let mut add = |ns: &str, name: &str, o| c.add_pod(w, PodSlot::Ordinal(o), ns, name, false);
        let (zeta, beta, alpha) = (
            add("zeta", "web", 0),
            add("beta", "web", 1),
            add("alpha", "web", 2),
        );
        let other = add("alpha", "db", 3);
        for i in 4..40 {
            add(&format!("ns-{i}"), "web", i);
        }
        assert_eq!(c.find("web"), Some(alpha));
        assert_eq!(c.find("zeta/web"), Some(zeta));
        assert_eq!(c.find("beta/web"), Some(beta));
        assert_eq!(c.find("db"), Some(other));
        assert_eq!(c.find("alpha/nothing"), None);
        c.remove_pod(alpha);
        assert_eq!(c.find("web"), Some(beta));
        assert_eq!(c.find("alpha/web"), None);
    }

    #[test]
    fn new_ordinals_fill_the_lowest_gaps_then_grow() {
        let (mut c, w) = one_workload();
        assert_eq!(c.scale_to(w, 6), vec![0, 1, 2, 3, 4, 5]);
        // Deleted pods' ordinals 1 and 3 are free again (a Deployment's replacement names).
        c.forget_slot(w, PodSlot::Ordinal(1));
        c.forget_slot(w, PodSlot::Ordinal(3));
        // A DaemonSet slot sorts after every ordinal and is never counted as one.
        assert!(c.wants(w, PodSlot::Daemon(NodeId(0))));
        assert_eq!(c.add_ordinals(w, 3), vec![1, 3, 6]);
        assert_eq!(c.add_ordinals(w, 1), vec![7]);
        assert_eq!(c.scale_to(w, 8), Vec::<u32>::new());
        assert_eq!(c.scale_to(w, 10), vec![8, 9]);
    }

    #[test]
    fn scaling_down_drops_the_highest_ordinals_and_returns_their_pods() {
        let (mut c, w) = one_workload();
        c.scale_to(w, 5);
        c.wants(w, PodSlot::Daemon(NodeId(7)));
        // Pods exist for ordinals 0, 2 and 4; 1 and 3 are wanted but not created yet.
        let pods: Vec<PodId> = [0, 2, 4]
            .iter()
            .map(|o| {
                c.add_pod(
                    w,
                    PodSlot::Ordinal(*o),
                    "default",
                    &format!("web-{o}"),
                    false,
                )
            })
            .collect();
        assert_eq!(c.scale_down_to(w, 2), vec![pods[2], pods[1]]);
        assert_eq!(c.ordinals(w).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(c.scale_down_to(w, 2), Vec::<PodId>::new());
        assert_eq!(c.scale_down_to(w, 0), vec![pods[0]]);
        assert!(c.wanted[0].contains(&PodSlot::Daemon(NodeId(7))));
    }
}
