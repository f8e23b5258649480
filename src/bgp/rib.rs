//! Routes and the RIBs of a speaker (RFC 4271 §3.2).
//!
//! Layout: what a speaker holds for a prefix is one [`State`]: the Adj-RIB-In entries for
//! that prefix (one per peer and path — a peer sends several paths only over ADD-PATH,
//! RFC 7911 — plus the locally originated route) side by side so the decision process sees a
//! prefix's candidates together; the Loc-RIB is the candidate marked best. Each candidate
//! keeps the verdict of the last decision (why it won or lost). States are interned in
//! [`States`] and shared by every speaker holding the same candidates (sources are named
//! relative to the speaker, [`Tag`]); a [`StateTable`] gives each speaker's state id per
//! prefix, and a speaker's [`Rib`] keeps what it advertised. The
//! engine (`engine/shared.rs`) names sources, steps states and materialises a
//! [`Destination`] (sources as the speaker's sessions) for readers.
//!
//! Path attributes are immutable and shared (`Arc`): a reflector that sends one route to a
//! thousand clients builds its attributes once, and every client's Adj-RIB-In points at them.
//! Prefixes are interned ([`PrefixId`]) so RIB keys are small integers.
//!
//! This module is storage, not behaviour: it neither decides (`decision.rs`) nor knows
//! sessions beyond their ids.
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
use crate::model::hash::{FastMap, hash_of};

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

/// Whether two shared attribute sets are the same: by identity first (most are one `Arc`),
/// by value otherwise.
pub fn same_attrs(x: &Attrs, y: &Attrs) -> bool {
    Arc::ptr_eq(x, y) || x == y
}

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
        self.key == other.key && self.id == other.id && same_attrs(&self.attrs, &other.attrs)
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
            && same_attrs(&x.attrs, &y.attrs)
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

/// A speaker's candidates for one prefix as the decision process and the readers see them,
/// sources named by the speaker's own sessions. Materialised from the shared [`State`] when
/// needed (`engine/shared.rs`), never stored.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Destination {
    /// Candidates sorted by key (local first, then by session and path).
    pub routes: Candidates,
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
                if same_attrs(&self.routes[i].attrs, &attrs) {
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
}

/// Where a candidate of a shared [`State`] came from, relative to the speaker holding it:
/// [`LOCAL_TAG`] for its own route, otherwise what the speaker's source naming (the engine's
/// `Tags`) gives the session — the peer speaker where that is unambiguous, so that every
/// speaker holding the same routes from the same peers holds the same state. Tags sort as
/// the sessions they stand for do, so a state's candidates are in [`Destination`] order.
pub type Tag = u32;

/// The tag of the speaker's own route; it sorts first, as [`RouteSource::Local`] does.
pub const LOCAL_TAG: Tag = 0;

/// One candidate of a shared state: sixteen bytes, like a [`Route`].
#[derive(Clone, Debug)]
pub struct Held {
    pub attrs: Attrs,
    pub tag: Tag,
    pub path: PathId,
    pub status: RouteStatus,
}

// Identity, not value, for the attributes: states are interned by what they point at, and
// two speakers share a state only when they hold the very same attributes (a reflector's
// export to all its clients is one `Arc`).
impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.tag == other.tag
            && self.path == other.path
            && self.status == other.status
            && Arc::ptr_eq(&self.attrs, &other.attrs)
    }
}
impl Eq for Held {}
impl std::hash::Hash for Held {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (
            self.tag,
            self.path,
            self.status,
            Arc::as_ptr(&self.attrs) as usize,
        )
            .hash(h);
    }
}

/// A prefix's candidates with their verdicts, in candidate order: what a speaker holds for
/// the prefix, shared (interned in [`States`]) by every speaker that holds the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    pub held: SmallVec<[Held; 3]>,
}

impl State {
    /// The Loc-RIB route, if any.
    pub fn best(&self) -> Option<&Held> {
        self.held.iter().find(|h| h.status.is_best())
    }
}

/// A state's index in [`States`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct StateId(pub u32);

/// The empty state: no candidate.
pub const EMPTY: StateId = StateId(0);

/// One step of a speaker's state for a prefix: candidate `tag`/`path` set to the attributes
/// at address `attrs` (or removed, 0) in state `from`, by a speaker of decision class
/// `class` (speakers of one class decide alike: the engine's `Tags::class`). The memo entry
/// holds the attributes, so the address cannot be reused while the entry names it.
#[derive(Clone, Copy, Debug, Eq)]
pub struct Step {
    pub from: StateId,
    pub class: u32,
    pub tag: Tag,
    pub path: PathId,
    pub attrs: usize,
}

/// Equal when every field is: the fields folded into three words compared together, one
/// branch where a derived comparison takes one per field (the memo compares a key per
/// route received, tens of millions of times in rr-5000).
impl PartialEq for Step {
    #[inline]
    fn eq(&self, other: &Step) -> bool {
        let (a, b) = (self.words(), other.words());
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0
    }
}

/// Hashes the words [`PartialEq`] compares, so equal steps hash alike.
impl std::hash::Hash for Step {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.words().hash(state);
    }
}

impl Step {
    /// The fields as words, one to one: equal words, equal fields.
    #[inline]
    fn words(&self) -> [u64; 3] {
        [
            u64::from(self.from.0) | u64::from(self.class) << 32,
            u64::from(self.tag) | u64::from(self.path.0) << 32,
            self.attrs as u64,
        ]
    }

    /// The address `attrs` are known by in a step.
    pub fn address(attrs: Option<&Attrs>) -> usize {
        attrs.map_or(0, |a| Arc::as_ptr(a) as usize)
    }
}

/// What setting or removing a candidate did to the Loc-RIB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing changed (the same attributes again, or a candidate that was not there).
    Unchanged,
    /// A new candidate lost to the best, which stays (`decision::admit`).
    Admitted,
    /// The decision process ran: whether the best route changed, its next hop as a FIB
    /// sees it (a learned best route's next hop), and whether there is a best route before
    /// and after (the Loc-RIB's size).
    Decided {
        changed: bool,
        fib_changed: bool,
        best: (bool, bool),
    },
}

/// Every state some speaker holds, interned, with the steps already taken between them.
///
/// Invariants: id 0 is the empty state; a state's id never changes but in
/// [`States::collect`], which renumbers the states the speakers still hold, in the order
/// they are met, and forgets the steps. The memo is a cache: a step it does not know is
/// computed (and may be remembered), so it changes speed, never results.
#[derive(Debug)]
pub struct States {
    list: Vec<State>,
    index: FastMap<State, StateId>,
    memo: FastMap<Step, (StateId, Outcome, Option<Attrs>)>,
    /// The steps recalled last, by a few bits of their hash: the clients of a reflector take
    /// the same few steps one after another, and this small table stays in cache where the
    /// memo does not. A copy of memo entries, emptied with it.
    recent: Box<[Option<(Step, StateId, Outcome)>; RECENT]>,
    /// States held after the last collection.
    live: usize,
}

/// Entries of [`States`]' table of recent steps.
const RECENT: usize = 64;

/// States created beyond twice the live ones (and this slack) before a collection.
const COLLECT_SLACK: usize = 1 << 16;

impl Default for States {
    fn default() -> Self {
        let mut index = FastMap::default();
        index.insert(State::default(), EMPTY);
        States {
            list: vec![State::default()],
            index,
            memo: FastMap::default(),
            recent: Box::new([None; RECENT]),
            live: 1,
        }
    }
}

impl States {
    pub fn get(&self, id: StateId) -> &State {
        &self.list[id.0 as usize]
    }

    pub fn intern(&mut self, state: State) -> StateId {
        if let Some(&id) = self.index.get(&state) {
            return id;
        }
        let id = StateId(self.list.len() as u32);
        self.list.push(state.clone());
        self.index.insert(state, id);
        id
    }

    pub fn recall(&mut self, step: &Step) -> Option<(StateId, Outcome)> {
        let slot = (hash_of(step) as usize) % RECENT;
        if let Some((s, to, outcome)) = self.recent[slot]
            && s == *step
        {
            return Some((to, outcome));
        }
        let (to, outcome) = self.memo.get(step).map(|&(to, outcome, _)| (to, outcome))?;
        self.recent[slot] = Some((*step, to, outcome));
        Some((to, outcome))
    }

    /// Remembers `step`, taken with `attrs`, and where it led.
    pub fn remember(&mut self, step: Step, attrs: Option<Attrs>, to: (StateId, Outcome)) {
        debug_assert_eq!(step.attrs, Step::address(attrs.as_ref()));
        self.memo.insert(step, (to.0, to.1, attrs));
    }

    /// How many states are interned, the empty one included (never 0).
    pub fn count(&self) -> usize {
        self.list.len()
    }

    /// Whether enough states may have been dropped to be worth a [`States::collect`].
    pub fn wants_collection(&self) -> bool {
        self.list.len() > 2 * self.live + COLLECT_SLACK
    }

    /// Keeps only the states `held` names, renumbered in the order met, and rewrites them.
    pub fn collect<'a>(&mut self, held: impl Iterator<Item = &'a mut StateId>) {
        let mut renumbered = vec![u32::MAX; self.list.len()];
        renumbered[0] = 0;
        let mut kept = vec![State::default()];
        for id in held {
            let new = &mut renumbered[id.0 as usize];
            if *new == u32::MAX {
                *new = kept.len() as u32;
                kept.push(std::mem::take(&mut self.list[id.0 as usize]));
            }
            *id = StateId(*new);
        }
        self.index = kept
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), StateId(i as u32)))
            .collect();
        self.list = kept;
        self.memo.clear();
        self.recent.fill(None);
        self.live = self.list.len();
    }
}

/// Fixed-size chunks of a per-prefix array, so that growing it, as prefixes appear one by
/// one on thousands of speakers, never copies or over-allocates.
const CHUNK: usize = 256;

/// What a speaker advertised for [`CHUNK`] consecutive prefixes.
type AdvertisedChunk = Box<[AdvertisedSlot]>;

/// One prefix's advertisement with its stamp: the [`Rib::version`] it was stored at, kept
/// beside the box so that whether it changed since is read without following the box.
#[derive(Clone, Debug, Default)]
struct AdvertisedSlot {
    stamp: u64,
    adv: Option<Box<Advertised>>,
}

/// How many speakers share a line of the [`StateTable`]: sixteen four-byte ids, one
/// 64-byte cache line. Speaker `s` is lane `s % LANES` of block `s / LANES`.
pub const LANES: usize = 16;

/// Every speaker's [`State`] per prefix: an id, four bytes (every Calico node learns nearly
/// every prefix, so dense arrays indexed by the interned prefix id beat trees), laid out in
/// tiles: speakers sixteen at a time, one 64-byte line per prefix holding their sixteen ids.
/// A reflector's change reaches its clients in session order, which is speaker order, so
/// consecutive clients applying the same prefix share one line rather than missing the cache
/// once each; one speaker's prefixes are a line apart, and the next speaker's are on the
/// same lines. Tiles exist only where one of their speakers holds something, and live in
/// huge-page slabs ([`tiles`]).
#[derive(Debug, Default)]
pub struct StateTable {
    /// By block of speakers, by chunk of prefixes: which tile, if any, with its address.
    /// Every tile here was handed out by `tiles` (only [`StateTable::set`] adds one): what
    /// reading one through [`Tiles::get`] and [`Tiles::get_mut`] requires.
    blocks: Vec<Vec<Option<Placed>>>,
    tiles: Tiles,
}

impl StateTable {
    fn lane(s: super::SpeakerId) -> (usize, usize) {
        (s.index() / LANES, s.index() % LANES)
    }

    /// The tile holding prefix chunk `chunk` of speaker block `block`, if there is one.
    fn tile(&self, block: usize, chunk: usize) -> Option<&Tile> {
        let t = (*self.blocks.get(block)?.get(chunk)?)?;
        // SAFETY: a tile of `blocks`, handed out by `self.tiles`.
        Some(unsafe { self.tiles.get(t) })
    }

    pub fn get(&self, s: super::SpeakerId, p: PrefixId) -> StateId {
        self.slot(s, p).copied().unwrap_or(EMPTY)
    }

    /// Where `s`'s state id for `p` is kept, if a tile holds it (for a prefetch).
    pub fn slot(&self, s: super::SpeakerId, p: PrefixId) -> Option<&StateId> {
        let (block, lane) = Self::lane(s);
        let tile = self.tile(block, p.index() / CHUNK)?;
        Some(&tile[p.index() % CHUNK][lane])
    }

    /// [`StateTable::slot`] to write: where `s`'s state id for `p` is kept, if a tile
    /// holds it (else [`StateTable::set`] makes one). Reading and then writing a slot
    /// through it looks the tile up once. Inlined where routes are received, once per
    /// route (a call and its frame were a third of its instructions).
    #[inline(always)]
    pub fn slot_mut(&mut self, s: super::SpeakerId, p: PrefixId) -> Option<&mut StateId> {
        let (block, lane) = Self::lane(s);
        let t = (*self.blocks.get(block)?.get(p.index() / CHUNK)?)?;
        // SAFETY: a tile of `blocks`, handed out by `self.tiles`.
        Some(&mut unsafe { self.tiles.get_mut(t) }[p.index() % CHUNK][lane])
    }

    pub fn set(&mut self, s: super::SpeakerId, p: PrefixId, id: StateId) {
        let (block, lane) = Self::lane(s);
        let chunk = p.index() / CHUNK;
        let t = match self.blocks.get(block).and_then(|b| b.get(chunk)) {
            Some(Some(t)) => *t,
            _ if id == EMPTY => return,
            _ => {
                if block >= self.blocks.len() {
                    self.blocks.resize_with(block + 1, Vec::new);
                }
                let b = &mut self.blocks[block];
                if chunk >= b.len() {
                    b.resize_with(chunk + 1, || None);
                }
                *b[chunk].insert(self.tiles.add())
            }
        };
        // SAFETY: a tile of `blocks` or one `self.tiles` just handed out.
        let tile = unsafe { self.tiles.get_mut(t) };
        tile[p.index() % CHUNK][lane] = id;
    }

    /// The prefixes `s` holds a candidate for, with their states, in id order.
    pub fn held(&self, s: super::SpeakerId) -> impl Iterator<Item = (PrefixId, StateId)> + '_ {
        let (block, lane) = Self::lane(s);
        self.blocks
            .get(block)
            .into_iter()
            .flatten()
            .enumerate()
            // SAFETY: tiles of `blocks`, handed out by `self.tiles`.
            .filter_map(|(c, t)| Some((c, unsafe { self.tiles.get((*t)?) })))
            .flat_map(move |(c, t)| {
                t.iter()
                    .enumerate()
                    .map(move |(i, line)| (PrefixId((c * CHUNK + i) as u32), line[lane]))
            })
            .filter(|(_, id)| *id != EMPTY)
    }

    /// How many prefix ids the tiles cover: every id a speaker holds a state for is below.
    pub fn prefix_bound(&self) -> usize {
        self.blocks.iter().map(Vec::len).max().unwrap_or(0) * CHUNK
    }

    /// The state ids of block `block`'s speakers (speakers `block * LANES ..`, one lane
    /// each) for prefixes `0..prefixes`, one line per prefix in id order; where no tile is,
    /// a line of [`EMPTY`]. A pass over every speaker a block at a time reads each line
    /// once, where [`StateTable::held`] for each speaker reads it [`LANES`] times.
    pub fn lines(
        &self,
        block: usize,
        prefixes: usize,
    ) -> impl Iterator<Item = &[StateId; LANES]> + '_ {
        const NONE: [StateId; LANES] = [EMPTY; LANES];
        (0..prefixes).map(move |p| self.tile(block, p / CHUNK).map_or(&NONE, |t| &t[p % CHUNK]))
    }

    /// Forgets everything `s` holds.
    pub fn clear(&mut self, s: super::SpeakerId) {
        let (block, lane) = Self::lane(s);
        for &t in self.blocks.get(block).into_iter().flatten().flatten() {
            // SAFETY: a tile of `blocks`, handed out by `self.tiles`.
            for line in unsafe { self.tiles.get_mut(t) }.iter_mut() {
                line[lane] = EMPTY;
            }
        }
    }

    /// Every slot, block by block and chunk by chunk, for [`States::collect`].
    pub fn slots_mut(&mut self) -> impl Iterator<Item = &mut StateId> + '_ {
        let StateTable { blocks, tiles } = self;
        let order: Vec<TileRef> = blocks.iter().flatten().flatten().map(|t| t.id()).collect();
        tiles
            .in_order_mut(order)
            .flat_map(|t| t.iter_mut().flatten())
    }
}

/// A speaker's own part of its RIB: what it last advertised, which only speakers that pass
/// routes on keep for most prefixes (its chunks exist only where something was advertised),
/// and its Loc-RIB's size. Its candidates are in the engine's [`StateTable`].
#[derive(Clone, Debug, Default)]
pub struct Rib {
    advertised: Vec<Option<AdvertisedChunk>>,
    /// Bit `p % 64` is set for every prefix `p` something was advertised for since the RIB
    /// was last cleared: a reflector's client asked about each of the thousands of prefixes
    /// it receives finds that it advertises nothing for most of them (it advertises its few
    /// own blocks) without reading its chunks.
    advertised_bits: u64,
    /// Bit `p % 64` is set for every prefix `p` the speaker ever originated: whether its
    /// state for a prefix holds a route of its own is then known without reading the state
    /// for most prefixes (never cleared: a bit set for nothing only costs that read).
    local_bits: u64,
    /// How many destinations have a best route (the Loc-RIB's size).
    pub loc_rib_len: usize,
    /// Counts the changes to what was advertised: what was computed from the advertisements
    /// at one version holds until the next.
    version: u64,
}

impl Rib {
    fn bit(p: PrefixId) -> u64 {
        1 << (p.index() % 64)
    }

    /// Notes that the speaker originates `p` ([`Rib::may_originate`]).
    pub fn note_local(&mut self, p: PrefixId) {
        self.local_bits |= Rib::bit(p);
    }

    /// Whether the speaker may hold a route of its own for `p`; `false` means it does not.
    pub fn may_originate(&self, p: PrefixId) -> bool {
        self.local_bits & Rib::bit(p) != 0
    }

    pub fn advertised(&self, p: PrefixId) -> Option<&Advertised> {
        if self.advertised_bits & Rib::bit(p) == 0 {
            return None;
        }
        self.advertised
            .get(p.index() / CHUNK)?
            .as_ref()?
            .get(p.index() % CHUNK)?
            .adv
            .as_deref()
    }

    pub fn set_advertised(&mut self, p: PrefixId, adv: Option<Advertised>) {
        let chunk = p.index() / CHUNK;
        if self.advertised.get(chunk).is_none_or(|c| c.is_none()) {
            if adv.is_none() {
                return;
            }
            if chunk >= self.advertised.len() {
                self.advertised.resize_with(chunk + 1, || None);
            }
            self.advertised[chunk] = Some((0..CHUNK).map(|_| AdvertisedSlot::default()).collect());
        }
        if let Some(c) = self.advertised[chunk].as_mut() {
            let slot = &mut c[p.index() % CHUNK];
            if slot.adv.is_some() || adv.is_some() {
                self.version += 1;
            }
            slot.stamp = self.version;
            if adv.is_some() {
                self.advertised_bits |= Rib::bit(p);
            }
            slot.adv = adv.map(Box::new);
        }
    }

    /// The number of changes to what was advertised so far.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// What was last advertised, by prefix, in id order.
    pub fn advertisements(&self) -> impl Iterator<Item = (PrefixId, &Advertised)> + '_ {
        self.stamped_advertisements().map(|(p, a, _)| (p, a))
    }

    /// [`Rib::advertisements`] with each one's stamp (see [`Rib::stamped`]).
    pub fn stamped_advertisements(
        &self,
    ) -> impl Iterator<Item = (PrefixId, &Advertised, u64)> + '_ {
        self.advertised
            .iter()
            .enumerate()
            .filter_map(|(c, chunk)| Some((c, chunk.as_ref()?)))
            .flat_map(|(c, chunk)| {
                chunk.iter().enumerate().filter_map(move |(i, a)| {
                    Some((PrefixId((c * CHUNK + i) as u32), a.adv.as_deref()?, a.stamp))
                })
            })
    }

    /// What was last advertised for `p` with its stamp: the [`Rib::version`] it was stored
    /// at. Stamps only grow, so an advertisement with the stamp a view was computed from is
    /// the very one it was computed from; no two stored advertisements of a speaker share
    /// one, even across a [`Rib::clear`].
    pub fn stamped(&self, p: PrefixId) -> Option<(&Advertised, u64)> {
        let slot = self
            .advertised
            .get(p.index() / CHUNK)?
            .as_ref()?
            .get(p.index() % CHUNK)?;
        Some((slot.adv.as_deref()?, slot.stamp))
    }

    pub fn clear(&mut self) {
        self.advertised.clear();
        self.advertised_bits = 0;
        self.loc_rib_len = 0;
        self.version += 1;
    }
}

/// The prefixes of either sorted list, each once, in id order: a speaker's destinations are
/// those it holds a candidate for and those it advertised something for.
pub fn either(held: &[PrefixId], advertised: &[PrefixId]) -> Vec<PrefixId> {
    let mut out = Vec::with_capacity(held.len().max(advertised.len()));
    let (mut i, mut j) = (0, 0);
    while i < held.len() || j < advertised.len() {
        let next = match (held.get(i), advertised.get(j)) {
            (Some(a), Some(b)) => *a.min(b),
            (Some(a), None) => *a,
            (None, Some(b)) => *b,
            (None, None) => break,
        };
        i += usize::from(held.get(i) == Some(&next));
        j += usize::from(advertised.get(j) == Some(&next));
        out.push(next);
    }
    out
}

#[cfg(test)]
mod tests;
mod tiles;

use tiles::{Placed, Tile, TileRef, Tiles};
