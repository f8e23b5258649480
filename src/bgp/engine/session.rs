//! Session life: connecting, establishing (and the full table it sends), hold and BFD
//! detection, going down with the routes it carried, retries, error wait and latencies.

use smallvec::SmallVec;

use crate::bgp::config::Timers;
use crate::bgp::peering::{IdleReason, SessionState};
use crate::bgp::rib::{PathId, PrefixId, RouteKey, RouteSource};
use crate::bgp::underlay::SessionPath;
use crate::bgp::{SessionId, SpeakerId};
use crate::model::time::{SimDuration, SimTime};

use super::{Arrivals, BgpEngine, BgpEvent, BgpLogEntry, BgpLogKind, Detecting, Scheduled};

/// Per session, one more than the epoch (`SessionRt::epoch`) it is Established in, 0 while
/// it is not: sixteen sessions a cache line, where the session's own records are three
/// lines apart. A session enters Established only from Connect, in the epoch connecting
/// gave it, and leaves it only by going Idle (`set_idle`), which bumps the epoch; so an
/// UPDATE sent in epoch `e` is still to be delivered and applied exactly while
/// `is_up(x, e)` (every message leaves on an Established session), and a flush's target is
/// Established exactly when `is_up(x, epoch now)`. Unit tests hold it to the sessions'
/// states after every step (`BgpEngine::sessions_up_in_step`).
#[derive(Debug, Default)]
pub(super) struct UpEpochs(Vec<u32>);

impl UpEpochs {
    /// Session `x` is Established in epoch `epoch` (its full tables leave).
    pub(super) fn came_up(&mut self, x: SessionId, epoch: u32) {
        if self.0.len() <= x.index() {
            self.0.resize(x.index() + 1, 0);
        }
        self.0[x.index()] = epoch.wrapping_add(1);
    }

    /// Session `x` left Established (or never was).
    fn went_down(&mut self, x: SessionId) {
        if let Some(e) = self.0.get_mut(x.index()) {
            *e = 0;
        }
    }

    /// Whether session `x` is Established in epoch `epoch`.
    pub(super) fn is_up(&self, x: SessionId, epoch: u32) -> bool {
        self.0
            .get(x.index())
            .is_some_and(|e| *e == epoch.wrapping_add(1))
    }

    /// The epoch `x` is Established in, if it is.
    #[cfg(test)]
    pub(super) fn epoch(&self, x: SessionId) -> Option<u32> {
        self.0.get(x.index()).and_then(|e| e.checked_sub(1))
    }

    /// Asks for the line holding `x`'s entry (`prefetch.rs`).
    pub(super) fn prefetch(&self, x: SessionId) {
        if let Some(e) = self.0.get(x.index()) {
            super::prefetch::prefetch_line(e);
        }
    }
}

impl BgpEngine {
    pub(in crate::bgp) fn name(&self, s: SpeakerId) -> String {
        self.speakers[s.index()].name.clone()
    }

    pub(in crate::bgp) fn session_subject(&self, x: SessionId) -> String {
        let sess = &self.sessions[x.index()];
        let b = match sess.b {
            Some(b) => self.name(b),
            None => sess.b_address.to_string(),
        };
        format!("{} – {}", self.name(sess.a), b)
    }

    pub(in crate::bgp) fn note(
        &mut self,
        time: SimTime,
        kind: BgpLogKind,
        subject: String,
        outcome: String,
    ) {
        self.last_activity = self.last_activity.max(time);
        if !self.lines_kept {
            return;
        }
        self.log.push(BgpLogEntry {
            time,
            kind,
            subject,
            outcome,
        });
    }

    /// [`BgpEngine::note`] with the line's subject and outcome built by `line`, only when
    /// lines are kept: the sessions of a full mesh write a million lines.
    pub(in crate::bgp) fn note_with(
        &mut self,
        time: SimTime,
        kind: BgpLogKind,
        line: impl FnOnce(&Self) -> (String, String),
    ) {
        let (subject, outcome) = if self.lines_kept {
            line(self)
        } else {
            Default::default()
        };
        self.note(time, kind, subject, outcome);
    }

    /// Whether the engine writes lines down at all: not when the run keeps none of them
    /// (`podnet check`); what happens, and when, is the same either way.
    pub fn keep_lines(&mut self, kept: bool) {
        self.lines_kept = kept;
    }

    /// A session that is not up loses its peer `name` (crashed, or its daemon stopped): one
    /// still connecting goes Idle; an Idle one now waits for that peer, unless its reason is
    /// permanent (a configuration that can never come up keeps saying so).
    pub(in crate::bgp) fn not_up_peer_down(&mut self, now: SimTime, x: SessionId, name: &str) {
        let reason = IdleReason::PeerDown {
            speaker: name.to_string(),
        };
        let sess = &mut self.sessions[x.index()];
        match sess.state {
            SessionState::Connect => self.set_idle(now, x, reason),
            SessionState::Idle => {
                if sess.reason.as_ref().is_none_or(|r| !r.is_permanent()) {
                    sess.reason = Some(Box::new(reason));
                }
            }
            SessionState::Established => {}
        }
    }

    /// Whether `UpEpochs` says of every session what its state and epoch say: up in its
    /// epoch exactly while Established, and up in no other epoch.
    #[cfg(test)]
    pub(crate) fn sessions_up_in_step(&self) -> bool {
        self.sessions.iter().zip(&self.srt).all(|(sess, r)| {
            let established = sess.state == SessionState::Established;
            self.up.is_up(sess.id, r.epoch) == established
                && (established || self.up.epoch(sess.id).is_none())
        })
    }

    /// Copies `x`'s latency into its runtime state (`SessionRt::latency`) after its
    /// `Session` changed.
    pub(in crate::bgp) fn track_latency(&mut self, x: SessionId) {
        self.srt[x.index()].latency = self.sessions[x.index()].latency.unwrap_or_default();
    }

    pub(in crate::bgp) fn set_idle(&mut self, now: SimTime, x: SessionId, reason: IdleReason) {
        let sess = &mut self.sessions[x.index()];
        if sess.state != SessionState::Idle {
            self.last_state_change = now;
        }
        let was_established = sess.state == SessionState::Established;
        sess.state = SessionState::Idle;
        sess.reason = Some(Box::new(reason));
        let r = &mut self.srt[x.index()];
        r.downs += u32::from(was_established);
        r.epoch += 1;
        self.up.went_down(x);
        r.detecting = None;
        self.idle_since[x.index()] = now;
        r.last_arrival = [SimTime::ZERO; 2];
        if let Some(rare) = &mut r.rare {
            rare.held = Default::default();
            rare.mrai_armed = [false; 2];
        }
    }

    /// Starts connecting `x` so that it is established at `at` plus one round trip, if both
    /// ends are up and a path joins them; otherwise leaves it Idle with the reason.
    pub(in crate::bgp) fn connect(
        &mut self,
        now: SimTime,
        x: SessionId,
        at: SimTime,
        out: &mut Scheduled,
    ) {
        let sess = &self.sessions[x.index()];
        let Some(b) = sess.b else { return };
        if sess.reason.as_ref().is_some_and(|r| r.is_permanent())
            || sess.state != SessionState::Idle
        {
            return;
        }
        let (a, latency, single_hop) = (sess.a, sess.latency, sess.link.is_some());
        for end in [a, b] {
            if !self.rt[end.index()].up {
                let speaker = self.name(end);
                self.sessions[x.index()].reason = Some(Box::new(IdleReason::PeerDown { speaker }));
                return;
            }
        }
        let Some(latency) = latency else {
            let reason = if single_hop {
                IdleReason::LinkDown
            } else {
                IdleReason::NoUnderlayPath
            };
            self.sessions[x.index()].reason = Some(Box::new(reason));
            return;
        };
        let sess = &mut self.sessions[x.index()];
        sess.state = SessionState::Connect;
        sess.reason = None;
        let r = &mut self.srt[x.index()];
        r.epoch += 1;
        let epoch = r.epoch;
        let when = at + latency + latency;
        out.push((when, BgpEvent::SessionEstablished { session: x, epoch }));
        self.note_with(now, BgpLogKind::SessionConnect, |e| {
            let outcome = format!("established at {when} if nothing fails");
            (e.session_subject(x), outcome)
        });
    }

    pub(super) fn on_established(
        &mut self,
        now: SimTime,
        x: SessionId,
        epoch: u32,
        out: &mut Scheduled,
    ) {
        if self.srt[x.index()].epoch != epoch
            || self.sessions[x.index()].state != SessionState::Connect
        {
            return;
        }
        let sess = &mut self.sessions[x.index()];
        sess.state = SessionState::Established;
        sess.reason = None;
        let latency = sess.latency.unwrap_or_default();
        let r = &mut self.srt[x.index()];
        if let Some(rare) = &mut r.rare {
            rare.mrai_until = [SimTime::ZERO; 2];
        }
        r.established_at = now;
        r.latency_up = latency;
        self.last_state_change = now;
        self.note_with(now, BgpLogKind::SessionEstablished, |e| {
            let sess = &e.sessions[x.index()];
            let outcome = format!(
                "{}{}",
                sess.session_type.as_str(),
                if sess.reflector_client() {
                    ", route-reflector client"
                } else {
                    ""
                }
            );
            (e.session_subject(x), outcome)
        });
        // Both full tables leave together: one delivery event per arrival instant.
        let mut arrivals = Arrivals::default();
        for side in 0..2 {
            self.full_table(now, x, side, &mut arrivals);
        }
        self.dispatch(arrivals, out);
    }

    /// The hold time in use on a session: the smaller of the two sides' (RFC 4271 §4.2).
    pub(super) fn hold_time(&self, x: SessionId) -> SimDuration {
        let sess = &self.sessions[x.index()];
        let hold = |s: SpeakerId| {
            self.speakers[s.index()]
                .hold_time
                .unwrap_or(self.timers.hold)
        };
        let a = hold(sess.a);
        sess.b.map_or(a, |b| a.min(hold(b)))
    }

    /// The keepalive interval that goes with `hold`: the profile's, or a third of a smaller
    /// negotiated hold time (BIRD's default, `keepalive time` = hold / 3).
    pub(super) fn keepalive_time(&self, hold: SimDuration) -> SimDuration {
        if hold == self.timers.hold {
            self.timers.keepalive
        } else {
            SimDuration::from_nanos(hold.as_nanos() / 3)
        }
    }

    /// When the side `side` of `x`, silent from `now` on, last got a message through: its last
    /// UPDATE's arrival, or the arrival of the last KEEPALIVE it sent before `now` (one every
    /// keepalive interval from establishment, each interval jittered as BIRD starts it).
    pub(super) fn last_heard_from(&mut self, now: SimTime, x: SessionId, side: usize) -> SimTime {
        let hold = self.hold_time(x);
        let keepalive = self.keepalive_time(hold);
        let r = &self.srt[x.index()];
        let (start, latency, update) = (r.established_at, r.latency_up, r.last_arrival[side]);
        let mut sent = start;
        if keepalive > SimDuration::ZERO {
            if self.timers.jitter && self.jitter.is_some() {
                loop {
                    let next = sent + self.timer(keepalive);
                    if next >= now {
                        break;
                    }
                    sent = next;
                }
            } else if now > start {
                let n = (now - start).as_nanos().saturating_sub(1) / keepalive.as_nanos();
                sent = start + SimDuration::from_nanos(n * keepalive.as_nanos());
            }
        }
        (sent + latency).max(update)
    }

    /// Starts timing out a session whose peer (`PeerDown`) or path (`PathLost`) went silent
    /// at `now`: BFD detects after its detection time; otherwise a hold timer expires `hold`
    /// (jittered for BIRD) after the last message it heard, which may be before `now`.
    pub(super) fn arm_detection(
        &mut self,
        now: SimTime,
        x: SessionId,
        why: Detecting,
        out: &mut Scheduled,
    ) {
        let at = if let Some(bfd) = self.settings.bfd {
            let r = self.srt[x.index()].rare_mut();
            r.last_heard = now;
            r.hold_armed = bfd.detection_time();
            now + bfd.detection_time()
        } else {
            let sess = &self.sessions[x.index()];
            let silent: SmallVec<[usize; 2]> = match why {
                Detecting::PeerDown => [0, 1]
                    .into_iter()
                    .filter(|side| {
                        let s = if *side == 0 { Some(sess.a) } else { sess.b };
                        s.is_some_and(|s| !self.rt[s.index()].up)
                    })
                    .collect(),
                Detecting::PathLost => [0, 1].into_iter().collect(),
            };
            let hold = self.hold_time(x);
            let mut best: Option<(SimTime, SimTime, SimDuration)> = None;
            for side in silent {
                let heard = self.last_heard_from(now, x, side);
                let armed = self.timer(hold);
                let expiry = (heard + armed).max(now);
                if best.is_none_or(|(t, _, _)| expiry < t) {
                    best = Some((expiry, heard, armed));
                }
            }
            let (at, heard, armed) = best.unwrap_or((now + hold, now, hold));
            let r = self.srt[x.index()].rare_mut();
            r.last_heard = heard;
            r.hold_armed = armed;
            at
        };
        let r = &mut self.srt[x.index()];
        r.detection += 1;
        r.detecting = Some(why);
        out.push((
            at,
            BgpEvent::HoldExpired {
                session: x,
                epoch: r.epoch,
                detection: r.detection,
            },
        ));
    }

    pub(super) fn on_hold_expired(
        &mut self,
        now: SimTime,
        x: SessionId,
        epoch: u32,
        detection: u32,
        out: &mut Scheduled,
    ) {
        let r = &self.srt[x.index()];
        if r.epoch != epoch || r.detection != detection || r.detecting.is_none() {
            return;
        }
        let sess = &self.sessions[x.index()];
        let Some(b) = sess.b else { return };
        let sess_a = sess.a;
        let down = [sess.a, b].into_iter().find(|s| !self.rt[s.index()].up);
        let reason = match down {
            Some(s) => IdleReason::PeerDown {
                speaker: self.name(s),
            },
            None if sess.latency.is_none() => IdleReason::NoUnderlayPath,
            None => return,
        };
        let r = self.srt[x.index()].rare();
        let what = if self.settings.bfd.is_some() {
            format!("BFD detected the failure after {}", r.hold_armed)
        } else {
            format!(
                "hold timer ({} armed) expired, last message heard at {}",
                r.hold_armed, r.last_heard
            )
        };
        let subject = self.session_subject(x);
        self.note(
            now,
            BgpLogKind::SessionDown,
            subject,
            format!("{what}: {reason}"),
        );
        // A Calico node's BFD is `bfd graceful`: its side keeps the routes as stale. A hold
        // timer expiry, or a router's `bfd on`, drops them (and any left stale before).
        let mut graceful = false;
        for side in 0..2 {
            let end = if side == 0 { sess_a } else { b };
            if self.settings.bfd.is_some() && self.speakers[end.index()].node.is_some() {
                self.start_helping(now, x, side, "BFD session down", out);
                graceful = true;
            } else {
                self.restart.forget(x, side);
            }
        }
        self.session_down(now, x, reason, out);
        if !graceful {
            self.error_wait(now, x);
        }
    }

    /// Ends an Established (or connecting) session: both live ends drop the routes learned
    /// on it and re-run the decision for those prefixes.
    pub(in crate::bgp) fn session_down(
        &mut self,
        now: SimTime,
        x: SessionId,
        reason: IdleReason,
        out: &mut Scheduled,
    ) {
        let sess = &self.sessions[x.index()];
        let was_established = sess.state == SessionState::Established;
        let ends: Vec<SpeakerId> = std::iter::once(sess.a).chain(sess.b).collect();
        let subject = self.session_subject(x);
        self.note(now, BgpLogKind::SessionDown, subject, reason.to_string());
        self.set_idle(now, x, reason);
        if !was_established {
            return;
        }
        for (side, s) in ends.into_iter().enumerate() {
            // A graceful-restart helper keeps them as stale (`restart.rs`).
            if !self.rt[s.index()].up || self.restart.keeps(x, side) {
                continue;
            }
            let source = RouteSource::Peer(x);
            for (p, path) in self.routes_from(s, source) {
                self.set_route(now, s, p, RouteKey { source, path }, None, out);
            }
        }
    }

    /// The routes speaker `s` holds from `source`: prefix and path (several per prefix over
    /// ADD-PATH).
    pub(in crate::bgp) fn routes_from(
        &self,
        s: SpeakerId,
        source: RouteSource,
    ) -> Vec<(PrefixId, PathId)> {
        let tag = self.tag(s, source);
        self.table
            .held(s)
            .flat_map(|(p, id)| {
                self.states
                    .get(id)
                    .held
                    .iter()
                    .filter(move |h| h.tag == tag)
                    .map(move |h| (p, h.path))
            })
            .collect()
    }

    /// Some FIB changed at `now` (for `convergedWithin`).
    pub(in crate::bgp) fn note_fib_change(&mut self, now: SimTime) {
        if self.fib_change_times.last() != Some(&now) {
            self.fib_change_times.push(now);
        }
    }

    /// The first connect-retry tick at or after `now`, counted from when the session went Idle
    /// (BIRD's retry interval jittered once for the wait), and not before an error wait ends.
    pub(super) fn next_retry(&mut self, x: SessionId, now: SimTime) -> SimTime {
        let retry = self.timer(self.timers.connect_retry).as_nanos();
        let since = self.idle_since[x.index()].max(self.srt[x.index()].rare().error_until);
        if retry == 0 || now < since {
            return now.max(since);
        }
        let elapsed = (now - since).as_nanos();
        let ticks = elapsed.div_ceil(retry).max(1);
        since + SimDuration::from_nanos(ticks.saturating_mul(retry))
    }

    /// A session ended in an error (its hold timer or BFD): BIRD restarts it only after the
    /// error wait, which doubles when errors follow each other within `Timers::ERROR_FORGET`
    /// (`bgp_update_startup_delay`).
    pub(super) fn error_wait(&mut self, now: SimTime, x: SessionId) {
        let (min, max) = (self.timers.error_wait, self.timers.error_wait_max);
        if min == SimDuration::ZERO {
            return;
        }
        let r = self.srt[x.index()].rare();
        let recent = r.last_error.is_some_and(|t| now - t < Timers::ERROR_FORGET);
        let delay = if recent && r.startup_delay > SimDuration::ZERO {
            r.startup_delay.saturating_mul(2).min(max)
        } else {
            min
        };
        let armed = self.timer(delay);
        let r = self.srt[x.index()].rare_mut();
        r.startup_delay = delay;
        r.last_error = Some(now);
        r.error_until = now + armed;
    }

    /// Brings the sessions' latencies to the underlay as last updated: the first time (and
    /// after the session list changed) every session's, measured and from then on tracked by
    /// the underlay; afterwards only those the update changed. Returns the sessions whose
    /// latency it set, in order.
    pub(super) fn recompute_latencies(&mut self) -> Vec<SessionId> {
        let count = self.sessions.len();
        let changed = match self.underlay.session_changes(count) {
            Some(changed) => changed,
            None => {
                let paths: Vec<(SessionId, SessionPath)> = self
                    .sessions
                    .iter()
                    .enumerate()
                    .filter_map(|(i, sess)| {
                        let b = sess.b?;
                        let path = match sess.link {
                            Some(link) => SessionPath::Link(link),
                            None => SessionPath::Between(
                                self.speakers[sess.a.index()].device,
                                self.speakers[b.index()].device,
                            ),
                        };
                        Some((SessionId(i as u32), path))
                    })
                    .collect();
                self.underlay.track_sessions(count, &paths)
            }
        };
        let mut set: Vec<SessionId> = changed
            .into_iter()
            .map(|(x, latency)| {
                self.sessions[x.index()].latency = latency;
                self.track_latency(x);
                x
            })
            .collect();
        set.sort_unstable();
        set.dedup();
        set
    }

    /// What a change of the underlay asks of session `x`, by its state and whether a path
    /// joins its ends now (its latency).
    ///
    /// Only a session whose latency just changed can have something to do, so
    /// `link_changed` asks no other. Every other way into these states looks at the path:
    /// `connect` leaves a session without one Idle (`LinkDown`, `NoUnderlayPath`) and so
    /// do the initial plan and `on_hold_expired`, only while there is none; a session is
    /// Connect or Established only through `connect`, which needs a path; `detecting` is
    /// set to `PathLost` only by [`LinkAction::Detect`], while there is no path, and is
    /// cleared only by going Idle or by [`LinkAction::Found`]. So a session enters one of
    /// these states only when its latency changes, and the change that put it there acted
    /// on it. Reconfiguring the peering makes the underlay forget its sessions, and the next
    /// change looks at all of them. Tests hold every change to it (`assert_quiet_elsewhere`).
    pub(super) fn link_action(&self, x: SessionId) -> Option<LinkAction> {
        let sess = &self.sessions[x.index()];
        if sess.b.is_none() || sess.reason.as_ref().is_some_and(|r| r.is_permanent()) {
            return None;
        }
        let has_path = sess.latency.is_some();
        let single_hop = sess.link.is_some();
        let waits_for_path = matches!(
            sess.reason.as_deref(),
            Some(IdleReason::LinkDown | IdleReason::NoUnderlayPath)
        );
        let detecting = self.srt[x.index()].detecting;
        match (sess.state, single_hop, has_path) {
            (SessionState::Established | SessionState::Connect, true, false) => {
                Some(LinkAction::Drop)
            }
            (SessionState::Established, false, false) if detecting.is_none() => {
                Some(LinkAction::Detect)
            }
            (SessionState::Established, false, true) if detecting == Some(Detecting::PathLost) => {
                Some(LinkAction::Found)
            }
            (SessionState::Connect, false, false) => Some(LinkAction::GiveUp),
            (SessionState::Idle, _, true) if waits_for_path => Some(LinkAction::Reconnect),
            _ => None,
        }
    }

    /// Panics unless no session outside `looked_at` (ascending) has anything to do: what
    /// makes `link_changed` look only at the sessions whose latency changed.
    #[cfg(test)]
    pub(super) fn assert_quiet_elsewhere(&self, looked_at: &[SessionId]) {
        for sess in &self.sessions {
            if looked_at.binary_search(&sess.id).is_err() {
                let action = self.link_action(sess.id);
                assert!(
                    action.is_none(),
                    "{} would {action:?} but its latency did not change",
                    self.session_subject(sess.id)
                );
            }
        }
    }
}

/// What a change of the underlay asks of a session ([`BgpEngine::link_action`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LinkAction {
    /// Up or connecting over a single-hop link that is down: it drops at once.
    Drop,
    /// Established multihop with every path gone: timed out after the hold time (or BFD).
    Detect,
    /// Established multihop, timed out for a lost path that is back: the timer stops.
    Found,
    /// Connecting multihop with no path: Idle until one is back.
    GiveUp,
    /// Idle for want of a path that is back: reconnects at the next connect-retry tick.
    Reconnect,
}
