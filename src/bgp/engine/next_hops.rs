//! Which destinations a link change can re-decide (`BgpEngine::link_changed`), without
//! looking at every destination of every speaker.
//!
//! A link event changes only the underlay: IGP costs (the nearer of two next hops) and, at a
//! router, which next hops resolve. A Calico node's decision can therefore change only where
//! its candidates carry different next hops. Every candidate's next hop is the address of a
//! speaker that originated the prefix (a local route carries its originator's address, and a
//! Calico node keeps the next hop on iBGP) unless some speaker rewrote it on export (a router
//! sets itself, a node sets itself on eBGP without `keepOriginalNextHop`). So the engine
//! records, for the whole run, each prefix's first originator address, the prefixes ever
//! originated from a second address, and whether any export rewrote a next hop: while none
//! did, only the prefixes originated from several addresses can carry different next hops
//! anywhere, and a link event looks at those alone — on a reflector cluster where each block
//! has one owner, none.
//!
//! Invariants: everything here only grows (a route withdrawn at its origin may still be in
//! flight or kept stale elsewhere, so forgetting would be wrong); the prefix set is ordered,
//! so the destinations are visited in prefix-id order as the full scan visits them.
//! What this is not: an index of the RIBs; a speaker's candidates are still read from its RIB.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bgp::rib::{LOCAL_TAG, PrefixId, State};
use crate::model::hash::FastMap;

/// What origination and export say about the next hops routes can carry.
#[derive(Debug, Default)]
pub(super) struct NextHopOrigins {
    /// The address of each prefix's first originator.
    first: FastMap<PrefixId, IpAddr>,
    /// Prefixes originated from a second address at some point.
    several: BTreeSet<PrefixId>,
    /// Some export replaced a learned route's next hop (set from `export_one`, which reads
    /// the engine shared; written by one thread at a time, so the order is irrelevant).
    rewritten: AtomicBool,
}

impl NextHopOrigins {
    /// `address` originates `p` (a local route).
    pub(super) fn originated(&mut self, p: PrefixId, address: IpAddr) {
        let first = *self.first.entry(p).or_insert(address);
        if first != address {
            self.several.insert(p);
        }
    }

    /// A learned route left a speaker with the speaker's own address as next hop.
    pub(super) fn rewritten(&self) {
        self.rewritten.store(true, Ordering::Relaxed);
    }

    /// The only prefixes whose candidates can carry different next hops at any speaker, in
    /// prefix-id order, or `None` when any prefix can (a next hop was rewritten).
    pub(super) fn may_differ(&self) -> Option<Vec<PrefixId>> {
        (!self.rewritten.load(Ordering::Relaxed)).then(|| self.several.iter().copied().collect())
    }
}

/// Whether a link change can change the decision for `d`: its learned candidates carry
/// different next hops (one may now be nearer), or, when `resolvability_changed`, it has a
/// learned candidate at all.
pub(super) fn link_sensitive(state: &State, resolvability_changed: bool) -> bool {
    let mut hops = state.held.iter().filter(|h| h.tag != LOCAL_TAG);
    match hops.next() {
        None => false,
        Some(first) => {
            resolvability_changed || hops.any(|r| r.attrs.next_hop != first.attrs.next_hop)
        }
    }
}
