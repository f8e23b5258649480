//! Update groups: the sessions of a speaker that see its advertisements alike share one
//! export computation, as real routers send one UPDATE stream to peers with the same
//! outbound policy (Cisco's and Juniper's update groups, BIRD's shared export of one
//! channel's table).
//!
//! What session `x` is sent of an advertisement (`send.rs`, `BgpEngine::view`) depends on
//! `x` only through its [`ExportProfile`] (ADD-PATH and the `ExportSession` fields the export
//! rules read) and through one identity test: a path learned on `x` itself is never sent
//! back to it (`may_send`'s `BackToSender`). So for one advertisement every session of one
//! profile that did not provide one of its paths gets the same view — computed once per
//! profile ([`GroupViews`]) — and only the sessions a path was learned on are computed on
//! their own. A reflector's change then costs one export per profile instead of one per
//! client, and the clients that see every change of a flush as their profile does share
//! one UPDATE body (`send.rs`, `flush`); each still gets its own message (MRAI and the
//! in-flight order stay per session).
//!
//! Invariant: a grouped view is exactly the view the session would compute on its own (the
//! same attributes; the same `Arc` while the speaker's `ExportCache` keeps it). The engine
//! keeps the per-session computation ([`BgpEngine::set_update_groups`]`(false)`) as the
//! oracle of the property test in `src/bgp/tests/update_groups.rs`.
//!
//! Not here: sharing on the receiving side (`shared.rs`: interned states, replayed steps).

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use crate::bgp::SessionId;
use crate::bgp::policy::ExportSession;
use crate::bgp::rib::{Advertised, Attrs, PathId, PrefixId, RouteSource};

use super::send::SourcedView;
use super::{BgpEngine, UpdateBody};

/// A session id no session has: the receiving end of a view shared by a whole profile, on
/// which no path was learned.
pub(super) const ANY_SESSION: SessionId = SessionId(u32::MAX);

/// Everything about a session (one side of it) that its view of an advertisement depends
/// on, but the session's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ExportProfile {
    add_paths: bool,
    ebgp: bool,
    peer_is_client: bool,
    peer_as: u32,
    shared_subnet: Option<IpNet>,
    keep_next_hop: bool,
    cluster_id: Option<IpAddr>,
}

/// One path's change for a session: (path id, what it saw, what it sees now).
pub(super) type Change = (PathId, Option<Attrs>, Option<Attrs>);

/// The changes of one advertisement (old → new) per export profile, for the sessions that
/// provided none of its paths; built lazily during one flush of one prefix.
#[derive(Debug, Default)]
pub(super) struct GroupViews {
    /// The sessions the old or the new advertisement's paths were learned on: they are
    /// computed on their own.
    learned_on: SmallVec<[SessionId; 4]>,
    by_profile: SmallVec<[(ExportProfile, Vec<Change>); 2]>,
}

impl GroupViews {
    /// The groups of one prefix's change from `old` to `new`.
    pub(super) fn new(old: Option<&Advertised>, new: Option<&Advertised>) -> GroupViews {
        let mut learned_on = SmallVec::new();
        for a in old.into_iter().chain(new) {
            let sources = a
                .offered()
                .map(|(key, _, _)| key.source)
                .chain([a.key.source]);
            for source in sources {
                if let RouteSource::Peer(y) = source
                    && !learned_on.contains(&y)
                {
                    learned_on.push(y);
                }
            }
        }
        GroupViews {
            learned_on,
            by_profile: SmallVec::new(),
        }
    }

    /// The sessions that must be computed on their own.
    pub(super) fn learned_on(&self) -> &[SessionId] {
        &self.learned_on
    }

    /// Whether session `x` must be computed on its own.
    pub(super) fn alone(&self, x: SessionId) -> bool {
        self.learned_on.contains(&x)
    }

    /// The changes computed for `profile`, if any yet.
    pub(super) fn get(&self, profile: &ExportProfile) -> Option<&[Change]> {
        self.by_profile
            .iter()
            .find(|(p, _)| p == profile)
            .map(|(_, c)| &c[..])
    }

    pub(super) fn put(&mut self, profile: ExportProfile, changes: Vec<Change>) -> &[Change] {
        self.by_profile.push((profile, changes));
        &self.by_profile.last().expect("just pushed").1
    }
}

impl BgpEngine {
    /// Shares export computations among sessions with the same [`ExportProfile`] (the
    /// default), or computes every session on its own (`false`: the reference the property
    /// tests compare against; results are identical either way).
    pub fn set_update_groups(&mut self, on: bool) {
        self.update_groups = on;
    }

    /// The export profile of session `x` at side `side`.
    pub(super) fn export_profile(&self, x: SessionId, side: usize) -> ExportProfile {
        ExportProfile::of(&self.export_session(x, side), self.add_paths(x))
    }

    /// Forgets every speaker's [`TableViews`]: what they were computed from (session
    /// parameters, AS numbers, cluster IDs, router IDs) may have changed.
    pub(in crate::bgp) fn forget_table_views(&mut self) {
        for r in &mut self.rt {
            r.table_views = TableViews::default();
        }
    }
}

impl ExportProfile {
    fn of(e: &ExportSession, add_paths: bool) -> ExportProfile {
        ExportProfile {
            add_paths,
            ebgp: e.ebgp,
            peer_is_client: e.peer_is_client,
            peer_as: e.peer_as,
            shared_subnet: e.shared_subnet,
            keep_next_hop: e.keep_next_hop,
            cluster_id: e.cluster_id,
        }
    }
}

/// The full-table side of update groups, per speaker: for each prefix, the view its current
/// advertisement has for each export profile a full table was sent to, with each path's
/// source, so the next session of that profile coming up takes it minus the paths learned on
/// that session instead of running the export rules again. Indexed by prefix id (a full table
/// walks the prefixes in order); an entry is used only while the advertisement it was
/// computed from is still the same ([`Advertised::same_as`]); a speaker's entries are dropped
/// when it is wiped, all of them when the peering is reconfigured.
///
/// It also keeps the last full table built for each profile, as one body: the next session
/// of that profile coming up while the advertisements are the same (the RIB's version), and
/// on which none of its paths was learned, is sent that very body — which its receiver
/// then applies by the steps the body's earlier receivers took (`shared.rs`).
#[derive(Clone, Debug, Default)]
pub(super) struct TableViews {
    by_prefix: Vec<Vec<TableView>>,
    tables: Vec<FullTable>,
}

/// A full table built for a profile.
#[derive(Clone, Debug)]
struct FullTable {
    profile: ExportProfile,
    /// The RIB's version it was built at.
    version: u64,
    /// The sessions its paths were learned on (none of them may be sent it), sorted.
    learned_on: Vec<SessionId>,
    body: Arc<UpdateBody>,
}

#[derive(Clone, Debug)]
struct TableView {
    profile: ExportProfile,
    /// The advertisement the view was computed from.
    from: Advertised,
    view: SourcedView,
}

impl TableViews {
    /// The shared view of `adv` (`p`'s advertisement) for `profile`, computed by `compute` if
    /// not known yet.
    pub(super) fn get_or_compute(
        &mut self,
        p: PrefixId,
        profile: ExportProfile,
        adv: &Advertised,
        compute: impl FnOnce() -> SourcedView,
    ) -> &SourcedView {
        if self.by_prefix.len() <= p.index() {
            self.by_prefix.resize_with(p.index() + 1, Vec::new);
        }
        let kept = &mut self.by_prefix[p.index()];
        let i = match kept.iter().position(|t| t.profile == profile) {
            Some(i) => {
                if !kept[i].from.same_as(adv) {
                    kept[i].view = compute();
                    kept[i].from = adv.clone();
                }
                i
            }
            None => {
                kept.push(TableView {
                    profile,
                    from: adv.clone(),
                    view: compute(),
                });
                kept.len() - 1
            }
        };
        &kept[i].view
    }

    /// The full table built for `profile` at RIB version `version`, if it may go to `x`.
    pub(super) fn full_table(
        &self,
        profile: ExportProfile,
        version: u64,
        x: SessionId,
    ) -> Option<&Arc<UpdateBody>> {
        self.tables
            .iter()
            .find(|t| t.profile == profile && t.version == version)
            .filter(|t| t.learned_on.binary_search(&x).is_err())
            .map(|t| &t.body)
    }

    /// Keeps `body`, the full table of `profile` at RIB version `version` less the paths
    /// learned on `x`, which it includes none of, for the next session of the profile.
    pub(super) fn keep_full_table(
        &mut self,
        profile: ExportProfile,
        version: u64,
        mut learned_on: Vec<SessionId>,
        body: &Arc<UpdateBody>,
    ) {
        learned_on.sort_unstable();
        learned_on.dedup();
        let table = FullTable {
            profile,
            version,
            learned_on,
            body: body.clone(),
        };
        match self.tables.iter_mut().find(|t| t.profile == profile) {
            Some(t) => *t = table,
            None => self.tables.push(table),
        }
    }
}

impl BgpEngine {
    /// The receiving end shared by every session of `x`'s (side `side`'s) export profile:
    /// its `ExportSession` under [`ANY_SESSION`], its ADD-PATH, and the profile.
    pub(super) fn shared_end(
        &self,
        x: SessionId,
        side: usize,
    ) -> (ExportSession, bool, ExportProfile) {
        let e = self.export_session(x, side);
        let add_paths = self.add_paths(x);
        let any = ExportSession {
            id: ANY_SESSION,
            ..e
        };
        (any, add_paths, ExportProfile::of(&e, add_paths))
    }
}
