//! The machine's memory, shared by the variants of a sweep that run at once (issue #19).
//!
//! Each variant reserves what `scenario::footprint` estimates its simulation needs before it
//! starts and gives it back when it ends. A variant that could not fit even alone is refused
//! with the footprint's message and remedy (as `check` and `run` refuse a scenario); one that
//! fits alone waits until the variants running have released enough, so parallel variants
//! never add up past the machine's memory.
//!
//! Invariant: the bytes reserved at once never exceed the machine's memory, and a reservation
//! on an idle share always succeeds when it fits at all, so waiting always ends. Where the
//! machine's memory cannot be read nothing is refused or waited for. This is not an
//! allocator: it trusts the estimate, which errs high.

use std::sync::{Condvar, Mutex};

use crate::scenario::footprint::{self, Footprint};

/// The memory the variants of one sweep may hold together.
pub struct MemoryShare {
    available: Option<u64>,
    held: Mutex<u64>,
    released: Condvar,
}

/// Memory held by one running variant; dropping it gives the memory back.
pub struct Reservation<'a> {
    share: &'a MemoryShare,
    bytes: u64,
}

impl MemoryShare {
    /// This machine's memory (`footprint::machine_memory`).
    pub fn of_machine() -> MemoryShare {
        MemoryShare::new(footprint::machine_memory())
    }

    pub fn new(available: Option<u64>) -> MemoryShare {
        MemoryShare {
            available,
            held: Mutex::new(0),
            released: Condvar::new(),
        }
    }

    /// Reserves `footprint`'s bytes, waiting while other variants hold too much; the refusal
    /// message when it cannot fit the machine even alone.
    pub fn reserve(&self, footprint: &Footprint) -> Result<Reservation<'_>, String> {
        let Some(available) = self.available else {
            return Ok(Reservation {
                share: self,
                bytes: 0,
            });
        };
        if let Some(why) = footprint::refusal(footprint, available) {
            return Err(why);
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held + footprint.bytes > available {
            held = self.released.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held += footprint.bytes;
        Ok(Reservation {
            share: self,
            bytes: footprint.bytes,
        })
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = self.share.held.lock().unwrap_or_else(|e| e.into_inner());
        *held -= self.bytes;
        self.share.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn needing(bytes: u64) -> Footprint {
        Footprint {
            nodes: 1_000,
            pods: 0,
            sessions: 499_500,
            routes: 1_000_000,
            bytes,
        }
    }

    #[test]
    fn a_variant_larger_than_the_machine_is_refused_with_the_remedy() {
        let share = MemoryShare::new(Some(100));
        let why = share.reserve(&needing(101)).err().expect("refused");
        assert!(why.contains("route reflectors"), "{why}");
        assert!(share.reserve(&needing(100)).is_ok());
        // Unknown machine memory: nothing is refused.
        assert!(MemoryShare::new(None).reserve(&needing(u64::MAX)).is_ok());
    }

    #[test]
    fn variants_that_fit_alone_wait_until_the_others_release_enough() {
        let share = MemoryShare::new(Some(100));
        let first = share.reserve(&needing(60)).expect("fits");
        let (sent, got) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let second = share.reserve(&needing(60)).expect("fits alone");
                sent.send(()).expect("send");
                drop(second);
            });
            // 60 + 60 > 100: the second waits while the first runs.
            assert!(got.recv_timeout(Duration::from_millis(200)).is_err());
            drop(first);
            got.recv_timeout(Duration::from_secs(10))
                .expect("the second runs once the first released");
        });
        assert_eq!(*share.held.lock().expect("lock"), 0);
    }
}
