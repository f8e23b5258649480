//! Network policy in the simulated world: the policy state in force (changed by `apply` and
//! `delete` events) and the workload endpoints a snapshot hands to the policy engine.
//!
//! Invariants: policy is enforced only when a non-staged policy exists (SPEC §7: `network.policy`
//! defaults to `enforce` then), so a scenario without policy takes exactly the paths it took
//! before; endpoints exist only for pods with an address, keyed as the dataplane keys them.
//! What this is not: no evaluation (`policy::eval`), no decoding (`scenario`).

use std::collections::BTreeMap;

use super::World;
use crate::forwarding::PodKey;
use crate::forwarding::connect::PolicyInputs;
use crate::model::topology::Os;
use crate::model::workload::Workload;
use crate::policy::eval::Endpoint;
use crate::policy::model::endpoint_labels;

/// The service account a pod runs as when its workload names none (Kubernetes' default).
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The policy inputs of the world as it is now, or `None` when no policy is enforced.
pub fn inputs(world: &World, workloads: &[Workload]) -> Option<PolicyInputs> {
    if !world.policy.has_enforced_policy() {
        return None;
    }
    let mut endpoints = BTreeMap::new();
    for pod in world.cluster.pods() {
        let (Some(address), Some(node)) = (&pod.address, pod.node) else {
            continue;
        };
        let Some(workload) = workloads.get(pod.workload) else {
            continue;
        };
        let service_account = DEFAULT_SERVICE_ACCOUNT;
        endpoints.insert(
            PodKey(pod.id.0),
            Endpoint {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                ip: address.ip,
                labels: endpoint_labels(&workload.labels, &pod.namespace, service_account),
                service_account: service_account.to_string(),
                ports: Vec::new(),
                windows: world.topology.node(node).os == Os::Windows,
            },
        );
    }
    Some(PolicyInputs {
        set: world.policy.clone(),
        endpoints,
    })
}
