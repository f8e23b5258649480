//! The decision process as the engine runs it: a candidate set or removed, the incremental
//! `admit` and the full `decision::run` for one prefix, with the decision context (`Ctx`)
//! that answers next-hop resolution and IGP cost from the underlay. A changed best route is
//! recorded (FIB change times, log) and handed to `send.rs`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use crate::bgp::SpeakerId;
use crate::bgp::decision::{self, DecisionContext, RouteStatus, SourceInfo};
use crate::bgp::peering::{Session, SessionType, Speaker};
use crate::bgp::rib::{Attrs, PrefixId, Rib, RouteKey, RouteSource, Upsert};
use crate::bgp::underlay::Underlay;
use crate::model::time::SimTime;
use crate::model::topology::DeviceId;

use super::{BgpEngine, BgpLogKind, Scheduled};

impl BgpEngine {
    /// The Loc-RIB route for `p`: its candidate key and attributes.
    pub(super) fn best_of(&self, s: SpeakerId, p: PrefixId) -> Option<(RouteKey, Attrs)> {
        let best = self.rt[s.index()].rib.destinations.get(&p)?.best()?;
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
        let before = self.best_of(s, p);
        let rib = &mut self.rt[s.index()].rib;
        let change = match attrs {
            Some(attrs) => rib.destinations.entry(p).upsert(key, attrs),
            None => {
                let removed = rib.destinations.get_mut(&p).is_some_and(|d| d.remove(key));
                if removed {
                    Upsert::Replaced
                } else {
                    Upsert::Unchanged
                }
            }
        };
        if let Upsert::Inserted(i) = change
            && self.admit(s, p, i)
        {
            // A new candidate that loses to the best changes no Loc-RIB, and no export but
            // over ADD-PATH, where every candidate goes out.
            if self.offers_paths(s) {
                self.schedule_export(now, s, p, out);
            }
            return;
        }
        if change != Upsert::Unchanged {
            self.decide(now, s, p, before, out);
        }
    }

    /// The incremental decision for a new candidate (see [`decision::admit`]).
    pub(super) fn admit(&mut self, s: SpeakerId, p: PrefixId, new: usize) -> bool {
        self.deciding(s, |rib, ctx| {
            decision::admit(&mut rib.destinations.entry(p).routes, new, ctx)
        })
    }

    /// Runs `f` on speaker `s`'s RIB with the speaker's decision context.
    fn deciding<R>(&mut self, s: SpeakerId, f: impl FnOnce(&mut Rib, &mut Ctx<'_>) -> R) -> R {
        let BgpEngine {
            speakers,
            rt,
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
        };
        f(&mut rt[s.index()].rib, &mut ctx)
    }

    /// Runs the decision process for one prefix of one speaker; a best route different from
    /// `before` is recorded and scheduled for export.
    pub(super) fn decide(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        before: Option<(RouteKey, Attrs)>,
        out: &mut Scheduled,
    ) {
        #[cfg(test)]
        {
            self.decisions += 1;
        }
        let changed = self.deciding(s, |rib, ctx| {
            // Not `get_mut`: a destination whose last candidate was just removed is empty,
            // and its best route going away is the change to record.
            let dest = rib.destinations.entry(p);
            decision::run(&mut dest.routes, ctx);
            let after = dest.best().map(|r| (r.key(), r.attrs.clone()));
            if dest.is_empty() {
                rib.destinations.remove(&p);
            }
            let changed = match (&before, &after) {
                (None, None) => false,
                (Some((sa, aa)), Some((sb, ab))) => sa != sb || !(Arc::ptr_eq(aa, ab) || aa == ab),
                _ => true,
            };
            // What a FIB is built from: the next hop of a learned best route (an originated
            // one is the node's own blackhole or pod route, which IPAM decides).
            let fib = |b: &Option<(RouteKey, Attrs)>| {
                b.as_ref()
                    .filter(|(key, _)| key.source != RouteSource::Local)
                    .map(|(_, a)| a.next_hop)
            };
            let fib_changed = fib(&before) != fib(&after);
            if changed {
                match (before.is_some(), after.is_some()) {
                    (false, true) => rib.loc_rib_len += 1,
                    (true, false) => rib.loc_rib_len -= 1,
                    _ => {}
                }
            }
            (changed, fib_changed)
        });
        let (changed, fib_changed) = changed;
        if !changed {
            // The best stays; over ADD-PATH the other candidates go out too.
            if self.offers_paths(s) {
                self.schedule_export(now, s, p, out);
            }
            return;
        }
        self.last_rib_change = now;
        let net = self.prefixes.net(p);
        // A restarting speaker forwards with its kernel's routes until recovery ends
        // (`restart.rs`), which then notes the change if there is one.
        if fib_changed && self.restart.kernel(s).is_none() {
            self.note_fib_change(now);
        }
        if self.options.routes {
            let outcome = match self.rt[s.index()]
                .rib
                .destinations
                .get(&p)
                .and_then(|d| d.best())
            {
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
        } else {
            self.last_activity = self.last_activity.max(now);
        }
        self.schedule_export(now, s, p, out);
    }
}

/// The decision process's view of one speaker.
struct Ctx<'a> {
    me: &'a Speaker,
    speakers: &'a [Speaker],
    sessions: &'a [Session],
    by_address: &'a HashMap<IpAddr, SpeakerId>,
    underlay: &'a mut Underlay,
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
        self.next_hop_device(next_hop)
            .is_some_and(|d| self.underlay.connected(self.me.device, d))
    }

    fn igp_cost(&mut self, next_hop: IpAddr) -> Option<u64> {
        let d = self.next_hop_device(next_hop)?;
        self.underlay.cost(self.me.device, d)
    }
}
