//! Cluster-wide networking settings (SPEC §2.2) and behaviour profiles.

use super::text_enum;
use super::time::SimDuration;

/// When a Calico IPPool encapsulates traffic between nodes (`ipipMode`, `vxlanMode`): never,
/// always, or only towards a node on another subnet (`CrossSubnet`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EncapMode {
    #[default]
    Never,
    Always,
    CrossSubnet,
}

text_enum! {
    /// Which IPAM and dataplane the pods use.
    pub enum Cni {
        /// Pods get addresses from Calico IPPools and are routed by their node.
        Calico = "calico",
        /// Pods are attached to their node's rack segment with SpiderIPPool addresses.
        Spiderpool = "spiderpool",
    }
}

text_enum! {
    /// How Calico distributes routes.
    pub enum CalicoBackend {
        /// BIRD speaks BGP.
        Bird = "bird",
        /// No BGP: Felix programs VXLAN routes from IPAM state.
        Vxlan = "vxlan",
    }
}

text_enum! {
    /// How a Windows node's HNS networks hold its blocks (`network.windowsHns`).
    pub enum WindowsHns {
        /// Calico's `windows_use_single_network: true`: one HNS network named after the CNI
        /// network, so one block per host.
        SingleNetwork = "single-network",
        /// Calico's `windows_use_single_network: false`: one HNS network per block, named from
        /// the CNI network name and the block's address.
        NetworkPerBlock = "network-per-block",
        /// HNS multi-subnet support: one network whose subnet (one per pool) holds one IP
        /// subnet per block, added and removed as blocks come and go.
        MultiSubnet = "multi-subnet",
    }
}

text_enum! {
    /// Which addresses of a Windows node's blocks no pod can get (`network.windowsReservation`).
    pub enum WindowsReservation {
        /// Calico today (`ipam_block.go` newBlock): every block a Windows node creates reserves
        /// its first three and its last address; the second is the HNS gateway/VXLAN tunnel.
        PerBlock = "per-block",
        /// The micro-pool proposal, per host: the first `windowsReservedAddresses` addresses of
        /// the block a Windows node claims while it holds no reserving block; the first of them
        /// is its HNS gateway/VXLAN tunnel address. Its other blocks reserve nothing.
        PerHost = "per-host",
        /// The micro-pool proposal, per pool: the first `windowsReservedAddresses` addresses of
        /// the block a Windows node claims in a pool where no block reserves; each Windows
        /// node's VXLAN tunnel address is then an ordinary Tunnel allocation, as on Linux.
        PerPool = "per-pool",
    }
}

/// `windowsReservedAddresses` when it is not written.
pub const DEFAULT_WINDOWS_RESERVED_ADDRESSES: u32 = 2;

/// The Windows reservation model in force and, for the micro-pool models, how many addresses
/// it reserves once per host or per pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowsReserve {
    pub model: WindowsReservation,
    /// Per host or per pool; unused (Calico's four per block) under `per-block`.
    pub addresses: u32,
}

impl Default for WindowsReserve {
    fn default() -> WindowsReserve {
        WindowsReserve {
            model: WindowsReservation::PerBlock,
            addresses: DEFAULT_WINDOWS_RESERVED_ADDRESSES,
        }
    }
}

text_enum! {
    /// Which Calico release's IPAM behaviour to reproduce.
    pub enum CalicoProfile {
        V3_30 = "v3.30",
        /// Empty-block reclaim after one minute.
        V3_32 = "v3.32",
        /// Release cooldown (`ipCooldownSeconds`).
        V3_33 = "v3.33",
    }
}

text_enum! {
    /// `network.policy` (SPEC §7): whether network policy decides reachability.
    pub enum PolicyMode {
        Enforce = "enforce",
        /// Policies are loaded and reported, never enforced.
        Ignore = "ignore",
    }
}

text_enum! {
    /// BGP timer profile (REFERENCE §4.4).
    pub enum TimerProfile {
        CalicoBird = "calico-bird",
        Rfc4271 = "rfc4271",
        Frr = "frr",
        FrrDatacenter = "frr-datacenter",
    }
}

/// BFD timers: a dead peer is detected after `interval × multiplier`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bfd {
    pub interval: SimDuration,
    pub multiplier: u32,
}

impl Bfd {
    /// podnet's default: 500 ms × 3, detection in 1.5 s.
    pub const DEFAULT: Bfd = Bfd {
        interval: SimDuration::from_millis(500),
        multiplier: 3,
    };

    pub fn detection_time(self) -> SimDuration {
        self.interval.saturating_mul(u64::from(self.multiplier))
    }
}

/// BGP speaker settings shared by every speaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BgpSettings {
    /// CPU time a speaker spends per received UPDATE message.
    pub processing_delay: SimDuration,
    /// Plus this per prefix in it.
    pub per_prefix_delay: SimDuration,
    pub bfd: Option<Bfd>,
}

/// `network:` with defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    pub cni: Cni,
    pub calico_backend: CalicoBackend,
    pub datastore_delay: SimDuration,
    /// `windowsHns`, or what `windowsUseSingleNetwork` says (true: single network).
    pub windows_hns: WindowsHns,
    /// `windowsReservation` and `windowsReservedAddresses`.
    pub windows_reserve: WindowsReserve,
    pub host_mtu: u32,
    pub bgp: BgpSettings,
    /// `network.policy`; `None` (not written) means enforce when any policy exists.
    pub policy: Option<PolicyMode>,
    /// `network.serviceClusterIPRange`: where Service cluster IPs come from (Kubernetes'
    /// default `10.96.0.0/12`).
    pub service_cluster_ip_range: ipnet::Ipv4Net,
}

/// Kubernetes' default `--service-cluster-ip-range`.
pub const DEFAULT_SERVICE_CLUSTER_IP_RANGE: ipnet::Ipv4Net =
    match ipnet::Ipv4Net::new(std::net::Ipv4Addr::new(10, 96, 0, 0), 12) {
        Ok(net) => net,
        Err(_) => panic!("a /12 is a valid prefix"),
    };

impl Default for Network {
    fn default() -> Network {
        Network {
            cni: Cni::Calico,
            calico_backend: CalicoBackend::Bird,
            datastore_delay: SimDuration::from_millis(100),
            windows_hns: WindowsHns::SingleNetwork,
            windows_reserve: WindowsReserve::default(),
            host_mtu: 1500,
            bgp: BgpSettings {
                processing_delay: SimDuration::from_micros(20),
                per_prefix_delay: SimDuration::from_micros(2),
                bfd: None,
            },
            policy: None,
            service_cluster_ip_range: DEFAULT_SERVICE_CLUSTER_IP_RANGE,
        }
    }
}

/// `profile:` with defaults applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    pub calico: CalicoProfile,
    pub bgp_timers: TimerProfile,
}

impl CalicoProfile {
    /// v3.32+: a node may claim another node's block that has been empty for a minute.
    pub fn reclaims_empty_blocks(self) -> bool {
        self >= CalicoProfile::V3_32
    }

    /// v3.33+: `ipCooldownSeconds`, released addresses wait before reuse.
    pub fn has_ip_cooldown(self) -> bool {
        self >= CalicoProfile::V3_33
    }
}

// `text_enum!` cannot derive Default, so the defaults are written out.
#[allow(clippy::derivable_impls)]
impl Default for CalicoProfile {
    fn default() -> CalicoProfile {
        CalicoProfile::V3_30
    }
}

#[allow(clippy::derivable_impls)]
impl Default for TimerProfile {
    fn default() -> TimerProfile {
        TimerProfile::CalicoBird
    }
}
