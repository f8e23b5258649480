//! BGP: who peers with whom, how routes are chosen, filtered, reflected and carried, and how
//! long it all takes (SPEC §3.4, REFERENCE §4).
//!
//! - [`config`]: plain inputs — Calico's `BGPConfiguration` and `BGPPeer`s, pools, timers.
//! - [`peering`]: speakers and sessions computed from the topology and the configuration;
//!   sessions that can never come up are kept, Idle, with a reason a user can act on.
//! - [`rib`]: path attributes (shared), destinations holding each prefix's candidates
//!   (the Adj-RIB-In entries) and the Loc-RIB choice.
//! - [`decision`]: the decision process in BIRD's order, one function per tie-breaker; every
//!   route records the step that decided it.
//! - [`policy`]: Calico's export filter, split horizon, RFC 4456 reflection, eBGP loops,
//!   next-hop rules.
//! - [`engine`]: the timed state machine the simulator drives: sessions, UPDATEs, processing
//!   queues, hold timers, MRAI, the log.
//! - [`restart`]: graceful restart: helpers keeping a restarting peer's routes as stale, a
//!   restarting speaker forwarding with its kernel's routes until End-of-RIB.
//! - [`reconfigure`]: moving the running engine to a new plan when the configuration changes
//!   or nodes join, keeping the sessions that did not change.
//!
//! Invariants: no clock and no queue here — time comes in as arguments and leaves as
//! scheduled [`engine::BgpEvent`]s; ids are given in creation order and every collection that
//! is iterated is ordered, so the same inputs give the same events, RIBs and log.
//! This module does not build FIBs or forward packets (that is forwarding's job, from
//! [`engine::BgpEngine::best_routes`]), and does not know about pods or IPAM: the simulator
//! tells it which prefixes a node originates.

pub mod config;
pub mod decision;
pub mod engine;
pub mod peering;
pub mod policy;
pub mod reconfigure;
pub mod restart;
pub mod rib;
pub mod underlay;

#[cfg(test)]
mod tests;

pub use config::{BgpConfig, ExportPool, Peer, Timers, whole_seconds};
pub use decision::{BestBecause, LostBecause, RouteStatus};
pub use engine::{
    BatchId, BestRoute, BgpEngine, BgpEvent, BgpLogEntry, BgpLogKind, LogOptions, RibEntry,
    RibRoute, Scheduled, Update, UpdateBody,
};
pub use peering::{
    IdleReason, Peering, Session, SessionSource, SessionState, SessionType, Speaker, plan,
};
pub use rib::{Origin, PathAttributes, PrefixId};

/// A BGP speaker, by position in [`Peering::speakers`] (creation order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpeakerId(pub u32);

/// A BGP session, by position in [`Peering::sessions`] (creation order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(pub u32);

impl SpeakerId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl SessionId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
