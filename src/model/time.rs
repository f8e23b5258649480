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
    /// The way durations are written in scenarios (SPEC §1): hours and minutes as whole
    /// components, then seconds with an exact decimal fraction — `4m30s`, `1h5s`,
    /// `3m51.150093s`, `1.5s`; below a second the largest unit that keeps the number at
    /// least 1 — `250ms`, `1.5ms`, `250us`, `7ns`; zero is `0s`. Exact, so
    /// `scenario::duration::parse_duration` reads back the same span.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HOUR: u64 = 3_600_000_000_000;
        const MINUTE: u64 = 60_000_000_000;
        const SECOND: u64 = 1_000_000_000;
        let ns = self.0;
        if ns == 0 {
            return f.write_str("0s");
        }
        if ns < SECOND {
            let (unit, scale) = [("ms", 1_000_000), ("us", 1_000), ("ns", 1)]
                .into_iter()
                .find(|&(_, scale)| ns >= scale)
                .unwrap_or(("ns", 1));
            return write_decimal(f, ns, scale, unit);
        }
        let mut out = String::new();
        if ns >= HOUR {
            out.push_str(&format!("{}h", ns / HOUR));
        }
        if ns % HOUR >= MINUTE {
            out.push_str(&format!("{}m", ns % HOUR / MINUTE));
        }
        f.write_str(&out)?;
        let rest = ns % MINUTE;
        if rest > 0 {
            write_decimal(f, rest, SECOND, "s")?;
        }
        Ok(())
    }
}

/// `value / scale` with the exact decimal fraction, trailing zeros dropped, then `unit`.
/// `scale` is a power of ten.
fn write_decimal(f: &mut fmt::Formatter<'_>, value: u64, scale: u64, unit: &str) -> fmt::Result {
    let (whole, mut frac) = (value / scale, value % scale);
    if frac == 0 {
        return write!(f, "{whole}{unit}");
    }
    let mut digits = scale.ilog10() as usize;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    write!(f, "{whole}.{frac:0digits$}{unit}")
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
            "description": "A duration with a unit: 250us, 10ms, 1.5s, 2m, 1h, or compound: 4m59s, 1h30m (at most 24h).",
            "pattern": "^([0-9]*\\.?[0-9]+(ns|us|ms|s|m|h))+$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_render_as_they_are_written() {
        let cases = [
            (SimDuration::ZERO, "0s"),
            (SimDuration::from_nanos(7), "7ns"),
            (SimDuration::from_micros(250), "250us"),
            (SimDuration::from_nanos(1_500), "1.5us"),
            (SimDuration::from_millis(250), "250ms"),
            (SimDuration::from_micros(1_500), "1.5ms"),
            (SimDuration::from_millis(1500), "1.5s"),
            (SimDuration::from_secs(120), "2m"),
            (SimDuration::from_secs(270), "4m30s"),
            (SimDuration::from_secs(3600), "1h"),
            (SimDuration::from_secs(3605), "1h5s"),
            (SimDuration::from_secs(5400), "1h30m"),
            // The quick start's end before this change printed as `231150093us`.
            (SimDuration::from_micros(231_150_093), "3m51.150093s"),
            (SimDuration::from_nanos(1_500_000_001), "1.500000001s"),
            (SimDuration::from_nanos(60_000_000_001), "1m0.000000001s"),
        ];
        for (d, text) in cases {
            assert_eq!(d.to_string(), text, "{d:?}");
        }
    }

    #[test]
    fn time_arithmetic_saturates() {
        assert_eq!(SimTime::MAX + SimDuration::from_secs(1), SimTime::MAX);
        assert_eq!(SimTime::ZERO - SimTime::from_nanos(5), SimDuration::ZERO);
    }
}
