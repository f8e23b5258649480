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
//!
//! This file holds the world, the loop and snapshots; `Simulation`'s other methods live
//! beside it by concern: `pods.rs` (creation, placement, retries, removal, IPAM GC),
//! `control_plane.rs` (Felix, the BGP engine and its inputs, IPAM changes to routes) and
//! `actions.rs` (the scenario's events).

mod actions;
pub mod addressing;
pub mod cluster;
mod control_plane;
pub mod dataplane;
pub mod events;
pub mod expect;
pub mod external_expect;
pub mod placement;
mod pods;
pub mod policy;
pub mod progress;
pub mod queue;
pub mod rng;
pub mod service_entry_expect;
pub mod service_expect;
mod service_routes;
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
use crate::model::workload::{PodStatus, WorkloadId, WorkloadKind};
use crate::scenario::Scenario;
use crate::scenario::kinds::{BgpConfiguration, ResourceSpec};
use addressing::{Addressing, Namespaces, PodRequest};
use cluster::{Cluster, PodId, PodSlot};
pub use control_plane::{BgpInputs, ControlPlane};
use pods::selects;
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
    CreatePod { workload: WorkloadId, slot: PodSlot },
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
    /// The buffer the BGP engine's events are handled into, kept empty between events.
    bgp_scheduled: bgp::Scheduled,
    /// Where a progress line reads how far the run has got (written, never read).
    progress: Option<std::sync::Arc<progress::Progress>>,
    /// Where snapshots share the routing of an earlier run's dataplane built from the same.
    dataplanes: Option<std::sync::Arc<crate::forwarding::DataplaneMemo>>,
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
            bgp_scheduled: Vec::new(),
            progress: None,
            dataplanes: None,
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
        sim.sync_service_routes();
        let ids: Vec<NodeId> = sim.world.topology.live_nodes().map(|(id, _)| id).collect();
        for id in ids {
            sim.refresh_placement(id);
        }
        // Initial pods: at time 0 in file order, one every 10 ms.
        let mut slots = Vec::new();
        for (w, workload) in WorkloadId::all(&scenario.workloads).zip(&scenario.workloads) {
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

    /// Builds the snapshots' dataplanes with `memo` (`DataplaneBuilder::build_with`): runs
    /// that end in one forwarding state with the pods named otherwise share its routing.
    pub fn share_dataplanes(&mut self, memo: std::sync::Arc<crate::forwarding::DataplaneMemo>) {
        self.dataplanes = Some(memo);
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
        // A link going down or up changes no pod, so no Service's endpoints or routes.
        let pods_may_change = match event {
            Event::Scenario(i) => !matches!(
                self.scenario.actions[i].action,
                Action::LinkDown(..) | Action::LinkUp(..)
            ),
            Event::CreatePod { .. } | Event::RetryPending => true,
            _ => false,
        };
        self.last_event = event.describe();
        // The engine brings in what the next event will read while this one runs (the
        // sessions of a full mesh are met at random: `bgp::engine::prefetch`).
        if let (Some(Event::Bgp(next)), Some(bgp)) =
            (self.queue.peek(), self.world.control.bgp.as_deref())
        {
            bgp.prefetch(next);
        }
        match event {
            Event::Scenario(i) => self.apply(i),
            Event::CreatePod { workload, slot } => self.create_pod(workload, slot),
            Event::RetryPending => self.retry_pending(),
            Event::IpamGc => self.world.addressing.gc(self.now),
            Event::Bgp(ev) => {
                if let Some(bgp) = self.world.control.bgp.as_mut() {
                    // One buffer for every event's output (`BgpEngine::handle`).
                    let mut scheduled = std::mem::take(&mut self.bgp_scheduled);
                    bgp.handle(self.now, ev, &mut scheduled);
                    self.schedule_bgp(scheduled.drain(..));
                    self.bgp_scheduled = scheduled;
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
        if pods_may_change {
            self.sync_service_routes();
        }
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
            self.dataplanes.as_deref(),
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
        // A line the log would drop (a `check` keeps no pod lines) is not built: only the
        // last change's subject is kept, for the end reason.
        if self.log.wants(kind) {
            self.log.push(LogEntry {
                time_us: self.now.as_micros(),
                kind,
                subject: subject.clone(),
                outcome: outcome.into(),
                block: None,
            });
        }
        self.last_change_what = (kind, subject);
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
/// keep the network and broadcast addresses as Calico's per-block reservation does, and
/// neither under the micro-pool reservation models, which hand both to pods.
fn hns_layout(network: &Network, specs: &[&ResourceSpec]) -> Option<crate::hns::Layout> {
    use crate::hns::{Layout, NetworkType, flags};
    use crate::ipam::calico::EncapMode;
    use crate::model::network::WindowsReservation;
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
        ip_subnet_flags: match network.windows_reserve.model {
            WindowsReservation::PerBlock => {
                flags::ENABLE_BROADCAST | flags::RESERVE_NETWORK_ADDRESS
            }
            WindowsReservation::PerHost | WindowsReservation::PerPool => flags::NONE,
        },
    })
}
