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

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use smallvec::SmallVec;

use super::config::{ExportPool, TimerJitter, Timers};
use super::decision::{self, DecisionContext, RouteStatus, SourceInfo};
use super::peering::{IdleReason, Peering, Session, SessionState, SessionType, Speaker};
use super::policy::{
    ExportKey, ExportSession, RouteClass, calico_export_filter, export_attrs, import_check,
    may_send,
};
use super::restart::{GracefulRestart, RestartEvent};
use super::rib::{Advertised, Attrs, PathAttributes, PrefixId, Prefixes, Rib, RouteSource, Upsert};
use super::underlay::{Underlay, pair_latencies};
use super::{SessionId, SpeakerId};
use crate::model::network::BgpSettings;
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{DeviceId, Topology};

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
    /// The speaker finishes processing the message at the head of its queue.
    ProcessNext {
        speaker: SpeakerId,
        incarnation: u32,
    },
    /// Several speakers finish processing the message at the head of their queues, in
    /// this order (each as a `ProcessNext` would).
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
    pub withdrawn: Vec<PrefixId>,
    pub announced: Vec<(PrefixId, Attrs)>,
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

/// An UPDATE body being built by a flush; most carry one prefix, so no allocation until
/// it becomes a shared [`UpdateBody`].
#[derive(Debug, Default)]
struct PendingBody {
    withdrawn: SmallVec<[PrefixId; 2]>,
    announced: SmallVec<[(PrefixId, Attrs); 2]>,
}

impl PendingBody {
    /// The same prefixes with the same attributes (compared by identity: bodies built in
    /// one flush share their attributes).
    fn same_as(&self, other: &UpdateBody) -> bool {
        self.withdrawn[..] == other.withdrawn[..]
            && self.announced.len() == other.announced.len()
            && self
                .announced
                .iter()
                .zip(&other.announced)
                .all(|((p, a), (q, b))| p == q && Arc::ptr_eq(a, b))
    }

    fn into_body(self) -> UpdateBody {
        UpdateBody {
            withdrawn: self.withdrawn.into_vec(),
            announced: self.announced.into_vec(),
            end_of_rib: false,
        }
    }
}

/// A BGP UPDATE message.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub session: SessionId,
    pub from: SpeakerId,
    pub to: SpeakerId,
    pub sent_at: SimTime,
    pub body: Arc<UpdateBody>,
}

impl Update {
    pub fn prefix_count(&self) -> usize {
        self.body.prefix_count()
    }
}

/// The UPDATE bodies one flush builds, one per session. A reflector's flush of one prefix
/// touches thousands of sessions, so they are found through a map only when the flush
/// carries several prefixes; the result is in session order either way.
#[derive(Debug, Default)]
struct Batches {
    bodies: Vec<(SessionId, PendingBody)>,
    index: HashMap<SessionId, usize>,
    /// Whether `bodies` may already hold a session (a second prefix is being queued).
    revisiting: bool,
}

impl Batches {
    fn entry(&mut self, x: SessionId) -> &mut PendingBody {
        if self.revisiting {
            let i = *self.index.entry(x).or_insert_with(|| {
                self.bodies.push((x, PendingBody::default()));
                self.bodies.len() - 1
            });
            return &mut self.bodies[i].1;
        }
        self.bodies.push((x, PendingBody::default()));
        &mut self.bodies.last_mut().expect("just pushed").1
    }

    /// The next changes may go to sessions that already have a body.
    fn next_prefix(&mut self) {
        if !self.revisiting && !self.bodies.is_empty() {
            self.revisiting = true;
            self.index = self
                .bodies
                .iter()
                .enumerate()
                .map(|(i, (x, _))| (*x, i))
                .collect();
        }
    }

    fn into_sorted(mut self) -> Vec<(SessionId, PendingBody)> {
        // Session ids are unique: the unstable sort is deterministic.
        self.bodies.sort_unstable_by_key(|(x, _)| *x);
        self.bodies
    }
}

/// An UPDATE on its way, with the session epoch it was sent in.
#[derive(Clone, Debug)]
struct Delivery {
    epoch: u32,
    update: Update,
}

/// UPDATEs leaving in one handler, grouped by arrival instant in the order they were sent.
/// Messages sent one after another arrive one after another at the same instant, so one
/// event per instant delivers them in exactly the order separate events would.
#[derive(Debug, Default)]
struct Arrivals {
    groups: Vec<(SimTime, Vec<Delivery>)>,
    by_time: HashMap<SimTime, usize>,
}

impl Arrivals {
    fn add(&mut self, at: SimTime, delivery: Delivery) {
        let i = *self.by_time.entry(at).or_insert_with(|| {
            self.groups.push((at, Vec::new()));
            self.groups.len() - 1
        });
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

/// What happened, for `events.jsonl` and for students.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BgpLogKind {
    SessionConnect,
    SessionEstablished,
    SessionDown,
    SpeakerDown,
    SpeakerUp,
    SpeakerRemoved,
    Update,
    RouteRejected,
    BestPathChanged,
    Originated,
    Withdrawn,
    /// Graceful restart: a peer's routes kept as stale, or stale routes flushed.
    RoutesStale,
    StaleFlushed,
}

impl BgpLogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BgpLogKind::SessionConnect => "sessionConnect",
            BgpLogKind::SessionEstablished => "sessionEstablished",
            BgpLogKind::SessionDown => "sessionDown",
            BgpLogKind::SpeakerDown => "speakerDown",
            BgpLogKind::SpeakerUp => "speakerUp",
            BgpLogKind::SpeakerRemoved => "speakerRemoved",
            BgpLogKind::Update => "update",
            BgpLogKind::RouteRejected => "routeRejected",
            BgpLogKind::BestPathChanged => "bestPathChanged",
            BgpLogKind::Originated => "originated",
            BgpLogKind::Withdrawn => "withdrawn",
            BgpLogKind::RoutesStale => "routesStale",
            BgpLogKind::StaleFlushed => "staleFlushed",
        }
    }
}

/// One log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BgpLogEntry {
    pub time: SimTime,
    pub kind: BgpLogKind,
    /// What it is about: a speaker, `a – b` for a session, `a -> b` for an UPDATE.
    pub subject: String,
    pub outcome: String,
}

/// Which log lines to keep; session lines are always kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// One line per UPDATE sent.
    pub updates: bool,
    /// One line per best-path change and per rejected route.
    pub routes: bool,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            updates: true,
            routes: true,
        }
    }
}

/// One candidate route as `podnet routes` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RibRoute {
    /// The peer it came from (`None`: originated here).
    pub from: Option<DeviceId>,
    pub session: Option<SessionId>,
    pub attrs: Attrs,
    /// The device owning the next hop.
    pub next_hop_device: Option<DeviceId>,
    pub ebgp: bool,
    pub status: RouteStatus,
}

/// A prefix with its candidates, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct RibEntry {
    pub prefix: IpNet,
    pub routes: Vec<RibRoute>,
}

/// A Loc-RIB route, for building a FIB.
#[derive(Clone, Debug, PartialEq)]
pub struct BestRoute {
    pub prefix: IpNet,
    pub next_hop: IpAddr,
    pub next_hop_device: Option<DeviceId>,
    /// Originated by this speaker (a Calico node's own block or borrowed address).
    pub local: bool,
}

/// Runtime state of a speaker.
#[derive(Clone, Debug, Default)]
pub(super) struct SpeakerRt {
    pub(super) up: bool,
    pub(super) removed: bool,
    pub(super) incarnation: u32,
    /// Sessions with a speaker at both ends, in id order, split by how routes flow to them.
    pub(super) ebgp: Vec<SessionId>,
    pub(super) clients: Vec<SessionId>,
    pub(super) non_clients: Vec<SessionId>,
    /// Every session naming this speaker (including those to nobody).
    pub(super) all: Vec<SessionId>,
    pub(super) rib: Rib,
    pub(super) originated: BTreeSet<PrefixId>,
    /// The nets of `originated`, for Calico's export filter.
    own: Vec<IpNet>,
    inbox: VecDeque<(u32, Update)>,
    processing: bool,
    dirty: BTreeSet<PrefixId>,
    flush_scheduled: bool,
    sent: u64,
    received: u64,
}

/// Why a session is being timed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Detecting {
    PeerDown,
    PathLost,
}

/// Runtime state of a session.
#[derive(Clone, Debug, Default)]
pub(super) struct SessionRt {
    pub(super) epoch: u32,
    detection: u32,
    detecting: Option<Detecting>,
    pub(super) idle_since: SimTime,
    mrai_until: [SimTime; 2],
    mrai_armed: [bool; 2],
    /// Per side, for announcements held by MRAI: what the peer currently has.
    held: [BTreeMap<PrefixId, Option<Attrs>>; 2],
    /// Per side, when the last UPDATE sent arrives: a session is a TCP stream, so a later
    /// message never overtakes an earlier one even if the path got shorter.
    last_arrival: [SimTime; 2],
    /// When the session last became Established (KEEPALIVEs are counted from here), and its
    /// one-way latency then.
    established_at: SimTime,
    latency_up: SimDuration,
    /// What the running detection counts from: the last message heard from the silent side,
    /// and the (jittered) hold time armed then; for the log line.
    last_heard: SimTime,
    hold_armed: SimDuration,
    /// BIRD's error wait: after an error the session does not start again before this.
    error_until: SimTime,
    startup_delay: SimDuration,
    last_error: Option<SimTime>,
    /// Times the session went down from Established (a session that did so more than once
    /// flapped; reports warn about it).
    pub(super) downs: u32,
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
    pub(super) sessions: Vec<Session>,
    pub(super) srt: Vec<SessionRt>,
    pub(super) by_device: HashMap<DeviceId, SpeakerId>,
    pub(super) by_address: HashMap<IpAddr, SpeakerId>,
    prefixes: Prefixes,
    pools: Vec<ExportPool>,
    pub(super) timers: Timers,
    settings: BgpSettings,
    pub(super) underlay: Underlay,
    /// UPDATEs in flight, by arrival instant.
    in_flight: Slots<Vec<Delivery>>,
    /// Speakers (with their incarnation) finishing a message at one instant.
    finishing: Slots<Vec<(SpeakerId, u32)>>,
    options: LogOptions,
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
        let mut rt: Vec<SpeakerRt> = speakers
            .iter()
            .map(|s| SpeakerRt {
                up: s.up,
                ..SpeakerRt::default()
            })
            .collect();
        for s in &sessions {
            file_session(&mut rt, s);
        }
        let by_device = speakers.iter().map(|s| (s.device, s.id)).collect();
        let mut by_address = HashMap::new();
        for s in &speakers {
            by_address.entry(s.address).or_insert(s.id);
        }
        let srt = vec![SessionRt::default(); sessions.len()];
        BgpEngine {
            speakers,
            rt,
            sessions,
            srt,
            by_device,
            by_address,
            prefixes: Prefixes::default(),
            pools: Vec::new(),
            timers,
            settings: *settings,
            underlay: Underlay::new(topology),
            in_flight: Slots::default(),
            finishing: Slots::default(),
            options: LogOptions::default(),
            log: Vec::new(),
            fib_change_times: Vec::new(),
            last_activity: SimTime::ZERO,
            last_rib_change: SimTime::ZERO,
            last_state_change: SimTime::ZERO,
            total_updates: 0,
            ibgp_local_pref: None,
            jitter: None,
            restart: GracefulRestart::default(),
        }
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
        now.max(self.srt[x.index()].error_until) + delay
    }

    /// Calico nodes give every route they send over iBGP this LOCAL_PREF (Calico v3.32+,
    /// [`super::config::CALICO_IBGP_LOCAL_PREF`]); set before [`BgpEngine::start`].
    pub fn set_ibgp_local_pref(&mut self, local_pref: Option<u32>) {
        self.ibgp_local_pref = local_pref;
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
            let prefixes: Vec<PrefixId> = self.rt[s].rib.destinations.keys().collect();
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
                self.srt[x.index()].idle_since = now;
                let at = self.connect_at(now, x);
                self.connect(now, x, at, &mut out);
            }
        }
        out
    }

    /// Handles an event the engine scheduled earlier.
    pub fn handle(&mut self, now: SimTime, event: BgpEvent) -> Scheduled {
        let mut out = Vec::new();
        match event {
            BgpEvent::SessionEstablished { session, epoch } => {
                self.on_established(now, session, epoch, &mut out)
            }
            BgpEvent::Deliver { batch } => self.on_deliver(now, batch, &mut out),
            BgpEvent::ProcessNext {
                speaker,
                incarnation,
            } => self.on_process_next(now, speaker, incarnation, &mut out),
            BgpEvent::ProcessMany { batch } => {
                for (speaker, incarnation) in self.finishing.take(batch).unwrap_or_default() {
                    self.on_process_next(now, speaker, incarnation, &mut out);
                }
            }
            BgpEvent::Flush {
                speaker,
                incarnation,
            } => {
                let r = &mut self.rt[speaker.index()];
                if r.incarnation == incarnation && r.up {
                    r.flush_scheduled = false;
                    self.flush(now, speaker, &mut out);
                }
            }
            BgpEvent::HoldExpired {
                session,
                epoch,
                detection,
            } => self.on_hold_expired(now, session, epoch, detection, &mut out),
            BgpEvent::MraiExpired {
                session,
                side,
                epoch,
            } => self.on_mrai_expired(now, session, usize::from(side), epoch, &mut out),
            BgpEvent::Restart(e) => self.on_restart_event(now, e, &mut out),
        }
        out
    }

    /// The speaker now originates `prefix` (a Calico block claimed, an address borrowed).
    pub fn originate(&mut self, now: SimTime, speaker: DeviceId, prefix: IpNet) -> Scheduled {
        let mut out = Vec::new();
        let Some(&s) = self.by_device.get(&speaker) else {
            return out;
        };
        let p = self.prefixes.intern(prefix);
        let prefix = self.prefixes.net(p);
        let r = &mut self.rt[s.index()];
        if r.removed || !r.originated.insert(p) {
            return out;
        }
        r.own.push(prefix);
        r.own.sort();
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
        let r = &mut self.rt[s.index()];
        if !r.originated.remove(&p) {
            return out;
        }
        r.own.retain(|n| *n != prefix);
        self.note(now, BgpLogKind::Withdrawn, self.name(s), prefix.to_string());
        if self.rt[s.index()].up {
            self.set_route(now, s, p, RouteSource::Local, None, &mut out);
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
        for x in self.rt[s.index()].all.clone() {
            let state = self.sessions[x.index()].state;
            match state {
                // A path-loss timer already running keeps running: the earlier one wins.
                SessionState::Established => match self.srt[x.index()].detecting {
                    Some(_) => self.srt[x.index()].detecting = Some(Detecting::PeerDown),
                    None => self.arm_detection(now, x, Detecting::PeerDown, &mut out),
                },
                SessionState::Connect => self.set_idle(
                    now,
                    x,
                    IdleReason::PeerDown {
                        speaker: name.clone(),
                    },
                ),
                SessionState::Idle => {
                    let sess = &mut self.sessions[x.index()];
                    if sess.reason.as_ref().is_none_or(|r| !r.is_permanent()) {
                        sess.reason = Some(IdleReason::PeerDown {
                            speaker: name.clone(),
                        });
                    }
                }
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
        for p in self.rt[s.index()].originated.clone() {
            self.insert_local(now, s, p, &mut out);
        }
        let name = self.name(s);
        for x in self.rt[s.index()].all.clone() {
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
        let Some(&s) = self.by_device.get(&device) else {
            return out;
        };
        if self.rt[s.index()].removed {
            return out;
        }
        self.restart_removed(now, s, &mut out);
        let name = self.name(s);
        for x in self.rt[s.index()].all.clone() {
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
        let r = &mut self.rt[s.index()];
        r.removed = true;
        r.originated.clear();
        r.own.clear();
        self.last_state_change = now;
        self.note(now, BgpLogKind::SpeakerRemoved, name, "deleted".into());
        out
    }

    /// Links went down or up: latencies and next-hop costs change; sessions over a downed
    /// fabric link drop at once, multihop sessions that lost every path are timed out, and
    /// Idle sessions whose path is back reconnect at the next connect-retry tick.
    pub fn link_changed(&mut self, now: SimTime, topology: &Topology) -> Scheduled {
        let mut out = Vec::new();
        let new = Underlay::new(topology);
        let components_changed = !new.same_components(&self.underlay);
        self.underlay = new;
        self.recompute_latencies(topology);
        for i in 0..self.sessions.len() {
            let x = SessionId(i as u32);
            let sess = &self.sessions[i];
            if sess.b.is_none() || sess.reason.as_ref().is_some_and(|r| r.is_permanent()) {
                continue;
            }
            let has_path = sess.latency.is_some();
            let single_hop = sess.link.is_some();
            let fixable = matches!(
                sess.reason,
                Some(IdleReason::LinkDown | IdleReason::NoUnderlayPath)
            );
            match (sess.state, single_hop, has_path) {
                (SessionState::Established | SessionState::Connect, true, false) => {
                    self.session_down(now, x, IdleReason::LinkDown, &mut out);
                }
                (SessionState::Established, false, false) if self.srt[i].detecting.is_none() => {
                    self.arm_detection(now, x, Detecting::PathLost, &mut out);
                }
                (SessionState::Established, false, true)
                    if self.srt[i].detecting == Some(Detecting::PathLost) =>
                {
                    self.srt[i].detecting = None;
                    self.srt[i].detection += 1;
                }
                (SessionState::Connect, false, false) => {
                    self.set_idle(now, x, IdleReason::NoUnderlayPath);
                }
                (SessionState::Idle, _, true) if fixable => {
                    let at = self.next_retry(x, now);
                    self.connect(now, x, at, &mut out);
                }
                _ => {}
            }
        }
        // Next hops may have become (un)resolvable or nearer: re-decide where that matters.
        for s in 0..self.speakers.len() {
            if !self.rt[s].up {
                continue;
            }
            let affected: Vec<PrefixId> = self.rt[s]
                .rib
                .destinations
                .iter()
                .filter(|(_, d)| {
                    let mut hops = d.routes.iter().filter(|r| r.source() != RouteSource::Local);
                    match hops.next() {
                        None => false,
                        Some(first) => {
                            components_changed
                                || hops.any(|r| r.attrs.next_hop != first.attrs.next_hop)
                        }
                    }
                })
                .map(|(p, _)| p)
                .collect();
            for p in affected {
                let s = SpeakerId(s as u32);
                let before = self.best_of(s, p);
                self.decide(now, s, p, before, &mut out);
            }
        }
        out
    }

    // ----- queries -----

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
            .filter(|s| !s.reason.as_ref().is_some_and(IdleReason::is_gone))
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
                self.rt[s.index()]
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
        let mut out: Vec<RibEntry> = self.rt[s.index()]
            .rib
            .destinations
            .iter()
            .filter(|(_, d)| !d.routes.is_empty())
            .map(|(p, d)| {
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
        let mut out: Vec<BestRoute> = self.rt[s.index()]
            .rib
            .destinations
            .iter()
            .filter_map(|(p, d)| {
                let best = d.best()?;
                Some(BestRoute {
                    prefix: self.prefixes.net(p),
                    next_hop: best.attrs.next_hop,
                    next_hop_device: self.owner(best.attrs.next_hop),
                    local: best.source() == RouteSource::Local,
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
        self.rt[s.index()]
            .rib
            .destinations
            .iter()
            .filter_map(|(p, d)| {
                let best = d.best()?;
                (best.source() != RouteSource::Local)
                    .then(|| (p, self.prefixes.net(p), best.attrs.next_hop))
            })
            .collect()
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
            .map_or(0, |s| self.rt[s.index()].sent)
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
    pub fn take_fib_change_times(&mut self) -> Vec<SimTime> {
        std::mem::take(&mut self.fib_change_times)
    }

    /// The last instant something happened that the full log would have a line for.
    pub fn last_activity(&self) -> SimTime {
        self.last_activity
    }

    // ----- sessions -----

    pub(super) fn name(&self, s: SpeakerId) -> String {
        self.speakers[s.index()].name.clone()
    }

    pub(super) fn session_subject(&self, x: SessionId) -> String {
        let sess = &self.sessions[x.index()];
        let b = match sess.b {
            Some(b) => self.name(b),
            None => sess.b_address.to_string(),
        };
        format!("{} – {}", self.name(sess.a), b)
    }

    pub(super) fn note(
        &mut self,
        time: SimTime,
        kind: BgpLogKind,
        subject: String,
        outcome: String,
    ) {
        self.last_activity = self.last_activity.max(time);
        self.log.push(BgpLogEntry {
            time,
            kind,
            subject,
            outcome,
        });
    }

    pub(super) fn set_idle(&mut self, now: SimTime, x: SessionId, reason: IdleReason) {
        let sess = &mut self.sessions[x.index()];
        if sess.state != SessionState::Idle {
            self.last_state_change = now;
        }
        let was_established = sess.state == SessionState::Established;
        sess.state = SessionState::Idle;
        sess.reason = Some(reason);
        let r = &mut self.srt[x.index()];
        r.downs += u32::from(was_established);
        r.epoch += 1;
        r.detecting = None;
        r.idle_since = now;
        r.held = Default::default();
        r.mrai_armed = [false; 2];
        r.last_arrival = [SimTime::ZERO; 2];
    }

    /// Starts connecting `x` so that it is established at `at` plus one round trip, if both
    /// ends are up and a path joins them; otherwise leaves it Idle with the reason.
    pub(super) fn connect(&mut self, now: SimTime, x: SessionId, at: SimTime, out: &mut Scheduled) {
        let sess = &self.sessions[x.index()];
        let Some(b) = sess.b else { return };
        if sess.reason.as_ref().is_some_and(|r| r.is_permanent())
            || sess.state != SessionState::Idle
        {
            return;
        }
        let (a, latency, single_hop) = (sess.a, sess.latency, sess.link.is_some());
        for end in [a, b] {
            if !self.rt[end.index()].up {
                let speaker = self.name(end);
                self.sessions[x.index()].reason = Some(IdleReason::PeerDown { speaker });
                return;
            }
        }
        let Some(latency) = latency else {
            let reason = if single_hop {
                IdleReason::LinkDown
            } else {
                IdleReason::NoUnderlayPath
            };
            self.sessions[x.index()].reason = Some(reason);
            return;
        };
        let sess = &mut self.sessions[x.index()];
        sess.state = SessionState::Connect;
        sess.reason = None;
        let r = &mut self.srt[x.index()];
        r.epoch += 1;
        let epoch = r.epoch;
        let when = at + latency + latency;
        out.push((when, BgpEvent::SessionEstablished { session: x, epoch }));
        let subject = self.session_subject(x);
        self.note(
            now,
            BgpLogKind::SessionConnect,
            subject,
            format!("established at {when} if nothing fails"),
        );
    }

    fn on_established(&mut self, now: SimTime, x: SessionId, epoch: u32, out: &mut Scheduled) {
        if self.srt[x.index()].epoch != epoch
            || self.sessions[x.index()].state != SessionState::Connect
        {
            return;
        }
        let sess = &mut self.sessions[x.index()];
        sess.state = SessionState::Established;
        sess.reason = None;
        let latency = sess.latency.unwrap_or_default();
        let r = &mut self.srt[x.index()];
        r.mrai_until = [SimTime::ZERO; 2];
        r.established_at = now;
        r.latency_up = latency;
        self.last_state_change = now;
        let subject = self.session_subject(x);
        let sess = &self.sessions[x.index()];
        let outcome = format!(
            "{}{}",
            sess.session_type.as_str(),
            if sess.reflector_client() {
                ", route-reflector client"
            } else {
                ""
            }
        );
        self.note(now, BgpLogKind::SessionEstablished, subject, outcome);
        for side in 0..2 {
            self.full_table(now, x, side, out);
        }
    }

    /// The hold time in use on a session: the smaller of the two sides' (RFC 4271 §4.2).
    fn hold_time(&self, x: SessionId) -> SimDuration {
        let sess = &self.sessions[x.index()];
        let hold = |s: SpeakerId| {
            self.speakers[s.index()]
                .hold_time
                .unwrap_or(self.timers.hold)
        };
        let a = hold(sess.a);
        sess.b.map_or(a, |b| a.min(hold(b)))
    }

    /// The keepalive interval that goes with `hold`: the profile's, or a third of a smaller
    /// negotiated hold time (BIRD's default, `keepalive time` = hold / 3).
    fn keepalive_time(&self, hold: SimDuration) -> SimDuration {
        if hold == self.timers.hold {
            self.timers.keepalive
        } else {
            SimDuration::from_nanos(hold.as_nanos() / 3)
        }
    }

    /// When the side `side` of `x`, silent from `now` on, last got a message through: its last
    /// UPDATE's arrival, or the arrival of the last KEEPALIVE it sent before `now` (one every
    /// keepalive interval from establishment, each interval jittered as BIRD starts it).
    fn last_heard_from(&mut self, now: SimTime, x: SessionId, side: usize) -> SimTime {
        let hold = self.hold_time(x);
        let keepalive = self.keepalive_time(hold);
        let r = &self.srt[x.index()];
        let (start, latency, update) = (r.established_at, r.latency_up, r.last_arrival[side]);
        let mut sent = start;
        if keepalive > SimDuration::ZERO {
            if self.timers.jitter && self.jitter.is_some() {
                loop {
                    let next = sent + self.timer(keepalive);
                    if next >= now {
                        break;
                    }
                    sent = next;
                }
            } else if now > start {
                let n = (now - start).as_nanos().saturating_sub(1) / keepalive.as_nanos();
                sent = start + SimDuration::from_nanos(n * keepalive.as_nanos());
            }
        }
        (sent + latency).max(update)
    }

    /// Starts timing out a session whose peer (`PeerDown`) or path (`PathLost`) went silent
    /// at `now`: BFD detects after its detection time; otherwise a hold timer expires `hold`
    /// (jittered for BIRD) after the last message it heard, which may be before `now`.
    fn arm_detection(&mut self, now: SimTime, x: SessionId, why: Detecting, out: &mut Scheduled) {
        let at = if let Some(bfd) = self.settings.bfd {
            let r = &mut self.srt[x.index()];
            r.last_heard = now;
            r.hold_armed = bfd.detection_time();
            now + bfd.detection_time()
        } else {
            let sess = &self.sessions[x.index()];
            let silent: SmallVec<[usize; 2]> = match why {
                Detecting::PeerDown => [0, 1]
                    .into_iter()
                    .filter(|side| {
                        let s = if *side == 0 { Some(sess.a) } else { sess.b };
                        s.is_some_and(|s| !self.rt[s.index()].up)
                    })
                    .collect(),
                Detecting::PathLost => [0, 1].into_iter().collect(),
            };
            let hold = self.hold_time(x);
            let mut best: Option<(SimTime, SimTime, SimDuration)> = None;
            for side in silent {
                let heard = self.last_heard_from(now, x, side);
                let armed = self.timer(hold);
                let expiry = (heard + armed).max(now);
                if best.is_none_or(|(t, _, _)| expiry < t) {
                    best = Some((expiry, heard, armed));
                }
            }
            let (at, heard, armed) = best.unwrap_or((now + hold, now, hold));
            let r = &mut self.srt[x.index()];
            r.last_heard = heard;
            r.hold_armed = armed;
            at
        };
        let r = &mut self.srt[x.index()];
        r.detection += 1;
        r.detecting = Some(why);
        out.push((
            at,
            BgpEvent::HoldExpired {
                session: x,
                epoch: r.epoch,
                detection: r.detection,
            },
        ));
    }

    fn on_hold_expired(
        &mut self,
        now: SimTime,
        x: SessionId,
        epoch: u32,
        detection: u32,
        out: &mut Scheduled,
    ) {
        let r = &self.srt[x.index()];
        if r.epoch != epoch || r.detection != detection || r.detecting.is_none() {
            return;
        }
        let sess = &self.sessions[x.index()];
        let Some(b) = sess.b else { return };
        let sess_a = sess.a;
        let down = [sess.a, b].into_iter().find(|s| !self.rt[s.index()].up);
        let reason = match down {
            Some(s) => IdleReason::PeerDown {
                speaker: self.name(s),
            },
            None if sess.latency.is_none() => IdleReason::NoUnderlayPath,
            None => return,
        };
        let r = &self.srt[x.index()];
        let what = if self.settings.bfd.is_some() {
            format!("BFD detected the failure after {}", r.hold_armed)
        } else {
            format!(
                "hold timer ({} armed) expired, last message heard at {}",
                r.hold_armed, r.last_heard
            )
        };
        let subject = self.session_subject(x);
        self.note(
            now,
            BgpLogKind::SessionDown,
            subject,
            format!("{what}: {reason}"),
        );
        // A Calico node's BFD is `bfd graceful`: its side keeps the routes as stale. A hold
        // timer expiry, or a router's `bfd on`, drops them (and any left stale before).
        let mut graceful = false;
        for side in 0..2 {
            let end = if side == 0 { sess_a } else { b };
            if self.settings.bfd.is_some() && self.speakers[end.index()].node.is_some() {
                self.start_helping(now, x, side, "BFD session down", out);
                graceful = true;
            } else {
                self.restart.forget(x, side);
            }
        }
        self.session_down(now, x, reason, out);
        if !graceful {
            self.error_wait(now, x);
        }
    }

    /// Ends an Established (or connecting) session: both live ends drop the routes learned
    /// on it and re-run the decision for those prefixes.
    pub(super) fn session_down(
        &mut self,
        now: SimTime,
        x: SessionId,
        reason: IdleReason,
        out: &mut Scheduled,
    ) {
        let sess = &self.sessions[x.index()];
        let was_established = sess.state == SessionState::Established;
        let ends: Vec<SpeakerId> = std::iter::once(sess.a).chain(sess.b).collect();
        let subject = self.session_subject(x);
        self.note(now, BgpLogKind::SessionDown, subject, reason.to_string());
        self.set_idle(now, x, reason);
        if !was_established {
            return;
        }
        for (side, s) in ends.into_iter().enumerate() {
            // A graceful-restart helper keeps them as stale (`restart.rs`).
            if !self.rt[s.index()].up || self.restart.keeps(x, side) {
                continue;
            }
            let source = RouteSource::Peer(x);
            for p in self.routes_from(s, source) {
                self.set_route(now, s, p, source, None, out);
            }
        }
    }

    /// The prefixes for which speaker `s` holds a route from `source`.
    pub(super) fn routes_from(&self, s: SpeakerId, source: RouteSource) -> Vec<PrefixId> {
        self.rt[s.index()]
            .rib
            .destinations
            .iter()
            .filter(|(_, d)| d.routes.iter().any(|r| r.source() == source))
            .map(|(p, _)| p)
            .collect()
    }

    /// Some FIB changed at `now` (for `convergedWithin`).
    pub(super) fn note_fib_change(&mut self, now: SimTime) {
        if self.fib_change_times.last() != Some(&now) {
            self.fib_change_times.push(now);
        }
    }

    /// The first connect-retry tick at or after `now`, counted from when the session went Idle
    /// (BIRD's retry interval jittered once for the wait), and not before an error wait ends.
    fn next_retry(&mut self, x: SessionId, now: SimTime) -> SimTime {
        let retry = self.timer(self.timers.connect_retry).as_nanos();
        let r = &self.srt[x.index()];
        let since = r.idle_since.max(r.error_until);
        if retry == 0 || now < since {
            return now.max(since);
        }
        let elapsed = (now - since).as_nanos();
        let ticks = elapsed.div_ceil(retry).max(1);
        since + SimDuration::from_nanos(ticks.saturating_mul(retry))
    }

    /// A session ended in an error (its hold timer or BFD): BIRD restarts it only after the
    /// error wait, which doubles when errors follow each other within `Timers::ERROR_FORGET`
    /// (`bgp_update_startup_delay`).
    fn error_wait(&mut self, now: SimTime, x: SessionId) {
        let (min, max) = (self.timers.error_wait, self.timers.error_wait_max);
        if min == SimDuration::ZERO {
            return;
        }
        let r = &self.srt[x.index()];
        let recent = r.last_error.is_some_and(|t| now - t < Timers::ERROR_FORGET);
        let delay = if recent && r.startup_delay > SimDuration::ZERO {
            r.startup_delay.saturating_mul(2).min(max)
        } else {
            min
        };
        let armed = self.timer(delay);
        let r = &mut self.srt[x.index()];
        r.startup_delay = delay;
        r.last_error = Some(now);
        r.error_until = now + armed;
    }

    fn recompute_latencies(&mut self, topology: &Topology) {
        let mut pairs = Vec::new();
        let mut which = Vec::new();
        for (i, sess) in self.sessions.iter_mut().enumerate() {
            let Some(b) = sess.b else { continue };
            if let Some(link) = sess.link {
                let l = &topology.links[link.index()];
                sess.latency = l.up.then_some(l.latency);
            } else {
                pairs.push((
                    self.speakers[sess.a.index()].device,
                    self.speakers[b.index()].device,
                ));
                which.push(i);
            }
        }
        for (i, latency) in which.into_iter().zip(pair_latencies(topology, &pairs)) {
            self.sessions[i].latency = latency;
        }
    }

    // ----- speakers -----

    /// Forgets everything a speaker knew (a crash or a deletion).
    pub(super) fn wipe(&mut self, s: SpeakerId) {
        let r = &mut self.rt[s.index()];
        r.up = false;
        r.incarnation += 1;
        r.inbox.clear();
        r.processing = false;
        r.dirty.clear();
        r.flush_scheduled = false;
        r.rib.clear();
    }

    pub(super) fn insert_local(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        out: &mut Scheduled,
    ) {
        let attrs = Arc::new(PathAttributes::local(self.speakers[s.index()].address));
        self.set_route(now, s, p, RouteSource::Local, Some(attrs), out);
    }

    /// The speaker's own set changed around `net`: routes inside it may now pass or fail
    /// Calico's export filter (only matters if the speaker ever passes learned routes on).
    fn refilter(&mut self, now: SimTime, s: SpeakerId, net: IpNet, out: &mut Scheduled) {
        let r = &self.rt[s.index()];
        if self.speakers[s.index()].is_router() || (r.ebgp.is_empty() && r.clients.is_empty()) {
            return;
        }
        let inside: Vec<PrefixId> = r
            .rib
            .destinations
            .keys()
            .filter(|p| {
                let n = self.prefixes.net(*p);
                n != net && net.contains(&n)
            })
            .collect();
        for p in inside {
            self.schedule_export(now, s, p, out);
        }
    }

    // ----- receiving -----

    /// Queues each arriving UPDATE at its receiver; receivers that were idle start on it
    /// and finish together (one event per finishing instant, in arrival order).
    fn on_deliver(&mut self, now: SimTime, batch: BatchId, out: &mut Scheduled) {
        let Some(deliveries) = self.in_flight.take(batch) else {
            return;
        };
        let mut finishing: Vec<(SimTime, Vec<(SpeakerId, u32)>)> = Vec::new();
        for Delivery { epoch, update } in deliveries {
            if self.srt[update.session.index()].epoch != epoch {
                continue;
            }
            let to = update.to;
            let cost = self.processing_cost(&update);
            let r = &mut self.rt[to.index()];
            if !r.up {
                continue;
            }
            r.inbox.push_back((epoch, update));
            if !r.processing {
                r.processing = true;
                let at = now + cost;
                let entry = (to, r.incarnation);
                match finishing.iter_mut().find(|(t, _)| *t == at) {
                    Some((_, group)) => group.push(entry),
                    None => finishing.push((at, vec![entry])),
                }
            }
        }
        for (at, group) in finishing {
            let event = match group[..] {
                [(speaker, incarnation)] => BgpEvent::ProcessNext {
                    speaker,
                    incarnation,
                },
                _ => BgpEvent::ProcessMany {
                    batch: self.finishing.put(group),
                },
            };
            out.push((at, event));
        }
    }

    fn processing_cost(&self, update: &Update) -> SimDuration {
        self.settings.processing_delay
            + self
                .settings
                .per_prefix_delay
                .saturating_mul(update.prefix_count() as u64)
    }

    fn on_process_next(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        incarnation: u32,
        out: &mut Scheduled,
    ) {
        let r = &mut self.rt[s.index()];
        if r.incarnation != incarnation || !r.up {
            return;
        }
        let Some((epoch, update)) = r.inbox.pop_front() else {
            r.processing = false;
            return;
        };
        let x = update.session;
        if self.srt[x.index()].epoch == epoch
            && self.sessions[x.index()].state == SessionState::Established
        {
            self.apply(now, s, update, out);
        }
        let r = &mut self.rt[s.index()];
        let next = r.inbox.front().map(|(_, u)| u.prefix_count());
        match next {
            Some(n) => {
                let cost = self.settings.processing_delay
                    + self.settings.per_prefix_delay.saturating_mul(n as u64);
                out.push((
                    now + cost,
                    BgpEvent::ProcessNext {
                        speaker: s,
                        incarnation,
                    },
                ));
            }
            None => {
                r.processing = false;
                if !r.dirty.is_empty() && !r.flush_scheduled {
                    r.flush_scheduled = true;
                    out.push((
                        now,
                        BgpEvent::Flush {
                            speaker: s,
                            incarnation,
                        },
                    ));
                }
            }
        }
    }

    /// Applies a received UPDATE to the Adj-RIB-In and re-runs the decision for its prefixes.
    fn apply(&mut self, now: SimTime, s: SpeakerId, update: Update, out: &mut Scheduled) {
        let x = update.session;
        let source = RouteSource::Peer(x);
        let sess = &self.sessions[x.index()];
        let ebgp = sess.session_type == SessionType::Ebgp;
        let from_client = sess.side_of(s).is_some_and(|side| sess.reflects[side]);
        self.rt[s.index()].received += 1;
        for &p in &update.body.withdrawn {
            self.set_route(now, s, p, source, None, out);
        }
        for (p, attrs) in &update.body.announced {
            let (p, attrs) = (*p, attrs.clone());
            match import_check(&attrs, ebgp, from_client, &self.speakers[s.index()]) {
                Err(why) => {
                    if self.options.routes {
                        let subject = format!("{} <- {}", self.name(s), self.name(update.from));
                        let outcome = format!("{} rejected: {why}", self.prefixes.net(p));
                        self.note(now, BgpLogKind::RouteRejected, subject, outcome);
                    } else {
                        self.last_activity = self.last_activity.max(now);
                    }
                    self.set_route(now, s, p, source, None, out);
                }
                Ok(()) => self.set_route(now, s, p, source, Some(attrs), out),
            }
        }
        let body = &update.body;
        if body.end_of_rib || !self.restart.is_idle() {
            let touched: Vec<PrefixId> = body
                .withdrawn
                .iter()
                .copied()
                .chain(body.announced.iter().map(|(p, _)| *p))
                .collect();
            self.restart_on_update(now, s, x, &touched, body.end_of_rib, out);
        }
    }

    // ----- deciding -----

    /// The Loc-RIB route for `p`: its source and attributes.
    fn best_of(&self, s: SpeakerId, p: PrefixId) -> Option<(RouteSource, Attrs)> {
        let best = self.rt[s.index()].rib.destinations.get(&p)?.best()?;
        Some((best.source(), best.attrs.clone()))
    }

    /// Sets (or, with `None`, removes) the candidate from `source` and re-runs the decision
    /// if it changed.
    pub(super) fn set_route(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        source: RouteSource,
        attrs: Option<Attrs>,
        out: &mut Scheduled,
    ) {
        let before = self.best_of(s, p);
        let rib = &mut self.rt[s.index()].rib;
        let change = match attrs {
            Some(attrs) => rib.destinations.entry(p).upsert(source, attrs),
            None => {
                let removed = rib
                    .destinations
                    .get_mut(&p)
                    .is_some_and(|d| d.remove(source));
                if removed {
                    Upsert::Replaced
                } else {
                    Upsert::Unchanged
                }
            }
        };
        if let Upsert::Inserted(i) = change
            && self.admit(s, p, i)
        {
            // A new candidate that loses to the best changes no Loc-RIB and no export.
            return;
        }
        if change != Upsert::Unchanged {
            self.decide(now, s, p, before, out);
        }
    }

    /// The incremental decision for a new candidate (see [`decision::admit`]).
    fn admit(&mut self, s: SpeakerId, p: PrefixId, new: usize) -> bool {
        self.deciding(s, |rib, ctx| {
            decision::admit(&mut rib.destinations.entry(p).routes, new, ctx)
        })
    }

    /// Runs `f` on speaker `s`'s RIB with the speaker's decision context.
    fn deciding<R>(&mut self, s: SpeakerId, f: impl FnOnce(&mut Rib, &mut Ctx<'_>) -> R) -> R {
        let BgpEngine {
            speakers,
            rt,
            sessions,
            by_address,
            underlay,
            ..
        } = &mut *self;
        let mut ctx = Ctx {
            me: &speakers[s.index()],
            speakers,
            sessions,
            by_address,
            underlay,
        };
        f(&mut rt[s.index()].rib, &mut ctx)
    }

    /// Runs the decision process for one prefix of one speaker; a best route different from
    /// `before` is recorded and scheduled for export.
    fn decide(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        before: Option<(RouteSource, Attrs)>,
        out: &mut Scheduled,
    ) {
        let changed = self.deciding(s, |rib, ctx| {
            // Not `get_mut`: a destination whose last candidate was just removed is empty,
            // and its best route going away is the change to record.
            let dest = rib.destinations.entry(p);
            decision::run(&mut dest.routes, ctx);
            let after = dest.best().map(|r| (r.source(), r.attrs.clone()));
            if dest.is_empty() {
                rib.destinations.remove(&p);
            }
            let changed = match (&before, &after) {
                (None, None) => false,
                (Some((sa, aa)), Some((sb, ab))) => sa != sb || !(Arc::ptr_eq(aa, ab) || aa == ab),
                _ => true,
            };
            // What a FIB is built from: the next hop of a learned best route (an originated
            // one is the node's own blackhole or pod route, which IPAM decides).
            let fib = |b: &Option<(RouteSource, Attrs)>| {
                b.as_ref()
                    .filter(|(src, _)| *src != RouteSource::Local)
                    .map(|(_, a)| a.next_hop)
            };
            let fib_changed = fib(&before) != fib(&after);
            if changed {
                match (before.is_some(), after.is_some()) {
                    (false, true) => rib.loc_rib_len += 1,
                    (true, false) => rib.loc_rib_len -= 1,
                    _ => {}
                }
            }
            (changed, fib_changed)
        });
        let (changed, fib_changed) = changed;
        if !changed {
            return;
        }
        self.last_rib_change = now;
        let net = self.prefixes.net(p);
        // A restarting speaker forwards with its kernel's routes until recovery ends
        // (`restart.rs`), which then notes the change if there is one.
        if fib_changed && self.restart.kernel(s).is_none() {
            self.note_fib_change(now);
        }
        if self.options.routes {
            let outcome = match self.rt[s.index()]
                .rib
                .destinations
                .get(&p)
                .and_then(|d| d.best())
            {
                Some(best) => format!(
                    "{net} {} ({})",
                    best.attrs,
                    match best.status {
                        RouteStatus::Best(why) => why.to_string(),
                        _ => String::new(),
                    }
                ),
                None => format!("{net} unreachable"),
            };
            let subject = self.name(s);
            self.note(now, BgpLogKind::BestPathChanged, subject, outcome);
        } else {
            self.last_activity = self.last_activity.max(now);
        }
        self.schedule_export(now, s, p, out);
    }

    // ----- sending -----

    /// What the speaker would advertise for `p` now.
    fn current_advertisement(&self, s: SpeakerId, p: PrefixId) -> Option<Advertised> {
        let best = self.rt[s.index()].rib.destinations.get(&p)?.best()?;
        let exportable = self.speakers[s.index()].is_router()
            || calico_export_filter(self.prefixes.net(p), &self.rt[s.index()].own, &self.pools)
                .is_ok();
        Some(Advertised {
            source: best.source(),
            attrs: best.attrs.clone(),
            exportable,
        })
    }

    /// Which of the speaker's session lists a route of this class can go to.
    fn visit_mask(&self, s: SpeakerId, adv: &Option<Advertised>) -> u8 {
        match adv {
            Some(a) if a.exportable => match self.class_of(s, a.source) {
                RouteClass::IbgpFromNonClient => VISIT_EBGP | VISIT_CLIENTS,
                _ => VISIT_ALL,
            },
            _ => 0,
        }
    }

    fn masked_lists(&self, s: SpeakerId, mask: u8) -> u8 {
        let r = &self.rt[s.index()];
        let mut m = 0;
        if !r.ebgp.is_empty() {
            m |= VISIT_EBGP;
        }
        if !r.clients.is_empty() {
            m |= VISIT_CLIENTS;
        }
        if !r.non_clients.is_empty() {
            m |= VISIT_NON_CLIENTS;
        }
        m & mask
    }

    /// Marks `p` for the next flush, unless no peer could see a difference, in which case
    /// the advertised state simply moves on (a full-mesh node receiving a route it passes to
    /// nobody costs nothing more).
    pub(super) fn schedule_export(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        p: PrefixId,
        out: &mut Scheduled,
    ) {
        if self.rt[s.index()].dirty.contains(&p) {
            return;
        }
        if !self.could_reach_a_peer(s, p) {
            // Every peer's view is "nothing" before and after (the export filter could only
            // narrow that further): a client of reflectors or a full-mesh node receiving a
            // route it passes to nobody costs nothing more.
            let rib = &mut self.rt[s.index()].rib;
            if let Some(d) = rib.destinations.get_mut(&p) {
                d.advertised = None;
                if d.is_empty() {
                    rib.destinations.remove(&p);
                }
            }
            return;
        }
        let new = self.current_advertisement(s, p);
        let old = self.rt[s.index()]
            .rib
            .destinations
            .get(&p)
            .and_then(|d| d.advertised.as_deref().cloned());
        if Advertised::same(&old, &new) {
            return;
        }
        let mask = self.visit_mask(s, &old) | self.visit_mask(s, &new);
        if self.masked_lists(s, mask) == 0 {
            // No session could see either version: every peer's view is "nothing" before
            // and after, which `None` records without keeping a copy.
            let rib = &mut self.rt[s.index()].rib;
            if let Some(d) = rib.destinations.get_mut(&p) {
                d.advertised = None;
                if d.is_empty() {
                    rib.destinations.remove(&p);
                }
            }
            return;
        }
        let r = &mut self.rt[s.index()];
        r.dirty.insert(p);
        // A speaker with more messages waiting sends once it has worked through them (BIRD
        // exports after its event loop drains its input), so a burst leaves as one UPDATE
        // per peer; `on_process_next` schedules the flush when the queue empties.
        let busy = r.processing && !r.inbox.is_empty();
        if !r.flush_scheduled && !busy {
            r.flush_scheduled = true;
            out.push((
                now,
                BgpEvent::Flush {
                    speaker: s,
                    incarnation: r.incarnation,
                },
            ));
        }
    }

    /// Whether the best route for `p`, or what was last advertised for it, could go to any
    /// session of `s` by the reflection rules alone (before the export filter).
    fn could_reach_a_peer(&self, s: SpeakerId, p: PrefixId) -> bool {
        let Some(d) = self.rt[s.index()].rib.destinations.get(&p) else {
            return false;
        };
        let reach = |source: RouteSource| match self.class_of(s, source) {
            RouteClass::IbgpFromNonClient => VISIT_EBGP | VISIT_CLIENTS,
            _ => VISIT_ALL,
        };
        let mut mask = d.best().map_or(0, |b| reach(b.source()));
        if let Some(a) = d.advertised.as_deref().filter(|a| a.exportable) {
            mask |= reach(a.source);
        }
        self.masked_lists(s, mask) != 0
    }

    fn class_of(&self, s: SpeakerId, source: RouteSource) -> RouteClass {
        match source {
            RouteSource::Local => RouteClass::Local,
            RouteSource::Peer(x) => {
                let sess = &self.sessions[x.index()];
                if sess.session_type == SessionType::Ebgp {
                    RouteClass::Ebgp
                } else if sess.side_of(s).is_some_and(|side| sess.reflects[side]) {
                    RouteClass::IbgpFromClient
                } else {
                    RouteClass::IbgpFromNonClient
                }
            }
        }
    }

    fn export_session(&self, x: SessionId, side: usize) -> ExportSession {
        let sess = &self.sessions[x.index()];
        let peer_as = sess
            .peer_of(side)
            .map_or(0, |p| self.speakers[p.index()].as_number);
        ExportSession {
            id: x,
            ebgp: sess.session_type == SessionType::Ebgp,
            peer_is_client: sess.reflects[side],
            peer_as,
            shared_subnet: sess.shared_subnet,
            keep_next_hop: sess.keep_next_hop[side],
            cluster_id: if sess.reflects[side] {
                let me = if side == 0 { Some(sess.a) } else { sess.b };
                me.and_then(|m| self.speakers[m.index()].cluster_id)
            } else {
                None
            },
        }
    }

    /// The attributes speaker `s` sends for `adv` on session `x` (its side `side`), or
    /// `None` if it sends nothing; `memo` shares one `Arc` among sessions with the same key.
    fn export_one(
        &self,
        s: SpeakerId,
        x: SessionId,
        side: usize,
        adv: Option<&Advertised>,
        memo: &mut Vec<(ExportKey, Attrs)>,
    ) -> Option<Attrs> {
        let adv = adv.filter(|a| a.exportable)?;
        let me = &self.speakers[s.index()];
        let learned_on = match adv.source {
            RouteSource::Local => None,
            RouteSource::Peer(y) => Some(y),
        };
        let key = may_send(
            me.is_router(),
            !self.rt[s.index()].clients.is_empty(),
            self.class_of(s, adv.source),
            learned_on,
            &adv.attrs,
            &self.export_session(x, side),
        )
        .ok()?;
        if let Some((_, a)) = memo.iter().find(|(k, _)| *k == key) {
            return Some(a.clone());
        }
        let learned_from = match learned_on {
            None => me.router_id,
            Some(y) => {
                let sess = &self.sessions[y.index()];
                sess.side_of(s)
                    .and_then(|side| sess.peer_of(side))
                    .map_or(me.router_id, |p| self.speakers[p.index()].router_id)
            }
        };
        let attrs = Arc::new(export_attrs(
            &adv.attrs,
            key,
            me,
            learned_from,
            self.ibgp_local_pref,
        ));
        memo.push((key, attrs.clone()));
        Some(attrs)
    }

    fn mrai(&self, x: SessionId) -> SimDuration {
        match self.sessions[x.index()].session_type {
            SessionType::Ebgp => self.timers.mrai_ebgp,
            SessionType::Ibgp => self.timers.mrai_ibgp,
        }
    }

    /// Sends every change marked since the last flush, one UPDATE per peer.
    fn flush(&mut self, now: SimTime, s: SpeakerId, out: &mut Scheduled) {
        let dirty = std::mem::take(&mut self.rt[s.index()].dirty);
        let mut batches = Batches::default();
        for p in dirty {
            batches.next_prefix();
            let new = self.current_advertisement(s, p);
            let old = self.rt[s.index()]
                .rib
                .destinations
                .get(&p)
                .and_then(|d| d.advertised.as_deref().cloned());
            if Advertised::same(&old, &new) {
                continue;
            }
            {
                let nowhere = self.masked_lists(s, self.visit_mask(s, &new)) == 0;
                let rib = &mut self.rt[s.index()].rib;
                let d = rib.destinations.entry(p);
                d.advertised = if nowhere {
                    None
                } else {
                    new.clone().map(Box::new)
                };
                if d.is_empty() {
                    rib.destinations.remove(&p);
                }
            }
            let mask = self.masked_lists(s, self.visit_mask(s, &old) | self.visit_mask(s, &new));
            let r = &self.rt[s.index()];
            let lists: [(u8, &Vec<SessionId>); 3] = [
                (VISIT_EBGP, &r.ebgp),
                (VISIT_CLIENTS, &r.clients),
                (VISIT_NON_CLIENTS, &r.non_clients),
            ];
            let targets: Vec<SessionId> = lists
                .iter()
                .filter(|(bit, _)| mask & bit != 0)
                .flat_map(|(_, l)| l.iter().copied())
                .filter(|x| self.sessions[x.index()].state == SessionState::Established)
                .collect();
            let (mut memo_old, mut memo_new) = (Vec::new(), Vec::new());
            for x in targets {
                let Some(side) = self.sessions[x.index()].side_of(s) else {
                    continue;
                };
                let e_old = self.export_one(s, x, side, old.as_ref(), &mut memo_old);
                let e_new = self.export_one(s, x, side, new.as_ref(), &mut memo_new);
                self.queue_change(now, x, side, p, e_old, e_new, &mut batches, out);
            }
        }
        // Peers getting the same change share one body.
        let mut arrivals = Arrivals::default();
        let mut last: Option<Arc<UpdateBody>> = None;
        for (x, pending) in batches.into_sorted() {
            let body = match last {
                Some(prev) if pending.same_as(&prev) => prev,
                _ => Arc::new(pending.into_body()),
            };
            self.send(now, s, x, body.clone(), &mut arrivals);
            last = Some(body);
        }
        self.dispatch(arrivals, out);
    }

    /// Decides whether one prefix's change goes to one peer now, is held by MRAI, or is no
    /// change for that peer at all.
    #[allow(clippy::too_many_arguments)]
    fn queue_change(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        p: PrefixId,
        e_old: Option<Attrs>,
        e_new: Option<Attrs>,
        batches: &mut Batches,
        out: &mut Scheduled,
    ) {
        let mrai = self.mrai(x);
        let r = &mut self.srt[x.index()];
        let peer_view = match r.held[side].get(&p) {
            Some(v) => v.clone(),
            None => e_old,
        };
        if same_attrs(&peer_view, &e_new) {
            r.held[side].remove(&p);
            return;
        }
        let hold = mrai > SimDuration::ZERO && e_new.is_some() && now < r.mrai_until[side];
        if hold {
            r.held[side].insert(p, peer_view);
            if !r.mrai_armed[side] {
                r.mrai_armed[side] = true;
                out.push((
                    r.mrai_until[side],
                    BgpEvent::MraiExpired {
                        session: x,
                        side: side as u8,
                        epoch: r.epoch,
                    },
                ));
            }
            return;
        }
        r.held[side].remove(&p);
        let batch = batches.entry(x);
        match e_new {
            Some(a) => batch.announced.push((p, a)),
            None => batch.withdrawn.push(p),
        }
    }

    fn on_mrai_expired(
        &mut self,
        now: SimTime,
        x: SessionId,
        side: usize,
        epoch: u32,
        out: &mut Scheduled,
    ) {
        let r = &mut self.srt[x.index()];
        if r.epoch != epoch || side > 1 {
            return;
        }
        r.mrai_armed[side] = false;
        let held = std::mem::take(&mut r.held[side]);
        let sess = &self.sessions[x.index()];
        let s = if side == 0 { Some(sess.a) } else { sess.b };
        let Some(s) = s else { return };
        if sess.state != SessionState::Established || !self.rt[s.index()].up {
            return;
        }
        let mut batch = UpdateBody::default();
        for (p, peer_view) in held {
            let adv = self.rt[s.index()]
                .rib
                .destinations
                .get(&p)
                .and_then(|d| d.advertised.as_deref().cloned());
            let now_view = self.export_one(s, x, side, adv.as_ref(), &mut Vec::new());
            if same_attrs(&peer_view, &now_view) {
                continue;
            }
            match now_view {
                Some(a) => batch.announced.push((p, a)),
                None => batch.withdrawn.push(p),
            }
        }
        self.send_one(now, s, x, batch, out);
    }

    fn full_table(&mut self, now: SimTime, x: SessionId, side: usize, out: &mut Scheduled) {
        let sess = &self.sessions[x.index()];
        let s = if side == 0 { Some(sess.a) } else { sess.b };
        let Some(s) = s else { return };
        let mut batch = UpdateBody::default();
        let r = &self.rt[s.index()];
        // A plain iBGP speaker (no clients, no eBGP) passes on nothing it learned: only its
        // own prefixes can go, which spares a full-mesh node a walk of its whole table.
        let own_only = r.clients.is_empty() && r.ebgp.is_empty();
        let mut add = |p: PrefixId, adv: Option<&Advertised>| {
            if let Some(a) = self.export_one(s, x, side, adv, &mut Vec::new()) {
                batch.announced.push((p, a));
            }
        };
        if own_only {
            for p in &r.originated {
                if let Some(d) = r.rib.destinations.get(p) {
                    add(*p, d.advertised.as_deref());
                }
            }
        } else {
            for (p, d) in r.rib.destinations.iter() {
                add(p, d.advertised.as_deref());
            }
        }
        // End-of-RIB rides on the table; alone only when a peer waits for it (`restart.rs`).
        batch.end_of_rib = !batch.announced.is_empty() || self.restart_wants_end_of_rib(x, side);
        self.send_one(now, s, x, batch, out);
    }

    /// Sends one UPDATE on its own.
    fn send_one(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        x: SessionId,
        body: UpdateBody,
        out: &mut Scheduled,
    ) {
        let mut arrivals = Arrivals::default();
        self.send(now, s, x, Arc::new(body), &mut arrivals);
        self.dispatch(arrivals, out);
    }

    /// Schedules one `Deliver` per arrival instant.
    fn dispatch(&mut self, arrivals: Arrivals, out: &mut Scheduled) {
        for (at, deliveries) in arrivals.groups {
            let batch = self.in_flight.put(deliveries);
            out.push((at, BgpEvent::Deliver { batch }));
        }
    }

    /// Puts an UPDATE from `s` on session `x` on its way: it arrives after the session's
    /// one-way latency, never before an earlier message on the same session.
    fn send(
        &mut self,
        now: SimTime,
        s: SpeakerId,
        x: SessionId,
        body: Arc<UpdateBody>,
        arrivals: &mut Arrivals,
    ) {
        if body.is_empty() {
            return;
        }
        let sess = &self.sessions[x.index()];
        let Some(side) = sess.side_of(s) else { return };
        let Some(to) = sess.peer_of(side) else { return };
        let latency = sess.latency.unwrap_or_default();
        let mrai = self.mrai(x);
        let r = &mut self.srt[x.index()];
        if mrai > SimDuration::ZERO && !body.announced.is_empty() {
            r.mrai_until[side] = now + mrai;
        }
        let epoch = r.epoch;
        let arrival = (now + latency).max(r.last_arrival[side]);
        r.last_arrival[side] = arrival;
        let update = Update {
            session: x,
            from: s,
            to,
            sent_at: now,
            body,
        };
        if self.options.updates {
            let subject = format!("{} -> {}", self.name(s), self.name(to));
            let outcome = self.describe_update(&update);
            self.note(now, BgpLogKind::Update, subject, outcome);
        } else {
            self.last_activity = self.last_activity.max(now);
        }
        self.rt[s.index()].sent += 1;
        self.total_updates += 1;
        arrivals.add(arrival, Delivery { epoch, update });
    }

    fn describe_update(&self, u: &Update) -> String {
        const SHOWN: usize = 3;
        let mut parts = Vec::new();
        let list = |ps: &mut dyn Iterator<Item = PrefixId>, n: usize| {
            let mut v: Vec<String> = ps
                .take(SHOWN)
                .map(|p| self.prefixes.net(p).to_string())
                .collect();
            if n > SHOWN {
                v.push(format!("+{} more", n - SHOWN));
            }
            v.join(" ")
        };
        let b = &u.body;
        if !b.announced.is_empty() {
            let text = list(&mut b.announced.iter().map(|(p, _)| *p), b.announced.len());
            parts.push(format!("announce {text}"));
        }
        if !b.withdrawn.is_empty() {
            let text = list(&mut b.withdrawn.iter().copied(), b.withdrawn.len());
            parts.push(format!("withdraw {text}"));
        }
        parts.join("; ")
    }

    fn owner(&self, address: IpAddr) -> Option<DeviceId> {
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

/// Files session `s` in its speakers' session lists, by how routes flow to the peer.
pub(super) fn file_session(rt: &mut [SpeakerRt], s: &Session) {
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

fn same_attrs(a: &Option<Attrs>, b: &Option<Attrs>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
        _ => false,
    }
}

/// The decision process's view of one speaker.
struct Ctx<'a> {
    me: &'a Speaker,
    speakers: &'a [Speaker],
    sessions: &'a [Session],
    by_address: &'a HashMap<IpAddr, SpeakerId>,
    underlay: &'a mut Underlay,
}

impl Ctx<'_> {
    fn next_hop_device(&self, next_hop: IpAddr) -> Option<DeviceId> {
        self.by_address
            .get(&next_hop)
            .map(|s| self.speakers[s.index()].device)
    }
}

impl DecisionContext for Ctx<'_> {
    fn local_as(&self) -> u32 {
        self.me.as_number
    }

    fn source(&self, source: RouteSource) -> SourceInfo {
        let me = self.me;
        let own = SourceInfo {
            local: true,
            ebgp: false,
            peer_router_id: me.router_id,
            peer_address: me.address,
        };
        let RouteSource::Peer(x) = source else {
            return own;
        };
        let sess = &self.sessions[x.index()];
        let Some(peer) = sess.side_of(me.id).and_then(|side| sess.peer_of(side)) else {
            return own;
        };
        let p = &self.speakers[peer.index()];
        SourceInfo {
            local: false,
            ebgp: sess.session_type == SessionType::Ebgp,
            peer_router_id: p.router_id,
            peer_address: p.address,
        }
    }

    /// A Calico node resolves BGP next hops through its kernel table, which always has the
    /// default route via the rack gateway (BIRD's `gateway recursive` on multihop sessions),
    /// so a next hop stays resolvable when the underlay path to it is cut: the packets then
    /// die at the cut, as they would in a real cluster until the hold timer ends the session.
    /// Routers resolve through their fabric routes: the next hop must be reachable.
    fn resolvable(&mut self, next_hop: IpAddr) -> bool {
        if self.me.node.is_some() {
            return true;
        }
        self.next_hop_device(next_hop)
            .is_some_and(|d| self.underlay.connected(self.me.device, d))
    }

    fn igp_cost(&mut self, next_hop: IpAddr) -> Option<u64> {
        let d = self.next_hop_device(next_hop)?;
        self.underlay.cost(self.me.device, d)
    }
}
