//! The discrete-event engine: a closed [`Event`] enum, a (time, sequence) queue, seeded
//! random streams, and the loop that applies events to the simulated [`World`].
//!
//! Invariants (ARCHITECTURE.md): time is an integer count of nanoseconds and only moves
//! forward; events at the same instant run in the order they were scheduled; nothing reads a
//! wall clock; all randomness comes from [`rng::Stream`]s keyed by the scenario seed; every
//! collection that is iterated is ordered. Hence the same scenario and seed give the same
//! event log, byte for byte.
//!
//! Snapshots: [`Simulation::run_until`] processes every event with time ≤ T, so a snapshot
//! taken right after sees exactly "the state after every event with time ≤ T" (SPEC §2.6).

pub mod queue;
pub mod rng;

use std::collections::BTreeSet;

use crate::model::action::Action;
use crate::model::time::SimTime;
use crate::model::topology::{NodeId, Topology};
use crate::scenario::Scenario;
use queue::EventQueue;

/// Everything that can happen in a simulation.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A scenario action (SPEC §2.5), by index in [`Scenario::actions`].
    Scenario(usize),
}

/// The simulated cluster's mutable state.
#[derive(Clone, Debug)]
pub struct World {
    pub topology: Topology,
}

/// One line of the event log (`events.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LogEntry {
    #[serde(rename = "timeUs")]
    pub time_us: u64,
    pub kind: &'static str,
    pub subject: String,
    pub outcome: String,
}

/// The state at one instant, as expectations and reports see it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    #[serde(rename = "timeUs")]
    pub time_us: u64,
    pub nodes: usize,
    pub nodes_up: usize,
    pub nodes_down: Vec<String>,
    pub links_down: Vec<[String; 2]>,
}

/// A running simulation of one scenario.
pub struct Simulation<'s> {
    scenario: &'s Scenario,
    now: SimTime,
    queue: EventQueue<Event>,
    world: World,
    log: Vec<LogEntry>,
    /// When the world last changed (SPEC §3.1: a run lasts at least until then).
    last_change: SimTime,
}

/// What a finished run leaves behind.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub end: SimTime,
    pub world: World,
    pub log: Vec<LogEntry>,
    /// Snapshots at each distinct `at:` of the expectations, in time order.
    pub snapshots: Vec<Snapshot>,
    pub last: Snapshot,
}

impl<'s> Simulation<'s> {
    pub fn new(scenario: &'s Scenario) -> Simulation<'s> {
        let mut queue = EventQueue::new();
        for (i, action) in scenario.actions.iter().enumerate() {
            queue.push(action.at, Event::Scenario(i));
        }
        Simulation {
            scenario,
            now: SimTime::ZERO,
            queue,
            world: World {
                topology: scenario.topology.clone(),
            },
            log: Vec::new(),
            last_change: SimTime::ZERO,
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
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
        match event {
            Event::Scenario(i) => self.apply(i),
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
        self.now = end;
        let last = self.snapshot();
        Outcome {
            end,
            world: self.world,
            log: self.log,
            snapshots,
            last,
        }
    }

    fn record(&mut self, kind: &'static str, subject: String, outcome: impl Into<String>) {
        self.last_change = self.now;
        self.log.push(LogEntry {
            time_us: self.now.as_micros(),
            kind,
            subject,
            outcome: outcome.into(),
        });
    }

    /// Applies scenario action `i` to the world.
    fn apply(&mut self, i: usize) {
        let action = self.scenario.actions[i].action.clone();
        let topo = &mut self.world.topology;
        match action {
            Action::NodeDown(name) | Action::NodeUp(name) => {
                let down = matches!(self.scenario.actions[i].action, Action::NodeDown(_));
                let kind = if down { "nodeDown" } else { "nodeUp" };
                let Some(id) = topo.node_by_name(&name) else {
                    return self.record(kind, name, "ignored: no such node");
                };
                let node = topo.node_mut(id);
                let outcome = if node.deleted {
                    "ignored: node deleted"
                } else if node.down == down {
                    if down {
                        "ignored: already down"
                    } else {
                        "ignored: already up"
                    }
                } else {
                    node.down = down;
                    if down { "down" } else { "up" }
                };
                self.record(kind, name, outcome);
            }
            Action::DeleteNode(name) => {
                let outcome = match topo.node_by_name(&name) {
                    Some(id) if !topo.node(id).deleted => {
                        topo.node_mut(id).deleted = true;
                        "deleted"
                    }
                    _ => "ignored: no such node",
                };
                self.record("deleteNode", name, outcome);
            }
            Action::AddNodes(add) => {
                let mut added: Vec<NodeId> = Vec::new();
                for node in add.nodes {
                    added.push(topo.add_node(add.rack, node));
                }
                for id in added {
                    let (name, ip) = {
                        let n = self.world.topology.node(id);
                        (n.name.clone(), n.ip)
                    };
                    self.record("addNode", name, format!("joined with address {ip}"));
                }
            }
            Action::LinkDown(a, b) | Action::LinkUp(a, b) => {
                let up = matches!(self.scenario.actions[i].action, Action::LinkUp(..));
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
            }
            // Workloads, pods and resources are simulated by the IPAM layer; until it handles
            // them the action is logged as not applied, never silently dropped.
            Action::Scale { .. }
            | Action::DeletePods(_)
            | Action::Apply { .. }
            | Action::Delete { .. } => {
                let kind = action.kind();
                let subject = match &action {
                    Action::Scale {
                        workload,
                        namespace,
                        ..
                    } => format!("{namespace}/{workload}"),
                    Action::Delete { kind, name } => format!("{kind}/{name}"),
                    Action::Apply { resource } => {
                        let r = &self.scenario.applied[*resource];
                        format!("{}/{}", r.kind, r.name)
                    }
                    Action::DeletePods(d) => format!("{d:?}"),
                    _ => String::new(),
                };
                self.log.push(LogEntry {
                    time_us: self.now.as_micros(),
                    kind,
                    subject,
                    outcome: "not simulated yet".to_string(),
                });
            }
        }
    }

    /// The state now.
    pub fn snapshot(&self) -> Snapshot {
        let topo = &self.world.topology;
        let live: Vec<_> = topo.live_nodes().collect();
        let nodes_down = live
            .iter()
            .filter(|(_, n)| n.down)
            .map(|(_, n)| n.name.clone())
            .collect();
        let links_down = topo
            .links
            .iter()
            .filter(|l| !l.up)
            .map(|l| [topo.device(l.a).name.clone(), topo.device(l.b).name.clone()])
            .collect();
        Snapshot {
            time_us: self.now.as_micros(),
            nodes: live.len(),
            nodes_up: live.iter().filter(|(_, n)| !n.down).count(),
            nodes_down,
            links_down,
        }
    }
}
