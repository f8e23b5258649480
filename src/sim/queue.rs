//! The pending-event queue: ordered by (time, insertion sequence), so events at the same
//! instant run in the order they were scheduled (FIFO), whatever the queue does internally.
//!
//! A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990), which fits a discrete-event
//! simulation: time never goes backwards, so every event scheduled is at or after the last
//! one taken. The events at the time of the last one taken wait in `current`, in the order
//! they were pushed; every other event waits in bucket *b*, *b* the highest bit in which its
//! time differs from that time. When `current` runs out, the lowest non-empty bucket is
//! emptied into `current` (its earliest time, which becomes the time of the last one taken)
//! and the lower buckets. An event moves only to lower buckets, so at most 64 times, each a
//! sequential copy — where a binary heap of the half a million events a full mesh of 1,000
//! nodes holds pending paid a cache miss per level on every pop.
//!
//! Invariants: `current` holds exactly the pending events at `last`, in push order; bucket
//! *b* holds exactly the pending events whose time differs from `last` first in bit *b*, and
//! among those of one time keeps their push order (pushes append, a bucket is emptied only
//! into empty buckets, in order), so events of equal time always leave in push order; a
//! bucket knows where its first earliest item sits, so the next event can be looked at
//! ([`EventQueue::peek`]) without taking it.
//!
//! An event scheduled before the last one taken (nothing in podnet does that) is still
//! ordered correctly: the queue is rebuilt around the earlier time, by a stable sort.

use std::collections::VecDeque;

use crate::model::time::SimTime;

/// A min-queue of `(time, sequence, item)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// The pending items at `last`, in push order.
    current: VecDeque<E>,
    /// The time of the last item taken (the lower bound of every pending time).
    last: SimTime,
    /// Bucket `b`: the pending items whose time differs from `last` first in bit `b`.
    buckets: Vec<Bucket<E>>,
    /// Bit `b` set when bucket `b` is not empty.
    occupied: u64,
    len: usize,
    next_seq: u64,
}

#[derive(Debug)]
struct Bucket<E> {
    /// The earliest time in `items` (meaningless while it is empty).
    min: SimTime,
    /// The position in `items` of the first item pushed at `min`.
    min_at: usize,
    items: Vec<(SimTime, E)>,
}

/// A bucket emptied into the lower ones keeps its allocation up to this many items (the
/// low buckets fill and empty all the time); a larger one is freed, so the buckets' spare
/// room never adds up to several times the peak of pending events.
const KEPT_CAPACITY: usize = 4096;

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            current: VecDeque::new(),
            last: SimTime::ZERO,
            buckets: (0..64)
                .map(|_| Bucket {
                    min: SimTime::ZERO,
                    min_at: 0,
                    items: Vec::new(),
                })
                .collect(),
            occupied: 0,
            len: 0,
            next_seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `item` at `at`; returns its sequence number.
    pub fn push(&mut self, at: SimTime, item: E) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        if at < self.last {
            self.rebase(at);
        }
        self.place(at, item);
        self.len += 1;
        seq
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        if !self.current.is_empty() {
            return Some(self.last);
        }
        (self.occupied != 0).then(|| self.buckets[self.occupied.trailing_zeros() as usize].min)
    }

    /// The next event [`EventQueue::pop`] would return, if nothing is pushed before it.
    pub fn peek(&self) -> Option<&E> {
        if let Some(item) = self.current.front() {
            return Some(item);
        }
        if self.occupied == 0 {
            return None;
        }
        let bucket = &self.buckets[self.occupied.trailing_zeros() as usize];
        bucket.items.get(bucket.min_at).map(|(_, item)| item)
    }

    /// Removes and returns the earliest event (earliest sequence among equal times).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        if self.current.is_empty() {
            self.refill();
        }
        let item = self.current.pop_front()?;
        self.len -= 1;
        Some((self.last, item))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Puts an item at `at` ≥ `last` where the invariants want it, after those there.
    fn place(&mut self, at: SimTime, item: E) {
        let diff = at.as_nanos() ^ self.last.as_nanos();
        if diff == 0 {
            self.current.push_back(item);
            return;
        }
        let b = 63 - diff.leading_zeros() as usize;
        let bucket = &mut self.buckets[b];
        if self.occupied & (1 << b) == 0 || at < bucket.min {
            bucket.min = at;
            bucket.min_at = bucket.items.len();
        }
        self.occupied |= 1 << b;
        bucket.items.push((at, item));
    }

    /// With `current` empty: the earliest pending time becomes `last`, and the lowest
    /// non-empty bucket (which holds it) is spread over `current` and the lower buckets, in
    /// order.
    fn refill(&mut self) {
        if self.occupied == 0 {
            return;
        }
        let b = self.occupied.trailing_zeros() as usize;
        self.occupied &= !(1 << b);
        self.last = self.buckets[b].min;
        let mut items = std::mem::take(&mut self.buckets[b].items);
        for (at, item) in items.drain(..) {
            // Every item differs from the new `last` below bit `b`: it lands in `current`
            // or a lower bucket, never in `b` itself.
            self.place(at, item);
        }
        if items.capacity() <= KEPT_CAPACITY {
            self.buckets[b].items = items;
        }
    }

    /// Makes `at`, earlier than `last`, the new `last`: every pending item is placed again,
    /// in (time, push order) — a stable sort by time of `current` then the buckets, since
    /// items of one time are all in one place, in push order.
    fn rebase(&mut self, at: SimTime) {
        let mut all: Vec<(SimTime, E)> = Vec::with_capacity(self.len);
        let last = self.last;
        all.extend(self.current.drain(..).map(|item| (last, item)));
        for bucket in &mut self.buckets {
            all.append(&mut bucket.items);
        }
        all.sort_by_key(|(t, _)| *t);
        self.occupied = 0;
        self.last = at;
        for (t, item) in all {
            self.place(t, item);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// One step of a random workload.
    #[derive(Clone, Debug)]
    enum Op {
        /// Push at the time of the last pop plus this much (as the simulation schedules).
        Push(u64),
        /// Push at this absolute time, possibly before the last pop.
        PushAt(u64),
        Pop,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        // Small offsets make ties common; the odd far one and the odd absolute time (often
        // before the last pop) exercise the high buckets and the rebuild.
        let op = prop_oneof![
            8 => (0u64..8).prop_map(Op::Push),
            2 => (0u64..1 << 40).prop_map(Op::Push),
            1 => (0u64..64).prop_map(Op::PushAt),
            6 => Just(Op::Pop),
        ];
        proptest::collection::vec(op, 0..400)
    }

    proptest! {
        /// Whatever the push order, pops come out by time, and by push order among equal
        /// times.
        #[test]
        fn pops_in_time_then_sequence_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime::from_nanos(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let mut popped = Vec::new();
            while let Some((t, i)) = q.pop() {
                popped.push((t.as_nanos(), i));
            }
            prop_assert_eq!(popped, expected);
        }

        /// Interleaved pushes and pops, ties included, give exactly what a binary heap of
        /// (time, sequence, item) gives, with the same length and next time throughout.
        #[test]
        fn matches_a_reference_heap(ops in ops()) {
            let mut q = EventQueue::new();
            let mut reference = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for op in ops {
                let at = match op {
                    Op::Push(dt) => Some(now + dt),
                    Op::PushAt(t) => Some(t),
                    Op::Pop => None,
                };
                match at {
                    Some(at) => {
                        let item = format!("item {seq}");
                        prop_assert_eq!(q.push(SimTime::from_nanos(at), item.clone()), seq);
                        reference.push(Reverse((at, seq, item)));
                        seq += 1;
                    }
                    None => {
                        let want = reference.pop().map(|Reverse((t, _, item))| (t, item));
                        let got = q.pop().map(|(t, item)| (t.as_nanos(), item));
                        prop_assert_eq!(&got, &want);
                        if let Some((t, _)) = want {
                            now = t;
                        }
                    }
                }
                prop_assert_eq!(q.len(), reference.len());
                prop_assert_eq!(q.is_empty(), reference.is_empty());
                prop_assert_eq!(
                    q.peek_time().map(|t| t.as_nanos()),
                    reference.peek().map(|Reverse((t, _, _))| *t)
                );
                // The next item itself, not only its time: the first pushed among the
                // earliest, wherever in its bucket it sits.
                prop_assert_eq!(q.peek(), reference.peek().map(|Reverse((_, _, item))| item));
            }
        }
    }

    #[test]
    fn interleaved_pushes_keep_fifo_among_equal_times() {
        let mut q = EventQueue::new();
        q.push(SimTime::from_nanos(5), "a");
        q.push(SimTime::from_nanos(1), "b");
        assert_eq!(q.pop(), Some((SimTime::from_nanos(1), "b")));
        q.push(SimTime::from_nanos(5), "c");
        assert_eq!(q.pop(), Some((SimTime::from_nanos(5), "a")));
        assert_eq!(q.pop(), Some((SimTime::from_nanos(5), "c")));
        assert!(q.is_empty());
    }

    #[test]
    fn an_item_before_the_last_pop_still_comes_first_and_ties_keep_push_order() {
        let mut q = EventQueue::new();
        for (t, name) in [(10, "a"), (20, "b"), (10, "c"), (30, "d")] {
            q.push(SimTime::from_nanos(t), name);
        }
        assert_eq!(q.pop(), Some((SimTime::from_nanos(10), "a")));
        // Before the last pop (10): the queue is rebuilt around 4.
        q.push(SimTime::from_nanos(4), "e");
        q.push(SimTime::from_nanos(20), "f");
        q.push(SimTime::from_nanos(10), "g");
        let order: Vec<(u64, &str)> = std::iter::from_fn(|| q.pop())
            .map(|(t, n)| (t.as_nanos(), n))
            .collect();
        assert_eq!(
            order,
            [
                (4, "e"),
                (10, "c"),
                (10, "g"),
                (20, "b"),
                (20, "f"),
                (30, "d")
            ]
        );
    }
}
