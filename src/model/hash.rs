//! Fast deterministic hashing and mixing: the one place podnet chooses how to hash.
//!
//! [`FastMap`] is a `HashMap` with foldhash's fixed-seed hasher, for maps that are only looked
//! things up in (forwarding's tables, the IPAM interner). They are never iterated, so no
//! order reaches an output, and SipHash's protection against hash flooding is not needed for
//! keys that come from the scenario. foldhash mixes every input bit into the low bits, from
//! which hashbrown picks a bucket, so the addresses of one subnet spread over the buckets.
//! [`hash_of`] is the same hasher for one value, for maps keyed by hashes.
//!
//! [`splitmix64`] is a generator step, not a hash for maps: Calico's block start index is
//! derived with it, so changing it would change every scenario's addresses.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use foldhash::fast::FixedState;

/// A `HashMap` for lookups only (never iterated), hashed fast and the same on every run.
pub type FastMap<K, V> = HashMap<K, V, FixedState>;

/// The 64-bit hash [`FastMap`] would use for `value`.
pub fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    FixedState::default().hash_one(value)
}

/// One step of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014): advances `state` and returns the next output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    #[test]
    fn hashes_of_one_subnet_spread_over_buckets() {
        for addr in [
            |i: u8| IpAddr::from([100, 64, 7, i]),
            |i: u8| IpAddr::from([100, 64, i, 0]),
        ] {
            let mut low: Vec<u64> = (0..=255u8).map(|i| hash_of(&addr(i)) & 0xff).collect();
            low.sort_unstable();
            low.dedup();
            assert!(low.len() > 128, "{} distinct low bytes", low.len());
        }
    }

    #[test]
    fn name_hashes_see_every_byte_and_the_length() {
        let names = [
            "",
            "a",
            "a\0",
            "default/pod-1",
            "default/pod-2",
            "default/pod-10",
            "ipip-tunnel-addr-node-1",
        ];
        let hashes: std::collections::BTreeSet<u64> = names.iter().map(|n| hash_of(*n)).collect();
        assert_eq!(hashes.len(), names.len());
        assert_eq!(hash_of("node-1"), hash_of("node-1"));
    }

    #[test]
    fn splitmix64_gives_the_published_sequence() {
        // The reference implementation (prng.di.unimi.it/splitmix64.c) seeded with 0.
        let mut state = 0;
        assert_eq!(splitmix64(&mut state), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut state), 0x6E78_9E6A_A1B9_65F4);
    }
}
