//! Network policy in the simulated world: the policy state in force (changed by `apply` and
//! `delete` events) and the workload endpoints a snapshot hands to the policy engine.
//!
//! Invariants: policy is enforced only when a non-staged policy exists (SPEC §7: `network.policy`
//! defaults to `enforce` then), so a scenario without policy takes exactly the paths it took
//! before; endpoints exist only for pods with an address, keyed as the dataplane keys them.
//! What this is not: no evaluation (`policy::eval`), no decoding (`scenario`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::World;
use crate::forwarding::connect::{ConnectionVerdict, Denial, Policing, PolicyInputs};
use crate::forwarding::policy_reach::policy_reachability_in;
use crate::forwarding::reach::Prepared;
use crate::forwarding::{Attachment, Dataplane, PodKey};
use crate::model::Labels;
use crate::model::network::{Network, PolicyMode};
use crate::model::topology::DeviceId;
use crate::model::topology::Os;
use crate::model::workload::Workload;
use crate::policy::audit::{Audit, Member, Seen, audit as audit_members};
use crate::policy::eval::{Endpoint, NamedPort, Packet};
use crate::policy::model::endpoint_labels;

/// The service account a pod runs as when its workload names none (Kubernetes' default).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The policy inputs of the world as it is now, or `None` when no policy is enforced
/// (`network.policy: ignore`, or no non-staged policy).
pub fn inputs(world: &World, network: &Network, workloads: &[Workload]) -> Option<PolicyInputs> {
    if network.policy == Some(PolicyMode::Ignore) || !world.policy.has_enforced_policy() {
        return None;
    }
    Some(PolicyInputs {
        set: world.policy.clone(),
        endpoints: endpoints(world, workloads),
        services: BTreeMap::new(),
    })
}

/// The workload endpoint of every pod-network pod with an address, by pod key (Calico makes
/// none for a host-network pod).
pub fn endpoints(world: &World, workloads: &[Workload]) -> BTreeMap<PodKey, Endpoint> {
    let mut endpoints = BTreeMap::new();
    // The endpoint labels of the pods of one workload in one namespace, shared.
    let mut labels: BTreeMap<(usize, &str), Arc<Labels>> = BTreeMap::new();
    for pod in world.cluster.pods() {
        let (Some(address), Some(node)) = (&pod.address, pod.node) else {
            continue;
        };
        let Some(workload) = workloads.get(pod.workload.index()) else {
            continue;
        };
        if workload.host_network {
            continue;
        }
        let service_account = if workload.service_account_name.is_empty() {
            DEFAULT_SERVICE_ACCOUNT
        } else {
            workload.service_account_name.as_str()
        };
        endpoints.insert(
            PodKey(pod.id.0),
            Endpoint {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                ip: address.ip,
                labels: labels
                    .entry((pod.workload.index(), pod.namespace.as_str()))
                    .or_insert_with(|| {
                        Arc::new(endpoint_labels(
                            &workload.labels,
                            &pod.namespace,
                            service_account,
                        ))
                    })
                    .clone(),
                service_account: service_account.to_string(),
                ports: workload
                    .ports
                    .iter()
                    .filter_map(|p| {
                        Some(NamedPort {
                            name: p.name.clone()?,
                            port: p.container_port,
                            protocol: p.protocol.into(),
                        })
                    })
                    .collect(),
                windows: world.topology.node(node).os == Os::Windows,
            },
        );
    }
    endpoints
}

/// Pod pairs that cannot reach each other for one reason at one place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairGroup {
    /// A routing reason (SPEC §3.5) or `policy-denied`.
    pub reason: &'static str,
    pub stopped_at: DeviceId,
    pub count: u64,
    /// The smallest pair of the group.
    pub example: (PodKey, PodKey),
    /// What denied, for `policy-denied`.
    pub denial: Option<Denial>,
}

/// All-pairs reachability of a snapshot (SPEC §6.1 `reachablePairs`, `unreachable`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pairs {
    pub pairs: u64,
    /// Pairs delivered; with policy, on at least one port or protocol.
    pub reachable: u64,
    pub groups: Vec<PairGroup>,
}

/// Every ordered pair of distinct pods: routing alone when no policy is enforced (exactly
/// `forwarding::all_pairs`), else routing and policy over every packet class.
pub fn all_pairs(dp: &Dataplane, policy: Option<&PolicyInputs>) -> Pairs {
    let keys: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
    pairs_between(dp, policy, &keys, &keys, None)
}

/// Every ordered pair of distinct pods from `from` to `to`, as [`all_pairs`] counts them;
/// with `packet`, policy judges only that packet (routing alone decides without policy).
pub fn pairs_between(
    dp: &Dataplane,
    policy: Option<&PolicyInputs>,
    from: &[PodKey],
    to: &[PodKey],
    packet: Option<Packet>,
) -> Pairs {
    PairCounter::new(dp, policy).between(from, to, packet)
}

/// Counts pairs between many subsets of one snapshot's pods (the heatmap's cells) with the
/// routing setup and the policy in force prepared once.
pub struct PairCounter<'a> {
    dp: &'a Dataplane,
    prep: Prepared,
    policing: Option<Policing<'a>>,
}

impl<'a> PairCounter<'a> {
    pub fn new(dp: &'a Dataplane, policy: Option<&'a PolicyInputs>) -> PairCounter<'a> {
        PairCounter {
            dp,
            prep: Prepared::new(dp),
            policing: policy.map(Policing::new),
        }
    }

    /// [`pairs_between`] over the prepared snapshot.
    pub fn between(&self, from: &[PodKey], to: &[PodKey], packet: Option<Packet>) -> Pairs {
        let (dp, prep) = (self.dp, &self.prep);
        let Some(pol) = &self.policing else {
            let r = crate::forwarding::reach::reachability_in(prep, dp, from, to);
            return Pairs {
                pairs: r.pairs,
                reachable: r.reachable,
                groups: r
                    .unreachable
                    .into_iter()
                    .map(|g| PairGroup {
                        reason: g.reason.as_str(),
                        stopped_at: g.stopped_at,
                        count: g.count,
                        example: g.example,
                        denial: None,
                    })
                    .collect(),
            };
        };
        let packets = packet.map(|p| [p]);
        let r = policy_reachability_in(prep, dp, pol, from, to, packets.as_ref().map(|p| &p[..]));
        Pairs {
            pairs: r.pairs,
            reachable: r.some_packets,
            groups: r
                .blocked
                .into_iter()
                .filter_map(|g| {
                    let (reason, stopped_at, denial) = match g.verdict {
                        ConnectionVerdict::Delivered => return None,
                        ConnectionVerdict::Dropped { reason, at } => (reason.as_str(), at, None),
                        ConnectionVerdict::PolicyDenied(d) => ("policy-denied", d.at, Some(d)),
                    };
                    Some(PairGroup {
                        reason,
                        stopped_at,
                        count: g.count,
                        example: g.example,
                        denial,
                    })
                })
                .collect(),
        }
    }
}

/// The policy audit of a snapshot's pods (SPEC §7 report.json `policy` and `connectivity`),
/// pods grouped by `namespace/workload`: pod-network pods by their workload endpoint,
/// host-network pods as their node's host traffic from and to the node's address, as all-pairs
/// reachability sees them (`dp`).
pub fn audit(pods: &[super::snapshot::PodRow], dp: &Dataplane, inputs: &PolicyInputs) -> Audit {
    let groups: Vec<(String, &str, Seen<'_>)> = pods
        .iter()
        .filter_map(|p| {
            let seen = match inputs.endpoints.get(&p.key) {
                Some(e) => Seen::Endpoint(e),
                None => {
                    let info = dp.pod(p.key).filter(|i| i.attachment == Attachment::Host)?;
                    Seen::Host(dp.address(info.device).unwrap_or(info.ip))
                }
            };
            let node = p.node.as_deref().unwrap_or_default();
            Some((format!("{}/{}", p.namespace, p.workload), node, seen))
        })
        .collect();
    let members: Vec<Member<'_>> = groups
        .iter()
        .map(|(group, node, seen)| Member {
            group,
            node,
            seen: *seen,
        })
        .collect();
    // The engine all-pairs reachability evaluates with (Service endpoints for `services`
    // rules included).
    audit_members(&Policing::new(inputs).engine, &members)
}

#[cfg(test)]
mod tests;
