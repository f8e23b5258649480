//! The simulator's side of IPAM: one front for Calico's block IPAM or Spiderpool, whichever
//! `network.cni` selects, fed from the scenario's resources.
//!
//! It turns resources into engine calls (pools, configuration, reservations, namespaces),
//! makes a pod's request from its annotations and namespace, and reads the state back for
//! reports. The address-management rules themselves live in `ipam`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::ipam::calico::{
    self, AssignRequest, CalicoIpam, IpPool, IpReservation, IpamChange, IpamConfig, IpamError,
};
use crate::ipam::spiderpool::{
    PodHandle, SpiderError, SpiderIpPool, SpiderRequest, SpiderReservedIp, SpiderpoolIpam,
};
use crate::model::Labels;
use crate::model::network::{CalicoBackend, CalicoProfile, Cni, Network, WindowsHns};
use crate::model::time::SimTime;
use crate::model::topology::{Node, Topology};
use crate::scenario::kinds::{Namespace, ResourceSpec};
use crate::sim::cluster::PendingReason;
use crate::sim::snapshot::PoolRow;

/// The annotation naming Calico pools for a pod or namespace (a JSON list of names or CIDRs).
pub const CALICO_IPV4_POOLS: &str = "cni.projectcalico.org/ipv4pools";
/// The annotation asking Calico for fixed addresses (a JSON list).
pub const CALICO_IP_ADDRS: &str = "cni.projectcalico.org/ipAddrs";

/// An address given to a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodAddress {
    pub ip: IpAddr,
    pub pool: String,
    /// The Calico block it came from (Spiderpool pods have none).
    pub block: Option<IpNet>,
    pub borrowed: bool,
    /// Spiderpool: the pool's gateway, the pod's way off its segment.
    pub gateway: Option<IpAddr>,
}

/// What a pod asks IPAM for.
pub struct PodRequest<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub labels: &'a Labels,
    pub annotations: &'a Labels,
    pub node: &'a Node,
    pub stateful: bool,
}

/// IPAM for the whole cluster.
#[derive(Clone, Debug)]
pub enum Addressing {
    Calico(Box<CalicoIpam>),
    Spiderpool(Box<SpiderpoolIpam>),
}

/// Namespaces by name, from `v1` Namespace resources.
pub type Namespaces = BTreeMap<String, Namespace>;

impl Addressing {
    /// Builds IPAM from the resources present at the start. Returns it with the warnings it
    /// produced (the default pool's creation, for instance).
    pub fn new(
        network: &Network,
        profile: CalicoProfile,
        specs: &[&ResourceSpec],
        topology: &Topology,
    ) -> (Addressing, Vec<String>) {
        let mut notes = Vec::new();
        match network.cni {
            Cni::Calico => {
                let config = specs
                    .iter()
                    .find_map(|s| match s {
                        ResourceSpec::IpamConfig(c) => Some(c.clone()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let mut ipam = CalicoIpam::new(profile, config);
                ipam.set_windows_use_single_network(
                    network.windows_hns == WindowsHns::SingleNetwork,
                );
                ipam.set_windows_reservation(network.windows_reserve);
                let mut pools: Vec<IpPool> = specs
                    .iter()
                    .filter_map(|s| match s {
                        ResourceSpec::IpPool(p) => Some(p.clone()),
                        _ => None,
                    })
                    .collect();
                if pools.is_empty() {
                    let pool = default_pool(network, topology);
                    notes.push(format!(
                        "no IPPool given: created Calico's default pool {} ({})",
                        pool.name, pool.cidr
                    ));
                    pools.push(pool);
                }
                for pool in pools {
                    // Pools were validated with the scenario; a refusal here is a bug.
                    if let Err(e) = ipam.upsert_pool(pool) {
                        notes.push(format!("pool refused: {e}"));
                    }
                }
                let reservations: Vec<IpReservation> = specs
                    .iter()
                    .filter_map(|s| match s {
                        ResourceSpec::IpReservation(r) => Some(r.clone()),
                        _ => None,
                    })
                    .collect();
                ipam.set_reservations(reservations);
                (Addressing::Calico(Box::new(ipam)), notes)
            }
            Cni::Spiderpool => {
                let pools: Vec<SpiderIpPool> = specs
                    .iter()
                    .filter_map(|s| match s {
                        ResourceSpec::SpiderIpPool(p) => Some(p.clone()),
                        _ => None,
                    })
                    .collect();
                let reserved: Vec<SpiderReservedIp> = specs
                    .iter()
                    .filter_map(|s| match s {
                        ResourceSpec::SpiderReservedIp(r) => Some(r.clone()),
                        _ => None,
                    })
                    .collect();
                // The pools were validated with the scenario, so this is not expected to
                // refuse them; if it does, the pools are added one by one and each refusal
                // becomes a note rather than a crash.
                let ipam = match SpiderpoolIpam::new(pools.clone(), reserved.clone()) {
                    Ok(ipam) => ipam,
                    Err(_) => {
                        let mut ipam = SpiderpoolIpam::default();
                        for r in reserved {
                            ipam.set_reserved_ip(r);
                        }
                        for p in pools {
                            if let Err(e) = ipam.add_pool(p) {
                                notes.push(format!("SpiderIPPool refused: {}", e));
                            }
                        }
                        ipam
                    }
                };
                (Addressing::Spiderpool(Box::new(ipam)), notes)
            }
        }
    }

    /// Registers a node with IPAM (labels, OS) and gives it its tunnel addresses.
    pub fn add_node(&mut self, now: SimTime, node: &Node) {
        if let Addressing::Calico(ipam) = self {
            ipam.upsert_node(calico::IpamNode {
                name: node.name.clone(),
                labels: node.labels.clone(),
                os: node.os,
            });
            ipam.assign_tunnel(now, &node.name);
        }
    }

    /// Re-runs calico-node's tunnel allocation (after pools change).
    pub fn refresh_tunnels(&mut self, now: SimTime, topology: &Topology) {
        if let Addressing::Calico(ipam) = self {
            for (_, node) in topology.live_nodes() {
                ipam.assign_tunnel(now, &node.name);
            }
        }
    }

    /// The node left the cluster: its affinities are released (its pods were released first).
    pub fn remove_node(&mut self, now: SimTime, name: &str) {
        if let Addressing::Calico(ipam) = self {
            ipam.release_node(now, name);
        }
    }

    /// Asks for a pod's address; `Err` says why there is none.
    pub fn assign(
        &mut self,
        now: SimTime,
        req: &PodRequest<'_>,
        namespaces: &Namespaces,
    ) -> Result<PodAddress, PendingReason> {
        let ns = namespaces.get(req.namespace);
        let empty = Labels::new();
        let ns_annotations = ns.map_or(&empty, |n| &n.annotations);
        let mut ns_labels = ns.map(|n| n.labels.clone()).unwrap_or_default();
        ns_labels.insert(
            "kubernetes.io/metadata.name".to_string(),
            req.namespace.to_string(),
        );
        let handle = format!("{}/{}", req.namespace, req.name);
        match self {
            Addressing::Calico(ipam) => {
                if let Some(fixed) = req.annotations.get(CALICO_IP_ADDRS) {
                    let annotation = PendingReason::CalicoAnnotation;
                    let ips = parse_json_list(fixed).map_err(|e| {
                        annotation(format!("failed to parse {CALICO_IP_ADDRS} annotation: {e}"))
                    })?;
                    let Some(first) = ips.first() else {
                        return Err(annotation(format!(
                            "{CALICO_IP_ADDRS} annotation names no address"
                        )));
                    };
                    let ip: IpAddr = first.parse().map_err(|_| {
                        annotation(format!("{CALICO_IP_ADDRS}: `{first}` is not an IP address"))
                    })?;
                    let outcome = ipam.assign_ip(now, &handle, &req.node.name, ip);
                    return calico_outcome(outcome);
                }
                let pools = match req
                    .annotations
                    .get(CALICO_IPV4_POOLS)
                    .or(ns_annotations.get(CALICO_IPV4_POOLS))
                {
                    Some(text) => Some(parse_json_list(text).map_err(|e| {
                        PendingReason::CalicoAnnotation(format!(
                            "failed to parse {CALICO_IPV4_POOLS} annotation: {e}"
                        ))
                    })?),
                    None => None,
                };
                let mut request = AssignRequest::pod(&handle, &req.node.name, req.namespace);
                request.namespace_labels = ns_labels;
                request.pools = pools;
                calico_outcome(ipam.auto_assign(now, &request))
            }
            Addressing::Spiderpool(ipam) => {
                let pod = PodHandle::new(req.namespace, req.name);
                let request = SpiderRequest {
                    pod: &pod,
                    pod_labels: req.labels,
                    pod_annotations: req.annotations,
                    namespace_labels: &ns_labels,
                    namespace_annotations: ns_annotations,
                    node_name: &req.node.name,
                    node_labels: &req.node.labels,
                    stateful: req.stateful,
                };
                let assignment = ipam.allocate(&request).map_err(PendingReason::Spiderpool)?;
                // One address per requested family, or an error: nothing means no family
                // was asked for, which Spiderpool refuses before allocating.
                let Some(a) = assignment.allocations.first() else {
                    return Err(PendingReason::Spiderpool(SpiderError::NoSelectionRules));
                };
                Ok(PodAddress {
                    ip: a.ip,
                    pool: a.pool.clone(),
                    block: None,
                    borrowed: false,
                    gateway: a.gateway,
                })
            }
        }
    }

    /// Returns a pod's address. A StatefulSet pod on Spiderpool keeps it (`keep`) for the pod
    /// that comes back with its name.
    pub fn release(&mut self, now: SimTime, namespace: &str, name: &str, keep: bool) {
        match self {
            Addressing::Calico(ipam) => {
                ipam.release(now, &format!("{namespace}/{name}"));
            }
            Addressing::Spiderpool(ipam) => {
                let pod = PodHandle::new(namespace, name);
                if keep {
                    ipam.release(&pod, true);
                } else {
                    ipam.forget(&pod);
                }
            }
        }
    }

    /// Applies a resource added or changed at run time; returns a note when it was refused
    /// or does not concern this IPAM.
    pub fn apply(&mut self, spec: &ResourceSpec) -> Option<String> {
        match (self, spec) {
            (Addressing::Calico(ipam), ResourceSpec::IpPool(p)) => {
                ipam.upsert_pool(p.clone()).err().map(|e| e.to_string())
            }
            (Addressing::Calico(ipam), ResourceSpec::IpamConfig(c)) => {
                ipam.set_config(c.clone());
                None
            }
            (Addressing::Calico(ipam), ResourceSpec::IpReservation(r)) => {
                let mut all: Vec<IpReservation> = ipam
                    .reservations()
                    .iter()
                    .filter(|x| x.name != r.name)
                    .cloned()
                    .collect();
                all.push(r.clone());
                ipam.set_reservations(all);
                None
            }
            (Addressing::Spiderpool(ipam), ResourceSpec::SpiderIpPool(p)) => {
                let result = if ipam.pool(&p.name).is_some() {
                    ipam.update_pool(p.clone())
                } else {
                    ipam.add_pool(p.clone())
                };
                result.err().map(|e| e.to_string())
            }
            (Addressing::Spiderpool(ipam), ResourceSpec::SpiderReservedIp(r)) => {
                ipam.set_reserved_ip(r.clone());
                None
            }
            _ => None,
        }
    }

    /// Deletes a resource by kind and name at run time.
    pub fn delete(&mut self, kind: &str, name: &str) {
        match self {
            Addressing::Calico(ipam) => match kind {
                "IPPool" => ipam.remove_pool(name),
                "IPAMConfiguration" | "IPAMConfig" => ipam.set_config(IpamConfig::default()),
                "IPReservation" => {
                    let all = ipam
                        .reservations()
                        .iter()
                        .filter(|x| x.name != name)
                        .cloned()
                        .collect();
                    ipam.set_reservations(all);
                }
                _ => {}
            },
            Addressing::Spiderpool(ipam) => match kind {
                "SpiderIPPool" => {
                    ipam.delete_pool(name);
                }
                "SpiderReservedIP" => {
                    ipam.delete_reserved_ip(name);
                }
                _ => {}
            },
        }
    }

    /// The next instant after `now` at which Calico frees addresses or blocks by the passage
    /// of time alone (a release cooldown ending, an empty block old enough to be reclaimed);
    /// Spiderpool has no such timers.
    pub fn next_timed_release(&self, now: SimTime) -> Option<SimTime> {
        match self {
            Addressing::Calico(ipam) => ipam.next_timed_release(now),
            Addressing::Spiderpool(_) => None,
        }
    }

    /// kube-controllers' garbage collection (Calico only).
    pub fn gc(&mut self, now: SimTime) {
        if let Addressing::Calico(ipam) = self {
            ipam.gc(now);
        }
    }

    /// The CIDR of the pool a Calico block belongs to.
    pub fn pool_of_block(&self, block: &IpNet) -> Option<IpNet> {
        let ipam = self.calico()?;
        let report = ipam.block(block)?;
        ipam.pool(&report.pool).map(|p| p.cidr)
    }

    /// Block claims, releases and borrows since the last call (Calico only).
    pub fn take_changes(&mut self) -> Vec<IpamChange> {
        match self {
            Addressing::Calico(ipam) => ipam.take_changes(),
            Addressing::Spiderpool(_) => Vec::new(),
        }
    }

    /// Pools for reports, in name order.
    pub fn pools(&self, network: &Network) -> Vec<PoolRow> {
        match self {
            Addressing::Calico(ipam) => {
                let mut names: Vec<String> = ipam.blocks().into_iter().map(|b| b.pool).collect();
                names.extend(ipam.pool_names());
                names.sort();
                names.dedup();
                names
                    .into_iter()
                    .filter_map(|name| {
                        let pool = ipam.pool(&name)?;
                        let r = ipam.pool_report(&name)?;
                        let overhead = if pool.ipip_mode != calico::EncapMode::Never {
                            20
                        } else if pool.vxlan_mode != calico::EncapMode::Never {
                            if pool.is_v6() { 70 } else { 50 }
                        } else {
                            0
                        };
                        let _ = CalicoBackend::Bird;
                        Some(PoolRow {
                            name,
                            kind: "calico",
                            cidr: r.cidr,
                            block_size: Some(pool.block_size),
                            capacity: r.capacity,
                            allocated: r.allocated,
                            reserved: r.reserved,
                            blocks: r.blocks,
                            free: r.free,
                            mtu: network.host_mtu.saturating_sub(overhead),
                        })
                    })
                    .collect()
            }
            Addressing::Spiderpool(ipam) => ipam
                .pools()
                .filter_map(|p| {
                    let u = ipam.pool_usage(&p.name)?;
                    Some(PoolRow {
                        name: p.name.clone(),
                        kind: "spiderpool",
                        cidr: p.subnet,
                        block_size: None,
                        capacity: u.capacity,
                        allocated: u.allocated as u64,
                        reserved: 0,
                        blocks: 0,
                        free: u.free,
                        mtu: network.host_mtu,
                    })
                })
                .collect(),
        }
    }

    pub fn calico(&self) -> Option<&CalicoIpam> {
        match self {
            Addressing::Calico(ipam) => Some(ipam),
            Addressing::Spiderpool(_) => None,
        }
    }
}

/// A pod's first address from Calico's answer, or why there is none.
fn calico_outcome(outcome: calico::AssignOutcome) -> Result<PodAddress, PendingReason> {
    match (outcome.allocations.first(), outcome.error) {
        (Some(a), _) => Ok(calico_address(a)),
        (None, error) => Err(PendingReason::CalicoIpam(error.unwrap_or(
            IpamError::Shortfall {
                assigned: 0,
                requested: 1,
                v6: false,
            },
        ))),
    }
}

fn calico_address(a: &calico::Allocation) -> PodAddress {
    PodAddress {
        ip: a.ip,
        pool: a.pool.clone(),
        block: Some(a.block),
        borrowed: a.borrowed,
        gateway: None,
    }
}

/// Parses an annotation holding a JSON list of strings, such as `["pool-a", "pool-b"]`.
fn parse_json_list(text: &str) -> Result<Vec<String>, String> {
    serde_json::from_str::<Vec<String>>(text).map_err(|e| e.to_string())
}

/// Calico's default pool (SPEC §2.3): 192.168.0.0/16, or the first of 172.16.0.0/16 …
/// 172.31.0.0/16 that no node address falls in; IPIP Always, or VXLAN Always with the vxlan
/// backend, as the install manifests set.
pub fn default_pool(network: &Network, topology: &Topology) -> IpPool {
    let candidates = std::iter::once("192.168.0.0/16".to_string())
        .chain((16..=31).map(|second| format!("172.{second}.0.0/16")));
    let mut cidr: IpNet = "192.168.0.0/16".parse().unwrap_or_else(|_| unreachable!());
    for c in candidates {
        let Ok(net) = c.parse::<IpNet>() else {
            continue;
        };
        if !topology.nodes.iter().any(|n| net.contains(&n.ip)) {
            cidr = net;
            break;
        }
    }
    let mut pool = IpPool::with_defaults("default-ipv4-ippool", cidr);
    pool.nat_outgoing = true;
    match network.calico_backend {
        CalicoBackend::Bird => pool.ipip_mode = calico::EncapMode::Always,
        CalicoBackend::Vxlan => pool.vxlan_mode = calico::EncapMode::Always,
    }
    pool
}
