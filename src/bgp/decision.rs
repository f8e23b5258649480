//! The decision process: which candidate for a prefix becomes the best route, and why every
//! other one lost (RFC 4271 §9.1.2.2 with RFC 4456 §9, in BIRD's order — `bgp_rte_better`,
//! REFERENCE §4.1).
//!
//! Each tie-breaker is one function comparing two candidates; the first that is not a tie
//! decides, and that step is stored on the losing route ([`LostBecause`]) and, for the
//! runner-up's step, on the winner ([`BestBecause`]), so `podnet routes` can show it.
//! Candidates whose next hop cannot be resolved are not eligible.
//! A route this speaker originates beats any learned one for the same prefix, as BIRD's
//! route preference makes the kernel/static route win over BGP.

use std::cmp::Ordering;
use std::fmt;
use std::net::IpAddr;

use smallvec::SmallVec;

use super::rib::{PathAttributes, Route, RouteSource};

/// The step of the decision process at which a route lost, in the order the steps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LostBecause {
    /// The winner is originated by this speaker (route preference).
    LocalOrigin,
    /// Lower LOCAL_PREF.
    LocalPref,
    /// Longer AS_PATH.
    AsPathLength,
    /// Higher ORIGIN (IGP < EGP < incomplete).
    Origin,
    /// Higher MED, from the same neighbouring AS.
    Med,
    /// Learned over iBGP, the winner over eBGP.
    EbgpOverIbgp,
    /// Farther next hop (underlay latency as the IGP metric).
    IgpCost,
    /// Higher router ID (the ORIGINATOR_ID when present).
    RouterId,
    /// Longer CLUSTER_LIST.
    ClusterListLength,
    /// Higher peer address.
    PeerAddress,
    /// Its next hop cannot be resolved, so it was not eligible.
    Unresolvable,
}

impl LostBecause {
    /// The camelCase name used in JSON and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            LostBecause::LocalOrigin => "localOrigin",
            LostBecause::LocalPref => "localPref",
            LostBecause::AsPathLength => "asPathLength",
            LostBecause::Origin => "origin",
            LostBecause::Med => "med",
            LostBecause::EbgpOverIbgp => "ebgpOverIbgp",
            LostBecause::IgpCost => "igpCost",
            LostBecause::RouterId => "routerId",
            LostBecause::ClusterListLength => "clusterListLength",
            LostBecause::PeerAddress => "peerAddress",
            LostBecause::Unresolvable => "unresolvable",
        }
    }

    /// A sentence fragment for a losing route: "lost: <this>".
    pub fn describe(self) -> &'static str {
        match self {
            LostBecause::LocalOrigin => "the best route is originated here",
            LostBecause::LocalPref => "lower LOCAL_PREF",
            LostBecause::AsPathLength => "longer AS_PATH",
            LostBecause::Origin => "worse ORIGIN",
            LostBecause::Med => "higher MED from the same neighbour AS",
            LostBecause::EbgpOverIbgp => "iBGP route, the best is eBGP",
            LostBecause::IgpCost => "farther next hop (IGP cost)",
            LostBecause::RouterId => "higher router ID",
            LostBecause::ClusterListLength => "longer CLUSTER_LIST",
            LostBecause::PeerAddress => "higher peer address",
            LostBecause::Unresolvable => "next hop unresolvable",
        }
    }
}

impl fmt::Display for LostBecause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the best route won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BestBecause {
    /// It was the only candidate.
    OnlyCandidate,
    /// It beat the runner-up (the loser that went furthest) at this step.
    Over(LostBecause),
}

impl fmt::Display for BestBecause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BestBecause::OnlyCandidate => f.write_str("onlyCandidate"),
            BestBecause::Over(step) => step.fmt(f),
        }
    }
}

/// The verdict stored on a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteStatus {
    /// Inserted and not yet decided (never visible after a decision run).
    NotEvaluated,
    Best(BestBecause),
    Lost(LostBecause),
}

impl RouteStatus {
    pub fn is_best(self) -> bool {
        matches!(self, RouteStatus::Best(_))
    }
}

/// What the decision process needs to know about a candidate besides its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceInfo {
    /// Originated by this speaker.
    pub local: bool,
    /// Learned over eBGP.
    pub ebgp: bool,
    /// The BGP Identifier of the peer it came from (this speaker's own for a local route).
    pub peer_router_id: IpAddr,
    /// The peer's address.
    pub peer_address: IpAddr,
}

/// The speaker's view needed by the decision process.
pub trait DecisionContext {
    fn local_as(&self) -> u32;
    fn source(&self, source: RouteSource) -> SourceInfo;
    /// Whether the next hop is reachable through the underlay.
    fn resolvable(&mut self, next_hop: IpAddr) -> bool;
    /// The IGP metric to the next hop (underlay latency in ns).
    fn igp_cost(&mut self, next_hop: IpAddr) -> Option<u64>;
}

/// A candidate as the tie-breakers see it.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub attrs: &'a PathAttributes,
    pub info: SourceInfo,
}

impl Candidate<'_> {
    /// RFC 4456 §9: the ORIGINATOR_ID stands in for the router ID when present.
    fn router_id(&self) -> IpAddr {
        self.attrs.originator_id.unwrap_or(self.info.peer_router_id)
    }
}

// One function per tie-breaker. Each returns `Greater` when `a` is preferred, `Less` when
// `b` is, `Equal` to go on to the next step.

fn local_origin(a: &Candidate, b: &Candidate) -> Ordering {
    a.info.local.cmp(&b.info.local)
}

fn local_pref(a: &Candidate, b: &Candidate) -> Ordering {
    a.attrs.local_pref.cmp(&b.attrs.local_pref)
}

fn as_path_length(a: &Candidate, b: &Candidate) -> Ordering {
    b.attrs.as_path.len().cmp(&a.attrs.as_path.len())
}

fn origin(a: &Candidate, b: &Candidate) -> Ordering {
    b.attrs.origin.cmp(&a.attrs.origin)
}

/// MED is compared only between routes from the same neighbouring AS (RFC 4271 §9.1.2.2 c).
fn med(a: &Candidate, b: &Candidate, local_as: u32) -> Ordering {
    if a.attrs.neighbour_as(local_as) != b.attrs.neighbour_as(local_as) {
        return Ordering::Equal;
    }
    b.attrs.med.cmp(&a.attrs.med)
}

fn ebgp_over_ibgp(a: &Candidate, b: &Candidate) -> Ordering {
    a.info.ebgp.cmp(&b.info.ebgp)
}

/// Lower IGP cost to the next hop; two routes with the same next hop tie without asking.
fn igp_cost(a: &Candidate, b: &Candidate, ctx: &mut impl DecisionContext) -> Ordering {
    if a.attrs.next_hop == b.attrs.next_hop {
        return Ordering::Equal;
    }
    let ca = ctx.igp_cost(a.attrs.next_hop).unwrap_or(u64::MAX);
    let cb = ctx.igp_cost(b.attrs.next_hop).unwrap_or(u64::MAX);
    cb.cmp(&ca)
}

fn router_id(a: &Candidate, b: &Candidate) -> Ordering {
    b.router_id().cmp(&a.router_id())
}

fn cluster_list_length(a: &Candidate, b: &Candidate) -> Ordering {
    b.attrs.cluster_list.len().cmp(&a.attrs.cluster_list.len())
}

fn peer_address(a: &Candidate, b: &Candidate) -> Ordering {
    b.info.peer_address.cmp(&a.info.peer_address)
}

/// Compares two eligible candidates; returns which is preferred and the step that decided
/// (`Equal` only if they tie on every step, which distinct peers cannot).
pub fn compare(
    a: &Candidate,
    b: &Candidate,
    ctx: &mut impl DecisionContext,
) -> (Ordering, LostBecause) {
    use LostBecause::*;
    let local_as = ctx.local_as();
    let decides =
        |step: LostBecause, ord: Ordering| (ord != Ordering::Equal).then_some((ord, step));
    decides(LocalOrigin, local_origin(a, b))
        .or_else(|| decides(LocalPref, local_pref(a, b)))
        .or_else(|| decides(AsPathLength, as_path_length(a, b)))
        .or_else(|| decides(Origin, origin(a, b)))
        .or_else(|| decides(Med, med(a, b, local_as)))
        .or_else(|| decides(EbgpOverIbgp, ebgp_over_ibgp(a, b)))
        // Asked only when everything before ties: the IGP cost may need a path search.
        .or_else(|| decides(IgpCost, igp_cost(a, b, ctx)))
        .or_else(|| decides(RouterId, router_id(a, b)))
        .or_else(|| decides(ClusterListLength, cluster_list_length(a, b)))
        .or_else(|| decides(PeerAddress, peer_address(a, b)))
        .unwrap_or((Ordering::Equal, PeerAddress))
}

/// Runs the decision process over a prefix's candidates, storing each one's verdict;
/// returns the index of the best route.
///
/// The best is found by comparing candidates in order (they are sorted by source, so the
/// result is deterministic); then every loser is compared with the best to record the step
/// that decided against it, and the best records the step at which it beat the runner-up.
pub fn run(routes: &mut [Route], ctx: &mut impl DecisionContext) -> Option<usize> {
    // Most destinations have one candidate (or a few): no allocation for those.
    let infos: SmallVec<[SourceInfo; 4]> = routes.iter().map(|r| ctx.source(r.source())).collect();
    let eligible: SmallVec<[bool; 4]> = routes
        .iter()
        .zip(&infos)
        .map(|(r, info)| info.local || ctx.resolvable(r.attrs.next_hop))
        .collect();
    let candidate = |i: usize| Candidate {
        attrs: &routes[i].attrs,
        info: infos[i],
    };
    let mut best: Option<usize> = None;
    for i in (0..routes.len()).filter(|&i| eligible[i]) {
        best = match best {
            None => Some(i),
            Some(b) => {
                let (ord, _) = compare(&candidate(i), &candidate(b), ctx);
                Some(if ord == Ordering::Greater { i } else { b })
            }
        };
    }
    let mut verdicts: SmallVec<[RouteStatus; 4]> =
        smallvec::smallvec![RouteStatus::NotEvaluated; routes.len()];
    let mut runner_up: Option<LostBecause> = None;
    for i in 0..routes.len() {
        if Some(i) == best {
            continue;
        }
        let lost = match best {
            Some(b) if eligible[i] => compare(&candidate(b), &candidate(i), ctx).1,
            _ => LostBecause::Unresolvable,
        };
        // The runner-up is the loser that went furthest; an unresolvable one only counts when
        // no eligible route lost.
        runner_up = Some(match (runner_up, lost) {
            (None, l) | (Some(LostBecause::Unresolvable), l) => l,
            (Some(prev), LostBecause::Unresolvable) => prev,
            (Some(prev), l) => prev.max(l),
        });
        verdicts[i] = RouteStatus::Lost(lost);
    }
    if let Some(b) = best {
        verdicts[b] = RouteStatus::Best(match runner_up {
            None => BestBecause::OnlyCandidate,
            Some(step) => BestBecause::Over(step),
        });
    }
    for (route, verdict) in routes.iter_mut().zip(verdicts) {
        route.status = verdict;
    }
    best
}

/// The decision after candidate `new` was added to routes that were all decided, when the
/// current best keeps winning: only `new` is compared (with the best), and the best's
/// runner-up step absorbs `new`'s. Returns `false`, changing nothing, when that shortcut
/// would not give exactly what [`run`] gives; the caller then runs the full process.
///
/// The shortcut needs the candidates to be totally ordered, so it is not taken when any
/// MED is set (MED compares only routes from the same neighbour AS, which is not
/// transitive), when `new` ties with the best (the full run breaks ties by position), or when
/// `new` wins.
pub fn admit(routes: &mut [Route], new: usize, ctx: &mut impl DecisionContext) -> bool {
    let Some(best) = routes.iter().position(|r| r.status.is_best()) else {
        return false;
    };
    if routes.iter().any(|r| r.attrs.med != 0)
        || routes
            .iter()
            .enumerate()
            .any(|(i, r)| i != new && r.status == RouteStatus::NotEvaluated)
    {
        return false;
    }
    let info = ctx.source(routes[new].source());
    let lost = if info.local || ctx.resolvable(routes[new].attrs.next_hop) {
        let b = Candidate {
            attrs: &routes[best].attrs,
            info: ctx.source(routes[best].source()),
        };
        let n = Candidate {
            attrs: &routes[new].attrs,
            info,
        };
        match compare(&b, &n, ctx) {
            (Ordering::Greater, step) => step,
            _ => return false,
        }
    } else {
        LostBecause::Unresolvable
    };
    let runner_up = match routes[best].status {
        RouteStatus::Best(BestBecause::Over(step)) => match (step, lost) {
            (LostBecause::Unresolvable, l) => l,
            (prev, LostBecause::Unresolvable) => prev,
            (prev, l) => prev.max(l),
        },
        _ => lost,
    };
    routes[best].status = RouteStatus::Best(BestBecause::Over(runner_up));
    routes[new].status = RouteStatus::Lost(lost);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::SessionId;
    use crate::bgp::rib::{Origin, PathAttributes};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// A context where peers are described by session number and IGP costs by next hop.
    struct Ctx {
        peers: BTreeMap<u32, SourceInfo>,
        costs: BTreeMap<IpAddr, u64>,
        asked: usize,
    }

    impl DecisionContext for Ctx {
        fn local_as(&self) -> u32 {
            64512
        }
        fn source(&self, source: RouteSource) -> SourceInfo {
            match source {
                RouteSource::Local => SourceInfo {
                    local: true,
                    ebgp: false,
                    peer_router_id: ip(1),
                    peer_address: ip(1),
                },
                RouteSource::Peer(s) => self.peers[&s.0],
            }
        }
        fn resolvable(&mut self, next_hop: IpAddr) -> bool {
            self.costs.contains_key(&next_hop)
        }
        fn igp_cost(&mut self, next_hop: IpAddr) -> Option<u64> {
            self.asked += 1;
            self.costs.get(&next_hop).copied()
        }
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    fn peer(last: u8, ebgp: bool) -> SourceInfo {
        SourceInfo {
            local: false,
            ebgp,
            peer_router_id: ip(last),
            peer_address: ip(last),
        }
    }

    fn base() -> PathAttributes {
        PathAttributes {
            origin: Origin::Igp,
            as_path: vec![65001],
            next_hop: ip(50),
            local_pref: 100,
            med: 0,
            originator_id: None,
            cluster_list: Vec::new(),
        }
    }

    fn ctx() -> Ctx {
        Ctx {
            peers: [(1, peer(11, true)), (2, peer(12, true))]
                .into_iter()
                .collect(),
            costs: [(ip(50), 10), (ip(51), 20), (ip(52), 5)]
                .into_iter()
                .collect(),
            asked: 0,
        }
    }

    /// Adding a candidate with `admit` gives exactly the verdicts of a full run, or declines.
    /// Candidates vary in every attribute the order looks at (MED stays 0: `admit` declines
    /// otherwise); sessions 1..=6 alternate eBGP/iBGP peers, some next hops unresolvable.
    #[test]
    fn admitting_a_candidate_matches_the_full_decision() {
        let mut c = ctx();
        for n in 1..=6u8 {
            c.peers.insert(u32::from(n), peer(10 + n, n % 2 == 0));
        }
        c.costs.insert(ip(53), 10);
        let variant = |k: u32| {
            let mut a = base();
            a.local_pref = [100, 200][(k % 2) as usize];
            a.as_path = vec![65001; (k / 2 % 2) as usize + 1];
            a.next_hop = ip([50, 51, 53, 99][(k / 4 % 4) as usize]);
            if k / 16 % 2 == 1 {
                a.originator_id = Some(ip(7));
                a.cluster_list = vec![ip(8)];
            }
            Arc::new(a)
        };
        let (mut admitted, mut declined) = (0, 0);
        for seed in 0..4_000u32 {
            let count = 1 + (seed % 3) as usize;
            let mut routes: Vec<Route> = (0..count)
                .map(|i| {
                    let k = seed.wrapping_mul(2_654_435_761).rotate_left(5 * i as u32) % 32;
                    Route::new(RouteSource::Peer(SessionId(i as u32 + 1)), variant(k))
                })
                .collect();
            run(&mut routes, &mut c);
            let k = seed.wrapping_mul(40_503) % 32;
            let new = Route::new(RouteSource::Peer(SessionId(count as u32 + 1)), variant(k));
            let at = (seed as usize / 3) % (count + 1);
            routes.insert(at, new);
            let mut full = routes.clone();
            run(&mut full, &mut c);
            if admit(&mut routes, at, &mut c) {
                admitted += 1;
                assert_eq!(routes, full, "seed {seed}");
            } else {
                declined += 1;
            }
        }
        // Both paths are exercised.
        assert!(admitted > 1_000 && declined > 500, "{admitted} {declined}");
    }

    #[test]
    fn admit_declines_when_a_med_is_set_or_the_newcomer_wins() {
        let mut c = ctx();
        let mut routes = vec![Route::new(
            RouteSource::Peer(SessionId(1)),
            Arc::new(base()),
        )];
        run(&mut routes, &mut c);
        let mut better = base();
        better.local_pref = 300;
        routes.push(Route::new(
            RouteSource::Peer(SessionId(2)),
            Arc::new(better),
        ));
        assert!(!admit(&mut routes, 1, &mut c));
        let mut with_med = base();
        with_med.med = 5;
        routes[1] = Route::new(RouteSource::Peer(SessionId(2)), Arc::new(with_med));
        assert!(!admit(&mut routes, 1, &mut c));
        assert_eq!(routes[1].status, RouteStatus::NotEvaluated);
    }

    /// Runs the decision over two routes, from session 1 and session 2; returns the index of
    /// the best and the verdicts.
    fn decide(c: &mut Ctx, a: PathAttributes, b: PathAttributes) -> (usize, [RouteStatus; 2]) {
        let mut routes = vec![
            Route::new(RouteSource::Peer(SessionId(1)), Arc::new(a)),
            Route::new(RouteSource::Peer(SessionId(2)), Arc::new(b)),
        ];
        let best = run(&mut routes, c).expect("a best route");
        (best, [routes[0].status, routes[1].status])
    }

    /// Asserts that `better` beats `worse` at `step`, whichever order they come in.
    fn decides(mut c: Ctx, better: PathAttributes, worse: PathAttributes, step: LostBecause) {
        let (best, v) = decide(&mut c, better.clone(), worse.clone());
        assert_eq!(best, 0, "{step}: first should win");
        assert_eq!(v[1], RouteStatus::Lost(step));
        assert_eq!(v[0], RouteStatus::Best(BestBecause::Over(step)));
        // The other direction: swap the attributes (and the peers, for peer-based steps).
        let mut swapped = c;
        let (p1, p2) = (swapped.peers[&1], swapped.peers[&2]);
        swapped.peers.insert(1, p2);
        swapped.peers.insert(2, p1);
        let (best, v) = decide(&mut swapped, worse, better);
        assert_eq!(best, 1, "{step}: second should win");
        assert_eq!(v[0], RouteStatus::Lost(step));
    }

    #[test]
    fn local_pref_decides_both_ways() {
        let mut b = base();
        b.local_pref = 200;
        b.as_path = vec![65001, 65002, 65003];
        decides(ctx(), b, base(), LostBecause::LocalPref);
    }

    #[test]
    fn as_path_length_decides_both_ways() {
        let mut w = base();
        w.as_path = vec![65001, 65002];
        let mut b = base();
        b.origin = Origin::Incomplete;
        decides(ctx(), b, w, LostBecause::AsPathLength);
    }

    #[test]
    fn origin_decides_both_ways() {
        let mut w = base();
        w.origin = Origin::Egp;
        let mut b = base();
        b.med = 50;
        decides(ctx(), b, w, LostBecause::Origin);
    }

    #[test]
    fn med_decides_both_ways_only_within_one_neighbour_as() {
        let mut w = base();
        w.med = 10;
        decides(ctx(), base(), w.clone(), LostBecause::Med);
        // From different neighbour ASes MED is skipped; the router ID decides instead.
        let mut other = w;
        other.as_path = vec![65009];
        let mut c = ctx();
        let (best, v) = decide(&mut c, base(), other);
        assert_eq!(best, 0);
        assert_eq!(v[1], RouteStatus::Lost(LostBecause::RouterId));
    }

    #[test]
    fn ebgp_over_ibgp_decides_both_ways() {
        let mut c = ctx();
        c.peers.insert(2, peer(2, false));
        let mut ibgp_route = base();
        ibgp_route.next_hop = ip(52);
        decides(c, base(), ibgp_route, LostBecause::EbgpOverIbgp);
    }

    #[test]
    fn igp_cost_decides_both_ways_and_is_only_asked_for_different_next_hops() {
        let mut far = base();
        far.next_hop = ip(51);
        decides(ctx(), base(), far, LostBecause::IgpCost);
        let mut c = ctx();
        decide(&mut c, base(), base());
        assert_eq!(c.asked, 0);
    }

    #[test]
    fn router_id_uses_the_originator_id_and_decides_both_ways() {
        // Peer 12 sends a route whose originator is 10.0.0.3: it beats peer 11's own route.
        let mut reflected = base();
        reflected.originator_id = Some(ip(3));
        let mut c = ctx();
        let (best, v) = decide(&mut c, base(), reflected.clone());
        assert_eq!(best, 1);
        assert_eq!(v[0], RouteStatus::Lost(LostBecause::RouterId));
        decides(ctx(), reflected, base(), LostBecause::RouterId);
    }

    #[test]
    fn cluster_list_length_decides_both_ways() {
        let mut short = base();
        short.originator_id = Some(ip(3));
        short.cluster_list = vec![ip(100)];
        let mut long = short.clone();
        long.cluster_list = vec![ip(101), ip(100)];
        decides(ctx(), short, long, LostBecause::ClusterListLength);
    }

    #[test]
    fn peer_address_decides_both_ways() {
        // Same originator, same cluster list length: only the peer addresses differ.
        let mut a = base();
        a.originator_id = Some(ip(3));
        a.cluster_list = vec![ip(100)];
        let mut b = a.clone();
        b.cluster_list = vec![ip(101)];
        decides(ctx(), a, b, LostBecause::PeerAddress);
    }

    #[test]
    fn a_local_route_beats_learned_ones_and_unresolvable_routes_are_not_eligible() {
        let mut c = ctx();
        let mut routes = vec![
            Route::new(RouteSource::Local, Arc::new(PathAttributes::local(ip(1)))),
            Route::new(RouteSource::Peer(SessionId(1)), Arc::new(base())),
        ];
        assert_eq!(run(&mut routes, &mut c), Some(0));
        assert_eq!(
            routes[1].status,
            RouteStatus::Lost(LostBecause::LocalOrigin)
        );

        let mut nowhere = base();
        nowhere.next_hop = ip(99);
        let mut better_but_unresolvable = nowhere.clone();
        better_but_unresolvable.local_pref = 500;
        let (best, v) = decide(&mut c, better_but_unresolvable, base());
        assert_eq!(best, 1);
        assert_eq!(v[0], RouteStatus::Lost(LostBecause::Unresolvable));
        assert_eq!(
            v[1],
            RouteStatus::Best(BestBecause::Over(LostBecause::Unresolvable))
        );

        let mut routes = vec![Route::new(
            RouteSource::Peer(SessionId(1)),
            Arc::new(nowhere),
        )];
        assert_eq!(run(&mut routes, &mut c), None);
        assert_eq!(
            routes[0].status,
            RouteStatus::Lost(LostBecause::Unresolvable)
        );
    }
}
