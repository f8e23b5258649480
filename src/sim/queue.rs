//! The pending-event queue: ordered by (time, insertion sequence), so events at the same
//! instant run in the order they were scheduled (FIFO), whatever the heap does internally.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::time::SimTime;

/// A min-queue of `(time, sequence, item)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_seq: u64,
}

#[derive(Debug)]
struct Entry<E> {
    at: SimTime,
    seq: u64,
    item: E,
}

// Ordering looks only at (time, sequence): items need no ordering of their own, and two
// entries are never equal because sequences are unique.
impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
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
        self.heap.push(Reverse(Entry { at, seq, item }));
        seq
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    /// Removes and returns the earliest event (earliest sequence among equal times).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.heap.pop().map(|Reverse(e)| (e.at, e.item))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
}
