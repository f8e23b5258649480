//! Read-only views of the IPAM state for reports and expectations.
//!
//! `allocated` always counts addresses handed out to pods and tunnels; Windows-reserved
//! ordinals are `reserved`, IPReservation coverage is `ipreserved`, and addresses waiting out
//! their cooldown are `cooling` (SPEC §3.2). Everything is returned in address order.
//! Nothing here changes state.

use std::net::IpAddr;

use ipnet::IpNet;

use super::CalicoIpam;
use super::block::{Block, ip_bits, net_key};

/// One block as a report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockReport {
    pub cidr: IpNet,
    /// The pool that created it; a deleted pool's leftover blocks keep its name.
    pub pool: String,
    pub affinity: Option<String>,
    pub allocated: u32,
    /// Windows-reserved ordinals.
    pub reserved: u32,
    /// Addresses covered by an IPReservation.
    pub ipreserved: u32,
    pub cooling: u32,
    pub capacity: u32,
    /// Addresses AutoAssign could still hand out from it.
    pub free: u32,
}

/// Totals for one pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolReport {
    pub name: String,
    pub cidr: IpNet,
    /// Addresses in the pool's CIDR (saturating for huge IPv6 pools).
    pub capacity: u128,
    pub allocated: u64,
    pub reserved: u64,
    pub blocks: u32,
    /// capacity − allocated − reserved − cooling − IPReservation coverage of existing blocks.
    pub free: u128,
}

/// One node's IPAM footprint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReport {
    pub affine_blocks: Vec<IpNet>,
    pub borrowed_ips: Vec<IpAddr>,
}

/// Who holds an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpOwner {
    pub handle: String,
    pub block: IpNet,
    pub pool: String,
    /// The node the address was assigned on.
    pub node: String,
    /// The block's current affinity.
    pub affinity: Option<String>,
    pub borrowed: bool,
}

impl CalicoIpam {
    pub fn blocks(&self) -> Vec<BlockReport> {
        self.blocks.values().map(report).collect()
    }

    pub fn block(&self, cidr: &IpNet) -> Option<BlockReport> {
        let b = self.blocks.get(&net_key(cidr))?;
        (b.cidr == *cidr).then(|| report(b))
    }

    pub fn pool_report(&self, name: &str) -> Option<PoolReport> {
        let state = self.pools.get(name)?;
        let net = state.pool.network();
        let host_bits = u32::from(net.max_prefix_len() - net.prefix_len());
        let capacity = 1u128.checked_shl(host_bits).unwrap_or(u128::MAX);
        let mut report = PoolReport {
            name: name.to_string(),
            cidr: net,
            capacity,
            allocated: 0,
            reserved: 0,
            blocks: 0,
            free: capacity,
        };
        let mut used: u128 = 0;
        for b in self.blocks.values().filter(|b| *b.pool == *name) {
            report.blocks += 1;
            report.allocated += u64::from(b.held());
            report.reserved += u64::from(b.windows_reserved());
            used += u128::from(b.size() - b.usable_free());
        }
        report.free = capacity.saturating_sub(used);
        Some(report)
    }

    pub fn node_report(&self, node: &str) -> NodeReport {
        NodeReport {
            affine_blocks: self
                .node_affine(node)
                .iter()
                .filter_map(|k| self.blocks.get(k).map(|b| b.cidr))
                .collect(),
            borrowed_ips: self.node_borrowed(node),
        }
    }

    /// The holder of `ip`, if it is handed out (not free, reserved or cooling).
    pub fn owner(&self, ip: IpAddr) -> Option<IpOwner> {
        let (v6, bits) = ip_bits(ip);
        let (_, block) = self.blocks.range(..=(v6, bits)).next_back()?;
        let ordinal = block.ip_ordinal(ip)?;
        let id = block.handle_at(ordinal)?;
        let (node, borrowed) = self.holder(id, ip)?;
        Some(IpOwner {
            handle: self.handle_name(id)?.to_string(),
            block: block.cidr,
            pool: block.pool.to_string(),
            node,
            affinity: block.affinity.clone(),
            borrowed,
        })
    }
}

fn report(b: &Block) -> BlockReport {
    BlockReport {
        cidr: b.cidr,
        pool: b.pool.to_string(),
        affinity: b.affinity.clone(),
        allocated: b.held(),
        reserved: b.windows_reserved(),
        ipreserved: b.ipreserved(),
        cooling: b.cooling(),
        capacity: b.size(),
        free: b.usable_free(),
    }
}
