//! Durations written with a unit: `250us`, `10ms`, `1.5s`, `2m`, `1h` (also `ns`).
//!
//! Parsing is exact (no floating point): `1.5s` is 1,500,000,000 ns. Fractions finer than a
//! nanosecond and anything beyond [`MAX_DURATION`] are refused, so no duration can overflow
//! simulated time.

use crate::model::time::SimDuration;

/// The longest duration podnet accepts anywhere (a run stops at 24 h of simulated time).
pub const MAX_DURATION: SimDuration = SimDuration::from_secs(24 * 3600);

const UNITS: [(&str, u64); 6] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parses a duration; the error is a complete sentence for the user.
pub fn parse_duration(text: &str) -> Result<SimDuration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(if unit.is_empty() {
            format!("`{text}` needs a unit: ns, us, ms, s, m or h (for example `{text}s`)")
        } else {
            format!("`{text}` has an unknown unit `{unit}`; use ns, us, ms, s, m or h")
        });
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(format!("`{text}` is not a duration such as 10ms or 1.5s"));
    }
    let too_long = || format!("`{text}` is longer than the limit of {MAX_DURATION}");
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_long())?
    };
    let mut nanos = whole.checked_mul(scale).ok_or_else(too_long)?;
    // The fraction, digit by digit, must land on whole nanoseconds.
    let mut place = scale;
    for digit in frac.bytes() {
        if place % 10 != 0 {
            return Err(format!("`{text}` is finer than a nanosecond"));
        }
        place /= 10;
        nanos = nanos
            .checked_add(u64::from(digit - b'0') * place)
            .ok_or_else(too_long)?;
    }
    let d = SimDuration::from_nanos(nanos);
    if d > MAX_DURATION {
        return Err(too_long());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit_exactly() {
        assert_eq!(parse_duration("250us"), Ok(SimDuration::from_micros(250)));
        assert_eq!(parse_duration("10ms"), Ok(SimDuration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(SimDuration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(SimDuration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(SimDuration::from_secs(3600)));
        assert_eq!(
            parse_duration("0.000000001s"),
            Ok(SimDuration::from_nanos(1))
        );
        assert_eq!(parse_duration(".5s"), Ok(SimDuration::from_millis(500)));
    }

    #[test]
    fn refuses_missing_units_absurd_and_malformed_values() {
        assert!(parse_duration("10").unwrap_err().contains("needs a unit"));
        assert!(
            parse_duration("10 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("25h").unwrap_err().contains("limit"));
        assert!(
            parse_duration("99999999999999999999999h")
                .unwrap_err()
                .contains("limit")
        );
        assert!(
            parse_duration("1.0000000001s")
                .unwrap_err()
                .contains("nanosecond")
        );
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
