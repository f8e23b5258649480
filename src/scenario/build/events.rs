//! Building the events: each action checked against the cluster as the earlier events leave
//! it — nodes added or deleted, replicas, resources applied or deleted — one function per
//! action.
//!
//! Events are played in time order (stable: the same time keeps file order), so a reference
//! to a node added or deleted by an earlier event resolves as it will at run time. What an
//! event may name is kept in a [`Timeline`]; every check reports into [`Cx`] at the field's
//! path and the event is dropped, the others go on.

use super::*;
use crate::model::action::AppliedId;

impl Builder<'_> {
    /// The events as scheduled actions, in time order; `applied` receives the resources of
    /// `apply` events (an action names its resource by index there).
    pub(super) fn events(
        &mut self,
        raw: &[(String, Loc<RawEvent>)],
        topo: &Topology,
        workloads: &[Workload],
        resources: &[Resource],
        applied: &mut Vec<Resource>,
    ) -> Vec<ScheduledAction> {
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by_key(|&i| {
            raw[i]
                .1
                .value
                .at
                .as_ref()
                .map_or(SimDuration::ZERO, |a| a.value)
        });
        let mut timeline = Timeline::new(topo, workloads, resources, self.unbuilt_nodes());
        let mut out = Vec::new();
        for i in order {
            let (path, ev) = &raw[i];
            let scheduled = self
                .cx
                .with_path_prefix(path, |cx| timeline.event(cx, &ev.value, applied));
            out.extend(scheduled);
        }
        out
    }
}

/// The cluster as the events played so far leave it: what the next event may name.
struct Timeline<'s> {
    topo: &'s Topology,
    /// The workloads indexed by name, and the pod names they can create.
    pod_names: PodNames<'s>,
    /// The first rack of each name (a scan per `addNodes` was quadratic).
    rack_index: BTreeMap<&'s str, usize>,
    /// Every node by name: `true` while it exists, `false` once an event deleted it.
    nodes: BTreeMap<String, bool>,
    /// Nodes (and ToRs) of a rack that could not be built: their error is reported there, once.
    unbuilt: BTreeSet<String>,
    /// Device, zone and rack names and the nodes added so far: an added node's name is new.
    names: BTreeSet<String>,
    /// Per rack: the addresses taken and the cursor handing out the next default address.
    racks: Vec<(BTreeSet<IpAddr>, AddressCursor)>,
    /// Replicas per `(namespace, workload)`, and their running total, for the pod limit
    /// (summing the map per `scale` event was quadratic).
    replicas: BTreeMap<(String, String), u64>,
    total_replicas: u64,
    /// `(kind, name)` of every resource defined now, for `delete`.
    resources: BTreeSet<(String, String)>,
    node_count: u64,
    /// Labels of every node together: each node copies its zone's and rack's.
    node_labels: u64,
}

impl<'s> Timeline<'s> {
    fn new(
        topo: &'s Topology,
        workloads: &'s [Workload],
        resources: &[Resource],
        unbuilt: BTreeSet<String>,
    ) -> Timeline<'s> {
        let mut names: BTreeSet<String> = topo.devices.iter().map(|d| d.name.clone()).collect();
        names.extend(topo.zones.iter().map(|z| z.name.clone()));
        names.extend(topo.racks.iter().map(|r| r.name.clone()));
        let racks = topo
            .racks
            .iter()
            .map(|r| {
                let mut taken: BTreeSet<IpAddr> =
                    r.nodes.iter().map(|n| topo.node(*n).ip).collect();
                taken.insert(r.gateway);
                (taken, AddressCursor::new(r.subnet, r.gateway))
            })
            .collect();
        let replicas: BTreeMap<(String, String), u64> = workloads
            .iter()
            .map(|w| ((w.namespace.clone(), w.name.clone()), u64::from(w.replicas)))
            .collect();
        let mut rack_index = BTreeMap::new();
        for (i, r) in topo.racks.iter().enumerate() {
            rack_index.entry(r.name.as_str()).or_insert(i);
        }
        Timeline {
            topo,
            pod_names: PodNames::new(workloads),
            rack_index,
            nodes: topo.nodes.iter().map(|n| (n.name.clone(), true)).collect(),
            unbuilt,
            names,
            racks,
            total_replicas: replicas.values().sum(),
            replicas,
            resources: resources
                .iter()
                .map(|r| (r.kind.clone(), r.name.clone()))
                .collect(),
            node_count: topo.nodes.len() as u64,
            node_labels: topo.nodes.iter().map(|n| n.labels.len() as u64).sum(),
        }
    }

    /// One event: its time and its one action.
    fn event(
        &mut self,
        cx: &mut Cx,
        e: &RawEvent,
        applied: &mut Vec<Resource>,
    ) -> Option<ScheduledAction> {
        let at = SimTime::ZERO + cx.require(&e.at, e.pos, "at")?.value;
        let present: Vec<&str> = RawEvent::ACTIONS
            .iter()
            .copied()
            .filter(|k| event_has(e, k))
            .collect();
        if present.len() != 1 {
            let msg = if present.is_empty() {
                format!(
                    "an event needs exactly one action: {}",
                    RawEvent::ACTIONS.join(", ")
                )
            } else {
                format!(
                    "an event has exactly one action; this one has {}",
                    present.join(", ")
                )
            };
            cx.error(e.pos, msg);
            return None;
        }
        let action = if let Some(s) = &e.scale {
            cx.at_key("scale", |cx| self.scale(cx, &s.value))
        } else if let Some(n) = &e.node_down {
            self.node(cx, n, "nodeDown").map(Action::NodeDown)
        } else if let Some(n) = &e.node_up {
            self.node(cx, n, "nodeUp").map(Action::NodeUp)
        } else if let Some(r) = &e.restart_bgp {
            cx.at_key("restartBgp", |cx| self.restart_bgp(cx, &r.value))
        } else if let Some(n) = &e.delete_node {
            let node = self.node(cx, n, "deleteNode")?;
            self.nodes.insert(node.clone(), false);
            Some(Action::DeleteNode(node))
        } else if let Some(a) = &e.add_nodes {
            cx.at_key("addNodes", |cx| self.add_nodes(cx, &a.value))
        } else if let Some(l) = &e.link_down {
            cx.at_key("linkDown", |cx| self.link(cx, l))
                .map(|(a, z)| Action::LinkDown(a, z))
        } else if let Some(l) = &e.link_up {
            cx.at_key("linkUp", |cx| self.link(cx, l))
                .map(|(a, z)| Action::LinkUp(a, z))
        } else if let Some(d) = &e.delete_pods {
            cx.at_key("deletePods", |cx| self.delete_pods(cx, &d.value))
        } else if let Some(a) = &e.apply {
            let resource = cx.at_key("apply", |cx| Resource::from_node(a.value.0.clone(), cx))?;
            self.resources
                .insert((resource.kind.clone(), resource.name.clone()));
            applied.push(resource);
            Some(Action::Apply {
                resource: AppliedId(applied.len() as u32 - 1),
            })
        } else if let Some(d) = &e.delete {
            cx.at_key("delete", |cx| self.delete(cx, &d.value))
        } else {
            None
        };
        action.map(|action| ScheduledAction { at, action })
    }

    /// A node an event names (under `key`): it must exist at this time.
    fn node(&self, cx: &mut Cx, f: &Loc<String>, key: &str) -> Option<String> {
        match self.nodes.get(&f.value) {
            Some(true) => Some(f.value.clone()),
            Some(false) => {
                cx.at_key(key, |cx| {
                    cx.error(
                        f.pos,
                        format!("node `{}` was deleted by an earlier event", f.value),
                    )
                });
                None
            }
            None if self.unbuilt.contains(&f.value) => None,
            None => {
                let hint = cx
                    .suggest(&f.value, self.nodes.keys().map(String::as_str))
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default();
                cx.at_key(key, |cx| {
                    cx.error(f.pos, format!("no node named `{}`{hint}", f.value))
                });
                None
            }
        }
    }

    /// The workload `namespace/name` an event names (under `workload`).
    fn workload(&self, cx: &mut Cx, name: &Loc<String>, namespace: &str) -> Option<&'s Workload> {
        let found = self.pod_names.workload(namespace, &name.value);
        if found.is_none() {
            cx.at_key("workload", |cx| {
                cx.error(
                    name.pos,
                    format!("no workload `{namespace}/{}`", name.value),
                )
            });
        }
        found
    }

    /// `scale: {workload, namespace, replicas}`: a Deployment or StatefulSet, within the pod
    /// limit counted over every workload's replicas at this time.
    fn scale(&mut self, cx: &mut Cx, s: &RawScale) -> Option<Action> {
        let w = cx.require(&s.workload, s.pos, "workload")?;
        let rep = cx.require(&s.replicas, s.pos, "replicas")?;
        let namespace = val(&s.namespace).unwrap_or_else(|| "default".to_string());
        let wl = self.workload(cx, w, &namespace)?;
        if matches!(wl.kind, WorkloadKind::DaemonSet | WorkloadKind::Pod) {
            cx.at_key("workload", |cx| {
                cx.error(w.pos, format!("a {} cannot be scaled", wl.kind))
            });
            return None;
        }
        let before = self
            .replicas
            .insert((namespace.clone(), w.value.clone()), u64::from(rep.value));
        self.total_replicas = self.total_replicas - before.unwrap_or(0) + u64::from(rep.value);
        if self.total_replicas > LIMITS.max_pods {
            cx.at_key("replicas", |cx| {
                cx.error(
                    rep.pos,
                    format!(
                        "the workloads would have more than {} pods",
                        LIMITS.max_pods
                    ),
                )
            });
            return None;
        }
        Some(Action::Scale {
            workload: w.value.clone(),
            namespace,
            replicas: rep.value,
        })
    }

    /// `restartBgp: {node, downFor}`: a node that exists, a restart that takes some time.
    fn restart_bgp(&self, cx: &mut Cx, r: &RawRestartBgp) -> Option<Action> {
        let node = cx.require(&r.node, r.pos, "node")?;
        let down_for = cx.require(&r.down_for, r.pos, "downFor")?;
        if down_for.value == SimDuration::ZERO {
            cx.at_key("downFor", |cx| {
                cx.error(
                    down_for.pos,
                    "a restart takes some time: give a duration above 0",
                )
            });
            return None;
        }
        let node = self.node(cx, node, "node")?;
        Some(Action::RestartBgp {
            node,
            down_for: down_for.value,
        })
    }

    /// `addNodes: {rack, namePrefix, count, ...}`: `count` new nodes named `prefix-1`… with
    /// the rack's next free addresses, inheriting the zone's and rack's labels.
    fn add_nodes(&mut self, cx: &mut Cx, a: &RawAddNodes) -> Option<Action> {
        let topo = self.topo;
        let rack = cx.require(&a.rack, a.pos, "rack")?;
        let prefix = cx.require(&a.name_prefix, a.pos, "namePrefix")?;
        let count = cx.require(&a.count, a.pos, "count")?;
        let Some(&ri) = self.rack_index.get(rack.value.as_str()) else {
            cx.at_key("rack", |cx| {
                cx.error(rack.pos, format!("no rack named `{}`", rack.value))
            });
            return None;
        };
        self.node_count += u64::from(count.value);
        if count.value == 0 || self.node_count > LIMITS.max_nodes {
            cx.at_key("count", |cx| {
                cx.error(
                    count.pos,
                    format!(
                        "{} is outside 1..={} (the cluster is limited to {} nodes)",
                        count.value, LIMITS.max_nodes, LIMITS.max_nodes
                    ),
                )
            });
            return None;
        }
        let r = &topo.racks[ri];
        let zone = &topo.zones[r.zone.index()];
        let per_node = (r.labels.len() + zone.labels.len() + 4) as u64;
        self.node_labels = self
            .node_labels
            .saturating_add(per_node * u64::from(count.value));
        if self.node_labels > LIMITS.max_node_labels {
            cx.at_key("count", |cx| cx.error(count.pos, node_labels_message()));
            return None;
        }
        let os = val(&a.os).unwrap_or(Os::Linux);
        let bgp_as = a.bgp.as_ref().and_then(|x| val(&x.value.as_number));
        let mut nodes = Vec::new();
        for k in 1..=count.value {
            let name = format!("{}-{k}", prefix.value);
            if !self.names.insert(name.clone()) {
                cx.at_key("namePrefix", |cx| {
                    cx.error(prefix.pos, format!("node `{name}` already exists"))
                });
                return None;
            }
            let (taken, cursor) = &mut self.racks[ri];
            let Some(ip) = cursor.next_free(taken) else {
                cx.at_key("count", |cx| {
                    cx.error(
                        count.pos,
                        format!(
                            "rack `{}` ({}) has no free address left for `{name}`",
                            r.name, r.subnet
                        ),
                    )
                });
                return None;
            };
            taken.insert(ip);
            self.nodes.insert(name.clone(), true);
            let mut labels_of_node = zone.labels.clone();
            labels_of_node.extend(r.labels.clone());
            labels_of_node.extend(labels(&a.labels));
            labels_of_node.extend(automatic_labels(&name, os, &zone.name, &r.name));
            nodes.push(NewNode {
                name,
                ip,
                os,
                max_pods: val(&a.max_pods).unwrap_or(110),
                labels: labels_of_node,
                bgp: NodeBgp {
                    as_number: bgp_as,
                    ..NodeBgp::default()
                },
            });
        }
        Some(Action::AddNodes(AddNodes {
            rack: RackId(ri as u32),
            nodes,
        }))
    }

    /// `linkDown`/`linkUp: [a, b]`: two devices of the built topology with a link between
    /// them.
    fn link(&self, cx: &mut Cx, l: &Loc<Vec<Loc<String>>>) -> Option<(String, String)> {
        let topo = self.topo;
        if l.value.len() != 2 {
            cx.error(
                l.pos,
                format!(
                    "a link is named by its two devices, [a, b]; found {} names",
                    l.value.len()
                ),
            );
            return None;
        }
        let mut ids = Vec::new();
        for (k, end) in l.value.iter().enumerate() {
            match topo.device_by_name(&end.value) {
                Some(d) => ids.push(d),
                None if self.nodes.contains_key(&end.value) => cx.at_index(k, |cx| {
                    cx.error(
                        end.pos,
                        format!(
                            "`{}` is added by an event; links of added nodes cannot be cut",
                            end.value
                        ),
                    )
                }),
                // A node or ToR of a rack that could not be built: its error is reported there.
                None if self.unbuilt.contains(&end.value) => {}
                None => {
                    let hint = cx
                        .suggest(&end.value, topo.devices.iter().map(|d| d.name.as_str()))
                        .map(|n| format!("; did you mean `{n}`?"))
                        .unwrap_or_default();
                    cx.at_index(k, |cx| {
                        cx.error(end.pos, format!("no device named `{}`{hint}", end.value))
                    });
                }
            }
        }
        if ids.len() != 2 {
            return None;
        }
        let (a, z) = (&l.value[0].value, &l.value[1].value);
        if topo.link_between(ids[0], ids[1]).is_none() {
            cx.error(l.pos, format!("there is no link between `{a}` and `{z}`"));
            return None;
        }
        Some((a.clone(), z.clone()))
    }

    /// `deletePods`: `workload` with an optional `count`, or one `pod` some workload can
    /// create.
    fn delete_pods(&self, cx: &mut Cx, d: &RawDeletePods) -> Option<Action> {
        let namespace = val(&d.namespace).unwrap_or_else(|| "default".to_string());
        match (&d.workload, &d.pod) {
            (Some(w), None) => {
                self.workload(cx, w, &namespace)?;
                let count = d.count.as_ref().map_or(u32::MAX, |c| c.value);
                Some(Action::DeletePods(DeletePods::Workload {
                    workload: w.value.clone(),
                    namespace,
                    count,
                }))
            }
            (None, Some(p)) => {
                if d.count.is_some() {
                    cx.error(d.pos, "`count` goes with `workload`, not with `pod`");
                }
                if !self
                    .pod_names
                    .could_exist(&p.value, &|n| self.nodes.contains_key(n))
                {
                    cx.at_key("pod", |cx| {
                        cx.error(
                            p.pos,
                            format!("no workload creates a pod named `{}`", p.value),
                        )
                    });
                    return None;
                }
                Some(Action::DeletePods(DeletePods::Pod(p.value.clone())))
            }
            _ => {
                cx.error(d.pos, "give `workload` (with an optional `count`) or `pod`");
                None
            }
        }
    }

    /// `delete: {kind, name}`: a resource defined at this time.
    fn delete(&mut self, cx: &mut Cx, d: &RawDeleteRef) -> Option<Action> {
        let kind = cx.require(&d.kind, d.pos, "kind")?;
        let name = cx.require(&d.name, d.pos, "name")?;
        if !self
            .resources
            .remove(&(kind.value.clone(), name.value.clone()))
        {
            cx.error(
                d.pos,
                format!(
                    "no {} named `{}` is defined at this time",
                    kind.value, name.value
                ),
            );
            return None;
        }
        Some(Action::Delete {
            kind: kind.value.clone(),
            name: name.value.clone(),
        })
    }
}

fn event_has(e: &RawEvent, key: &str) -> bool {
    match key {
        "scale" => e.scale.is_some(),
        "nodeDown" => e.node_down.is_some(),
        "nodeUp" => e.node_up.is_some(),
        "restartBgp" => e.restart_bgp.is_some(),
        "deleteNode" => e.delete_node.is_some(),
        "addNodes" => e.add_nodes.is_some(),
        "linkDown" => e.link_down.is_some(),
        "linkUp" => e.link_up.is_some(),
        "deletePods" => e.delete_pods.is_some(),
        "apply" => e.apply.is_some(),
        "delete" => e.delete.is_some(),
        _ => false,
    }
}
