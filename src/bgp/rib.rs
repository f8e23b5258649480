//! Routes and the RIBs of a speaker (RFC 4271 §3.2).
//!
//! Layout: a speaker's RIB is one [`Destination`] per prefix, holding the Adj-RIB-In entries
//! for that prefix (one per peer and path — a peer sends several paths only over ADD-PATH,
//! RFC 7911 — plus the locally originated route) side by side so
//! the decision process sees a prefix's candidates together; the Loc-RIB is the candidate
//! marked best. Each candidate keeps the verdict of the last decision (why it won or lost).
//!
//! Path attributes are immutable and shared (`Arc`): a reflector that sends one route to a
//! thousand clients builds its attributes once, and every client's Adj-RIB-In points at them.
//! PrefixTable are interned ([`PrefixId`]) so RIB keys are small integers.
//!
//! The Adj-RIB-Out is not stored per peer: what a peer holds is a pure function of the route
//! last advertised for the prefix ([`Advertised`]) and the session (the export policy), so the
//! engine recomputes it when something changes. This keeps a reflector with thousands of
//! clients from holding a copy of its table per client. Over ADD-PATH a speaker offers every
//! candidate, each under a path id it gives it ([`OfferedPath`]); the list is kept only where
//! it is more than the best route under path id 0.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use super::SessionId;
use super::decision::RouteStatus;

/// A prefix, interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PrefixId(pub u32);

impl PrefixId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The interning table of prefixes; ids are given in first-seen order.
#[derive(Clone, Debug, Default)]
pub struct PrefixTable {
    ids: HashMap<IpNet, PrefixId>,
    nets: Vec<IpNet>,
}

impl PrefixTable {
    pub fn intern(&mut self, net: IpNet) -> PrefixId {
        let net = net.trunc();
        if let Some(&id) = self.ids.get(&net) {
            return id;
        }
        let id = PrefixId(self.nets.len() as u32);
        self.nets.push(net);
        self.ids.insert(net, id);
        id
    }

    pub fn get(&self, net: IpNet) -> Option<PrefixId> {
        self.ids.get(&net.trunc()).copied()
    }

    pub fn net(&self, id: PrefixId) -> IpNet {
        self.nets[id.index()]
    }
}

/// ORIGIN (RFC 4271 §5.1.1); lower is preferred.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    Igp,
    Egp,
    Incomplete,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Igp => "IGP",
            Origin::Egp => "EGP",
            Origin::Incomplete => "incomplete",
        }
    }
}

/// The default LOCAL_PREF (RFC 4271 §5.1.5; BIRD's default too).
pub const DEFAULT_LOCAL_PREF: u32 = 100;

/// The path attributes of a route.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathAttributes {
    pub origin: Origin,
    /// AS_PATH as one AS_SEQUENCE, nearest AS first.
    pub as_path: Vec<u32>,
    pub next_hop: IpAddr,
    pub local_pref: u32,
    /// MULTI_EXIT_DISC; absent is treated as 0 (BIRD's default).
    pub med: u32,
    /// RFC 4456 ORIGINATOR_ID: set by the first reflector.
    pub originator_id: Option<IpAddr>,
    /// RFC 4456 CLUSTER_LIST, the latest reflector's cluster first.
    pub cluster_list: Vec<IpAddr>,
}

impl PathAttributes {
    /// The attributes of a route this speaker originates.
    pub fn local(next_hop: IpAddr) -> PathAttributes {
        PathAttributes {
            origin: Origin::Igp,
            as_path: Vec::new(),
            next_hop,
            local_pref: DEFAULT_LOCAL_PREF,
            med: 0,
            originator_id: None,
            cluster_list: Vec::new(),
        }
    }

    /// The AS the route was learned from (the first of the AS_PATH), or `local_as` for a
    /// route from inside the AS; MED is compared only between routes with the same one.
    pub fn neighbour_as(&self, local_as: u32) -> u32 {
        self.as_path.first().copied().unwrap_or(local_as)
    }
}

impl fmt::Display for PathAttributes {
    /// `birdc`-like: `via 10.0.0.2 [AS 65001 65000] IGP lp 100 med 0 ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "via {} [", self.next_hop)?;
        for (i, asn) in self.as_path.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{asn}")?;
        }
        write!(
            f,
            "] {} localpref {} med {}",
            self.origin.as_str(),
            self.local_pref,
            self.med
        )?;
        if let Some(o) = self.originator_id {
            write!(f, " originator {o}")?;
        }
        if !self.cluster_list.is_empty() {
            f.write_str(" clusters")?;
            for c in &self.cluster_list {
                write!(f, " {c}")?;
            }
        }
        Ok(())
    }
}

/// Shared, immutable attributes.
pub type Attrs = Arc<PathAttributes>;

/// Where a candidate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteSource {
    /// Originated by this speaker (a Calico block or a borrowed address).
    Local,
    /// Received from the peer on this session.
    Peer(SessionId),
}

impl RouteSource {
    /// Four bytes instead of the enum's eight: a large cluster holds tens of millions of
    /// candidates. Session ids stay below `u32::MAX`, which stands for `Local`.
    fn pack(self) -> u32 {
        match self {
            RouteSource::Local => u32::MAX,
            RouteSource::Peer(x) => x.0,
        }
    }

    fn unpack(raw: u32) -> RouteSource {
        match raw {
            u32::MAX => RouteSource::Local,
            x => RouteSource::Peer(SessionId(x)),
        }
    }
}

/// An ADD-PATH path identifier (RFC 7911 §3): which of the paths a peer sends for a prefix a
/// candidate is. 0 on a session without ADD-PATH and for a speaker's own route. The sender
/// gives the ids, per prefix ([`Advertised::paths`]), so sixteen bits are plenty — and they
/// fit in a [`Route`]'s padding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathId(pub u16);

/// What identifies a candidate in a destination: where it came from and, over ADD-PATH,
/// which of that peer's paths it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteKey {
    pub source: RouteSource,
    pub path: PathId,
}

impl From<RouteSource> for RouteKey {
    /// The one path of a source without ADD-PATH.
    fn from(source: RouteSource) -> RouteKey {
        RouteKey {
            source,
            path: PathId(0),
        }
    }
}

/// One candidate route for a prefix: an Adj-RIB-In entry, or the local origination.
/// Sixteen bytes: the attributes are shared, the source packed.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    pub attrs: Attrs,
    source: u32,
    path: PathId,
    /// The verdict of the last decision process run for this prefix.
    pub status: RouteStatus,
}

impl Route {
    /// A candidate not yet decided on.
    pub fn new(key: impl Into<RouteKey>, attrs: Attrs) -> Route {
        let key = key.into();
        Route {
            attrs,
            source: key.source.pack(),
            path: key.path,
            status: RouteStatus::NotEvaluated,
        }
    }

    pub fn source(&self) -> RouteSource {
        RouteSource::unpack(self.source)
    }

    pub fn key(&self) -> RouteKey {
        RouteKey {
            source: self.source(),
            path: self.path,
        }
    }
}

/// A destination's candidates, inline up to three (a client of three reflectors, the
/// largest common case), so most destinations cost no allocation of their own.
pub type Candidates = SmallVec<[Route; 3]>;

/// What the speaker last advertised for a prefix (the basis of every peer's Adj-RIB-Out):
/// its best route to sessions without ADD-PATH, every candidate ([`Advertised::offered`]) to
/// sessions with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Advertised {
    /// The best route's candidate key.
    pub key: RouteKey,
    pub attrs: Attrs,
    /// Whether the speaker's export filter accepted the prefix at the time.
    pub exportable: bool,
    /// ADD-PATH: every candidate with the path id it goes out under, in candidate order;
    /// empty when that is just the best route under path id 0 (most destinations).
    pub paths: Box<[OfferedPath]>,
}

/// A candidate offered to ADD-PATH sessions under path id `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct OfferedPath {
    pub key: RouteKey,
    pub id: PathId,
    pub attrs: Attrs,
}

impl OfferedPath {
    fn same(&self, other: &OfferedPath) -> bool {
        self.key == other.key
            && self.id == other.id
            && (Arc::ptr_eq(&self.attrs, &other.attrs) || self.attrs == other.attrs)
    }
}

impl Advertised {
    /// Same route, same attributes (by identity first), same filter verdict, same paths.
    pub fn same(a: &Option<Advertised>, b: &Option<Advertised>) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(x), Some(y)) => x.same_as(y),
            _ => false,
        }
    }

    /// [`Advertised::same`] for two advertisements.
    pub fn same_as(&self, other: &Advertised) -> bool {
        let (x, y) = (self, other);
        x.key == y.key
            && x.exportable == y.exportable
            && (Arc::ptr_eq(&x.attrs, &y.attrs) || x.attrs == y.attrs)
            && x.paths.len() == y.paths.len()
            && x.paths.iter().zip(&y.paths[..]).all(|(p, q)| p.same(q))
    }

    /// What ADD-PATH sessions are offered: `paths`, or the best route under path id 0.
    pub fn offered(&self) -> impl Iterator<Item = (RouteKey, PathId, &Attrs)> {
        let best = self
            .paths
            .is_empty()
            .then_some((self.key, PathId(0), &self.attrs));
        best.into_iter()
            .chain(self.paths.iter().map(|o| (o.key, o.id, &o.attrs)))
    }
}

/// The paths a speaker offers over ADD-PATH for a destination whose candidates are
/// `routes` and best is `best`: every candidate, keeping the id it had in `old`, a new one
/// taking the smallest id no kept path uses (as a session without ADD-PATH sees a new best
/// replace the old one, a new path may take over a gone path's id). Empty when that is just
/// the best under id 0. A path that finds no free id (65,536 paths to one prefix) is not
/// offered.
pub fn offered_paths(
    routes: &[Route],
    best: RouteKey,
    old: Option<&Advertised>,
) -> Box<[OfferedPath]> {
    let old_id = |key: RouteKey| {
        old.and_then(|o| o.offered().find(|(k, _, _)| *k == key).map(|(_, id, _)| id))
    };
    let mut ids: SmallVec<[Option<PathId>; 4]> = routes.iter().map(|r| old_id(r.key())).collect();
    let mut taken: SmallVec<[PathId; 4]> = ids.iter().flatten().copied().collect();
    taken.sort_unstable();
    let mut next = 0u32;
    for id in ids.iter_mut().filter(|id| id.is_none()) {
        while next <= u32::from(u16::MAX) && taken.binary_search(&PathId(next as u16)).is_ok() {
            next += 1;
        }
        if next > u32::from(u16::MAX) {
            break;
        }
        *id = Some(PathId(next as u16));
        next += 1;
    }
    if let ([only], [Some(PathId(0))]) = (routes, &ids[..])
        && only.key() == best
    {
        return Box::default();
    }
    routes
        .iter()
        .zip(ids)
        .filter_map(|(r, id)| {
            Some(OfferedPath {
                key: r.key(),
                id: id?,
                attrs: r.attrs.clone(),
            })
        })
        .collect()
}

/// What [`Destination::upsert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upsert {
    Unchanged,
    Replaced,
    /// A new candidate, at this position.
    Inserted(usize),
}

/// All a speaker knows about one prefix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Destination {
    /// Candidates sorted by key (local first, then by session and path).
    pub routes: Candidates,
    /// The route last advertised to peers (`None`: nothing was, or nobody could receive
    /// it). Boxed: most destinations of most speakers never hold one.
    pub advertised: Option<Box<Advertised>>,
}

impl Destination {
    /// The Loc-RIB route, if any.
    pub fn best(&self) -> Option<&Route> {
        self.routes.iter().find(|r| r.status.is_best())
    }

    /// Inserts or replaces the candidate `key`.
    pub fn upsert(&mut self, key: RouteKey, attrs: Attrs) -> Upsert {
        match self.routes.binary_search_by(|r| r.key().cmp(&key)) {
            Ok(i) => {
                if Arc::ptr_eq(&self.routes[i].attrs, &attrs) || self.routes[i].attrs == attrs {
                    return Upsert::Unchanged;
                }
                self.routes[i].attrs = attrs;
                Upsert::Replaced
            }
            Err(i) => {
                self.routes.insert(i, Route::new(key, attrs));
                Upsert::Inserted(i)
            }
        }
    }

    /// Removes the candidate `key`; returns whether there was one.
    pub fn remove(&mut self, key: RouteKey) -> bool {
        match self.routes.binary_search_by(|r| r.key().cmp(&key)) {
            Ok(i) => {
                self.routes.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Nothing left to remember: no candidate and nothing advertised.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty() && self.advertised.is_none()
    }
}

/// Destinations by prefix id, stored densely: every Calico node learns nearly every
/// prefix (each node holds every block), so an array indexed by the interned id beats a
/// tree in time and memory. The array is cut into fixed chunks so that growing it, as
/// prefixes appear one by one on thousands of speakers, never copies or over-allocates. An
/// empty [`Destination`] stands for "absent"; iteration is in prefix-id order.
#[derive(Clone, Debug, Default)]
pub struct Destinations {
    chunks: Vec<Box<[Destination]>>,
}

const CHUNK: usize = 256;

impl Destinations {
    fn slot(&self, p: PrefixId) -> Option<&Destination> {
        self.chunks
            .get(p.index() / CHUNK)
            .map(|c| &c[p.index() % CHUNK])
    }

    pub fn get(&self, p: &PrefixId) -> Option<&Destination> {
        self.slot(*p).filter(|d| !d.is_empty())
    }

    pub fn get_mut(&mut self, p: &PrefixId) -> Option<&mut Destination> {
        self.chunks
            .get_mut(p.index() / CHUNK)
            .map(|c| &mut c[p.index() % CHUNK])
            .filter(|d| !d.is_empty())
    }

    /// The destination of `p`, created empty if absent.
    pub fn entry(&mut self, p: PrefixId) -> &mut Destination {
        let chunk = p.index() / CHUNK;
        while self.chunks.len() <= chunk {
            self.chunks
                .push((0..CHUNK).map(|_| Destination::default()).collect());
        }
        &mut self.chunks[chunk][p.index() % CHUNK]
    }

    pub fn remove(&mut self, p: &PrefixId) {
        if let Some(d) = self.get_mut(p) {
            *d = Destination::default();
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (PrefixId, &Destination)> {
        self.chunks
            .iter()
            .flat_map(|c| c.iter())
            .enumerate()
            .filter(|(_, d)| !d.is_empty())
            .map(|(i, d)| (PrefixId(i as u32), d))
    }

    pub fn keys(&self) -> impl Iterator<Item = PrefixId> + '_ {
        self.iter().map(|(p, _)| p)
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
    }
}

/// A speaker's RIB: destinations by prefix.
#[derive(Clone, Debug, Default)]
pub struct Rib {
    pub destinations: Destinations,
    /// How many destinations have a best route (the Loc-RIB's size).
    pub loc_rib_len: usize,
}

impl Rib {
    pub fn clear(&mut self) {
        self.destinations.clear();
        self.loc_rib_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_interned_once_in_first_seen_order() {
        let mut p = PrefixTable::default();
        let a = p.intern("10.0.0.0/26".parse().unwrap());
        let b = p.intern("10.0.0.64/26".parse().unwrap());
        // Host bits are truncated, as BGP carries prefixes.
        assert_eq!(p.intern("10.0.0.5/26".parse().unwrap()), a);
        assert_eq!((a, b), (PrefixId(0), PrefixId(1)));
        assert_eq!(p.net(b).to_string(), "10.0.0.64/26");
    }

    #[test]
    fn candidates_stay_sorted_and_upsert_detects_no_change() {
        let mut d = Destination::default();
        let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
        assert_eq!(
            d.upsert(RouteSource::Peer(SessionId(3)).into(), attrs.clone()),
            Upsert::Inserted(0)
        );
        assert_eq!(
            d.upsert(RouteSource::Local.into(), attrs.clone()),
            Upsert::Inserted(0)
        );
        assert_eq!(
            d.upsert(RouteSource::Peer(SessionId(1)).into(), attrs.clone()),
            Upsert::Inserted(1)
        );
        let order: Vec<_> = d.routes.iter().map(|r| r.source()).collect();
        assert_eq!(
            order,
            [
                RouteSource::Local,
                RouteSource::Peer(SessionId(1)),
                RouteSource::Peer(SessionId(3))
            ]
        );
        let same = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
        assert_eq!(d.upsert(RouteSource::Local.into(), same), Upsert::Unchanged);
        assert!(d.remove(RouteSource::Peer(SessionId(1)).into()));
        assert!(!d.remove(RouteSource::Peer(SessionId(1)).into()));
    }

    #[test]
    fn a_candidate_is_sixteen_bytes_and_three_fit_inline() {
        assert_eq!(std::mem::size_of::<Route>(), 16);
        assert!(std::mem::size_of::<Destination>() <= 64);
        assert!(!Candidates::new().spilled());
        for source in [RouteSource::Local, RouteSource::Peer(SessionId(7))] {
            let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
            assert_eq!(Route::new(source, attrs).source(), source);
        }
    }

    #[test]
    fn offered_paths_keep_their_ids_and_a_lone_best_under_id_0_costs_nothing() {
        let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
        let peer = |x: u32| RouteKey::from(RouteSource::Peer(SessionId(x)));
        let routes = |keys: &[RouteKey]| -> Vec<Route> {
            keys.iter().map(|k| Route::new(*k, attrs.clone())).collect()
        };
        let adv = |best: RouteKey, paths: Box<[OfferedPath]>| Advertised {
            key: best,
            attrs: attrs.clone(),
            exportable: true,
            paths,
        };
        let ids = |a: &Advertised| -> Vec<(RouteKey, u16)> {
            a.offered().map(|(k, id, _)| (k, id.0)).collect()
        };
        // One candidate, the best: nothing stored, offered under id 0.
        let one = adv(peer(1), offered_paths(&routes(&[peer(1)]), peer(1), None));
        assert!(one.paths.is_empty());
        assert_eq!(ids(&one), [(peer(1), 0)]);
        // A second path takes id 1; the first keeps 0.
        let two = adv(
            peer(1),
            offered_paths(&routes(&[peer(1), peer(2)]), peer(1), Some(&one)),
        );
        assert_eq!(ids(&two), [(peer(1), 0), (peer(2), 1)]);
        // The first goes: the second keeps id 1 (stored, as it is not id 0)...
        let left = adv(
            peer(2),
            offered_paths(&routes(&[peer(2)]), peer(2), Some(&two)),
        );
        assert_eq!(ids(&left), [(peer(2), 1)]);
        assert_eq!(left.paths.len(), 1);
        // ...and a newcomer takes the smallest id no kept path uses.
        let back = adv(
            peer(2),
            offered_paths(&routes(&[peer(2), peer(3)]), peer(2), Some(&left)),
        );
        assert_eq!(ids(&back), [(peer(2), 1), (peer(3), 0)]);
        assert!(!Advertised::same(&Some(left), &Some(back)));
    }

    #[test]
    fn attributes_render_like_birdc() {
        let mut a = PathAttributes::local(IpAddr::from([10, 0, 0, 1]));
        a.as_path = vec![65001, 65000];
        a.originator_id = Some(IpAddr::from([10, 0, 0, 9]));
        assert_eq!(
            a.to_string(),
            "via 10.0.0.1 [65001 65000] IGP localpref 100 med 0 originator 10.0.0.9"
        );
    }
}
