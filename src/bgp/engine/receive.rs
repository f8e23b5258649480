//! Receiving UPDATEs: delivery into each speaker's inbox, one message processed at a time,
//! and applying it to the Adj-RIB-In (import checks) before the decision runs.

use crate::bgp::SpeakerId;
use crate::bgp::peering::{SessionState, SessionType};
use crate::bgp::policy::import_check;
use crate::bgp::rib::{PathId, PrefixId, RouteKey, RouteSource};
use crate::model::time::{SimDuration, SimTime};

use super::{BatchId, BgpEngine, BgpEvent, BgpLogKind, Delivery, Scheduled, Update};

impl BgpEngine {
    /// Queues each arriving UPDATE at its receiver; receivers that were idle start on it
    /// and finish together (one event per finishing instant, in arrival order).
    pub(super) fn on_deliver(&mut self, now: SimTime, batch: BatchId, out: &mut Scheduled) {
        let Some(deliveries) = self.in_flight.take(batch) else {
            return;
        };
        let mut finishing: Vec<(SimTime, Vec<(SpeakerId, u32)>)> = Vec::new();
        for Delivery { epoch, update } in deliveries {
            if self.srt[update.session.index()].epoch != epoch {
                continue;
            }
            let to = update.to;
            let cost = self.processing_cost(&update);
            let r = &mut self.rt[to.index()];
            if !r.up {
                continue;
            }
            r.inbox.push_back((epoch, update));
            if !r.processing {
                r.processing = true;
                let at = now + cost;
                let entry = (to, r.incarnation);
                match finishing.iter_mut().find(|(t, _)| *t == at) {
                    Some((_, group)) => group.push(entry),
                    None => finishing.push((at, vec![entry])),
                }
            }
        }
        for (at, group) in finishing {
            let event = match group[..] {
                [(speaker, incarnation)] => BgpEvent::ProcessNext {
                    speaker,
                    incarnation,
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

    pub(super) fn on_process_next(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        incarnation: u32,
        out: &mut Scheduled,
    ) {
        let r = &mut self.rt[s.index()];
        if r.incarnation != incarnation || !r.up {
            return;
        }
        let Some((epoch, update)) = r.inbox.pop_front() else {
            r.processing = false;
            return;
        };
        let x = update.session;
        if self.srt[x.index()].epoch == epoch
            && self.sessions[x.index()].state == SessionState::Established
        {
            self.apply(now, s, update, out);
        }
        let r = &mut self.rt[s.index()];
        let next = r.inbox.front().map(|(_, u)| u.prefix_count());
        match next {
            Some(n) => {
                let cost = self.settings.processing_delay
                    + self.settings.per_prefix_delay.saturating_mul(n as u64);
                out.push((
                    now + cost,
                    BgpEvent::ProcessNext {
                        speaker: s,
                        incarnation,
                    },
                ));
            }
            None => {
                r.processing = false;
                if !r.dirty.is_empty() && !r.flush_scheduled {
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
        }
    }

    /// Applies a received UPDATE to the Adj-RIB-In and re-runs the decision for its prefixes.
    pub(super) fn apply(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        update: Update,
        out: &mut Scheduled,
    ) {
        let x = update.session;
        let key = |path: PathId| RouteKey {
            source: RouteSource::Peer(x),
            path,
        };
        let sess = &self.sessions[x.index()];
        let ebgp = sess.session_type == SessionType::Ebgp;
        let from_client = sess.side_of(s).is_some_and(|side| sess.reflects[side]);
        let tag = self.tag(s, RouteSource::Peer(x));
        self.rt[s.index()].received += 1;
        for &(p, path) in &update.body.withdrawn {
            self.set_tagged(now, s, p, key(path), tag, None, out);
        }
        for (p, path, attrs) in &update.body.announced {
            let (p, path, attrs) = (*p, *path, attrs.clone());
            match import_check(&attrs, ebgp, from_client, &self.speakers[s.index()]) {
                Err(why) => {
                    if self.options.routes {
                        let subject = format!("{} <- {}", self.name(s), self.name(update.from));
                        let outcome = format!("{} rejected: {why}", self.prefixes.net(p));
                        self.note(now, BgpLogKind::RouteRejected, subject, outcome);
                    } else {
                        self.last_activity = self.last_activity.max(now);
                    }
                    self.set_tagged(now, s, p, key(path), tag, None, out);
                }
                Ok(()) => self.set_tagged(now, s, p, key(path), tag, Some(attrs), out),
            }
        }
        let body = &update.body;
        if body.end_of_rib || !self.restart.is_idle() {
            let touched: Vec<(PrefixId, PathId)> = body
                .withdrawn
                .iter()
                .copied()
                .chain(body.announced.iter().map(|(p, path, _)| (*p, *path)))
                .collect();
            self.restart_on_update(now, s, x, &touched, body.end_of_rib, out);
        }
    }
}
