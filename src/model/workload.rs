//! Workloads as the scenario declares them (SPEC §2.4) and the pods they create.

use super::{Labels, text_enum};

text_enum! {
    pub enum WorkloadKind {
        Deployment = "Deployment",
        StatefulSet = "StatefulSet",
        DaemonSet = "DaemonSet",
        Pod = "Pod",
    }
}

text_enum! {
    /// A pod's phase as podnet reports it.
    pub enum PodStatus {
        Running = "Running",
        /// Not scheduled, or no address (the reason says which).
        Pending = "Pending",
        /// Its node is down.
        Unknown = "Unknown",
    }
}

text_enum! {
    /// A container port's protocol (Kubernetes `ContainerPort.protocol`, default TCP).
    pub enum PortProtocol {
        Tcp = "TCP",
        Udp = "UDP",
        Sctp = "SCTP",
    }
}

/// One `ports` entry of a workload's containers: what a named port in a policy resolves to
/// (REFERENCE-policy §1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerPort {
    pub name: Option<String>,
    pub container_port: u16,
    pub protocol: PortProtocol,
}

/// A workload by its place in the scenario's list (`Scenario::workloads`), which never
/// changes during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkloadId(pub u32);

impl WorkloadId {
    /// The ids of a list of workloads, in order.
    pub fn all(workloads: &[Workload]) -> impl Iterator<Item = WorkloadId> + use<> {
        (0..workloads.len() as u32).map(WorkloadId)
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A validated workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub namespace: String,
    pub kind: WorkloadKind,
    /// Desired pods; for a DaemonSet, unused (one per eligible node).
    pub replicas: u32,
    pub labels: Labels,
    pub annotations: Labels,
    pub node_selector: Labels,
    /// Every container's ports, in declaration order.
    pub ports: Vec<ContainerPort>,
    /// `serviceAccountName` (Kubernetes' default: `default`).
    pub service_account_name: String,
    /// `hostNetwork: true`: the pods use their node's address; Calico makes no workload
    /// endpoint for them, so policy selectors never match them (REFERENCE-policy §1.6).
    pub host_network: bool,
}

impl ContainerPort {
    /// Kubernetes' `IsValidPortName` (IANA_SVC_NAME): at most 15 characters, lowercase letters,
    /// digits and single inner hyphens, at least one letter.
    pub fn is_valid_name(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= 15
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && s.bytes().any(|b| b.is_ascii_lowercase())
            && !s.starts_with('-')
            && !s.ends_with('-')
            && !s.contains("--")
    }
}

impl Workload {
    /// The name of the pod with ordinal `i` (Deployment, StatefulSet) or for a bare Pod.
    pub fn pod_name(&self, i: u32) -> String {
        match self.kind {
            WorkloadKind::Pod => self.name.clone(),
            _ => format!("{}-{i}", self.name),
        }
    }

    /// The name of a DaemonSet's pod on `node`.
    pub fn daemon_pod_name(&self, node: &str) -> String {
        format!("{}-{node}", self.name)
    }

    /// Whether a pod named `pod` could belong to this workload (used to check references
    /// before the simulation runs).
    pub fn could_own(&self, pod: &str, node_names: &dyn Fn(&str) -> bool) -> bool {
        match self.kind {
            WorkloadKind::Pod => pod == self.name,
            WorkloadKind::DaemonSet => pod
                .strip_prefix(&self.name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(node_names),
            WorkloadKind::Deployment | WorkloadKind::StatefulSet => pod
                .strip_prefix(&self.name)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit())),
        }
    }
}
