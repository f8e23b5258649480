//! Building the expectations: each check's fields, and what it may name — everything that
//! exists at some time of the run (SPEC §2.6); what never exists is invalid input.

use super::*;

/// The expectations as written and what their `when:` is judged by: the scenario's fields as
/// loaded and, in a sweep, the swept ones (`Gathered::when_values`, `Gathered::swept`).
pub(super) struct Fields<'a> {
    pub expect: &'a [(String, Loc<RawExpectation>)],
    pub values: &'a BTreeMap<String, String>,
    pub swept: Option<&'a BTreeSet<String>>,
}

impl Builder<'_> {
    pub(super) fn expectations(
        &mut self,
        fields: &Fields,
        workloads: &[Workload],
        pool_names: &BTreeSet<String>,
        declared_pools: &BTreeMap<String, Pos>,
        services: &BTreeSet<(String, String)>,
        externals: &[crate::model::external::External],
    ) -> Vec<Expectation> {
        let mut out = Vec::new();
        // Every name a node or device can have (topology, routers, `addNodes`), built once.
        let known_nodes: BTreeMap<String, bool> =
            self.names.keys().map(|n| (n.clone(), true)).collect();
        let pod_names = PodNames::new(workloads);
        let refs = References {
            workloads: &pod_names,
            pools: pool_names,
            declared_pools,
            devices: &known_nodes,
            services,
            externals,
        };
        // Default names already given, with how often: a name is the expectation's content
        // (kind, summary, time), not its position, so inserting another expectation renames
        // nothing (JUnit test names stay stable); identical ones are numbered in order.
        let mut given: BTreeMap<String, usize> = BTreeMap::new();
        for (path, ex) in fields.expect {
            self.cx.with_path_prefix(path, |cx| {
                let mut b = Builder {
                    cx,
                    names: std::mem::take(&mut self.names),
                };
                let when = b.when(&ex.value, fields);
                if let Some(check) = b.check(&ex.value, &refs) {
                    let at = ex.value.at.as_ref().map(|a| SimTime::ZERO + a.value);
                    let name = match &ex.value.name {
                        Some(n) => n.value.clone(),
                        None => {
                            let mut name = format!("{} {}", check.kind(), check.summary())
                                .trim_end()
                                .to_string();
                            if let Some(at) = at {
                                name.push_str(&format!(" at {at}"));
                            }
                            if !when.is_empty() {
                                let conditions: Vec<String> =
                                    when.iter().map(ToString::to_string).collect();
                                name.push_str(&format!(" when {}", conditions.join(" ")));
                            }
                            let seen = given.entry(name.clone()).or_default();
                            *seen += 1;
                            if *seen > 1 {
                                name.push_str(&format!(" ({seen})"));
                            }
                            name
                        }
                    };
                    // The first condition the scenario's own fields do not meet.
                    let not_applicable =
                        when.iter().find_map(|c| match fields.values.get(&c.path) {
                            Some(v) if *v == c.value => None,
                            Some(v) => Some(format!("when {c}; here {}={v}", c.path)),
                            None => Some(format!("when {c}; {} is not written here", c.path)),
                        });
                    out.push(Expectation {
                        name,
                        at,
                        check,
                        when,
                        not_applicable,
                    });
                }
                self.names = b.names;
            });
        }
        out
    }

    /// The `when:` conditions, each path checked: a field path (`overrides::canonical_path`),
    /// named once, and in a sweep one of the swept fields. A bad entry is reported at its key
    /// and left out.
    fn when(&mut self, e: &RawExpectation, fields: &Fields) -> Vec<Condition> {
        let Some(when) = &e.when else {
            return Vec::new();
        };
        let mut out: Vec<Condition> = Vec::new();
        self.cx.at_key("when", |cx| {
            for (key, value) in &when.value.0 {
                cx.at_key(&key.value, |cx| {
                    let path = match overrides::canonical_path(&key.value) {
                        Ok(path) => path,
                        Err(message) => return cx.error(key.pos, message),
                    };
                    if out.iter().any(|c| c.path == path) {
                        return cx.error(key.pos, format!("`{path}` is named twice"));
                    }
                    if let Some(swept) = fields.swept.filter(|s| !s.contains(&path)) {
                        let hint = cx
                            .suggest(&path, swept.iter().map(String::as_str))
                            .map(|n| format!("; did you mean `{n}`?"))
                            .unwrap_or_else(|| {
                                let list: Vec<&str> = swept.iter().map(String::as_str).collect();
                                format!("; the sweep varies {}", list.join(", "))
                            });
                        return cx.error(
                            key.pos,
                            format!(
                                "`{path}` is not swept (no --set {path}=...), so it has one \
                                 value in every variant{hint}"
                            ),
                        );
                    }
                    out.push(Condition {
                        path,
                        value: overrides::canonical_value(value),
                    });
                });
            }
        });
        out
    }

    pub(super) fn check(&mut self, e: &RawExpectation, refs: &References) -> Option<Check> {
        let present: Vec<&str> = RawExpectation::KINDS
            .iter()
            .copied()
            .filter(|k| expectation_has(e, k))
            .collect();
        if present.len() != 1 {
            let msg = if present.is_empty() {
                format!(
                    "an expectation needs exactly one kind: {}",
                    RawExpectation::KINDS.join(", ")
                )
            } else {
                format!(
                    "an expectation has exactly one kind; this one has {}",
                    present.join(", ")
                )
            };
            self.cx.error(e.pos, msg);
            return None;
        }
        let kind = present[0];
        self.cx.at_key(kind, |cx| {
            let mut b = Builder {
                cx,
                names: BTreeMap::new(),
            };
            b.check_kind(e, kind, refs)
        })
    }

    /// One expectation's check. SPEC §2.6: a name that can never exist in the run (no
    /// workload could create the pod; no node, device or pool of that name is declared or
    /// added by an event) is an input error here, located at the field; one that exists at
    /// some time only is the expectation's failure, found when it is evaluated.
    pub(super) fn check_kind(
        &mut self,
        e: &RawExpectation,
        kind: &str,
        refs: &References,
    ) -> Option<Check> {
        let (workloads, pools, devices) = (refs.workloads, refs.pools, refs.devices);
        let pod_ref = |b: &mut Builder, key: &str, p: &Loc<String>| {
            if !workloads.could_exist(&p.value, &|n| devices.contains_key(n)) {
                let hint =
                    b.cx.suggest(&p.value, workloads.names())
                        .map(|n| format!("; did you mean a pod of `{n}`?"))
                        .unwrap_or_default();
                b.cx.at_key(key, |cx| {
                    cx.error(
                        p.pos,
                        format!(
                            "no workload can create a pod named `{}` at any time of the run{hint}",
                            p.value
                        ),
                    )
                });
            }
        };
        let device_ref = |b: &mut Builder, key: &str, d: &Loc<String>| {
            if !devices.contains_key(&d.value) {
                let hint =
                    b.cx.suggest(&d.value, devices.keys().map(String::as_str))
                        .map(|n| format!("; did you mean `{n}`?"))
                        .unwrap_or_default();
                b.cx.at_key(key, |cx| {
                    cx.error(
                        d.pos,
                        format!(
                            "no node or device named `{}` exists at any time of the run{hint}",
                            d.value
                        ),
                    )
                });
            }
        };
        let pool_ref = |b: &mut Builder, key: &str, p: &Loc<String>| {
            if !pools.contains(&p.value) {
                let why = match refs.declared_pools.get(&p.value) {
                    Some(at) => format!(
                        "; the pool declared at {} is not read as one (see the \
                         warning or error there)",
                        at.place()
                    ),
                    None => {
                        b.cx.suggest(&p.value, pools.iter().map(String::as_str))
                            .map(|n| format!("; did you mean `{n}`?"))
                            .unwrap_or_default()
                    }
                };
                b.cx.at_key(key, |cx| {
                    cx.error(
                        p.pos,
                        format!(
                            "no pool named `{}` is declared or applied by any event{why}",
                            p.value
                        ),
                    )
                });
            }
        };
        let pod_set = |b: &mut Builder, key: &str, s: &Loc<PodSet>| match &s.value {
            PodSet::Pod(p) => pod_ref(b, key, &Loc::new(p.clone(), s.pos)),
            PodSet::Workload { name, namespace } => {
                let ns = namespace.as_deref().unwrap_or("default");
                if workloads.workload(ns, name).is_none() {
                    b.cx.at_key(key, |cx| {
                        cx.error(s.pos, format!("no workload `{ns}/{name}`"))
                    });
                }
            }
            PodSet::Node(n) => device_ref(b, key, &Loc::new(n.clone(), s.pos)),
            PodSet::All | PodSet::Namespace(_) => {}
            PodSet::External(name) => {
                if key != "to" && key != "from" {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "an external ({name}) can only be the `from` or `to` of \
                                 reachable, unreachable or isolated"
                            ),
                        )
                    });
                } else if !refs.externals.iter().any(|x| &x.name == name) {
                    let known: Vec<&str> = refs.externals.iter().map(|x| x.name.as_str()).collect();
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "no external `{name}` in `externals:` ({})",
                                if known.is_empty() {
                                    "none declared".to_string()
                                } else {
                                    known.join(", ")
                                }
                            ),
                        )
                    });
                }
            }
            PodSet::Service { namespace, name } => {
                let what = format!("{namespace}/{name}");
                if key != "to" {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "a Service ({what}) can only be a destination (`to` of \
                                 reachable, unreachable or isolated)"
                            ),
                        )
                    });
                } else if !refs.services.contains(&(namespace.clone(), name.clone())) {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!("no Service `{what}` is declared or applied by any event"),
                        )
                    });
                }
            }
        };
        Some(match kind {
            "pod" => {
                let p = &e.pod.as_ref()?.value;
                let name = self.cx.require(&p.name, p.pos, "name")?;
                pod_ref(self, "name", name);
                if let Some(n) = &p.node {
                    device_ref(self, "node", n);
                }
                if let Some(pl) = &p.pool {
                    pool_ref(self, "pool", pl);
                }
                Check::Pod {
                    name: name.value.clone(),
                    ip: val(&p.ip),
                    in_cidr: val(&p.in_cidr).map(|c| c.0),
                    node: val(&p.node),
                    pool: val(&p.pool),
                    borrowed: val(&p.borrowed),
                    status: val(&p.status),
                }
            }
            "pods" => {
                let p = &e.pods.as_ref()?.value;
                let of = self.cx.require(&p.of, p.pos, "of")?;
                pod_set(self, "of", of);
                Check::Pods {
                    of: of.value.clone(),
                    running: val(&p.running),
                    pending: val(&p.pending),
                    unknown: val(&p.unknown),
                }
            }
            "pool" => {
                let p = &e.pool.as_ref()?.value;
                let name = self.cx.require(&p.name, p.pos, "name")?;
                pool_ref(self, "name", name);
                Check::Pool {
                    name: name.value.clone(),
                    allocated: val(&p.allocated),
                    blocks: val(&p.blocks),
                    free: val(&p.free),
                    reserved: val(&p.reserved),
                }
            }
            "node" => {
                let n = &e.node.as_ref()?.value;
                let name = self.cx.require(&n.name, n.pos, "name")?;
                if name.value != "*" {
                    device_ref(self, "name", name);
                }
                Check::Node {
                    name: name.value.clone(),
                    blocks: val(&n.blocks),
                    borrowed_ips: val(&n.borrowed_ips),
                    rib_routes: val(&n.rib_routes),
                    fib_routes: val(&n.fib_routes),
                }
            }
            "block" => {
                let bl = &e.block.as_ref()?.value;
                let cidr = self.cx.require(&bl.cidr, bl.pos, "cidr")?;
                if let Some(a) = &bl.affinity
                    && a.value != "none"
                {
                    device_ref(self, "affinity", a);
                }
                Check::Block {
                    cidr: cidr.value.0,
                    affinity: val(&bl.affinity),
                    allocated: val(&bl.allocated),
                }
            }
            "route" => {
                let r = &e.route.as_ref()?.value;
                let node = self.cx.require(&r.node, r.pos, "node")?;
                let prefix = self.cx.require(&r.prefix, r.pos, "prefix")?;
                device_ref(self, "node", node);
                if let Some(nh) = &r.next_hop
                    && !matches!(nh.value.as_str(), "blackhole" | "local")
                {
                    device_ref(self, "nextHop", nh);
                }
                Check::Route {
                    node: node.value.clone(),
                    prefix: prefix.value.0,
                    next_hop: val(&r.next_hop),
                    present: val(&r.present).unwrap_or(true),
                    table: val(&r.table).unwrap_or(RouteTable::Fib),
                }
            }
            "reachable" | "unreachable" | "isolated" => {
                let pair = match kind {
                    "reachable" => &e.reachable,
                    "unreachable" => &e.unreachable,
                    _ => &e.isolated,
                };
                let p = &pair.as_ref()?.value;
                let from = self.cx.require(&p.from, p.pos, "from")?;
                let to = self.cx.require(&p.to, p.pos, "to")?;
                pod_set(self, "from", from);
                pod_set(self, "to", to);
                if matches!(from.value, PodSet::External(_))
                    && matches!(to.value, PodSet::External(_))
                {
                    self.cx.at_key("to", |cx| {
                        cx.error(
                            to.pos,
                            "from an external, `to` must be pods or a Service (traffic \
                             between places outside the cluster never crosses it)",
                        )
                    });
                }
                let probe = probe_of(
                    self,
                    ProbeFields {
                        pos: p.pos,
                        port: &p.port,
                        protocol: &p.protocol,
                        icmp_type: &p.icmp_type,
                        icmp_code: &p.icmp_code,
                    },
                );
                if kind != "unreachable"
                    && let Some(r) = &p.reason
                {
                    self.cx.at_key("reason", |cx| {
                        cx.error(r.pos, "`reason` belongs to `unreachable`")
                    });
                }
                let (from, to) = (from.value.clone(), to.value.clone());
                match kind {
                    "reachable" => Check::Reachable { from, to, probe },
                    "unreachable" => Check::Unreachable {
                        from,
                        to,
                        reason: val(&p.reason),
                        probe,
                    },
                    _ => Check::Isolated { from, to, probe },
                }
            }
            "policy" => {
                let p = &e.policy.as_ref()?.value;
                let pod = self.cx.require(&p.pod, p.pos, "pod")?;
                pod_ref(self, "pod", pod);
                let names = |l: &Option<Loc<Vec<Loc<String>>>>| {
                    l.as_ref()
                        .map(|v| v.value.iter().map(|n| n.value.clone()).collect())
                };
                Check::Policy {
                    pod: pod.value.clone(),
                    ingress: names(&p.ingress),
                    egress: names(&p.egress),
                }
            }
            "path" => {
                let p = &e.path.as_ref()?.value;
                let from = self.cx.require(&p.from, p.pos, "from")?;
                let to = self.cx.require(&p.to, p.pos, "to")?;
                pod_ref(self, "from", from);
                pod_ref(self, "to", to);
                if let Some(via) = &p.via {
                    self.cx.at_key("via", |cx| {
                        let b = Builder {
                            cx,
                            names: BTreeMap::new(),
                        };
                        for (k, hop) in via.value.iter().enumerate() {
                            b.cx.at_index(k, |cx| {
                                let mut b = Builder {
                                    cx,
                                    names: BTreeMap::new(),
                                };
                                device_ref(&mut b, "", hop)
                            });
                        }
                    });
                }
                Check::Path {
                    from: from.value.clone(),
                    to: to.value.clone(),
                    via: p
                        .via
                        .as_ref()
                        .map(|v| v.value.iter().map(|h| h.value.clone()).collect()),
                    encapsulation: val(&p.encapsulation),
                    probe: probe_of(
                        self,
                        ProbeFields {
                            pos: p.pos,
                            port: &p.port,
                            protocol: &p.protocol,
                            icmp_type: &p.icmp_type,
                            icmp_code: &p.icmp_code,
                        },
                    ),
                }
            }
            "bgp" => {
                let g = &e.bgp.as_ref()?.value;
                Check::Bgp {
                    sessions_established: val(&g.sessions_established),
                    converged_within: val(&g.converged_within),
                    updates: val(&g.updates),
                }
            }
            _ => Check::AllocationFailures(val(&e.allocation_failures)?),
        })
    }
}

/// The probe fields of an expectation (`reachable`, `unreachable`, `isolated`, `path`).
pub(super) struct ProbeFields<'a> {
    pos: Pos,
    port: &'a Option<Loc<crate::model::expect::PortRef>>,
    protocol: &'a Option<Loc<crate::model::expect::ProbeProtocol>>,
    icmp_type: &'a Option<Loc<u8>>,
    icmp_code: &'a Option<Loc<u8>>,
}

/// The probe of an expectation: `None` when it names no port, protocol or ICMP type (every
/// port and protocol for `reachable`/`unreachable`/`isolated`, an ICMP echo request for
/// `path`). ICMP takes `icmpType`/`icmpCode` instead of `port`.
pub(super) fn probe_of(b: &mut Builder, p: ProbeFields<'_>) -> Option<crate::model::expect::Probe> {
    use crate::model::expect::{Probe, ProbeProtocol};
    if p.port.is_none() && p.protocol.is_none() && p.icmp_type.is_none() && p.icmp_code.is_none() {
        return None;
    }
    let protocol = val(p.protocol).unwrap_or(ProbeProtocol::Tcp);
    if protocol == ProbeProtocol::Icmp {
        if let Some(port) = p.port {
            b.cx.at_key("port", |cx| {
                cx.error(
                    port.pos,
                    "ICMP has no ports; give `icmpType` (and `icmpCode`)",
                )
            });
        }
    } else {
        for (key, field) in [("icmpType", p.icmp_type), ("icmpCode", p.icmp_code)] {
            if let Some(f) = field {
                b.cx.at_key(key, |cx| {
                    cx.error(f.pos, format!("`{key}` needs `protocol: ICMP`"))
                });
            }
        }
    }
    if p.icmp_code.is_some() && p.icmp_type.is_none() {
        b.cx.at_key("icmpCode", |cx| {
            cx.error(p.pos, "`icmpCode` needs `icmpType`")
        });
    }
    Some(Probe {
        protocol,
        port: val(p.port),
        icmp_type: val(p.icmp_type),
        icmp_code: val(p.icmp_code),
    })
}

/// What expectations may name: everything that exists at some time of the run.
pub(super) struct References<'a> {
    workloads: &'a PodNames<'a>,
    /// Pools the selected IPAM will hold at some time.
    pools: &'a BTreeSet<String>,
    /// Every resource of a pool kind by name, read as a pool or not (for the message).
    declared_pools: &'a BTreeMap<String, Pos>,
    devices: &'a BTreeMap<String, bool>,
    /// Every Service declared or applied by an event, by (namespace, name).
    services: &'a BTreeSet<(String, String)>,
    /// `externals:` (SPEC §7).
    externals: &'a [crate::model::external::External],
}

/// The pools that exist at some time of the run: those of the selected IPAM read from the
/// resources and the events' `apply`, plus Calico's default pool when no IPPool is there from
/// the start (SPEC §2.3). A pool resource podnet did not read (an unknown `apiVersion`, the
/// other CNI's kind) never exists.
pub(super) fn possible_pools(
    network: &Network,
    specs: &[Option<crate::scenario::kinds::ResourceSpec>],
    applied: &[Option<crate::scenario::kinds::ResourceSpec>],
) -> BTreeSet<String> {
    use crate::scenario::kinds::ResourceSpec;
    let calico = network.cni == crate::model::network::Cni::Calico;
    let name = |s: &Option<ResourceSpec>| match s {
        Some(ResourceSpec::IpPool(p)) if calico => Some(p.name.clone()),
        Some(ResourceSpec::SpiderIpPool(p)) if !calico => Some(p.name.clone()),
        _ => None,
    };
    let mut names: BTreeSet<String> = specs.iter().chain(applied).filter_map(name).collect();
    let calico_pool_at_start = specs
        .iter()
        .any(|s| matches!(s, Some(ResourceSpec::IpPool(_))));
    if calico && !calico_pool_at_start {
        names.insert("default-ipv4-ippool".to_string());
    }
    names
}

/// Every resource of a pool kind, by name, with where its name is written.
pub(super) fn declared_pools(
    resources: &[Resource],
    applied: &[Resource],
) -> BTreeMap<String, Pos> {
    resources
        .iter()
        .chain(applied)
        .filter(|r| r.kind == "IPPool" || r.kind == "SpiderIPPool")
        .map(|r| (r.name.clone(), r.locate(&["metadata", "name"])))
        .collect()
}

pub(super) fn expectation_has(e: &RawExpectation, key: &str) -> bool {
    match key {
        "pod" => e.pod.is_some(),
        "pods" => e.pods.is_some(),
        "pool" => e.pool.is_some(),
        "node" => e.node.is_some(),
        "block" => e.block.is_some(),
        "route" => e.route.is_some(),
        "reachable" => e.reachable.is_some(),
        "unreachable" => e.unreachable.is_some(),
        "isolated" => e.isolated.is_some(),
        "policy" => e.policy.is_some(),
        "path" => e.path.is_some(),
        "bgp" => e.bgp.is_some(),
        "allocationFailures" => e.allocation_failures.is_some(),
        _ => false,
    }
}
