//! Simulated time: an integer count of nanoseconds since the start of a run.
//!
//! Invariant: nothing in the simulation reads a wall clock; every instant is a `SimTime`
//! and every span a `SimDuration`, both exact integers, so runs are reproducible.
//! This module does not parse durations from text (see `scenario::duration`).

use std::fmt;
use std::ops::{Add, Sub};

/// An instant of simulated time, in nanoseconds since the run started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(ns: u64) -> SimTime {
        SimTime(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Whole microseconds, as the reports print them.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// The time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_nanos(ns: u64) -> SimDuration {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> SimDuration {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> SimDuration {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> SimDuration {
        SimDuration(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// `self * n`, saturating at the largest representable span.
    pub const fn saturating_mul(self, n: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(n))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    /// Saturates: an instant past the end of representable time stays at `SimTime::MAX`.
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    /// Saturating: `a - b` is zero when `b` is later than `a`.
    fn sub(self, earlier: SimTime) -> SimDuration {
        self.saturating_since(earlier)
    }
}

impl fmt::Display for SimDuration {
    /// The shortest exact rendering with a unit: `0s`, `250us`, `1.5s`, `2m`, `1h`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 6] = [
            ("h", 3_600_000_000_000),
            ("m", 60_000_000_000),
            ("s", 1_000_000_000),
            ("ms", 1_000_000),
            ("us", 1_000),
            ("ns", 1),
        ];
        if self.0 == 0 {
            return f.write_str("0s");
        }
        // Nanoseconds divide everything, so a unit is always found.
        let (unit, scale) = UNITS
            .into_iter()
            .find(|(_, scale)| self.0.is_multiple_of(*scale))
            .unwrap_or(("ns", 1));
        write!(f, "{}{unit}", self.0 / scale)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        SimDuration(self.0).fmt(f)
    }
}

impl schemars::JsonSchema for SimDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration with a unit: 250us, 10ms, 1.5s, 2m, 1h (at most 24h).",
            "pattern": "^[0-9]*\\.?[0-9]+(ns|us|ms|s|m|h)$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_render_with_the_largest_exact_unit() {
        assert_eq!(SimDuration::ZERO.to_string(), "0s");
        assert_eq!(SimDuration::from_micros(250).to_string(), "250us");
        assert_eq!(SimDuration::from_millis(1500).to_string(), "1500ms");
        assert_eq!(SimDuration::from_secs(120).to_string(), "2m");
        assert_eq!(
            SimDuration::from_nanos(1_500_000_001).to_string(),
            "1500000001ns"
        );
    }

    #[test]
    fn time_arithmetic_saturates() {
        assert_eq!(SimTime::MAX + SimDuration::from_secs(1), SimTime::MAX);
        assert_eq!(SimTime::ZERO - SimTime::from_nanos(5), SimDuration::ZERO);
    }
}
