//! Fast, deterministic hashing for the interner's lookup-only maps (see `intern`).
//!
//! SipHash's protection against hash flooding is not needed for names a scenario author
//! wrote. [`name_hash`] hashes a name eight bytes per step, and the map keyed by those hashes
//! uses [`PreHashed`], which does not hash them again. These maps are never iterated, so
//! their order never reaches an output.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of rustc's FxHash.
const FX_K: u64 = 0x517c_c1b7_2722_0a95;

fn fx_step(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(FX_K)
}

/// A 64-bit hash of a name: the FxHash mix of rustc over little-endian 8-byte words (the last
/// one zero-padded), with the length mixed in first so that trailing NULs still count.
pub fn name_hash(bytes: &[u8]) -> u64 {
    let mut h = fx_step(0, bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = fx_step(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = fx_step(h, u64::from_le_bytes(w));
    }
    h
}

/// A hasher for keys that already are 64-bit hashes ([`name_hash`] of a name): it only runs
/// the SplitMix64 finaliser over them, because `hashbrown` takes the bucket from the low bits
/// and a 7-bit tag from the top ones, and a multiplicative hash's low bits depend on the low
/// bits of its input alone. Hashing a key is then a few instructions, which matters most
/// when a growing map rehashes them all.
#[derive(Clone, Copy, Debug, Default)]
pub struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are meant; anything else still hashes deterministically.
        self.0 = fx_step(self.0, name_hash(bytes));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A `HashMap` whose `u64` keys are hashes already.
pub type HashKeyedMap<V> = HashMap<u64, V, BuildHasherDefault<PreHashed>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_hash_sees_every_byte_and_the_length() {
        let names = [
            "",
            "a",
            "a\0",
            "default/pod-1",
            "default/pod-2",
            "default/pod-10",
            "ipip-tunnel-addr-node-1",
        ];
        let hashes: std::collections::BTreeSet<u64> =
            names.iter().map(|n| name_hash(n.as_bytes())).collect();
        assert_eq!(hashes.len(), names.len());
        assert_eq!(name_hash(b"node-1"), name_hash(b"node-1"));
    }

    #[test]
    fn prehashed_mixes_u64_keys() {
        let hash = |n: u64| {
            let mut h = PreHashed::default();
            h.write_u64(n);
            h.finish()
        };
        assert_eq!(hash(7), hash(7));
        // Keys differing in one high bit land in different low bits.
        assert_ne!(hash(1 << 63) & 0xffff, hash(0) & 0xffff);
    }
}
