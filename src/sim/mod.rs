//! The discrete-event engine: a closed [`Event`] enum, a (time, sequence) queue, seeded
//! random streams, and the loop that applies events to the simulated [`World`].
//!
//! Invariants (ARCHITECTURE.md): time is an integer count of nanoseconds and only moves
//! forward; events at the same instant run in the order they were scheduled; nothing reads a
//! wall clock; all randomness comes from [`rng::Stream`]s keyed by the scenario seed; every
//! collection that is iterated is ordered. Hence the same scenario and seed give the same
//! event log and snapshots, byte for byte.
//!
//! Snapshots: [`Simulation::run_until`] processes every event with time ≤ T, so a snapshot
//! taken right after sees exactly "the state after every event with time ≤ T" (SPEC §2.6).

pub mod addressing;
pub mod cluster;
pub mod dataplane;
pub mod events;
pub mod expect;
pub mod external_expect;
pub mod placement;
pub mod policy;
pub mod progress;
pub mod queue;
pub mod rng;
pub mod service_expect;
pub mod services;
pub mod snapshot;

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use crate::bgp::{self, BgpEngine, BgpEvent};
use crate::ipam::calico::IpamChange;
use crate::model::action::{Action, DeletePods};
use crate::model::expect::{Check, RouteTable};
use crate::model::network::{CalicoBackend, CalicoProfile, Cni, Network};
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{DeviceId, NodeId, Os, Topology};
use crate::model::workload::{PodStatus, WorkloadKind};
use crate::scenario::Scenario;
use crate::scenario::kinds::{BgpConfiguration, BgpPeer, ResourceSpec};
use addressing::{Addressing, Namespaces, PodRequest};
use cluster::{Cluster, PodId, PodSlot};
use queue::EventQueue;
use rng::{Purpose, Stream};
pub use snapshot::Snapshot;

/// Pods are created one every 10 ms of simulated time (SPEC §2.4).
pub const POD_CREATION_INTERVAL: SimDuration = SimDuration::from_millis(10);

/// Everything that can happen in a simulation.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A scenario action (SPEC §2.5), by index in [`Scenario::actions`].
    Scenario(usize),
    /// A pod is created: scheduled on a node, then given an address.
    CreatePod { workload: usize, slot: PodSlot },
    /// Something freed capacity or addresses: Pending pods try again.
    RetryPending,
    /// kube-controllers' IPAM garbage collection check (REFERENCE §1.5).
    IpamGc,
    /// Calico's VXLAN backend: a route reaches every node through the datastore.
    Datastore {
        prefix: IpNet,
        next_hop: Option<IpAddr>,
    },
    /// Something the BGP engine scheduled (a session coming up, an UPDATE arriving…).
    Bgp(BgpEvent),
}

impl Event {
    /// What the event is, for a person: `a BGP hold timer`.
    fn describe(&self) -> &'static str {
        match self {
            Event::Scenario(_) => "a scenario event",
            Event::CreatePod { .. } => "a pod creation",
            Event::RetryPending => "a retry of Pending pods",
            Event::IpamGc => "an IPAM garbage-collection check (kube-controllers)",
            Event::Datastore { .. } => "a route reaching the nodes through the datastore",
            Event::Bgp(BgpEvent::HoldExpired { .. }) => "a BGP hold timer",
            Event::Bgp(BgpEvent::MraiExpired { .. }) => "a BGP MRAI timer",
            Event::Bgp(BgpEvent::SessionEstablished { .. }) => "a BGP session coming up",
            Event::Bgp(_) => "a BGP message",
        }
    }
}

/// kube-controllers releases an affine block found empty on two checks more than this apart.
/// podnet checks when an address is released and once more just after this grace period, so
/// a block left empty by a release loses its affinity exactly when the grace period ends.
pub const IPAM_GC_GRACE: SimDuration = SimDuration::from_secs(15 * 60);

/// Whether a workload's `nodeSelector` matches a node's labels.
fn selects(selector: &crate::model::Labels, labels: &crate::model::Labels) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The BGP configuration in force: Calico's `BGPConfiguration` `default` and the `BGPPeer`s,
/// in the order they were first applied. A change during the run replaces one of them and
/// re-plans the peering from all of them, as Calico's confd regenerates BIRD's configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BgpInputs {
    pub config: bgp::BgpConfig,
    pub peers: Vec<bgp::Peer>,
}

impl BgpInputs {
    /// The resources present at the start, in file order.
    fn from_specs(specs: &[Option<ResourceSpec>]) -> BgpInputs {
        let mut inputs = BgpInputs::default();
        for spec in specs.iter().flatten() {
            match spec {
                ResourceSpec::BgpConfiguration(c) if c.name == "default" => {
                    if let Some(asn) = c.as_number {
                        inputs.config.as_number = asn;
                    }
                    if let Some(mesh) = c.node_to_node_mesh_enabled {
                        inputs.config.node_to_node_mesh = mesh;
                    }
                }
                ResourceSpec::BgpPeer(p) => inputs.peers.push(peer_of(p)),
                _ => {}
            }
        }
        inputs
    }

    /// A `BGPPeer` applied: it replaces the one of the same name, or comes last.
    fn apply_peer(&mut self, peer: bgp::Peer) {
        match self.peers.iter_mut().find(|p| p.name == peer.name) {
            Some(old) => *old = peer,
            None => self.peers.push(peer),
        }
    }

    /// `BGPConfiguration` `default` applied: the whole spec replaces the old one (`kubectl
    /// apply` drops fields the new manifest no longer sets), so absent fields take Calico's
    /// defaults.
    fn apply_config(&mut self, c: &BgpConfiguration) {
        let default = bgp::BgpConfig::default();
        self.config = bgp::BgpConfig {
            as_number: c.as_number.unwrap_or(default.as_number),
            node_to_node_mesh: c
                .node_to_node_mesh_enabled
                .unwrap_or(default.node_to_node_mesh),
        };
    }
}

fn peer_of(p: &BgpPeer) -> bgp::Peer {
    bgp::Peer {
        name: p.name.clone(),
        node: p.node.clone(),
        node_selector: p.node_selector.clone(),
        peer_ip: p.peer_ip,
        peer_selector: p.peer_selector.clone(),
        as_number: p.as_number,
        keep_original_next_hop: p.keep_original_next_hop,
    }
}

/// Who installs routes: Felix from the datastore (Calico's VXLAN backend), and BGP speakers
/// (Calico nodes with BIRD, and routers when the fabric speaks BGP). Neither, for Spiderpool
/// pods on a fabric that does not speak BGP: they live on their rack segments.
#[derive(Debug, Default)]
pub struct ControlPlane {
    /// Felix's routes, the same on every node: prefix → owner node's address.
    pub felix: Option<BTreeMap<IpNet, IpAddr>>,
    pub bgp: Option<Box<BgpEngine>>,
    /// What the BGP peering is planned from, as it stands now.
    pub bgp_inputs: BgpInputs,
}

/// The simulated cluster's mutable state.
#[derive(Debug)]
pub struct World {
    pub topology: Topology,
    pub cluster: Cluster,
    pub addressing: Addressing,
    pub namespaces: Namespaces,
    /// Network policy in force: tiers, policies, namespace and service account labels.
    pub policy: crate::policy::model::PolicySet,
    /// Services in force with their cluster IPs.
    pub services: services::Services,
    /// Schedulable nodes by pod count.
    pub placement: placement::Placement,
    pub control: ControlPlane,
    /// Every Windows node's HNS objects and their changes over the run.
    pub hns: crate::hns::HnsState,
}

/// One line of the event log (`events.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LogEntry {
    #[serde(rename = "timeUs")]
    pub time_us: u64,
    pub kind: &'static str,
    pub subject: String,
    pub outcome: String,
    /// The block a change concerns (HNS changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
}

/// A running simulation of one scenario.
pub struct Simulation<'s> {
    scenario: &'s Scenario,
    now: SimTime,
    /// What the last event taken from the queue was, for [`EndReason::LastEvent`].
    last_event: &'static str,
    queue: EventQueue<Event>,
    world: World,
    log: events::EventLog,
    /// BGP UPDATEs sent, as (time in µs, count) per instant, whatever the log keeps.
    bgp_updates: Vec<(u64, u64)>,
    /// The engine's UPDATE count when last looked at.
    updates_seen: u64,
    /// Where a progress line reads how far the run has got (written, never read).
    progress: Option<std::sync::Arc<progress::Progress>>,
    scheduling: Stream,
    retry_queued: bool,
    pool_usage: PoolUsageSeries,
    /// Each Service's endpoint counts over time.
    endpoints: services::EndpointSeries,
    /// Which speaker originated each prefix, for withdrawals.
    originators: BTreeMap<IpNet, DeviceId>,
    /// When any speaker's FIB changed (a learned best route's next hop), in time order: what
    /// `convergedWithin` measures (SPEC §2.6).
    fib_changes: Vec<SimTime>,
    /// IPAM garbage-collection checks already scheduled, by time.
    gc_scheduled: BTreeSet<SimTime>,
    /// Retries already scheduled for addresses that time alone frees, by time.
    timed_retries: BTreeSet<SimTime>,
    /// When the world last changed (SPEC §3.1: a run lasts at least until then).
    last_change: SimTime,
    /// The kind and subject of the last state change (its log line's, at every log level).
    last_change_what: (&'static str, String),
    /// Notes for the report (the default pool's creation, refused runtime resources).
    notes: Vec<String>,
}

/// What a finished run leaves behind.
#[derive(Debug)]
pub struct Outcome {
    pub end: SimTime,
    /// Why the run ended at `end` (SPEC §3.1).
    pub ended: EndReason,
    pub world: World,
    /// The event log, when it was kept in memory ([`events::EventLog::memory`]); empty when
    /// it was streamed or dropped.
    pub log: Vec<LogEntry>,
    /// How many lines the event log kept, and a streamed log's write error.
    pub events: events::EventsWritten,
    /// BGP UPDATEs sent over time, as (time in µs, count) per instant, at every log level.
    pub bgp_updates: Vec<(u64, u64)>,
    /// Snapshots at each distinct `at:` of the expectations, in time order.
    pub snapshots: Vec<Snapshot>,
    /// The state at the end.
    pub last: Snapshot,
    pub notes: Vec<String>,
    /// Pod addresses held per pool over time, for charts.
    pub pool_usage: PoolUsageSeries,
    /// Each Service's endpoint counts over time.
    pub endpoints: services::EndpointSeries,
}

/// Which of SPEC §3.1's rules decided when a run ended: the latest of `until`, the latest
/// expectation time and the last state change (ties credited in that order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The scenario's `until` (or `--until`).
    Until,
    /// The latest `at:` of an expectation.
    LatestExpectation,
    /// The last event in the queue, a timer that ran out after the last state change and
    /// changed nothing (`what`: `a BGP hold timer`).
    LastEvent { what: &'static str },
    /// The last state change; nothing left in the queue could change anything after it.
    /// `kind` and `subject` describe that change (`bgp` for UPDATEs and route changes), empty
    /// when nothing changed.
    LastChange { kind: &'static str, subject: String },
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndReason::Until => f.write_str("the scenario's `until`"),
            EndReason::LastEvent { what } => write!(
                f,
                "the last event in the queue, {what}, which changed nothing; after it no \
                 event was left (keepalives and the connect retries of Idle sessions do not \
                 keep a run going)"
            ),
            EndReason::LatestExpectation => f.write_str("the latest expectation's `at:`"),
            EndReason::LastChange { kind, subject } => {
                f.write_str("the last state change")?;
                if !kind.is_empty() {
                    write!(f, " ({kind} {subject})")?;
                }
                f.write_str(
                    "; nothing left could change the cluster after it (keepalives and the \
                     connect retries of Idle sessions do not keep a run going)",
                )
            }
        }
    }
}

/// Pod addresses held in each pool over time: one sample per instant at which a count
/// changed (the last state of that instant). Tunnel addresses are not pods' and not counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolUsageSeries {
    /// Pool names, in the order of each sample's counts.
    pub pools: Vec<String>,
    pub samples: Vec<PoolUsageSample>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolUsageSample {
    pub time_us: u64,
    pub allocated: Vec<u64>,
}

impl PoolUsageSeries {
    fn change(&mut self, now: SimTime, pool: &str, delta: i64) {
        let index = match self.pools.iter().position(|p| p == pool) {
            Some(i) => i,
            None => {
                self.pools.push(pool.to_string());
                for s in &mut self.samples {
                    s.allocated.push(0);
                }
                self.pools.len() - 1
            }
        };
        let time_us = now.as_micros();
        let mut counts = self
            .samples
            .last()
            .map(|s| s.allocated.clone())
            .unwrap_or_default();
        counts.resize(self.pools.len(), 0);
        counts[index] = counts[index].saturating_add_signed(delta);
        match self.samples.last_mut() {
            Some(last) if last.time_us == time_us => last.allocated = counts,
            _ => self.samples.push(PoolUsageSample {
                time_us,
                allocated: counts,
            }),
        }
    }
}

impl<'s> Simulation<'s> {
    /// A simulation keeping its whole event log in memory ([`Outcome::log`]).
    pub fn new(scenario: &'s Scenario) -> Simulation<'s> {
        Simulation::with_event_log(scenario, events::EventLog::memory(events::EventLevel::All))
    }

    /// A simulation writing its event log to `log` (kept, streamed or dropped, at its level);
    /// what happens, and when the run ends, does not depend on it.
    pub fn with_event_log(scenario: &'s Scenario, log: events::EventLog) -> Simulation<'s> {
        let bgp_log = log.level().bgp_options();
        let specs: Vec<&ResourceSpec> = scenario.specs.iter().flatten().collect();
        let (mut addressing, notes) = Addressing::new(
            &scenario.network,
            scenario.profile.calico,
            &specs,
            &scenario.topology,
        );
        let mut namespaces = Namespaces::new();
        for spec in &specs {
            if let ResourceSpec::Namespace(ns) = spec {
                namespaces.insert(ns.name.clone(), ns.clone());
            }
        }
        let policy = scenario.policies.clone();
        let services = initial_services(scenario, &specs);
        let topology = scenario.topology.clone();
        let mut hns = crate::hns::HnsState::new(hns_layout(&scenario.network, &specs));
        // calico-node starts on every node before any pod: registration and tunnel addresses.
        for (_, node) in topology.live_nodes() {
            if node.os == Os::Windows {
                hns.add_host(&node.name);
            }
            addressing.add_node(SimTime::ZERO, node);
        }
        let mut sim = Simulation {
            scenario,
            now: SimTime::ZERO,
            last_event: "",
            queue: EventQueue::new(),
            world: World {
                topology,
                cluster: Cluster::new(&scenario.workloads),
                addressing,
                namespaces,
                policy,
                services,
                placement: placement::Placement::default(),
                control: ControlPlane::default(),
                hns,
            },
            log,
            bgp_updates: Vec::new(),
            updates_seen: 0,
            progress: None,
            scheduling: Stream::new(scenario.seed, Purpose::Scheduling),
            retry_queued: false,
            gc_scheduled: BTreeSet::new(),
            timed_retries: BTreeSet::new(),
            pool_usage: PoolUsageSeries::default(),
            endpoints: services::EndpointSeries::default(),
            originators: BTreeMap::new(),
            fib_changes: Vec::new(),
            last_change: SimTime::ZERO,
            last_change_what: ("", String::new()),
            notes,
        };
        sim.start_control_plane(bgp_log);
        sim.drain_ipam_changes();
        let ids: Vec<NodeId> = sim.world.topology.live_nodes().map(|(id, _)| id).collect();
        for id in ids {
            sim.refresh_placement(id);
        }
        // Initial pods: at time 0 in file order, one every 10 ms.
        let mut slots = Vec::new();
        for (w, workload) in scenario.workloads.iter().enumerate() {
            if workload.kind == WorkloadKind::DaemonSet {
                for (id, node) in sim.world.topology.live_nodes() {
                    if selects(&workload.node_selector, &node.labels) {
                        slots.push((w, PodSlot::Daemon(id)));
                    }
                }
            } else {
                for ordinal in sim.world.cluster.scale_to(w, workload.replicas) {
                    slots.push((w, PodSlot::Ordinal(ordinal)));
                }
            }
        }
        sim.queue_creations(SimTime::ZERO, slots);
        if !sim.world.services.is_empty() {
            sim.endpoints.observe(0, &sim.world, &scenario.workloads);
        }
        for (i, action) in scenario.actions.iter().enumerate() {
            sim.queue.push(action.at, Event::Scenario(i));
        }
        sim
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Publishes the phase, simulated time and events processed to `progress` from now on.
    pub fn set_progress(&mut self, progress: std::sync::Arc<progress::Progress>) {
        self.progress = Some(progress);
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    /// Processes every event with time ≤ `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: SimTime) {
        while let Some(at) = self.queue.peek_time() {
            if at > t {
                break;
            }
            self.step();
        }
        self.now = self.now.max(t);
    }

    /// Processes the next event, if any; returns whether there was one.
    pub fn step(&mut self) -> bool {
        let Some((at, event)) = self.queue.pop() else {
            return false;
        };
        debug_assert!(at >= self.now, "time never goes backwards");
        self.now = at;
        if let Some(p) = &self.progress {
            let phase = match event {
                Event::Scenario(_) => progress::Phase::Events,
                Event::CreatePod { .. } | Event::RetryPending => progress::Phase::Scheduling,
                Event::IpamGc | Event::Datastore { .. } => progress::Phase::Ipam,
                Event::Bgp(_) => progress::Phase::Bgp,
            };
            p.event(phase, at.as_micros());
        }
        let pods_may_change = matches!(
            event,
            Event::Scenario(_) | Event::CreatePod { .. } | Event::RetryPending
        );
        self.last_event = event.describe();
        match event {
            Event::Scenario(i) => self.apply(i),
            Event::CreatePod { workload, slot } => self.create_pod(workload, slot),
            Event::RetryPending => self.retry_pending(),
            Event::IpamGc => self.world.addressing.gc(self.now),
            Event::Bgp(ev) => {
                if let Some(bgp) = self.world.control.bgp.as_mut() {
                    let scheduled = bgp.handle(self.now, ev);
                    self.schedule_bgp(scheduled);
                }
            }
            Event::Datastore { prefix, next_hop } => {
                if let Some(routes) = &mut self.world.control.felix {
                    let outcome = match next_hop {
                        Some(nh) => {
                            routes.insert(prefix, nh);
                            format!("every node routes it to {nh}")
                        }
                        None => {
                            routes.remove(&prefix);
                            "withdrawn from every node".to_string()
                        }
                    };
                    self.record("felixRoute", prefix.to_string(), outcome);
                }
            }
        }
        self.drain_ipam_changes();
        if pods_may_change
            && !(self.world.services.is_empty() && self.endpoints.by_service.is_empty())
        {
            self.endpoints
                .observe(self.now.as_micros(), &self.world, &self.scenario.workloads);
        }
        true
    }

    /// Runs the whole scenario: to each expectation time (snapshotting there), then until no
    /// event is left or `until`.
    pub fn run(mut self) -> Outcome {
        let until = self.scenario.until;
        let at_times: BTreeSet<SimTime> = self
            .scenario
            .expectations
            .iter()
            .filter_map(|e| e.at)
            .collect();
        let mut snapshots = Vec::new();
        for t in &at_times {
            self.run_until(*t);
            snapshots.push(self.snapshot());
        }
        match until {
            Some(u) => self.run_until(u),
            None => while self.step() {},
        }
        let latest_at = at_times.last().copied().unwrap_or(SimTime::ZERO);
        let end = self
            .last_change
            .max(latest_at)
            .max(until.unwrap_or(SimTime::ZERO));
        self.now = self.now.max(end);
        let ended = if until.is_some_and(|u| u == self.now) {
            EndReason::Until
        } else if at_times.last() == Some(&self.now) && latest_at >= self.last_change {
            EndReason::LatestExpectation
        } else if self.now > end {
            EndReason::LastEvent {
                what: self.last_event,
            }
        } else {
            let (kind, subject) = std::mem::take(&mut self.last_change_what);
            EndReason::LastChange { kind, subject }
        };
        let last = self.snapshot();
        let (log, events) = self.log.finish();
        Outcome {
            end: self.now,
            ended,
            world: self.world,
            log,
            events,
            bgp_updates: self.bgp_updates,
            snapshots,
            last,
            notes: self.notes,
            pool_usage: self.pool_usage,
            endpoints: self.endpoints,
        }
    }

    /// The state now.
    pub fn snapshot(&self) -> Snapshot {
        if let Some(p) = &self.progress {
            p.set_phase(progress::Phase::Reachability);
        }
        let action_times: Vec<SimTime> = self.scenario.actions.iter().map(|a| a.at).collect();
        let ribs_of: Vec<String> = self
            .scenario
            .expectations
            .iter()
            .filter_map(|e| match &e.check {
                Check::Route {
                    node,
                    table: RouteTable::Rib,
                    ..
                } => Some(node.clone()),
                _ => None,
            })
            .collect();
        Snapshot::capture(
            self.now,
            &self.world,
            &self.scenario.network,
            &self.scenario.workloads,
            self.scenario.seed,
            snapshot::BgpView {
                now: self.now,
                fib_changes: &self.fib_changes,
                action_times: &action_times,
                ribs_of: &ribs_of,
            },
        )
    }

    fn record(
        &mut self,
        kind: &'static str,
        subject: impl Into<String>,
        outcome: impl Into<String>,
    ) {
        self.last_change = self.now;
        let subject = subject.into();
        self.last_change_what = (kind, subject.clone());
        self.log.push(LogEntry {
            time_us: self.now.as_micros(),
            kind,
            subject,
            outcome: outcome.into(),
            block: None,
        });
    }

    /// HNS changes become log lines, each with its node as subject and its block.
    fn record_hns(&mut self, changes: &[crate::hns::Timed]) {
        for c in changes {
            self.log.push(LogEntry {
                time_us: c.time.as_micros(),
                kind: c.change.kind(),
                subject: c.node.clone(),
                outcome: c.change.to_string(),
                block: Some(c.change.block().to_string()),
            });
        }
    }

    /// Block claims, releases and borrows become log lines, as they happen. A block or a
    /// borrowed address given back (by a release, a deleted node or garbage collection) may
    /// be what a Pending pod waits for: Pending pods are retried at once (SPEC §2.4).
    fn drain_ipam_changes(&mut self) {
        let changes = self.world.addressing.take_changes();
        if changes.iter().any(IpamChange::frees) {
            self.queue_retry();
        }
        for change in changes {
            // What the control plane must announce (Some(owner)) or withdraw (None).
            let route: Option<(IpNet, Option<String>)> = match change {
                IpamChange::BlockClaimed { node, block } => {
                    self.record(
                        "blockClaimed",
                        block.to_string(),
                        format!("affine to {node}"),
                    );
                    let pool = self.world.addressing.pool_of_block(&block).unwrap_or(block);
                    let now = self.now;
                    let hns = self
                        .world
                        .hns
                        .block_claimed(now, &node, block, pool)
                        .to_vec();
                    self.record_hns(&hns);
                    Some((block, Some(node)))
                }
                IpamChange::BlockAffinityReleased { node, block } => {
                    self.record(
                        "blockReleased",
                        block.to_string(),
                        format!("no longer affine to {node}"),
                    );
                    let now = self.now;
                    let hns = self.world.hns.block_released(now, &node, block).to_vec();
                    self.record_hns(&hns);
                    Some((block, None))
                }
                IpamChange::BlockDeleted { block } => {
                    self.record("blockDeleted", block.to_string(), "empty, deleted");
                    None
                }
                IpamChange::Borrowed { node, ip, block } => {
                    self.record(
                        "borrowed",
                        ip.to_string(),
                        format!("{node} borrowed from {block}"),
                    );
                    Some((IpNet::from(ip), Some(node)))
                }
                IpamChange::BorrowReleased { node, ip } => {
                    self.record(
                        "borrowReleased",
                        ip.to_string(),
                        format!("released by {node}"),
                    );
                    Some((IpNet::from(ip), None))
                }
            };
            if let Some((prefix, owner)) = route {
                self.route_changed(prefix, owner);
            }
        }
    }

    /// Hands a block or borrowed address to the control plane: with Calico's VXLAN backend,
    /// every node learns it from the datastore after `datastoreDelay` (SPEC §3.4).
    fn route_changed(&mut self, prefix: IpNet, owner: Option<String>) {
        let device = owner
            .as_ref()
            .and_then(|n| self.world.topology.node_by_name(n))
            .map(|id| self.world.topology.node(id).device);
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            // The owner originates; a withdrawal comes from whoever originated it.
            let scheduled = match device {
                Some(d) => bgp.originate(self.now, d, prefix),
                None => {
                    let origin = self.originators.remove(&prefix);
                    origin
                        .map(|d| bgp.withdraw(self.now, d, prefix))
                        .unwrap_or_default()
                }
            };
            if let Some(d) = device {
                self.originators.insert(prefix, d);
            }
            self.schedule_bgp(scheduled);
        }
        if self.world.control.felix.is_some() {
            let next_hop = owner
                .and_then(|n| self.world.topology.node_by_name(&n))
                .map(|id| self.world.topology.node(id).ip);
            let at = self.now + self.scenario.network.datastore_delay;
            self.queue.push(at, Event::Datastore { prefix, next_hop });
        }
    }

    fn queue_creations(&mut self, from: SimTime, slots: Vec<(usize, PodSlot)>) {
        let mut at = from;
        for (workload, slot) in slots {
            self.queue.push(at, Event::CreatePod { workload, slot });
            at = at + POD_CREATION_INTERVAL;
        }
    }

    /// Sets up Felix or the BGP speakers and their sessions, as the network asks.
    fn start_control_plane(&mut self, bgp_log: bgp::LogOptions) {
        let network = &self.scenario.network;
        let calico_bird =
            network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Bird;
        if network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Vxlan {
            self.world.control.felix = Some(BTreeMap::new());
        }
        if !calico_bird && !self.world.topology.fabric.bgp {
            return;
        }
        let inputs = BgpInputs::from_specs(&self.scenario.specs);
        let peering = bgp::plan(
            &self.world.topology,
            &inputs.config,
            &inputs.peers,
            calico_bird,
        );
        self.world.control.bgp_inputs = inputs;
        let timers = bgp::Timers::for_profile(self.scenario.profile.bgp_timers);
        let mut engine = BgpEngine::new(&self.world.topology, peering, timers, &network.bgp);
        engine.set_log_options(bgp_log);
        // Calico's v3.32+ BIRD templates set local-pref on every iBGP export (REFERENCE §4.4).
        let v3_32 = matches!(
            self.scenario.profile.calico,
            CalicoProfile::V3_32 | CalicoProfile::V3_33
        );
        engine.set_ibgp_local_pref(v3_32.then_some(bgp::config::CALICO_IBGP_LOCAL_PREF));
        engine.set_jitter(Box::new(Stream::new(
            self.scenario.seed,
            Purpose::BgpTimers,
        )));
        let pools = match &self.world.addressing {
            Addressing::Calico(ipam) => ipam
                .pool_names()
                .iter()
                .filter_map(|n| ipam.pool(n))
                .map(|p| bgp::ExportPool {
                    cidr: p.network(),
                    disable_bgp_export: p.disable_bgp_export,
                })
                .collect(),
            Addressing::Spiderpool(_) => Vec::new(),
        };
        let mut scheduled = engine.set_pools(self.now, pools);
        scheduled.extend(engine.start(self.now));
        self.world.control.bgp = Some(Box::new(engine));
        self.schedule_bgp(scheduled);
    }

    /// Re-plans the BGP peering from the configuration in force and the topology as they are
    /// now, and moves the running engine to it: unchanged sessions keep running, removed ones
    /// go down, changed ones reset, new ones connect (`bgp::reconfigure`).
    fn replan_bgp(&mut self, cause: &str) {
        let network = &self.scenario.network;
        let calico_bird =
            network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Bird;
        let Some(engine) = self.world.control.bgp.as_mut() else {
            return;
        };
        let inputs = &self.world.control.bgp_inputs;
        let peering = bgp::plan(
            &self.world.topology,
            &inputs.config,
            &inputs.peers,
            calico_bird,
        );
        let scheduled = engine.reconfigure(self.now, &self.world.topology, peering, cause);
        self.schedule_bgp(scheduled);
    }

    /// Queues what the BGP engine scheduled and moves its log into the event log.
    fn schedule_bgp(&mut self, scheduled: Vec<(SimTime, BgpEvent)>) {
        for (at, ev) in scheduled {
            self.queue.push(at, Event::Bgp(ev));
        }
        let Some(bgp) = self.world.control.bgp.as_mut() else {
            return;
        };
        for time in bgp.take_fib_change_times() {
            if self.fib_changes.last() != Some(&time) {
                self.fib_changes.push(time);
            }
        }
        if bgp.last_activity() > self.last_change {
            // Described whatever the log level keeps: the route lines may not exist.
            self.last_change = bgp.last_activity();
            self.last_change_what = ("bgp", "UPDATEs and route changes".to_string());
        }
        // Every UPDATE is sent at the instant the engine was called for (its log line has
        // that time), so the count since the last look belongs to now.
        let sent = bgp.total_updates();
        if sent > self.updates_seen {
            let n = sent - self.updates_seen;
            self.updates_seen = sent;
            let t = self.now.as_micros();
            match self.bgp_updates.last_mut() {
                Some((at, count)) if *at == t => *count += n,
                _ => self.bgp_updates.push((t, n)),
            }
        }
        for e in bgp.log() {
            self.log.push(LogEntry {
                time_us: e.time.as_micros(),
                kind: e.kind.as_str(),
                subject: e.subject,
                outcome: e.outcome,
                block: None,
            });
        }
    }

    /// Schedules the two garbage-collection checks that a release calls for.
    fn schedule_gc(&mut self) {
        if !matches!(self.world.addressing, Addressing::Calico(_)) {
            return;
        }
        for at in [
            self.now,
            self.now + IPAM_GC_GRACE + SimDuration::from_nanos(1),
        ] {
            if self.gc_scheduled.insert(at) {
                self.queue.push(at, Event::IpamGc);
            }
        }
    }

    fn queue_retry(&mut self) {
        if !self.retry_queued {
            self.retry_queued = true;
            self.queue.push(self.now, Event::RetryPending);
        }
    }

    /// A pod just failed to get an address: if Calico will free addresses by the passage of
    /// time alone (a release cooldown ending, an empty block becoming old enough to reclaim),
    /// Pending pods are retried at that instant, as the kubelet's retried CNI ADD would find
    /// them. Nothing else happens then, so without this the pod would wait for an unrelated
    /// event. Each retry that fails again asks for the next such instant.
    fn retry_at_timed_release(&mut self) {
        let Some(at) = self.world.addressing.next_timed_release(self.now) else {
            return;
        };
        if self.timed_retries.insert(at) {
            self.queue.push(at, Event::RetryPending);
        }
    }

    fn create_pod(&mut self, w: usize, slot: PodSlot) {
        let workload = &self.scenario.workloads[w];
        if !self.world.cluster.wants(w, slot) {
            return;
        }
        let name = match slot {
            PodSlot::Ordinal(i) => workload.pod_name(i),
            PodSlot::Daemon(node) => {
                let n = self.world.topology.node(node);
                if n.deleted {
                    return;
                }
                workload.daemon_pod_name(&n.name)
            }
        };
        let id = self
            .world
            .cluster
            .add_pod(w, slot, &workload.namespace, &name);
        self.record(
            "podCreated",
            format!("{}/{name}", workload.namespace),
            "created",
        );
        self.place(id);
    }

    /// Schedules a pod (if it has no node) and gives it an address (if it has none).
    fn place(&mut self, id: PodId) {
        let w = self.world.cluster.pod(id).workload;
        let workload = &self.scenario.workloads[w];
        if self.world.cluster.pod(id).node.is_none() {
            let node = match self.world.cluster.pod(id).slot {
                PodSlot::Daemon(node) => {
                    let n = self.world.topology.node(node);
                    let fits = !n.down && self.world.cluster.pods_on(node) < n.max_pods as usize;
                    fits.then_some(node)
                }
                PodSlot::Ordinal(_) => self.choose_node(w),
            };
            let Some(node) = node else {
                let pod = self.world.cluster.pod_mut(id);
                if pod.reason.as_deref() != Some("Unschedulable") {
                    pod.status = PodStatus::Pending;
                    pod.reason = Some("Unschedulable".to_string());
                    let key = pod.key();
                    self.record("podPending", key, "Unschedulable: no eligible node");
                }
                return;
            };
            self.world.cluster.bind(id, node);
            self.refresh_placement(node);
            let key = self.world.cluster.pod(id).key();
            let node_name = self.world.topology.node(node).name.clone();
            self.record("podScheduled", key, format!("on {node_name}"));
        }
        let Some(node) = self.world.cluster.pod(id).node else {
            return;
        };
        if self.world.cluster.pod(id).address.is_some() {
            return;
        }
        let topo_node = self.world.topology.node(node);
        let pod = self.world.cluster.pod(id);
        let request = PodRequest {
            namespace: &pod.namespace,
            name: &pod.name,
            labels: &workload.labels,
            annotations: &workload.annotations,
            node: topo_node,
            stateful: workload.kind == WorkloadKind::StatefulSet,
        };
        let result = self
            .world
            .addressing
            .assign(self.now, &request, &self.world.namespaces);
        let key = pod.key();
        let node_down = topo_node.down;
        match result {
            Ok(address) => {
                let outcome = format!(
                    "{} from {}{}",
                    address.ip,
                    address.block.map_or(address.pool.clone(), |b| format!(
                        "{} block {b}",
                        address.pool
                    )),
                    if address.borrowed { " (borrowed)" } else { "" }
                );
                self.pool_usage.change(self.now, &address.pool, 1);
                let pod = self.world.cluster.pod_mut(id);
                pod.address = Some(address);
                pod.status = if node_down {
                    PodStatus::Unknown
                } else {
                    PodStatus::Running
                };
                pod.reason = None;
                self.record("podAddressed", key, outcome);
            }
            Err(message) => {
                let pod = self.world.cluster.pod_mut(id);
                let changed = pod.reason.as_deref() != Some(message.as_str());
                pod.status = PodStatus::Pending;
                pod.reason = Some(message.clone());
                pod.ipam_failure = true;
                if changed {
                    self.record("podPending", key, message);
                }
                self.retry_at_timed_release();
            }
        }
    }

    /// The eligible node with the fewest pods; ties broken by the scheduling stream.
    fn choose_node(&mut self, w: usize) -> Option<NodeId> {
        let selector = &self.scenario.workloads[w].node_selector;
        let topology = &self.world.topology;
        let pick = |n: usize, stream: &mut Stream| if n == 1 { 0 } else { stream.index(n) };
        if selector.is_empty() {
            let fewest = self.world.placement.fewest_any();
            if fewest.is_empty() {
                return None;
            }
            return Some(fewest[pick(fewest.len(), &mut self.scheduling)]);
        }
        let fewest = self.world.placement.fewest(|id| {
            let labels = &topology.node(id).labels;
            selector.iter().all(|(k, v)| labels.get(k) == Some(v))
        });
        if fewest.is_empty() {
            return None;
        }
        Some(fewest[pick(fewest.len(), &mut self.scheduling)])
    }

    /// Re-files a node in the placement index after its pods or its state changed.
    fn refresh_placement(&mut self, node: NodeId) {
        let n = self.world.topology.node(node);
        let pods = self.world.cluster.pods_on(node);
        let schedulable = !n.deleted && !n.down && pods < n.max_pods as usize;
        self.world.placement.update(node, pods, schedulable);
    }

    fn retry_pending(&mut self) {
        self.retry_queued = false;
        for id in self.world.cluster.pending() {
            self.place(id);
        }
    }

    /// Removes a pod: its address returns to IPAM (kept for a Spiderpool StatefulSet pod
    /// that will come back with the same name).
    fn remove_pod(&mut self, id: PodId, keep_address: bool, why: &str) {
        let pod = self.world.cluster.remove_pod(id);
        if let Some(node) = pod.node {
            self.refresh_placement(node);
        }
        if let Some(address) = &pod.address {
            self.pool_usage.change(self.now, &address.pool, -1);
        }
        if pod.address.is_some() {
            self.world
                .addressing
                .release(self.now, &pod.namespace, &pod.name, keep_address);
            self.schedule_gc();
        }
        self.record("podDeleted", pod.key(), why.to_string());
    }

    /// Applies scenario action `i` to the world.
    fn apply(&mut self, i: usize) {
        let action = self.scenario.actions[i].action.clone();
        match action {
            Action::NodeDown(name) => self.node_down(&name, true),
            Action::NodeUp(name) => self.node_down(&name, false),
            Action::RestartBgp { node, down_for } => self.restart_bgp(&node, down_for),
            Action::DeleteNode(name) => self.delete_node(&name),
            Action::AddNodes(add) => {
                let mut added: Vec<NodeId> = Vec::new();
                for node in add.nodes {
                    added.push(self.world.topology.add_node(add.rack, node));
                }
                let mut slots = Vec::new();
                let mut names = Vec::new();
                for id in added {
                    self.refresh_placement(id);
                    let node = self.world.topology.node(id).clone();
                    if node.os == Os::Windows {
                        self.world.hns.add_host(&node.name);
                    }
                    self.world.addressing.add_node(self.now, &node);
                    self.record(
                        "addNode",
                        node.name.clone(),
                        format!("joined with address {}", node.ip),
                    );
                    names.push(node.name.clone());
                    for (w, workload) in self.scenario.workloads.iter().enumerate() {
                        if workload.kind == WorkloadKind::DaemonSet
                            && selects(&workload.node_selector, &node.labels)
                        {
                            slots.push((w, PodSlot::Daemon(id)));
                        }
                    }
                }
                // Before the blocks claimed above are handed to BGP (`drain_ipam_changes`),
                // so the new speakers originate them.
                if !names.is_empty() {
                    let s = if names.len() == 1 { "" } else { "s" };
                    self.replan_bgp(&format!("node{s} {} joined", names.join(", ")));
                }
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::LinkDown(a, b) | Action::LinkUp(a, b) => {
                let up = matches!(self.scenario.actions[i].action, Action::LinkUp(..));
                let topo = &mut self.world.topology;
                let kind = if up { "linkUp" } else { "linkDown" };
                let link = topo
                    .device_by_name(&a)
                    .zip(topo.device_by_name(&b))
                    .and_then(|(x, y)| topo.link_between(x, y));
                let outcome = match link {
                    Some(l) if topo.links[l.index()].up == up => {
                        if up {
                            "ignored: already up"
                        } else {
                            "ignored: already down"
                        }
                    }
                    Some(l) => {
                        topo.set_link_up(l, up);
                        if up { "up" } else { "down" }
                    }
                    None => "ignored: no such link",
                };
                self.record(kind, format!("{a}--{b}"), outcome);
                if let Some(bgp) = self.world.control.bgp.as_mut() {
                    let scheduled = bgp.link_changed(self.now, &self.world.topology);
                    self.schedule_bgp(scheduled);
                }
            }
            Action::Scale {
                workload,
                namespace,
                replicas,
            } => {
                let Some(w) = self.workload_index(&workload, &namespace) else {
                    return;
                };
                self.record(
                    "scale",
                    format!("{namespace}/{workload}"),
                    format!("to {replicas} replicas"),
                );
                let removed = self.world.cluster.scale_down_to(w, replicas);
                for id in removed {
                    self.remove_pod(id, false, "scaled down");
                }
                let added = self.world.cluster.scale_to(w, replicas);
                let slots = added
                    .into_iter()
                    .map(|o| (w, PodSlot::Ordinal(o)))
                    .collect();
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::DeletePods(which) => {
                let victims: Vec<PodId> = match &which {
                    DeletePods::Workload {
                        workload,
                        namespace,
                        count,
                    } => {
                        let Some(w) = self.workload_index(workload, namespace) else {
                            return;
                        };
                        self.world.cluster.highest_pods(w, *count as usize)
                    }
                    DeletePods::Pod(name) => self.world.cluster.find(name).into_iter().collect(),
                };
                let mut slots = Vec::new();
                for id in victims {
                    let pod = self.world.cluster.pod(id);
                    let (w, slot) = (pod.workload, pod.slot);
                    let stateful = self.scenario.workloads[w].kind == WorkloadKind::StatefulSet;
                    self.remove_pod(id, stateful, "deleted");
                    // Controllers replace what they own; a bare Pod is gone for good.
                    match self.scenario.workloads[w].kind {
                        WorkloadKind::Pod => self.world.cluster.forget_slot(w, slot),
                        WorkloadKind::DaemonSet => slots.push((w, slot)),
                        WorkloadKind::Deployment | WorkloadKind::StatefulSet => {
                            self.world.cluster.forget_slot(w, slot);
                            let ordinals = self.world.cluster.add_ordinals(w, 1);
                            slots.extend(ordinals.into_iter().map(|o| (w, PodSlot::Ordinal(o))));
                        }
                    }
                }
                self.queue_creations(self.now, slots);
                self.queue_retry();
            }
            Action::Apply { resource } => {
                let r = &self.scenario.applied[resource];
                let subject = format!("{}/{}", r.kind, r.name);
                match &self.scenario.applied_specs[resource] {
                    Some(ResourceSpec::Namespace(ns)) => {
                        self.world.namespaces.insert(ns.name.clone(), ns.clone());
                        self.world.policy.apply(&namespace_resource(ns));
                        self.record("apply", subject, "applied");
                    }
                    Some(ResourceSpec::Policy(resource)) => {
                        self.world.policy.apply(resource);
                        self.record("apply", subject, "applied");
                    }
                    Some(ResourceSpec::Service(s)) => {
                        let outcome = match self.world.services.apply(s) {
                            Ok(Some(ip)) => format!("applied: clusterIP {ip}"),
                            Ok(None) => "applied: headless".to_string(),
                            Err(refused) => {
                                self.notes.push(format!("{subject}: {refused}"));
                                format!("refused: {refused}")
                            }
                        };
                        self.record("apply", subject, outcome);
                    }
                    Some(ResourceSpec::BgpPeer(p)) => {
                        let peer = peer_of(p);
                        let cause = format!("BGPPeer {} applied", p.name);
                        self.world.control.bgp_inputs.apply_peer(peer);
                        self.record("apply", subject, "applied");
                        self.replan_bgp(&cause);
                    }
                    Some(ResourceSpec::BgpConfiguration(c)) if c.name == "default" => {
                        let c = c.clone();
                        self.world.control.bgp_inputs.apply_config(&c);
                        self.record("apply", subject, "applied");
                        self.replan_bgp("BGPConfiguration default applied");
                    }
                    Some(ResourceSpec::BgpConfiguration(_)) => {
                        self.record(
                            "apply",
                            subject,
                            "ignored: only BGPConfiguration default is modelled",
                        );
                    }
                    Some(spec) => {
                        let outcome = match self.world.addressing.apply(spec) {
                            Some(refused) => {
                                self.notes.push(format!("{subject}: {refused}"));
                                format!("refused: {refused}")
                            }
                            None => "applied".to_string(),
                        };
                        self.world
                            .addressing
                            .refresh_tunnels(self.now, &self.world.topology);
                        self.record("apply", subject, outcome);
                    }
                    None => self.record("apply", subject, "ignored"),
                }
                self.queue_retry();
            }
            Action::Delete { kind, name } => {
                if kind == "Namespace" {
                    self.world.namespaces.remove(&name);
                }
                self.world.policy.delete_named(&kind, &name);
                if kind == "Service" {
                    self.world.services.delete(&name);
                }
                self.world.addressing.delete(&kind, &name);
                self.world
                    .addressing
                    .refresh_tunnels(self.now, &self.world.topology);
                self.record("delete", format!("{kind}/{name}"), "deleted");
                let inputs = &mut self.world.control.bgp_inputs;
                match kind.as_str() {
                    "BGPPeer" => {
                        inputs.peers.retain(|p| p.name != name);
                        self.replan_bgp(&format!("BGPPeer {name} deleted"));
                    }
                    // Without it, Calico's defaults apply: the mesh on, AS 64512.
                    "BGPConfiguration" if name == "default" => {
                        inputs.config = bgp::BgpConfig::default();
                        self.replan_bgp("BGPConfiguration default deleted");
                    }
                    _ => {}
                }
                self.queue_retry();
            }
        }
    }

    fn workload_index(&self, name: &str, namespace: &str) -> Option<usize> {
        self.scenario
            .workloads
            .iter()
            .position(|w| w.name == name && w.namespace == namespace)
    }

    fn node_down(&mut self, name: &str, down: bool) {
        let kind = if down { "nodeDown" } else { "nodeUp" };
        let Some(id) = self.world.topology.node_by_name(name) else {
            return self.record(kind, name, "ignored: no such node");
        };
        let node = self.world.topology.node_mut(id);
        if node.deleted {
            return self.record(kind, name, "ignored: node deleted");
        }
        if node.down == down {
            return self.record(
                kind,
                name,
                if down {
                    "ignored: already down"
                } else {
                    "ignored: already up"
                },
            );
        }
        node.down = down;
        // Its pods stop (Unknown) or run again with the same addresses; they are not moved.
        for pid in self.world.cluster.pods_of_node(id) {
            let pod = self.world.cluster.pod_mut(pid);
            if pod.address.is_some() {
                pod.status = if down {
                    PodStatus::Unknown
                } else {
                    PodStatus::Running
                };
            }
        }
        self.refresh_placement(id);
        self.record(kind, name, if down { "down" } else { "up" });
        let device = self.world.topology.node(id).device;
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            let scheduled = if down {
                bgp.speaker_down(self.now, device)
            } else {
                bgp.speaker_up(self.now, device)
            };
            self.schedule_bgp(scheduled);
        }
        if !down {
            self.queue_retry();
        }
    }

    /// `restartBgp`: the node's BGP daemon dies and comes back after `down_for`; the host,
    /// its pods and its kernel routes stay (graceful restart, `bgp::restart`).
    fn restart_bgp(&mut self, name: &str, down_for: SimDuration) {
        let Some(id) = self.world.topology.node_by_name(name) else {
            return self.record("restartBgp", name, "ignored: no such node");
        };
        let node = self.world.topology.node(id);
        let (device, deleted, down) = (node.device, node.deleted, node.down);
        let running = self.world.control.bgp.as_ref().map(|bgp| bgp.is_up(device));
        let outcome = match running {
            _ if deleted => "ignored: node deleted".to_string(),
            _ if down => "ignored: node down".to_string(),
            None => "ignored: no BGP in this scenario".to_string(),
            Some(false) => "ignored: its BGP daemon is not running".to_string(),
            Some(true) => format!("BGP daemon down for {down_for}"),
        };
        self.record("restartBgp", name, outcome);
        if running == Some(true)
            && !deleted
            && !down
            && let Some(bgp) = self.world.control.bgp.as_mut()
        {
            let scheduled = bgp.restart_bgp(self.now, device, down_for);
            self.schedule_bgp(scheduled);
        }
    }

    fn delete_node(&mut self, name: &str) {
        let Some(id) = self
            .world
            .topology
            .node_by_name(name)
            .filter(|id| !self.world.topology.node(*id).deleted)
        else {
            return self.record("deleteNode", name, "ignored: no such node");
        };
        let mut slots = Vec::new();
        for pid in self.world.cluster.pods_of_node(id) {
            let pod = self.world.cluster.pod(pid);
            let (w, slot) = (pod.workload, pod.slot);
            let kind = self.scenario.workloads[w].kind;
            self.remove_pod(pid, false, &format!("node {name} deleted"));
            match kind {
                // Controllers recreate their pods elsewhere, StatefulSet pods with their name.
                WorkloadKind::Deployment | WorkloadKind::StatefulSet => slots.push((w, slot)),
                WorkloadKind::DaemonSet | WorkloadKind::Pod => {
                    self.world.cluster.forget_slot(w, slot)
                }
            }
        }
        self.world.topology.node_mut(id).deleted = true;
        self.refresh_placement(id);
        let device = self.world.topology.node(id).device;
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            let scheduled = bgp.speaker_removed(self.now, device);
            self.schedule_bgp(scheduled);
        }
        self.world.addressing.remove_node(self.now, name);
        self.record("deleteNode", name, "deleted");
        self.queue_creations(self.now, slots);
        self.queue_retry();
    }
}

/// The Services of `resources`, those that name their cluster IP first (`build` checked that
/// they are in the range and distinct), then the others in file order, so an allocated
/// address never takes one a later Service names.
fn initial_services(scenario: &Scenario, specs: &[&ResourceSpec]) -> services::Services {
    let mut out = services::Services::new(scenario.network.service_cluster_ip_range);
    let all: Vec<&crate::model::service::Service> = specs
        .iter()
        .filter_map(|s| match s {
            ResourceSpec::Service(s) => Some(s),
            _ => None,
        })
        .collect();
    let fixed = |s: &&crate::model::service::Service| {
        matches!(s.cluster_ip, crate::model::service::ClusterIpSpec::Fixed(_))
    };
    for s in all
        .iter()
        .filter(|s| fixed(s))
        .chain(all.iter().filter(|s| !fixed(s)))
    {
        // A full range is the only refusal left; such a Service simply has no address.
        let _ = out.apply(s);
    }
    out
}

/// A Namespace manifest as the policy state holds it (its labels, for namespace selectors).
fn namespace_resource(
    ns: &crate::scenario::kinds::Namespace,
) -> crate::policy::model::PolicyResource {
    crate::policy::model::PolicyResource::Namespace {
        name: ns.name.clone(),
        labels: ns.labels.clone(),
    }
}

/// How Windows nodes lay out their HNS objects, when the pods use Calico: Overlay networks in
/// Calico's Windows `vxlan` mode, L2Bridge networks otherwise; IP subnets
/// keep the network and broadcast addresses as Calico's per-block reservation does.
fn hns_layout(network: &Network, specs: &[&ResourceSpec]) -> Option<crate::hns::Layout> {
    use crate::hns::{Layout, NetworkType, flags};
    use crate::ipam::calico::EncapMode;
    // Calico for Windows runs in `vxlan` mode when its backend or an IPv4 pool uses VXLAN.
    let vxlan = network.calico_backend == CalicoBackend::Vxlan
        || specs.iter().any(|s| {
            matches!(s, ResourceSpec::IpPool(p)
                if !p.disabled && p.cidr.addr().is_ipv4() && p.vxlan_mode != EncapMode::Never)
        });
    (network.cni == Cni::Calico).then_some(Layout {
        mode: network.windows_hns,
        kind: if vxlan {
            NetworkType::Overlay
        } else {
            NetworkType::L2Bridge
        },
        ip_subnet_flags: flags::ENABLE_BROADCAST | flags::RESERVE_NETWORK_ADDRESS,
    })
}
