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

use crate::bgp::decision;
use crate::bgp::rib::{
    Attrs, Destination, EMPTY, Held, LOCAL_TAG, Outcome, PrefixId, Route, RouteKey, RouteSource,
    State, StateId, Step, Tag, Upsert, either, same_attrs,
};
use crate::bgp::{SessionId, SpeakerId};

use super::BgpEngine;

/// The tag of a session named by itself.
const SESSION_TAG: Tag = 1 << 31;

/// How a speaker names the sources of its candidates in shared states.
#[derive(Clone, Debug, Default, PartialEq)]
pub(in crate::bgp) struct Tags {
    /// Sessions named by peer (tag = peer id + 1) rather than by id (`SESSION_TAG | id`).
    by_peer: bool,
    /// `(peer, session)` of every session ever naming the speaker, sorted by peer (and by
    /// session, which is the same order when `by_peer`).
    peers: Box<[(SpeakerId, SessionId)]>,
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

    /// The tag of a route `from` sends a plain speaker (see `plain`), when sources are
    /// named by peer; `None` otherwise (the session must be read).
    pub(super) fn plain_tag(&self, from: SpeakerId) -> Option<Tag> {
        (self.plain && self.by_peer).then_some(from.0 + 1)
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

/// The last steps taken at each prefix by speakers of a memo class. A reflector's clients
/// receive each prefix from the same few reflectors, in one shared UPDATE or in full tables
/// of their own, and meet it in one of a few states (which of the other reflectors' copies
/// reached them first), so the next client's step is one of the last few taken at that
/// prefix: found by the prefix id, in a few lines that stay in cache, rather than by hashing
/// into the memo. An entry is a memo entry (the same key, [`Step`], and the same rules:
/// never a step that asked the underlay), and goes with the memo when a collection
/// renumbers states. It holds the attributes, so their address is not reused while it
/// names them.
///
/// How many: with three reflectors a client meets a prefix in twelve ways (any of the three
/// first, then any of the other two, then the last), so four kept one step in nine for the
/// memo's hash table (8 million lookups in rr-5000, most of them cache misses); sixteen
/// keep them all. A step found moves one place forward, so the steps most clients take are
/// in the first lines, which are the ones asked for ahead ([`PrefixSteps::prefetch`]).
#[derive(Debug, Default)]
pub(super) struct PrefixSteps {
    by_prefix: Vec<Ways>,
}

/// How many steps are kept per prefix.
const WAYS: usize = 16;

/// How many of a prefix's first steps [`PrefixSteps::prefetch`] asks for: two lines.
const FIRST_WAYS: usize = 4;

/// The steps kept at one prefix: the steps (what a lookup reads), then the attributes each
/// set (only held, so their address is not reused while a step names it).
#[derive(Debug, Default)]
#[repr(C, align(64))]
struct Ways {
    kept: [Option<Kept>; WAYS],
    attrs: [Option<Attrs>; WAYS],
}

/// A step kept by [`PrefixSteps`] and where it led: half a cache line.
#[derive(Clone, Copy, Debug)]
struct Kept {
    step: Step,
    to: StateId,
    outcome: Outcome,
}

const _: () = assert!(
    std::mem::size_of::<Option<Kept>>() == 32,
    "two kept steps a cache line"
);

impl PrefixSteps {
    /// Where `step` at `p` led, if it is one of the last taken there (it then moves one
    /// place forward). Inlined where routes are received, once per route.
    #[inline(always)]
    pub(super) fn get(&mut self, p: PrefixId, step: &Step) -> Option<(StateId, Outcome)> {
        let ways = self.by_prefix.get_mut(p.index())?;
        for i in 0..WAYS {
            let kept = ways.kept[i].as_ref()?;
            if kept.step != *step {
                continue;
            }
            let found = (kept.to, kept.outcome);
            if i > 0 {
                ways.kept.swap(i, i - 1);
                ways.attrs.swap(i, i - 1);
            }
            return Some(found);
        }
        None
    }

    /// Asks for the lines of the first steps kept at `p` (`prefetch.rs`), and the line of
    /// their attributes, which a step found moves forward with it.
    pub(super) fn prefetch(&self, p: PrefixId) {
        if let Some(ways) = self.by_prefix.get(p.index())
            && let Some(first) = ways.kept.first_chunk::<FIRST_WAYS>()
        {
            super::prefetch::prefetch_all(first);
            super::prefetch::prefetch_line(&ways.attrs[0]);
        }
    }

    /// Keeps `step` at `p` (taken with `attrs`) and where it led, first, forgetting the
    /// last of the prefix's steps if every way is taken.
    pub(super) fn put(
        &mut self,
        p: PrefixId,
        step: Step,
        attrs: Option<Attrs>,
        (to, outcome): (StateId, Outcome),
    ) {
        debug_assert_eq!(step.attrs, Step::address(attrs.as_ref()));
        if p.index() >= self.by_prefix.len() {
            self.by_prefix.resize_with(p.index() + 1, Default::default);
        }
        let ways = &mut self.by_prefix[p.index()];
        ways.kept.rotate_right(1);
        ways.attrs.rotate_right(1);
        ways.kept[0] = Some(Kept { step, to, outcome });
        ways.attrs[0] = attrs;
    }

    /// Forgets every step (state ids are about to be renumbered).
    pub(super) fn clear(&mut self) {
        self.by_prefix.clear();
    }
}

/// Where a step of a speaker's state for a prefix ([`BgpEngine::step`]) led.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stepped {
    pub(super) to: StateId,
    pub(super) outcome: Outcome,
    /// Another speaker of the class may take it (it is in the memo, or may be: computing
    /// it did not ask the underlay).
    pub(super) shared: bool,
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
                    peers: peers.into_boxed_slice(),
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

    /// Sets candidate `key` (tagged `tag` by `s`, whose memo class is `class`) of `p` to
    /// `attrs`, or removes it (`None`), and runs the decision as it calls for: the new
    /// state, with what happened.
    /// Replayed from the memo where another speaker of the same class took the step.
    /// Inlined where routes are received: as a call, its entry and exit (saving and
    /// restoring registers) were 60 of the 460 million instructions of its 3 million calls
    /// on rr-1000 (callgrind: the BGP engine's instructions fell 5 % with this and
    /// [`BgpEngine::record`] inlined).
    #[inline(always)]
    pub(super) fn step(
        &mut self,
        s: SpeakerId,
        p: PrefixId,
        key: RouteKey,
        (tag, class): (Tag, Option<u32>),
        attrs: Option<&Attrs>,
    ) -> Stepped {
        #[cfg(test)]
        assert_eq!(
            class,
            self.rt[s.index()].tags.class,
            "the class passed is s's"
        );
        let Some(class) = class else {
            let from = self.table.get(s, p);
            return self.compute_step(s, p, (key, attrs), from, None);
        };
        let BgpEngine {
            table,
            prefix_steps,
            states,
            ..
        } = self;
        // The slot is looked up once for the read and the write of a step replayed.
        let slot = table.slot_mut(s, p);
        let from = slot.as_deref().map_or(EMPTY, |id| *id);
        let m = Step {
            from,
            class,
            tag,
            path: key.path,
            attrs: Step::address(attrs),
        };
        let recalled = match prefix_steps.get(p, &m) {
            Some(hit) => Some(hit),
            None => states.recall(&m).inspect(|&hit| {
                prefix_steps.put(p, m, attrs.cloned(), hit);
            }),
        };
        let Some((to, outcome)) = recalled else {
            return self.compute_step(s, p, (key, attrs), from, Some(m));
        };
        match slot {
            Some(slot) => *slot = to,
            None => table.set(s, p, to),
        }
        Stepped {
            to,
            outcome,
            shared: true,
        }
    }

    /// [`BgpEngine::step`] computed: the candidate set or removed in `s`'s state `from`,
    /// the decision run as it calls for, and the step remembered as `memo` (when `s`'s
    /// steps may be replayed and the decision did not ask the underlay).
    #[inline(never)]
    fn compute_step(
        &mut self,
        s: SpeakerId,
        p: PrefixId,
        (key, attrs): (RouteKey, Option<&Attrs>),
        from: StateId,
        memo: Option<Step>,
    ) -> Stepped {
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
        let shared = memo.is_some() && !asked_underlay;
        if let Some(m) = memo.filter(|_| shared) {
            self.prefix_steps.put(p, m, kept.clone(), (to, outcome));
            self.states.remember(m, kept, (to, outcome));
        }
        Stepped {
            to,
            outcome,
            shared,
        }
    }

    /// Runs the whole decision process for `p` at `s` again (a next hop's reachability or
    /// cost changed): the new state, with what happened. Never replayed: it runs
    /// because the underlay changed, which no memo entry knows.
    pub(super) fn redecide(&mut self, s: SpeakerId, p: PrefixId) -> (StateId, Outcome) {
        let from = self.table.get(s, p);
        let mut d = self.destination_of(s, from);
        self.run_decision(s, &mut d);
        let outcome = self.decided(s, from, &d);
        let to = self.intern(s, &d);
        self.table.set(s, p, to);
        (to, outcome)
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
                    || !same_attrs(&b.attrs, &a.attrs)
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
            best: (before.is_some(), after.is_some()),
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
            prefix_steps,
            ..
        } = self;
        prefix_steps.clear();
        states.collect(table.slots_mut());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::bgp::rib::{PathAttributes, PathId};

    fn attrs() -> Attrs {
        Arc::new(PathAttributes::local("10.0.0.1".parse().unwrap()))
    }

    /// A step from `from` setting candidate tag 3, path 0, to `attrs` at a node of AS 64512.
    fn step(from: u32, attrs: &Attrs) -> Step {
        Step {
            from: StateId(from),
            class: 64512,
            tag: 3,
            path: PathId(0),
            attrs: Step::address(Some(attrs)),
        }
    }

    const DECIDED: Outcome = Outcome::Decided {
        changed: true,
        fib_changed: true,
        best: (false, true),
    };

    #[test]
    fn a_step_is_found_by_prefix_and_its_whole_key() {
        let mut steps = PrefixSteps::default();
        let (a, twin) = (attrs(), attrs());
        let p = PrefixId(7);
        steps.put(p, step(2, &a), Some(a.clone()), (StateId(9), DECIDED));
        assert_eq!(steps.get(p, &step(2, &a)), Some((StateId(9), DECIDED)));
        assert_eq!(steps.get(PrefixId(6), &step(2, &a)), None, "another prefix");
        assert_eq!(steps.get(PrefixId(70), &step(2, &a)), None, "never seen");
        assert_eq!(steps.get(p, &step(5, &a)), None, "another start");
        // Equal attributes that are another allocation, a removal, another class, tag or
        // path are other steps.
        let removal = Step {
            attrs: 0,
            ..step(2, &a)
        };
        let class = Step {
            class: 64513,
            ..step(2, &a)
        };
        let tag = Step {
            tag: 4,
            ..step(2, &a)
        };
        let path = Step {
            path: PathId(1),
            ..step(2, &a)
        };
        for other in [step(2, &twin), removal, class, tag, path] {
            assert_eq!(steps.get(p, &other), None, "{other:?}");
        }
        steps.clear();
        assert_eq!(steps.get(p, &step(2, &a)), None, "cleared");
    }

    #[test]
    fn a_prefix_keeps_the_last_few_steps_and_forgets_the_oldest() {
        let mut steps = PrefixSteps::default();
        let a = attrs();
        let p = PrefixId(0);
        // Starts 10, 11, … fill the WAYS ways; each leads to its own state.
        for from in 10..10 + WAYS as u32 {
            steps.put(
                p,
                step(from, &a),
                Some(a.clone()),
                (StateId(from + 100), DECIDED),
            );
        }
        for from in 10..10 + WAYS as u32 {
            let found = steps.get(p, &step(from, &a));
            assert_eq!(found, Some((StateId(from + 100), DECIDED)), "from {from}");
        }
        // One more pushes out the first one put (10), and only that one.
        steps.put(p, step(500, &a), Some(a.clone()), (StateId(7), DECIDED));
        assert_eq!(steps.get(p, &step(10, &a)), None, "oldest gone");
        assert_eq!(steps.get(p, &step(500, &a)), Some((StateId(7), DECIDED)));
        assert_eq!(steps.get(p, &step(11, &a)), Some((StateId(111), DECIDED)));
    }

    /// A step found moves one place forward: one found at every turn stays while newer
    /// steps push the others out.
    #[test]
    fn a_step_found_often_stays_kept() {
        let mut steps = PrefixSteps::default();
        let a = attrs();
        let p = PrefixId(3);
        for from in 0..WAYS as u32 {
            steps.put(
                p,
                step(from, &a),
                Some(a.clone()),
                (StateId(from + 100), DECIDED),
            );
        }
        // Start 0 was put first, so it is last: found WAYS - 1 times, it is first.
        for _ in 1..WAYS {
            assert_eq!(steps.get(p, &step(0, &a)), Some((StateId(100), DECIDED)));
        }
        // WAYS - 1 new steps push out every other old one, not it.
        for from in 1000..1000 + WAYS as u32 - 1 {
            steps.put(p, step(from, &a), Some(a.clone()), (StateId(7), DECIDED));
        }
        assert_eq!(steps.get(p, &step(0, &a)), Some((StateId(100), DECIDED)));
        for from in 1..WAYS as u32 {
            assert_eq!(steps.get(p, &step(from, &a)), None, "from {from}");
        }
    }

    #[test]
    fn a_kept_step_holds_its_attributes_so_their_address_stays_theirs() {
        let mut steps = PrefixSteps::default();
        let a = attrs();
        let key = step(2, &a);
        steps.put(PrefixId(1), key, Some(a.clone()), (StateId(3), DECIDED));
        assert_eq!(Arc::strong_count(&a), 2, "the entry holds a reference");
        steps.clear();
        assert_eq!(Arc::strong_count(&a), 1, "dropped with the entry");
    }
}
