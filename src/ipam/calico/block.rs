//! One allocation block (`ipam_block.go` allocationBlock) and the IPReservation filter.
//!
//! A block is a power-of-two range of a pool with at most one affine node. Its free list is
//! Calico's `Unallocated`: a FIFO that starts `[0 .. n−1]`; `take` pops from the front and a
//! released ordinal is appended at the back, so addresses are reused last ("should wrap IP
//! allocations correctly" in `ipam_test.go`). Ordinals inside an IPReservation stay in the
//! list, in place, and are skipped, exactly as Calico's autoAssign skips them.
//!
//! Invariants: every ordinal is in exactly one state (free, Windows-reserved, held, cooling);
//! `free` lists exactly the free ordinals; `usable_free` counts the free ones not reserved.
//! A block does not know which node asked for an address or anything about other blocks.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use ipnet::IpNet;

use crate::model::time::{SimDuration, SimTime};

/// A block's identity in ordered maps: (is IPv6, network address as an integer).
pub(crate) type BlockKey = (bool, u128);

/// An interned IPAM handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct HandleId(pub(crate) u32);

/// Calico's `windows-reserved-ipam-handle` ordinals: network, gateway/tunnel, host, broadcast.
pub(crate) const WINDOWS_RESERVED_START: u32 = 3;
pub(crate) const WINDOWS_RESERVED_END: u32 = 1;

/// What a block a Windows node creates reserves (`network.windowsReservation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WindowsSlots {
    /// Calico's ordinals 0, 1, 2 and n−1 (the per-block model).
    Calico,
    /// Ordinals `0 .. n` (capped at the block's size): the micro-pool models' reservation in
    /// the block that carries it; `First(0)` for their other blocks.
    First(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Free,
    WindowsReserved,
    Held(HandleId),
    /// Released at this time, waiting out `ipCooldownSeconds` (v3.33).
    Cooling(SimTime),
}

pub(crate) fn ip_bits(ip: IpAddr) -> (bool, u128) {
    match ip {
        IpAddr::V4(a) => (false, u128::from(u32::from(a))),
        IpAddr::V6(a) => (true, u128::from(a)),
    }
}

pub(crate) fn bits_ip(v6: bool, bits: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(bits))
    } else {
        // A v4 value always fits; the mask only guards against a caller's bug.
        IpAddr::V4(Ipv4Addr::from((bits & 0xffff_ffff) as u32))
    }
}

pub(crate) fn net_key(net: &IpNet) -> BlockKey {
    ip_bits(net.network())
}

/// The IPReservations in force: a plain list of CIDRs (`addr_filter.go` cidrSliceFilter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReservedSet {
    cidrs: Vec<IpNet>,
}

impl ReservedSet {
    pub(crate) fn new(cidrs: Vec<IpNet>) -> ReservedSet {
        ReservedSet {
            cidrs: cidrs.into_iter().map(|c| c.trunc()).collect(),
        }
    }

    pub(crate) fn cidrs(&self) -> &[IpNet] {
        &self.cidrs
    }

    pub(crate) fn matches_ip(&self, ip: IpAddr) -> bool {
        self.cidrs.iter().any(|c| c.contains(&ip))
    }

    pub(crate) fn matches_some(&self, net: &IpNet) -> bool {
        self.cidrs
            .iter()
            .any(|c| c.contains(&net.network()) || net.contains(&c.network()))
    }

    /// Whether every address of `net` is reserved, by one CIDR or by several together.
    pub(crate) fn matches_whole(&self, net: &IpNet) -> bool {
        let mut inside: Vec<IpNet> = Vec::new();
        for c in &self.cidrs {
            if c.contains(net) {
                return true;
            }
            if net.contains(c) {
                inside.push(*c);
            }
        }
        if inside.is_empty() {
            return false;
        }
        // Drop CIDRs covered by another, then compare the covered count with the block size.
        inside.sort_by_key(|c| (c.prefix_len(), net_key(c)));
        let mut kept: Vec<IpNet> = Vec::new();
        for c in inside {
            if !kept.iter().any(|k| k.contains(&c)) {
                kept.push(c);
            }
        }
        let host_bits = |n: &IpNet| u32::from(n.max_prefix_len() - n.prefix_len());
        let total: u128 = kept
            .iter()
            .map(|c| 1u128.checked_shl(host_bits(c)).unwrap_or(u128::MAX))
            .fold(0u128, |a, b| a.saturating_add(b));
        1u128.checked_shl(host_bits(net)) == Some(total)
    }
}

/// One allocation block.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) cidr: IpNet,
    /// The creating pool's name, shared with the pool's state (`PoolBlocks::name`).
    pub(crate) pool: Arc<str>,
    /// The block's index inside its pool (its position in the walk).
    pub(crate) index: u128,
    pub(crate) affinity: Option<String>,
    /// `AffinityClaimTime`: when the current affinity was claimed.
    pub(crate) claim_time: SimTime,
    /// Created by a Windows node (its reserved ordinals are `Slot::WindowsReserved`).
    pub(crate) windows: bool,
    slots: Vec<Slot>,
    free: VecDeque<u32>,
    /// Cooling ordinals in release order.
    cooling: VecDeque<(SimTime, u32)>,
    /// IPReservation mask when the block is partly reserved.
    reserved: Option<Vec<bool>>,
    pub(crate) wholly_reserved: bool,
    held: u32,
    windows_reserved: u32,
    usable_free: u32,
}

impl Block {
    pub(crate) fn new(
        cidr: IpNet,
        pool: Arc<str>,
        index: u128,
        affinity: Option<String>,
        now: SimTime,
        windows: Option<WindowsSlots>,
        reservations: &ReservedSet,
    ) -> Block {
        let n = 1u32 << (cidr.max_prefix_len() - cidr.prefix_len()).min(31);
        let mut slots = vec![Slot::Free; n as usize];
        let mut free: VecDeque<u32> = (0..n).collect();
        let mut windows_reserved = 0;
        match windows {
            Some(WindowsSlots::Calico) if n >= WINDOWS_RESERVED_START + WINDOWS_RESERVED_END => {
                // `ipam_block.go` newBlock: Unallocated = [3 : n−1], those four pre-allocated.
                free = (WINDOWS_RESERVED_START..n - WINDOWS_RESERVED_END).collect();
                for o in (0..WINDOWS_RESERVED_START).chain(n - WINDOWS_RESERVED_END..n) {
                    slots[o as usize] = Slot::WindowsReserved;
                }
                windows_reserved = WINDOWS_RESERVED_START + WINDOWS_RESERVED_END;
            }
            Some(WindowsSlots::First(k)) => {
                let k = k.min(n);
                free = (k..n).collect();
                for slot in &mut slots[..k as usize] {
                    *slot = Slot::WindowsReserved;
                }
                windows_reserved = k;
            }
            Some(WindowsSlots::Calico) | None => {}
        }
        let mut block = Block {
            cidr,
            pool,
            index,
            affinity,
            claim_time: now,
            windows: windows.is_some(),
            slots,
            free,
            cooling: VecDeque::new(),
            reserved: None,
            wholly_reserved: false,
            held: 0,
            windows_reserved,
            usable_free: 0,
        };
        block.set_reservations(reservations);
        block
    }

    pub(crate) fn key(&self) -> BlockKey {
        net_key(&self.cidr)
    }

    pub(crate) fn size(&self) -> u32 {
        self.slots.len() as u32
    }

    pub(crate) fn ordinal_ip(&self, ordinal: u32) -> IpAddr {
        let (v6, base) = self.key();
        bits_ip(v6, base + u128::from(ordinal))
    }

    pub(crate) fn ip_ordinal(&self, ip: IpAddr) -> Option<u32> {
        if !self.cidr.contains(&ip) {
            return None;
        }
        let (_, base) = self.key();
        let (_, bits) = ip_bits(ip);
        u32::try_from(bits - base).ok()
    }

    /// Calico's `empty()`: nothing held and nothing cooling (Windows reservations don't count).
    pub(crate) fn is_empty(&self) -> bool {
        self.held == 0 && self.cooling.is_empty()
    }

    /// Addresses handed out (pods and tunnels), not counting cooling ones.
    pub(crate) fn held(&self) -> u32 {
        self.held
    }

    pub(crate) fn cooling(&self) -> u32 {
        self.cooling.len() as u32
    }

    pub(crate) fn windows_reserved(&self) -> u32 {
        self.windows_reserved
    }

    /// `NumFreeAddresses`: free and not in an IPReservation.
    pub(crate) fn usable_free(&self) -> u32 {
        if self.wholly_reserved {
            0
        } else {
            self.usable_free
        }
    }

    /// Addresses covered by an IPReservation (`NumReservedAddresses`).
    pub(crate) fn ipreserved(&self) -> u32 {
        if self.wholly_reserved {
            return self.size();
        }
        self.reserved
            .as_ref()
            .map_or(0, |m| m.iter().filter(|&&r| r).count() as u32)
    }

    pub(crate) fn handle_at(&self, ordinal: u32) -> Option<HandleId> {
        match self.slots.get(ordinal as usize) {
            Some(Slot::Held(h)) => Some(*h),
            _ => None,
        }
    }

    fn is_reserved(&self, ordinal: u32) -> bool {
        self.wholly_reserved
            || self
                .reserved
                .as_ref()
                .is_some_and(|m| m.get(ordinal as usize).copied().unwrap_or(false))
    }

    /// Recomputes the IPReservation mask; existing allocations are not evicted.
    pub(crate) fn set_reservations(&mut self, reservations: &ReservedSet) {
        self.wholly_reserved = reservations.matches_whole(&self.cidr);
        self.reserved = None;
        if !self.wholly_reserved && reservations.matches_some(&self.cidr) {
            let mask: Vec<bool> = (0..self.size())
                .map(|o| reservations.matches_ip(self.ordinal_ip(o)))
                .collect();
            self.reserved = Some(mask);
        }
        self.usable_free = self.free.iter().filter(|&&o| !self.is_reserved(o)).count() as u32;
    }

    /// `autoAssign` inside the block: up to `num` ordinals from the front of the free list,
    /// skipping reserved ones, which keep their places.
    /// The ordinals are appended to `taken` (a buffer the caller reuses, so that the usual
    /// one-address request allocates nothing here).
    pub(crate) fn take_into(&mut self, num: u32, handle: HandleId, taken: &mut Vec<u32>) {
        if self.wholly_reserved {
            return;
        }
        let before = taken.len();
        let mut count = 0u32;
        let mut skipped: Vec<u32> = Vec::new();
        while count < num {
            let Some(o) = self.free.pop_front() else {
                break;
            };
            if self.is_reserved(o) {
                skipped.push(o);
                continue;
            }
            self.slots[o as usize] = Slot::Held(handle);
            taken.push(o);
            count += 1;
        }
        for o in skipped.into_iter().rev() {
            self.free.push_front(o);
        }
        debug_assert_eq!(taken.len() - before, count as usize);
        self.held += count;
        self.usable_free -= count;
    }

    #[cfg(test)]
    pub(crate) fn take(&mut self, num: u32, handle: HandleId) -> Vec<u32> {
        let mut taken = Vec::new();
        self.take_into(num, handle, &mut taken);
        taken
    }

    /// `assign` (AssignIP): one given ordinal, which must be free.
    pub(crate) fn take_ordinal(&mut self, ordinal: u32, handle: HandleId) -> bool {
        if self.slots.get(ordinal as usize) != Some(&Slot::Free) {
            return false;
        }
        if let Some(pos) = self.free.iter().position(|&o| o == ordinal) {
            self.free.remove(pos);
        }
        if !self.is_reserved(ordinal) {
            self.usable_free -= 1;
        }
        self.slots[ordinal as usize] = Slot::Held(handle);
        self.held += 1;
        true
    }

    /// Releases held ordinals. Without a cooldown they go straight to the back of the free
    /// list in ordinal order (Calico's garbageCollect appends in ordinal order); with one they
    /// wait in `cooling` and still count as in use.
    pub(crate) fn release(
        &mut self,
        ordinals: &[u32],
        now: SimTime,
        cooldown: Option<SimDuration>,
    ) {
        let mut released: Vec<u32> = ordinals
            .iter()
            .copied()
            .filter(|&o| matches!(self.slots.get(o as usize), Some(Slot::Held(_))))
            .collect();
        released.sort_unstable();
        released.dedup();
        self.held -= released.len() as u32;
        for o in released {
            match cooldown {
                Some(_) => {
                    self.slots[o as usize] = Slot::Cooling(now);
                    self.cooling.push_back((now, o));
                }
                None => self.push_free(o),
            }
        }
    }

    fn push_free(&mut self, o: u32) {
        self.slots[o as usize] = Slot::Free;
        self.free.push_back(o);
        if !self.is_reserved(o) {
            self.usable_free += 1;
        }
    }

    /// Calico's garbageCollect: ordinals released strictly before `now − cooldown` become free,
    /// appended in ordinal order. Returns whether anything changed.
    pub(crate) fn expire_cooling(&mut self, now: SimTime, cooldown: SimDuration) -> bool {
        let mut due: Vec<u32> = Vec::new();
        self.cooling.retain(|&(at, o)| {
            let expired = at + cooldown < now;
            if expired {
                due.push(o);
            }
            !expired
        });
        due.sort_unstable();
        let changed = !due.is_empty();
        for o in due {
            self.push_free(o);
        }
        changed
    }

    /// When the earliest cooling ordinal becomes due (strictly after this instant).
    pub(crate) fn next_cooling_due(&self, cooldown: SimDuration) -> Option<SimTime> {
        self.cooling.iter().map(|&(at, _)| at + cooldown).min()
    }

    #[cfg(test)]
    pub(crate) fn free_list(&self) -> Vec<u32> {
        self.free.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(cidr: &str, windows: bool) -> Block {
        block_with(cidr, windows.then_some(WindowsSlots::Calico))
    }

    fn block_with(cidr: &str, windows: Option<WindowsSlots>) -> Block {
        Block::new(
            cidr.parse().unwrap(),
            "p".into(),
            0,
            Some("n1".into()),
            SimTime::ZERO,
            windows,
            &ReservedSet::default(),
        )
    }

    #[test]
    fn fresh_block_hands_out_in_order_and_reuses_last() {
        let mut b = block("10.0.0.0/30", false);
        let h = HandleId(0);
        // `ipam_test.go` "should wrap IP allocations correctly".
        let mut got = Vec::new();
        for _ in 0..5 {
            let o = b.take(1, h);
            got.push(o[0]);
            b.release(&o, SimTime::ZERO, None);
        }
        assert_eq!(got, vec![0, 1, 2, 3, 0]);
        let mut b = block("10.0.0.0/29", false);
        let first = b.take(3, h);
        assert_eq!(first, vec![0, 1, 2]);
        b.release(&[1], SimTime::ZERO, None);
        assert_eq!(b.free_list(), vec![3, 4, 5, 6, 7, 1]);
        assert_eq!(b.held(), 2);
    }

    #[test]
    fn windows_blocks_reserve_four_ordinals() {
        let mut b = block("10.0.0.0/26", true);
        assert_eq!(b.usable_free(), 60);
        assert_eq!(b.windows_reserved(), 4);
        assert!(b.is_empty());
        let got = b.take(100, HandleId(1));
        assert_eq!(got.len(), 60);
        assert_eq!(got[0], 3);
        assert_eq!(*got.last().unwrap(), 62);
        assert!(!b.take_ordinal(1, HandleId(1)));
    }

    #[test]
    fn micro_pool_blocks_reserve_their_first_ordinals_only() {
        // A /29 carrying a per-host reservation of 2: ordinals 0 and 1 reserved, pods get
        // 2..=7 (six), the last address included (no broadcast reservation).
        let mut b = block_with("10.0.0.0/29", Some(WindowsSlots::First(2)));
        assert_eq!(b.windows_reserved(), 2);
        assert_eq!(b.usable_free(), 6);
        assert!(b.is_empty());
        assert_eq!(b.take(100, HandleId(1)), vec![2, 3, 4, 5, 6, 7]);
        assert!(!b.take_ordinal(0, HandleId(1)));
        // A block that carries nothing: all eight to pods, from ordinal 0.
        let mut b = block_with("10.0.0.8/29", Some(WindowsSlots::First(0)));
        assert_eq!((b.windows_reserved(), b.usable_free()), (0, 8));
        assert_eq!(b.take(1, HandleId(1)), vec![0]);
        assert!(b.windows);
        // More than the block holds: all of it reserved, nothing for pods.
        let b = block_with("10.0.0.16/30", Some(WindowsSlots::First(6)));
        assert_eq!((b.windows_reserved(), b.usable_free()), (4, 0));
        // Calico's per-block rule needs four addresses: a /31 reserves nothing.
        let b = block_with("10.0.0.20/31", Some(WindowsSlots::Calico));
        assert_eq!(b.windows_reserved(), 0);
    }

    #[test]
    fn reserved_ordinals_are_skipped_and_keep_their_place() {
        let res = ReservedSet::new(vec!["10.0.0.1/32".parse().unwrap()]);
        let mut b = Block::new(
            "10.0.0.0/30".parse().unwrap(),
            "p".into(),
            0,
            None,
            SimTime::ZERO,
            None,
            &res,
        );
        assert_eq!(b.usable_free(), 3);
        assert_eq!(b.take(2, HandleId(0)), vec![0, 2]);
        assert_eq!(b.free_list(), vec![1, 3]);
        b.set_reservations(&ReservedSet::default());
        assert_eq!(b.take(1, HandleId(0)), vec![1]);
    }

    #[test]
    fn cooling_keeps_the_block_non_empty_until_strictly_past_the_cooldown() {
        let mut b = block("10.0.0.0/30", false);
        let o = b.take(1, HandleId(0));
        let cd = SimDuration::from_secs(60);
        b.release(&o, SimTime::ZERO, Some(cd));
        assert!(!b.is_empty());
        assert_eq!(b.usable_free(), 3);
        assert!(!b.expire_cooling(SimTime::ZERO + cd, cd));
        assert!(b.expire_cooling(SimTime::ZERO + cd + SimDuration::from_nanos(1), cd));
        assert!(b.is_empty());
        assert_eq!(b.free_list(), vec![1, 2, 3, 0]);
    }

    #[test]
    fn whole_cover_by_several_reservations() {
        let net: IpNet = "10.0.0.0/30".parse().unwrap();
        let r = ReservedSet::new(vec![
            "10.0.0.0/31".parse().unwrap(),
            "10.0.0.2/32".parse().unwrap(),
            "10.0.0.2/31".parse().unwrap(),
        ]);
        assert!(r.matches_whole(&net));
        let r = ReservedSet::new(vec![
            "10.0.0.0/31".parse().unwrap(),
            "10.0.0.2/32".parse().unwrap(),
        ]);
        assert!(!r.matches_whole(&net));
        assert!(r.matches_some(&net));
        let r = ReservedSet::new(vec!["10.0.0.0/8".parse().unwrap()]);
        assert!(r.matches_whole(&net));
    }
}
