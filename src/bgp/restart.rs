//! Graceful restart (RFC 4724) as BIRD 2 runs it for Calico (`proto/bgp/bgp.c`,
//! REFERENCE §4.4): what happens to routes when a peer's BGP daemon goes away but its host
//! keeps forwarding.
//!
//! Two roles:
//! - **Helper** (the peer that stays): when a session ends by its TCP connection closing
//!   (the daemon died: `restartBgp`), by a new connection replacing an Established one (a
//!   crashed host back before the hold timer noticed: `nodeUp`), or by BFD on a Calico node
//!   (whose template says `bfd graceful`), the routes learned on it are kept, marked
//!   stale, and still used and passed on. When the session is Established again the peer
//!   sends its table and an End-of-RIB: routes it refreshed stay, stale ones it did not send
//!   are flushed then. If it does not come back within the restart time (120 s, BIRD's
//!   `graceful restart time` default, which Calico's template keeps) every stale route goes.
//!   A hold-timer expiry never starts graceful restart (Calico enables no long-lived graceful
//!   restart): the routes go at once, as for a router's `bfd on` session.
//! - **Restarting speaker** (`restartBgp`): its daemon's table is gone, but the kernel keeps
//!   the routes it had installed, so the node keeps forwarding with them. calico-node starts
//!   BIRD with `-R` (graceful restart recovery): the new daemon tells its peers it kept its
//!   forwarding state, learns their tables again, and its kernel protocol (`graceful
//!   restart`) replaces the kept routes with the new table only when every peer has sent
//!   End-of-RIB, or after `graceful restart wait` (240 s).
//!
//! Invariants: a stale set only names prefixes whose route from that session is still in the
//! helper's RIB; timers carry a generation so a timer overtaken by a newer restart is
//! ignored; every map is ordered.
//! Not modelled: long-lived graceful restart, the restarting speaker deferring its own
//! advertisements until it has every End-of-RIB (BIRD does not defer them either).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use super::engine::{BgpEngine, BgpEvent, BgpLogKind, Scheduled, UpdateBody};
use super::peering::{IdleReason, SessionState};
use super::rib::{PathId, PrefixId, RouteKey, RouteSource};
use super::{SessionId, SpeakerId};
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::DeviceId;

/// How long a helper keeps a peer's stale routes waiting for the session to come back:
/// BIRD's `graceful restart time` default (`proto/bgp/config.Y`), which the restarting
/// speaker advertises and Calico's template keeps unless `nodeMeshMaxRestartTime` or a
/// BGPPeer's `maxRestartTime` is set (`Session::restart_time`); FRR's default is the same.
pub const RESTART_TIME: SimDuration = SimDuration::from_secs(120);

/// How long a restarting BIRD keeps the kernel's old routes waiting for every peer's
/// End-of-RIB: `graceful restart wait` (`DEFAULT_GR_WAIT`, `nest/protocol.h`).
pub const RECOVERY_WAIT: SimDuration = SimDuration::from_secs(240);

/// A graceful-restart timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RestartEvent {
    /// A restarting speaker's daemon starts again.
    DaemonBack {
        speaker: SpeakerId,
        incarnation: u32,
    },
    /// A helper's restart timer for one side of a session runs out.
    RestartTimer {
        session: SessionId,
        side: u8,
        generation: u32,
    },
    /// A restarting speaker stops waiting for End-of-RIBs and syncs its kernel table.
    RecoveryWait { speaker: SpeakerId, generation: u32 },
}

impl RestartEvent {
    pub fn kind(&self) -> &'static str {
        match self {
            RestartEvent::DaemonBack { .. } => "bgpDaemonBack",
            RestartEvent::RestartTimer { .. } => "restartTimerExpired",
            RestartEvent::RecoveryWait { .. } => "recoveryWaitExpired",
        }
    }
}

/// Routes a helper keeps for one side of a session.
#[derive(Clone, Debug)]
struct Stale {
    /// Learned on the session (prefix and ADD-PATH path id) and not refreshed since it went
    /// down.
    prefixes: BTreeSet<(PrefixId, PathId)>,
    generation: u32,
}

/// The kernel table a restarting speaker's daemon left behind.
#[derive(Clone, Debug)]
struct Recovery {
    /// What the FIB keeps using, in prefix-id order (as `learned_next_hops` gives it).
    kernel: Vec<(PrefixId, IpNet, IpAddr)>,
    /// The daemon runs again (`None`: still down).
    back: bool,
    /// Sessions whose End-of-RIB the daemon still waits for.
    waiting: BTreeSet<SessionId>,
    generation: u32,
}

/// Graceful-restart state of an engine.
#[derive(Clone, Debug, Default)]
pub struct GracefulRestart {
    /// Helpers' stale routes, by (session, helper side).
    stale: BTreeMap<(SessionId, u8), Stale>,
    /// Speakers whose daemon restarts, with the kernel routes they keep forwarding with.
    recovering: BTreeMap<SpeakerId, Recovery>,
    generation: u32,
}

impl GracefulRestart {
    fn next_generation(&mut self) -> u32 {
        self.generation += 1;
        self.generation
    }

    /// Nothing is stale and nobody recovers: the common case, checked first.
    pub(super) fn is_idle(&self) -> bool {
        self.stale.is_empty() && self.recovering.is_empty()
    }

    /// Side `side` of `x` stops keeping stale routes (they are being dropped anyway).
    pub(super) fn forget(&mut self, x: SessionId, side: usize) {
        self.stale.remove(&(x, side as u8));
    }

    /// Whether side `side` of `x` keeps the routes learned on it as stale.
    pub(super) fn keeps(&self, x: SessionId, side: usize) -> bool {
        self.stale.contains_key(&(x, side as u8))
    }

    /// The kernel routes a restarting speaker still forwards with, if any.
    pub(super) fn kernel(&self, s: SpeakerId) -> Option<&[(PrefixId, IpNet, IpAddr)]> {
        self.recovering.get(&s).map(|r| r.kernel.as_slice())
    }

    /// Whether side `side` of `x` (the receiver) waits for an End-of-RIB on it.
    fn awaits_end_of_rib(&self, x: SessionId, side: usize, receiver: SpeakerId) -> bool {
        self.keeps(x, side)
            || self
                .recovering
                .get(&receiver)
                .is_some_and(|r| r.back && r.waiting.contains(&x))
    }
}

impl BgpEngine {
    /// `restartBgp`: the node's BGP daemon dies now and starts again after `down_for`; the
    /// host keeps forwarding with the routes in its kernel. Its peers' TCP connections close
    /// at once, so each peer keeps its routes as stale (graceful restart helper).
    pub fn restart_bgp(
        &mut self,
        now: SimTime,
        device: DeviceId,
        down_for: SimDuration,
    ) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&device) else {
            return out;
        };
        let r = &self.rt[s.index()];
        if !r.up || r.removed {
            return out;
        }
        let kernel = self.learned_next_hops(device);
        let name = self.name(s);
        self.wipe(s);
        self.last_state_change = now;
        self.note(
            now,
            BgpLogKind::SpeakerDown,
            name.clone(),
            format!(
                "BGP daemon stopped for {down_for}; the host keeps forwarding with its {} kernel routes",
                kernel.len()
            ),
        );
        let generation = self.restart.next_generation();
        self.restart.recovering.insert(
            s,
            Recovery {
                kernel,
                back: false,
                waiting: BTreeSet::new(),
                generation,
            },
        );
        for x in self.outbound[s.index()].all.clone() {
            let sess = &self.sessions[x.index()];
            match sess.state {
                SessionState::Established => {
                    let Some(peer_side) = sess.side_of(s).map(|side| 1 - side) else {
                        continue;
                    };
                    self.start_helping(now, x, peer_side, "the connection closed", &mut out);
                    let reason = IdleReason::PeerDown {
                        speaker: name.clone(),
                    };
                    self.session_down(now, x, reason, &mut out);
                }
                SessionState::Connect | SessionState::Idle => self.not_up_peer_down(now, x, &name),
            }
        }
        let incarnation = self.rt[s.index()].incarnation;
        out.push((
            now + down_for,
            BgpEvent::Restart(RestartEvent::DaemonBack {
                speaker: s,
                incarnation,
            }),
        ));
        out
    }

    /// Side `side` of the Established session `x` becomes a graceful-restart helper: the
    /// routes it learned on `x` are kept as stale until End-of-RIB or the restart time. A
    /// restart detected while one is pending flushes what the first left stale (BIRD's
    /// `bgp_handle_graceful_restart`, `BGP_GRS_ACTIVE`).
    pub(super) fn start_helping(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        why: &str,
        out: &mut Scheduled,
    ) {
        let Some(helper) = self.side_speaker(x, side) else {
            return;
        };
        if !self.rt[helper.index()].up {
            return;
        }
        self.flush_stale(now, x, side, None, out);
        let sess = &self.sessions[x.index()];
        let prefixes: BTreeSet<(PrefixId, PathId)> = self
            .routes_from(helper, RouteSource::Peer(x))
            .into_iter()
            .collect();
        let generation = self.restart.next_generation();
        let count = prefixes.len();
        let restart_time = sess.restart_time;
        self.restart.stale.insert(
            (x, side as u8),
            Stale {
                prefixes,
                generation,
            },
        );
        out.push((
            now + restart_time,
            BgpEvent::Restart(RestartEvent::RestartTimer {
                session: x,
                side: side as u8,
                generation,
            }),
        ));
        let peer = sess
            .peer_of(side)
            .map_or_else(|| sess.b_address.to_string(), |p| self.name(p));
        let subject = format!("{} <- {peer}", self.name(helper));
        self.note(
            now,
            BgpLogKind::RoutesStale,
            subject,
            format!(
                "{why}: graceful restart, {} kept as stale for up to {restart_time}",
                plural(count, "route")
            ),
        );
    }

    /// The speaker at side `side` of `x`.
    fn side_speaker(&self, x: SessionId, side: usize) -> Option<SpeakerId> {
        let sess = &self.sessions[x.index()];
        if side == 0 { Some(sess.a) } else { sess.b }
    }

    /// Removes the routes side `side` of `x` still holds as stale; `why` (when given) is
    /// logged.
    fn flush_stale(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        why: Option<&str>,
        out: &mut Scheduled,
    ) {
        let Some(stale) = self.restart.stale.remove(&(x, side as u8)) else {
            return;
        };
        let Some(helper) = self.side_speaker(x, side) else {
            return;
        };
        let sess = &self.sessions[x.index()];
        let peer = sess
            .peer_of(side)
            .map_or_else(|| sess.b_address.to_string(), |p| self.name(p));
        if let Some(why) = why {
            let subject = format!("{} <- {peer}", self.name(helper));
            self.note(
                now,
                BgpLogKind::StaleFlushed,
                subject,
                format!(
                    "{why}: {} flushed",
                    plural(stale.prefixes.len(), "stale route")
                ),
            );
        }
        if !self.rt[helper.index()].up {
            return;
        }
        for (p, path) in stale.prefixes {
            let key = RouteKey {
                source: RouteSource::Peer(x),
                path,
            };
            self.set_route(now, helper, p, key, None, out);
        }
    }

    /// Speaker `s` processed an UPDATE on `x`: what it carried is no longer stale, and its
    /// End-of-RIB ends the helper's wait (stale routes not refreshed go) or the restarting
    /// speaker's.
    pub(super) fn restart_on_update(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        x: SessionId,
        body: &UpdateBody,
        out: &mut Scheduled,
    ) {
        let Some(side) = self.sessions[x.index()].side_of(s) else {
            return;
        };
        if let Some(stale) = self.restart.stale.get_mut(&(x, side as u8)) {
            let announced = body.announced.iter().map(|(p, path, _)| (*p, *path));
            for p in body.withdrawn.iter().copied().chain(announced) {
                stale.prefixes.remove(&p);
            }
        }
        if !body.end_of_rib {
            return;
        }
        self.flush_stale(now, x, side, Some("End-of-RIB received"), out);
        let done = match self.restart.recovering.get_mut(&s) {
            Some(r) if r.back => {
                r.waiting.remove(&x);
                r.waiting.is_empty()
            }
            _ => false,
        };
        if done {
            self.end_recovery(now, s, "every peer sent End-of-RIB");
        }
    }

    /// Whether the initial table sent on `x` by side `side` must carry an End-of-RIB even
    /// when it holds no route (the receiver is waiting for it).
    pub(super) fn restart_wants_end_of_rib(&self, x: SessionId, side: usize) -> bool {
        let sess = &self.sessions[x.index()];
        let Some(receiver) = sess.peer_of(side) else {
            return false;
        };
        self.restart.awaits_end_of_rib(x, 1 - side, receiver)
    }

    /// The restarting speaker's kernel table is replaced by its daemon's routes.
    fn end_recovery(&mut self, now: SimTime, s: SpeakerId, why: &str) {
        let Some(r) = self.restart.recovering.remove(&s) else {
            return;
        };
        let device = self.speakers[s.index()].device;
        let fresh = self.learned_next_hops(device);
        if fresh != r.kernel {
            self.note_fib_change(now);
        }
        self.note(
            now,
            BgpLogKind::StaleFlushed,
            self.name(s),
            format!(
                "graceful restart recovery done ({why}): the kernel's {} kept routes replaced by the daemon's {}",
                r.kernel.len(),
                fresh.len()
            ),
        );
    }

    /// The host of `s` crashed or left: the kernel routes it kept die with it and it helps
    /// nobody any more (its RIB is gone).
    pub(super) fn restart_host_gone(&mut self, s: SpeakerId) {
        self.restart.recovering.remove(&s);
        let sessions = &self.sessions;
        self.restart
            .stale
            .retain(|(x, side), _| sessions[x.index()].side_of(s) != Some(usize::from(*side)));
    }

    /// `s` is deleted: its peers drop what they kept of it at once (Calico removes the
    /// peerings).
    pub(super) fn restart_removed(&mut self, now: SimTime, s: SpeakerId, out: &mut Scheduled) {
        self.restart_host_gone(s);
        for x in self.outbound[s.index()].all.clone() {
            let Some(side) = self.sessions[x.index()].side_of(s) else {
                continue;
            };
            self.flush_stale(now, x, 1 - side, Some("peer deleted"), out);
        }
    }

    pub(super) fn on_restart_event(&mut self, now: SimTime, e: RestartEvent, out: &mut Scheduled) {
        match e {
            RestartEvent::DaemonBack {
                speaker,
                incarnation,
            } => self.daemon_back(now, speaker, incarnation, out),
            RestartEvent::RestartTimer {
                session,
                side,
                generation,
            } => {
                let current = self
                    .restart
                    .stale
                    .get(&(session, side))
                    .is_some_and(|st| st.generation == generation);
                // BIRD stops the restart timer once the session is Established again; the
                // End-of-RIB then ends the wait.
                if current && self.sessions[session.index()].state != SessionState::Established {
                    self.flush_stale(
                        now,
                        session,
                        usize::from(side),
                        Some("restart time expired"),
                        out,
                    );
                }
            }
            RestartEvent::RecoveryWait {
                speaker,
                generation,
            } => {
                if self
                    .restart
                    .recovering
                    .get(&speaker)
                    .is_some_and(|r| r.generation == generation)
                {
                    self.end_recovery(now, speaker, "graceful restart wait expired");
                }
            }
        }
    }

    /// The restarting daemon starts again (`bird -R`): it originates its prefixes, its
    /// sessions connect, and its kernel routes stay until every peer sent End-of-RIB.
    fn daemon_back(&mut self, now: SimTime, s: SpeakerId, incarnation: u32, out: &mut Scheduled) {
        let r = &mut self.rt[s.index()];
        if r.up || r.removed || r.incarnation != incarnation {
            return;
        }
        r.up = true;
        r.incarnation += 1;
        self.last_state_change = now;
        self.note(
            now,
            BgpLogKind::SpeakerUp,
            self.name(s),
            "BGP daemon started (graceful restart recovery)".into(),
        );
        for p in self.outbound[s.index()].originated.clone() {
            self.insert_local(now, s, p, out);
        }
        let sessions: Vec<SessionId> = self.outbound[s.index()]
            .all
            .iter()
            .copied()
            .filter(|x| {
                let sess = &self.sessions[x.index()];
                sess.b.is_some() && sess.reason.as_ref().is_none_or(|r| !r.is_permanent())
            })
            .collect();
        let generation = self.restart.next_generation();
        if let Some(r) = self.restart.recovering.get_mut(&s) {
            r.back = true;
            r.waiting = sessions.iter().copied().collect();
            r.generation = generation;
        }
        out.push((
            now + RECOVERY_WAIT,
            BgpEvent::Restart(RestartEvent::RecoveryWait {
                speaker: s,
                generation,
            }),
        ));
        if sessions.is_empty() {
            self.end_recovery(now, s, "no peer to wait for");
        }
        for x in self.outbound[s.index()].all.clone() {
            let at = self.connect_at(now, x);
            self.connect(now, x, at, out);
        }
    }
}

/// `1 route`, `2 routes` (`noun` takes an `s` in the plural).
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
