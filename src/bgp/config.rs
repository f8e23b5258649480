//! Plain inputs of the BGP layer: Calico's `BGPConfiguration` and `BGPPeer`s, the pools the
//! export filter looks at, and the timers of a profile (REFERENCE §4.3, §4.4).
//!
//! Nothing here is validated: `scenario` builds these from checked manifests.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::model::network::TimerProfile;
use crate::model::selector::Selector;
use crate::model::time::SimDuration;

/// The LOCAL_PREF Calico's v3.32+ BIRD templates give every route a node sends over iBGP
/// (REFERENCE §4.4).
pub const CALICO_IBGP_LOCAL_PREF: u32 = 2_147_482_623;

/// Calico's `BGPConfiguration` named `default`, as far as peering needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgpConfig {
    /// `spec.asNumber`: the AS of every node that does not set its own (Calico default 64512).
    pub as_number: u32,
    /// `spec.nodeToNodeMeshEnabled` (default true).
    pub node_to_node_mesh: bool,
    /// `spec.nodeMeshMaxRestartTime`, in whole seconds as confd renders it: the mesh
    /// sessions' `graceful restart time` (BIRD's 120 s when unset).
    pub node_mesh_restart_time: Option<SimDuration>,
}

impl Default for BgpConfig {
    fn default() -> BgpConfig {
        BgpConfig {
            as_number: 64512,
            node_to_node_mesh: true,
            node_mesh_restart_time: None,
        }
    }
}

/// A Calico `BGPPeer` (projectcalico.org/v3), with Calico's meaning:
/// it applies to `node`, or to the nodes `node_selector` matches, or to every node when
/// neither is set; it peers them with the speaker owning `peer_ip`, or with the nodes
/// `peer_selector` matches. Peering is symmetric (Calico configures the reverse side itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// `metadata.name`, quoted in the reasons of sessions that cannot come up.
    pub name: String,
    pub node: Option<String>,
    pub node_selector: Option<Selector>,
    pub peer_ip: Option<IpAddr>,
    /// The port written after `peerIP` (`10.0.0.1:1179`); BIRD connects to 179 without it.
    pub peer_port: Option<u16>,
    pub peer_selector: Option<Selector>,
    /// The AS the peer is expected to have; a different real AS leaves the session Idle.
    pub as_number: Option<u32>,
    /// `keepOriginalNextHop`: on eBGP, the node passes routes on without next-hop-self.
    pub keep_original_next_hop: bool,
    /// `maxRestartTime`, in whole seconds as confd renders it: the sessions' `graceful
    /// restart time` (BIRD's 120 s when unset).
    pub max_restart_time: Option<SimDuration>,
}

/// A restart time as confd renders it for BIRD: whole seconds, rounded half away from zero
/// (`math.Round(d.Seconds())`, client.go).
pub fn whole_seconds(d: SimDuration) -> SimDuration {
    const S: u64 = 1_000_000_000;
    SimDuration::from_secs((d.as_nanos() + S / 2) / S)
}

impl Peer {
    /// A peer with only a name; set the fields you need.
    pub fn named(name: &str) -> Peer {
        Peer {
            name: name.to_string(),
            node: None,
            node_selector: None,
            peer_ip: None,
            peer_port: None,
            peer_selector: None,
            as_number: None,
            keep_original_next_hop: false,
            max_restart_time: None,
        }
    }

    /// Global: applies to every node (Calico: neither `node` nor `nodeSelector`).
    pub fn is_global(&self) -> bool {
        self.node.is_none() && self.node_selector.is_none()
    }
}

/// What the Calico export filter needs to know about an IP pool.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExportPool {
    pub cidr: IpNet,
    /// `spec.disableBGPExport`: nothing inside the pool is ever advertised.
    pub disable_bgp_export: bool,
}

/// BGP timers of one profile (REFERENCE §4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    /// Hold time: a silent peer is declared dead this long after its last message.
    pub hold: SimDuration,
    /// Keepalive interval: each side sends a KEEPALIVE this often from establishment, which
    /// restarts the other side's hold timer (not simulated as messages: the last one before a
    /// failure follows from the schedule).
    pub keepalive: SimDuration,
    /// How long a speaker waits after starting before it opens a connection.
    pub connect_delay: SimDuration,
    /// After a failure, connection attempts happen every `connect_retry`.
    pub connect_retry: SimDuration,
    /// After a session ends in an error (hold timer expiry), BIRD waits this long before
    /// starting it again (`error wait time`), doubling after each error that follows the
    /// previous one within [`Timers::ERROR_FORGET`], up to `error_wait_max`; 0 = none.
    pub error_wait: SimDuration,
    pub error_wait_max: SimDuration,
    /// MinRouteAdvertisementInterval for eBGP and iBGP peers (RFC 4271 §9.2.1.1); 0 = none.
    pub mrai_ebgp: SimDuration,
    pub mrai_ibgp: SimDuration,
    /// BIRD shortens every timer it starts (connect delay, connect retry, keepalive, hold) by
    /// a random amount up to 25% (RFC 4271 §10, `bgp_start_timer`); FRR does not.
    pub jitter: bool,
}

impl Timers {
    /// BIRD's `error forget time` default: an error more than this after the previous one
    /// starts the error wait from its minimum again.
    pub const ERROR_FORGET: SimDuration = SimDuration::from_secs(300);

    /// The timers of a profile, from REFERENCE §4.4's table.
    pub fn for_profile(profile: TimerProfile) -> Timers {
        let s = SimDuration::from_secs;
        let exact = |hold, keepalive, connect_retry, mrai_ebgp, mrai_ibgp| Timers {
            hold,
            keepalive,
            connect_delay: SimDuration::ZERO,
            connect_retry,
            error_wait: SimDuration::ZERO,
            error_wait_max: SimDuration::ZERO,
            mrai_ebgp,
            mrai_ibgp,
            jitter: false,
        };
        let zero = SimDuration::ZERO;
        match profile {
            TimerProfile::Rfc4271 => exact(s(90), s(30), s(120), s(30), s(5)),
            // BIRD's defaults (hold 240, keepalive hold/3) with Calico's bird.cfg template:
            // `connect delay time 2; connect retry time 5; error wait time 5,30;`.
            TimerProfile::CalicoBird => Timers {
                hold: s(240),
                keepalive: s(80),
                connect_delay: s(2),
                connect_retry: s(5),
                error_wait: s(5),
                error_wait_max: s(30),
                mrai_ebgp: zero,
                mrai_ibgp: zero,
                jitter: true,
            },
            TimerProfile::Frr => exact(s(180), s(60), s(120), zero, zero),
            TimerProfile::FrrDatacenter => exact(s(9), s(3), s(10), zero, zero),
        }
    }
}

/// Where BIRD's timer jitter comes from: the simulator hands the engine the scenario's seeded
/// stream for this purpose (`sim::rng`), so the same seed gives the same times.
pub trait TimerJitter: std::fmt::Debug + Send + Sync {
    /// A uniform integer in `0..=bound`.
    fn draw(&mut self, bound: u64) -> u64;
}

impl From<TimerProfile> for Timers {
    fn from(profile: TimerProfile) -> Timers {
        Timers::for_profile(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_follow_the_reference_table() {
        let bird = Timers::for_profile(TimerProfile::CalicoBird);
        assert_eq!(bird.hold, SimDuration::from_secs(240));
        // Calico's template: connect delay 2, connect retry 5, error wait 5 backing off to 30.
        assert_eq!(bird.connect_delay, SimDuration::from_secs(2));
        assert_eq!(bird.connect_retry, SimDuration::from_secs(5));
        assert_eq!(
            (bird.error_wait, bird.error_wait_max),
            (SimDuration::from_secs(5), SimDuration::from_secs(30))
        );
        assert!(bird.jitter);
        assert!(!Timers::for_profile(TimerProfile::Frr).jitter);
        assert_eq!(bird.mrai_ebgp, SimDuration::ZERO);
        let rfc = Timers::from(TimerProfile::Rfc4271);
        assert_eq!(rfc.mrai_ebgp, SimDuration::from_secs(30));
        assert_eq!(rfc.mrai_ibgp, SimDuration::from_secs(5));
        assert_eq!(
            Timers::for_profile(TimerProfile::FrrDatacenter).hold,
            SimDuration::from_secs(9)
        );
    }

    #[test]
    fn calico_defaults() {
        let c = BgpConfig::default();
        assert_eq!((c.as_number, c.node_to_node_mesh), (64512, true));
        assert!(Peer::named("p").is_global());
    }
}
