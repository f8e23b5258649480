//! Scenario events (SPEC §2.5): the actions a scenario plays at given times.

use super::time::{SimDuration, SimTime};
use super::topology::{NewNode, RackId};

/// An action at a time; actions at the same time run in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduledAction {
    pub at: SimTime,
    pub action: Action,
}

/// A resource an `apply` event applies: its place in `Scenario::applied` (and
/// `Scenario::applied_specs`), which never changes during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppliedId(pub u32);

impl AppliedId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Scale {
        workload: String,
        namespace: String,
        replicas: u32,
    },
    NodeDown(String),
    NodeUp(String),
    /// The node's BGP daemon dies and starts again after `down_for`; the host keeps
    /// forwarding (graceful restart, REFERENCE §4.4).
    RestartBgp {
        node: String,
        down_for: SimDuration,
    },
    DeleteNode(String),
    AddNodes(AddNodes),
    LinkDown(String, String),
    LinkUp(String, String),
    DeletePods(DeletePods),
    /// A resource applied at run time, kept validated in `Scenario::applied`.
    Apply {
        resource: AppliedId,
    },
    Delete {
        kind: String,
        name: String,
    },
}

impl Action {
    /// The action's key as written in YAML.
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Scale { .. } => "scale",
            Action::NodeDown(_) => "nodeDown",
            Action::NodeUp(_) => "nodeUp",
            Action::RestartBgp { .. } => "restartBgp",
            Action::DeleteNode(_) => "deleteNode",
            Action::AddNodes(_) => "addNodes",
            Action::LinkDown(..) => "linkDown",
            Action::LinkUp(..) => "linkUp",
            Action::DeletePods(_) => "deletePods",
            Action::Apply { .. } => "apply",
            Action::Delete { .. } => "delete",
        }
    }
}

/// `addNodes`: nodes named `namePrefix-1…` joining a rack. Names, addresses and labels are
/// resolved when the scenario is validated, exactly as for generators in the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct AddNodes {
    pub rack: RackId,
    pub nodes: Vec<NewNode>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum DeletePods {
    /// The `count` highest-indexed pods of a workload.
    Workload {
        workload: String,
        namespace: String,
        count: u32,
    },
    /// One pod, `name` or `namespace/name`.
    Pod(String),
}
