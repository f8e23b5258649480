//! What the engine shows outside: its log lines (which kinds, and which it keeps) and the
//! views of a speaker's RIB that `podnet routes` and the FIB builder read.
//!
//! Plain data; the engine fills it (`queries.rs`, the log calls), nothing here changes state.

use super::*;

/// What happened, for `events.jsonl` and for students.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BgpLogKind {
    SessionConnect,
    SessionEstablished,
    SessionDown,
    SpeakerDown,
    SpeakerUp,
    SpeakerRemoved,
    Update,
    RouteRejected,
    BestPathChanged,
    Originated,
    Withdrawn,
    /// Graceful restart: a peer's routes kept as stale, or stale routes flushed.
    RoutesStale,
    StaleFlushed,
}

impl BgpLogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BgpLogKind::SessionConnect => "sessionConnect",
            BgpLogKind::SessionEstablished => "sessionEstablished",
            BgpLogKind::SessionDown => "sessionDown",
            BgpLogKind::SpeakerDown => "speakerDown",
            BgpLogKind::SpeakerUp => "speakerUp",
            BgpLogKind::SpeakerRemoved => "speakerRemoved",
            BgpLogKind::Update => "update",
            BgpLogKind::RouteRejected => "routeRejected",
            BgpLogKind::BestPathChanged => "bestPathChanged",
            BgpLogKind::Originated => "originated",
            BgpLogKind::Withdrawn => "withdrawn",
            BgpLogKind::RoutesStale => "routesStale",
            BgpLogKind::StaleFlushed => "staleFlushed",
        }
    }
}

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgpLogEntry {
    pub time: SimTime,
    pub kind: BgpLogKind,
    /// What it is about: a speaker, `a – b` for a session, `a -> b` for an UPDATE.
    pub subject: String,
    pub outcome: String,
}

/// Which log lines to keep; session lines are always kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// One line per UPDATE sent.
    pub updates: bool,
    /// One line per best-path change and per rejected route.
    pub routes: bool,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            updates: true,
            routes: true,
        }
    }
}

/// One candidate route as `podnet routes` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RibRoute {
    /// The peer it came from (`None`: originated here).
    pub from: Option<DeviceId>,
    pub session: Option<SessionId>,
    pub attrs: Attrs,
    /// The device owning the next hop.
    pub next_hop_device: Option<DeviceId>,
    pub ebgp: bool,
    pub status: RouteStatus,
}

/// A prefix with its candidates, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct RibEntry {
    pub prefix: IpNet,
    pub routes: Vec<RibRoute>,
}

/// A Loc-RIB route, for building a FIB.
#[derive(Clone, Debug, PartialEq)]
pub struct BestRoute {
    pub prefix: IpNet,
    pub next_hop: IpAddr,
    pub next_hop_device: Option<DeviceId>,
    /// Originated by this speaker (a Calico node's own block or borrowed address).
    pub local: bool,
}
