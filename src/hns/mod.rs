//! What the Host Networking Service (HNS) of a Windows node holds for Calico: its networks,
//! their subnets and the subnets' IP subnets, derived from the blocks the node is affine to
//! (REFERENCE §1.6, §3).
//!
//! Three layouts ([`WindowsHns`]) an architect chooses between:
//! - `single-network` (Calico's `windows_use_single_network: true`): one network named after
//!   the CNI network (`Calico`) whose one subnet is the node's one block;
//! - `network-per-block` (Calico's `false`): one network per block, named as Calico's Windows
//!   CNI plugin names it (`CreateNetworkName`: the CNI network name, `-`, the block's address
//!   with its dots turned into dashes — `Calico-10-244-0-64`), its one subnet the block;
//! - `multi-subnet` (Microsoft's multi-subnet support for Calico): one network `Calico` with
//!   one subnet per pool (the pool's CIDR, gateway its first host address, shared by every
//!   block), each subnet holding one IP subnet per block, added and removed as blocks come and
//!   go.
//!
//! In the two Calico layouts a subnet's gateway is the block's ordinal 1 (Calico's `getNthIP`
//! of 1, the reserved HNS gateway/VXLAN tunnel address) and it has no IP subnets. A network is
//! `L2Bridge`, or `Overlay` with Calico's default VSID 4096 under the VXLAN backend.
//!
//! Invariants: every block a host holds appears exactly once, as a subnet (Calico layouts) or
//! an IP subnet (multi-subnet); networks are ordered by name, subnets and IP subnets by
//! prefix; every change carries the block that caused it.
//!
//! Not here: endpoints (one per pod, bound to an IP subnet), ACLs, the host endpoint, the
//! order in which Calico's CNI plugin creates things on the first pod (podnet creates a
//! block's objects when the block is claimed, and removes them when its affinity goes, where
//! Calico's plugin leaves a stale network for the next pod's ADD to replace).

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::model::network::WindowsHns;
use crate::model::time::SimTime;

/// The `name` of the CNI network in Calico's Windows CNI configuration
/// (`cni-plugin/windows-packaging/.../calico.conf.template`).
pub const CNI_NETWORK_NAME: &str = "Calico";
/// Calico's default VXLAN VNI on Windows (`DefaultVNI`; Windows refuses anything below it).
pub const DEFAULT_VSID: u32 = 4096;

/// `IPSubnetFlags` of HNS.V2.psm1.
pub mod flags {
    pub const NONE: u8 = 0;
    pub const ENABLE_BROADCAST: u8 = 1;
    pub const RESERVE_NETWORK_ADDRESS: u8 = 2;

    /// The flag names PowerShell prints for a value (`[IPSubnetFlags]` is a `[Flags]` enum).
    pub fn names(value: u8) -> Vec<&'static str> {
        let mut out = Vec::new();
        if value & ENABLE_BROADCAST != 0 {
            out.push("EnableBroadcast");
        }
        if value & RESERVE_NETWORK_ADDRESS != 0 {
            out.push("ReserveNetworkAddress");
        }
        if out.is_empty() {
            out.push("None");
        }
        out
    }
}

/// An HNS network's driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NetworkType {
    L2Bridge,
    Overlay,
}

impl NetworkType {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkType::L2Bridge => "L2Bridge",
            NetworkType::Overlay => "Overlay",
        }
    }
}

/// How every Windows node of a cluster lays out its HNS objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub mode: WindowsHns,
    pub kind: NetworkType,
    /// The `Flags` of every IP subnet (multi-subnet only).
    pub ip_subnet_flags: u8,
}

impl Layout {
    /// The VSID of an `Overlay` network's subnets.
    pub fn vsid(&self) -> Option<u32> {
        (self.kind == NetworkType::Overlay).then_some(DEFAULT_VSID)
    }
}

/// One IP subnet of a subnet (`{IpAddressPrefix, Flags}`): one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpSubnet {
    pub prefix: IpNet,
    pub flags: u8,
}

/// One subnet of a network's static IPAM (`{IpAddressPrefix, Routes, IpSubnets}`); its one
/// route is `0.0.0.0/0` via `gateway`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub prefix: IpNet,
    pub gateway: IpAddr,
    pub ip_subnets: Vec<IpSubnet>,
}

/// One HNS network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    pub name: String,
    pub kind: NetworkType,
    pub vsid: Option<u32>,
    pub subnets: Vec<Subnet>,
}

/// What changed in a host's HNS, and the block that caused it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A network appeared, holding the block (as its subnet, or its first IP subnet).
    NetworkCreated {
        network: Network,
        block: IpNet,
    },
    NetworkRemoved {
        network: String,
        block: IpNet,
    },
    /// A subnet (a new pool's, multi-subnet) appeared holding the block as its IP subnet.
    SubnetAdded {
        network: String,
        subnet: Subnet,
        block: IpNet,
    },
    SubnetRemoved {
        network: String,
        subnet: IpNet,
        block: IpNet,
    },
    IpSubnetAdded {
        network: String,
        subnet: IpNet,
        ip_subnet: IpSubnet,
    },
    IpSubnetRemoved {
        network: String,
        subnet: IpNet,
        ip_subnet: IpNet,
    },
}

impl Change {
    /// The `kind` of its `events.jsonl` line.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::NetworkCreated { .. } => "hnsNetworkCreated",
            Change::NetworkRemoved { .. } => "hnsNetworkRemoved",
            Change::SubnetAdded { .. } => "hnsSubnetAdded",
            Change::SubnetRemoved { .. } => "hnsSubnetRemoved",
            Change::IpSubnetAdded { .. } => "hnsIpSubnetAdded",
            Change::IpSubnetRemoved { .. } => "hnsIpSubnetRemoved",
        }
    }

    /// The block whose claim or release made the change.
    pub fn block(&self) -> IpNet {
        match self {
            Change::NetworkCreated { block, .. }
            | Change::NetworkRemoved { block, .. }
            | Change::SubnetAdded { block, .. }
            | Change::SubnetRemoved { block, .. } => *block,
            Change::IpSubnetAdded { ip_subnet, .. } => ip_subnet.prefix,
            Change::IpSubnetRemoved { ip_subnet, .. } => *ip_subnet,
        }
    }

    pub fn network(&self) -> &str {
        match self {
            Change::NetworkCreated { network, .. } => &network.name,
            Change::NetworkRemoved { network, .. }
            | Change::SubnetAdded { network, .. }
            | Change::SubnetRemoved { network, .. }
            | Change::IpSubnetAdded { network, .. }
            | Change::IpSubnetRemoved { network, .. } => network,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::NetworkCreated { network, block } => write!(
                f,
                "network {} ({}) created for block {block}",
                network.name,
                network.kind.as_str()
            ),
            Change::NetworkRemoved { network, block } => {
                write!(f, "network {network} removed with block {block}")
            }
            Change::SubnetAdded {
                network,
                subnet,
                block,
            } => write!(
                f,
                "subnet {} added to network {network} for block {block}",
                subnet.prefix
            ),
            Change::SubnetRemoved {
                network,
                subnet,
                block,
            } => write!(
                f,
                "subnet {subnet} removed from network {network} with block {block}"
            ),
            Change::IpSubnetAdded {
                network,
                subnet,
                ip_subnet,
            } => write!(
                f,
                "IP subnet {} (flags {}) added to subnet {subnet} of network {network}",
                ip_subnet.prefix, ip_subnet.flags
            ),
            Change::IpSubnetRemoved {
                network,
                subnet,
                ip_subnet,
            } => write!(
                f,
                "IP subnet {ip_subnet} removed from subnet {subnet} of network {network}"
            ),
        }
    }
}

/// Calico's `CreateNetworkName`: the CNI network name, `-`, the block's address with `.`
/// turned into `-` (the prefix length is not part of it).
pub fn network_name_for_block(block: &IpNet) -> String {
    format!(
        "{CNI_NETWORK_NAME}-{}",
        block.network().to_string().replace('.', "-")
    )
}

/// Address `n` of a prefix (Calico's `getNthIP`).
pub fn nth(net: &IpNet, n: u32) -> IpAddr {
    match net.network() {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a).wrapping_add(n))),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a).wrapping_add(u128::from(n)))),
    }
}

/// One Windows node's HNS objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Host {
    /// By name.
    pub networks: BTreeMap<String, Network>,
}

impl Host {
    /// The node became affine to `block` of the pool `pool`: the objects it adds.
    pub fn add_block(&mut self, layout: &Layout, block: IpNet, pool: IpNet) -> Vec<Change> {
        if self.blocks().contains(&block) {
            return Vec::new();
        }
        let mut out = Vec::new();
        match layout.mode {
            WindowsHns::SingleNetwork | WindowsHns::NetworkPerBlock => {
                let name = match layout.mode {
                    WindowsHns::SingleNetwork => CNI_NETWORK_NAME.to_string(),
                    _ => network_name_for_block(&block),
                };
                // Calico's EnsureNetworkExists replaces a network whose subnet differs.
                if let Some(stale) = self.networks.remove(&name) {
                    for s in &stale.subnets {
                        out.push(Change::NetworkRemoved {
                            network: name.clone(),
                            block: s.prefix,
                        });
                    }
                }
                let network = Network {
                    name: name.clone(),
                    kind: layout.kind,
                    vsid: layout.vsid(),
                    subnets: vec![Subnet {
                        prefix: block,
                        gateway: nth(&block, 1),
                        ip_subnets: Vec::new(),
                    }],
                };
                self.networks.insert(name, network.clone());
                out.push(Change::NetworkCreated { network, block });
            }
            WindowsHns::MultiSubnet => {
                let ip_subnet = IpSubnet {
                    prefix: block,
                    flags: layout.ip_subnet_flags,
                };
                let subnet = Subnet {
                    prefix: pool,
                    gateway: nth(&pool, 1),
                    ip_subnets: vec![ip_subnet.clone()],
                };
                let name = CNI_NETWORK_NAME.to_string();
                match self.networks.get_mut(&name) {
                    None => {
                        let network = Network {
                            name: name.clone(),
                            kind: layout.kind,
                            vsid: layout.vsid(),
                            subnets: vec![subnet],
                        };
                        self.networks.insert(name, network.clone());
                        out.push(Change::NetworkCreated { network, block });
                    }
                    Some(network) => match network.subnets.iter_mut().find(|s| s.prefix == pool) {
                        Some(existing) => {
                            let at = existing.ip_subnets.partition_point(|i| i.prefix < block);
                            existing.ip_subnets.insert(at, ip_subnet.clone());
                            out.push(Change::IpSubnetAdded {
                                network: name,
                                subnet: pool,
                                ip_subnet,
                            });
                        }
                        None => {
                            let at = network.subnets.partition_point(|s| s.prefix < pool);
                            network.subnets.insert(at, subnet.clone());
                            out.push(Change::SubnetAdded {
                                network: name,
                                subnet,
                                block,
                            });
                        }
                    },
                }
            }
        }
        out
    }

    /// The node lost `block`'s affinity: the objects that go with it.
    pub fn remove_block(&mut self, block: IpNet) -> Vec<Change> {
        let mut out = Vec::new();
        let mut emptied = None;
        for (name, network) in &mut self.networks {
            let Some(si) = network
                .subnets
                .iter()
                .position(|s| s.prefix == block || s.ip_subnets.iter().any(|i| i.prefix == block))
            else {
                continue;
            };
            let subnet = &mut network.subnets[si];
            if subnet.ip_subnets.len() > 1 {
                subnet.ip_subnets.retain(|i| i.prefix != block);
                out.push(Change::IpSubnetRemoved {
                    network: name.clone(),
                    subnet: subnet.prefix,
                    ip_subnet: block,
                });
            } else if network.subnets.len() > 1 {
                let gone = network.subnets.remove(si);
                out.push(Change::SubnetRemoved {
                    network: name.clone(),
                    subnet: gone.prefix,
                    block,
                });
            } else {
                emptied = Some(name.clone());
                out.push(Change::NetworkRemoved {
                    network: name.clone(),
                    block,
                });
            }
            break;
        }
        if let Some(name) = emptied {
            self.networks.remove(&name);
        }
        out
    }

    /// Every block the host's objects hold, in address order.
    pub fn blocks(&self) -> Vec<IpNet> {
        let mut out: Vec<IpNet> = self
            .networks
            .values()
            .flat_map(|n| &n.subnets)
            .flat_map(|s| {
                if s.ip_subnets.is_empty() {
                    vec![s.prefix]
                } else {
                    s.ip_subnets.iter().map(|i| i.prefix).collect()
                }
            })
            .collect();
        out.sort();
        out
    }
}

/// One change, when and where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timed {
    pub time: SimTime,
    pub node: String,
    pub change: Change,
}

/// Every Windows node's HNS objects, and every change over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HnsState {
    /// `None` when no node runs Calico's Windows dataplane.
    pub layout: Option<Layout>,
    /// By node name: every Windows node, from its start.
    pub hosts: BTreeMap<String, Host>,
    pub history: Vec<Timed>,
}

impl HnsState {
    pub fn new(layout: Option<Layout>) -> HnsState {
        HnsState {
            layout,
            ..HnsState::default()
        }
    }

    /// Registers a Windows node (its host has no objects until it claims a block).
    pub fn add_host(&mut self, node: &str) {
        if self.layout.is_some() {
            self.hosts.entry(node.to_string()).or_default();
        }
    }

    /// `node` claimed `block` of `pool`; returns the changes, also kept in the history.
    pub fn block_claimed(
        &mut self,
        now: SimTime,
        node: &str,
        block: IpNet,
        pool: IpNet,
    ) -> &[Timed] {
        let Some(layout) = self.layout else {
            return &[];
        };
        let Some(host) = self.hosts.get_mut(node) else {
            return &[];
        };
        let changes = host.add_block(&layout, block, pool);
        self.push(now, node, changes)
    }

    /// `node` lost `block`'s affinity; returns the changes, also kept in the history.
    pub fn block_released(&mut self, now: SimTime, node: &str, block: IpNet) -> &[Timed] {
        let Some(host) = self.hosts.get_mut(node) else {
            return &[];
        };
        let changes = host.remove_block(block);
        self.push(now, node, changes)
    }

    fn push(&mut self, now: SimTime, node: &str, changes: Vec<Change>) -> &[Timed] {
        let from = self.history.len();
        self.history.extend(changes.into_iter().map(|change| Timed {
            time: now,
            node: node.to_string(),
            change,
        }));
        &self.history[from..]
    }
}

/// Calico's `maxBlocksPerHost` when the configuration says 0.
pub const DEFAULT_MAX_BLOCKS_PER_HOST: u32 = 20;

/// What a layout lets one Windows host hold before its pods stay Pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowance {
    pub mode: WindowsHns,
    /// Blocks the host may be affine to.
    pub blocks_per_host: u32,
    /// Addresses of one block a pod can get.
    pub pod_addresses_per_block: u64,
    /// Pods the host can run before one stays Pending: the smaller of its `maxPods` and its
    /// blocks' pod addresses (other hosts' claims and the pools' size aside).
    pub pods_per_host: u64,
}

/// What `mode` allows a host with blocks of `block_addresses` addresses, `reserved_per_block`
/// of them reserved, under IPAMConfiguration's `maxBlocksPerHost` (0: Calico's 20) and the
/// node's `maxPods`. Single network: one block (the CNI plugin's `MaxBlocksPerHost: 1`).
pub fn allowance(
    mode: WindowsHns,
    block_addresses: u64,
    reserved_per_block: u64,
    max_blocks_per_host: u32,
    max_pods: u32,
) -> Allowance {
    let configured = match max_blocks_per_host {
        0 => DEFAULT_MAX_BLOCKS_PER_HOST,
        n => n,
    };
    let blocks_per_host = match mode {
        WindowsHns::SingleNetwork => 1,
        WindowsHns::NetworkPerBlock | WindowsHns::MultiSubnet => configured,
    };
    let pod_addresses_per_block = block_addresses.saturating_sub(reserved_per_block);
    Allowance {
        mode,
        blocks_per_host,
        pod_addresses_per_block,
        pods_per_host: (u64::from(blocks_per_host) * pod_addresses_per_block)
            .min(u64::from(max_pods)),
    }
}

#[cfg(test)]
mod tests;
