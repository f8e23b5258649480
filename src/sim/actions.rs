//! The scenario's events applied to the world: scaling, pod deletion, resources applied and
//! deleted, nodes down, up, added and deleted, BGP daemon restarts, links cut and mended.

use super::*;

impl Simulation<'_> {
    /// Applies scenario action `i` to the world.
    pub(super) fn apply(&mut self, i: usize) {
        let action = self.scenario.actions[i].action.clone();
        match action {
            Action::NodeDown(name) => self.node_down(&name, true),
            Action::NodeUp(name) => self.node_down(&name, false),
            Action::RestartBgp { node, down_for } => self.restart_bgp(&node, down_for),
            Action::DeleteNode(name) => self.delete_node(&name),
            Action::AddNodes(add) => {
                let mut added: Vec<NodeId> = Vec::new();
                for node in add.nodes {
                    added.push(self.world.topology.add_node(add.rack, node));
                }
                let mut slots = Vec::new();
                let mut names = Vec::new();
                for id in added {
                    self.refresh_placement(id);
                    let node = self.world.topology.node(id).clone();
                    if node.os == Os::Windows {
                        self.world.hns.add_host(&node.name);
                    }
                    self.world.addressing.add_node(self.now, &node);
                    self.record(
                        "addNode",
                        node.name.clone(),
                        format!("joined with address {}", node.ip),
                    );
                    names.push(node.name.clone());
                    for (w, workload) in
                        WorkloadId::all(&self.scenario.workloads).zip(&self.scenario.workloads)
                    {
                        if workload.kind == WorkloadKind::DaemonSet
                            && selects(&workload.node_selector, &node.labels)
                        {
                            slots.push((w, PodSlot::Daemon(id)));
                        }
                    }
                }
                // Before the blocks claimed above are handed to BGP (`drain_ipam_changes`),
                // so the new speakers originate them.
                if !names.is_empty() {
                    let s = if names.len() == 1 { "" } else { "s" };
                    self.replan_bgp(&format!("node{s} {} joined", names.join(", ")));
                }
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::LinkDown(a, b) | Action::LinkUp(a, b) => {
                let up = matches!(self.scenario.actions[i].action, Action::LinkUp(..));
                let topo = &mut self.world.topology;
                let kind = if up { "linkUp" } else { "linkDown" };
                let link = topo
                    .device_by_name(&a)
                    .zip(topo.device_by_name(&b))
                    .and_then(|(x, y)| topo.link_between(x, y));
                let outcome = match link {
                    Some(l) if topo.links[l.index()].up == up => {
                        if up {
                            "ignored: already up"
                        } else {
                            "ignored: already down"
                        }
                    }
                    Some(l) => {
                        topo.set_link_up(l, up);
                        if up { "up" } else { "down" }
                    }
                    None => "ignored: no such link",
                };
                self.record(kind, format!("{a}--{b}"), outcome);
                if let Some(bgp) = self.world.control.bgp.as_mut() {
                    let scheduled =
                        bgp.link_changed(self.now, &self.world.topology, link.as_slice());
                    self.schedule_bgp(scheduled);
                }
            }
            Action::Scale {
                workload,
                namespace,
                replicas,
            } => {
                let Some(w) = self.workload_index(&workload, &namespace) else {
                    return;
                };
                self.record(
                    "scale",
                    format!("{namespace}/{workload}"),
                    format!("to {replicas} replicas"),
                );
                let removed = self.world.cluster.scale_down_to(w, replicas);
                for id in removed {
                    self.remove_pod(id, false, "scaled down");
                }
                let added = self.world.cluster.scale_to(w, replicas);
                let slots = added
                    .into_iter()
                    .map(|o| (w, PodSlot::Ordinal(o)))
                    .collect();
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::DeletePods(which) => {
                let victims: Vec<PodId> = match &which {
                    DeletePods::Workload {
                        workload,
                        namespace,
                        count,
                    } => {
                        let Some(w) = self.workload_index(workload, namespace) else {
                            return;
                        };
                        self.world.cluster.highest_pods(w, *count as usize)
                    }
                    DeletePods::Pod(name) => self.world.cluster.find(name).into_iter().collect(),
                };
                let mut slots = Vec::new();
                for id in victims {
                    let pod = self.world.cluster.pod(id);
                    let (w, slot) = (pod.workload, pod.slot);
                    let stateful =
                        self.scenario.workloads[w.index()].kind == WorkloadKind::StatefulSet;
                    self.remove_pod(id, stateful, "deleted");
                    // Controllers replace what they own; a bare Pod is gone for good.
                    match self.scenario.workloads[w.index()].kind {
                        WorkloadKind::Pod => self.world.cluster.forget_slot(w, slot),
                        WorkloadKind::DaemonSet => slots.push((w, slot)),
                        WorkloadKind::Deployment | WorkloadKind::StatefulSet => {
                            self.world.cluster.forget_slot(w, slot);
                            let ordinals = self.world.cluster.add_ordinals(w, 1);
                            slots.extend(ordinals.into_iter().map(|o| (w, PodSlot::Ordinal(o))));
                        }
                    }
                }
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::Apply { resource } => {
                let r = &self.scenario.applied[resource.index()];
                let subject = format!("{}/{}", r.kind, r.name);
                match &self.scenario.applied_specs[resource.index()] {
                    Some(ResourceSpec::Namespace(ns)) => {
                        self.world.namespaces.insert(ns.name.clone(), ns.clone());
                        self.world.policy.apply(&namespace_resource(ns));
                        self.record("apply", subject, "applied");
                    }
                    Some(ResourceSpec::Policy(resource)) => {
                        self.world.policy.apply(resource);
                        self.record("apply", subject, "applied");
                    }
                    Some(ResourceSpec::Service(s)) => {
                        let outcome = match self.world.services.apply(s) {
                            Ok(Some(ip)) => format!("applied: clusterIP {ip}"),
                            Ok(None) => "applied: headless".to_string(),
                            Err(refused) => {
                                self.notes.push(format!("{subject}: {refused}"));
                                format!("refused: {refused}")
                            }
                        };
                        self.record("apply", subject, outcome);
                    }
                    Some(ResourceSpec::BgpPeer(p)) => {
                        let peer = p.clone();
                        let cause = format!("BGPPeer {} applied", p.name);
                        self.world.control.bgp_inputs.apply_peer(peer);
                        self.record("apply", subject, "applied");
                        self.replan_bgp(&cause);
                    }
                    Some(ResourceSpec::BgpConfiguration(c)) if c.name == "default" => {
                        let c = c.clone();
                        self.world.control.bgp_inputs.apply_config(&c);
                        self.record("apply", subject, "applied");
                        self.replan_bgp("BGPConfiguration default applied");
                    }
                    Some(ResourceSpec::BgpConfiguration(_)) => {
                        self.record(
                            "apply",
                            subject,
                            "ignored: only BGPConfiguration default is modelled",
                        );
                    }
                    Some(spec) => {
                        let outcome = match self.world.addressing.apply(spec) {
                            Some(refused) => {
                                self.notes.push(format!("{subject}: {refused}"));
                                format!("refused: {refused}")
                            }
                            None => "applied".to_string(),
                        };
                        self.world
                            .addressing
                            .refresh_tunnels(self.now, &self.world.topology);
                        self.record("apply", subject, outcome);
                    }
                    None => self.record("apply", subject, "ignored"),
                }
                self.queue_retry();
            }
            Action::Delete { kind, name } => {
                if kind == "Namespace" {
                    self.world.namespaces.remove(&name);
                }
                self.world.policy.delete_named(&kind, &name);
                if kind == "Service" {
                    self.world.services.delete(&name);
                }
                self.world.addressing.delete(&kind, &name);
                self.world
                    .addressing
                    .refresh_tunnels(self.now, &self.world.topology);
                self.record("delete", format!("{kind}/{name}"), "deleted");
                let inputs = &mut self.world.control.bgp_inputs;
                match kind.as_str() {
                    "BGPPeer" => {
                        inputs.peers.retain(|p| p.name != name);
                        self.replan_bgp(&format!("BGPPeer {name} deleted"));
                    }
                    // Without it, Calico's defaults apply: the mesh on, AS 64512.
                    "BGPConfiguration" if name == "default" => {
                        inputs.config = bgp::BgpConfig::default();
                        inputs.services = Default::default();
                        self.replan_bgp("BGPConfiguration default deleted");
                    }
                    _ => {}
                }
                self.queue_retry();
            }
        }
    }

    pub(super) fn workload_index(&self, name: &str, namespace: &str) -> Option<WorkloadId> {
        self.scenario
            .workloads
            .iter()
            .position(|w| w.name == name && w.namespace == namespace)
            .map(|i| WorkloadId(i as u32))
    }

    pub(super) fn node_down(&mut self, name: &str, down: bool) {
        let kind = if down { "nodeDown" } else { "nodeUp" };
        let Some(id) = self.world.topology.node_by_name(name) else {
            return self.record(kind, name, "ignored: no such node");
        };
        let node = self.world.topology.node_mut(id);
        if node.deleted {
            return self.record(kind, name, "ignored: node deleted");
        }
        if node.down == down {
            return self.record(
                kind,
                name,
                if down {
                    "ignored: already down"
                } else {
                    "ignored: already up"
                },
            );
        }
        node.down = down;
        // Its pods stop (Unknown) or run again with the same addresses; they are not moved.
        for pid in self.world.cluster.pods_of_node(id) {
            if self.world.cluster.pod(pid).networked() {
                let status = if down {
                    PodStatus::Unknown
                } else {
                    PodStatus::Running
                };
                self.world.cluster.set_status(pid, status);
            }
        }
        self.refresh_placement(id);
        self.record(kind, name, if down { "down" } else { "up" });
        let device = self.world.topology.node(id).device;
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            let scheduled = if down {
                bgp.speaker_down(self.now, device)
            } else {
                bgp.speaker_up(self.now, device)
            };
            self.schedule_bgp(scheduled);
        }
        if !down {
            self.queue_retry();
        }
    }

    /// `restartBgp`: the node's BGP daemon dies and comes back after `down_for`; the host,
    /// its pods and its kernel routes stay (graceful restart, `bgp::restart`).
    pub(super) fn restart_bgp(&mut self, name: &str, down_for: SimDuration) {
        let Some(id) = self.world.topology.node_by_name(name) else {
            return self.record("restartBgp", name, "ignored: no such node");
        };
        let node = self.world.topology.node(id);
        let (device, deleted, down) = (node.device, node.deleted, node.down);
        let running = self.world.control.bgp.as_ref().map(|bgp| bgp.is_up(device));
        let outcome = match running {
            _ if deleted => "ignored: node deleted".to_string(),
            _ if down => "ignored: node down".to_string(),
            None => "ignored: no BGP in this scenario".to_string(),
            Some(false) => "ignored: its BGP daemon is not running".to_string(),
            Some(true) => format!("BGP daemon down for {down_for}"),
        };
        self.record("restartBgp", name, outcome);
        if running == Some(true)
            && !deleted
            && !down
            && let Some(bgp) = self.world.control.bgp.as_mut()
        {
            let scheduled = bgp.restart_bgp(self.now, device, down_for);
            self.schedule_bgp(scheduled);
        }
    }

    pub(super) fn delete_node(&mut self, name: &str) {
        let Some(id) = self
            .world
            .topology
            .node_by_name(name)
            .filter(|id| !self.world.topology.node(*id).deleted)
        else {
            return self.record("deleteNode", name, "ignored: no such node");
        };
        let mut slots = Vec::new();
        for pid in self.world.cluster.pods_of_node(id) {
            let pod = self.world.cluster.pod(pid);
            let (w, slot) = (pod.workload, pod.slot);
            let kind = self.scenario.workloads[w.index()].kind;
            self.remove_pod(pid, false, &format!("node {name} deleted"));
            match kind {
                // Controllers recreate their pods elsewhere, StatefulSet pods with their name.
                WorkloadKind::Deployment | WorkloadKind::StatefulSet => slots.push((w, slot)),
                WorkloadKind::DaemonSet | WorkloadKind::Pod => {
                    self.world.cluster.forget_slot(w, slot)
                }
            }
        }
        self.world.topology.node_mut(id).deleted = true;
        self.refresh_placement(id);
        let device = self.world.topology.node(id).device;
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            let scheduled = bgp.speaker_removed(self.now, device);
            self.schedule_bgp(scheduled);
        }
        self.world.addressing.remove_node(self.now, name);
        self.record("deleteNode", name, "deleted");
        self.queue_creations(self.now, slots);
        self.queue_retry();
    }
}
