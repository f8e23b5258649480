//! Sending: what a speaker advertises, which sessions a change can reach (reflection rules),
//! the export filter and attributes per session (shared among sessions with the same
//! `ExportKey`), MRAI, flushes batched into one UPDATE per peer, full tables, and the
//! in-flight UPDATEs with their arrival times; what a speaker's flushes read of its
//! sessions is kept between flushes until the peering is reconfigured (`targets.rs`).
//!
//! ADD-PATH (RFC 7911): a session without it sees the best route of a prefix, one with it
//! (both ends Calico nodes, [`BgpEngine::add_paths`]) sees every candidate that passes the
//! same export rules, each under its own path id, as BIRD's `add paths tx` exports every
//! route of the table (`RA_ANY`) through `bgp_preexport` and the export filter. Both are a
//! session's *view* of a prefix: path id → attributes, at most one entry (id 0) without
//! ADD-PATH; a change goes out as the difference of two views.

use std::net::IpAddr;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::bgp::peering::{SessionState, SessionType};
use crate::bgp::policy::{
    ExportKey, ExportSession, RouteClass, calico_export_filter, export_attrs, may_send,
};
use crate::bgp::rib::{
    Advertised, Attrs, Held, LOCAL_TAG, PathId, PrefixId, RouteSource, offered_paths,
};
use crate::bgp::{SessionId, SpeakerId, rib};
use crate::model::hash::FastMap;
use crate::model::time::{SimDuration, SimTime};

use super::groups::{Built, Change, GroupViews, ProfileId, TableViews};
use super::targets::{Link, Visit};
use super::{
    Arrivals, BgpEngine, BgpEvent, BgpLogKind, Delivery, Scheduled, Update, UpdateBody, VISIT_ALL,
    VISIT_CLIENTS, VISIT_EBGP, VISIT_NON_CLIENTS,
};

/// Where a route learned over iBGP from a non-client can go (RFC 4456 §8): eBGP peers and
/// clients.
const REACH_FROM_NON_CLIENT: u8 = VISIT_EBGP | VISIT_CLIENTS;

/// How many targets ahead of the one a flush looks at it asks for the session lines of
/// ([`BgpEngine::prefetch_target`]): enough to cover a miss's latency with the few
/// nanoseconds each target costs (8 left some of the misses).
const TARGETS_AHEAD: usize = 16;

impl BgpEngine {
    /// Records that no peer sees `p` from `s` ("nothing" before and after), dropping the
    /// destination when nothing else is left in it.
    fn forget_advertised(&mut self, s: SpeakerId, p: PrefixId) {
        self.rt[s.index()].rib.set_advertised(p, None);
    }

    /// What the speaker would advertise for `p` now; `old` (what it advertised last) keeps
    /// the ADD-PATH path ids of the paths still there.
    pub(super) fn current_advertisement(
        &self,
        s: SpeakerId,
        p: PrefixId,
        old: Option<&Advertised>,
    ) -> Option<Advertised> {
        let d = self.destination(s, p);
        let best = d.best()?;
        let exportable = self.speakers[s.index()].is_router() || {
            let o = &self.outbound[s.index()];
            calico_export_filter(self.prefixes.net(p), &o.own, &o.statics, &self.pools).is_ok()
        };
        let paths = if self.offers_paths(s) {
            offered_paths(&d.routes, best.key(), old)
        } else {
            Box::default()
        };
        Some(Advertised {
            key: best.key(),
            attrs: best.attrs.clone(),
            exportable,
            paths,
        })
    }

    /// What `s` last advertised for `p` and what it would advertise now, or `None` when the
    /// two are the same (no peer can see a difference).
    fn advertisement_change(
        &self,
        s: SpeakerId,
        p: PrefixId,
    ) -> Option<(Option<Advertised>, Option<Advertised>)> {
        let old = self.rt[s.index()].rib.advertised(p).cloned();
        let new = self.current_advertisement(s, p, old.as_ref());
        (!Advertised::same(&old, &new)).then_some((old, new))
    }

    /// The session lists either version of an advertisement can go to: those that must
    /// hear of a change between them.
    fn visit_mask_of_both(
        &self,
        s: SpeakerId,
        old: &Option<Advertised>,
        new: &Option<Advertised>,
    ) -> u8 {
        self.visit_mask(s, old.as_ref()) | self.visit_mask(s, new.as_ref())
    }

    /// Which of the speaker's session lists a route learned from `source` can go to.
    fn reach(&self, s: SpeakerId, source: RouteSource) -> u8 {
        match self.class_of(s, source) {
            RouteClass::IbgpFromNonClient => REACH_FROM_NON_CLIENT,
            _ => VISIT_ALL,
        }
    }

    /// [`Self::reach`] of a route with `attrs`, by the export rules that hold for a whole
    /// list: no client is sent a route whose CLUSTER_LIST holds the speaker's cluster ID,
    /// which every client session of the speaker has (`export_session`, `policy::may_send`'s
    /// cluster-list loop). A reflector hearing a client's route again from its same-cluster
    /// partners (Calico's usual layout) has a new candidate for its ADD-PATH advertisement
    /// that none of its thousands of clients may get.
    fn reach_with(&self, s: SpeakerId, source: RouteSource, attrs: &Attrs) -> u8 {
        let reach = self.reach(s, source);
        match self.speakers[s.index()].cluster_id {
            Some(c) if attrs.cluster_list.contains(&c) => reach & !VISIT_CLIENTS,
            _ => reach,
        }
    }

    /// The session lists that can see a difference between `old` and `new`, two
    /// advertisements of one prefix by `s` ([`Self::visit_mask_of_both`] narrowed to what
    /// differs). A session without ADD-PATH is sent the best route alone, so it sees a
    /// difference only if the best route's source or attributes changed; one with ADD-PATH
    /// is sent each offered path on its own (`sourced_view`), so it sees one only in a path
    /// offered by one and not, or not alike, by the other. Both only where the export filter
    /// let both go: otherwise whatever either could send.
    fn change_mask(&self, s: SpeakerId, old: &Option<Advertised>, new: &Option<Advertised>) -> u8 {
        let (Some(o), Some(n)) = (old, new) else {
            return self.visit_mask_of_both(s, old, new);
        };
        if !(o.exportable && n.exportable) {
            return self.visit_mask_of_both(s, old, new);
        }
        let mut mask = 0;
        if o.key.source != n.key.source || !rib::same_attrs(&o.attrs, &n.attrs) {
            mask |= self.reach_with(s, o.key.source, &o.attrs);
            mask |= self.reach_with(s, n.key.source, &n.attrs);
        }
        let alone = |a: &Advertised, b: &Advertised| {
            a.offered()
                .filter(|(key, id, attrs)| {
                    !b.offered()
                        .any(|(k, i, at)| k == *key && i == *id && rib::same_attrs(at, attrs))
                })
                .fold(0, |m, (key, _, attrs)| {
                    m | self.reach_with(s, key.source, attrs)
                })
        };
        mask | alone(o, n) | alone(n, o)
    }

    /// Which of the speaker's session lists an advertisement can go to (its best route, and
    /// over ADD-PATH every path it offers).
    pub(super) fn visit_mask(&self, s: SpeakerId, adv: Option<&Advertised>) -> u8 {
        match adv {
            Some(a) if a.exportable => a
                .offered()
                .map(|(key, _, _)| key.source)
                .chain([a.key.source])
                .fold(0, |m, source| m | self.reach(s, source)),
            _ => 0,
        }
    }

    pub(super) fn masked_lists(&self, s: SpeakerId, mask: u8) -> u8 {
        let o = &self.outbound[s.index()];
        let mut m = 0;
        if !o.ebgp.is_empty() {
            m |= VISIT_EBGP;
        }
        if !o.clients.is_empty() {
            m |= VISIT_CLIENTS;
        }
        if !o.non_clients.is_empty() {
            m |= VISIT_NON_CLIENTS;
        }
        m & mask
    }

    /// Marks `p` for the next flush, unless no peer could see a difference, in which case
    /// the advertised state simply moves on (a full-mesh node receiving a route it passes to
    /// nobody costs nothing more).
    pub(in crate::bgp) fn schedule_export(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        out: &mut Scheduled,
    ) {
        if self.passes_on_nothing(s, p, self.table.get(s, p)) {
            return;
        }
        if self.outbound[s.index()].dirty.contains(&p) {
            return;
        }
        if !self.could_reach_a_peer(s, p) {
            // Every peer's view is "nothing" before and after (the export filter could only
            // narrow that further): a client of reflectors or a full-mesh node receiving a
            // route it passes to nobody costs nothing more.
            self.forget_advertised(s, p);
            return;
        }
        let Some((old, new)) = self.advertisement_change(s, p) else {
            return;
        };
        if self.masked_lists(s, self.visit_mask_of_both(s, &old, &new)) == 0 {
            // No session could see either version: every peer's view is "nothing" before
            // and after, which `None` records without keeping a copy.
            self.forget_advertised(s, p);
            return;
        }
        self.outbound[s.index()].dirty.insert(p);
        let r = &mut self.rt[s.index()];
        r.marked = true;
        // A speaker with more messages waiting sends once it has worked through them (BIRD
        // exports after its event loop drains its input), so a burst leaves as one UPDATE
        // per peer; `on_process_next` schedules the flush when the queue empties. (While a
        // message is applied, `processing` says whether others wait behind it.)
        let busy = r.processing;
        if !r.flush_scheduled && !busy {
            r.flush_scheduled = true;
            out.push((
                now,
                BgpEvent::Flush {
                    speaker: s,
                    incarnation: r.incarnation,
                },
            ));
        }
    }

    /// Whether the best route for `p` (over ADD-PATH any candidate), or what was last
    /// advertised for it, could go to any session of `s` by the reflection rules alone
    /// (before the export filter).
    pub(super) fn could_reach_a_peer(&self, s: SpeakerId, p: PrefixId) -> bool {
        let rib = &self.rt[s.index()].rib;
        let state = self.states.get(self.table.get(s, p));
        let tags = &self.rt[s.index()].tags;
        let reach = |h: &Held| match h.tag {
            LOCAL_TAG => self.reach(s, RouteSource::Local),
            _ if tags.plain => REACH_FROM_NON_CLIENT,
            tag => self.reach(s, tags.source(tag)),
        };
        let mut mask = if self.offers_paths(s) {
            state.held.iter().fold(0, |m, h| m | reach(h))
        } else {
            state.best().map_or(0, reach)
        };
        mask |= self.visit_mask(s, rib.advertised(p));
        self.masked_lists(s, mask) != 0
    }

    pub(super) fn class_of(&self, s: SpeakerId, source: RouteSource) -> RouteClass {
        match source {
            RouteSource::Local => RouteClass::Local,
            RouteSource::Peer(x) => {
                let sess = &self.sessions[x.index()];
                if sess.session_type == SessionType::Ebgp {
                    RouteClass::Ebgp
                } else if sess.side_of(s).is_some_and(|side| sess.reflects[side]) {
                    RouteClass::IbgpFromClient
                } else {
                    RouteClass::IbgpFromNonClient
                }
            }
        }
    }

    pub(super) fn export_session(&self, x: SessionId, side: usize) -> ExportSession {
        let sess = &self.sessions[x.index()];
        let peer_as = sess
            .peer_of(side)
            .map_or(0, |p| self.speakers[p.index()].as_number);
        ExportSession {
            id: x,
            ebgp: sess.session_type == SessionType::Ebgp,
            peer_is_client: sess.reflects[side],
            peer_as,
            shared_subnet: sess.shared_subnet,
            keep_next_hop: sess.keep_next_hop[side],
            cluster_id: if sess.reflects[side] {
                let me = if side == 0 { Some(sess.a) } else { sess.b };
                me.and_then(|m| self.speakers[m.index()].cluster_id)
            } else {
                None
            },
        }
    }

    /// What session `x` (speaker `s` at side `side`) is sent of `adv`, `s`'s advertisement
    /// of `p`: path id → attributes, by path id. Without ADD-PATH the best route under id 0,
    /// if the export rules let it go; with it every offered path they let go.
    pub(super) fn view(
        &self,
        s: SpeakerId,
        x: SessionId,
        side: usize,
        p: PrefixId,
        adv: Option<&Advertised>,
        exports: &mut ExportCache,
    ) -> View {
        let to = self.export_session(x, side);
        self.sourced_view(s, &to, self.add_paths(x), p, adv, exports)
            .into_iter()
            .map(|(id, a, _)| (id, a))
            .collect()
    }

    /// [`BgpEngine::view`] for the receiving end `to` (with or without ADD-PATH), each path
    /// with the source it was learned from. `to.id` may name no session
    /// (`groups::ANY_SESSION`): then no path is held back as learned on it, which is the
    /// view every session of that export profile shares but for the paths it provided.
    pub(super) fn sourced_view(
        &self,
        s: SpeakerId,
        to: &ExportSession,
        add_paths: bool,
        p: PrefixId,
        adv: Option<&Advertised>,
        exports: &mut ExportCache,
    ) -> SourcedView {
        let Some(adv) = adv.filter(|a| a.exportable) else {
            return SourcedView::new();
        };
        if !add_paths {
            let source = adv.key.source;
            return self
                .export_one(s, to, p, source, &adv.attrs, exports)
                .map(|a| (PathId(0), a, source))
                .into_iter()
                .collect();
        }
        let mut view: SourcedView = adv
            .offered()
            .filter_map(|(key, id, attrs)| {
                let a = self.export_one(s, to, p, key.source, attrs, exports)?;
                Some((id, a, key.source))
            })
            .collect();
        view.sort_unstable_by_key(|(id, _, _)| *id);
        view
    }

    /// The attributes speaker `s` sends for its route `attrs` learned from `source` (a
    /// candidate for `p`) to the receiving end `to`, or `None` if the export rules keep it
    /// back. `exports` is the speaker's [`ExportCache`] (taken out of its
    /// [`super::Outbound`] for the call): sessions with the same export inputs share one
    /// `Arc`, within one flush and across full tables sent later.
    pub(super) fn export_one(
        &self,
        s: SpeakerId,
        to: &ExportSession,
        p: PrefixId,
        source: RouteSource,
        attrs: &Attrs,
        exports: &mut ExportCache,
    ) -> Option<Attrs> {
        let me = &self.speakers[s.index()];
        let learned_on = match source {
            RouteSource::Local => None,
            RouteSource::Peer(y) => Some(y),
        };
        let key = may_send(
            me.is_router(),
            !self.outbound[s.index()].clients.is_empty(),
            self.class_of(s, source),
            learned_on,
            attrs,
            to,
        )
        .ok()?;
        if key.next_hop_self && learned_on.is_some() {
            self.next_hop_origins.rewritten();
        }
        let learned_from = match learned_on {
            None => me.router_id,
            Some(y) => {
                let sess = &self.sessions[y.index()];
                sess.side_of(s)
                    .and_then(|side| sess.peer_of(side))
                    .map_or(me.router_id, |p| self.speakers[p.index()].router_id)
            }
        };
        let inputs = ExportInputs {
            key,
            learned_from,
            ibgp_local_pref: self.ibgp_local_pref,
            router: me.is_router(),
            address: me.address,
            as_number: me.as_number,
            cluster_id: me.cluster_id,
        };
        let kept = exports.entry(p).or_default();
        if let Some(e) = kept
            .iter()
            .find(|e| e.inputs == inputs && Arc::ptr_eq(&e.from, attrs))
        {
            return Some(e.attrs.clone());
        }
        let from = attrs;
        let attrs = Arc::new(export_attrs(
            from,
            key,
            me,
            learned_from,
            self.ibgp_local_pref,
        ));
        if kept.len() >= EXPORTS_KEPT {
            kept.remove(0);
        }
        kept.push(Exported {
            from: from.clone(),
            inputs,
            attrs: attrs.clone(),
        });
        Some(attrs)
    }

    pub(super) fn mrai(&self, x: SessionId) -> SimDuration {
        match self.sessions[x.index()].session_type {
            SessionType::Ebgp => self.timers.mrai_ebgp,
            SessionType::Ibgp => self.timers.mrai_ibgp,
        }
    }

    /// Sends every change marked since the last flush, one UPDATE per peer.
    ///
    /// Session by session: each peer's body is built in one go from the prefixes' changes,
    /// computed once per export profile (`groups.rs`), and the peers of one profile that see
    /// every change as their group does (none of its paths was learned from them, nothing
    /// is held by MRAI) share one body built once — a reflector's flush to thousands of
    /// clients costs one body and a send per client, not a queued change per client and
    /// prefix.
    pub(super) fn flush(&mut self, now: SimTime, s: SpeakerId, out: &mut Scheduled) {
        self.rt[s.index()].marked = false;
        let dirty = std::mem::take(&mut self.outbound[s.index()].dirty);
        let mut exports = std::mem::take(&mut self.outbound[s.index()].exports);
        let mut changed: Vec<Changed> = Vec::new();
        let mut seen = 0;
        for p in dirty {
            let Some((old, new)) = self.advertisement_change(s, p) else {
                continue;
            };
            {
                let nowhere = self.masked_lists(s, self.visit_mask(s, new.as_ref())) == 0;
                let adv = if nowhere { None } else { new.clone() };
                self.rt[s.index()].rib.set_advertised(p, adv);
            }
            // The per-session reference of the property test visits every list either
            // version can go to.
            let mask = match self.update_groups {
                true => self.change_mask(s, &old, &new),
                false => self.visit_mask_of_both(s, &old, &new),
            };
            let mask = self.masked_lists(s, mask);
            seen |= mask;
            let groups = GroupViews::new(old.as_ref(), new.as_ref());
            changed.push(Changed {
                p,
                old,
                new,
                mask,
                groups,
            });
        }
        // The sessions that see some change (of a list in `seen`, Established), in id order,
        // with their list and their place in the lists' order (which orders MRAI timers armed
        // in one flush), and their export profiles: kept until the peering is reconfigured.
        let targets = self.send_targets(s);
        let learned_on: SmallVec<[SessionId; 8]> = changed
            .iter()
            .flat_map(|c| c.groups.learned_on())
            .copied()
            .collect();
        let mut shared: Vec<(Group, Option<Arc<UpdateBody>>)> = Vec::new();
        #[cfg(test)]
        let mut worked_out: Vec<Group> = Vec::new();
        let mut armed: Vec<((usize, usize), (SimTime, BgpEvent))> = Vec::new();
        let mut arrivals = Arrivals::default();
        let mut last: Option<Arc<UpdateBody>> = None;
        // The targets to visit, found in a pass of its own with what the sending reads of
        // their sessions: these reads do not wait on each other (or on the sending), so a
        // reflector's thousands of sessions are fetched together rather than one after
        // another. A session's latency does not change during a flush, nor what MRAI holds
        // for it but by its own visit (each session is visited once: its ends differ).
        let mut visit = std::mem::take(&mut self.send_cache.visit);
        visit.clear();
        // No list sees a change (say, a reflector's new candidate that none of its clients
        // may get): no target is looked at.
        let looked_at = if seen == 0 { &[][..] } else { &targets[..] };
        #[cfg(test)]
        {
            let counts = self.flushes.entry(s).or_default();
            counts.0 += 1;
            counts.1 += looked_at.len() as u64;
        }
        for (i, t) in looked_at.iter().enumerate() {
            // The reads below miss the cache once per target (a reflector's clients are
            // thousands of sessions, visited once per flush): asking for a later target's
            // lines now lets those misses overlap with this target's work.
            if let Some(ahead) = targets.get(i + TARGETS_AHEAD)
                && seen & ahead.bit != 0
            {
                self.prefetch_target(ahead.link.x);
            }
            let x = t.link.x;
            let r = &self.srt[x.index()];
            let up = self.up.is_up(x, r.epoch);
            #[cfg(test)]
            assert_eq!(
                up,
                self.sessions[x.index()].state == SessionState::Established,
                "UpEpochs::is_up in step with the session's state"
            );
            #[cfg(test)]
            assert_eq!(
                r.latency,
                self.sessions[x.index()].latency.unwrap_or_default(),
                "SessionRt::latency in step with the session's"
            );
            if seen & t.bit == 0 || !up {
                continue;
            }
            visit.push(Visit {
                target: *t,
                // Nothing held by MRAI.
                plain: self.link_mrai(&t.link) == SimDuration::ZERO
                    && r.held(t.link.side()).is_empty(),
                latency: r.latency,
            });
        }
        arrivals.expect(visit.len());
        for v in &visit {
            let t = &v.target;
            let (x, bit, place, side) = (t.link.x, t.bit, t.place as usize, t.link.side());
            let profile = self.update_groups.then_some(t.profile);
            // The body of the whole group: every change as computed for the profile.
            let group = profile.filter(|_| v.plain && !learned_on.contains(&x));
            if let Some(key) = group.map(|profile| (profile, bit))
                && let Some((_, body)) = shared.iter().find(|(k, _)| *k == key)
            {
                if let Some(body) = body.clone() {
                    self.send_on(now, s, (&t.link, v.latency), body, &mut arrivals);
                }
                continue;
            }
            #[cfg(test)]
            if let Some(key) = group.map(|profile| (profile, bit)) {
                self.group_bodies_repeated += u64::from(worked_out.contains(&key));
                worked_out.push(key);
            }
            let mut pending = PendingBody::default();
            for (k, c) in changed.iter_mut().enumerate() {
                if c.mask & bit == 0 {
                    continue;
                }
                let own;
                let list = match profile.filter(|_| !c.groups.alone(x)) {
                    Some(profile) => match c.groups.get(profile) {
                        Some(list) => list,
                        None => {
                            let list =
                                self.changes_for(s, x, side, c.p, (&c.old, &c.new), &mut exports);
                            c.groups.put(profile, list)
                        }
                    },
                    None => {
                        own = self.changes_for(s, x, side, c.p, (&c.old, &c.new), &mut exports);
                        &own[..]
                    }
                };
                for (path, e_old, e_new) in list {
                    let (e_old, e_new) = (e_old.clone(), e_new.clone());
                    let change = ((c.p, *path), e_old, e_new);
                    if let Some(timer) = self.queue_change(now, x, side, change, &mut pending) {
                        armed.push(((k, place), timer));
                    }
                }
            }
            if pending.is_empty() {
                if let Some(profile) = group {
                    shared.push(((profile, bit), None));
                }
                continue;
            }
            // Peers getting the same change share one body.
            let body = match last {
                Some(prev) if pending.same_as(&prev) => prev,
                _ => Arc::new(pending.into_body()),
            };
            if let Some(profile) = group {
                shared.push(((profile, bit), Some(body.clone())));
            }
            self.send_on(now, s, (&t.link, v.latency), body.clone(), &mut arrivals);
            last = Some(body);
        }
        self.send_cache.visit = visit;
        if !self.rt[s.index()].tags.plain {
            // A plain speaker flushes only its own prefixes, rarely: its targets (a mesh
            // node's are every other node) are not worth their memory.
            self.send_cache.put_targets(s, targets);
        }
        self.outbound[s.index()].exports = exports;
        // MRAI timers armed in the order the changes were queued: prefix by prefix, each
        // to its sessions in the lists' order.
        armed.sort_unstable_by_key(|(order, _)| *order);
        out.extend(armed.into_iter().map(|(_, timer)| timer));
        self.dispatch(arrivals, out);
    }

    /// What changes for session `x` (speaker `s` at side `side`) when `s`'s advertisement of
    /// `p` goes from `old` to `new`.
    fn changes_for(
        &self,
        s: SpeakerId,
        x: SessionId,
        side: usize,
        p: PrefixId,
        (old, new): (&Option<Advertised>, &Option<Advertised>),
        exports: &mut ExportCache,
    ) -> Vec<Change> {
        let v_old = self.view(s, x, side, p, old.as_ref(), exports);
        let v_new = self.view(s, x, side, p, new.as_ref(), exports);
        changes(v_old, v_new)
    }

    /// Decides whether one path's change (a prefix and path id: before, after) goes to one
    /// peer now, into `batch`, is held by MRAI, or is no change for that peer at all; the
    /// MRAI timer it arms, if any.
    fn queue_change(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        (p, e_old, e_new): ((PrefixId, PathId), Option<Attrs>, Option<Attrs>),
        batch: &mut PendingBody,
    ) -> Option<(SimTime, BgpEvent)> {
        let mrai = self.mrai(x);
        let r = &mut self.srt[x.index()];
        let peer_view = match r.held(side).get(&p) {
            Some(v) => v.clone(),
            None => e_old,
        };
        if same_attrs(&peer_view, &e_new) {
            r.unhold(side, &p);
            return None;
        }
        let hold = mrai > SimDuration::ZERO && e_new.is_some() && now < r.rare().mrai_until[side];
        if hold {
            let epoch = r.epoch;
            let r = r.rare_mut();
            r.held[side].insert(p, peer_view);
            if !r.mrai_armed[side] {
                r.mrai_armed[side] = true;
                let timer = BgpEvent::MraiExpired {
                    session: x,
                    side: side as u8,
                    epoch,
                };
                return Some((r.mrai_until[side], timer));
            }
            return None;
        }
        r.unhold(side, &p);
        match e_new {
            Some(a) => batch.announced.push((p.0, p.1, a)),
            None => batch.withdrawn.push(p),
        }
        None
    }

    pub(super) fn on_mrai_expired(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        epoch: u32,
        out: &mut Scheduled,
    ) {
        let r = &mut self.srt[x.index()];
        if r.epoch != epoch || side > 1 {
            return;
        }
        let rare = r.rare_mut();
        rare.mrai_armed[side] = false;
        let held = std::mem::take(&mut rare.held[side]);
        let sess = &self.sessions[x.index()];
        let s = if side == 0 { Some(sess.a) } else { sess.b };
        let Some(s) = s else { return };
        if sess.state != SessionState::Established || !self.rt[s.index()].up {
            return;
        }
        let mut batch = UpdateBody::default();
        let mut exports = std::mem::take(&mut self.outbound[s.index()].exports);
        for ((p, path), peer_view) in held {
            let adv = self.rt[s.index()].rib.advertised(p).cloned();
            let now_view = self
                .view(s, x, side, p, adv.as_ref(), &mut exports)
                .into_iter()
                .find(|(id, _)| *id == path)
                .map(|(_, a)| a);
            if same_attrs(&peer_view, &now_view) {
                continue;
            }
            match now_view {
                Some(a) => batch.announced.push((p, path, a)),
                None => batch.withdrawn.push((p, path)),
            }
        }
        self.outbound[s.index()].exports = exports;
        self.send_one(now, s, x, batch, out);
    }

    /// Sends side `side` of `x` its full table, as one UPDATE among `arrivals`.
    pub(super) fn full_table(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        arrivals: &mut Arrivals,
    ) {
        // Full tables go when the session comes up (`on_established`), and only then.
        self.up.came_up(x, self.srt[x.index()].epoch);
        let sess = &self.sessions[x.index()];
        let s = if side == 0 { Some(sess.a) } else { sess.b };
        let Some(s) = s else { return };
        // Update groups (`groups.rs`): each prefix's view shared by the profile, minus the
        // paths learned on `x` itself (the only paths `x` would not be sent), and a table
        // equal to the last one sent shares its body — without a walk while nothing was
        // advertised since for the same profile.
        let grouped = self.update_groups.then(|| {
            let (any, add_paths, profile) = self.shared_end(x, side);
            (any, add_paths, self.send_cache.profiles.intern(profile))
        });
        let mut exports = std::mem::take(&mut self.outbound[s.index()].exports);
        let (r, o) = (&self.rt[s.index()], &self.outbound[s.index()]);
        // A plain iBGP speaker (no clients, no eBGP) passes on nothing it learned: only its
        // own prefixes can go, which spares a full-mesh node a walk of its whole table.
        let own_only = o.clients.is_empty() && o.ebgp.is_empty();
        let version = r.rib.version();
        if let Some((_, _, profile)) = &grouped
            && let Some(body) = o.table_views.unchanged_table(*profile, version, x)
        {
            let body = body.clone();
            self.outbound[s.index()].exports = exports;
            self.send(now, s, x, body, arrivals);
            return;
        }
        #[cfg(test)]
        {
            self.full_tables_built += u64::from(!own_only);
        }
        let mut tables = match grouped {
            Some(_) => std::mem::take(&mut self.outbound[s.index()].table_views),
            None => TableViews::default(),
        };
        // The last table of this profile, when this one can be built on it (`groups.rs`):
        // the prefixes advertised since its version are computed, the others kept.
        let base = match &grouped {
            Some((_, _, profile)) if !own_only => tables.base(*profile, x),
            _ => None,
        };
        let since = base.as_ref().map(Built::version);
        let mut body = tables.start_table();
        // The sessions the table's paths were learned on, and whether some were `x`'s.
        let (mut learned_on, mut own) = (Vec::new(), false);
        let (r, o) = (&self.rt[s.index()], &self.outbound[s.index()]);
        let mut add = |p: PrefixId, stamped: Option<(&Advertised, u64)>| match &grouped {
            Some((any, add_paths, profile)) => {
                let Some((adv, stamp)) = stamped else { return };
                if since.is_some_and(|v| stamp <= v) {
                    // Advertised as it was when the base table was built.
                    body.keep(p);
                    return;
                }
                let view = tables.get_or_compute(p, *profile, stamp, own_only, || {
                    self.sourced_view(s, any, *add_paths, p, Some(adv), &mut exports)
                });
                for (path, a, source) in view {
                    match *source {
                        RouteSource::Peer(y) if y == x => {
                            own = true;
                            continue;
                        }
                        RouteSource::Peer(y) => learned_on.push(y),
                        RouteSource::Local => {}
                    }
                    body.push(p, *path, a);
                }
            }
            None => {
                let adv = stamped.map(|(a, _)| a);
                for (path, a) in self.view(s, x, side, p, adv, &mut exports) {
                    body.push(p, path, &a);
                }
            }
        };
        if own_only {
            for p in &o.originated {
                add(*p, r.rib.stamped(*p));
            }
        } else {
            for (p, adv, stamp) in r.rib.stamped_advertisements() {
                add(p, Some((adv, stamp)));
            }
        }
        // End-of-RIB rides on the table; alone only when a peer waits for it (`restart.rs`).
        let end_of_rib = !body.is_empty() || self.restart_wants_end_of_rib(x, side);
        let complete = !own && !body.is_empty();
        let body = body.finish(end_of_rib);
        self.outbound[s.index()].exports = exports;
        if let Some((_, _, profile)) = grouped {
            let built = complete.then(|| Built::new(profile, version, learned_on, base));
            tables.sent_table(&body, built);
            self.outbound[s.index()].table_views = tables;
        }
        self.send(now, s, x, body, arrivals);
    }

    /// Sends one UPDATE on its own.
    pub(super) fn send_one(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        x: SessionId,
        body: UpdateBody,
        out: &mut Scheduled,
    ) {
        let mut arrivals = Arrivals::default();
        self.send(now, s, x, Arc::new(body), &mut arrivals);
        self.dispatch(arrivals, out);
    }

    /// Schedules one `Deliver` per arrival instant.
    pub(super) fn dispatch(&mut self, arrivals: Arrivals, out: &mut Scheduled) {
        for (at, deliveries) in arrivals.groups {
            let batch = self.in_flight.put(deliveries);
            out.push((at, BgpEvent::Deliver { batch }));
        }
    }

    /// Puts an UPDATE from `s` on session `x` on its way: it arrives after the session's
    /// one-way latency, never before an earlier message on the same session.
    pub(super) fn send(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        x: SessionId,
        body: Arc<UpdateBody>,
        arrivals: &mut Arrivals,
    ) {
        if body.is_empty() {
            return;
        }
        let Some(link) = self.link(s, x) else { return };
        let latency = self.sessions[x.index()].latency.unwrap_or_default();
        self.send_on(now, s, (&link, latency), body, arrivals);
    }

    /// [`BgpEngine::send`] on a session whose side, peer, MRAI and one-way latency now are
    /// known. Inlined in the flush's loop over its targets (one call per message sent).
    #[inline(always)]
    fn send_on(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        (link, latency): (&Link, SimDuration),
        body: Arc<UpdateBody>,
        arrivals: &mut Arrivals,
    ) {
        if body.is_empty() {
            return;
        }
        let (x, side, to, mrai) = (link.x, link.side(), link.to, self.link_mrai(link));
        let r = &mut self.srt[x.index()];
        if mrai > SimDuration::ZERO && !body.announced.is_empty() {
            r.rare_mut().mrai_until[side] = now + mrai;
        }
        let arrival = (now + latency).max(r.last_arrival[side]);
        r.last_arrival[side] = arrival;
        let update = Update {
            session: x,
            epoch: r.epoch,
            from: s,
            to,
            body,
        };
        if self.options.updates {
            self.note_update(now, &update);
        } else {
            self.last_activity = self.last_activity.max(now);
        }
        self.outbound[s.index()].sent += 1;
        self.total_updates += 1;
        arrivals.add(arrival, Delivery { update });
    }

    /// Logs `update` as it leaves (with `--events all` only, so kept out of
    /// [`Self::send_on`], which every message goes through).
    #[cold]
    #[inline(never)]
    fn note_update(&mut self, now: SimTime, update: &Update) {
        let subject = format!("{} -> {}", self.name(update.from), self.name(update.to));
        let outcome = self.describe_update(update);
        self.note(now, BgpLogKind::Update, subject, outcome);
    }
}

/// An update group within one flush: the sessions of one export profile in one of the
/// speaker's lists (its bit), that see every change as the group does. Per group a flush
/// keeps the body its sessions get, or `None` when the changes are none of theirs: what one
/// session of a group gets, every one does.
type Group = (ProfileId, u8);

/// An UPDATE body being built by a flush; most carry one prefix, so no allocation until
/// it becomes a shared [`UpdateBody`].
#[derive(Debug, Default)]
struct PendingBody {
    withdrawn: SmallVec<[(PrefixId, PathId); 2]>,
    announced: SmallVec<[(PrefixId, PathId, Attrs); 2]>,
}

impl PendingBody {
    /// The same prefixes with the same attributes (compared by identity: bodies built in
    /// one flush share their attributes).
    fn same_as(&self, other: &UpdateBody) -> bool {
        self.withdrawn[..] == other.withdrawn[..]
            && self.announced.len() == other.announced.len()
            && self
                .announced
                .iter()
                .zip(&other.announced)
                .all(|((p, i, a), (q, j, b))| p == q && i == j && Arc::ptr_eq(a, b))
    }

    fn is_empty(&self) -> bool {
        self.withdrawn.is_empty() && self.announced.is_empty()
    }

    fn into_body(self) -> UpdateBody {
        UpdateBody {
            withdrawn: self.withdrawn.into_vec(),
            announced: self.announced.into_vec(),
            end_of_rib: false,
        }
    }
}

/// One prefix's change in a flush: the advertisement before and after, the session lists
/// that see it, and its changes per export profile.
struct Changed {
    p: PrefixId,
    old: Option<Advertised>,
    new: Option<Advertised>,
    mask: u8,
    groups: GroupViews,
}

/// A session's view of one prefix: path id → exported attributes, by path id; at most one
/// entry (id 0) on a session without ADD-PATH.
pub(super) type View = SmallVec<[(PathId, Attrs); 1]>;

/// A [`View`] with the source each path was learned from.
pub(super) type SourcedView = SmallVec<[(PathId, Attrs, RouteSource); 1]>;

/// Every path id in `old` or `new` whose attributes differ: (id, before, after).
fn changes(old: View, new: View) -> Vec<Change> {
    let mut out = Vec::new();
    let (mut old, mut new) = (old.into_iter().peekable(), new.into_iter().peekable());
    loop {
        let next = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some((i, _)), Some((j, _))) if i == j => {
                let (i, a) = old.next().expect("peeked");
                let (_, b) = new.next().expect("peeked");
                (i, Some(a), Some(b))
            }
            (Some((i, _)), Some((j, _))) if i > j => {
                let (j, b) = new.next().expect("peeked");
                (j, None, Some(b))
            }
            (Some(_), _) => {
                let (i, a) = old.next().expect("peeked");
                (i, Some(a), None)
            }
            (None, Some(_)) => {
                let (j, b) = new.next().expect("peeked");
                (j, None, Some(b))
            }
        };
        if !same_attrs(&next.1, &next.2) {
            out.push(next);
        }
    }
    out
}

fn same_attrs(a: &Option<Attrs>, b: &Option<Attrs>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => rib::same_attrs(x, y),
        _ => false,
    }
}

/// What a speaker exported, per prefix: each distinct exported attribute set built once and
/// shared by every session (and every later full table) with the same inputs. Without it a
/// reflector's full table to each client built its own copy of every route, so the clients'
/// Adj-RIBs-In held one attribute allocation per (client, route) instead of per route.
/// Entries check their inputs and the identity of what they were built from, so a stale
/// entry is never used, only dropped (oldest first, beyond [`EXPORTS_KEPT`] per prefix).
pub(super) type ExportCache = FastMap<PrefixId, SmallVec<[Exported; 2]>>;

/// Entries an [`ExportCache`] keeps per prefix: enough for the old and the new
/// advertisement of a flush, each under every export key.
const EXPORTS_KEPT: usize = 8;

/// One exported attribute set with what it was built from.
#[derive(Clone, Debug)]
pub(super) struct Exported {
    /// The advertised attributes it was built from (held, so the identity cannot be reused).
    from: Attrs,
    inputs: ExportInputs,
    attrs: Attrs,
}

/// Everything besides the advertised attributes that `export_attrs` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ExportInputs {
    key: ExportKey,
    learned_from: IpAddr,
    ibgp_local_pref: Option<u32>,
    router: bool,
    address: IpAddr,
    as_number: u32,
    cluster_id: Option<IpAddr>,
}
