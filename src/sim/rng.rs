//! Seeded random streams, one per purpose.
//!
//! Every stream is ChaCha8 keyed by the scenario seed, on its own ChaCha stream number, so
//! drawing more numbers for one purpose never shifts another purpose's numbers. There is no
//! other source of randomness in the simulation.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a random stream is for. Adding a purpose never changes the existing ones' draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Purpose {
    /// Breaking ties between equally loaded nodes when scheduling pods.
    Scheduling = 1,
    /// Anything a later layer needs, such as jitter, without disturbing scheduling.
    Jitter = 2,
    /// BIRD's BGP timer jitter (connect delay, connect retry, keepalive, hold, error wait).
    BgpTimers = 3,
}

/// One purpose's random stream.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: ChaCha8Rng,
}

impl Stream {
    pub fn new(seed: u64, purpose: Purpose) -> Stream {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(purpose as u64);
        Stream { rng }
    }

    /// A uniform index in `0..n` (`n` > 0).
    pub fn index(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        self.rng.random_range(0..n)
    }
}

impl crate::bgp::config::TimerJitter for Stream {
    fn draw(&mut self, bound: u64) -> u64 {
        self.rng.random_range(0..=bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_draws_and_streams_are_independent() {
        let draws = |seed, purpose| {
            let mut s = Stream::new(seed, purpose);
            (0..16).map(|_| s.index(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draws(7, Purpose::Scheduling), draws(7, Purpose::Scheduling));
        assert_ne!(draws(7, Purpose::Scheduling), draws(8, Purpose::Scheduling));
        assert_ne!(draws(7, Purpose::Scheduling), draws(7, Purpose::Jitter));

        // Drawing from one stream does not move another.
        let mut jitter = Stream::new(7, Purpose::Jitter);
        let mut sched = Stream::new(7, Purpose::Scheduling);
        for _ in 0..100 {
            jitter.index(10);
        }
        let after: Vec<_> = (0..16).map(|_| sched.index(1000)).collect();
        assert_eq!(after, draws(7, Purpose::Scheduling));
    }
}
