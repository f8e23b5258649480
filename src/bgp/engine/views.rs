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

impl BgpEngine {
    /// An UPDATE as a log line shows it: the first few prefixes announced and withdrawn.
    pub(super) fn describe_update(&self, u: &Update) -> String {
        const SHOWN: usize = 3;
        let mut parts = Vec::new();
        // A path other than ADD-PATH's first (or only) one is named: `10.0.0.0/26 path 1`.
        let list = |ps: &mut dyn Iterator<Item = (PrefixId, PathId)>, n: usize| {
            let mut v: Vec<String> = ps
                .take(SHOWN)
                .map(|(p, path)| match path {
                    PathId(0) => self.prefixes.net(p).to_string(),
                    PathId(id) => format!("{} path {id}", self.prefixes.net(p)),
                })
                .collect();
            if n > SHOWN {
                v.push(format!("+{} more", n - SHOWN));
            }
            v.join(" ")
        };
        let b = &u.body;
        if !b.announced.is_empty() {
            let text = list(
                &mut b.announced.iter().map(|(p, path, _)| (*p, *path)),
                b.announced.len(),
            );
            parts.push(format!("announce {text}"));
        }
        if !b.withdrawn.is_empty() {
            let text = list(&mut b.withdrawn.iter().copied(), b.withdrawn.len());
            parts.push(format!("withdraw {text}"));
        }
        parts.join("; ")
    }
}
