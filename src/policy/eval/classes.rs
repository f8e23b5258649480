//! Classes of packets and of endpoints that policy cannot tell apart, for all-pairs
//! reachability with policy: the (protocol, port) and ICMP classes every rule treats alike,
//! and per endpoint a [`ClassKey`] of the selectors, nets and Services that match it, so that
//! endpoints with equal keys get equal verdicts (per address without an endpoint, an
//! [`AddressKey`]).
//!
//! Invariants: classes come out in a fixed order (TCP, UDP, SCTP, ICMP, ports ascending); two
//! endpoints with the same key are treated alike by every rule of the set.

use super::*;

/// The packets policy tells apart: one representative per class of (protocol, port) or
/// (ICMP type, code) that every rule treats alike, for TCP, UDP, SCTP and ICMP, in that
/// order, ports ascending (REFERENCE-policy §1.3: a rule without ports passes every protocol).
/// Port boundaries come from every rule's `ports`/`notPorts`, from every named port the
/// endpoints declare and from the target ports of the Services a rule's `destination.services`
/// names (such a rule matches only its Service's endpoint ports, REFERENCE-policy §2.4);
/// ICMP classes from every `icmp`/`notICMP` type and code.
pub fn packet_classes<'e>(
    engine: &Engine<'_>,
    endpoints: impl IntoIterator<Item = &'e Endpoint>,
) -> Vec<Packet> {
    packet_class_extents(engine, endpoints)
        .into_iter()
        .map(|c| c.packet)
        .collect()
}

/// Which packets a packet class stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// Destination ports `first..=last` of the representative's protocol.
    Ports { first: u16, last: u16 },
    /// One ICMP type: one code, or (`None`) every code no other class of the type names.
    IcmpType { icmp_type: u8, code: Option<u8> },
    /// Every ICMP type no other class names.
    IcmpOtherTypes,
}

/// A packet class: its representative and the packets it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketClass {
    pub packet: Packet,
    pub extent: Extent,
}

/// [`packet_classes`] with what each representative stands for, in the same order.
pub fn packet_class_extents<'e>(
    engine: &Engine<'_>,
    endpoints: impl IntoIterator<Item = &'e Endpoint>,
) -> Vec<PacketClass> {
    let set = engine.set;
    use std::collections::BTreeSet;
    let protocols = [Protocol::TCP, Protocol::UDP, Protocol::SCTP];
    let mut starts: Vec<BTreeSet<u16>> = vec![BTreeSet::from([1]); protocols.len()];
    let mut icmp: BTreeSet<(u8, Option<u8>)> = BTreeSet::new();
    let mut add_range = |proto: Option<Protocol>, first: u16, last: u16| {
        for (i, p) in protocols.iter().enumerate() {
            if proto.is_none_or(|q| q == *p) {
                starts[i].insert(first.max(1));
                if let Some(next) = last.checked_add(1) {
                    starts[i].insert(next);
                }
            }
        }
    };
    for policy in set.policies().filter(|p| !p.staged) {
        for rule in policy.ingress.iter().chain(&policy.egress) {
            for e in [&rule.source, &rule.destination] {
                for m in e.ports.iter().chain(&e.not_ports) {
                    if let PortMatch::Range { first, last } = m {
                        add_range(rule.protocol, *first, *last);
                    }
                }
            }
            // A destination Service matches its endpoints' ports only (a source Service
            // matches by address alone).
            let service = rule.destination.services.as_ref();
            let listed = service.and_then(|svc| {
                engine
                    .service_endpoints
                    .get(&(svc.namespace.clone(), svc.name.clone()))
            });
            for (_, protocol, port) in listed.into_iter().flatten() {
                add_range(Some(*protocol), *port, *port);
            }
            for m in rule.icmp.iter().chain(&rule.not_icmp) {
                icmp.insert((m.icmp_type, m.code));
            }
        }
    }
    for e in endpoints {
        for np in &e.ports {
            add_range(Some(np.protocol), np.port, np.port);
        }
    }
    let mut out = Vec::new();
    for (i, p) in protocols.iter().enumerate() {
        let firsts: Vec<u16> = starts[i].iter().copied().collect();
        for (j, first) in firsts.iter().enumerate() {
            let last = firsts.get(j + 1).map_or(u16::MAX, |next| next - 1);
            out.push(PacketClass {
                packet: Packet::with_port(*p, *first),
                extent: Extent::Ports {
                    first: *first,
                    last,
                },
            });
        }
    }
    // ICMP: per type named, each code named plus one unnamed; plus one unnamed type.
    let types: BTreeSet<u8> = icmp.iter().map(|(t, _)| *t).collect();
    for t in &types {
        let codes: BTreeSet<u8> = icmp
            .iter()
            .filter(|(x, _)| x == t)
            .filter_map(|(_, c)| *c)
            .collect();
        out.extend(codes.iter().map(|c| PacketClass {
            packet: Packet::icmp(*t, *c),
            extent: Extent::IcmpType {
                icmp_type: *t,
                code: Some(*c),
            },
        }));
        if let Some(other) = (0..=u8::MAX).find(|c| !codes.contains(c)) {
            out.push(PacketClass {
                packet: Packet::icmp(*t, other),
                extent: Extent::IcmpType {
                    icmp_type: *t,
                    code: None,
                },
            });
        }
    }
    if let Some(other) = [8u8]
        .into_iter()
        .chain(0..=u8::MAX)
        .find(|t| !types.contains(t))
    {
        out.push(PacketClass {
            packet: Packet::icmp(other, 0),
            extent: Extent::IcmpOtherTypes,
        });
    }
    out
}

/// What makes two endpoints interchangeable for every evaluation, as sender, receiver or
/// peer: everything selectors see (namespace, labels, service account), the named ports, the
/// node's OS, which rule nets hold the address, and which Service endpoints list it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClassKey {
    namespace: String,
    labels: std::sync::Arc<Labels>,
    service_account: String,
    ports: Vec<NamedPort>,
    windows: bool,
    nets: Vec<bool>,
    services: Vec<(String, String, Protocol, u16)>,
}

/// What rules see of an address that is no workload endpoint — a node's address, as host
/// traffic and host-network pods are seen: selectors never match it, so only which rule nets
/// hold it and which Service endpoints list it. Two addresses with equal keys are treated
/// alike by every rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AddressKey {
    nets: Vec<bool>,
    services: Vec<(String, String, Protocol, u16)>,
}

impl Engine<'_> {
    /// Every CIDR any non-staged rule names in `nets` or `notNets`, sorted.
    pub fn rule_nets(&self) -> Vec<ipnet::IpNet> {
        let mut nets: Vec<ipnet::IpNet> = self
            .tiers
            .iter()
            .flat_map(|t| &t.policies)
            .flat_map(|p| p.policy.ingress.iter().chain(&p.policy.egress))
            .flat_map(|r| [&r.source, &r.destination])
            .flat_map(|e| e.nets.iter().chain(&e.not_nets))
            .copied()
            .collect();
        nets.sort();
        nets.dedup();
        nets
    }

    /// The class key of `e` given [`Engine::rule_nets`].
    pub fn class_key(&self, e: &Endpoint, nets: &[ipnet::IpNet]) -> ClassKey {
        ClassKey {
            namespace: e.namespace.clone(),
            labels: e.labels.clone(),
            service_account: e.service_account.clone(),
            ports: e.ports.clone(),
            windows: e.windows,
            nets: nets.iter().map(|n| n.contains(&e.ip)).collect(),
            services: self.services_listing(e.ip),
        }
    }

    /// The key of an address that is no workload endpoint (a node's, for its host traffic)
    /// given [`Engine::rule_nets`].
    pub fn address_key(&self, ip: std::net::IpAddr, nets: &[ipnet::IpNet]) -> AddressKey {
        AddressKey {
            nets: nets.iter().map(|n| n.contains(&ip)).collect(),
            services: self.services_listing(ip),
        }
    }

    /// The Service endpoints that list `ip`, sorted.
    fn services_listing(&self, ip: std::net::IpAddr) -> Vec<(String, String, Protocol, u16)> {
        let mut services: Vec<(String, String, Protocol, u16)> = self
            .service_endpoints
            .iter()
            .flat_map(|((ns, name), list)| {
                list.iter()
                    .filter(|(at, _, _)| *at == ip)
                    .map(move |(_, proto, port)| (ns.clone(), name.clone(), *proto, *port))
            })
            .collect();
        services.sort();
        services
    }
}
