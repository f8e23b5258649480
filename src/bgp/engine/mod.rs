//! The dynamic part of BGP: sessions coming up and going down, UPDATEs travelling and being
//! processed, the decision process re-run for the prefixes they touch (SPEC §3.4).
//!
//! The engine is a synchronous state machine with no clock and no queue of its own: every
//! entry point takes the current time and returns the events it wants to happen later as
//! `(time, BgpEvent)` pairs, which the simulator queues and hands back to [`BgpEngine::handle`]
//! in (time, insertion) order.
//!
//! The model:
//! - A session is established one round trip after it starts connecting (connect delay on a
//!   start, the next connect-retry tick after a failure, never before BIRD's error wait after
//!   a hold-timer or BFD expiry). With the calico-bird profile every timer is shortened at
//!   random by up to 25% as BIRD does (RFC 4271 §10), from the simulator's seeded stream.
//! - An UPDATE takes the underlay one-way latency; the receiver processes its messages one at
//!   a time, each taking `processingDelay + perPrefixDelay × prefixes`, and its effects happen
//!   when processing ends.
//! - Changes decided at one instant for one peer leave in one UPDATE: a speaker marks changed
//!   prefixes and flushes them in a `Flush` event scheduled at the same instant.
//! - MRAI (0 in BIRD) holds announcements per peer; withdrawals are never held.
//! - ADD-PATH (RFC 7911) where both ends are Calico nodes: every candidate that passes the
//!   export rules goes out under its own path id, and the receiver keeps each as a candidate
//!   (`send.rs`); elsewhere only the best route goes out.
//! - Keepalives are not messages, but they count: a crashed peer, or a multihop session that
//!   lost every path, is detected a hold time (the smaller of both sides', jittered for BIRD)
//!   after the last message heard — its last UPDATE or the last KEEPALIVE of the schedule
//!   (one per keepalive interval from establishment) — or after the BFD detection time.
//! - `convergedWithin` is fed the instants at which some FIB changed (a learned best route's
//!   next hop), not every Loc-RIB change.
//! - A router–router session over a fabric link drops at once when the link goes down.
//! - Nothing is periodic: an Idle session waits for the change that could fix it (a speaker
//!   up, a link up), so a quiet network schedules nothing.
//!
//! Invariants: events carry an epoch (session) or incarnation (speaker) so that an event
//! overtaken by a state change is ignored; every collection iterated is ordered; the same
//! calls in the same order give the same events and log.
//!
//! This file holds the engine's types and state, its entry points (`new`, `start`, `handle`,
//! origination, speakers and links changing) and the speaker helpers; the rest of
//! `impl BgpEngine` is split by what it does: `queries.rs` (what the rest of podnet reads),
//! `session.rs` (session life and timers), `receive.rs` (UPDATEs in), `decide.rs` (the
//! decision process per prefix) and `send.rs` (exports and UPDATEs out).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;

use super::config::{ExportPool, TimerJitter, Timers};
use super::decision::RouteStatus;
use super::peering::{IdleReason, Peering, Session, SessionState, SessionType, Speaker};
use super::restart::{GracefulRestart, RestartEvent};
use super::rib::{
    Attrs, PathAttributes, PathId, PrefixId, PrefixTable, Rib, RouteSource, State, StateTable,
    States,
};
use super::underlay::Underlay;
use super::{SessionId, SpeakerId};
use crate::model::network::BgpSettings;
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{DeviceId, LinkId, Topology};

mod decide;
mod groups;
mod next_hops;
mod prefetch;
mod queries;
mod receive;
mod send;
mod session;
mod shared;
mod statics;
mod targets;
mod views;

use session::LinkAction;

pub use queries::Spread;
pub use views::{BestRoute, BgpLogEntry, BgpLogKind, LogOptions, RibEntry, RibRoute};

/// A group of UPDATEs arriving at one instant, or of speakers finishing a message at one
/// instant: a slot reused once the event fires (the last freed slot is taken first, so ids
/// are deterministic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BatchId(pub u32);

/// Something the engine wants to happen at a later (or the same) instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BgpEvent {
    /// The OPEN exchange of a connecting session completes.
    SessionEstablished { session: SessionId, epoch: u32 },
    /// UPDATEs reach their receivers (each is then queued for processing), in the order
    /// they were sent.
    Deliver { batch: BatchId },
    /// A speaker finishes processing a message (an [`InProcess`]) and starts on the next
    /// one waiting, if any.
    ProcessNext { message: BatchId },
    /// Several speakers finish processing a message, in this order (each as a
    /// `ProcessNext` would).
    ProcessMany { batch: BatchId },
    /// The speaker sends the changes decided at this instant.
    Flush {
        speaker: SpeakerId,
        incarnation: u32,
    },
    /// The hold timer (or BFD) of a session whose peer went silent expires.
    HoldExpired {
        session: SessionId,
        epoch: u32,
        detection: u32,
    },
    /// The MRAI timer of one side of a session expires: held announcements leave.
    MraiExpired {
        session: SessionId,
        side: u8,
        epoch: u32,
    },
    /// Graceful restart (`restart.rs`): a restart event of its own.
    Restart(RestartEvent),
}

impl BgpEvent {
    /// A camelCase name for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            BgpEvent::SessionEstablished { .. } => "sessionEstablished",
            BgpEvent::Deliver { .. } => "updateDelivered",
            BgpEvent::ProcessNext { .. } | BgpEvent::ProcessMany { .. } => "updateProcessed",
            BgpEvent::Flush { .. } => "updatesFlushed",
            BgpEvent::HoldExpired { .. } => "holdExpired",
            BgpEvent::MraiExpired { .. } => "mraiExpired",
            BgpEvent::Restart(e) => e.kind(),
        }
    }
}

/// Events to schedule: `(when, what)`.
pub type Scheduled = Vec<(SimTime, BgpEvent)>;

/// What an UPDATE carries. A reflector sending the same change to a thousand clients
/// builds it once and every message shares it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateBody {
    /// PrefixTable with the path id (RFC 7911; always 0 on a session without ADD-PATH).
    pub withdrawn: Vec<(PrefixId, PathId)>,
    pub announced: Vec<(PrefixId, PathId, Attrs)>,
    /// The sender's initial table ends with this message (End-of-RIB, RFC 4724 §2).
    pub end_of_rib: bool,
}

impl UpdateBody {
    pub fn prefix_count(&self) -> usize {
        self.withdrawn.len() + self.announced.len()
    }

    fn is_empty(&self) -> bool {
        self.withdrawn.is_empty() && self.announced.is_empty() && !self.end_of_rib
    }
}

/// A BGP UPDATE message, as sent on one connection of a session. Twenty-four bytes: tens
/// of millions are written and read where a reflector's change reaches its clients.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub session: SessionId,
    /// The session's epoch it was sent in (its TCP connection): a message of an earlier
    /// epoch is dropped where it arrives or would be applied.
    pub epoch: u32,
    pub from: SpeakerId,
    pub to: SpeakerId,
    pub body: Arc<UpdateBody>,
}

const _: () = assert!(size_of::<Update>() == 24);

impl Update {
    pub fn prefix_count(&self) -> usize {
        self.body.prefix_count()
    }
}

/// An UPDATE on its way.
#[derive(Clone, Debug)]
struct Delivery {
    update: Update,
}

/// A message a speaker started processing, with the speaker and its incarnation then. It
/// travels in the event that finishes it rather than at the head of the speaker's queue, so
/// finishing it reads the event's batch (consecutive in memory) and not each receiver's
/// queue.
#[derive(Debug)]
struct InProcess {
    speaker: SpeakerId,
    incarnation: u32,
    delivery: Delivery,
}

const _: () = assert!(size_of::<InProcess>() == 32);

/// UPDATEs leaving in one handler, grouped by arrival instant in the order they were sent.
/// Messages sent one after another arrive one after another at the same instant, so one
/// event per instant delivers them in exactly the order separate events would.
#[derive(Debug, Default)]
struct Arrivals {
    groups: Vec<(SimTime, Vec<Delivery>)>,
    by_time: HashMap<SimTime, usize>,
    /// The group the last message went to: a reflector's flush sends to its clients in
    /// session order, and neighbouring clients (one rack) are as far away, so most messages
    /// arrive when the one before did and skip the map.
    last: usize,
    /// How many messages are still to come ([`Arrivals::expect`]): a new group has room
    /// for them all, so a reflector's flush to its thousands of clients does not grow
    /// (and copy) its groups as it goes.
    to_come: usize,
}

impl Arrivals {
    /// Says that `n` more messages are to be added.
    fn expect(&mut self, n: usize) {
        self.to_come = n;
    }

    /// Adds a message arriving at `at`. Inlined where a flush sends (once per message, tens
    /// of millions in rr-5000): the common case, the group the last message went to, is a
    /// comparison and a push; a group of another instant is looked up out of line.
    #[inline(always)]
    fn add(&mut self, at: SimTime, delivery: Delivery) {
        self.to_come = self.to_come.saturating_sub(1);
        if let Some((t, group)) = self.groups.get_mut(self.last)
            && *t == at
            && group.len() < group.capacity()
        {
            group.push(delivery);
            return;
        }
        self.add_to_group(at, delivery);
    }

    /// [`Arrivals::add`] to a group other than the last one's, or to a full one.
    #[cold]
    #[inline(never)]
    fn add_to_group(&mut self, at: SimTime, delivery: Delivery) {
        let room = self.to_come + 1;
        let i = *self.by_time.entry(at).or_insert_with(|| {
            self.groups.push((at, Vec::with_capacity(room)));
            self.groups.len() - 1
        });
        self.last = i;
        self.groups[i].1.push(delivery);
    }
}

/// Slots for the payload of batched events.
#[derive(Debug)]
struct Slots<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slots<T> {
    fn put(&mut self, item: T) -> BatchId {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(item);
                BatchId(i)
            }
            None => {
                self.items.push(Some(item));
                BatchId(self.items.len() as u32 - 1)
            }
        }
    }

    fn take(&mut self, id: BatchId) -> Option<T> {
        let item = self.items.get_mut(id.0 as usize)?.take()?;
        self.free.push(id.0);
        Some(item)
    }
}

/// Runtime state of a speaker: what receiving a message reads.
///
/// A message finishing at a reflector's client reads and writes a few fields of its
/// receiver, and a message finishes at thousands of clients at one instant, each met once:
/// those fields are the record's two cache lines (`repr(C)`, aligned to a line; the
/// assertions below hold the size), which are what `prefetch.rs` asks for ahead. What
/// sending reads (session lists, originated prefixes, export caches, the prefixes marked
/// for the next flush) is in [`Outbound`], and the messages waiting behind the one being
/// processed are in [`BgpEngine::inboxes`]: a receiver with nothing waiting and nothing to
/// send, the common case, reads neither.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct SpeakerRt {
    /// Moves on when the speaker goes down or restarts: a message started in another
    /// incarnation no longer applies.
    pub(super) incarnation: u32,
    /// How many messages wait in the speaker's inbox ([`BgpEngine::inboxes`], kept equal),
    /// behind the one it processes (which is in the event that finishes it, [`InProcess`]).
    waiting: u32,
    pub(super) up: bool,
    pub(super) removed: bool,
    processing: bool,
    flush_scheduled: bool,
    /// Whether [`Outbound::dirty`] holds a prefix (kept equal): all that finishing a
    /// message reads of it.
    marked: bool,
    /// The speaker's BGP identifier (`Speaker::router_id`, kept equal; `None` only in a
    /// default record): all the import check reads of the receiver of a route learned over
    /// iBGP from a non-client.
    pub(in crate::bgp) router_id: Option<IpAddr>,
    /// UPDATEs received.
    received: u64,
    /// How the speaker names sources in shared states (`shared.rs`).
    pub(super) tags: shared::Tags,
    /// What applying a message counts, and the bits that say the speaker advertises or
    /// originates nothing for most prefixes.
    pub(super) rib: Rib,
}

/// What a speaker sends to and originates: its session lists, its originated prefixes, its
/// export caches, the prefixes marked for its next flush and how many UPDATEs it sent.
/// Flushes, sessions coming up, changes of peering and the export of what a speaker that
/// passes routes on received read them; a reflector's client applying a message never does
/// (`record` stops at `passes_on_nothing`), so they are kept apart from [`SpeakerRt`] (in
/// [`BgpEngine::outbound`], by speaker): the two lines of a reflector's clients, which a
/// message finishing at thousands of them reads one client after another, are then
/// contiguous, 128 bytes a client.
#[derive(Clone, Debug, Default)]
pub(super) struct Outbound {
    /// Sessions with a speaker at both ends, in id order, split by how routes flow to them.
    pub(super) ebgp: Vec<SessionId>,
    pub(super) clients: Vec<SessionId>,
    pub(super) non_clients: Vec<SessionId>,
    /// Every session naming this speaker (including those to nobody).
    pub(super) all: Vec<SessionId>,
    /// The prefixes marked for the next flush ([`SpeakerRt::marked`] says whether any is).
    dirty: BTreeSet<PrefixId>,
    /// UPDATEs sent.
    sent: u64,
    pub(super) originated: BTreeSet<PrefixId>,
    /// The nets of `originated` that come from IPAM (blocks, borrowed addresses), for
    /// Calico's export filter.
    own: Vec<IpNet>,
    /// The nets of `originated` that are static routes (Service CIDRs and /32s,
    /// `statics.rs`), sorted.
    statics: Vec<IpNet>,
    /// Attributes exported per prefix, shared among sessions (`send.rs`).
    exports: send::ExportCache,
    /// Full-table views per prefix and export profile (`groups.rs`).
    table_views: groups::TableViews,
}

const _: () = {
    assert!(size_of::<SpeakerRt>() == 128);
};

/// Why a session is being timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Detecting {
    PeerDown,
    PathLost,
}

/// Runtime state of a session: what every session needs, one cache line of it.
///
/// A full mesh of 1,000 nodes has half a million sessions, met in random order when each
/// comes up and when its full tables are delivered and processed; each meeting reads this
/// record (the epoch check at least), so it is kept to one line, aligned to it. What only
/// some sessions ever need (MRAI, the hold timer's log line, BIRD's error wait) is boxed
/// apart in [`RareTimers`], made on its first write: until then it reads as never armed.
#[derive(Clone, Debug, Default)]
#[repr(align(64))]
pub(super) struct SessionRt {
    pub(super) epoch: u32,
    detection: u32,
    detecting: Option<Detecting>,
    /// The session's one-way latency now (`Session::latency`, none read as zero): what a
    /// flush reads of each target, here so that it reads no `Session`. Kept equal by
    /// [`BgpEngine::track_latency`]; a unit-test assertion in every flush checks it.
    latency: SimDuration,
    /// Per side, when the last UPDATE sent arrives: a session is a TCP stream, so a later
    /// message never overtakes an earlier one even if the path got shorter.
    last_arrival: [SimTime; 2],
    /// When the session last became Established (KEEPALIVEs are counted from here), and its
    /// one-way latency then.
    established_at: SimTime,
    latency_up: SimDuration,
    /// Times the session went down from Established (a session that did so more than once
    /// flapped; reports warn about it).
    pub(super) downs: u32,
    rare: Option<Box<RareTimers>>,
}

const _: () = assert!(
    std::mem::size_of::<SessionRt>() == 64,
    "a session's runtime state is one cache line"
);

/// The timers of a session that most sessions never arm: MRAI (0 in BIRD), the hold
/// timer's log line and BIRD's error wait. Their rest state is [`AT_REST`].
#[derive(Clone, Debug)]
pub(super) struct RareTimers {
    mrai_until: [SimTime; 2],
    mrai_armed: [bool; 2],
    /// Per side, for announcements held by MRAI: what the peer currently has, per prefix and
    /// path.
    held: [BTreeMap<(PrefixId, PathId), Option<Attrs>>; 2],
    /// What the running detection counts from: the last message heard from the silent side,
    /// and the (jittered) hold time armed then; for the log line.
    last_heard: SimTime,
    hold_armed: SimDuration,
    /// BIRD's error wait: after an error the session does not start again before this.
    error_until: SimTime,
    startup_delay: SimDuration,
    last_error: Option<SimTime>,
}

/// Nothing armed, held or waited for: what a session that never wrote a rare timer reads,
/// and what one is made as.
static AT_REST: RareTimers = RareTimers {
    mrai_until: [SimTime::ZERO; 2],
    mrai_armed: [false; 2],
    held: [BTreeMap::new(), BTreeMap::new()],
    last_heard: SimTime::ZERO,
    hold_armed: SimDuration::ZERO,
    error_until: SimTime::ZERO,
    startup_delay: SimDuration::ZERO,
    last_error: None,
};

impl Default for RareTimers {
    fn default() -> Self {
        AT_REST.clone()
    }
}

impl SessionRt {
    /// The session's rare timers, at rest if it never wrote one.
    fn rare(&self) -> &RareTimers {
        self.rare.as_deref().unwrap_or(&AT_REST)
    }

    /// The session's rare timers, to write (made at rest on the first write).
    fn rare_mut(&mut self) -> &mut RareTimers {
        self.rare.get_or_insert_with(Default::default)
    }

    /// Per side, the announcements MRAI holds ([`RareTimers::held`]).
    fn held(&self, side: usize) -> &BTreeMap<(PrefixId, PathId), Option<Attrs>> {
        &self.rare().held[side]
    }

    /// Forgets what MRAI holds of `(p, path)` on side `side`, if anything.
    fn unhold(&mut self, side: usize, key: &(PrefixId, PathId)) {
        if let Some(rare) = &mut self.rare {
            rare.held[side].remove(key);
        }
    }
}

const VISIT_EBGP: u8 = 1;
const VISIT_CLIENTS: u8 = 2;
const VISIT_NON_CLIENTS: u8 = 4;
const VISIT_ALL: u8 = 7;

/// The BGP engine of one run.
#[derive(Debug)]
pub struct BgpEngine {
    pub(super) speakers: Vec<Speaker>,
    pub(super) rt: Vec<SpeakerRt>,
    /// Per speaker, what it sends to and originates: one entry per entry of `rt` (`rt`,
    /// `outbound` and `inboxes` grow only in `new` and when `reconfigure.rs` adds a speaker).
    pub(super) outbound: Vec<Outbound>,
    /// Per speaker, the messages waiting while it processes another, in arrival order (as
    /// `rt` and `outbound`; [`SpeakerRt::waiting`] counts them).
    inboxes: Vec<VecDeque<Delivery>>,
    pub(super) sessions: Vec<Session>,
    pub(super) srt: Vec<SessionRt>,
    /// Per session, when it last went Idle (connect retries count from there).
    pub(super) idle_since: Vec<SimTime>,
    pub(super) by_device: HashMap<DeviceId, SpeakerId>,
    pub(super) by_address: HashMap<IpAddr, SpeakerId>,
    prefixes: PrefixTable,
    pools: Vec<ExportPool>,
    pub(super) timers: Timers,
    settings: BgpSettings,
    pub(super) underlay: Underlay,
    /// UPDATEs in flight, by arrival instant.
    in_flight: Slots<Vec<Delivery>>,
    /// A speaker finishing a message; several finishing at one instant.
    in_process: Slots<InProcess>,
    finishing: Slots<Vec<InProcess>>,
    options: LogOptions,
    /// Whether any line is written down at all (`session.rs`, `BgpEngine::keep_lines`).
    pub(super) lines_kept: bool,
    pub(super) log: Vec<BgpLogEntry>,
    /// The instants at which some FIB changed (a learned best route appeared, went or took
    /// another next hop), each once, since the last take: what `convergedWithin` measures.
    fib_change_times: Vec<SimTime>,
    /// The last instant something worth a log line happened, whether or not the line was
    /// kept ([`LogOptions`] only decides what is written down, never what happens).
    last_activity: SimTime,
    last_rib_change: SimTime,
    pub(super) last_state_change: SimTime,
    total_updates: u64,
    /// The LOCAL_PREF Calico nodes set on iBGP exports (Calico v3.32+), if any.
    ibgp_local_pref: Option<u32>,
    /// BIRD's timer jitter (`Timers::jitter`); without a source, timers are exact.
    jitter: Option<Box<dyn TimerJitter>>,
    /// Graceful restart: stale routes kept by helpers, kernel tables of restarting speakers.
    pub(super) restart: GracefulRestart,
    /// Whether sessions with the same export profile share export computations
    /// (`groups.rs`); off only for the property test's per-session reference.
    update_groups: bool,
    /// What flushes read of the sessions, kept until the peering is reconfigured
    /// (`send.rs`).
    send_cache: targets::SendCache,
    /// Which sessions are Established, in which epoch: the one dense read of every hot
    /// "still up?" check (`session.rs`).
    up: session::UpEpochs,
    /// Every speaker's candidates per prefix, interned and shared (`shared.rs`).
    pub(super) states: States,
    /// Which state each speaker holds for each prefix.
    pub(super) table: StateTable,
    /// The last steps taken at each prefix (`shared.rs`).
    prefix_steps: shared::PrefixSteps,
    /// Whether speakers name sources so as to share states and replay each other's steps
    /// (`shared.rs`); off only for the property test's per-speaker reference.
    shared_states: bool,
    /// Which prefixes can carry different next hops (`next_hops.rs`, for `link_changed`).
    next_hop_origins: next_hops::NextHopOrigins,
    /// Devices of the nodes removed (`speaker_removed`) since the last link event, which
    /// tells the underlay of them (one a reconfiguration took in already is passed over).
    removed_unseen: Vec<DeviceId>,
    /// Decisions run so far (tests measure what an event costs).
    #[cfg(test)]
    pub(crate) decisions: u64,
    /// Destinations `link_changed` looked at so far (tests measure what an event costs).
    #[cfg(test)]
    pub(crate) link_examined: u64,
    /// Sessions `link_changed` looked at so far (tests measure what an event costs).
    #[cfg(test)]
    pub(crate) link_sessions_examined: u64,
    /// Full tables built by walking the advertisements of a speaker that passes routes on,
    /// rather than sent again (tests measure what a session coming up costs).
    #[cfg(test)]
    pub(crate) full_tables_built: u64,
    /// A flush's changes worked out for a session of an update group whose group had them
    /// worked out already in that flush (tests hold a flush to one computation per group).
    #[cfg(test)]
    pub(crate) group_bodies_repeated: u64,
    /// Messages of a group finished on the plain path (`receive.rs`, `finish_plain`), and
    /// how many of them took a step an earlier receiver of the group took (`GroupSteps`).
    #[cfg(test)]
    pub(crate) plain_finished: (u64, u64),
    /// Per speaker, its flushes and the targets they looked at (tests hold a flush to the
    /// lists that can see its changes).
    #[cfg(test)]
    pub(crate) flushes: HashMap<SpeakerId, (u64, u64)>,
}

impl BgpEngine {
    /// An engine over a planned peering; nothing happens until [`BgpEngine::start`].
    pub fn new(
        topology: &Topology,
        peering: Peering,
        timers: Timers,
        settings: &BgpSettings,
    ) -> BgpEngine {
        let Peering { speakers, sessions } = peering;
        let rt: Vec<SpeakerRt> = speakers
            .iter()
            .map(|s| SpeakerRt {
                up: s.up,
                router_id: Some(s.router_id),
                ..SpeakerRt::default()
            })
            .collect();
        let mut outbound = vec![Outbound::default(); speakers.len()];
        let inboxes = vec![VecDeque::new(); speakers.len()];
        for s in &sessions {
            file_session(&mut outbound, s);
        }
        let by_device = speakers.iter().map(|s| (s.device, s.id)).collect();
        let mut by_address = HashMap::new();
        for s in &speakers {
            by_address.entry(s.address).or_insert(s.id);
        }
        let srt = sessions
            .iter()
            .map(|s| SessionRt {
                latency: s.latency.unwrap_or_default(),
                ..SessionRt::default()
            })
            .collect();
        let idle_since = vec![SimTime::ZERO; sessions.len()];
        let mut engine = BgpEngine {
            speakers,
            rt,
            outbound,
            inboxes,
            sessions,
            srt,
            idle_since,
            by_device,
            by_address,
            prefixes: PrefixTable::default(),
            pools: Vec::new(),
            timers,
            settings: *settings,
            underlay: Underlay::new(topology),
            in_flight: Slots::default(),
            in_process: Slots::default(),
            finishing: Slots::default(),
            options: LogOptions::default(),
            lines_kept: true,
            log: Vec::new(),
            fib_change_times: Vec::new(),
            last_activity: SimTime::ZERO,
            last_rib_change: SimTime::ZERO,
            last_state_change: SimTime::ZERO,
            total_updates: 0,
            ibgp_local_pref: None,
            jitter: None,
            restart: GracefulRestart::default(),
            update_groups: true,
            send_cache: targets::SendCache::default(),
            up: session::UpEpochs::default(),
            states: States::default(),
            table: StateTable::default(),
            prefix_steps: shared::PrefixSteps::default(),
            shared_states: true,
            next_hop_origins: next_hops::NextHopOrigins::default(),
            removed_unseen: Vec::new(),
            #[cfg(test)]
            decisions: 0,
            #[cfg(test)]
            link_examined: 0,
            #[cfg(test)]
            link_sessions_examined: 0,
            #[cfg(test)]
            full_tables_built: 0,
            #[cfg(test)]
            group_bodies_repeated: 0,
            #[cfg(test)]
            plain_finished: (0, 0),
            #[cfg(test)]
            flushes: HashMap::new(),
        };
        let tags = engine.name_sources();
        for (r, tags) in engine.rt.iter_mut().zip(tags) {
            r.tags = tags;
        }
        engine
    }

    /// The random source of BIRD's timer jitter (used when the profile's `Timers::jitter` is
    /// set); set before [`BgpEngine::start`].
    pub fn set_jitter(&mut self, jitter: Box<dyn TimerJitter>) {
        self.jitter = Some(jitter);
    }

    /// A timer of `value` as BIRD starts it (`bgp_start_timer`, RFC 4271 §10): shortened by a
    /// uniform random amount of 0 to 25%, in microseconds; exact for the FRR and RFC profiles.
    pub(super) fn timer(&mut self, value: SimDuration) -> SimDuration {
        match self.jitter.as_mut().filter(|_| self.timers.jitter) {
            Some(j) => {
                let us = value.as_nanos() / 1000;
                let cut = j.draw(us / 4);
                SimDuration::from_nanos((us - cut) * 1000)
            }
            None => value,
        }
    }

    /// When a session starting now connects: after the connect delay of whichever side's
    /// timer fires first (each side runs its own), and not before an error wait ends.
    pub(super) fn connect_at(&mut self, now: SimTime, x: SessionId) -> SimTime {
        let cd = self.timers.connect_delay;
        let mut delay = self.timer(cd);
        if self.sessions[x.index()].b.is_some() {
            delay = delay.min(self.timer(cd));
        }
        now.max(self.srt[x.index()].rare().error_until) + delay
    }

    /// Calico nodes give every route they send over iBGP this LOCAL_PREF (Calico v3.32+,
    /// [`super::config::CALICO_IBGP_LOCAL_PREF`]); set before [`BgpEngine::start`].
    pub fn set_ibgp_local_pref(&mut self, local_pref: Option<u32>) {
        self.ibgp_local_pref = local_pref;
        self.forget_table_views();
    }

    pub fn set_log_options(&mut self, options: LogOptions) {
        self.options = options;
    }

    /// Sets the IP pools Calico's export filter looks at; every node re-evaluates what it
    /// advertises.
    pub fn set_pools(&mut self, now: SimTime, mut pools: Vec<ExportPool>) -> Scheduled {
        pools.sort();
        if pools == self.pools {
            return Vec::new();
        }
        self.pools = pools;
        let mut out = Vec::new();
        for s in 0..self.speakers.len() {
            let sid = SpeakerId(s as u32);
            if self.speakers[s].is_router() || !self.rt[s].up {
                continue;
            }
            let prefixes: Vec<PrefixId> = self.prefixes_of(SpeakerId(s as u32));
            for p in prefixes {
                self.schedule_export(now, sid, p, &mut out);
            }
        }
        out
    }

    /// Starts every session that can start: it connects after the connect delay.
    pub fn start(&mut self, now: SimTime) -> Scheduled {
        let mut out = Vec::new();
        for x in 0..self.sessions.len() {
            let x = SessionId(x as u32);
            if self.sessions[x.index()]
                .reason
                .as_ref()
                .is_none_or(|r| !r.is_permanent())
            {
                self.idle_since[x.index()] = now;
                let at = self.connect_at(now, x);
                self.connect(now, x, at, &mut out);
            }
        }
        out
    }

    /// Handles an event the engine scheduled earlier, adding what it schedules to `out`.
    /// The simulator passes the same buffer every time (emptied): an event is handled
    /// millions of times in a large cluster, and a new vector each time was an allocation
    /// and a free per event.
    pub fn handle(&mut self, now: SimTime, event: BgpEvent, out: &mut Scheduled) {
        self.collect_states();
        match event {
            BgpEvent::SessionEstablished { session, epoch } => {
                self.on_established(now, session, epoch, out)
            }
            BgpEvent::Deliver { batch } => self.on_deliver(now, batch, out),
            BgpEvent::ProcessNext { message } => {
                if let Some(m) = self.in_process.take(message) {
                    let mut starting = Vec::new();
                    self.on_process_next(now, m, &mut starting, out);
                    self.schedule_finishing(starting, out);
                }
            }
            BgpEvent::ProcessMany { batch } => {
                // Hundreds of receivers finish one message together, each met once: their
                // lines are asked for a few receivers ahead (`prefetch.rs`).
                let mut group = self.finishing.take(batch).unwrap_or_default().into_iter();
                let mut starting = Vec::new();
                let mut steps = receive::GroupSteps::default();
                while let Some(m) = group.next() {
                    if let Some(ahead) = group.as_slice().get(prefetch::RECEIVERS_AHEAD - 1) {
                        self.prefetch_receiver(ahead);
                    }
                    if let Some(next) = group.as_slice().first() {
                        self.prefetch_queue_front(next.speaker);
                    }
                    if !self.finish_plain(now, &m, &mut steps, out) {
                        self.on_process_next(now, m, &mut starting, out);
                    }
                }
                self.schedule_finishing(starting, out);
            }
            BgpEvent::Flush {
                speaker,
                incarnation,
            } => {
                let r = &mut self.rt[speaker.index()];
                if r.incarnation == incarnation && r.up {
                    r.flush_scheduled = false;
                    self.flush(now, speaker, out);
                }
            }
            BgpEvent::HoldExpired {
                session,
                epoch,
                detection,
            } => self.on_hold_expired(now, session, epoch, detection, out),
            BgpEvent::MraiExpired {
                session,
                side,
                epoch,
            } => self.on_mrai_expired(now, session, usize::from(side), epoch, out),
            BgpEvent::Restart(e) => self.on_restart_event(now, e, out),
        }
    }

    /// The speaker now originates `prefix` (a Calico block claimed, an address borrowed).
    pub fn originate(&mut self, now: SimTime, speaker: DeviceId, prefix: IpNet) -> Scheduled {
        self.originate_as(now, speaker, prefix, true)
    }

    /// Originates `prefix`, one of the node's IPAM prefixes (`block`, which Calico's export
    /// filter aggregates) or a static route (kept in `statics` by the caller).
    fn originate_as(
        &mut self,
        now: SimTime,
        speaker: DeviceId,
        prefix: IpNet,
        block: bool,
    ) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&speaker) else {
            return out;
        };
        let p = self.prefixes.intern(prefix);
        let prefix = self.prefixes.net(p);
        let o = &mut self.outbound[s.index()];
        if self.rt[s.index()].removed || !o.originated.insert(p) {
            return out;
        }
        if block {
            o.own.push(prefix);
            o.own.sort();
        }
        self.note(
            now,
            BgpLogKind::Originated,
            self.name(s),
            prefix.to_string(),
        );
        if self.rt[s.index()].up {
            self.insert_local(now, s, p, &mut out);
            self.refilter(now, s, prefix, &mut out);
        }
        out
    }

    /// The speaker stops originating `prefix`.
    pub fn withdraw(&mut self, now: SimTime, speaker: DeviceId, prefix: IpNet) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&speaker) else {
            return out;
        };
        let Some(p) = self.prefixes.get(prefix) else {
            return out;
        };
        let prefix = self.prefixes.net(p);
        let o = &mut self.outbound[s.index()];
        if !o.originated.remove(&p) {
            return out;
        }
        o.own.retain(|n| *n != prefix);
        self.note(now, BgpLogKind::Withdrawn, self.name(s), prefix.to_string());
        if self.rt[s.index()].up {
            self.set_route(now, s, p, RouteSource::Local.into(), None, &mut out);
            self.refilter(now, s, prefix, &mut out);
        }
        out
    }

    /// The speaker crashed: it forgets everything it learned; its peers notice after the
    /// hold time (or BFD).
    pub fn speaker_down(&mut self, now: SimTime, device: DeviceId) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&device) else {
            return out;
        };
        // A host dying takes its kernel routes with it, even while its daemon restarts.
        self.restart_host_gone(s);
        if !self.rt[s.index()].up || self.rt[s.index()].removed {
            return out;
        }
        self.wipe(s);
        self.last_state_change = now;
        self.note(now, BgpLogKind::SpeakerDown, self.name(s), "crashed".into());
        let name = self.name(s);
        for x in self.outbound[s.index()].all.clone() {
            let state = self.sessions[x.index()].state;
            match state {
                // A path-loss timer already running keeps running: the earlier one wins.
                SessionState::Established => match self.srt[x.index()].detecting {
                    Some(_) => self.srt[x.index()].detecting = Some(Detecting::PeerDown),
                    None => self.arm_detection(now, x, Detecting::PeerDown, &mut out),
                },
                SessionState::Connect | SessionState::Idle => self.not_up_peer_down(now, x, &name),
            }
        }
        out
    }

    /// The speaker is back: it re-originates its prefixes and its sessions reconnect.
    pub fn speaker_up(&mut self, now: SimTime, device: DeviceId) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&device) else {
            return out;
        };
        let r = &mut self.rt[s.index()];
        if r.up || r.removed {
            return out;
        }
        r.up = true;
        r.incarnation += 1;
        self.last_state_change = now;
        self.note(now, BgpLogKind::SpeakerUp, self.name(s), "restarted".into());
        for p in self.outbound[s.index()].originated.clone() {
            self.insert_local(now, s, p, &mut out);
        }
        let name = self.name(s);
        for x in self.outbound[s.index()].all.clone() {
            if self.sessions[x.index()].state == SessionState::Established {
                // The peer never noticed the crash; the new connection replaces the old
                // session (RFC 4271 §6.8) and, graceful restart being negotiated, the peer
                // keeps its routes as stale until End-of-RIB (`restart.rs`).
                if let Some(side) = self.sessions[x.index()].side_of(s) {
                    self.start_helping(now, x, 1 - side, "a new connection replaced it", &mut out);
                }
                self.session_down(
                    now,
                    x,
                    IdleReason::PeerDown {
                        speaker: name.clone(),
                    },
                    &mut out,
                );
            }
            let at = self.connect_at(now, x);
            self.connect(now, x, at, &mut out);
        }
        out
    }

    /// The speaker left the cluster (`deleteNode`): Calico removes its peerings, so its
    /// peers drop its routes at once.
    pub fn speaker_removed(&mut self, now: SimTime, device: DeviceId) -> Scheduled {
        let mut out = Vec::new();
        self.removed_unseen.push(device);
        let Some(&s) = self.by_device.get(&device) else {
            return out;
        };
        if self.rt[s.index()].removed {
            return out;
        }
        self.restart_removed(now, s, &mut out);
        let name = self.name(s);
        for x in self.outbound[s.index()].all.clone() {
            let reason = IdleReason::Removed {
                speaker: name.clone(),
            };
            if self.sessions[x.index()].state == SessionState::Established {
                self.session_down(now, x, reason, &mut out);
            } else {
                self.set_idle(now, x, reason);
            }
        }
        self.wipe(s);
        self.rt[s.index()].removed = true;
        let o = &mut self.outbound[s.index()];
        o.originated.clear();
        o.own.clear();
        o.statics.clear();
        self.last_state_change = now;
        self.note(now, BgpLogKind::SpeakerRemoved, name, "deleted".into());
        out
    }

    /// Links `links` went down or up (or changed latency) in `topology`, which differs from
    /// what the engine last saw only in those and in the nodes removed since
    /// (`speaker_removed`; the underlay takes them in now): latencies and next-hop costs
    /// change; sessions over a downed fabric link drop at once, multihop sessions that lost
    /// every path are timed out, and Idle sessions whose path is back reconnect at the next
    /// connect-retry tick.
    pub fn link_changed(
        &mut self,
        now: SimTime,
        topology: &Topology,
        links: &[LinkId],
    ) -> Scheduled {
        let mut out = Vec::new();
        // The underlay follows the change and the sessions' latencies with it, each only as
        // far as the change reaches (`underlay.rs`).
        let removed = std::mem::take(&mut self.removed_unseen);
        let components_changed = self.underlay.update_told(topology, links, &removed);
        // Only a session whose latency changed can have something to do (`link_action`).
        let looked_at = self.recompute_latencies();
        #[cfg(test)]
        {
            self.link_sessions_examined += looked_at.len() as u64;
            self.assert_quiet_elsewhere(&looked_at);
        }
        for x in looked_at {
            match self.link_action(x) {
                Some(LinkAction::Drop) => self.session_down(now, x, IdleReason::LinkDown, &mut out),
                Some(LinkAction::Detect) => {
                    self.arm_detection(now, x, Detecting::PathLost, &mut out)
                }
                Some(LinkAction::Found) => {
                    let r = &mut self.srt[x.index()];
                    r.detecting = None;
                    r.detection += 1;
                }
                Some(LinkAction::GiveUp) => self.set_idle(now, x, IdleReason::NoUnderlayPath),
                Some(LinkAction::Reconnect) => {
                    let at = self.next_retry(x, now);
                    self.connect(now, x, at, &mut out);
                }
                None => {}
            }
        }
        // Next hops may have become (un)resolvable or nearer: re-decide where that matters.
        // Nearer matters only between different next hops. Unresolvable matters only at a
        // router when the components changed: a Calico node resolves every next hop through
        // its default route (`resolvable` in decide.rs), so a split fabric changes nothing in
        // its decisions, and a link event costs the routers' tables, not n² node decisions.
        // Different next hops exist only for the prefixes `next_hops.rs` names, unless some
        // export rewrote a next hop: then every destination is looked at.
        let may_differ = self.next_hop_origins.may_differ();
        for s in 0..self.speakers.len() {
            if !self.rt[s].up {
                continue;
            }
            let resolvability_changed = components_changed && self.speakers[s].node.is_none();
            let states = &self.states;
            let looked_at: Vec<(PrefixId, &State)> = match &may_differ {
                Some(prefixes) if !resolvability_changed => prefixes
                    .iter()
                    .map(|p| (*p, states.get(self.table.get(SpeakerId(s as u32), *p))))
                    .filter(|(_, state)| !state.held.is_empty())
                    .collect(),
                _ => self
                    .table
                    .held(SpeakerId(s as u32))
                    .map(|(p, id)| (p, states.get(id)))
                    .collect(),
            };
            #[cfg(test)]
            {
                self.link_examined += looked_at.len() as u64;
            }
            let affected: Vec<PrefixId> = looked_at
                .into_iter()
                .filter(|(_, state)| next_hops::link_sensitive(state, resolvability_changed))
                .map(|(p, _)| p)
                .collect();
            for p in affected {
                self.decide(now, SpeakerId(s as u32), p, &mut out);
            }
        }
        out
    }

    /// Re-runs the decision process for every prefix of every speaker that is up and returns
    /// how many best routes changed: 0 when every decision the inputs call for was made (the
    /// oracle of `link_changed`'s selective re-decision).
    #[cfg(test)]
    pub(crate) fn redecide_everything(&mut self, now: SimTime) -> usize {
        let mut changed = 0;
        for s in 0..self.speakers.len() {
            if !self.rt[s].up {
                continue;
            }
            let prefixes: Vec<PrefixId> = self.prefixes_of(SpeakerId(s as u32));
            for p in prefixes {
                let s = SpeakerId(s as u32);
                let before = self.best_of(s, p);
                let mut out = Vec::new();
                self.decide(now, s, p, &mut out);
                changed += usize::from(self.best_of(s, p) != before);
            }
        }
        changed
    }

    // ----- speakers -----

    /// Whether ADD-PATH (RFC 7911) is negotiated on `x`, both ways: Calico's template says
    /// `add paths on` (receive and send) on every session of a node, an operator's router
    /// configuration (`podnet export bird`) says nothing, and a side sends several paths
    /// only when the other said it receives them — so both ends must be Calico nodes.
    pub(super) fn add_paths(&self, x: SessionId) -> bool {
        let sess = &self.sessions[x.index()];
        sess.b
            .is_some_and(|b| self.offers_paths(sess.a) && self.offers_paths(b))
    }

    /// Whether the speaker offers ADD-PATH on its sessions (a Calico node: BIRD exports every
    /// route of its table, `RA_ANY`, where ADD-PATH is negotiated).
    pub(super) fn offers_paths(&self, s: SpeakerId) -> bool {
        !self.speakers[s.index()].is_router()
    }

    /// Adds the runtime records of a speaker joining (the next id): its `rt` record, an
    /// empty `outbound` entry and an empty inbox (the three grow together, here and in
    /// `new` only).
    pub(in crate::bgp) fn push_records(&mut self, rt: SpeakerRt) {
        self.rt.push(rt);
        self.outbound.push(Outbound::default());
        self.inboxes.push(VecDeque::new());
    }

    /// Whether each speaker's runtime record says of its inbox and of the prefixes marked
    /// for its flush what they hold ([`SpeakerRt::waiting`], [`SpeakerRt::marked`]), with
    /// one record, one `Outbound` and one inbox per speaker.
    #[cfg(test)]
    pub(crate) fn speaker_records_in_step(&self) -> bool {
        let n = self.rt.len();
        self.outbound.len() == n
            && self.inboxes.len() == n
            && (self.rt.iter().zip(&self.outbound).zip(&self.inboxes))
                .all(|((r, o), q)| r.waiting as usize == q.len() && r.marked != o.dirty.is_empty())
    }

    /// Forgets everything a speaker knew (a crash or a deletion).
    pub(super) fn wipe(&mut self, s: SpeakerId) {
        let r = &mut self.rt[s.index()];
        r.up = false;
        r.incarnation += 1;
        r.waiting = 0;
        r.processing = false;
        r.marked = false;
        r.flush_scheduled = false;
        r.rib.clear();
        self.inboxes[s.index()].clear();
        let o = &mut self.outbound[s.index()];
        o.dirty.clear();
        o.exports.clear();
        o.table_views = groups::TableViews::default();
        self.table.clear(s);
    }

    pub(super) fn insert_local(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        out: &mut Scheduled,
    ) {
        let address = self.speakers[s.index()].address;
        self.next_hop_origins.originated(p, address);
        let attrs = Arc::new(PathAttributes::local(address));
        self.rt[s.index()].rib.note_local(p);
        self.set_route(now, s, p, RouteSource::Local.into(), Some(attrs), out);
    }

    /// The speaker's own set changed around `net`: routes inside it may now pass or fail
    /// Calico's export filter (only matters if the speaker ever passes learned routes on).
    fn refilter(&mut self, now: SimTime, s: SpeakerId, net: IpNet, out: &mut Scheduled) {
        let o = &self.outbound[s.index()];
        if self.speakers[s.index()].is_router() || (o.ebgp.is_empty() && o.clients.is_empty()) {
            return;
        }
        let inside: Vec<PrefixId> = self
            .prefixes_of(s)
            .into_iter()
            .filter(|p| {
                let n = self.prefixes.net(*p);
                n != net && net.contains(&n)
            })
            .collect();
        for p in inside {
            self.schedule_export(now, s, p, out);
        }
    }
}

/// Files session `s` in its speakers' session lists, by how routes flow to the peer.
pub(super) fn file_session(rt: &mut [Outbound], s: &Session) {
    rt[s.a.index()].all.push(s.id);
    let Some(b) = s.b else { return };
    rt[b.index()].all.push(s.id);
    for (side, sp) in [(0, s.a), (1, b)] {
        let r = &mut rt[sp.index()];
        if s.session_type == SessionType::Ebgp {
            r.ebgp.push(s.id);
        } else if s.reflects[side] {
            r.clients.push(s.id);
        } else {
            r.non_clients.push(s.id);
        }
    }
}
