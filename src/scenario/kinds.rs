//! Decoding the resource kinds podnet models (SPEC §2.3) from their located trees.
//!
//! STUB: the interface is fixed; the implementation is being written.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::decode::Cx;
use super::resource::Resource;
use crate::ipam::calico::{IpPool, IpReservation, IpamConfig};
use crate::ipam::spiderpool::{SpiderIpPool, SpiderReservedIp};
use crate::model::Labels;
use crate::model::network::Network;
use crate::model::selector::Selector;
use crate::model::topology::Topology;

/// A `v1` Namespace: only its labels and annotations matter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Namespace {
    pub name: String,
    pub labels: Labels,
    pub annotations: Labels,
}

/// Calico's `Node` resource, merged into the topology node of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct CalicoNode {
    pub name: String,
    pub labels: Labels,
    /// `spec.bgp.ipv4Address` with its prefix length (the node's subnet for CrossSubnet).
    pub ipv4_address: Option<IpNet>,
    pub as_number: Option<u32>,
    pub route_reflector_cluster_id: Option<Ipv4Addr>,
}

/// The `default` BGPConfiguration (node-specific ones, `node.<name>`, are kept by name).
#[derive(Clone, Debug, PartialEq)]
pub struct BgpConfiguration {
    pub name: String,
    pub as_number: Option<u32>,
    pub node_to_node_mesh_enabled: Option<bool>,
    pub service_cluster_ips: Vec<IpNet>,
}

/// A Calico `BGPPeer`.
#[derive(Clone, Debug, PartialEq)]
pub struct BgpPeer {
    pub name: String,
    /// `spec.node`: the peering applies to this node only.
    pub node: Option<String>,
    pub node_selector: Option<Selector>,
    /// Without its port (`10.0.0.1:179` → 10.0.0.1); the port is kept separately.
    pub peer_ip: Option<IpAddr>,
    pub peer_port: Option<u16>,
    pub peer_selector: Option<Selector>,
    pub as_number: Option<u32>,
    pub keep_original_next_hop: bool,
}

/// What one resource means to podnet.
#[derive(Clone, Debug, PartialEq)]
pub enum ResourceSpec {
    IpPool(IpPool),
    IpamConfig(IpamConfig),
    IpReservation(IpReservation),
    SpiderIpPool(SpiderIpPool),
    SpiderReservedIp(SpiderReservedIp),
    Namespace(Namespace),
    CalicoNode(CalicoNode),
    BgpConfiguration(BgpConfiguration),
    BgpPeer(BgpPeer),
    /// A kind podnet accepts but does not model (reported once as a warning).
    Ignored,
}

/// Decodes every resource (those present from the start, then those applied by events, in
/// that order), reporting each problem at its place in its file, and checks the rules that
/// span resources. The result is aligned with the input: `out[i]` is `resources[i]`'s meaning
/// (`None` when it had errors).
pub fn decode_all(
    resources: &[&Resource],
    topology: &Topology,
    network: &Network,
    cx: &mut Cx,
) -> Vec<Option<ResourceSpec>> {
    let _ = (topology, network, cx);
    resources
        .iter()
        .map(|_| Some(ResourceSpec::Ignored))
        .collect()
}
