//! Receiving UPDATEs: delivery into each speaker's inbox, one message processed at a time,
//! and applying it to the Adj-RIB-In (import checks) before the decision runs.

use std::net::IpAddr;

use crate::bgp::SpeakerId;
use crate::bgp::peering::SessionType;
use crate::bgp::policy::{ImportRejected, import_check, originator_check};
use crate::bgp::rib::{Attrs, EMPTY, PathId, PrefixId, RouteKey, RouteSource, StateId, Tag};
use crate::model::time::{SimDuration, SimTime};

use super::prefetch::{DELIVERIES_AHEAD, prefetch_line};
use super::shared::Stepped;
use super::{BatchId, BgpEngine, BgpEvent, BgpLogKind, InProcess, Scheduled, Update};

/// Messages started, by the instant they finish, in the order they started.
pub(super) type Finishing = Vec<(SimTime, Vec<InProcess>)>;

/// How many announcements ahead of the one being applied [`BgpEngine::prefetch_route`]
/// asks for.
const AHEAD: usize = 6;

/// What applying a message's routes reads of its session and receiver, read once per
/// message (a full table is thousands of routes, each of which read them again).
#[derive(Clone, Copy)]
struct Receiving {
    /// The session is eBGP.
    ebgp: bool,
    /// The sender is the receiver's reflector client.
    from_client: bool,
    /// How the receiver names the sender in shared states.
    tag: Tag,
    /// The receiver's BGP identifier (`SpeakerRt::router_id`).
    me: Option<IpAddr>,
    /// The receiver's memo class (`Tags::class`).
    class: Option<u32>,
}

/// The steps the receivers of a group (`BgpEvent::ProcessMany`) took for the group's
/// message, when it was one announcement applied by a plain speaker: a later receiver of
/// the same message, named the same and in a state one of them was in, takes the same
/// step, and takes it from here rather than from the memo (`shared.rs`), whose key is the
/// same (the body names the prefix, path and attributes). Hundreds of a reflector's
/// clients finish one message together, in two or three states (which of the other
/// reflectors' copies reached them first), met in any order.
#[derive(Default)]
pub(super) struct GroupSteps {
    /// The message's body (its address: the group holds it, so it is not reused), how the
    /// receivers named the sender and their memo class.
    message: Option<(usize, Tag, u32)>,
    /// The states met, the latest first, and how many of them are kept: a lookup compares
    /// four ids side by side rather than walking entries.
    from: [StateId; GROUP_STEPS],
    kept: usize,
    /// The steps taken from `from`, index for index.
    taken: [Option<Stepped>; GROUP_STEPS],
}

/// How many steps [`GroupSteps`] keeps.
const GROUP_STEPS: usize = 4;

impl GroupSteps {
    /// The step taken from `from` for `message`, if kept. Inlined where a group's plain
    /// receivers finish, once per receiver.
    #[inline(always)]
    fn get(&self, message: (usize, Tag, u32), from: StateId) -> Option<Stepped> {
        if self.message != Some(message) {
            return None;
        }
        let i = self.from[..self.kept].iter().position(|&f| f == from)?;
        self.taken[i]
    }

    /// Keeps `stepped`, taken from `from` for `message`, if another speaker may take it.
    fn put(&mut self, message: (usize, Tag, u32), from: StateId, stepped: Stepped) {
        if self.message != Some(message) {
            *self = GroupSteps {
                message: Some(message),
                ..GroupSteps::default()
            };
        }
        if stepped.shared {
            self.from.rotate_right(1);
            self.taken.rotate_right(1);
            self.from[0] = from;
            self.taken[0] = Some(stepped);
            self.kept = (self.kept + 1).min(GROUP_STEPS);
        }
    }
}

impl BgpEngine {
    /// Queues each arriving UPDATE at its receiver; receivers that were idle start on it
    /// and finish together (one event per finishing instant, in arrival order).
    pub(super) fn on_deliver(&mut self, now: SimTime, batch: BatchId, out: &mut Scheduled) {
        let Some(deliveries) = self.in_flight.take(batch) else {
            return;
        };
        let mut finishing: Finishing = Vec::new();
        let count = deliveries.len();
        let mut deliveries = deliveries.into_iter();
        let mut i = 0;
        while let Some(delivery) = deliveries.next() {
            let ahead = deliveries.as_slice();
            if let Some(d) = ahead.get(DELIVERIES_AHEAD - 1) {
                self.prefetch_delivery(d);
            }
            if let Some(d) = ahead.get(DELIVERIES_AHEAD / 2 - 1) {
                self.prefetch_queue_back(d.update.to);
            }
            i += 1;
            let update = &delivery.update;
            if !self.up.is_up(update.session, update.epoch) {
                continue;
            }
            let to = update.to;
            let at = now + self.processing_cost(update);
            let r = &mut self.rt[to.index()];
            if !r.up {
                continue;
            }
            if r.processing {
                r.waiting += 1;
                self.inboxes[to.index()].push_back(delivery);
                continue;
            }
            r.processing = true;
            let started = InProcess {
                speaker: to,
                incarnation: r.incarnation,
                delivery,
            };
            match finishing.iter_mut().find(|(t, _)| *t == at) {
                Some((_, group)) => group.push(started),
                None => {
                    // Most arrivals finish together: room for this one and all that are left.
                    let mut group = Vec::with_capacity(count - i + 1);
                    group.push(started);
                    finishing.push((at, group));
                }
            }
        }
        self.schedule_finishing(finishing, out);
    }

    /// Schedules the messages speakers started, grouped by the instant they finish (in the
    /// order they started): one `ProcessNext` for a lone one, one `ProcessMany` for more.
    pub(super) fn schedule_finishing(&mut self, finishing: Finishing, out: &mut Scheduled) {
        for (at, mut group) in finishing {
            let event = match group.len() {
                1 => BgpEvent::ProcessNext {
                    message: self.in_process.put(group.remove(0)),
                },
                _ => BgpEvent::ProcessMany {
                    batch: self.finishing.put(group),
                },
            };
            out.push((at, event));
        }
    }

    pub(super) fn processing_cost(&self, update: &Update) -> SimDuration {
        self.settings.processing_delay
            + self
                .settings
                .per_prefix_delay
                .saturating_mul(update.prefix_count() as u64)
    }

    /// A speaker has processed a message: it applies it (if its session still stands) and
    /// starts on the next one waiting, or, with none, sends what it decided. The next
    /// message goes to `starting`, with those other speakers finishing at `now` start, to
    /// be scheduled by [`Self::schedule_finishing`] once all are handled: speakers that
    /// finished together and each had another waiting finish that one together too, in
    /// one event, where their lines are asked for ahead (`prefetch.rs`). (Events at one
    /// instant keep their order: the only events a handler schedules after `now` are
    /// these; one that finishes at `now`, when processing takes no time, is scheduled in
    /// place.) Inlined in the handler, which calls it once per message received: the call
    /// and its frame were a tenth of its instructions.
    #[inline(always)]
    pub(super) fn on_process_next(
        &mut self,
        now: SimTime,
        done: InProcess,
        starting: &mut Finishing,
        out: &mut Scheduled,
    ) {
        let InProcess {
            speaker: s,
            incarnation,
            delivery,
        } = done;
        let r = &mut self.rt[s.index()];
        if r.incarnation != incarnation || !r.up {
            return;
        }
        // While the message is applied, `processing` says whether others wait behind it
        // (`schedule_export` holds the flush until the last).
        r.processing = r.waiting != 0;
        let update = &delivery.update;
        if self.up.is_up(update.session, update.epoch) {
            self.apply(now, s, update, out);
        }
        let next = self.inboxes[s.index()].pop_front();
        match next {
            Some(next) => {
                let at = now + self.processing_cost(&next.update);
                let r = &mut self.rt[s.index()];
                r.processing = true;
                r.waiting -= 1;
                let started = InProcess {
                    speaker: s,
                    incarnation,
                    delivery: next,
                };
                if at == now {
                    let message = self.in_process.put(started);
                    out.push((at, BgpEvent::ProcessNext { message }));
                    return;
                }
                match starting.iter_mut().find(|(t, _)| *t == at) {
                    Some((_, group)) => group.push(started),
                    None => starting.push((at, vec![started])),
                }
            }
            None => {
                self.rt[s.index()].processing = false;
                self.flush_when_done(now, s, incarnation, out);
            }
        }
    }

    /// Finishes `m`, a member of a group finishing together, if it is the common case: a
    /// plain speaker (`Tags::plain`, with a memo class) with nothing queued behind it
    /// applying one announcement it accepts while no restart is under way. Does what
    /// [`Self::on_process_next`] does for it, step by step, taking the step from `steps`
    /// where an earlier receiver took it (`GroupSteps`); returns `false`, having changed
    /// nothing, for any other message, which [`Self::on_process_next`] then finishes.
    /// A message whose receiver restarted or went down since it started is dropped, as
    /// there. (In rr-1000's cold start, 1.25 of the 1.42 million messages applied end
    /// here, nearly all taking a step an earlier receiver took: the BGP engine's
    /// instructions fell 2.4 %.)
    #[inline(always)]
    pub(super) fn finish_plain(
        &mut self,
        now: SimTime,
        m: &InProcess,
        steps: &mut GroupSteps,
        out: &mut Scheduled,
    ) -> bool {
        let (s, update) = (m.speaker, &m.delivery.update);
        let body = &update.body;
        let ([], [(p, path, attrs)]) = (&body.withdrawn[..], &body.announced[..]) else {
            return false;
        };
        let r = &self.rt[s.index()];
        if r.incarnation != m.incarnation || !r.up {
            return true;
        }
        let (Some(tag), Some(class), Some(me)) =
            (r.tags.plain_tag(update.from), r.tags.class, r.router_id)
        else {
            return false;
        };
        if r.waiting != 0
            || body.end_of_rib
            || !self.restart.is_idle()
            || originator_check(attrs, me).is_err()
            || !self.up.is_up(update.session, update.epoch)
        {
            return false;
        }
        #[cfg(test)]
        {
            let speaker = &self.speakers[s.index()];
            assert_eq!(r.router_id, Some(speaker.router_id));
            assert_eq!(import_check(attrs, false, false, speaker), Ok(()));
            assert_eq!(tag, self.tag(s, RouteSource::Peer(update.session)));
            assert!(
                self.inboxes[s.index()].is_empty(),
                "nothing waits behind it"
            );
            self.plain_finished.0 += 1;
        }
        let r = &mut self.rt[s.index()];
        r.processing = false;
        r.received += 1;
        let (p, key) = (
            *p,
            RouteKey {
                source: RouteSource::Peer(update.session),
                path: *path,
            },
        );
        let message = (std::sync::Arc::as_ptr(body) as usize, tag, class);
        let slot = self.table.slot_mut(s, p);
        let from = slot.as_deref().map_or(EMPTY, |id| *id);
        let stepped = match steps.get(message, from) {
            Some(stepped) => {
                match slot {
                    Some(slot) => *slot = stepped.to,
                    None => self.table.set(s, p, stepped.to),
                }
                #[cfg(test)]
                {
                    self.plain_finished.1 += 1;
                }
                stepped
            }
            None => {
                let stepped = self.step(s, p, key, (tag, Some(class)), Some(attrs));
                steps.put(message, from, stepped);
                stepped
            }
        };
        self.record(now, s, p, stepped.to, stepped.outcome, out);
        self.flush_when_done(now, s, m.incarnation, out);
        true
    }

    /// `s` (in `incarnation`) has processed every message it had: it sends what it decided,
    /// unless a flush is already on its way.
    #[inline(always)]
    fn flush_when_done(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        incarnation: u32,
        out: &mut Scheduled,
    ) {
        let r = &mut self.rt[s.index()];
        if r.marked && !r.flush_scheduled {
            r.flush_scheduled = true;
            out.push((
                now,
                BgpEvent::Flush {
                    speaker: s,
                    incarnation,
                },
            ));
        }
    }

    /// Asks for the lines applying an announcement of `p` with `attrs` at `s` reads first:
    /// the attributes the import check reads, the steps kept at `p` and `s`'s state id for
    /// it. A full table is thousands of announcements, each of another prefix, whose lines
    /// have left the cache since the last client applied them; asked for a few routes
    /// ahead, their misses overlap.
    fn prefetch_route(&self, s: SpeakerId, p: PrefixId, attrs: &Attrs) {
        prefetch_line(&attrs.originator_id);
        self.prefix_steps.prefetch(p);
        if let Some(slot) = self.table.slot(s, p) {
            prefetch_line(slot);
        }
    }

    /// Whether `s` accepts `attrs` for `p` from `update`'s sender (a rejection is logged).
    #[inline]
    fn imports(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: &Update,
        p: PrefixId,
        attrs: &Attrs,
        Receiving {
            ebgp,
            from_client,
            me,
            ..
        }: Receiving,
    ) -> bool {
        // Over iBGP from a non-client (every route a reflector's client or a mesh node
        // learns) only the ORIGINATOR_ID is checked: the receiver's `Speaker` is not read.
        let checked = match me {
            Some(me) if !ebgp && !from_client => originator_check(attrs, me),
            _ => import_check(attrs, ebgp, from_client, &self.speakers[s.index()]),
        };
        #[cfg(test)]
        {
            let me = &self.speakers[s.index()];
            assert_eq!(self.rt[s.index()].router_id, Some(me.router_id));
            assert_eq!(checked, import_check(attrs, ebgp, from_client, me));
        }
        match checked {
            Ok(()) => true,
            Err(why) => {
                self.rejected(now, s, update, p, why);
                false
            }
        }
    }

    /// Logs (with `--events all`) that `s` rejected `p` from `update`'s sender.
    #[cold]
    #[inline(never)]
    fn rejected(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: &Update,
        p: PrefixId,
        why: ImportRejected,
    ) {
        if self.options.routes {
            let subject = format!("{} <- {}", self.name(s), self.name(update.from));
            let outcome = format!("{} rejected: {why}", self.prefixes.net(p));
            self.note(now, BgpLogKind::RouteRejected, subject, outcome);
        } else {
            self.last_activity = self.last_activity.max(now);
        }
    }

    /// What applying `update` at `s` needs of its session and of `s` ([`Receiving`]). A
    /// plain speaker (a client of reflectors, a full-mesh node: `Tags::plain`) learns every
    /// route over iBGP from a non-client, and when it names sources by peer the sender
    /// is the name; the session is not read (a line per message, of millions).
    fn receiving(&self, s: SpeakerId, update: &Update) -> Receiving {
        let r = &self.rt[s.index()];
        let (me, class) = (r.router_id, r.tags.class);
        if let Some(tag) = r.tags.plain_tag(update.from) {
            #[cfg(test)]
            {
                let sess = &self.sessions[update.session.index()];
                assert_eq!(sess.session_type, SessionType::Ibgp);
                assert!(!sess.side_of(s).is_some_and(|side| sess.reflects[side]));
                assert_eq!(tag, self.tag(s, RouteSource::Peer(update.session)));
            }
            return Receiving {
                ebgp: false,
                from_client: false,
                tag,
                me,
                class,
            };
        }
        let x = update.session;
        let sess = &self.sessions[x.index()];
        Receiving {
            ebgp: sess.session_type == SessionType::Ebgp,
            from_client: sess.side_of(s).is_some_and(|side| sess.reflects[side]),
            tag: self.tag(s, RouteSource::Peer(x)),
            me,
            class,
        }
    }

    /// Applies a received UPDATE to the Adj-RIB-In and re-runs the decision for its prefixes.
    pub(super) fn apply(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: &Update,
        out: &mut Scheduled,
    ) {
        let receiving = self.receiving(s, update);
        let r = &mut self.rt[s.index()];
        r.received += 1;
        if let ([], [(p, path, attrs)]) = (&update.body.withdrawn[..], &update.body.announced[..]) {
            // One announcement, as most messages are: its state id was asked for with the
            // receiver's lines (`prefetch_receiver`), and hundreds of receivers applying it
            // together share its attributes and steps.
            self.apply_route(now, s, update, (*p, *path, Some(attrs)), receiving, out);
        } else {
            self.apply_each(now, s, update, receiving, out);
        }
        if update.body.end_of_rib || !self.restart.is_idle() {
            self.restart_on_update(now, s, update.session, &update.body, out);
        }
    }

    /// Applies one route of `update` (an announcement with its attributes, or a withdrawal)
    /// at `s`: the import check, the step of `s`'s state and what it means beyond the RIB.
    #[inline(always)]
    fn apply_route(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: &Update,
        (p, path, attrs): (PrefixId, PathId, Option<&Attrs>),
        receiving: Receiving,
        out: &mut Scheduled,
    ) {
        let accepted = match attrs {
            Some(attrs) => self.imports(now, s, update, p, attrs, receiving),
            None => true,
        };
        let key = RouteKey {
            source: RouteSource::Peer(update.session),
            path,
        };
        let (tag, class) = (receiving.tag, receiving.class);
        let step = self.step(s, p, key, (tag, class), attrs.filter(|_| accepted));
        self.record(now, s, p, step.to, step.outcome, out);
    }

    /// [`BgpEngine::apply`] route by route, asking for each one's lines a few routes ahead.
    fn apply_each(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: &Update,
        receiving: Receiving,
        out: &mut Scheduled,
    ) {
        let withdrawn = update
            .body
            .withdrawn
            .iter()
            .map(|&(p, path)| (p, path, None));
        let announced = &update.body.announced;
        for (p, _, attrs) in announced.iter().take(AHEAD) {
            self.prefetch_route(s, *p, attrs);
        }
        let announced = announced
            .iter()
            .enumerate()
            .map(|(i, (p, path, attrs))| (*p, *path, Some(attrs), announced.get(i + AHEAD)));
        let withdrawn = withdrawn.map(|(p, path, attrs)| (p, path, attrs, None));
        for (p, path, attrs, ahead) in withdrawn.chain(announced) {
            if let Some((p, _, attrs)) = ahead {
                self.prefetch_route(s, *p, attrs);
            }
            self.apply_route(now, s, update, (p, path, attrs), receiving, out);
        }
    }
}
