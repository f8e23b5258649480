//! Services in the simulated world: the Services in force with their cluster IPs (the API
//! server's allocator), and the EndpointSlices the control plane derives from the pods.
//!
//! Cluster IPs come from `network.serviceClusterIPRange` in creation order: the lowest free
//! address after the range's first host address, which Kubernetes gives to the `kubernetes`
//! Service of `default` (podnet keeps it reserved). A Service that names its `clusterIP`
//! takes it if it is free and in the range; an applied Service that already exists keeps its
//! address (`clusterIP` is immutable); a deleted one frees it.
//!
//! EndpointSlices (REFERENCE-policy §5): the pods of the Service's namespace whose labels
//! match its selector and that have an address; `ready` when the pod is Running (a pod whose
//! node is down is Unknown, so not ready); each Service port resolved on each pod, a named
//! `targetPort` through the pod's container ports with that name and protocol.
//!
//! Invariants: at most one Service per (namespace, name) and per cluster IP; iteration is in
//! (namespace, name) order and backends in address order.
//! What this is not: no DNAT (`forwarding::service`), no BGP advertisement.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use ipnet::Ipv4Net;

use super::World;
use crate::forwarding::PodKey;
use crate::forwarding::service::{Backend, ServiceTable, ServiceView};
use crate::model::service::{ClusterIpSpec, Service, TargetPort};
use crate::model::workload::{PodStatus, Workload};

/// A Service in force with the cluster IP it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    pub service: Service,
    pub cluster_ip: Option<Ipv4Addr>,
}

/// The Services in force and the cluster IPs in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Services {
    range: Ipv4Net,
    by_key: BTreeMap<(String, String), Installed>,
    used: BTreeSet<Ipv4Addr>,
}

impl Services {
    pub fn new(range: Ipv4Net) -> Services {
        Services {
            range,
            by_key: BTreeMap::new(),
            used: BTreeSet::new(),
        }
    }

    /// The first address Services may get (the one after the `kubernetes` Service's).
    fn first(&self) -> u32 {
        u32::from(self.range.network()) + 2
    }

    /// Creates or changes a Service, giving it a cluster IP; `Err` says why the API server
    /// would refuse it (the Service is then unchanged).
    pub fn apply(&mut self, s: &Service) -> Result<Option<Ipv4Addr>, String> {
        let key = s.key();
        let existing = self.by_key.get(&key).and_then(|i| i.cluster_ip);
        let ip = match (s.cluster_ip, existing) {
            (ClusterIpSpec::Headless, None) => None,
            (ClusterIpSpec::Headless, Some(old)) => {
                return Err(format!(
                    "clusterIP is immutable: `None` would replace {old}"
                ));
            }
            (ClusterIpSpec::Fixed(ip), Some(old)) if ip != old => {
                return Err(format!("clusterIP is immutable: {ip} would replace {old}"));
            }
            (_, Some(old)) => Some(old),
            (ClusterIpSpec::Fixed(ip), None) => {
                let host = u32::from(ip);
                if !self.range.contains(&ip)
                    || host < self.first() - 1
                    || ip == self.range.broadcast()
                {
                    return Err(format!(
                        "clusterIP {ip} is not in the valid range {}",
                        self.range
                    ));
                }
                if self.used.contains(&ip) || host == self.first() - 1 {
                    return Err(format!("clusterIP {ip} is already allocated"));
                }
                Some(ip)
            }
            (ClusterIpSpec::Allocate, None) if self.by_key.contains_key(&key) => {
                // A headless Service cannot become one with a VIP (immutable).
                return Err("clusterIP is immutable: the Service is headless".to_string());
            }
            (ClusterIpSpec::Allocate, None) => {
                let last = u32::from(self.range.broadcast()) - 1;
                let free = (self.first()..=last)
                    .map(Ipv4Addr::from)
                    .find(|ip| !self.used.contains(ip));
                match free {
                    Some(ip) => Some(ip),
                    None => {
                        return Err(format!(
                            "the service cluster IP range {} is full",
                            self.range
                        ));
                    }
                }
            }
        };
        if let Some(ip) = ip {
            self.used.insert(ip);
        }
        self.by_key.insert(
            key,
            Installed {
                service: s.clone(),
                cluster_ip: ip,
            },
        );
        Ok(ip)
    }

    /// Deletes `namespace/name`, or every Service called `name` when no namespace is given
    /// (an event's `delete` names a resource by `metadata.name`); whether any existed.
    pub fn delete(&mut self, name: &str) -> bool {
        let doomed: Vec<(String, String)> = self
            .by_key
            .keys()
            .filter(|(ns, n)| match name.split_once('/') {
                Some((want_ns, want)) => ns == want_ns && n == want,
                None => n == name,
            })
            .cloned()
            .collect();
        for key in &doomed {
            if let Some(ip) = self.by_key.remove(key).and_then(|i| i.cluster_ip) {
                self.used.remove(&ip);
            }
        }
        !doomed.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Installed> {
        self.by_key.values()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// The Services of the world as they are now, with their EndpointSlices.
pub fn table(world: &World, workloads: &[Workload], seed: u64) -> ServiceTable {
    table_where(world, workloads, seed, |_| true)
}

/// [`table`] with the EndpointSlices of only the Services `wanted` picks (the others' are
/// left empty), for a caller that reads only those: with none picked no pod is looked at,
/// so an event costs nothing per pod.
pub fn table_where(
    world: &World,
    workloads: &[Workload],
    seed: u64,
    wanted: impl Fn(&Service) -> bool,
) -> ServiceTable {
    let installed: Vec<&Installed> = world.services.iter().collect();
    let picked: Vec<&Service> = installed
        .iter()
        .map(|i| &i.service)
        .filter(|s| wanted(s))
        .collect();
    let mut slices = endpoint_slices(world, workloads, &picked).into_iter();
    let services = installed
        .into_iter()
        .map(|i| ServiceView {
            backends: if wanted(&i.service) {
                slices.next().unwrap_or_default()
            } else {
                Vec::new()
            },
            service: i.service.clone(),
            cluster_ip: i.cluster_ip,
        })
        .collect();
    ServiceTable { seed, services }
}

/// The EndpointSlice of each of `services`, in their order, from one pass over the pods:
/// a pod is matched only against the Services of its own namespace (pods + matches per
/// call, not pods × Services).
fn endpoint_slices(
    world: &World,
    workloads: &[Workload],
    services: &[&Service],
) -> Vec<Vec<Backend>> {
    let mut out: Vec<Vec<Backend>> = vec![Vec::new(); services.len()];
    if services.is_empty() {
        return out;
    }
    let mut by_namespace: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in services.iter().enumerate() {
        by_namespace
            .entry(s.namespace.as_str())
            .or_default()
            .push(i);
    }
    for pod in world.cluster.pods() {
        let Some(of_namespace) = by_namespace.get(pod.namespace.as_str()) else {
            continue;
        };
        let (Some(ip), Some(node)) = (pod.ip(&world.topology), pod.node) else {
            continue;
        };
        let Some(workload) = workloads.get(pod.workload.index()) else {
            continue;
        };
        for &i in of_namespace {
            let s = services[i];
            if !s.selects(&workload.labels) {
                continue;
            }
            let target_ports = s
                .ports
                .iter()
                .map(|p| match &p.target_port {
                    TargetPort::Number(n) => Some(*n),
                    TargetPort::Name(name) => workload
                        .ports
                        .iter()
                        .find(|c| {
                            c.name.as_deref() == Some(name.as_str()) && c.protocol == p.protocol
                        })
                        .map(|c| c.container_port),
                })
                .collect();
            out[i].push(Backend {
                pod: PodKey(pod.id.0),
                name: pod.key(),
                ip,
                node: world.topology.node(node).device,
                ready: pod.status() == PodStatus::Running,
                target_ports,
            });
        }
    }
    for slice in &mut out {
        slice.sort_by(|a, b| a.ip.cmp(&b.ip).then_with(|| a.name.cmp(&b.name)));
    }
    out
}

/// One change of a Service's endpoints: at `time_us`, `ready` of `endpoints` listed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSample {
    pub time_us: u64,
    pub ready: usize,
    pub endpoints: usize,
}

/// Each Service's endpoint counts over time (`namespace/name` → one sample per instant a
/// count changed, the last state of that instant); a deleted Service gets a sample of zeros.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointSeries {
    pub by_service: BTreeMap<String, Vec<EndpointSample>>,
}

impl EndpointSeries {
    /// Records the counts of every Service at `time_us` where they changed.
    pub fn observe(&mut self, time_us: u64, world: &World, workloads: &[Workload]) {
        let mut seen = BTreeSet::new();
        let installed: Vec<&Installed> = world.services.iter().collect();
        let services: Vec<&Service> = installed.iter().map(|i| &i.service).collect();
        let slices = endpoint_slices(world, workloads, &services);
        for (i, b) in installed.iter().zip(slices) {
            let name = format!("{}/{}", i.service.namespace, i.service.name);
            let sample = EndpointSample {
                time_us,
                ready: b.iter().filter(|b| b.ready).count(),
                endpoints: b.len(),
            };
            self.push(&name, sample);
            seen.insert(name);
        }
        let gone: Vec<String> = self
            .by_service
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        for name in gone {
            self.push(
                &name,
                EndpointSample {
                    time_us,
                    ready: 0,
                    endpoints: 0,
                },
            );
        }
    }

    fn push(&mut self, name: &str, sample: EndpointSample) {
        let samples = self.by_service.entry(name.to_string()).or_default();
        match samples.last_mut() {
            Some(last) if (last.ready, last.endpoints) == (sample.ready, sample.endpoints) => {}
            Some(last) if last.time_us == sample.time_us => *last = sample,
            _ => samples.push(sample),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::service::ServicePort;
    use crate::model::workload::PortProtocol;

    fn svc(name: &str, ip: ClusterIpSpec) -> Service {
        let port = ServicePort {
            name: None,
            protocol: PortProtocol::Tcp,
            port: 80,
            target_port: TargetPort::Number(80),
            node_port: None,
        };
        Service {
            cluster_ip: ip,
            ..Service::new("default", name, vec![port])
        }
    }

    #[test]
    fn cluster_ips_are_allocated_in_creation_order_after_the_kubernetes_service() {
        // 10.96.0.0/12: 10.96.0.0 is the network, 10.96.0.1 the `kubernetes` Service.
        let mut s = Services::new("10.96.0.0/12".parse().unwrap());
        let a = s.apply(&svc("a", ClusterIpSpec::Allocate)).unwrap();
        let fixed = s
            .apply(&svc("f", ClusterIpSpec::Fixed(Ipv4Addr::new(10, 96, 0, 3))))
            .unwrap();
        let b = s.apply(&svc("b", ClusterIpSpec::Allocate)).unwrap();
        let c = s.apply(&svc("c", ClusterIpSpec::Allocate)).unwrap();
        assert_eq!(a, Some(Ipv4Addr::new(10, 96, 0, 2)));
        assert_eq!(fixed, Some(Ipv4Addr::new(10, 96, 0, 3)));
        assert_eq!(b, Some(Ipv4Addr::new(10, 96, 0, 4)));
        assert_eq!(c, Some(Ipv4Addr::new(10, 96, 0, 5)));
        // Re-applying keeps the address; deleting frees it for the next Service.
        assert_eq!(s.apply(&svc("a", ClusterIpSpec::Allocate)).unwrap(), a);
        assert!(s.delete("default/a"));
        assert_eq!(s.apply(&svc("d", ClusterIpSpec::Allocate)).unwrap(), a);
        assert_eq!(s.apply(&svc("h", ClusterIpSpec::Headless)).unwrap(), None);
    }

    #[test]
    fn the_api_server_refusals() {
        let mut s = Services::new("10.96.0.0/30".parse().unwrap());
        // A /30 has 10.96.0.1 (kubernetes) and 10.96.0.2 only.
        assert!(s.apply(&svc("a", ClusterIpSpec::Allocate)).is_ok());
        let full = s.apply(&svc("b", ClusterIpSpec::Allocate)).unwrap_err();
        assert!(full.contains("is full"), "{full}");
        let outside = s
            .apply(&svc("c", ClusterIpSpec::Fixed(Ipv4Addr::new(10, 97, 0, 1))))
            .unwrap_err();
        assert!(outside.contains("not in the valid range"), "{outside}");
        let taken = s
            .apply(&svc("d", ClusterIpSpec::Fixed(Ipv4Addr::new(10, 96, 0, 2))))
            .unwrap_err();
        assert!(taken.contains("already allocated"), "{taken}");
        let kubernetes = s
            .apply(&svc("e", ClusterIpSpec::Fixed(Ipv4Addr::new(10, 96, 0, 1))))
            .unwrap_err();
        assert!(kubernetes.contains("already allocated"), "{kubernetes}");
        let immutable = s
            .apply(&svc("a", ClusterIpSpec::Fixed(Ipv4Addr::new(10, 96, 0, 1))))
            .unwrap_err();
        assert!(immutable.contains("immutable"), "{immutable}");
    }
}
