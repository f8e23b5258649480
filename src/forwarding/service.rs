//! A connection to a Service's virtual IP: kube-proxy's DNAT to one ready backend, then
//! [`connect`] with the translated destination (REFERENCE-policy §0, §3.4, §5).
//!
//! The Services of an instant are plain data ([`ServiceTable`]): each Service with its
//! cluster IP and its EndpointSlice rows (backend pods, ready or not, with the target port
//! each Service port resolves to on that pod). [`dnat`] picks the backend of one connection:
//! the candidates are the ready backends that resolve the port (with
//! `publishNotReadyAddresses` every listed backend), narrowed by `internalTrafficPolicy:
//! Local` to the client's node; none left is the verdict `no-endpoints`. kube-proxy draws the
//! backend at random per connection; podnet draws it from the scenario seed keyed by the
//! client address, the Service and the port (SplitMix64, as the block start index), so one
//! scenario and seed always give the same choice. With `sessionAffinity: ClientIP` that
//! backend is the only one the client ever reaches; without affinity, other connections go to
//! the other candidates, which the outcome lists so that answers about every connection
//! ("reachable", "isolated") can look at all of them.
//!
//! Invariants: candidates are ordered by pod address, so the draw does not depend on the
//! order pods were listed; policy always sees the backend's address and target port (the
//! packet handed to [`connect`] is already translated).
//! What this is not: no SNAT (kube-proxy masquerades pod-to-ClusterIP traffic only in special
//! cases, §3.4), no NodePort, no entry from outside the cluster (`service_entry`, which
//! shares [`dnat_with`]).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use super::connect::{Connection, Policing, connect};
use super::dataplane::Dataplane;
use super::fib::PodKey;
use super::walk::Source;
use crate::model::hash::{hash_of, splitmix64};
use crate::model::service::{Service, SessionAffinity, TrafficPolicy};
use crate::model::topology::DeviceId;
use crate::policy::eval::Packet;
use crate::policy::model::Protocol;

/// One endpoint of a Service as its EndpointSlice lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backend {
    pub pod: PodKey,
    /// `namespace/name` of the pod.
    pub name: String,
    pub ip: IpAddr,
    /// The node (device) the pod runs on.
    pub node: DeviceId,
    /// EndpointSlice condition `ready`: the pod is Running on a node that is up.
    pub ready: bool,
    /// Per entry of the Service's `ports`: the target port on this pod, `None` when a named
    /// `targetPort` names no container port of this pod (the port is left out of its slice).
    pub target_ports: Vec<Option<u16>>,
}

/// A Service at an instant: its cluster IP (none when headless) and its endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceView {
    pub service: Service,
    pub cluster_ip: Option<Ipv4Addr>,
    /// Ordered by pod address.
    pub backends: Vec<Backend>,
}

/// Every Service of an instant, ordered by namespace and name, and the seed for backend
/// choices.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceTable {
    pub seed: u64,
    pub services: Vec<ServiceView>,
}

impl ServiceTable {
    pub fn get(&self, namespace: &str, name: &str) -> Option<&ServiceView> {
        self.services
            .iter()
            .find(|s| s.service.namespace == namespace && s.service.name == name)
    }

    /// What Calico `services` rules match, per Service: every endpoint its EndpointSlices
    /// list (ready or not: felix takes the slices' addresses as they are) with each port's
    /// protocol and the target port it resolves to on that pod.
    pub fn policy_endpoints(
        &self,
    ) -> BTreeMap<(String, String), Vec<crate::policy::eval::ServiceEndpoint>> {
        self.services
            .iter()
            .map(|v| {
                let s = &v.service;
                let mut list: Vec<_> = v
                    .backends
                    .iter()
                    .flat_map(|b| {
                        s.ports.iter().zip(&b.target_ports).filter_map(|(p, t)| {
                            t.map(|port| (b.ip, Protocol::from(p.protocol), port))
                        })
                    })
                    .collect();
                list.sort();
                list.dedup();
                ((s.namespace.clone(), s.name.clone()), list)
            })
            .collect()
    }

    /// The Service whose cluster IP this is.
    pub fn by_cluster_ip(&self, ip: IpAddr) -> Option<&ServiceView> {
        self.services
            .iter()
            .find(|s| s.cluster_ip.is_some_and(|c| IpAddr::V4(c) == ip))
    }
}

/// Why a Service connection has no backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoBackend {
    /// The Service is headless: there is no virtual IP to translate.
    Headless,
    /// No entry of `ports` has this port and protocol (the VIP refuses it).
    NoSuchPort,
    /// No ready endpoint resolves the port (`no-endpoints`); `local_only` when
    /// `internalTrafficPolicy: Local` left out endpoints on other nodes.
    NoEndpoints { local_only: bool },
}

impl std::fmt::Display for NoBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoBackend::Headless => f.write_str("headless Service: no virtual IP"),
            NoBackend::NoSuchPort => f.write_str("no such Service port"),
            NoBackend::NoEndpoints { local_only: false } => f.write_str("no-endpoints"),
            NoBackend::NoEndpoints { local_only: true } => f.write_str(
                "no-endpoints (internalTrafficPolicy Local: no ready endpoint on the client's node)",
            ),
        }
    }
}

/// kube-proxy's translation of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dnat {
    /// Index into the Service's `ports`.
    pub port_index: usize,
    /// Indices into the view's `backends` that this client could be sent to (after the
    /// traffic policy), in address order.
    pub candidates: Vec<usize>,
    /// The one this connection goes to (an element of `candidates`).
    pub chosen: usize,
    /// `sessionAffinity: ClientIP`: every connection of this client goes to `chosen`.
    pub sticky: bool,
}

impl Dnat {
    /// The candidates a connection of this client can reach: only `chosen` with ClientIP
    /// affinity, every candidate otherwise.
    pub fn reachable_candidates(&self) -> Vec<usize> {
        if self.sticky {
            vec![self.chosen]
        } else {
            self.candidates.clone()
        }
    }
}

/// The backend of a connection from `client` (address, and node when it is in the cluster)
/// to `view`'s cluster IP on `port`/`protocol`.
pub fn dnat(
    seed: u64,
    view: &ServiceView,
    client: IpAddr,
    client_node: Option<DeviceId>,
    port: u16,
    protocol: Protocol,
) -> Result<Dnat, NoBackend> {
    let local = view.service.internal_traffic_policy == TrafficPolicy::Local;
    dnat_with(
        seed,
        view,
        client,
        client_node.filter(|_| local),
        port,
        protocol,
    )
}

/// [`dnat`] with the traffic policy already applied: `local_to` keeps only the endpoints on
/// that node (`internalTrafficPolicy: Local` for a client in the cluster, or
/// `externalTrafficPolicy: Local` at the node an external's packet reached).
pub fn dnat_with(
    seed: u64,
    view: &ServiceView,
    client: IpAddr,
    local_to: Option<DeviceId>,
    port: u16,
    protocol: Protocol,
) -> Result<Dnat, NoBackend> {
    if view.cluster_ip.is_none() {
        return Err(NoBackend::Headless);
    }
    let s = &view.service;
    let port_index = protocol
        .port_protocol()
        .and_then(|pp| {
            s.ports
                .iter()
                .position(|p| p.port == port && p.protocol == pp)
        })
        .ok_or(NoBackend::NoSuchPort)?;
    let serving = |b: &Backend| {
        (b.ready || s.publish_not_ready_addresses)
            && b.target_ports.get(port_index).copied().flatten().is_some()
    };
    let local_only = local_to.is_some();
    let candidates: Vec<usize> = view
        .backends
        .iter()
        .enumerate()
        .filter(|(_, b)| serving(b) && local_to.is_none_or(|n| b.node == n))
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return Err(NoBackend::NoEndpoints { local_only });
    }
    let mut state = seed ^ hash_of(&(client, &s.namespace, &s.name, port, protocol.0));
    let draw = splitmix64(&mut state);
    let chosen = candidates[(draw % candidates.len() as u64) as usize];
    Ok(Dnat {
        port_index,
        candidates,
        chosen,
        sticky: s.session_affinity == SessionAffinity::ClientIp,
    })
}

/// A connection to a Service: the translation, then the connection to each backend the
/// client could be sent to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceConnection {
    pub dnat: Result<Dnat, NoBackend>,
    /// The connection to the chosen backend (`None` without a backend, or when the source is
    /// not in the dataplane).
    pub chosen: Option<Connection>,
    /// The connections to the other candidates, in candidate order (`(backend index,
    /// connection)`).
    pub others: Vec<(usize, Connection)>,
}

impl ServiceConnection {
    /// Whether the connection this trace follows is delivered.
    pub fn delivered(&self) -> bool {
        self.chosen.as_ref().is_some_and(|c| c.verdict.delivered())
    }
}

/// Follows a new connection from `from` to `view`'s cluster IP with `packet` (whose
/// destination port is the Service port): DNAT, then [`connect`] to the backend's address
/// with the packet's port rewritten to the target port; and to every other candidate, which
/// other connections of the client may reach.
pub fn connect_service(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    table: &ServiceTable,
    view: &ServiceView,
    from: Source,
    packet: &Packet,
    explain: bool,
) -> Option<ServiceConnection> {
    let (client, client_node) = match from {
        Source::Pod(k) => {
            let p = dp.pod(k)?;
            (p.ip, Some(p.device))
        }
        Source::Device(d) => (dp.address(d)?, Some(d)),
    };
    let Some(port) = packet.protocol.has_ports().then_some(packet.port) else {
        return Some(ServiceConnection {
            dnat: Err(NoBackend::NoSuchPort),
            chosen: None,
            others: Vec::new(),
        });
    };
    let dnat = dnat(table.seed, view, client, client_node, port, packet.protocol);
    let Ok(d) = &dnat else {
        return Some(ServiceConnection {
            dnat,
            chosen: None,
            others: Vec::new(),
        });
    };
    let to_backend = |i: usize| {
        let b = &view.backends[i];
        let mut translated = *packet;
        translated.port = b.target_ports[d.port_index]?;
        connect(dp, policing, from, b.ip, &translated, explain)
    };
    let chosen = to_backend(d.chosen);
    let others = d
        .candidates
        .iter()
        .filter(|&&i| i != d.chosen)
        .filter_map(|&i| Some((i, to_backend(i)?)))
        .collect();
    Some(ServiceConnection {
        dnat,
        chosen,
        others,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::service::{ServicePort, TargetPort};
    use crate::model::workload::PortProtocol;

    fn service() -> Service {
        let ports = vec![
            ServicePort {
                name: Some("sql".into()),
                protocol: PortProtocol::Tcp,
                port: 3306,
                target_port: TargetPort::Name("sql".into()),
                node_port: None,
            },
            ServicePort {
                name: Some("dns".into()),
                protocol: PortProtocol::Udp,
                port: 53,
                target_port: TargetPort::Number(5353),
                node_port: None,
            },
        ];
        Service::new("shop", "store", ports)
    }

    /// (last octet, node, ready, sql target port) per backend.
    fn view(s: Service, backends: &[(u8, u32, bool, Option<u16>)]) -> ServiceView {
        ServiceView {
            service: s,
            cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 2)),
            backends: backends
                .iter()
                .map(|&(o, node, ready, sql)| Backend {
                    pod: PodKey(u64::from(o)),
                    name: format!("shop/store-{o}"),
                    ip: IpAddr::from([10, 48, 0, o]),
                    node: DeviceId(node),
                    ready,
                    target_ports: vec![sql, Some(5353)],
                })
                .collect(),
        }
    }

    fn client(o: u8) -> IpAddr {
        IpAddr::from([10, 48, 9, o])
    }

    #[test]
    fn only_ready_endpoints_that_resolve_the_port_are_candidates() {
        // store-1 ready with `sql`; store-2 not ready; store-3 ready without a container port
        // `sql` (left out of the sql port only).
        let v = view(
            service(),
            &[
                (1, 0, true, Some(3306)),
                (2, 0, false, Some(3306)),
                (3, 1, true, None),
            ],
        );
        let d = dnat(1, &v, client(1), Some(DeviceId(0)), 3306, Protocol::TCP).unwrap();
        assert_eq!(d.candidates, vec![0]);
        assert_eq!(d.chosen, 0);
        let d = dnat(1, &v, client(1), Some(DeviceId(0)), 53, Protocol::UDP).unwrap();
        assert_eq!(d.candidates, vec![0, 2]);
        // A port the Service lacks, or the right number with the wrong protocol.
        assert_eq!(
            dnat(1, &v, client(1), None, 53, Protocol::TCP),
            Err(NoBackend::NoSuchPort)
        );
        // publishNotReadyAddresses: every listed endpoint counts.
        let mut s = service();
        s.publish_not_ready_addresses = true;
        let v2 = view(s, &[(1, 0, true, Some(3306)), (2, 0, false, Some(3306))]);
        let d = dnat(1, &v2, client(1), None, 3306, Protocol::TCP).unwrap();
        assert_eq!(d.candidates, vec![0, 1]);
        // Nothing ready: no-endpoints; headless: no VIP at all.
        let none = view(service(), &[(2, 0, false, Some(3306))]);
        assert_eq!(
            dnat(1, &none, client(1), None, 3306, Protocol::TCP),
            Err(NoBackend::NoEndpoints { local_only: false })
        );
        let mut headless = view(service(), &[(1, 0, true, Some(3306))]);
        headless.cluster_ip = None;
        assert_eq!(
            dnat(1, &headless, client(1), None, 3306, Protocol::TCP),
            Err(NoBackend::Headless)
        );
    }

    #[test]
    fn services_rules_see_every_listed_endpoint_with_its_target_ports() {
        // store-1 ready with `sql` 3306; store-2 not ready (still listed in the slice);
        // store-3 without a container port `sql` (only the UDP port resolves: 5353).
        let v = view(
            service(),
            &[
                (1, 0, true, Some(3306)),
                (2, 0, false, Some(3306)),
                (3, 1, true, None),
            ],
        );
        let table = ServiceTable {
            seed: 1,
            services: vec![v],
        };
        let all = table.policy_endpoints();
        let ip = |o: u8| IpAddr::from([10, 48, 0, o]);
        assert_eq!(
            all[&("shop".to_string(), "store".to_string())],
            vec![
                (ip(1), Protocol::TCP, 3306),
                (ip(1), Protocol::UDP, 5353),
                (ip(2), Protocol::TCP, 3306),
                (ip(2), Protocol::UDP, 5353),
                (ip(3), Protocol::UDP, 5353),
            ]
        );
    }

    #[test]
    fn internal_traffic_policy_local_keeps_the_clients_node_only() {
        let mut s = service();
        s.internal_traffic_policy = TrafficPolicy::Local;
        let v = view(s, &[(1, 0, true, Some(3306)), (2, 1, true, Some(3306))]);
        let on_0 = dnat(7, &v, client(1), Some(DeviceId(0)), 3306, Protocol::TCP).unwrap();
        assert_eq!((on_0.candidates.clone(), on_0.chosen), (vec![0], 0));
        let on_1 = dnat(7, &v, client(2), Some(DeviceId(1)), 3306, Protocol::TCP).unwrap();
        assert_eq!((on_1.candidates.clone(), on_1.chosen), (vec![1], 1));
        assert_eq!(
            dnat(7, &v, client(3), Some(DeviceId(2)), 3306, Protocol::TCP),
            Err(NoBackend::NoEndpoints { local_only: true })
        );
    }

    #[test]
    fn the_choice_is_seeded_spread_and_sticky_only_with_client_ip_affinity() {
        let backends: Vec<(u8, u32, bool, Option<u16>)> =
            (1..=4).map(|o| (o, 0, true, Some(3306))).collect();
        let v = view(service(), &backends);
        let pick = |seed, c| {
            dnat(seed, &v, client(c), None, 3306, Protocol::TCP)
                .unwrap()
                .chosen
        };
        // Same seed and client: same backend; over many clients every backend is chosen.
        let picks: Vec<usize> = (0..64).map(|c| pick(1, c)).collect();
        assert_eq!(picks, (0..64).map(|c| pick(1, c)).collect::<Vec<_>>());
        for b in 0..4 {
            assert!(picks.contains(&b), "backend {b} never chosen: {picks:?}");
        }
        // Another seed changes some choices.
        assert_ne!(picks, (0..64).map(|c| pick(2, c)).collect::<Vec<_>>());
        // Without affinity any candidate may get a connection; with ClientIP only the chosen.
        let d = dnat(1, &v, client(0), None, 3306, Protocol::TCP).unwrap();
        assert!(!d.sticky);
        assert_eq!(d.reachable_candidates(), vec![0, 1, 2, 3]);
        let mut s = service();
        s.session_affinity = SessionAffinity::ClientIp;
        let sticky = view(s, &backends);
        let d = dnat(1, &sticky, client(0), None, 3306, Protocol::TCP).unwrap();
        assert!(d.sticky);
        assert_eq!(d.reachable_candidates(), vec![d.chosen]);
    }
}
