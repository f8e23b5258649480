//! The order in which a node visits a pool's blocks.
//!
//! Calico (`ipam_block_reader_writer.go` randomBlockGenerator) walks block indices
//! `start, start+1, …, n−1, 0, …, start−1` where `start` is drawn from Go's `math/rand` seeded
//! with the FNV-1 (not FNV-1a) 32-bit hash of the host name. podnet keeps the FNV-1 seed but
//! not Go's generator: [`start_index`] feeds the hash to SplitMix64 and takes the top bits, a
//! deterministic function of (hash, numBlocks) that spreads nodes over the pool the same way
//! without Go's 607-word lagged-Fibonacci state. Start indices therefore differ from real
//! Calico's (REFERENCE §1.3 lists Go's values); everything downstream of the start is exact.
//! Calico seeds /32 and /128 blocks from the clock; podnet uses the hash for them too.
//! The blocks still to walk are a `ipam::ranges::RangeSet` of block indices.

use crate::model::hash::splitmix64;

/// Go's `hash/fnv.New32`: FNV-1, multiply then xor.
pub fn fnv1_32(data: &[u8]) -> u32 {
    const OFFSET: u32 = 2_166_136_261;
    const PRIME: u32 = 16_777_619;
    data.iter()
        .fold(OFFSET, |h, &b| h.wrapping_mul(PRIME) ^ u32::from(b))
}

/// The index at which `node` starts walking a pool of `2^num_blocks_log2` blocks.
pub fn start_index(node: &str, num_blocks_log2: u8) -> u128 {
    let bits = u32::from(num_blocks_log2.min(128));
    if bits == 0 {
        return 0;
    }
    let mut state = u64::from(fnv1_32(node.as_bytes()));
    let hi = u128::from(splitmix64(&mut state));
    let lo = u128::from(splitmix64(&mut state));
    ((hi << 64) | lo) >> (128 - bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_matches_published_values() {
        // FNV-1 (not 1a) 32-bit test vectors from the FNV reference suite.
        assert_eq!(fnv1_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1_32(b"a"), 0x050c_5d7e);
        assert_eq!(fnv1_32(b"foobar"), 0x31f0_b262);
        // FNV-1a would give 0xe40c292c for "a": make sure that is not what we compute.
        assert_ne!(fnv1_32(b"a"), 0xe40c_292c);
    }

    #[test]
    fn start_index_is_deterministic_and_in_range() {
        for log2 in [0u8, 1, 2, 6, 10, 14, 58, 64, 100, 128] {
            for node in ["host-a", "host-b", "node1", "node2"] {
                let s = start_index(node, log2);
                assert_eq!(s, start_index(node, log2));
                if log2 < 128 {
                    assert!(s < (1u128 << log2));
                }
            }
        }
        assert_eq!(start_index("anything", 0), 0);
        // Different nodes spread out over a big pool.
        let starts: std::collections::BTreeSet<u128> = (0..100)
            .map(|i| start_index(&format!("n{i}"), 14))
            .collect();
        assert!(starts.len() > 90);
    }
}
