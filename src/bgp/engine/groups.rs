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
use std::ops::Range;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use crate::bgp::SessionId;
use crate::bgp::policy::ExportSession;
use crate::bgp::rib::{Advertised, Attrs, PathId, PrefixId, RouteSource};
use crate::model::hash::FastMap;

use super::prefetch::prefetch_line;
use super::send::SourcedView;
use super::{BgpEngine, UpdateBody};

/// A session id no session has: the receiving end of a view shared by a whole profile, on
/// which no path was learned.
pub(super) const ANY_SESSION: SessionId = SessionId(u32::MAX);

/// Everything about a session (one side of it) that its view of an advertisement depends
/// on, but the session's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct ExportProfile {
    add_paths: bool,
    ebgp: bool,
    peer_is_client: bool,
    peer_as: u32,
    shared_subnet: Option<IpNet>,
    keep_next_hop: bool,
    cluster_id: Option<IpAddr>,
}

/// An interned [`ExportProfile`]: equal profiles, equal ids ([`ExportProfiles`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct ProfileId(u32);

/// The export profiles seen so far, each under one [`ProfileId`] for the engine's life: a
/// flush and a full table compare four-byte ids where they compared whole profiles. A
/// profile is never forgotten (a reconfigured session takes the id of its new profile;
/// the old id simply stays unused), so an id never names two profiles.
#[derive(Clone, Debug, Default)]
pub(super) struct ExportProfiles {
    ids: FastMap<ExportProfile, ProfileId>,
}

impl ExportProfiles {
    /// The id of `profile`, given a new one the first time it is seen.
    pub(super) fn intern(&mut self, profile: ExportProfile) -> ProfileId {
        let next = ProfileId(self.ids.len() as u32);
        *self.ids.entry(profile).or_insert(next)
    }
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
    by_profile: SmallVec<[(ProfileId, Vec<Change>); 2]>,
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
    pub(super) fn get(&self, profile: ProfileId) -> Option<&[Change]> {
        self.by_profile
            .iter()
            .find(|(p, _)| *p == profile)
            .map(|(_, c)| &c[..])
    }

    pub(super) fn put(&mut self, profile: ProfileId, changes: Vec<Change>) -> &[Change] {
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

    /// The interned export profile of session `x` at side `side`.
    pub(super) fn export_profile(&mut self, x: SessionId, side: usize) -> ProfileId {
        let profile = ExportProfile::of(&self.export_session(x, side), self.add_paths(x));
        self.send_cache.profiles.intern(profile)
    }

    /// Forgets every speaker's [`TableViews`] and the sessions its flushes visit with their
    /// profiles (`send.rs`, `SendCache`): what they were computed from (session lists and
    /// parameters, AS numbers, cluster IDs, router IDs) may have changed.
    pub(in crate::bgp) fn forget_table_views(&mut self) {
        for o in &mut self.outbound {
            o.table_views = TableViews::default();
        }
        self.send_cache.forget_targets();
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
/// walks the prefixes in order), but for a speaker that sends only its own prefixes (a
/// full-mesh node, a reflector's client), whose few rows are looked up; an entry is used only
/// while the advertisement it was computed from is still the one stored (its stamp,
/// [`crate::bgp::rib::Rib::stamped`]: nothing is compared); a speaker's entries are dropped when it is wiped, all of them when the peering is
/// reconfigured.
///
/// It also keeps the last full table the speaker sent ([`TableBody`]): a full-mesh node
/// sends every peer the same table (its own blocks), which then is one shared body rather
/// than one per session; and a reflector's clients coming up while nothing it advertises
/// changes are sent that body without a walk of the table ([`Built`]); while only a few
/// prefixes changed, a client's table is the last one with those few computed again, the
/// others' entries kept without their views being looked up ([`TableViews::base`]). Their
/// receivers then apply it by the steps its earlier receivers took (`shared.rs`).
#[derive(Clone, Debug, Default)]
pub(super) struct TableViews {
    /// Inline, one view a row (most speakers send full tables to one profile), so a walk of
    /// the table reads the rows in order rather than following a pointer per prefix.
    by_prefix: Vec<SmallVec<[TableView; 1]>>,
    /// The views of a speaker that sends only its own prefixes, by prefix id (sorted): a
    /// few rows where `by_prefix` would hold one for every prefix of the cluster.
    own: Vec<(PrefixId, SmallVec<[TableView; 1]>)>,
    last_table: Option<Arc<UpdateBody>>,
    /// What `last_table` was built from, when it is the whole table of a profile (no path
    /// left out for the session it went to).
    last_built: Option<Built>,
}

/// What a full table was built from: the profile, the RIB's version (what was advertised,
/// [`crate::bgp::rib::Rib::version`]), and the sessions its paths may have been learned on,
/// which may not be sent it.
#[derive(Clone, Debug)]
pub(super) struct Built {
    profile: ProfileId,
    version: u64,
    /// Sorted; every session a path of the table was learned on, and possibly others (a
    /// table built on the last one keeps that one's sessions, whether or not their paths
    /// are still there): a session named here is only ever sent a table walked in full.
    learned_on: Vec<SessionId>,
}

impl Built {
    /// The RIB version the table was built at.
    pub(super) fn version(&self) -> u64 {
        self.version
    }

    /// What a table of `profile` at RIB version `version` was built from; `learned_on`
    /// holds the sessions its paths were learned on, and `on` (if the table was built on
    /// the last one, [`TableViews::base`]) what that one's were.
    pub(super) fn new(
        profile: ProfileId,
        version: u64,
        mut learned_on: Vec<SessionId>,
        on: Option<Built>,
    ) -> Built {
        let learned_on = match on {
            // A few sessions added to a sorted list of thousands.
            Some(Built {
                learned_on: mut kept,
                ..
            }) => {
                for y in learned_on {
                    if let Err(i) = kept.binary_search(&y) {
                        kept.insert(i, y);
                    }
                }
                kept
            }
            None => {
                learned_on.sort_unstable();
                learned_on.dedup();
                learned_on
            }
        };
        Built {
            profile,
            version,
            learned_on,
        }
    }
}

#[derive(Clone, Debug)]
struct TableView {
    profile: ProfileId,
    /// The stamp of the advertisement the view was computed from ([`Rib::stamped`]): the
    /// view holds exactly while the advertisement has that stamp, which is read without
    /// comparing (or even reading) the advertisement.
    ///
    /// [`Rib::stamped`]: crate::bgp::rib::Rib::stamped
    from: u64,
    view: SourcedView,
}

impl TableViews {
    /// The shared view for `profile` of `p`'s advertisement, stored at stamp `stamp`
    /// ([`crate::bgp::rib::Rib::stamped`]), computed by `compute` if not known yet for that
    /// stamp. `own_only`: the speaker sends only its own prefixes (kept apart).
    pub(super) fn get_or_compute(
        &mut self,
        p: PrefixId,
        profile: ProfileId,
        stamp: u64,
        own_only: bool,
        compute: impl FnOnce() -> SourcedView,
    ) -> &SourcedView {
        let kept = if own_only {
            let i = match self.own.binary_search_by_key(&p, |(q, _)| *q) {
                Ok(i) => i,
                Err(i) => {
                    self.own.insert(i, (p, SmallVec::new()));
                    i
                }
            };
            &mut self.own[i].1
        } else {
            if self.by_prefix.len() <= p.index() {
                self.by_prefix.resize_with(p.index() + 1, SmallVec::new);
            }
            &mut self.by_prefix[p.index()]
        };
        let i = match kept.iter().position(|t| t.profile == profile) {
            Some(i) => {
                if kept[i].from != stamp {
                    kept[i].view = compute();
                    kept[i].from = stamp;
                }
                i
            }
            None => {
                kept.push(TableView {
                    profile,
                    from: stamp,
                    view: compute(),
                });
                kept.len() - 1
            }
        };
        &kept[i].view
    }

    /// Starts the body of a full table, matched against the last one sent.
    pub(super) fn start_table(&mut self) -> TableBody {
        TableBody {
            last: self.last_table.take(),
            matched: 0,
            cursor: 0,
            own: None,
        }
    }

    /// What the last full table sent was built from, taken out, if a table of `profile`
    /// for session `x` can be built on it: it was the whole table of `profile` and none of
    /// its paths was learned on `x`. The table is then that one with the prefixes
    /// advertised since its version (stamps above it) computed again, the others' entries
    /// kept ([`TableBody::keep`]), and those no longer advertised left out: a reflector
    /// whose table grew by a few prefixes since its last client came up computes those
    /// few. Call before [`TableViews::start_table`]; the table built is sent with
    /// [`TableViews::sent_table`] (or the base is dropped).
    pub(super) fn base(&mut self, profile: ProfileId, x: SessionId) -> Option<Built> {
        let built = self.last_built.as_ref()?;
        let usable = self.last_table.is_some()
            && built.profile == profile
            && built.learned_on.binary_search(&x).is_err();
        if usable { self.last_built.take() } else { None }
    }

    /// Keeps `body` as the last full table sent, and what it was built from if it is the
    /// whole table of its profile (`built`).
    pub(super) fn sent_table(&mut self, body: &Arc<UpdateBody>, built: Option<Built>) {
        self.last_table = Some(body.clone());
        self.last_built = built;
    }

    /// The last full table sent, if it is the whole table of `profile` at RIB version
    /// `version` and none of its paths was learned on `x`: the table `x` is to be sent.
    pub(super) fn unchanged_table(
        &self,
        profile: ProfileId,
        version: u64,
        x: SessionId,
    ) -> Option<&Arc<UpdateBody>> {
        let built = self.last_built.as_ref()?;
        let unchanged = built.profile == profile
            && built.version == version
            && built.learned_on.binary_search(&x).is_err();
        self.last_table.as_ref().filter(|_| unchanged)
    }
}

/// One announced path of an UPDATE: prefix, path id, attributes.
type Announced = (PrefixId, PathId, Attrs);

/// The body of a full table being built, compared entry by entry with the last full table
/// the speaker sent: while they agree nothing is copied, and a table equal to the last one
/// (the same paths in the same order with the same attributes, by identity, and the same
/// End-of-RIB) is that body, shared. Bodies are never changed once sent, so sharing one is
/// the same as sending equal copies.
#[derive(Debug)]
pub(super) struct TableBody {
    last: Option<Arc<UpdateBody>>,
    /// How many leading entries of `last.announced` the table has matched, while `own` is
    /// `None`.
    matched: usize,
    /// Where [`TableBody::keep`] looks for the next prefix's entries in `last.announced`.
    cursor: usize,
    /// The table's entries, once they differ from `last`'s (or there is no `last`).
    own: Option<Vec<Announced>>,
}

impl TableBody {
    /// Adds one announced path.
    pub(super) fn push(&mut self, p: PrefixId, path: PathId, attrs: &Attrs) {
        if self.own.is_none() {
            if let Some(last) = &self.last
                && let Some((q, j, b)) = last.announced.get(self.matched)
                && (*q, *j) == (p, path)
                && Arc::ptr_eq(b, attrs)
            {
                self.matched += 1;
                return;
            }
            self.own = Some(self.matched_prefix());
        }
        if let Some(own) = &mut self.own {
            own.push((p, path, attrs.clone()));
        }
    }

    /// Adds `p`'s entries of the last table again, with the sessions they were learned
    /// on (`p`'s advertisement is the one that table was built from). Prefixes are given in
    /// increasing order, as the table walks them; entries of the last table for prefixes
    /// passed over are left out. While the table is still the last one, keeping entries
    /// copies nothing.
    pub(super) fn keep(&mut self, p: PrefixId) {
        let Some(last) = &self.last else { return };
        let entries = &last.announced;
        let mut i = self.cursor;
        while entries.get(i).is_some_and(|(q, _, _)| *q < p) {
            i += 1;
        }
        let start = i;
        while entries.get(i).is_some_and(|(q, _, _)| *q == p) {
            i += 1;
        }
        self.cursor = i;
        if start == i {
            return;
        }
        if self.own.is_none() && start == self.matched {
            self.matched = i;
            return;
        }
        let own = match &mut self.own {
            Some(own) => own,
            None => self.own.insert(self.matched_prefix()),
        };
        copy_entries(own, entries, start..i);
    }

    /// Whether no path was added.
    pub(super) fn is_empty(&self) -> bool {
        self.own.as_ref().map_or(self.matched == 0, Vec::is_empty)
    }

    /// The finished body: the last one if the table is the same, else a new one.
    pub(super) fn finish(mut self, end_of_rib: bool) -> Arc<UpdateBody> {
        if self.own.is_none()
            && let Some(last) = &self.last
            && last.announced.len() == self.matched
            && last.withdrawn.is_empty()
            && last.end_of_rib == end_of_rib
        {
            return last.clone();
        }
        let announced = match self.own.take() {
            Some(own) => own,
            None => self.matched_prefix(),
        };
        Arc::new(UpdateBody {
            withdrawn: Vec::new(),
            announced,
            end_of_rib,
        })
    }

    /// The entries of `last` matched so far, with room for as many as `last` has (a new
    /// table is mostly the last one).
    fn matched_prefix(&self) -> Vec<Announced> {
        let Some(last) = &self.last else {
            return Vec::new();
        };
        let mut own = Vec::with_capacity(last.announced.len() + 1);
        copy_entries(&mut own, &last.announced, 0..self.matched);
        own
    }
}

/// How many entries ahead of the one [`copy_entries`] copies it asks for the attributes'
/// line.
const COPY_AHEAD: usize = 8;

/// Appends `entries[range]` to `own`. Each copy counts one more holder of its attributes,
/// an atomic write to their allocation, which a reflector's table has thousands of, far
/// apart: a locked write waits for its line and keeps later reads from starting, so the
/// misses would come one after another. Asking for the line of the entry [`COPY_AHEAD`]
/// on (where the count usually is: it sits just before the attributes) overlaps them.
fn copy_entries(own: &mut Vec<Announced>, entries: &[Announced], range: Range<usize>) {
    for i in range {
        if let Some((_, _, ahead)) = entries.get(i + COPY_AHEAD) {
            prefetch_line(&**ahead);
        }
        own.push(entries[i].clone());
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

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use proptest::prelude::*;

    use super::*;
    use crate::bgp::rib::PathAttributes;

    /// Four attribute sets: 0 and 1 are equal but distinct allocations (a table with 1
    /// where the last had 0 is a different table: sharing goes by identity), 2 and 3
    /// differ.
    fn pool() -> Vec<Attrs> {
        let a = |n: u8| {
            Arc::new(PathAttributes::local(IpAddr::V4(Ipv4Addr::new(
                10, 0, 0, n,
            ))))
        };
        vec![a(1), a(1), a(2), a(3)]
    }

    type Entry = (u32, u16, usize);

    fn entries(pool: &[Attrs], e: &[Entry]) -> Vec<Announced> {
        e.iter()
            .map(|&(p, path, a)| (PrefixId(p), PathId(path), pool[a].clone()))
            .collect()
    }

    /// Same prefixes, paths and attributes (by identity), in the same order.
    fn identical(x: &[Announced], y: &[Announced]) -> bool {
        x.len() == y.len()
            && x.iter()
                .zip(y)
                .all(|((p, i, a), (q, j, b))| (p, i) == (q, j) && Arc::ptr_eq(a, b))
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (0u32..3, 0u16..2, 0usize..4)
    }

    proptest! {
        /// A table built against any last table is exactly the entries pushed with the
        /// End-of-RIB asked for, and is the last body itself exactly when that is identical.
        #[test]
        fn a_table_is_what_was_pushed_and_shares_only_an_identical_body(
            last in proptest::option::of((
                proptest::collection::vec(entry(), 0..5),
                proptest::collection::vec((0u32..3, 0u16..2), 0..2),
                any::<bool>(),
            )),
            pushed in proptest::collection::vec(entry(), 0..5),
            end_of_rib in any::<bool>(),
        ) {
            let pool = pool();
            let last = last.map(|(announced, withdrawn, eor)| {
                Arc::new(UpdateBody {
                    withdrawn: withdrawn
                        .into_iter()
                        .map(|(p, i)| (PrefixId(p), PathId(i)))
                        .collect(),
                    announced: entries(&pool, &announced),
                    end_of_rib: eor,
                })
            });
            let mut views = TableViews {
                last_table: last.clone(),
                ..TableViews::default()
            };
            let want = entries(&pool, &pushed);
            let mut body = views.start_table();
            prop_assert!(body.is_empty());
            for (p, i, a) in &want {
                body.push(*p, *i, a);
            }
            prop_assert_eq!(body.is_empty(), want.is_empty());
            let got = body.finish(end_of_rib);
            views.sent_table(&got, None);
            prop_assert!(identical(&got.announced, &want));
            prop_assert!(got.withdrawn.is_empty());
            prop_assert_eq!(got.end_of_rib, end_of_rib);
            let reusable = last.as_ref().is_some_and(|l| {
                identical(&l.announced, &want) && l.withdrawn.is_empty() && l.end_of_rib == end_of_rib
            });
            let shared = last.as_ref().is_some_and(|l| Arc::ptr_eq(l, &got));
            prop_assert_eq!(shared, reusable);
            // The table just sent is the one the next is matched against.
            prop_assert!(views.last_table.as_ref().is_some_and(|l| Arc::ptr_eq(l, &got)));
        }
    }

    /// What a table does with one prefix, in increasing prefix order: nothing (not
    /// advertised), its entries of the last table again, or entries of its own.
    #[derive(Clone, Debug)]
    enum Step {
        Skip,
        Keep,
        Push(Vec<(u16, usize)>),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            Just(Step::Skip),
            Just(Step::Keep),
            proptest::collection::vec((0u16..2, 0usize..4), 0..3).prop_map(Step::Push),
        ]
    }

    proptest! {
        /// A table built on the last one (entries kept by prefix, others pushed) is exactly
        /// the entries the simple walk would push — the last table's entries of each kept
        /// prefix, in order — and is the last body itself exactly when that is identical.
        #[test]
        fn a_table_built_on_the_last_is_the_table_walked_in_full(
            last in proptest::collection::vec(entry(), 0..8),
            steps in proptest::collection::vec(step(), 0..5),
            end_of_rib in any::<bool>(),
        ) {
            let pool = pool();
            // A full table lists its prefixes in order.
            let mut last = entries(&pool, &last);
            last.sort_by_key(|(p, i, _)| (*p, *i));
            last.dedup_by_key(|(p, i, _)| (*p, *i));
            let last = Arc::new(UpdateBody {
                withdrawn: Vec::new(),
                announced: last,
                end_of_rib: true,
            });
            let mut views = TableViews {
                last_table: Some(last.clone()),
                ..TableViews::default()
            };
            let mut body = views.start_table();
            let mut want: Vec<Announced> = Vec::new();
            for (p, step) in steps.iter().enumerate() {
                let p = PrefixId(p as u32);
                match step {
                    Step::Skip => {}
                    Step::Keep => {
                        want.extend(last.announced.iter().filter(|(q, _, _)| *q == p).cloned());
                        body.keep(p);
                    }
                    Step::Push(paths) => {
                        let mut paths = paths.clone();
                        paths.sort_unstable();
                        paths.dedup_by_key(|(i, _)| *i);
                        for (i, a) in paths {
                            want.push((p, PathId(i), pool[a].clone()));
                            body.push(p, PathId(i), &pool[a]);
                        }
                    }
                }
            }
            prop_assert_eq!(body.is_empty(), want.is_empty());
            let got = body.finish(end_of_rib);
            prop_assert!(identical(&got.announced, &want));
            prop_assert_eq!(got.end_of_rib, end_of_rib);
            let reusable = identical(&last.announced, &want) && end_of_rib;
            prop_assert_eq!(Arc::ptr_eq(&last, &got), reusable);
        }
    }

    /// A table is built on the last one only for its profile, when the last was the whole
    /// table and none of its paths was learned on the session; the sessions of a table
    /// built on another are those of both.
    #[test]
    fn a_table_is_built_on_the_last_only_where_that_was_the_whole_table() {
        let pool = pool();
        let mut views = TableViews::default();
        let mut body = views.start_table();
        body.push(PrefixId(7), PathId(0), &pool[2]);
        let body = body.finish(true);
        let built = Built::new(ProfileId(0), 5, vec![SessionId(9), SessionId(3)], None);
        views.sent_table(&body, Some(built));
        assert!(
            views.base(ProfileId(1), SessionId(4)).is_none(),
            "other profile"
        );
        assert!(
            views.base(ProfileId(0), SessionId(9)).is_none(),
            "9's paths"
        );
        let base = views
            .base(ProfileId(0), SessionId(4))
            .expect("the whole table");
        assert_eq!(base.version(), 5);
        assert!(views.base(ProfileId(0), SessionId(4)).is_none(), "taken");
        let built = Built::new(
            ProfileId(0),
            8,
            vec![SessionId(5), SessionId(3)],
            Some(base),
        );
        assert_eq!(built.learned_on, [SessionId(3), SessionId(5), SessionId(9)]);
        views.sent_table(&body, None);
        assert!(views.base(ProfileId(0), SessionId(4)).is_none(), "a part");
    }

    /// A view is computed once per prefix and profile while the advertisement (its stamp)
    /// stays the same, again when it changes, even to equal attributes; the rows of own
    /// prefixes and those indexed by prefix are apart, and each keeps any number of
    /// prefixes in any order.
    #[test]
    fn a_table_view_is_computed_once_per_advertisement() {
        let pool = pool();
        let profile = |add_paths| ProfileId(u32::from(add_paths));
        let mut views = TableViews::default();
        let computed = std::cell::Cell::new(0);
        // (prefix, add-paths, own-only, attributes, which are also the advertisement's
        // stamp): the view returned names them.
        let ask = |views: &mut TableViews, p: u32, ap: bool, own: bool, a: usize| {
            let view = views.get_or_compute(PrefixId(p), profile(ap), a as u64, own, || {
                computed.set(computed.get() + 1);
                let mut v = SourcedView::new();
                v.push((PathId(p as u16), pool[a].clone(), RouteSource::Local));
                v
            });
            assert_eq!(view.len(), 1);
            assert_eq!(view[0].0, PathId(p as u16));
            assert!(Arc::ptr_eq(&view[0].1, &pool[a]) || *view[0].1 == *pool[a]);
        };
        for (p, ap, own, a) in [
            (9, false, true, 2),
            (3, false, true, 2),
            (40, true, true, 2),
        ] {
            ask(&mut views, p, ap, own, a);
        }
        assert_eq!(computed.get(), 3);
        // The same again, and the same prefixes indexed: three more, once.
        for (p, ap, own, a) in [
            (3, false, true, 2),
            (9, false, true, 2),
            (40, true, true, 2),
        ] {
            ask(&mut views, p, ap, own, a);
        }
        for (p, ap, own, a) in [
            (3, false, false, 2),
            (9, false, false, 2),
            (3, false, false, 2),
        ] {
            ask(&mut views, p, ap, own, a);
        }
        assert_eq!(computed.get(), 5);
        // Another profile, another advertisement: computed; the same again: kept; another
        // advertisement with equal attributes (another stamp): computed.
        ask(&mut views, 3, true, true, 2);
        ask(&mut views, 9, false, true, 3);
        ask(&mut views, 9, false, true, 3);
        ask(&mut views, 3, false, false, 0);
        ask(&mut views, 3, false, false, 1);
        ask(&mut views, 3, false, false, 1);
        assert_eq!(computed.get(), 9);
        assert_eq!(
            views.own.iter().map(|(p, _)| p.0).collect::<Vec<_>>(),
            [3, 9, 40]
        );
    }

    /// The last table goes again, unwalked, only to a session of its profile, at its RIB
    /// version, on which none of its paths was learned, and only if it was the whole table.
    #[test]
    fn an_unchanged_table_goes_again_only_where_it_is_the_whole_table() {
        let pool = pool();
        let profile = |peer_as: u32| ProfileId(peer_as - 64512);
        let mut views = TableViews::default();
        let mut body = views.start_table();
        body.push(PrefixId(7), PathId(0), &pool[2]);
        let body = body.finish(true);
        let learned_on = vec![SessionId(9), SessionId(3), SessionId(9)];
        views.sent_table(&body, Some(Built::new(profile(64512), 5, learned_on, None)));
        let again = views.unchanged_table(profile(64512), 5, SessionId(4));
        assert!(again.is_some_and(|b| Arc::ptr_eq(b, &body)));
        assert!(
            views
                .unchanged_table(profile(64512), 6, SessionId(4))
                .is_none(),
            "changed since"
        );
        assert!(
            views
                .unchanged_table(profile(64513), 5, SessionId(4))
                .is_none(),
            "other profile"
        );
        for x in [3, 9] {
            assert!(
                views
                    .unchanged_table(profile(64512), 5, SessionId(x))
                    .is_none(),
                "{x}'s paths"
            );
        }
        views.sent_table(&body, None);
        assert!(
            views
                .unchanged_table(profile(64512), 5, SessionId(4))
                .is_none(),
            "a part"
        );
    }

    /// Equal profiles share one id, different ones (in any field) get their own, and an id
    /// stays what it was as others are added.
    #[test]
    fn equal_profiles_share_one_id() {
        let base = ExportProfile {
            add_paths: true,
            ebgp: false,
            peer_is_client: true,
            peer_as: 64512,
            shared_subnet: None,
            keep_next_hop: false,
            cluster_id: Some(IpAddr::V4(Ipv4Addr::new(1, 0, 0, 1))),
        };
        let others = [
            ExportProfile {
                add_paths: false,
                ..base
            },
            ExportProfile { ebgp: true, ..base },
            ExportProfile {
                peer_is_client: false,
                ..base
            },
            ExportProfile {
                peer_as: 64513,
                ..base
            },
            ExportProfile {
                shared_subnet: Some("10.0.0.0/24".parse().expect("net")),
                ..base
            },
            ExportProfile {
                keep_next_hop: true,
                ..base
            },
            ExportProfile {
                cluster_id: None,
                ..base
            },
        ];
        let mut profiles = ExportProfiles::default();
        let first = profiles.intern(base);
        let ids: Vec<ProfileId> = others.iter().map(|o| profiles.intern(*o)).collect();
        let mut distinct = ids.clone();
        distinct.push(first);
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), others.len() + 1);
        assert_eq!(profiles.intern(base), first);
        for (o, id) in others.iter().zip(&ids) {
            assert_eq!(profiles.intern(*o), *id);
        }
    }

    /// A full-mesh node's tables to its peers: the same block each time, one body.
    #[test]
    fn equal_tables_in_a_row_share_one_body() {
        let pool = pool();
        let mut views = TableViews::default();
        let mut sent = Vec::new();
        for _ in 0..3 {
            let mut body = views.start_table();
            body.push(PrefixId(7), PathId(0), &pool[2]);
            let body = body.finish(true);
            views.sent_table(&body, None);
            sent.push(body);
        }
        assert!(Arc::ptr_eq(&sent[0], &sent[1]) && Arc::ptr_eq(&sent[1], &sent[2]));
        // A different table in between: a new body, then another new one when it changes back.
        let mut body = views.start_table();
        body.push(PrefixId(7), PathId(0), &pool[3]);
        let other = body.finish(true);
        views.sent_table(&other, None);
        let mut body = views.start_table();
        body.push(PrefixId(7), PathId(0), &pool[2]);
        let back = body.finish(true);
        assert!(!Arc::ptr_eq(&other, &sent[0]) && !Arc::ptr_eq(&back, &other));
        assert!(!Arc::ptr_eq(&back, &sent[0]));
        assert_eq!(back.announced.len(), 1);
    }
}
