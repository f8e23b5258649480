//! Calico's block IPAM (`libcalico-go/lib/ipam`), as a synchronous, deterministic state machine.
//!
//! The simulator drives a [`CalicoIpam`] with pool, configuration, reservation and node changes
//! and with the requests the CNI plugin and calico-node would make (`AutoAssign`, `AssignIP`,
//! `ReleaseByHandle`, tunnel addresses), plus the periodic work of kube-controllers (empty-block
//! garbage collection, node deletion). Every result is data: an exhausted pool or a block limit
//! is an [`AssignOutcome`] carrying Calico's own message, never a panic and never an `Err`.
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
//! Layout: `pool` holds the resources and their validation, `walk` the per-node block order,
//! `block` one allocation block, `allocator` the state machine, `query` the read-only views.

mod allocator;
mod arena;
mod block;
mod intern;
mod pool;
mod query;
mod walk;

#[cfg(test)]
mod vectors;

pub use allocator::CalicoIpam;
pub use pool::{
    AllowedUse, AssignmentMode, EncapMode, IpPool, IpReservation, IpamConfig, Problem,
    default_block_size, validate,
};
pub use query::{BlockReport, IpOwner, NodeReport, PoolReport};
pub use walk::{fnv1_32, start_index};

use std::net::IpAddr;

use ipnet::IpNet;

use crate::model::Labels;

/// Which Calico release's behaviour to reproduce where releases differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// No empty-block reclaim, no IP cooldown.
    V3_30,
    /// Adds reclaiming another node's block that has been empty for a minute.
    V3_32,
    /// Adds `ipCooldownSeconds`: released addresses wait before reuse.
    V3_33,
}

impl Profile {
    pub(crate) fn reclaims_empty_blocks(self) -> bool {
        self >= Profile::V3_32
    }
    pub(crate) fn has_ip_cooldown(self) -> bool {
        self >= Profile::V3_33
    }
}

/// A node's operating system, which changes how its blocks are laid out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Os {
    #[default]
    Linux,
    Windows,
}

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
    /// Calico's words: the error `AutoAssign` returned, or the messages it attached to a
    /// partial result (joined with `"; "` as `PartialFulfillmentError` does). `None` when every
    /// requested address was handed out.
    pub error: Option<String>,
}

impl AssignOutcome {
    pub(crate) fn failed(message: String) -> AssignOutcome {
        AssignOutcome {
            allocations: Vec::new(),
            error: Some(message),
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

/// Calico's messages, verbatim, with the file each comes from.
pub mod messages {
    /// `ipam.go` ErrStrictAffinity.
    pub const WINDOWS_STRICT_AFFINITY: &str =
        "global strict affinity should not be false for Windows node";
    /// `ipam.go` ErrNoQualifiedPool.
    pub const NO_QUALIFIED_POOL: &str = "cannot find a qualified ippool";
    /// `ipam.go` autoAssign, when no affine block is left and the claim walk found nothing.
    pub const STRICT_NO_FREE_BLOCKS: &str =
        "No more free affine blocks and strict affinity enabled";
    /// `ipam.go` findOrClaimBlock with autoAllocateBlocks false.
    pub const FAILED_TO_FIND_OR_CLAIM: &str = "failed to find or claim a block";
    /// `ipam.go` AssignIP (the trailing newline is Calico's).
    pub const NOT_IN_POOL: &str = "The provided IP address is not in a configured pool\n";
    /// `ipam_block.go` assign.
    pub const AFFINITY_MISMATCH: &str = "Block host affinity does not match";

    /// `ipam.go` autoAssign at the per-host block limit.
    pub fn block_limit(limit: u32) -> String {
        format!(
            "Need to allocate an IPAM block but could not - limit of {limit} blocks reached for this node"
        )
    }
    /// `ipam.go` prepareAffinityBlocksForHost.
    pub fn no_pools_for_node(node: &str) -> String {
        format!("no configured Calico pools for node {node}")
    }
    /// `ipam.go` prepareAffinityBlocksForHost, after filtering by allowedUses.
    pub fn no_pool_for_use(use_: &str) -> String {
        format!("{NO_QUALIFIED_POOL}, no pools match the required use ({use_})")
    }
    /// `ipam.go` determinePools for a named pool that is missing or disabled.
    pub fn pool_not_enabled(cidr: &str) -> String {
        format!("the given pool ({cidr}) does not exist, or is not enabled")
    }
    /// `cni-plugin/pkg/ipamplugin` ResolvePools for a name that is neither a pool nor a CIDR.
    pub fn unresolvable_pool(name: &str) -> String {
        format!("error parsing pool \"{name}\": invalid CIDR address: {name}")
    }
    /// `ipam.go` autoAssign after borrowing: Go's `%v` of a string slice.
    pub fn pools_exhausted(cidrs: &[String]) -> String {
        format!("No IPs available in pools: [{}]", cidrs.join(" "))
    }
    /// `ipam.go` findOrClaimBlock when a freshly claimed block has no usable address.
    pub fn claimed_block_too_small(block: &str, free: u32) -> String {
        format!("Block '{block}' has {free} free ips which is less than 1 ips required.")
    }
    /// `ipam_block.go` assign on a block with no affinity under strict affinity.
    pub fn no_affinity(block: &str) -> String {
        format!("Attempt to assign from block {block} with no affinity")
    }
    /// `ipam_block.go` assign on an address already held (`cerrors.ErrorResourceAlreadyExists`).
    pub fn already_assigned(ip: &str) -> String {
        format!("resource already exists: {ip} with error: Address already assigned in block")
    }
    /// `ipam.go` AssignIP when the pool does not allow the use.
    pub fn use_not_allowed(ip: &str, pool: &str, use_: &str, allowed: &str) -> String {
        format!(
            "IP address {ip} is in IP pool \"{pool}\", which is not allowed for use \"{use_}\" (allowedUses: [{allowed}])"
        )
    }
    /// The node lookup in prepareAffinityBlocksForHost (`cerrors.ErrorResourceDoesNotExist`).
    pub fn unknown_node(node: &str) -> String {
        format!("resource does not exist: Node({node}) with error: nodes \"{node}\" not found")
    }
}
