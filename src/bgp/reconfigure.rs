//! Changing who peers with whom during a run: a `BGPPeer` applied or deleted, the
//! `BGPConfiguration` changed, nodes added (SPEC §3.4, REFERENCE §4.3).
//!
//! Calico's confd regenerates BIRD's configuration from the whole current state and BIRD
//! reconfigures: a protocol (one session) present in the old and the new configuration with
//! the same options keeps running, one whose options changed restarts, one that is gone shuts
//! down, a new one starts. [`BgpEngine::reconfigure`] does the same between the plan the engine
//! runs and a new [`Peering`] planned from the current configuration.
//!
//! Matching, made deterministic by walking the new plan in its order and the old sessions in
//! id order:
//! - Speakers are matched by device. A known speaker keeps its id and its runtime state (up or
//!   down, RIB, originated prefixes) and takes the new plan's AS number and cluster ID. A new
//!   one (a node added by `addNodes`) is appended, up, with an empty RIB. A live speaker the
//!   new plan lacks is removed as `deleteNode` removes it.
//! - A session is identified by its two ends, whichever is `a`: both speakers' devices, or a
//!   speaker's device and the peer address that belongs to no speaker. Its parameters are what
//!   BIRD's protocol options are made of: the session type, who reflects to whom,
//!   `keepOriginalNextHop`, single-hop link and shared subnet, both ends' AS numbers and
//!   cluster IDs, where it comes from (mesh, a `BGPPeer` or the fabric: Calico names the BIRD
//!   protocols of mesh peers and of `BGPPeer`s differently), and a permanent reason it cannot
//!   come up (a wrong `asNumber`).
//! - Same ends, same parameters: kept untouched — same id, state, epoch and messages in
//!   flight, so it does not flap; only the `BGPPeer` name it is credited to follows the plan.
//! - Same ends, other parameters: reset in place — it goes down (routes learned on it are
//!   withdrawn), takes the new parameters and connects again after the connect delay, keeping
//!   its id.
//! - Only in the old plan: it goes down for good, Idle with [`IdleReason::Unconfigured`]. It
//!   keeps its slot, because session ids index vectors and events in flight name them (their
//!   epoch, bumped when it went down, makes them stale); reports leave it out. If a later
//!   change brings the same pair back, that is a new session with a new id.
//! - Only in the new plan: appended with the next id, connecting after the connect delay.
//!
//! Every speaker whose session lists changed re-evaluates what it advertises, so a session
//! that comes up later gets a full table even from a speaker that had nobody to tell before.
//!
//! This module does not plan: the simulator calls [`super::plan`] on its current
//! configuration and topology, and names the cause for the log.

use std::collections::HashMap;
use std::net::IpAddr;

use super::engine::{BgpEngine, BgpLogEntry, BgpLogKind, Scheduled, SpeakerRt, file_session};
use super::peering::{IdleReason, Peering, Session, SessionSource, SessionState, Speaker};
use super::{SessionId, SpeakerId};
use crate::model::time::SimTime;
use crate::model::topology::{DeviceId, Topology};

/// One end of a session: a speaker (by device) or an address nobody speaks BGP at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum End {
    Speaker(DeviceId),
    Address(IpAddr),
}

/// The session lists of one speaker, for noticing which speakers gained or lost peers.
type Lists = [Vec<SessionId>; 3];

impl BgpEngine {
    /// Moves the running engine to `peering`, a plan of the current configuration over the
    /// current `topology`; `cause` (e.g. "BGPPeer rr-peers deleted") is quoted in the log.
    /// See the module documentation for what is kept, reset, removed and added.
    pub fn reconfigure(
        &mut self,
        now: SimTime,
        topology: &Topology,
        peering: Peering,
        cause: &str,
    ) -> Scheduled {
        let mut out = Vec::new();
        // Nodes may have joined: next hops and paths are resolved over the topology as it is.
        // The session list changes: its latencies are measured afresh at the next link event.
        self.underlay.update(topology);
        self.underlay.forget_sessions();
        let Peering {
            speakers: new_speakers,
            sessions: new_sessions,
        } = peering;

        // Speakers the new plan lacks (none while only deleted nodes are left out).
        let planned: HashMap<DeviceId, usize> = new_speakers
            .iter()
            .enumerate()
            .map(|(i, s)| (s.device, i))
            .collect();
        let gone: Vec<DeviceId> = self
            .speakers
            .iter()
            .filter(|s| !self.rt[s.id.index()].removed && !planned.contains_key(&s.device))
            .map(|s| s.device)
            .collect();
        for device in gone {
            out.extend(self.speaker_removed(now, device));
        }

        // New plan's speaker index → the engine's id (existing or to be appended).
        let mut next = self.speakers.len() as u32;
        let map: Vec<SpeakerId> = new_speakers
            .iter()
            .map(|s| match self.by_device.get(&s.device) {
                Some(&id) => id,
                None => {
                    next += 1;
                    SpeakerId(next - 1)
                }
            })
            .collect();

        // Sessions: match by ends, keep, reset or add.
        let live: HashMap<(End, End), SessionId> = self
            .sessions
            .iter()
            .filter(|s| !s.reason.as_deref().is_some_and(IdleReason::is_gone))
            .map(|s| (self.ends_of(s), s.id))
            .collect();
        let mut matched = vec![false; self.sessions.len()];
        let mut resets: Vec<(SessionId, Session, String)> = Vec::new();
        let mut added: Vec<Session> = Vec::new();
        for mut s in new_sessions {
            let ends = order(
                End::Speaker(new_speakers[s.a.index()].device),
                match s.b {
                    Some(b) => End::Speaker(new_speakers[b.index()].device),
                    None => End::Address(s.b_address),
                },
            );
            s.a = map[s.a.index()];
            s.b = s.b.map(|b| map[b.index()]);
            match live.get(&ends) {
                Some(&x) => {
                    matched[x.index()] = true;
                    let changes = self.changes(x, &s, &new_speakers, &planned);
                    if changes.is_empty() {
                        self.sessions[x.index()].source = s.source;
                    } else {
                        resets.push((x, s, changes.join(", ")));
                    }
                }
                None => added.push(s),
            }
        }

        // Removed sessions go down first, under the configuration they ran with.
        let removed: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|s| !matched[s.id.index()])
            .filter(|s| !s.reason.as_deref().is_some_and(IdleReason::is_gone))
            .map(|s| s.id)
            .collect();
        for x in removed {
            let reason = IdleReason::Unconfigured {
                cause: cause.to_string(),
            };
            self.take_down(now, x, reason, &mut out);
        }
        for (x, _, changes) in &resets {
            let reason = IdleReason::Reconfigured {
                cause: format!("{cause} ({changes})"),
            };
            self.take_down(now, *x, reason, &mut out);
        }

        // Speakers take the new parameters; new ones join.
        for (i, mut s) in new_speakers.into_iter().enumerate() {
            let id = map[i];
            s.id = id;
            match self.speakers.get(id.index()) {
                Some(old) => {
                    s.up = old.up;
                    self.rt[id.index()].router_id = Some(s.router_id);
                    self.speakers[id.index()] = s;
                }
                None => {
                    let mut rt = SpeakerRt::default();
                    rt.up = s.up;
                    rt.router_id = Some(s.router_id);
                    self.push_records(rt);
                    self.by_device.insert(s.device, id);
                    self.by_address.entry(s.address).or_insert(id);
                    self.log.push(BgpLogEntry {
                        time: now,
                        kind: BgpLogKind::SpeakerUp,
                        subject: s.name.clone(),
                        outcome: format!("starts speaking BGP: {cause}"),
                    });
                    self.last_state_change = now;
                    self.speakers.push(s);
                }
            }
        }

        // Sessions take their new parameters (reset) or join (added).
        let mut starting: Vec<SessionId> = Vec::new();
        for (x, mut s, _) in resets {
            let old = &self.sessions[x.index()];
            s.id = x;
            s.state = SessionState::Idle;
            if s.reason.as_ref().is_none_or(|r| !r.is_permanent()) {
                s.reason = old.reason.clone();
                starting.push(x);
            }
            self.sessions[x.index()] = s;
            self.track_latency(x);
        }
        for mut s in added {
            let x = SessionId(self.sessions.len() as u32);
            s.id = x;
            s.state = SessionState::Idle;
            if s.reason.as_ref().is_none_or(|r| !r.is_permanent()) {
                starting.push(x);
            }
            self.sessions.push(s);
            self.srt.push(Default::default());
            self.idle_since.push(SimTime::ZERO);
            self.track_latency(x);
        }

        // Session lists follow; speakers with new peers re-evaluate what they advertise.
        // Shared full-table views were computed from the old parameters (`engine/groups.rs`).
        self.forget_table_views();
        let before = self.rebuild_lists();
        self.rename_sources();
        for (s, lists) in before.into_iter().enumerate() {
            let (r, o) = (&self.rt[s], &self.outbound[s]);
            let same = lists[0] == o.ebgp && lists[1] == o.clients && lists[2] == o.non_clients;
            if !r.up || r.removed || same {
                continue;
            }
            for p in self.prefixes_of(SpeakerId(s as u32)) {
                self.schedule_export(now, SpeakerId(s as u32), p, &mut out);
            }
        }

        for x in starting {
            self.idle_since[x.index()] = now;
            let at = self.connect_at(now, x);
            self.connect(now, x, at, &mut out);
        }
        out
    }

    /// Ends a session that is being removed or reset: an Established or connecting one goes
    /// down (logged, routes withdrawn), an Idle one just takes the reason.
    fn take_down(&mut self, now: SimTime, x: SessionId, reason: IdleReason, out: &mut Scheduled) {
        if self.sessions[x.index()].state == SessionState::Idle {
            self.set_idle(now, x, reason);
        } else {
            self.session_down(now, x, reason, out);
        }
    }

    /// The session's ends, in a fixed order.
    fn ends_of(&self, s: &Session) -> (End, End) {
        let a = End::Speaker(self.speakers[s.a.index()].device);
        let b = match s.b {
            Some(b) => End::Speaker(self.speakers[b.index()].device),
            None => End::Address(s.b_address),
        };
        order(a, b)
    }

    /// How the planned session `new` (its speakers already engine ids) differs from the
    /// running session `x`, in words; empty when BIRD would keep it running.
    fn changes(
        &self,
        x: SessionId,
        new: &Session,
        new_speakers: &[Speaker],
        planned: &HashMap<DeviceId, usize>,
    ) -> Vec<String> {
        let old = &self.sessions[x.index()];
        let mut out = Vec::new();
        // Sides of `new` in the order of `old`'s (a plan may name the ends the other way).
        let flipped = old.a != new.a;
        let side = |arr: [bool; 2]| if flipped { [arr[1], arr[0]] } else { arr };
        let kind = |s: &SessionSource| match s {
            SessionSource::Mesh => "the node-to-node mesh".to_string(),
            SessionSource::Peer(name) => format!("BGPPeer {name}"),
            SessionSource::Fabric => "the fabric".to_string(),
        };
        if std::mem::discriminant(&old.source) != std::mem::discriminant(&new.source) {
            out.push(format!(
                "now from {} instead of {}",
                kind(&new.source),
                kind(&old.source)
            ));
        }
        for end in std::iter::once(old.a).chain(old.b) {
            let was = &self.speakers[end.index()];
            let Some(&i) = planned.get(&was.device) else {
                continue;
            };
            let now = &new_speakers[i];
            if was.as_number != now.as_number {
                out.push(format!(
                    "{} AS {} → {}",
                    was.name, was.as_number, now.as_number
                ));
            }
            if was.cluster_id != now.cluster_id {
                let show = |c: Option<IpAddr>| c.map_or("none".to_string(), |c| c.to_string());
                out.push(format!(
                    "{} cluster ID {} → {}",
                    was.name,
                    show(was.cluster_id),
                    show(now.cluster_id)
                ));
            }
        }
        if old.session_type != new.session_type {
            out.push(format!(
                "{} → {}",
                old.session_type.as_str(),
                new.session_type.as_str()
            ));
        }
        if old.reflects != side(new.reflects) {
            out.push("route-reflector client relation changed".to_string());
        }
        if old.keep_next_hop != side(new.keep_next_hop) {
            out.push("keepOriginalNextHop changed".to_string());
        }
        // BIRD restarts a protocol whose `graceful restart time` changed (`bgp_reconfigure`).
        if old.restart_time != new.restart_time {
            out.push(format!(
                "graceful restart time {} → {}",
                old.restart_time, new.restart_time
            ));
        }
        if old.multihop != new.multihop
            || old.link != new.link
            || old.shared_subnet != new.shared_subnet
        {
            out.push("transport changed".to_string());
        }
        let permanent =
            |r: &Option<Box<IdleReason>>| r.as_ref().filter(|r| r.is_permanent()).cloned();
        match (permanent(&old.reason), permanent(&new.reason)) {
            (a, b) if a == b => {}
            (_, Some(now)) => out.push(now.to_string()),
            (Some(was), None) => out.push(format!("no longer \"{was}\"")),
            (None, None) => {}
        }
        out
    }

    /// Rebuilds every speaker's session lists from the sessions (in id order, as
    /// [`BgpEngine::new`] builds them), leaving out removed sessions; returns the old lists.
    fn rebuild_lists(&mut self) -> Vec<Lists> {
        let before: Vec<Lists> = self
            .outbound
            .iter_mut()
            .map(|o| {
                o.all.clear();
                [
                    std::mem::take(&mut o.ebgp),
                    std::mem::take(&mut o.clients),
                    std::mem::take(&mut o.non_clients),
                ]
            })
            .collect();
        for s in &self.sessions {
            if matches!(s.reason.as_deref(), Some(IdleReason::Unconfigured { .. })) {
                continue;
            }
            file_session(&mut self.outbound, s);
        }
        before
    }
}

fn order(a: End, b: End) -> (End, End) {
    if a <= b { (a, b) } else { (b, a) }
}
