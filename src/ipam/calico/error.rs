//! Why Calico IPAM handed out fewer addresses than asked: one [`IpamError`] per refusal
//! `libcalico-go/lib/ipam` makes, whose `Display` is Calico's own words (the file each comes
//! from is named on its variant), so a pending pod's reason reads as `calico-ipam` logs it.
//!
//! Invariants: the text of every variant is Calico's, verbatim (`tests` pins each one);
//! [`IpamError::Several`] joins its parts with `"; "` as Calico's `PartialFulfillmentError`
//! and `AutoAssign`'s per-family messages do, and never holds fewer than two parts.
//! What this is not: the CNI plugin's own refusals (annotations it cannot parse) are the
//! simulator's, not IPAM's.

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::AllowedUse;

/// One refusal of Calico IPAM, in Calico's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpamError {
    /// The node lookup of prepareAffinityBlocksForHost (`cerrors.ErrorResourceDoesNotExist`).
    UnknownNode { node: String },
    /// `ipam.go` ErrStrictAffinity: Windows hosts need strict affinity.
    WindowsStrictAffinity,
    /// `ipam.go` ErrNoQualifiedPool.
    NoQualifiedPool,
    /// `ipam.go` prepareAffinityBlocksForHost: no enabled pool selects the node.
    NoPoolsForNode { node: String },
    /// `ipam.go` prepareAffinityBlocksForHost, after filtering by allowedUses.
    NoPoolForUse { use_: AllowedUse },
    /// `ipam.go` determinePools for a named pool that is missing or disabled.
    PoolNotEnabled { cidr: IpNet },
    /// `cni-plugin/pkg/ipamplugin` ResolvePools for a name that is neither a pool nor a CIDR.
    UnresolvablePool { name: String },
    /// `ipam.go` autoAssign at the per-host block limit.
    BlockLimit { limit: u32 },
    /// `ipam.go` findOrClaimBlock with autoAllocateBlocks false.
    FailedToFindOrClaim,
    /// `ipam.go` findOrClaimBlock when a freshly claimed block has no usable address.
    ClaimedBlockTooSmall { block: IpNet, free: u32 },
    /// `ipam.go` autoAssign, when no affine block is left and the claim walk found nothing.
    StrictNoFreeBlocks,
    /// `ipam.go` autoAssign after borrowing, with the exhausted pools' CIDRs.
    PoolsExhausted { pools: Vec<IpNet> },
    /// `ipam.go` AutoAssign's summary of a short family without a message of its own.
    Shortfall {
        assigned: usize,
        requested: u32,
        v6: bool,
    },
    /// `ipam.go` AssignIP: the address lies in no usable pool.
    NotInPool,
    /// `ipam.go` AssignIP when the pool does not allow the use.
    UseNotAllowed {
        ip: IpAddr,
        pool: String,
        use_: AllowedUse,
        allowed: Vec<AllowedUse>,
    },
    /// `ipam_block.go` assign: the block is affine to another host.
    AffinityMismatch,
    /// `ipam_block.go` assign on a block with no affinity under strict affinity.
    NoAffinity { block: IpNet },
    /// `ipam_block.go` assign on an address already held (`cerrors.ErrorResourceAlreadyExists`).
    AlreadyAssigned { ip: IpAddr },
    /// `clientv3/ippool.go` Update: a pool's `cidr` is immutable.
    PoolCidrImmutable,
    /// `clientv3/ippool.go` Update: a pool's `blockSize` is immutable.
    PoolBlockSizeImmutable,
    /// Several messages of one request, joined as Calico joins them.
    Several(Vec<IpamError>),
}

impl IpamError {
    /// The refusals of one request as one error: `None` when there are none, the error itself
    /// when there is one, [`IpamError::Several`] otherwise.
    pub fn joined(mut parts: Vec<IpamError>) -> Option<IpamError> {
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(IpamError::Several(parts)),
        }
    }
}

impl IpamError {
    /// Calico refused because the node holds as many blocks as it may (alone or among the
    /// messages of the request).
    pub fn reaches_block_limit(&self) -> bool {
        match self {
            IpamError::BlockLimit { .. } => true,
            IpamError::Several(parts) => parts.iter().any(IpamError::reaches_block_limit),
            _ => false,
        }
    }
}

impl fmt::Display for IpamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpamError::UnknownNode { node } => write!(
                f,
                "resource does not exist: Node({node}) with error: nodes \"{node}\" not found"
            ),
            IpamError::WindowsStrictAffinity => {
                f.write_str("global strict affinity should not be false for Windows node")
            }
            IpamError::NoQualifiedPool => f.write_str("cannot find a qualified ippool"),
            IpamError::NoPoolsForNode { node } => {
                write!(f, "no configured Calico pools for node {node}")
            }
            IpamError::NoPoolForUse { use_ } => write!(
                f,
                "{}, no pools match the required use ({})",
                IpamError::NoQualifiedPool,
                use_.as_str()
            ),
            IpamError::PoolNotEnabled { cidr } => write!(
                f,
                "the given pool ({cidr}) does not exist, or is not enabled"
            ),
            IpamError::UnresolvablePool { name } => write!(
                f,
                "error parsing pool \"{name}\": invalid CIDR address: {name}"
            ),
            IpamError::BlockLimit { limit } => write!(
                f,
                "Need to allocate an IPAM block but could not - limit of {limit} blocks reached for this node"
            ),
            IpamError::FailedToFindOrClaim => f.write_str("failed to find or claim a block"),
            IpamError::ClaimedBlockTooSmall { block, free } => write!(
                f,
                "Block '{block}' has {free} free ips which is less than 1 ips required."
            ),
            IpamError::StrictNoFreeBlocks => {
                f.write_str("No more free affine blocks and strict affinity enabled")
            }
            // Go's `%v` of a string slice.
            IpamError::PoolsExhausted { pools } => {
                f.write_str("No IPs available in pools: [")?;
                write_separated(f, pools, " ")?;
                f.write_str("]")
            }
            IpamError::Shortfall {
                assigned,
                requested,
                v6,
            } => write!(
                f,
                "Assigned {assigned} out of {requested} requested IPv{} addresses",
                if *v6 { 6 } else { 4 }
            ),
            // The trailing newline is Calico's.
            IpamError::NotInPool => {
                f.write_str("The provided IP address is not in a configured pool\n")
            }
            IpamError::UseNotAllowed {
                ip,
                pool,
                use_,
                allowed,
            } => write!(
                f,
                "IP address {ip} is in IP pool \"{pool}\", which is not allowed for use \"{}\" (allowedUses: [{}])",
                use_.as_str(),
                allowed
                    .iter()
                    .map(|u| u.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            IpamError::AffinityMismatch => f.write_str("Block host affinity does not match"),
            IpamError::NoAffinity { block } => {
                write!(f, "Attempt to assign from block {block} with no affinity")
            }
            IpamError::AlreadyAssigned { ip } => write!(
                f,
                "resource already exists: {ip} with error: Address already assigned in block"
            ),
            IpamError::PoolCidrImmutable => f.write_str("IPPool CIDR cannot be modified"),
            IpamError::PoolBlockSizeImmutable => f.write_str("IPPool BlockSize cannot be modified"),
            IpamError::Several(parts) => write_separated(f, parts, "; "),
        }
    }
}

impl std::error::Error for IpamError {}

fn write_separated<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: &[T],
    separator: &str,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(separator)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::IpamError;
    use crate::ipam::calico::AllowedUse;

    fn net(s: &str) -> ipnet::IpNet {
        s.parse().unwrap()
    }

    /// Each variant's text against the string in Calico's source (the file named on the
    /// variant), so that a pending pod's reason can be searched for in Calico's code and logs.
    #[test]
    fn every_variant_reads_as_calico_writes_it() {
        let ip = "10.0.0.5".parse().unwrap();
        let cases: Vec<(IpamError, &str)> = vec![
            (
                IpamError::UnknownNode { node: "n1".into() },
                "resource does not exist: Node(n1) with error: nodes \"n1\" not found",
            ),
            (
                IpamError::WindowsStrictAffinity,
                "global strict affinity should not be false for Windows node",
            ),
            (IpamError::NoQualifiedPool, "cannot find a qualified ippool"),
            (
                IpamError::NoPoolsForNode { node: "n1".into() },
                "no configured Calico pools for node n1",
            ),
            (
                IpamError::NoPoolForUse {
                    use_: AllowedUse::Workload,
                },
                "cannot find a qualified ippool, no pools match the required use (Workload)",
            ),
            (
                IpamError::PoolNotEnabled {
                    cidr: net("10.9.0.0/16"),
                },
                "the given pool (10.9.0.0/16) does not exist, or is not enabled",
            ),
            (
                IpamError::UnresolvablePool {
                    name: "gold".into(),
                },
                "error parsing pool \"gold\": invalid CIDR address: gold",
            ),
            (
                IpamError::BlockLimit { limit: 2 },
                "Need to allocate an IPAM block but could not - limit of 2 blocks reached for this node",
            ),
            (
                IpamError::FailedToFindOrClaim,
                "failed to find or claim a block",
            ),
            (
                IpamError::ClaimedBlockTooSmall {
                    block: net("10.0.0.0/30"),
                    free: 0,
                },
                "Block '10.0.0.0/30' has 0 free ips which is less than 1 ips required.",
            ),
            (
                IpamError::StrictNoFreeBlocks,
                "No more free affine blocks and strict affinity enabled",
            ),
            (
                IpamError::PoolsExhausted {
                    pools: vec![net("10.0.0.0/24"), net("10.1.0.0/24")],
                },
                "No IPs available in pools: [10.0.0.0/24 10.1.0.0/24]",
            ),
            (
                IpamError::Shortfall {
                    assigned: 1,
                    requested: 3,
                    v6: true,
                },
                "Assigned 1 out of 3 requested IPv6 addresses",
            ),
            (
                IpamError::NotInPool,
                "The provided IP address is not in a configured pool\n",
            ),
            (
                IpamError::UseNotAllowed {
                    ip,
                    pool: "tunnels".into(),
                    use_: AllowedUse::Workload,
                    allowed: vec![AllowedUse::Tunnel],
                },
                "IP address 10.0.0.5 is in IP pool \"tunnels\", which is not allowed for use \"Workload\" (allowedUses: [Tunnel])",
            ),
            (
                IpamError::AffinityMismatch,
                "Block host affinity does not match",
            ),
            (
                IpamError::NoAffinity {
                    block: net("10.0.0.0/26"),
                },
                "Attempt to assign from block 10.0.0.0/26 with no affinity",
            ),
            (
                IpamError::AlreadyAssigned { ip },
                "resource already exists: 10.0.0.5 with error: Address already assigned in block",
            ),
            (
                IpamError::PoolCidrImmutable,
                "IPPool CIDR cannot be modified",
            ),
            (
                IpamError::PoolBlockSizeImmutable,
                "IPPool BlockSize cannot be modified",
            ),
        ];
        for (error, words) in cases {
            assert_eq!(error.to_string(), words, "{error:?}");
        }
    }

    #[test]
    fn several_messages_join_as_calico_joins_them() {
        assert_eq!(IpamError::joined(Vec::new()), None);
        assert_eq!(
            IpamError::joined(vec![IpamError::NotInPool]),
            Some(IpamError::NotInPool)
        );
        let both = IpamError::joined(vec![
            IpamError::StrictNoFreeBlocks,
            IpamError::BlockLimit { limit: 1 },
        ])
        .unwrap();
        assert_eq!(
            both.to_string(),
            "No more free affine blocks and strict affinity enabled; Need to allocate an IPAM \
             block but could not - limit of 1 blocks reached for this node"
        );
    }
}
