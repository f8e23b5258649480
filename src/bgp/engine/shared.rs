//! Shared RIB states (issue #20): every speaker's candidates for a prefix are one interned
//! [`State`] (`rib.rs`), and a speaker's RIB is a state id per prefix. The clients of one
//! set of reflectors (and the nodes of a full mesh) receive the very same routes — a
//! reflector's export is one `Arc` for all its clients — so they hold the very same states,
//! and a step one of them takes (a candidate set or removed, the decision run) is
//! remembered and replayed for the others instead of being computed again.
//!
//! Sharing needs states to name sources the same way on every speaker: a speaker names a
//! session by its peer speaker ([`Tags`]) when that is unambiguous and keeps the candidate
//! order (its sessions' peers rise with the session ids) and the decision inputs (a session
//! is eBGP exactly when the peer is in another AS); otherwise by the session itself, and
//! its states are its own. A step is replayed only between Calico nodes of one AS named by
//! peer (the memo class), and only if computing it never asked the underlay (IGP cost):
//! nothing else a decision reads differs between them (a node resolves every next hop
//! through its default route, and its own route wins before any tie-breaker that would read
//! its router ID). The memo is a cache: results are those of computing every step, which
//! `BgpEngine::set_shared_states(false)` does (the property test's reference).
//!
//! Readers get a [`Destination`] with the speaker's own session ids
//! ([`BgpEngine::destination`]); the hot paths read states directly.

use std::sync::Arc;

use crate::bgp::decision;
use crate::bgp::rib::{
    Attrs, Destination, Held, LOCAL_TAG, Outcome, PrefixId, Route, RouteKey, RouteSource, State,
    StateId, Step, Tag, Upsert, either,
};
use crate::bgp::{SessionId, SpeakerId};
use crate::model::hash::FastMap;

use super::{BgpEngine, UpdateBody};

/// The tag of a session named by itself.
const SESSION_TAG: Tag = 1 << 31;

/// How a speaker names the sources of its candidates in shared states.
#[derive(Clone, Debug, Default, PartialEq)]
pub(in crate::bgp) struct Tags {
    /// Sessions named by peer (tag = peer id + 1) rather than by id (`SESSION_TAG | id`).
    by_peer: bool,
    /// `(peer, session)` of every session ever naming the speaker, sorted by peer (and by
    /// session, which is the same order when `by_peer`).
    peers: Vec<(SpeakerId, SessionId)>,
    /// The memo class (the node's AS) when its steps may be replayed from other speakers'.
    pub(super) class: Option<u32>,
    /// Every session is iBGP to a peer that is not the speaker's client, so every route it
    /// learned is `IbgpFromNonClient` (a client of reflectors, a full-mesh node): what the
    /// reflection rules say of a learned route needs no session lookup.
    pub(super) plain: bool,
}

impl Tags {
    fn tag(&self, source: RouteSource, peer: impl FnOnce(SessionId) -> Option<SpeakerId>) -> Tag {
        match source {
            RouteSource::Local => LOCAL_TAG,
            RouteSource::Peer(x) if self.by_peer => peer(x).map_or(SESSION_TAG | x.0, |p| p.0 + 1),
            RouteSource::Peer(x) => SESSION_TAG | x.0,
        }
    }

    pub(super) fn source(&self, tag: Tag) -> RouteSource {
        if tag == LOCAL_TAG {
            return RouteSource::Local;
        }
        if tag & SESSION_TAG != 0 {
            return RouteSource::Peer(SessionId(tag & !SESSION_TAG));
        }
        let peer = SpeakerId(tag - 1);
        let i = self.peers.partition_point(|(p, _)| *p < peer);
        RouteSource::Peer(self.peers[i].1)
    }
}

/// The steps the last receivers of a few UPDATE bodies took, by the position of each route
/// in the body. A reflector's clients apply one shared body one after another, mostly from
/// one of a few states (which of the other reflectors' copies of the route reached them
/// first), so the next client's step is one of the last few taken at that position, found
/// by position rather than by hashing into the memo. An entry is a memo entry (the same
/// rules: the same class and tag, never a step that asked the underlay), and goes with the
/// memo when a collection renumbers states. Each slot holds its body, so the body's address,
/// and the attributes' addresses in it, are not reused while the slot names them.
#[derive(Debug, Default)]
pub(super) struct BodySteps {
    slots: Vec<BodySlot>,
    /// Which slot holds which body (by address), class and tag.
    index: FastMap<(usize, u32, Tag), usize>,
    /// The slot taken next once every slot is used (round robin).
    next: usize,
    /// The slot found last, by key: the clients finishing one message together apply the
    /// same body one after another.
    last: Option<((usize, u32, Tag), usize)>,
}

/// How many bodies' steps are kept: a reflector flushes again while its last UPDATE is
/// still reaching far racks, so several bodies (of every reflector) are being applied at
/// any time.
const BODY_SLOTS: usize = 64;

#[derive(Debug, Default)]
struct BodySlot {
    body: Option<Arc<UpdateBody>>,
    key: (usize, u32, Tag),
    /// Per route of the body (withdrawals first), the last steps taken there.
    steps: Vec<Ways>,
}

/// How many steps are kept per route of a body: the states a route meets at a reflector's
/// clients are the few subsets of the other reflectors' copies that arrived before it.
const WAYS: usize = 4;

/// The last [`WAYS`] steps taken at one route of a body, the latest first: where each
/// started (the state stepped from, and whether the route passed the import check, as
/// `from << 1 | accepted`; [`Ways::FREE`] where none was taken) and where it led.
#[derive(Clone, Copy, Debug)]
struct Ways {
    starts: [u32; WAYS],
    ends: [(StateId, Outcome); WAYS],
}

impl Ways {
    const FREE: u32 = u32::MAX;
    const EMPTY: Ways = Ways {
        starts: [Ways::FREE; WAYS],
        ends: [(StateId(0), Outcome::Unchanged); WAYS],
    };

    fn start(from: StateId, accepted: bool) -> u32 {
        debug_assert!(from.0 < 1 << 31, "state ids stay far below 2^31");
        from.0 << 1 | u32::from(accepted)
    }
}

/// A slot of [`BodySteps`] for one receiver's application of a body.
#[derive(Clone, Copy, Debug)]
pub(super) struct BodySlotId(usize);

impl BodySteps {
    /// The slot for `body` applied by a speaker of `class` naming its sender `tag`, emptied
    /// and taken over if none is.
    pub(super) fn slot(&mut self, body: &Arc<UpdateBody>, class: u32, tag: Tag) -> BodySlotId {
        let key = (Arc::as_ptr(body) as usize, class, tag);
        if let Some((last, i)) = self.last
            && last == key
        {
            return BodySlotId(i);
        }
        if let Some(&i) = self.index.get(&key) {
            self.last = Some((key, i));
            return BodySlotId(i);
        }
        let i = if self.slots.len() < BODY_SLOTS {
            self.slots.push(BodySlot::default());
            self.slots.len() - 1
        } else {
            let i = self.next;
            self.next = (i + 1) % BODY_SLOTS;
            self.index.remove(&self.slots[i].key);
            i
        };
        self.index.insert(key, i);
        self.last = Some((key, i));
        let slot = &mut self.slots[i];
        slot.body = Some(body.clone());
        slot.key = key;
        slot.steps.clear();
        slot.steps.resize(body.prefix_count(), Ways::EMPTY);
        BodySlotId(i)
    }

    /// The step route `i` of the slot's body took from state `from` (`accepted`: whether it
    /// passed the import check), if a receiver took it.
    pub(super) fn get(
        &self,
        slot: BodySlotId,
        i: usize,
        from: StateId,
        accepted: bool,
    ) -> Option<(StateId, Outcome)> {
        let ways = &self.slots[slot.0].steps[i];
        let start = Ways::start(from, accepted);
        let way = ways.starts.iter().position(|&s| s == start)?;
        Some(ways.ends[way])
    }

    pub(super) fn put(
        &mut self,
        slot: BodySlotId,
        i: usize,
        from: StateId,
        accepted: bool,
        (to, outcome): (StateId, Outcome),
    ) {
        let ways = &mut self.slots[slot.0].steps[i];
        for w in (1..WAYS).rev() {
            ways.starts[w] = ways.starts[w - 1];
            ways.ends[w] = ways.ends[w - 1];
        }
        ways.starts[0] = Ways::start(from, accepted);
        ways.ends[0] = (to, outcome);
    }

    /// Forgets every step (state ids are about to be renumbered).
    pub(super) fn clear(&mut self) {
        *self = BodySteps::default();
    }
}

/// A step of a speaker's state for a prefix, as [`BgpEngine::step`] took it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stepped {
    pub(super) from: StateId,
    pub(super) to: StateId,
    pub(super) outcome: Outcome,
    /// Whether another speaker of the class may replay it (`BodySteps`, the memo).
    pub(super) replayable: bool,
}

impl BgpEngine {
    /// Names every speaker's sources ([`Tags`]) from the sessions, all of them, removed ones
    /// included (a stale route may outlive its session), in one pass.
    pub(in crate::bgp) fn name_sources(&self) -> Vec<Tags> {
        let mut peers: Vec<Vec<(SpeakerId, SessionId)>> = vec![Vec::new(); self.speakers.len()];
        for sess in &self.sessions {
            if let Some(b) = sess.b {
                peers[sess.a.index()].push((b, sess.id));
                peers[b.index()].push((sess.a, sess.id));
            }
        }
        peers
            .into_iter()
            .enumerate()
            .map(|(s, peers)| {
                let me = &self.speakers[s];
                let rising = peers.windows(2).all(|w| w[0].0 < w[1].0);
                let ebgp_by_as = peers.iter().all(|(p, x)| {
                    let other_as = self.speakers[p.index()].as_number != me.as_number;
                    (self.sessions[x.index()].session_type == super::SessionType::Ebgp) == other_as
                });
                let by_peer = self.shared_states && rising && ebgp_by_as;
                let plain = peers.iter().all(|(_, x)| {
                    let sess = &self.sessions[x.index()];
                    let side = sess.side_of(me.id);
                    sess.session_type == super::SessionType::Ibgp
                        && side.is_some_and(|side| !sess.reflects[side])
                });
                Tags {
                    by_peer,
                    peers,
                    class: (by_peer && me.node.is_some()).then_some(me.as_number),
                    plain,
                }
            })
            .collect()
    }

    /// Re-names every speaker's sources after the sessions changed, re-expressing the
    /// states of a speaker whose naming changed.
    pub(in crate::bgp) fn rename_sources(&mut self) {
        let tags = self.name_sources();
        for (s, new) in tags.into_iter().enumerate() {
            if self.rt[s].tags == new {
                continue;
            }
            let sid = SpeakerId(s as u32);
            let held: Vec<(PrefixId, Destination)> = self
                .table
                .held(sid)
                .map(|(p, _)| (p, self.destination(sid, p)))
                .collect();
            self.rt[s].tags = new;
            for (p, d) in held {
                let id = self.intern(sid, &d);
                self.table.set(sid, p, id);
            }
        }
    }

    /// Turns sharing off (every speaker names sources by session, nothing is replayed) or
    /// on; the property test's per-speaker reference. Set before anything is learned.
    #[cfg(test)]
    pub(crate) fn set_shared_states(&mut self, on: bool) {
        self.shared_states = on;
        self.rename_sources();
    }

    /// The tag `s` gives `source`.
    pub(super) fn tag(&self, s: SpeakerId, source: RouteSource) -> Tag {
        self.rt[s.index()].tags.tag(source, |x| {
            let sess = &self.sessions[x.index()];
            sess.side_of(s).and_then(|side| sess.peer_of(side))
        })
    }

    /// The candidates `s` holds for `p`, sources named by `s`'s sessions.
    pub(in crate::bgp) fn destination(&self, s: SpeakerId, p: PrefixId) -> Destination {
        self.destination_of(s, self.table.get(s, p))
    }

    fn destination_of(&self, s: SpeakerId, id: StateId) -> Destination {
        let tags = &self.rt[s.index()].tags;
        let routes = self
            .states
            .get(id)
            .held
            .iter()
            .map(|h| {
                let key = RouteKey {
                    source: tags.source(h.tag),
                    path: h.path,
                };
                let mut route = Route::new(key, h.attrs.clone());
                route.status = h.status;
                route
            })
            .collect();
        Destination { routes }
    }

    /// The state of `d`, the candidates of `s`, interned.
    fn intern(&mut self, s: SpeakerId, d: &Destination) -> StateId {
        let held = d
            .routes
            .iter()
            .map(|r| Held {
                attrs: r.attrs.clone(),
                tag: self.tag(s, r.source()),
                path: r.key().path,
                status: r.status,
            })
            .collect();
        self.states.intern(State { held })
    }

    /// Sets candidate `key` (tagged `tag` by `s`) of `p` to `attrs`, or removes it
    /// (`None`), and runs the decision as it calls for: the new state, with what happened.
    /// Replayed from the memo where another speaker of the same class took the step.
    pub(super) fn step(
        &mut self,
        s: SpeakerId,
        p: PrefixId,
        key: RouteKey,
        tag: Tag,
        attrs: Option<&Attrs>,
    ) -> Stepped {
        let from = self.table.get(s, p);
        let memo = self.rt[s.index()].tags.class.map(|class| Step {
            from,
            class,
            tag,
            path: key.path,
            attrs: Step::address(attrs),
        });
        if let Some((to, outcome)) = memo.as_ref().and_then(|m| self.states.recall(m)) {
            self.table.set(s, p, to);
            return Stepped {
                from,
                to,
                outcome,
                replayable: true,
            };
        }
        let mut d = self.destination_of(s, from);
        let kept = attrs.filter(|_| memo.is_some()).cloned();
        let change = match attrs {
            Some(attrs) => d.upsert(key, attrs.clone()),
            None if d.remove(key) => Upsert::Replaced,
            None => Upsert::Unchanged,
        };
        let (outcome, asked_underlay) = match change {
            Upsert::Unchanged => (Outcome::Unchanged, false),
            Upsert::Inserted(i) => {
                let (admitted, asked) =
                    self.deciding(s, |ctx| decision::admit(&mut d.routes, i, ctx));
                if admitted {
                    (Outcome::Admitted, asked)
                } else {
                    let more = self.run_decision(s, &mut d);
                    (self.decided(s, from, &d), asked || more)
                }
            }
            Upsert::Replaced => {
                let asked = self.run_decision(s, &mut d);
                (self.decided(s, from, &d), asked)
            }
        };
        let to = match outcome {
            Outcome::Unchanged => from,
            _ => self.intern(s, &d),
        };
        self.table.set(s, p, to);
        let replayable = memo.is_some() && !asked_underlay;
        if let Some(m) = memo.filter(|_| replayable) {
            self.states.remember(m, kept, (to, outcome));
        }
        Stepped {
            from,
            to,
            outcome,
            replayable,
        }
    }

    /// [`BgpEngine::step`] for route `i` of a body `s` applies, whose steps are kept in
    /// `slot` of [`BodySteps`] (`at`: the slot, `i` and whether the route passed the import
    /// check, which `attrs` already reflects): taken again by position where an earlier
    /// receiver took it from the same state, else taken and kept if replayable.
    pub(super) fn step_in_body(
        &mut self,
        s: SpeakerId,
        p: PrefixId,
        key: RouteKey,
        tag: Tag,
        attrs: Option<&Attrs>,
        at: Option<(BodySlotId, usize, bool)>,
    ) -> Stepped {
        let Some((slot, i, accepted)) = at else {
            return self.step(s, p, key, tag, attrs);
        };
        let from = self.table.get(s, p);
        if let Some((to, outcome)) = self.body_steps.get(slot, i, from, accepted) {
            self.table.set(s, p, to);
            return Stepped {
                from,
                to,
                outcome,
                replayable: true,
            };
        }
        let step = self.step(s, p, key, tag, attrs);
        if step.replayable {
            self.body_steps
                .put(slot, i, from, accepted, (step.to, step.outcome));
        }
        step
    }

    /// Runs the whole decision process for `p` at `s` again (a next hop's reachability or
    /// cost changed): the old and new states, with what happened. Never replayed: it runs
    /// because the underlay changed, which no memo entry knows.
    pub(super) fn redecide(&mut self, s: SpeakerId, p: PrefixId) -> (StateId, StateId, Outcome) {
        let from = self.table.get(s, p);
        let mut d = self.destination_of(s, from);
        self.run_decision(s, &mut d);
        let outcome = self.decided(s, from, &d);
        let to = self.intern(s, &d);
        self.table.set(s, p, to);
        (from, to, outcome)
    }

    /// Runs the whole decision process on `d`, the candidates of `s`; returns whether it
    /// asked the underlay.
    fn run_decision(&mut self, s: SpeakerId, d: &mut Destination) -> bool {
        #[cfg(test)]
        {
            self.decisions += 1;
        }
        let ((), asked) = self.deciding(s, |ctx| {
            decision::run(&mut d.routes, ctx);
        });
        asked
    }

    /// What the decision that made `d` (the candidates of `s`) out of state `from` changed.
    fn decided(&self, s: SpeakerId, from: StateId, d: &Destination) -> Outcome {
        let before = self.states.get(from).best();
        let after = d.best();
        let changed = match (before, after) {
            (None, None) => false,
            (Some(b), Some(a)) => {
                b.tag != self.tag(s, a.source())
                    || b.path != a.key().path
                    || !(Arc::ptr_eq(&b.attrs, &a.attrs) || b.attrs == a.attrs)
            }
            _ => true,
        };
        // What a FIB is built from: the next hop of a learned best route (an originated
        // one is the node's own blackhole or pod route, which IPAM decides).
        let fib_before = before
            .filter(|b| b.tag != LOCAL_TAG)
            .map(|b| b.attrs.next_hop);
        let fib_after = after
            .filter(|a| a.source() != RouteSource::Local)
            .map(|a| a.attrs.next_hop);
        Outcome::Decided {
            changed,
            fib_changed: fib_before != fib_after,
        }
    }

    /// The prefixes `s` holds a candidate for or advertised something for, in id order.
    pub(in crate::bgp) fn prefixes_of(&self, s: SpeakerId) -> Vec<PrefixId> {
        let held: Vec<PrefixId> = self.table.held(s).map(|(p, _)| p).collect();
        let advertised: Vec<PrefixId> = self.rt[s.index()]
            .rib
            .advertisements()
            .map(|(p, _)| p)
            .collect();
        either(&held, &advertised)
    }

    /// Collects the states no speaker holds any more, when enough may have been dropped.
    pub(super) fn collect_states(&mut self) {
        if self.states.wants_collection() {
            self.collect_unused_states();
        }
    }

    /// Collects the states no speaker holds now, however few (the property test does after
    /// every step: collection renumbers states and changes nothing else).
    pub(crate) fn collect_unused_states(&mut self) {
        let BgpEngine {
            states,
            table,
            body_steps,
            ..
        } = self;
        body_steps.clear();
        states.collect(table.slots_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::rib::PathId;

    fn body() -> Arc<UpdateBody> {
        Arc::new(UpdateBody {
            withdrawn: vec![(PrefixId(1), PathId(0))],
            announced: Vec::new(),
            end_of_rib: false,
        })
    }

    const STEP: (StateId, Outcome) = (
        StateId(7),
        Outcome::Decided {
            changed: true,
            fib_changed: true,
        },
    );

    #[test]
    fn a_step_is_found_by_body_identity_position_and_start() {
        let mut steps = BodySteps::default();
        let (b, twin) = (body(), body());
        let slot = steps.slot(&b, 64512, 3);
        steps.put(slot, 0, StateId(2), true, STEP);
        let again = steps.slot(&b, 64512, 3);
        assert_eq!(steps.get(again, 0, StateId(2), true), Some(STEP));
        assert_eq!(steps.get(again, 0, StateId(5), true), None, "another start");
        assert_eq!(
            steps.get(again, 0, StateId(2), false),
            None,
            "rejected on import"
        );
        // An equal body that is another message, another class or another sender are
        // slots of their own.
        for other in [
            steps.slot(&twin, 64512, 3),
            steps.slot(&b, 64513, 3),
            steps.slot(&b, 64512, 4),
        ] {
            assert_eq!(steps.get(other, 0, StateId(2), true), None);
        }
        steps.clear();
        let slot = steps.slot(&b, 64512, 3);
        assert_eq!(steps.get(slot, 0, StateId(2), true), None, "cleared");
    }

    #[test]
    fn a_position_keeps_the_last_few_starts_and_forgets_the_oldest() {
        let mut steps = BodySteps::default();
        let b = body();
        let slot = steps.slot(&b, 64512, 3);
        // Starts 10, 11, 12, 13 fill the WAYS = 4 ways; each leads to its own state.
        for start in 10..10 + WAYS as u32 {
            steps.put(
                slot,
                0,
                StateId(start),
                true,
                (StateId(start + 100), STEP.1),
            );
        }
        for start in 10..10 + WAYS as u32 {
            let found = steps.get(slot, 0, StateId(start), true);
            assert_eq!(found, Some((StateId(start + 100), STEP.1)), "start {start}");
        }
        // A fifth start pushes out the first one put (10), and only that one.
        steps.put(slot, 0, StateId(20), true, STEP);
        assert_eq!(steps.get(slot, 0, StateId(10), true), None, "oldest gone");
        assert_eq!(steps.get(slot, 0, StateId(20), true), Some(STEP));
        assert_eq!(
            steps.get(slot, 0, StateId(11), true),
            Some((StateId(111), STEP.1))
        );
    }

    #[test]
    fn the_oldest_body_makes_room_once_every_slot_is_taken() {
        let mut steps = BodySteps::default();
        let first = body();
        let slot = steps.slot(&first, 64512, 3);
        steps.put(slot, 0, StateId(2), true, STEP);
        let others: Vec<Arc<UpdateBody>> = (0..BODY_SLOTS - 1).map(|_| body()).collect();
        for b in &others {
            steps.slot(b, 64512, 3);
        }
        let slot = steps.slot(&first, 64512, 3);
        assert_eq!(
            steps.get(slot, 0, StateId(2), true),
            Some(STEP),
            "still kept"
        );
        steps.slot(&body(), 64512, 3);
        let slot = steps.slot(&first, 64512, 3);
        assert_eq!(steps.get(slot, 0, StateId(2), true), None, "pushed out");
    }
}
