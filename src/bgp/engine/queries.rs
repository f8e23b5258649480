//! What the engine tells the rest of podnet: speakers, sessions, RIBs and FIB routes,
//! counters and the log. Read-only except for the take-once queues (log, FIB change times).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::bgp::SessionId;
use crate::bgp::decision::{LostBecause, RouteStatus};
use crate::bgp::peering::{IdleReason, Session, SessionState, SessionType, Speaker};
use crate::bgp::rib::{EMPTY, LANES, LOCAL_TAG, PrefixId, RouteSource, StateId};
use crate::model::time::SimTime;
use crate::model::topology::DeviceId;

use super::{BestRoute, BgpEngine, BgpLogEntry, RibEntry, RibRoute};

/// How many speakers' learned routes differ from one another ([`BgpEngine::learned_spread`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// A learned-route list as [`BgpEngine::learned_next_hops`] gives one, in prefix-id order.
    pub reference: Vec<(PrefixId, IpNet, IpAddr)>,
    /// For each device asked about, in order, the prefixes (ascending ids) where its list may
    /// differ from `reference`: on every other prefix the two have the same entry or both
    /// none. `None` for a device whose list is not its states (a restarting daemon's kernel
    /// routes, `restart.rs`) or that is no speaker.
    pub differing: Vec<Option<Vec<PrefixId>>>,
}

impl BgpEngine {
    pub fn speakers(&self) -> &[Speaker] {
        &self.speakers
    }

    pub fn speaker(&self, device: DeviceId) -> Option<&Speaker> {
        self.by_device
            .get(&device)
            .map(|s| &self.speakers[s.index()])
    }

    pub fn is_up(&self, device: DeviceId) -> bool {
        self.by_device
            .get(&device)
            .is_some_and(|s| self.rt[s.index()].up)
    }

    /// Whether the device forwards with BGP-learned routes: its daemon runs, or it restarts
    /// and the kernel kept its routes (graceful restart).
    pub fn forwards(&self, device: DeviceId) -> bool {
        self.by_device
            .get(&device)
            .is_some_and(|s| self.rt[s.index()].up || self.restart.kernel(*s).is_some())
    }

    /// Every session except those of deleted speakers and those a configuration change
    /// removed, in id order.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions
            .iter()
            .filter(|s| !s.reason.as_deref().is_some_and(IdleReason::is_gone))
    }

    /// How many times session `id` went down after being Established.
    pub fn session_downs(&self, id: SessionId) -> u32 {
        self.srt[id.index()].downs
    }

    pub fn session(&self, id: SessionId) -> &Session {
        &self.sessions[id.index()]
    }

    /// The sessions of one speaker, in id order.
    pub fn sessions_of(&self, device: DeviceId) -> Vec<&Session> {
        self.by_device
            .get(&device)
            .map(|s| {
                self.outbound[s.index()]
                    .all
                    .iter()
                    .map(|x| &self.sessions[x.index()])
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn established_sessions(&self) -> usize {
        self.sessions
            .iter()
            .filter(|s| s.state == SessionState::Established)
            .count()
    }

    /// The speaker's RIB, by prefix: every candidate with its verdict, the best first.
    pub fn loc_rib(&self, device: DeviceId) -> Vec<RibEntry> {
        let Some(&s) = self.by_device.get(&device) else {
            return Vec::new();
        };
        let mut out: Vec<RibEntry> = self
            .table
            .held(s)
            .map(|(p, _)| {
                let d = self.destination(s, p);
                let mut routes: Vec<RibRoute> = d
                    .routes
                    .iter()
                    .map(|r| {
                        let (from, session, ebgp) = match r.source() {
                            RouteSource::Local => (None, None, false),
                            RouteSource::Peer(x) => {
                                let sess = &self.sessions[x.index()];
                                let peer = sess
                                    .side_of(s)
                                    .and_then(|side| sess.peer_of(side))
                                    .map(|p| self.speakers[p.index()].device);
                                (peer, Some(x), sess.session_type == SessionType::Ebgp)
                            }
                        };
                        RibRoute {
                            from,
                            session,
                            attrs: r.attrs.clone(),
                            next_hop_device: self.owner(r.attrs.next_hop),
                            ebgp,
                            status: r.status,
                        }
                    })
                    .collect();
                routes.sort_by_key(|r| !r.status.is_best());
                RibEntry {
                    prefix: self.prefixes.net(p),
                    routes,
                }
            })
            .collect();
        out.sort_by_key(|e| e.prefix);
        out
    }

    /// The Loc-RIB's best routes, by prefix.
    pub fn best_routes(&self, device: DeviceId) -> Vec<BestRoute> {
        let Some(&s) = self.by_device.get(&device) else {
            return Vec::new();
        };
        let mut out: Vec<BestRoute> = self
            .table
            .held(s)
            .filter_map(|(p, id)| {
                let best = self.states.get(id).best()?;
                Some(BestRoute {
                    prefix: self.prefixes.net(p),
                    next_hop: best.attrs.next_hop,
                    next_hop_device: self.owner(best.attrs.next_hop),
                    local: best.tag == LOCAL_TAG,
                })
            })
            .collect();
        out.sort_by_key(|e| e.prefix);
        out
    }

    /// The speaker's learned best routes as `(prefix id, prefix, next hop)`, in prefix-id
    /// order: what a FIB is built from, without [`BgpEngine::best_routes`]'s sorting and
    /// owner lookups. Prefix ids are the same for every speaker, so two speakers' lists can
    /// be compared by merging.
    pub fn learned_next_hops(&self, device: DeviceId) -> Vec<(PrefixId, IpNet, IpAddr)> {
        let Some(&s) = self.by_device.get(&device) else {
            return Vec::new();
        };
        // A restarting daemon's node forwards with what its kernel kept (`restart.rs`).
        if let Some(kernel) = self.restart.kernel(s) {
            return kernel.to_vec();
        }
        self.table
            .held(s)
            .filter_map(|(p, id)| self.learned(p, id).map(|(net, hop)| (p, net, hop)))
            .collect()
    }

    /// The entry of [`BgpEngine::learned_next_hops`] for prefix `p` alone, if there is one.
    pub fn learned_next_hop(&self, device: DeviceId, p: PrefixId) -> Option<(IpNet, IpAddr)> {
        let &s = self.by_device.get(&device)?;
        if let Some(kernel) = self.restart.kernel(s) {
            let i = kernel.binary_search_by_key(&p, |r| r.0).ok()?;
            return Some((kernel[i].1, kernel[i].2));
        }
        self.learned(p, self.table.get(s, p))
    }

    /// The learned best route of state `id` for prefix `p`: none when the state has no best
    /// route or the best is the speaker's own. A function of the state alone — the tag of a
    /// speaker's own route is the same on every speaker — so every speaker holding the state
    /// gets the same.
    fn learned(&self, p: PrefixId, id: StateId) -> Option<(IpNet, IpAddr)> {
        let best = self.states.get(id).best()?;
        (best.tag != LOCAL_TAG).then(|| (self.prefixes.net(p), best.attrs.next_hop))
    }

    /// How the learned routes of `devices` ([`BgpEngine::learned_next_hops`]) differ from
    /// one another, found from their shared states without resolving a route per speaker
    /// and prefix: a reference list, and for each device the prefixes where its list may
    /// differ from it ([`Spread`]).
    ///
    /// Speakers holding the same state for a prefix have the same entry for it
    /// ([`BgpEngine::learned`]; different states may still give the same). The reference is,
    /// per prefix, the state most of the devices hold (a majority vote; any state would be
    /// correct, a common one keeps the lists short); a device's prefixes are those where its
    /// state is another. Reads the state table a block of speakers at a time
    /// ([`crate::bgp::rib::StateTable::lines`]), twice (vote, then compare): two passes over
    /// 5,000 speakers' ids rather than 5,000 passes of which each uses a sixteenth.
    pub fn learned_spread(&self, devices: &[DeviceId]) -> Spread {
        let mut differing: Vec<Option<Vec<PrefixId>>> = vec![None; devices.len()];
        // The devices whose lists are their states, by block of speakers: (lane, index in
        // `devices`). A restarting daemon's node forwards with its kernel's routes.
        let mut blocks: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
        for (i, d) in devices.iter().enumerate() {
            let Some(&s) = self.by_device.get(d) else {
                continue;
            };
            if self.restart.kernel(s).is_none() {
                blocks
                    .entry(s.index() / LANES)
                    .or_default()
                    .push((s.index() % LANES, i));
            }
        }
        let bound = self.table.prefix_bound();
        // Boyer-Moore majority vote per prefix: the state held by more than half of the
        // devices if one is, some state otherwise.
        let mut votes = vec![(EMPTY, 0u32); bound];
        for (&block, lanes) in &blocks {
            for (line, (state, count)) in self.table.lines(block, bound).zip(&mut votes) {
                for &(lane, _) in lanes {
                    let id = line[lane];
                    if *count == 0 {
                        *state = id;
                    }
                    if *state == id {
                        *count += 1;
                    } else {
                        *count -= 1;
                    }
                }
            }
        }
        let reference: Vec<StateId> = votes.into_iter().map(|(state, _)| state).collect();
        for (block, lanes) in blocks {
            let mut found: Vec<Vec<PrefixId>> = vec![Vec::new(); lanes.len()];
            let lines = self.table.lines(block, bound).zip(&reference);
            for (p, (line, reference)) in lines.enumerate() {
                // Most lines hold the reference in every lane.
                if line.iter().all(|id| id == reference) {
                    continue;
                }
                for (f, &(lane, _)) in found.iter_mut().zip(&lanes) {
                    if line[lane] != *reference {
                        f.push(PrefixId(p as u32));
                    }
                }
            }
            for (f, (_, i)) in found.into_iter().zip(lanes) {
                differing[i] = Some(f);
            }
        }
        Spread {
            reference: reference
                .into_iter()
                .enumerate()
                .filter_map(|(p, id)| {
                    let p = PrefixId(p as u32);
                    self.learned(p, id).map(|(net, hop)| (p, net, hop))
                })
                .collect(),
            differing,
        }
    }

    /// The speaker's learned prefixes with more than one equal-cost path, as
    /// `(prefix, next hops)`, the best route's next hop first, then the others in candidate
    /// order, each once: the candidates that lost to the best only at the router ID, the
    /// CLUSTER_LIST length or the peer address, which BIRD's `bgp_rte_mergable` merges into
    /// one multipath route (equal LOCAL_PREF, AS_PATH length, ORIGIN, MED, eBGP/iBGP and IGP
    /// cost). Empty for a restarting daemon's node (its kernel keeps single routes).
    pub fn equal_cost_next_hops(&self, device: DeviceId) -> Vec<(IpNet, Vec<IpAddr>)> {
        let Some(&s) = self.by_device.get(&device) else {
            return Vec::new();
        };
        if self.restart.kernel(s).is_some() {
            return Vec::new();
        }
        let mut out: Vec<(IpNet, Vec<IpAddr>)> = self
            .table
            .held(s)
            .filter_map(|(p, id)| {
                let state = self.states.get(id);
                let best = state.best()?;
                if best.tag == LOCAL_TAG {
                    return None;
                }
                let mut hops = vec![best.attrs.next_hop];
                for r in &state.held {
                    let equal = matches!(
                        r.status,
                        RouteStatus::Lost(
                            LostBecause::RouterId
                                | LostBecause::ClusterListLength
                                | LostBecause::PeerAddress
                        )
                    );
                    if equal && !hops.contains(&r.attrs.next_hop) {
                        hops.push(r.attrs.next_hop);
                    }
                }
                (hops.len() > 1).then(|| (self.prefixes.net(p), hops))
            })
            .collect();
        out.sort_by_key(|(p, _)| *p);
        out
    }

    /// How many prefixes the speaker's Loc-RIB holds.
    pub fn rib_size(&self, device: DeviceId) -> usize {
        self.by_device
            .get(&device)
            .map_or(0, |s| self.rt[s.index()].rib.loc_rib_len)
    }

    pub fn updates_sent(&self, device: DeviceId) -> u64 {
        self.by_device
            .get(&device)
            .map_or(0, |s| self.outbound[s.index()].sent)
    }

    pub fn updates_received(&self, device: DeviceId) -> u64 {
        self.by_device
            .get(&device)
            .map_or(0, |s| self.rt[s.index()].received)
    }

    /// UPDATE messages sent by everyone so far.
    pub fn total_updates(&self) -> u64 {
        self.total_updates
    }

    /// The last instant any Loc-RIB changed.
    pub fn last_rib_change(&self) -> SimTime {
        self.last_rib_change
    }

    /// The last instant any session or speaker changed state, or any Loc-RIB changed.
    pub fn last_state_change(&self) -> SimTime {
        self.last_state_change.max(self.last_rib_change)
    }

    pub fn prefix(&self, id: PrefixId) -> IpNet {
        self.prefixes.net(id)
    }

    /// Drains the log.
    pub fn log(&mut self) -> Vec<BgpLogEntry> {
        std::mem::take(&mut self.log)
    }

    /// Drains the instants (ascending, each once) at which some FIB changed since the last
    /// call: a learned best route appeared, went, or changed its next hop. A best-path change
    /// that leaves the next hop as it was (another reflector's copy) is not one (SPEC §2.6).
    /// (Drained in place: the vector keeps its room for the next ones.)
    pub fn drain_fib_change_times(&mut self) -> std::vec::Drain<'_, SimTime> {
        self.fib_change_times.drain(..)
    }

    /// The last instant something happened that the full log would have a line for.
    pub fn last_activity(&self) -> SimTime {
        self.last_activity
    }

    pub(super) fn owner(&self, address: IpAddr) -> Option<DeviceId> {
        match self.by_address.get(&address) {
            Some(s) => Some(self.speakers[s.index()].device),
            None => self
                .underlay
                .topology()
                .devices
                .iter()
                .position(|d| d.address == address)
                .map(|i| DeviceId(i as u32)),
        }
    }
}
