//! Pods during the run: creation one every 10 ms, placement on a node and an address from
//! IPAM, retries of pending pods, removal, and IPAM's garbage collection of empty blocks.

use super::*;
use crate::sim::cluster::PendingReason;

impl Simulation<'_> {
    pub(super) fn queue_creations(&mut self, from: SimTime, slots: Vec<(WorkloadId, PodSlot)>) {
        let mut at = from;
        for (workload, slot) in slots {
            self.queue.push(at, Event::CreatePod { workload, slot });
            at = at + POD_CREATION_INTERVAL;
        }
    }

    /// Schedules the two garbage-collection checks that a release calls for.
    pub(super) fn schedule_gc(&mut self) {
        if !matches!(self.world.addressing, Addressing::Calico(_)) {
            return;
        }
        for at in [
            self.now,
            self.now + IPAM_GC_GRACE + SimDuration::from_nanos(1),
        ] {
            if self.gc_scheduled.insert(at) {
                self.queue.push(at, Event::IpamGc);
            }
        }
    }

    pub(super) fn queue_retry(&mut self) {
        if !self.retry_queued {
            self.retry_queued = true;
            self.queue.push(self.now, Event::RetryPending);
        }
    }

    /// A pod just failed to get an address: if Calico will free addresses by the passage of
    /// time alone (a release cooldown ending, an empty block becoming old enough to reclaim),
    /// Pending pods are retried at that instant, as the kubelet's retried CNI ADD would find
    /// them. Nothing else happens then, so without this the pod would wait for an unrelated
    /// event. Each retry that fails again asks for the next such instant.
    pub(super) fn retry_at_timed_release(&mut self) {
        let Some(at) = self.world.addressing.next_timed_release(self.now) else {
            return;
        };
        if self.timed_retries.insert(at) {
            self.queue.push(at, Event::RetryPending);
        }
    }

    pub(super) fn create_pod(&mut self, w: WorkloadId, slot: PodSlot) {
        let workload = &self.scenario.workloads[w.index()];
        if !self.world.cluster.wants(w, slot) {
            return;
        }
        let name = match slot {
            PodSlot::Ordinal(i) => workload.pod_name(i),
            PodSlot::Daemon(node) => {
                let n = self.world.topology.node(node);
                if n.deleted {
                    return;
                }
                workload.daemon_pod_name(&n.name)
            }
        };
        let id =
            self.world
                .cluster
                .add_pod(w, slot, &workload.namespace, &name, workload.host_network);
        self.record(
            "podCreated",
            super::cluster::pod_key(&workload.namespace, &name),
            "created",
        );
        self.place(id);
    }

    /// Schedules a pod (if it has no node) and gives it an address (if it has none).
    pub(super) fn place(&mut self, id: PodId) {
        let w = self.world.cluster.pod(id).workload;
        let workload = &self.scenario.workloads[w.index()];
        if self.world.cluster.pod(id).node.is_none() {
            let node = match self.world.cluster.pod(id).slot {
                PodSlot::Daemon(node) => {
                    let n = self.world.topology.node(node);
                    let fits = !n.down
                        && self.world.cluster.pods_on(node) < n.max_pods as usize
                        && self.host_ports_free(w, node);
                    fits.then_some(node)
                }
                PodSlot::Ordinal(_) => self.choose_node(w),
            };
            let Some(node) = node else {
                if self.world.cluster.pod(id).reason != Some(PendingReason::Unschedulable) {
                    self.world.cluster.set_status(id, PodStatus::Pending);
                    let pod = self.world.cluster.pod_mut(id);
                    pod.reason = Some(PendingReason::Unschedulable);
                    let key = pod.key();
                    self.record("podPending", key, "Unschedulable: no eligible node");
                }
                return;
            };
            self.world.cluster.bind(id, node);
            self.refresh_placement(node);
            let key = self.world.cluster.pod(id).key();
            // A `check` of 150,000 pods keeps none of their lines: not written out then.
            let outcome = if self.log.wants("podScheduled") {
                format!("on {}", self.world.topology.node(node).name)
            } else {
                String::new()
            };
            self.record("podScheduled", key, outcome);
        }
        let Some(node) = self.world.cluster.pod(id).node else {
            return;
        };
        if self.world.cluster.pod(id).address.is_some() {
            return;
        }
        let topo_node = self.world.topology.node(node);
        if workload.host_network {
            // No CNI call: the pod runs in the node's network namespace with its address.
            let (ip, node_down) = (topo_node.ip, topo_node.down);
            if self.world.cluster.pod(id).status() != PodStatus::Pending {
                return;
            }
            let status = if node_down {
                PodStatus::Unknown
            } else {
                PodStatus::Running
            };
            self.world.cluster.set_status(id, status);
            let pod = self.world.cluster.pod_mut(id);
            pod.reason = None;
            let key = pod.key();
            self.record(
                "podAddressed",
                key,
                format!("{ip} (hostNetwork: the node's address)"),
            );
            return;
        }
        let pod = self.world.cluster.pod(id);
        let request = PodRequest {
            namespace: &pod.namespace,
            name: &pod.name,
            labels: &workload.labels,
            annotations: &workload.annotations,
            node: topo_node,
            stateful: workload.kind == WorkloadKind::StatefulSet,
        };
        let result = self
            .world
            .addressing
            .assign(self.now, &request, &self.world.namespaces);
        let key = pod.key();
        let node_down = topo_node.down;
        match result {
            Ok(address) => {
                let outcome = || {
                    format!(
                        "{} from {}{}",
                        address.ip,
                        address.block.map_or(address.pool.clone(), |b| format!(
                            "{} block {b}",
                            address.pool
                        )),
                        if address.borrowed { " (borrowed)" } else { "" }
                    )
                };
                let outcome = if self.log.wants("podAddressed") {
                    outcome()
                } else {
                    String::new()
                };
                self.pool_usage.change(self.now, &address.pool, 1);
                let status = if node_down {
                    PodStatus::Unknown
                } else {
                    PodStatus::Running
                };
                self.world.cluster.set_status(id, status);
                let pod = self.world.cluster.pod_mut(id);
                pod.address = Some(address);
                pod.reason = None;
                self.record("podAddressed", key, outcome);
            }
            Err(reason) => {
                self.world.cluster.set_status(id, PodStatus::Pending);
                let pod = self.world.cluster.pod_mut(id);
                let changed = pod.reason.as_ref() != Some(&reason);
                pod.reason = Some(reason.clone());
                if changed {
                    self.record("podPending", key, reason.to_string());
                }
                self.retry_at_timed_release();
            }
        }
    }

    /// The eligible node with the fewest pods; ties broken by the scheduling stream.
    /// Host-network pods with ports also need the node's host ports free (kube-scheduler's
    /// NodePorts filter, [`Self::host_ports_free`]).
    pub(super) fn choose_node(&mut self, w: WorkloadId) -> Option<NodeId> {
        let workload = &self.scenario.workloads[w.index()];
        let selector = &workload.node_selector;
        let topology = &self.world.topology;
        let pick = |n: usize, stream: &mut Stream| if n == 1 { 0 } else { stream.index(n) };
        if workload.host_network && !workload.ports.is_empty() {
            let fewest = self.world.placement.fewest(|id| {
                selects(selector, &topology.node(id).labels) && self.host_ports_free(w, id)
            });
            if fewest.is_empty() {
                return None;
            }
            return Some(fewest[pick(fewest.len(), &mut self.scheduling)]);
        }
        if selector.is_empty() {
            let fewest = self.world.placement.fewest_any();
            if fewest.is_empty() {
                return None;
            }
            return Some(fewest[pick(fewest.len(), &mut self.scheduling)]);
        }
        let fewest = self.world.placement.fewest(|id| {
            let labels = &topology.node(id).labels;
            selector.iter().all(|(k, v)| labels.get(k) == Some(v))
        });
        if fewest.is_empty() {
            return None;
        }
        Some(fewest[pick(fewest.len(), &mut self.scheduling)])
    }

    /// kube-scheduler's NodePorts filter for a pod of `w` on `node`: a host-network pod's
    /// container ports are host ports (the API server defaults `hostPort` to `containerPort`
    /// when `hostNetwork` is true), and no two pods on a node may hold the same host port and
    /// protocol (podnet models no `hostIP`, so every host port is on 0.0.0.0, which conflicts
    /// with any other). Pod-network pods' `hostPort`s are not modelled: they never conflict.
    pub(super) fn host_ports_free(&self, w: WorkloadId, node: NodeId) -> bool {
        let workloads = &self.scenario.workloads;
        let mine = &workloads[w.index()];
        if !mine.host_network || mine.ports.is_empty() {
            return true;
        }
        self.world.cluster.pods_of_node(node).into_iter().all(|id| {
            let other = &workloads[self.world.cluster.pod(id).workload.index()];
            !other.host_network
                || !other.ports.iter().any(|o| {
                    mine.ports
                        .iter()
                        .any(|p| p.container_port == o.container_port && p.protocol == o.protocol)
                })
        })
    }

    /// Re-files a node in the placement index after its pods or its state changed.
    pub(super) fn refresh_placement(&mut self, node: NodeId) {
        let n = self.world.topology.node(node);
        let pods = self.world.cluster.pods_on(node);
        let schedulable = !n.deleted && !n.down && pods < n.max_pods as usize;
        self.world.placement.update(node, pods, schedulable);
    }

    pub(super) fn retry_pending(&mut self) {
        self.retry_queued = false;
        for id in self.world.cluster.pending() {
            self.place(id);
        }
    }

    /// Removes a pod: its address returns to IPAM (kept for a Spiderpool StatefulSet pod
    /// that will come back with the same name).
    pub(super) fn remove_pod(&mut self, id: PodId, keep_address: bool, why: &str) {
        let pod = self.world.cluster.remove_pod(id);
        if let Some(node) = pod.node {
            self.refresh_placement(node);
        }
        if let Some(address) = &pod.address {
            self.pool_usage.change(self.now, &address.pool, -1);
        }
        if pod.address.is_some() {
            self.world
                .addressing
                .release(self.now, &pod.namespace, &pod.name, keep_address);
            self.schedule_gc();
        }
        self.record("podDeleted", pod.key(), why.to_string());
    }
}

/// Whether a workload's `nodeSelector` matches a node's labels.
pub(super) fn selects(selector: &crate::model::Labels, labels: &crate::model::Labels) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}
