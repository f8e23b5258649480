//! The Windows part of a report: per Windows node, its HNS networks, subnets and IP subnets at
//! the end of the run and how many HNS changes the run made, and what each HNS layout would
//! allow that node (blocks per host, pods per host before Pending).
//!
//! The block size a node's comparison uses is that of the first block it holds, else that of
//! the first enabled pool (in name order) whose blocks a Windows node can use. The comparison
//! counts the reservation model in force (`reservation`: what each model wastes).
//!
//! Per node, when the scenario has policy, the HNS ACL lists of each of its pods' endpoints
//! at the end of the run ([`crate::policy::hns_acl`]); the tables show at most
//! [`ACL_ROWS_LIMIT`] entries per node, report.json all of them.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;

use serde::Serialize;

use super::sections::{Block, Section, Table, count};
use crate::hns::{self, Allowance};
use crate::model::network::{WindowsHns, WindowsReservation};
use crate::policy::eval::Engine;
use crate::policy::hns_acl::{self, EndpointAcls};
use crate::sim::Outcome;

mod reservation;

pub use reservation::{ReservationSection, WasteRow};

/// At most this many ACL entries per node in report.md/html.
pub const ACL_ROWS_LIMIT: usize = 100;

/// Windows blocks reserve ordinals 0, 1, 2 and n−1 (REFERENCE §1.6).
const RESERVED_PER_BLOCK: u64 = 4;

/// `report.json` `windows`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSection {
    /// The layout in force (`network.windowsHns`).
    pub hns: WindowsHns,
    pub nodes: Vec<WindowsNodeRow>,
    /// What each Windows reservation model wastes (under Calico IPAM).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservation: Option<ReservationSection>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowsNodeRow {
    pub name: String,
    pub networks: Vec<NetworkRow>,
    /// HNS changes on this node over the run (`events.jsonl` lines of kind `hns…`).
    pub changes: usize,
    /// What each layout would allow this node, the one in force included.
    pub layouts: Vec<AllowanceRow>,
    /// Per pod endpoint on this node, by pod, the HNS ACL lists its policies produce (empty
    /// when the scenario has no policy).
    pub endpoint_acls: Vec<EndpointAcls>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRow {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vsid: Option<u32>,
    pub subnets: Vec<SubnetRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubnetRow {
    pub prefix: String,
    pub gateway: String,
    pub ip_subnets: Vec<IpSubnetRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IpSubnetRow {
    pub prefix: String,
    pub flags: u8,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllowanceRow {
    pub hns: WindowsHns,
    pub blocks_per_host: u32,
    pub pod_addresses_per_block: u64,
    pub pods_per_host: u64,
}

impl From<Allowance> for AllowanceRow {
    fn from(a: Allowance) -> AllowanceRow {
        AllowanceRow {
            hns: a.mode,
            blocks_per_host: a.blocks_per_host,
            pod_addresses_per_block: a.pod_addresses_per_block,
            pods_per_host: a.pods_per_host,
        }
    }
}

const LAYOUTS: [WindowsHns; 3] = [
    WindowsHns::SingleNetwork,
    WindowsHns::NetworkPerBlock,
    WindowsHns::MultiSubnet,
];

/// The section's data, when some node runs Windows under Calico.
pub fn build(outcome: &Outcome) -> Option<WindowsSection> {
    let state = &outcome.world.hns;
    let layout = state.layout?;
    if state.hosts.is_empty() {
        return None;
    }
    let ipam = outcome.world.addressing.calico();
    let max_blocks = ipam.map_or(0, |i| i.config().max_blocks_per_host);
    // The first enabled pool, in name order, whose blocks Windows can use.
    let pool_block_size = ipam.and_then(|i| {
        i.pool_names()
            .iter()
            .filter_map(|n| i.pool(n))
            .find(|p| {
                !p.disabled
                    && p.cidr.addr().is_ipv4()
                    && p.block_size <= i.windows_max_prefix(false)
            })
            .map(|p| p.block_size)
    });
    // Reserved per block, and once per host, under the model in force.
    let (per_block, per_host) = match ipam.map(|i| i.windows_reservation()) {
        None => (RESERVED_PER_BLOCK, 0),
        Some(r) => match r.model {
            WindowsReservation::PerBlock => (RESERVED_PER_BLOCK, 0),
            WindowsReservation::PerHost => (0, u64::from(r.addresses)),
            WindowsReservation::PerPool => (0, 0),
        },
    };
    let topo = &outcome.world.topology;
    let mut acls = acls_by_node(outcome);
    let nodes = state
        .hosts
        .iter()
        .map(|(name, host)| {
            let max_pods = topo
                .node_by_name(name)
                .map_or(0, |id| topo.node(id).max_pods);
            let block_len = host
                .blocks()
                .first()
                .map(|b| b.prefix_len())
                .or(pool_block_size);
            let layouts = match block_len {
                Some(len) => LAYOUTS
                    .iter()
                    .map(|&m| {
                        let addresses = 1u64 << (32 - u32::from(len.min(32)));
                        let mut a = hns::allowance(m, addresses, per_block, max_blocks, max_pods);
                        a.pods_per_host = (u64::from(a.blocks_per_host)
                            * a.pod_addresses_per_block)
                            .saturating_sub(per_host)
                            .min(u64::from(max_pods));
                        a.into()
                    })
                    .collect(),
                None => Vec::new(),
            };
            WindowsNodeRow {
                name: name.clone(),
                networks: host.networks.values().map(network_row).collect(),
                changes: state.history.iter().filter(|t| &t.node == name).count(),
                layouts,
                endpoint_acls: acls.remove(name.as_str()).unwrap_or_default(),
            }
        })
        .collect();
    Some(WindowsSection {
        hns: layout.mode,
        nodes,
        reservation: ipam.map(|i| reservation::build(i, state.hosts.keys())),
    })
}

/// Per Windows node, its pods' HNS ACL lists at the end of the run, by pod (none without
/// policy).
fn acls_by_node(outcome: &Outcome) -> BTreeMap<String, Vec<EndpointAcls>> {
    let last = &outcome.last;
    let mut out: BTreeMap<String, Vec<EndpointAcls>> = BTreeMap::new();
    let Some(inputs) = last.policy.as_deref() else {
        return out;
    };
    let mut engine = Engine::new(&inputs.set);
    engine.know_endpoints(inputs.endpoints.values());
    let peers = hns_acl::Peers::resolve(&engine, inputs.endpoints.values());
    let host: HashMap<&str, Ipv4Addr> = last
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.as_str(), n.ip.parse().ok()?)))
        .collect();
    for p in &last.pods {
        let (Some(e), Some(node)) = (inputs.endpoints.get(&p.key), p.node.as_deref()) else {
            continue;
        };
        if e.windows {
            let acls = hns_acl::endpoint_acls(&engine, &peers, e, host.get(node).copied());
            out.entry(node.to_string()).or_default().push(acls);
        }
    }
    for list in out.values_mut() {
        list.sort_by(|a, b| a.pod.cmp(&b.pod));
    }
    out
}

/// A node's ACL table (at most [`ACL_ROWS_LIMIT`] rows) and the rules HNS skipped there.
fn acl_blocks(n: &WindowsNodeRow) -> Vec<Block> {
    if n.endpoint_acls.is_empty() {
        return Vec::new();
    }
    let mut table = Table::new(&[
        ("pod", false),
        ("Id", false),
        ("Action", false),
        ("Direction", false),
        ("Protocol", true),
        ("LocalAddresses", false),
        ("RemoteAddresses", false),
        ("LocalPorts", false),
        ("RemotePorts", false),
        ("Priority", true),
        ("RuleType", false),
    ]);
    let rows = n
        .endpoint_acls
        .iter()
        .flat_map(|e| e.acls.iter().map(move |a| (e, a)));
    let total = rows.clone().count();
    let dash = |s: &str| {
        if s.is_empty() {
            "—".to_string()
        } else {
            s.to_string()
        }
    };
    for (e, a) in rows.take(ACL_ROWS_LIMIT) {
        table.push(vec![
            e.pod.clone(),
            dash(&a.id),
            format!("{:?}", a.action),
            format!("{:?}", a.direction),
            a.protocol.to_string(),
            dash(&a.local_addresses),
            dash(&a.remote_addresses),
            dash(&a.local_ports),
            dash(&a.remote_ports),
            a.priority.to_string(),
            format!("{:?}", a.rule_type),
        ]);
    }
    let mut blocks = vec![
        Block::Paragraph(
            "HNS ACL rules per pod endpoint (In, then Out, in priority order), as Calico for \
             Windows programs them from the policies at the end of the run."
                .to_string(),
        ),
        Block::Table(table),
    ];
    if total > ACL_ROWS_LIMIT {
        blocks.push(Block::Paragraph(format!(
            "{} more ACL entries in report.json (`windows.nodes[].endpointAcls`).",
            total - ACL_ROWS_LIMIT
        )));
    }
    let mut left_out: Vec<String> = n
        .endpoint_acls
        .iter()
        .flat_map(|e| e.skipped.iter().chain(&e.not_modelled))
        .map(|l| format!("{} ({})", l.rule, l.why))
        .collect();
    left_out.sort();
    left_out.dedup();
    if !left_out.is_empty() {
        blocks.push(Block::Paragraph(format!(
            "Left out of these lists: {}.",
            left_out.join("; ")
        )));
    }
    blocks
}

fn network_row(n: &hns::Network) -> NetworkRow {
    NetworkRow {
        name: n.name.clone(),
        kind: n.kind.as_str(),
        vsid: n.vsid,
        subnets: n
            .subnets
            .iter()
            .map(|s| SubnetRow {
                prefix: s.prefix.to_string(),
                gateway: s.gateway.to_string(),
                ip_subnets: s
                    .ip_subnets
                    .iter()
                    .map(|i| IpSubnetRow {
                        prefix: i.prefix.to_string(),
                        flags: i.flags,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The report section: the layouts compared, then one subsection per Windows node.
pub fn section(w: &WindowsSection) -> Section {
    let mut blocks = vec![Block::Paragraph(format!(
        "HNS layout in force: `{}` (network.windowsHns). Each Windows node's networks, subnets \
         and IP subnets at the end of the run follow; every change is an `hns…` line of \
         events.jsonl.",
        w.hns
    ))];
    let mut compare = Table::new(&[
        ("node", false),
        ("layout", false),
        ("blocks per host", true),
        ("pod addresses per block", true),
        ("pods per host before Pending", true),
    ]);
    for n in w.nodes.iter().take(super::sections::NODE_TABLE_LIMIT) {
        for l in &n.layouts {
            let name = if l.hns == w.hns {
                format!("{} (in force)", l.hns)
            } else {
                l.hns.to_string()
            };
            compare.push(vec![
                n.name.clone(),
                name,
                count(l.blocks_per_host),
                count(l.pod_addresses_per_block),
                count(l.pods_per_host),
            ]);
        }
    }
    blocks.push(Block::Subheading("What each layout allows".to_string()));
    blocks.push(Block::Table(compare));
    if let Some(r) = &w.reservation {
        blocks.extend(reservation::blocks(r));
    }
    for n in w.nodes.iter().take(super::sections::NODE_TABLE_LIMIT) {
        blocks.push(Block::Subheading(n.name.clone()));
        if n.networks.is_empty() {
            blocks.push(Block::Paragraph(format!(
                "No HNS network (no block); {} HNS changes over the run.",
                n.changes
            )));
            blocks.extend(acl_blocks(n));
            continue;
        }
        let mut table = Table::new(&[
            ("network", false),
            ("type", false),
            ("subnet", false),
            ("gateway", false),
            ("IP subnet", false),
            ("flags", true),
        ]);
        for net in &n.networks {
            let kind = match net.vsid {
                Some(v) => format!("{} (VSID {v})", net.kind),
                None => net.kind.to_string(),
            };
            for s in &net.subnets {
                if s.ip_subnets.is_empty() {
                    table.push(vec![
                        net.name.clone(),
                        kind.clone(),
                        s.prefix.clone(),
                        s.gateway.clone(),
                        "—".to_string(),
                        "—".to_string(),
                    ]);
                }
                for i in &s.ip_subnets {
                    table.push(vec![
                        net.name.clone(),
                        kind.clone(),
                        s.prefix.clone(),
                        s.gateway.clone(),
                        i.prefix.clone(),
                        i.flags.to_string(),
                    ]);
                }
            }
        }
        blocks.push(Block::Table(table));
        blocks.push(Block::Paragraph(format!(
            "{} HNS changes over the run.",
            n.changes
        )));
        blocks.extend(acl_blocks(n));
    }
    Section {
        title: "Windows nodes (HNS)",
        id: "windows",
        blocks,
    }
}
