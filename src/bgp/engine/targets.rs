//! What a speaker's flushes read of its sessions, kept between flushes: the targets a flush
//! visits (each session of the speaker's lists with its side, peer, list, place and interned
//! export profile), and which sessions are Established, by the epoch they came up in. The
//! sending itself is `send.rs`; this is only what it reads, and the checks that hold it to
//! the sessions it mirrors.

use crate::bgp::peering::SessionType;
use crate::bgp::{SessionId, SpeakerId};
use crate::model::time::SimDuration;

use super::groups::{ExportProfiles, ProfileId};
use super::{BgpEngine, VISIT_CLIENTS, VISIT_EBGP, VISIT_NON_CLIENTS};

/// What a speaker's flushes read of its sessions, kept from one flush to the next rather
/// than read again from each [`Session`](crate::bgp::Session) and both speakers per flush
/// and target: a reflector's flush visits thousands of sessions, and reading their
/// parameters (and interning their export profiles) each time cost more than sending.
///
/// Invariants: a speaker's [`Target`]s are exactly the sessions of its lists (eBGP,
/// clients, non-clients) with their parameters now — they are dropped whenever the peering
/// is reconfigured ([`BgpEngine::forget_table_views`]) and rebuilt by the next flush (kept
/// only for speakers that pass routes on: a plain speaker builds them per flush). Whether
/// a target is Established is not kept here: `UpEpochs` (`session.rs`) says.
#[derive(Debug, Default)]
pub(super) struct SendCache {
    /// Every export profile seen, interned (`groups.rs`).
    pub(super) profiles: ExportProfiles,
    /// Per speaker, its targets in session id order; `None` until a flush needs them.
    targets: Vec<Option<Box<[Target]>>>,
    /// The targets one flush visits (kept to spare an allocation per flush).
    pub(super) visit: Vec<Visit>,
}

/// A target one flush visits, with what its sending reads of the session.
#[derive(Clone, Copy, Debug)]
pub(super) struct Visit {
    pub(super) target: Target,
    /// MRAI holds nothing back on it: it may share its profile's body.
    pub(super) plain: bool,
    pub(super) latency: SimDuration,
}

impl SendCache {
    /// Drops every speaker's targets (the peering changed).
    pub(super) fn forget_targets(&mut self) {
        self.targets.clear();
    }

    fn take_targets(&mut self, s: SpeakerId) -> Option<Box<[Target]>> {
        self.targets.get_mut(s.index())?.take()
    }

    pub(super) fn put_targets(&mut self, s: SpeakerId, targets: Box<[Target]>) {
        if self.targets.len() <= s.index() {
            self.targets.resize_with(s.index() + 1, || None);
        }
        self.targets[s.index()] = Some(targets);
    }
}

/// One session a speaker sends on: which side the speaker is, the peer, and whether the
/// session is eBGP (which MRAI it has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub(super) x: SessionId,
    pub(super) to: SpeakerId,
    pub(super) side: u8,
    pub(super) ebgp: bool,
}

impl Link {
    pub(super) fn side(&self) -> usize {
        usize::from(self.side)
    }
}

/// One session of a speaker's lists as its flushes visit it: the [`Link`], the list it is
/// on (a `VISIT_*` bit), its place in the lists' order, its export profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub(super) link: Link,
    pub(super) bit: u8,
    pub(super) place: u32,
    pub(super) profile: ProfileId,
}

impl BgpEngine {
    /// Speaker `s`'s end of session `x`, if it is one and the session has a peer.
    pub(super) fn link(&self, s: SpeakerId, x: SessionId) -> Option<Link> {
        let sess = &self.sessions[x.index()];
        let side = sess.side_of(s)?;
        Some(Link {
            x,
            to: sess.peer_of(side)?,
            side: side as u8,
            ebgp: sess.session_type == SessionType::Ebgp,
        })
    }

    /// The MRAI of a [`Link`]'s session ([`BgpEngine::mrai`]).
    pub(super) fn link_mrai(&self, link: &Link) -> SimDuration {
        if link.ebgp {
            self.timers.mrai_ebgp
        } else {
            self.timers.mrai_ibgp
        }
    }

    /// The sessions of `s`'s lists as its flush visits them, in session id order (taken out
    /// of the [`SendCache`], built if it has none; the flush puts them back).
    pub(super) fn send_targets(&mut self, s: SpeakerId) -> Box<[Target]> {
        if let Some(targets) = self.send_cache.take_targets(s) {
            return targets;
        }
        let o = &self.outbound[s.index()];
        let lists = [
            (VISIT_EBGP, &o.ebgp),
            (VISIT_CLIENTS, &o.clients),
            (VISIT_NON_CLIENTS, &o.non_clients),
        ];
        let on: Vec<(SessionId, u8, u32)> = lists
            .iter()
            .flat_map(|(bit, l)| l.iter().map(move |x| (*x, *bit)))
            .enumerate()
            .map(|(place, (x, bit))| (x, bit, place as u32))
            .collect();
        let mut targets = Vec::with_capacity(on.len());
        for (x, bit, place) in on {
            let Some(link) = self.link(s, x) else {
                continue;
            };
            let profile = self.export_profile(x, link.side());
            targets.push(Target {
                link,
                bit,
                place,
                profile,
            });
        }
        // Stable: a session on two lists keeps their order.
        targets.sort_by_key(|t| t.link.x);
        targets.into_boxed_slice()
    }

    /// Whether every speaker's kept targets are those it would be given now, and how many
    /// speakers keep some.
    #[cfg(test)]
    pub(crate) fn flush_targets_in_step(&mut self) -> (bool, usize) {
        let kept = std::mem::take(&mut self.send_cache.targets);
        let mut in_step = true;
        for (i, targets) in kept.iter().enumerate() {
            if let Some(targets) = targets {
                in_step &= *targets == self.send_targets(SpeakerId(i as u32));
            }
        }
        let count = kept.iter().flatten().count();
        self.send_cache.targets = kept;
        (in_step, count)
    }
}
