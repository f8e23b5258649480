//! Looking ahead: the simulator shows the engine the event it will hand it next, and the
//! engine asks the CPU to bring in the per-session state that event will need, so that the
//! cache misses on it overlap with the work on the current event instead of stalling the
//! next one. A full mesh of 1,000 nodes has half a million sessions, each met at random
//! when it comes up and when its two full tables are delivered and processed; those misses
//! were about a sixth of `podnet check`. What a session's own event reads of it is one
//! cache line of `SessionRt` and the first of `Session` (their layouts say so), so those
//! two lines are what is fetched; delivering and processing a message read only its
//! session's `UpEpochs` entry and the receiver's lines. Within a message, `receive.rs`
//! asks for the lines of the announcements a few routes ahead the same way
//! (`prefetch_line`, `prefetch_all`).
//!
//! Invariant: nothing here reads or changes any state that matters; a prefetch is a hint
//! the CPU may ignore, and it cannot fault.

use crate::bgp::{SessionId, SpeakerId};

use super::{BgpEngine, BgpEvent, Delivery, InProcess};

impl BgpEngine {
    /// Prefetches what `event` will read first when it is handled.
    pub fn prefetch(&self, event: &BgpEvent) {
        match *event {
            BgpEvent::SessionEstablished { session, .. } => self.prefetch_session(session),
            // The first receivers: the handler asks for the later ones as it goes.
            BgpEvent::Deliver { batch } => {
                if let Some(Some(deliveries)) = self.in_flight.items.get(batch.0 as usize) {
                    for d in deliveries.iter().take(DELIVERIES_AHEAD) {
                        self.prefetch_delivery(d);
                    }
                }
            }
            BgpEvent::ProcessNext { message } => {
                if let Some(Some(m)) = self.in_process.items.get(message.0 as usize) {
                    self.prefetch_receiver(m);
                }
            }
            BgpEvent::ProcessMany { batch } => {
                if let Some(Some(group)) = self.finishing.items.get(batch.0 as usize) {
                    for m in group.iter().take(RECEIVERS_AHEAD) {
                        self.prefetch_receiver(m);
                    }
                }
            }
            _ => {}
        }
    }

    /// The line of `x`'s runtime state and the first line of its `Session` (what an event
    /// of the session reads).
    pub(super) fn prefetch_session(&self, x: SessionId) {
        let (Some(r), Some(s)) = (self.srt.get(x.index()), self.sessions.get(x.index())) else {
            return;
        };
        prefetch_line(r);
        prefetch_line(s);
    }

    /// What a flush reads of target session `x`: whether it is up, and its runtime state
    /// (epoch, latency, last arrival, what MRAI holds); not its `Session`.
    pub(super) fn prefetch_target(&self, x: SessionId) {
        self.up.prefetch(x);
        if let Some(r) = self.srt.get(x.index()) {
            prefetch_line(r);
        }
    }
}

/// How many receivers ahead of the one being handled a group of receivers (a message
/// finishing at hundreds of clients at once, [`BgpEvent::ProcessMany`]) asks for the lines
/// of: each receiver's are about eight, and a core keeps only so many misses in flight.
pub(super) const RECEIVERS_AHEAD: usize = 2;

/// How many deliveries ahead of the one being handled a batch of UPDATEs arriving together
/// asks for the receiver's first line, and (half as many ahead, once that line is in) the
/// slot of its queue the message goes into: a delivery reads little else, so it goes fast
/// and needs its lines asked for further ahead.
pub(super) const DELIVERIES_AHEAD: usize = 4;

impl BgpEngine {
    /// Prefetches what delivering `d` reads: whether the session is still up in its epoch
    /// and the first line of the receiver's runtime state (whether it is up and busy, its
    /// queue).
    pub(super) fn prefetch_delivery(&self, d: &Delivery) {
        self.up.prefetch(d.update.session);
        if let Some(r) = self.rt.get(d.update.to.index()) {
            prefetch_line(&r.incarnation);
        }
    }

    /// Prefetches what finishing `m` reads first: whether the session is still up in its
    /// epoch, the fields of the receiver's runtime state that receiving reads (its
    /// incarnation and queue, how it names sources and its BGP identifier for the import
    /// check, its RIB's counters, what it has to send), and its state id for the message's
    /// first prefix (most messages carry one). The session's own lines and the receiver's
    /// `Speaker` are not asked for: only a receiver that is not plain reads them
    /// (`BgpEngine::receiving`, `BgpEngine::imports`), a few in a cluster.
    #[inline]
    pub(super) fn prefetch_receiver(&self, m: &InProcess) {
        let update = &m.delivery.update;
        self.up.prefetch(update.session);
        let s = m.speaker;
        if let Some(r) = self.rt.get(s.index()) {
            // The two lines `SpeakerRt` keeps them in.
            prefetch_line(&r.incarnation);
            prefetch_line(&r.rib);
        }
        let first = (update.body.withdrawn.first().map(|w| w.0))
            .or_else(|| update.body.announced.first().map(|a| a.0));
        if let Some(slot) = first.and_then(|p| self.table.slot(s, p)) {
            prefetch_line(slot);
        }
    }

    /// Prefetches the slot of `s`'s queue the next delivery to it is pushed into (after its
    /// last waiting message; where the first would go when none waits), if `s` is busy, so
    /// that the delivery will wait there. The queue and its buffer are apart from the
    /// receiver's lines; whether it is busy is read from the first of those, which
    /// [`Self::prefetch_delivery`] asked for a receiver earlier.
    pub(super) fn prefetch_queue_back(&self, s: SpeakerId) {
        if self.rt.get(s.index()).is_some_and(|r| r.processing)
            && let Some(inbox) = self.inboxes.get(s.index())
        {
            let (front, back) = inbox.as_slices();
            let end = match back {
                [] => front.as_ptr_range().end,
                _ => back.as_ptr_range().end,
            };
            prefetch_at(end.cast());
        }
    }

    /// Prefetches the message `s` takes from its queue once it finishes the one it is
    /// processing (see [`Self::prefetch_queue_back`]).
    pub(super) fn prefetch_queue_front(&self, s: SpeakerId) {
        if self.rt.get(s.index()).is_some_and(|r| r.waiting != 0)
            && let Some(first) = self.inboxes.get(s.index()).and_then(|q| q.front())
        {
            prefetch_line(first);
        }
    }
}

/// Every cache line of `value`.
pub(super) fn prefetch_all<T>(value: &T) {
    let start = (value as *const T).cast::<u8>();
    let size = std::mem::size_of::<T>();
    for offset in (0..size).step_by(64).chain(size.checked_sub(1)) {
        prefetch_at(start.wrapping_add(offset));
    }
}

/// The cache line holding `value`.
pub(super) fn prefetch_line<T>(value: &T) {
    prefetch_at((value as *const T).cast::<u8>());
}

/// Asks the CPU to bring in the cache line at `at` (a hint; nothing is read).
#[cfg(target_arch = "x86_64")]
fn prefetch_at(at: *const u8) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever the
    // address; it is `unsafe` only because intrinsics are.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>()) }
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch_at(_at: *const u8) {}
