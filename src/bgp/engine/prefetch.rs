//! Looking ahead: the simulator shows the engine the event it will hand it next, and the
//! engine asks the CPU to bring in the per-session state that event will need, so that the
//! cache misses on it overlap with the work on the current event instead of stalling the
//! next one. A full mesh of 1,000 nodes has half a million sessions, each met at random
//! when it comes up and when its two full tables are delivered and processed; those misses
//! were about a sixth of `podnet check`. What every such event reads of a session is one
//! cache line of `SessionRt` and the first of `Session` (their layouts say so), so those
//! two lines are what is fetched. Within a message, `receive.rs` asks for the lines of
//! the announcements a few routes ahead the same way (`prefetch_line`, `prefetch_all`).
//!
//! Invariant: nothing here reads or changes any state that matters; a prefetch is a hint
//! the CPU may ignore, and it cannot fault.

use crate::bgp::SessionId;

use super::{BgpEngine, BgpEvent, Delivery};

impl BgpEngine {
    /// Prefetches what `event` will read first when it is handled.
    pub fn prefetch(&self, event: &BgpEvent) {
        match *event {
            BgpEvent::SessionEstablished { session, .. } => self.prefetch_session(session),
            BgpEvent::Deliver { batch } => {
                if let Some(Some(deliveries)) = self.in_flight.items.get(batch.0 as usize) {
                    self.prefetch_deliveries(deliveries.iter());
                }
            }
            BgpEvent::ProcessNext { message } => {
                if let Some(Some(m)) = self.in_process.items.get(message.0 as usize) {
                    self.prefetch_deliveries(std::iter::once(&m.delivery));
                }
            }
            BgpEvent::ProcessMany { batch } => {
                if let Some(Some(group)) = self.finishing.items.get(batch.0 as usize) {
                    self.prefetch_deliveries(group.iter().map(|m| &m.delivery));
                }
            }
            _ => {}
        }
    }

    /// The sessions of the first few deliveries (a session's two full tables travel
    /// together, so consecutive ones often share it).
    fn prefetch_deliveries<'a>(&self, deliveries: impl Iterator<Item = &'a Delivery>) {
        let mut last = None;
        for d in deliveries.take(4) {
            let x = d.update.session;
            if last != Some(x) {
                self.prefetch_session(x);
                last = Some(x);
            }
        }
    }

    /// The line of `x`'s runtime state and the first line of its `Session`.
    fn prefetch_session(&self, x: SessionId) {
        let (Some(r), Some(s)) = (self.srt.get(x.index()), self.sessions.get(x.index())) else {
            return;
        };
        prefetch_line(r);
        prefetch_line(s);
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
