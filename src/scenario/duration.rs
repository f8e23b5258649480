//! Durations written with a unit: `250us`, `10ms`, `1.5s`, `2m`, `1h` (also `ns`), or
//! compound, largest unit first: `4m59s`, `1h30m` (SPEC §1). `SimDuration`'s `Display`
//! writes the same grammar, so every printed duration parses back to itself.
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

/// Parses a duration, simple (`1.5s`) or compound (`4m59s`, `1h30m`, `3m51.150093s`: units
/// from the largest to the smallest, each at most once); the error is a complete sentence
/// for the user.
pub fn parse_duration(text: &str) -> Result<SimDuration, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("`{text}` is not a duration such as 10ms or 1.5s"));
    }
    let too_long = || format!("`{text}` is longer than the limit of {MAX_DURATION}");
    let mut rest = t;
    let mut total = SimDuration::ZERO;
    // The scale of the previous component: each must be smaller.
    let mut previous: Option<u64> = None;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let Some(&(_, scale)) = UNITS.iter().find(|(u, _)| *u == unit) else {
            return Err(if unit.is_empty() {
                format!("`{text}` needs a unit: ns, us, ms, s, m or h (for example `{text}s`)")
            } else {
                format!("`{text}` has an unknown unit `{unit}`; use ns, us, ms, s, m or h")
            });
        };
        if previous.is_some_and(|p| p <= scale) {
            return Err(format!(
                "`{text}` repeats a unit or lists them out of order; write the largest first, as in 1h30m or 4m59s"
            ));
        }
        previous = Some(scale);
        let nanos = component(text, number, scale)?;
        total = SimDuration::from_nanos(total.as_nanos().checked_add(nanos).ok_or_else(too_long)?);
        rest = next;
    }
    if total > MAX_DURATION {
        return Err(too_long());
    }
    Ok(total)
}

/// One `number` of a unit worth `scale` nanoseconds, exactly, in nanoseconds.
fn component(text: &str, number: &str, scale: u64) -> Result<u64, String> {
    let too_long = || format!("`{text}` is longer than the limit of {MAX_DURATION}");
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(format!("`{text}` is not a duration such as 10ms or 1.5s"));
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_long())?
    };
    let mut nanos = whole.checked_mul(scale).ok_or_else(too_long)?;
    // The fraction, digit by digit, must land on whole nanoseconds.
    let mut place = scale;
    for digit in frac.bytes() {
        if !place.is_multiple_of(10) {
            return Err(format!("`{text}` is finer than a nanosecond"));
        }
        place /= 10;
        nanos = nanos
            .checked_add(u64::from(digit - b'0') * place)
            .ok_or_else(too_long)?;
    }
    Ok(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        assert!(parse_duration("").is_err());
        assert!(
            parse_duration("30s1m")
                .unwrap_err()
                .contains("largest first")
        );
        assert!(
            parse_duration("1s1s")
                .unwrap_err()
                .contains("largest first")
        );
        assert!(
            parse_duration("1m 30s")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("23h61m").unwrap_err().contains("limit"));
    }

    #[test]
    fn compound_durations_add_their_components() {
        assert_eq!(parse_duration("4m59s"), Ok(SimDuration::from_secs(299)));
        assert_eq!(parse_duration("1h30m"), Ok(SimDuration::from_secs(5400)));
        assert_eq!(parse_duration("1m30s"), Ok(SimDuration::from_secs(90)));
        assert_eq!(
            parse_duration("3m51.150093s"),
            Ok(SimDuration::from_micros(231_150_093))
        );
        assert_eq!(
            parse_duration("1s500ms"),
            Ok(SimDuration::from_millis(1500))
        );
        assert_eq!(parse_duration("24h"), Ok(MAX_DURATION));
    }

    proptest! {
        /// parse(display(d)) == d for every span podnet accepts, whatever its magnitude:
        /// arbitrary nanoseconds, whole seconds and whole milliseconds.
        #[test]
        fn every_printed_duration_parses_back_to_itself(
            ns in prop_oneof![
                0..=MAX_DURATION.as_nanos(),
                (0..=86_400u64).prop_map(|s| s * 1_000_000_000),
                (0..=86_400_000u64).prop_map(|ms| ms * 1_000_000),
                0..2_000_000_000u64,
            ]
        ) {
            let d = SimDuration::from_nanos(ns);
            let text = d.to_string();
            prop_assert_eq!(parse_duration(&text), Ok(d), "{}", text);
        }
    }
}
