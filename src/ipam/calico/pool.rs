//! Calico's IPAM resources — IPPool, IPAMConfiguration, IPReservation — and their validation.
//!
//! Defaults are Calico's (`libcalico-go/lib/clientv3/ippool.go` validateAndSetDefaults,
//! `api/pkg/apis/projectcalico/v3/ippool.go`). [`validate`] reports every problem at once, by
//! field, in Calico's wording, so the scenario layer can point at the manifest line; it never
//! stops at the first problem. This module does not parse YAML and holds no allocation state.

use ipnet::IpNet;

use crate::model::prefixes::Prefixes;
use crate::model::selector::Selector;
use crate::model::time::SimDuration;

/// `ipipMode` / `vxlanMode`: model vocabulary, since forwarding decides encapsulation by it.
pub use crate::model::network::EncapMode;

/// `allowedUses` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AllowedUse {
    Workload,
    Tunnel,
    LoadBalancer,
}

impl AllowedUse {
    pub fn as_str(self) -> &'static str {
        match self {
            AllowedUse::Workload => "Workload",
            AllowedUse::Tunnel => "Tunnel",
            AllowedUse::LoadBalancer => "LoadBalancer",
        }
    }
}

/// `assignmentMode`: Manual pools are used only when named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AssignmentMode {
    #[default]
    Automatic,
    Manual,
}

/// A Calico `IPPool`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpPool {
    pub name: String,
    /// Kept as written; [`validate`] reports it when it is not strictly masked.
    pub cidr: IpNet,
    pub block_size: u8,
    pub ipip_mode: EncapMode,
    pub vxlan_mode: EncapMode,
    pub nat_outgoing: bool,
    pub disabled: bool,
    pub node_selector: Selector,
    pub namespace_selector: Selector,
    pub allowed_uses: Vec<AllowedUse>,
    pub disable_bgp_export: bool,
    pub assignment_mode: AssignmentMode,
    /// Whether `namespaceSelector` was written at all (Calico forbids it on Tunnel pools).
    pub has_namespace_selector: bool,
}

impl IpPool {
    /// The pool Calico stores for a manifest that gives only a name and a CIDR.
    pub fn with_defaults(name: &str, cidr: IpNet) -> IpPool {
        IpPool {
            name: name.to_string(),
            cidr,
            block_size: default_block_size(cidr),
            ipip_mode: EncapMode::Never,
            vxlan_mode: EncapMode::Never,
            nat_outgoing: false,
            disabled: false,
            node_selector: Selector::all(),
            namespace_selector: Selector::all(),
            allowed_uses: vec![AllowedUse::Workload, AllowedUse::Tunnel],
            disable_bgp_export: false,
            assignment_mode: AssignmentMode::Automatic,
            has_namespace_selector: false,
        }
    }

    pub fn is_v6(&self) -> bool {
        matches!(self.cidr, IpNet::V6(_))
    }

    pub fn allows(&self, use_: AllowedUse) -> bool {
        self.allowed_uses.contains(&use_)
    }

    /// The pool's CIDR with host bits cleared, as Calico normalises it.
    pub fn network(&self) -> IpNet {
        self.cidr.trunc()
    }
}

/// blockSize 26 for IPv4 and 122 for IPv6 (`clientv3/ippool.go`).
pub fn default_block_size(cidr: IpNet) -> u8 {
    match cidr {
        IpNet::V4(_) => 26,
        IpNet::V6(_) => 122,
    }
}

/// The `default` IPAMConfiguration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpamConfig {
    pub strict_affinity: bool,
    pub auto_allocate_blocks: bool,
    /// 0 means "no configured limit", which `autoAssign` turns into 20.
    pub max_blocks_per_host: u32,
    /// `ipCooldownSeconds` (profile v3.33 only).
    pub ip_cooldown: SimDuration,
}

impl Default for IpamConfig {
    /// `ipam.go` GetIPAMConfig's fallback when no resource exists.
    fn default() -> IpamConfig {
        IpamConfig {
            strict_affinity: false,
            auto_allocate_blocks: true,
            max_blocks_per_host: 0,
            ip_cooldown: SimDuration::ZERO,
        }
    }
}

/// A Calico `IPReservation`: addresses AutoAssign must never hand out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpReservation {
    pub name: String,
    pub reserved_cidrs: Vec<IpNet>,
}

/// One validation problem, located by pool (index into the slice given) and field path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// `None` for the IPAMConfiguration.
    pub pool_index: Option<usize>,
    /// The manifest field, e.g. `"spec.blockSize"`.
    pub field: &'static str,
    pub message: String,
}

/// Overlapping pools named in one pool's problems; the rest are counted in one more.
const MAX_OVERLAPS_NAMED: usize = 10;

/// Every problem with these pools and this configuration, in pool order then config.
pub fn validate(pools: &[IpPool], config: &IpamConfig) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut add = |pool_index: Option<usize>, field: &'static str, message: String| {
        problems.push(Problem {
            pool_index,
            field,
            message,
        })
    };
    let index = Prefixes::new(pools.iter().map(IpPool::network));
    for (i, pool) in pools.iter().enumerate() {
        let at = Some(i);
        let v6 = pool.is_v6();
        // The CEL rules of `api/pkg/apis/projectcalico/v3/ippool.go`.
        if pool.cidr != pool.cidr.trunc() {
            add(
                at,
                "spec.cidr",
                "IPPool CIDR must be strictly masked".into(),
            );
        }
        let block_ok = if v6 {
            (116..=128).contains(&pool.block_size)
        } else {
            (20..=32).contains(&pool.block_size)
        };
        if !block_ok {
            add(
                at,
                "spec.blockSize",
                "blockSize must be between 20 and 32 for IPv4 pools, and between 116 and 128 for IPv6 pools".into(),
            );
        }
        if !pool.disabled && pool.cidr.prefix_len() > pool.block_size {
            add(
                at,
                "spec.cidr",
                "IP pool size is too small for use with Calico IPAM. It must be equal to or greater than the block size.".into(),
            );
        }
        let link_local: IpNet = if v6 {
            IpNet::V6("fe80::/10".parse().unwrap_or_default())
        } else {
            IpNet::V4("169.254.0.0/16".parse().unwrap_or_default())
        };
        if link_local.contains(&pool.cidr.network()) || pool.cidr.contains(&link_local.network()) {
            let msg = if v6 {
                "IPPool CIDR overlaps with IPv6 link local range fe80::/10"
            } else {
                "IPPool CIDR overlaps with IPv4 link local range 169.254.0.0/16"
            };
            add(at, "spec.cidr", msg.into());
        }
        if pool.ipip_mode != EncapMode::Never && pool.vxlan_mode != EncapMode::Never {
            add(
                at,
                "spec.vxlanMode",
                "ipipMode and vxlanMode cannot both be enabled".into(),
            );
        }
        if v6 && pool.ipip_mode != EncapMode::Never {
            add(
                at,
                "spec.ipipMode",
                "IPIP is not supported on IPv6 pools".into(),
            );
        }
        let lb = pool.allows(AllowedUse::LoadBalancer);
        if lb && (pool.ipip_mode != EncapMode::Never || pool.vxlan_mode != EncapMode::Never) {
            add(
                at,
                "spec.allowedUses",
                "LoadBalancer IP pool cannot have IPIP or VXLAN enabled".into(),
            );
        }
        if lb && (pool.allows(AllowedUse::Workload) || pool.allows(AllowedUse::Tunnel)) {
            add(
                at,
                "spec.allowedUses",
                "LoadBalancer cannot be combined with Workload or Tunnel allowed uses".into(),
            );
        }
        if lb && pool.disable_bgp_export {
            add(
                at,
                "spec.disableBGPExport",
                "LoadBalancer IP pools cannot disable BGP export".into(),
            );
        }
        if pool.allows(AllowedUse::Tunnel) && pool.has_namespace_selector {
            add(
                at,
                "spec.namespaceSelector",
                "IP Pool with AllowedUse Tunnel cannot have namespaceSelector".into(),
            );
        }
        // `clientv3/ippool.go`: checked against every other pool, so both sides report it.
        // Indexed, not compared pair by pair; past `MAX_OVERLAPS_NAMED` the rest are counted.
        let found = index.overlapping(pool.network(), Some(i), MAX_OVERLAPS_NAMED);
        for &j in &found.first {
            let other = &pools[j];
            add(
                at,
                "spec.cidr",
                format!(
                    "IPPool({}) CIDR overlaps with IPPool({}) CIDR {}",
                    pool.name,
                    other.name,
                    other.network()
                ),
            );
        }
        if found.total > found.first.len() {
            add(
                at,
                "spec.cidr",
                format!(
                    "IPPool({}) CIDR overlaps {} more IPPools",
                    pool.name,
                    found.total - found.first.len()
                ),
            );
        }
    }
    // `ipam.go` SetIPAMConfig and the CRD bounds of `v3/ipamconfig.go`.
    if !config.strict_affinity && !config.auto_allocate_blocks {
        add(
            None,
            "spec.autoAllocateBlocks",
            "Cannot disable 'StrictAffinity' and 'AutoAllocateBlocks' at the same time".into(),
        );
    }
    if config.max_blocks_per_host > 0 && !config.strict_affinity {
        add(
            None,
            "spec.maxBlocksPerHost",
            "MaxBlocksPerHost requires StrictAffinity to be enabled".into(),
        );
    }
    if config.max_blocks_per_host > 1_000_000 {
        add(
            None,
            "spec.maxBlocksPerHost",
            "spec.maxBlocksPerHost should be less than or equal to 1000000".into(),
        );
    }
    if config.ip_cooldown > SimDuration::from_secs(1200) {
        add(
            None,
            "spec.ipCooldownSeconds",
            "spec.ipCooldownSeconds should be less than or equal to 1200".into(),
        );
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, cidr: &str) -> IpPool {
        IpPool::with_defaults(name, cidr.parse().unwrap())
    }

    fn fields(problems: &[Problem]) -> Vec<(Option<usize>, &'static str)> {
        problems.iter().map(|p| (p.pool_index, p.field)).collect()
    }

    #[test]
    fn defaults_are_calicos() {
        let p = pool("p", "10.0.0.0/16");
        assert_eq!(p.block_size, 26);
        assert_eq!(
            p.allowed_uses,
            vec![AllowedUse::Workload, AllowedUse::Tunnel]
        );
        assert_eq!(p.ipip_mode, EncapMode::Never);
        assert_eq!(p.assignment_mode, AssignmentMode::Automatic);
        assert_eq!(pool("p6", "fd00::/64").block_size, 122);
        let c = IpamConfig::default();
        assert!(!c.strict_affinity && c.auto_allocate_blocks && c.max_blocks_per_host == 0);
        assert!(validate(&[p], &c).is_empty());
    }

    #[test]
    fn block_size_range_and_pool_size() {
        let mut a = pool("a", "10.0.0.0/16");
        a.block_size = 19;
        let mut b = pool("b", "fd00::/112");
        b.block_size = 115;
        let mut c = pool("c", "10.1.0.0/28");
        c.block_size = 26;
        let problems = validate(&[a, b, c.clone()], &IpamConfig::default());
        assert_eq!(
            fields(&problems),
            vec![
                (Some(0), "spec.blockSize"),
                (Some(1), "spec.blockSize"),
                (Some(2), "spec.cidr")
            ]
        );
        assert!(
            problems[0]
                .message
                .starts_with("blockSize must be between 20 and 32")
        );
        assert!(problems[2].message.starts_with("IP pool size is too small"));
        // A disabled pool may be smaller than its blocks.
        c.disabled = true;
        assert!(validate(&[c], &IpamConfig::default()).is_empty());
    }

    #[test]
    fn overlap_encap_and_config_rules() {
        let mut a = pool("a", "10.0.0.0/16");
        a.ipip_mode = EncapMode::Always;
        a.vxlan_mode = EncapMode::CrossSubnet;
        let b = pool("b", "10.0.128.0/17");
        let mut c = pool("c", "fd00::/64");
        c.ipip_mode = EncapMode::Always;
        let config = IpamConfig {
            max_blocks_per_host: 4,
            ..IpamConfig::default()
        };
        let problems = validate(&[a, b, c], &config);
        let msgs: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            msgs,
            vec![
                "ipipMode and vxlanMode cannot both be enabled",
                "IPPool(a) CIDR overlaps with IPPool(b) CIDR 10.0.128.0/17",
                "IPPool(b) CIDR overlaps with IPPool(a) CIDR 10.0.0.0/16",
                "IPIP is not supported on IPv6 pools",
                "MaxBlocksPerHost requires StrictAffinity to be enabled",
            ]
        );
        assert_eq!(problems[4].pool_index, None);
        assert_eq!(problems[4].field, "spec.maxBlocksPerHost");
    }

    #[test]
    fn unmasked_and_link_local_cidrs() {
        let a = pool("a", "10.0.0.1/16");
        let b = pool("b", "169.254.0.0/20");
        let problems = validate(&[a, b], &IpamConfig::default());
        assert_eq!(problems[0].message, "IPPool CIDR must be strictly masked");
        assert_eq!(
            problems[1].message,
            "IPPool CIDR overlaps with IPv4 link local range 169.254.0.0/16"
        );
    }
}
