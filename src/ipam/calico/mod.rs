//! Calico's block IPAM (`libcalico-go/lib/ipam`), as a synchronous, deterministic state machine.
//!
//! The simulator drives a [`CalicoIpam`] with pool, configuration, reservation and node changes
//! and with the requests the CNI plugin and calico-node would make (`AutoAssign`, `AssignIP`,
//! `ReleaseByHandle`, tunnel addresses), plus the periodic work of kube-controllers (empty-block
//! garbage collection, node deletion). Every result is data: an exhausted pool or a block limit
//! is an [`AssignOutcome`] carrying an [`IpamError`] (Calico's own words), never a panic and never
//! an `Err`.
//!
//! Invariants kept by every operation (and checked by the property tests):
//! - no address is held by two handles, and every held address lies inside its block and pool;
//! - blocks are disjoint and, while their pool exists, aligned inside it;
//! - IPReservation addresses are never handed out by `AutoAssign`;
//! - Windows nodes never borrow and nobody borrows from a block a Windows node created.
//!
//! What it does not do: it keeps no datastore, so there are no revisions, CAS conflicts or
//! retries; LoadBalancer (virtual-node) affinity, KubeVirt persistence and per-handle
//! allocation caps are not modelled; it never reads a clock — time is passed in.
//!
//! Layout: `pool` holds the resources and their validation, `error` Calico's refusals, `walk`
//! the per-node block order, `block` one allocation block, `allocator` the state machine,
//! `query` the read-only views.

mod allocator;
mod arena;
mod block;
mod error;
mod intern;
mod pool;
mod query;
mod walk;

#[cfg(test)]
mod vectors;

pub use allocator::CalicoIpam;
pub use error::IpamError;
pub use pool::{
    AllowedUse, AssignmentMode, EncapMode, IpPool, IpReservation, IpamConfig, Problem,
    default_block_size, validate,
};
pub use query::{BlockReport, IpOwner, NodeReport, PoolReport};
pub use walk::{fnv1_32, start_index};

use std::net::IpAddr;

use ipnet::IpNet;

use crate::model::Labels;

pub use crate::model::network::CalicoProfile;

/// A node's operating system, which changes how its blocks are laid out (HNS on Windows).
pub use crate::model::topology::Os;

/// What IPAM needs to know about a node: its name (the affinity key), labels and OS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpamNode {
    pub name: String,
    pub labels: Labels,
    pub os: Os,
}

/// The use an address is requested for (`IntendedUse` in `AutoAssignArgs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Use {
    Workload,
    Tunnel,
}

impl Use {
    pub(crate) fn allowed(self) -> AllowedUse {
        match self {
            Use::Workload => AllowedUse::Workload,
            Use::Tunnel => AllowedUse::Tunnel,
        }
    }
}

/// One `AutoAssign` call, as the CNI plugin makes it for a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignRequest {
    /// The IPAM handle, e.g. `"ns/pod"`; every address handed out is recorded under it.
    pub handle: String,
    pub node: String,
    pub namespace: String,
    pub namespace_labels: Labels,
    pub use_: Use,
    /// Pools named by the `cni.projectcalico.org/ipv4pools`/`ipv6pools` annotation (pod, else
    /// namespace), by name or CIDR, in the annotation's order. `Some` bypasses the selectors.
    pub pools: Option<Vec<String>>,
    pub num_v4: u32,
    pub num_v6: u32,
    /// `AutoAssignArgs.MaxBlocksPerHost`: a per-request block limit (0 = none); the stricter of
    /// this and the configuration's applies. Windows single-network nodes force 1.
    pub max_blocks_per_host: u32,
}

impl AssignRequest {
    /// A pod's usual request: one IPv4 address for a Workload, no named pools.
    pub fn pod(handle: &str, node: &str, namespace: &str) -> AssignRequest {
        AssignRequest {
            handle: handle.to_string(),
            node: node.to_string(),
            namespace: namespace.to_string(),
            namespace_labels: Labels::new(),
            use_: Use::Workload,
            pools: None,
            num_v4: 1,
            num_v6: 0,
            max_blocks_per_host: 0,
        }
    }
}

/// One address handed out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub ip: IpAddr,
    pub block: IpNet,
    pub pool: String,
    /// True when the block is not affine to the requesting node (Calico "borrowing").
    pub borrowed: bool,
}

/// The result of an assignment: what was handed out, and Calico's message when it fell short.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssignOutcome {
    pub allocations: Vec<Allocation>,
    /// Why it fell short: the error `AutoAssign` returned, or the messages it attached to a
    /// partial result. `None` when every requested address was handed out.
    pub error: Option<IpamError>,
}

impl AssignOutcome {
    pub(crate) fn failed(error: IpamError) -> AssignOutcome {
        AssignOutcome {
            allocations: Vec::new(),
            error: Some(error),
        }
    }
}

/// Which tunnel address calico-node allocates (`node/pkg/allocateip/allocateip.go`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TunnelKind {
    Ipip,
    Vxlan,
    VxlanV6,
}

impl TunnelKind {
    /// The IPAM handle calico-node uses for this node's tunnel address.
    pub fn handle(self, node: &str) -> String {
        match self {
            TunnelKind::Ipip => format!("ipip-tunnel-addr-{node}"),
            TunnelKind::Vxlan => format!("vxlan-tunnel-addr-{node}"),
            TunnelKind::VxlanV6 => format!("vxlan-v6-tunnel-addr-{node}"),
        }
    }
}

/// A change the BGP/route layer must hear about, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpamChange {
    BlockClaimed {
        node: String,
        block: IpNet,
    },
    BlockAffinityReleased {
        node: String,
        block: IpNet,
    },
    BlockDeleted {
        block: IpNet,
    },
    /// `node` got `ip` from `block`, which is not affine to it: it needs a /32 (/128) route.
    Borrowed {
        node: String,
        ip: IpAddr,
        block: IpNet,
    },
    BorrowReleased {
        node: String,
        ip: IpAddr,
    },
}

impl IpamChange {
    /// Whether the change gives something back that another node's allocation could use: a
    /// block without affinity, a deleted block, or a borrowed address returned.
    pub fn frees(&self) -> bool {
        match self {
            IpamChange::BlockAffinityReleased { .. }
            | IpamChange::BlockDeleted { .. }
            | IpamChange::BorrowReleased { .. } => true,
            IpamChange::BlockClaimed { .. } | IpamChange::Borrowed { .. } => false,
        }
    }
}
