//! The decision process as the engine runs it: a candidate set or removed, the incremental
//! `admit` and the full `decision::run` for one prefix, with the decision context (`Ctx`)
//! that answers next-hop resolution and IGP cost from the underlay. A changed best route is
//! recorded (FIB change times, log) and handed to `send.rs`.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::bgp::SpeakerId;
use crate::bgp::decision::{DecisionContext, RouteStatus, SourceInfo};
use crate::bgp::peering::{Session, SessionType, Speaker};
use crate::bgp::rib::{Attrs, LOCAL_TAG, Outcome, PrefixId, RouteKey, RouteSource, StateId, Tag};
use crate::bgp::underlay::Underlay;
use crate::model::time::SimTime;
use crate::model::topology::DeviceId;

use super::{BgpEngine, BgpLogKind, Scheduled};

impl BgpEngine {
    /// The Loc-RIB route for `p`: its candidate key and attributes.
    #[cfg(test)]
    pub(super) fn best_of(&self, s: SpeakerId, p: PrefixId) -> Option<(RouteKey, Attrs)> {
        let best = self.destination(s, p);
        let best = best.best()?;
        Some((best.key(), best.attrs.clone()))
    }

    /// Sets (or, with `None`, removes) the candidate `key` and re-runs the decision if it
    /// changed.
    pub(in crate::bgp) fn set_route(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        key: RouteKey,
        attrs: Option<Attrs>,
        out: &mut Scheduled,
    ) {
        let tag = self.tag(s, key.source);
        self.set_tagged(now, s, p, key, tag, attrs.as_ref(), out);
    }

    /// [`BgpEngine::set_route`] with the tag `s` gives `key`'s source (`shared.rs`), which
    /// a caller setting many routes from one session works out once.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn set_tagged(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        key: RouteKey,
        tag: Tag,
        attrs: Option<&Attrs>,
        out: &mut Scheduled,
    ) {
        let class = self.rt[s.index()].tags.class;
        let step = self.step(s, p, key, (tag, class), attrs);
        self.record(now, s, p, step.to, step.outcome, out);
    }

    /// Runs the decision process for one prefix of one speaker again (a next hop became
    /// (un)resolvable or nearer); a changed best route is recorded and scheduled for export.
    pub(super) fn decide(&mut self, now: SimTime, s: SpeakerId, p: PrefixId, out: &mut Scheduled) {
        let (to, outcome) = self.redecide(s, p);
        self.record(now, s, p, to, outcome, out);
    }

    /// What a step of `s`'s state for `p` (to `to`) means beyond the RIB: the
    /// Loc-RIB size, FIB change times, the log and exports. A new candidate that loses to
    /// the best changes no Loc-RIB, and no export but over ADD-PATH, where every candidate
    /// goes out; so does a decision that keeps the best. Inlined where routes are received
    /// (tens of millions in rr-5000), as [`BgpEngine::step`] is.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn record(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        to: StateId,
        outcome: Outcome,
        out: &mut Scheduled,
    ) {
        let changed = match outcome {
            Outcome::Unchanged => return,
            Outcome::Admitted => false,
            Outcome::Decided {
                changed,
                fib_changed,
                best,
            } => {
                if changed {
                    let rib = &mut self.rt[s.index()].rib;
                    match best {
                        (false, true) => rib.loc_rib_len += 1,
                        (true, false) => rib.loc_rib_len -= 1,
                        _ => {}
                    }
                    // A restarting speaker forwards with its kernel's routes until recovery
                    // ends (`restart.rs`), which then notes the change if there is one.
                    if fib_changed && self.restart.kernel(s).is_none() {
                        self.note_fib_change(now);
                    }
                }
                changed
            }
        };
        // A plain speaker's learned route goes nowhere: most of what a reflector's clients
        // receive ends here, before the export looks up the speaker.
        let nowhere = self.passes_on_nothing(s, p, to);
        if !changed {
            if !nowhere && self.offers_paths(s) {
                self.schedule_export(now, s, p, out);
            }
            return;
        }
        self.last_rib_change = now;
        if self.options.routes {
            self.note_best_path(now, s, p, to);
        } else {
            self.last_activity = self.last_activity.max(now);
        }
        if !nowhere {
            self.schedule_export(now, s, p, out);
        }
    }

    /// Logs `s`'s new best route for `p` (its state now `to`): with `--events all` only, so
    /// kept out of [`Self::record`], which millions of routes go through.
    #[cold]
    #[inline(never)]
    fn note_best_path(&mut self, now: SimTime, s: SpeakerId, p: PrefixId, to: StateId) {
        let net = self.prefixes.net(p);
        let outcome = match self.states.get(to).best() {
            Some(best) => format!(
                "{net} {} ({})",
                best.attrs,
                match best.status {
                    RouteStatus::Best(why) => why.to_string(),
                    _ => String::new(),
                }
            ),
            None => format!("{net} unreachable"),
        };
        let subject = self.name(s);
        self.note(now, BgpLogKind::BestPathChanged, subject, outcome);
    }

    /// Whether no peer of `s` can see a difference in `p`, whose state is `state`: a plain
    /// iBGP speaker (`Tags::plain`: no eBGP peer, no client) passes on nothing it learned,
    /// so with no route of its own for `p` and nothing advertised for it, an export would
    /// find nothing to send and record nothing. (The state is read only for the few
    /// prefixes `s` may originate: for the others, it holds no route of its own.)
    #[inline]
    pub(super) fn passes_on_nothing(&self, s: SpeakerId, p: PrefixId, state: StateId) -> bool {
        let r = &self.rt[s.index()];
        let own = |state: StateId| {
            self.states
                .get(state)
                .held
                .iter()
                .any(|h| h.tag == LOCAL_TAG)
        };
        r.tags.plain && r.rib.advertised(p).is_none() && !(r.rib.may_originate(p) && own(state))
    }

    /// Runs `f` with speaker `s`'s decision context; also says whether the decision asked
    /// the underlay (an IGP cost, a router's next-hop reachability), which makes it
    /// particular to `s` (`shared.rs` does not replay it elsewhere).
    pub(super) fn deciding<R>(
        &mut self,
        s: SpeakerId,
        f: impl FnOnce(&mut Ctx<'_>) -> R,
    ) -> (R, bool) {
        let BgpEngine {
            speakers,
            sessions,
            by_address,
            underlay,
            ..
        } = &mut *self;
        let mut ctx = Ctx {
            me: &speakers[s.index()],
            speakers,
            sessions,
            by_address,
            underlay,
            asked_underlay: false,
        };
        let r = f(&mut ctx);
        (r, ctx.asked_underlay)
    }
}

/// The decision process's view of one speaker.
pub(super) struct Ctx<'a> {
    me: &'a Speaker,
    speakers: &'a [Speaker],
    sessions: &'a [Session],
    by_address: &'a HashMap<IpAddr, SpeakerId>,
    underlay: &'a mut Underlay,
    asked_underlay: bool,
}

impl Ctx<'_> {
    fn next_hop_device(&self, next_hop: IpAddr) -> Option<DeviceId> {
        self.by_address
            .get(&next_hop)
            .map(|s| self.speakers[s.index()].device)
    }
}

impl DecisionContext for Ctx<'_> {
    fn local_as(&self) -> u32 {
        self.me.as_number
    }

    fn source(&self, source: RouteSource) -> SourceInfo {
        let me = self.me;
        let own = SourceInfo {
            local: true,
            ebgp: false,
            peer_router_id: me.router_id,
            peer_address: me.address,
        };
        let RouteSource::Peer(x) = source else {
            return own;
        };
        let sess = &self.sessions[x.index()];
        let Some(peer) = sess.side_of(me.id).and_then(|side| sess.peer_of(side)) else {
            return own;
        };
        let p = &self.speakers[peer.index()];
        SourceInfo {
            local: false,
            ebgp: sess.session_type == SessionType::Ebgp,
            peer_router_id: p.router_id,
            peer_address: p.address,
        }
    }

    /// A Calico node resolves BGP next hops through its kernel table, which always has the
    /// default route via the rack gateway (BIRD's `gateway recursive` on multihop sessions),
    /// so a next hop stays resolvable when the underlay path to it is cut: the packets then
    /// die at the cut, as they would in a real cluster until the hold timer ends the session.
    /// Routers resolve through their fabric routes: the next hop must be reachable.
    fn resolvable(&mut self, next_hop: IpAddr) -> bool {
        if self.me.node.is_some() {
            return true;
        }
        self.asked_underlay = true;
        self.next_hop_device(next_hop)
            .is_some_and(|d| self.underlay.connected(self.me.device, d))
    }

    fn igp_cost(&mut self, next_hop: IpAddr) -> Option<u64> {
        self.asked_underlay = true;
        let d = self.next_hop_device(next_hop)?;
        self.underlay.cost(self.me.device, d)
    }
}
