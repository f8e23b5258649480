//! The state of the simulated cluster at one instant, as expectations and reports read it.
//!
//! A snapshot is plain data copied out of the world (pods in creation order, pools and
//! blocks in name/address order, nodes in topology order), so it can be kept while the
//! simulation goes on and serialized into `report.json` as it is.
//! All-pairs reachability is computed here, once per snapshot and only when asked for
//! ([`Snapshot::reachability`]); the report and `podnet sweep` read it, and never compute it.
//! Runs of one scenario that end in the same forwarding state can share it
//! ([`ReachabilityMemo`]): a sweep over seeds computes it once, not once per variant.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};

use ipnet::IpNet;

use serde::Serialize;

use super::World;
use super::cluster::PendingReason;
use super::dataplane;
use crate::bgp::{BgpEngine, SessionState, SpeakerId};
use crate::forwarding::connect::PolicyInputs;
use crate::forwarding::service::ServiceTable;
use crate::forwarding::{Dataplane, PodKey};
use crate::model::TextEnum;
use crate::model::network::Network;
use crate::model::time::SimDuration;
use crate::model::time::SimTime;
use crate::model::topology::{DeviceId, Topology};
use crate::model::workload::{PodStatus, Workload};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRow {
    pub name: String,
    /// The names a pod shares with others (its namespace, workload, node and pool) are one
    /// string per snapshot, each row holding a reference: a snapshot of 150,000 pods makes
    /// 150,000 names rather than 750,000 (and frees as many).
    pub namespace: Arc<str>,
    pub workload: Arc<str>,
    pub node: Option<Arc<str>>,
    pub ip: Option<IpAddr>,
    pub pool: Option<Arc<str>>,
    #[serde(serialize_with = "crate::model::opt_as_display")]
    pub block: Option<IpNet>,
    pub borrowed: bool,
    pub status: PodStatus,
    #[serde(serialize_with = "crate::model::opt_as_display")]
    pub reason: Option<PendingReason>,
    /// The pod's key in the dataplane.
    #[serde(skip)]
    pub key: PodKey,
}

/// Names of one kind met while rows are made, each kept once ([`PodRow`]'s shared names),
/// the last one asked for first: consecutive pods mostly share their namespace and pool.
#[derive(Default)]
struct SharedNames {
    last: Option<Arc<str>>,
    met: crate::model::hash::FastMap<String, Arc<str>>,
}

impl SharedNames {
    /// `name`, shared with every row that took it before.
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(last) = self.last.as_ref().filter(|last| ***last == *name) {
            return last.clone();
        }
        let shared = match self.met.get(name) {
            Some(shared) => shared.clone(),
            None => {
                let shared: Arc<str> = Arc::from(name);
                self.met.insert(name.to_string(), shared.clone());
                shared
            }
        };
        self.last = Some(shared.clone());
        shared
    }
}

impl PodRow {
    /// Scheduled and Pending because IPAM gave it no address.
    pub fn pending_for_ipam(&self) -> bool {
        PendingReason::holds_scheduled(self.status, self.node.is_some(), self.reason.as_ref())
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRow {
    pub name: String,
    pub kind: &'static str,
    #[serde(serialize_with = "crate::model::as_display")]
    pub cidr: IpNet,
    pub block_size: Option<u8>,
    pub capacity: u128,
    pub allocated: u64,
    pub reserved: u64,
    pub blocks: u32,
    pub free: u128,
    pub mtu: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockRow {
    #[serde(serialize_with = "crate::model::as_display")]
    pub cidr: IpNet,
    pub pool: String,
    /// The node the block is affine to; `None` for a block without affinity.
    pub affinity: Option<String>,
    pub allocated: u32,
    pub reserved: u32,
    pub capacity: u32,
    pub free: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRow {
    pub name: String,
    pub zone: String,
    pub rack: String,
    pub ip: String,
    pub os: &'static str,
    pub up: bool,
    pub max_pods: u32,
    pub pods: usize,
    pub blocks: Vec<String>,
    pub borrowed_ips: usize,
    /// Prefixes in its BGP Loc-RIB, when it speaks BGP (0 in `report.json` when it does
    /// not: the key is stable, SPEC §6.1).
    #[serde(serialize_with = "zero_when_absent")]
    pub rib_routes: Option<usize>,
    /// Entries in its FIB.
    pub fib_routes: usize,
    /// BGP UPDATE messages it sent and received, when it speaks BGP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updates_sent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updates_received: Option<u64>,
}

/// Serializes a count that exists only for some runs (BGP counts on a VXLAN or Spiderpool
/// cluster) as 0 when absent, so that every key SPEC §6.1 calls stable is always present.
pub fn zero_when_absent<S: serde::Serializer, T: Serialize + Default>(
    value: &Option<T>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => v.serialize(serializer),
        None => T::default().serialize(serializer),
    }
}

/// One BGP session (SPEC §6.1 `bgp.sessions`). The speakers' names are shared with every
/// other row naming them (a full mesh of 1,000 nodes has 499,500 rows and 1,000 names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    #[serde(serialize_with = "crate::model::as_display")]
    pub a: Arc<str>,
    #[serde(serialize_with = "crate::model::as_display")]
    pub b: Arc<str>,
    #[serde(rename = "type")]
    pub session_type: &'static str,
    pub reflector_client: bool,
    /// The side that reflects routes to the other (its client), if either does.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::model::opt_as_display"
    )]
    pub reflector: Option<Arc<str>>,
    pub state: &'static str,
    pub reason: Option<String>,
    /// Times the session went down after being Established; more than once is a flap.
    pub times_down: u32,
}

/// A route of a speaker's Loc-RIB as the `route` expectation (table rib) reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RibRow {
    pub prefix: IpNet,
    /// The device owning the BGP next hop, or `blackhole` for the speaker's own blocks.
    pub next_hop: String,
}

/// The control plane at an instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BgpState {
    pub sessions: Vec<SessionRow>,
    pub sessions_established: usize,
    pub updates: u64,
    /// SPEC §2.6 `convergedWithin`: the last FIB change after the latest scenario event at or
    /// before this instant, measured from that event.
    pub converged_within_us: u64,
    /// Loc-RIBs of the speakers an expectation asks about, by name.
    #[serde(skip)]
    pub ribs: BTreeMap<String, Vec<RibRow>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub time_us: u64,
    pub pods: Vec<PodRow>,
    pub pools: Vec<PoolRow>,
    pub blocks: Vec<BlockRow>,
    pub nodes: Vec<NodeRow>,
    /// The forwarding state: every scenario has one (without BGP or Felix routes, pods reach
    /// only what is connected).
    #[serde(skip)]
    pub dataplane: Arc<Dataplane>,
    /// All-pairs reachability of `dataplane`, filled by the first `reachability` call.
    #[serde(skip)]
    reach: OnceLock<super::policy::Pairs>,
    /// Device names by id (nodes and routers), to name hops and next hops.
    #[serde(skip)]
    pub devices: Vec<String>,
    /// BGP, when anything speaks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp: Option<BgpState>,
    /// Network policy and the endpoints it protects, when any policy is enforced.
    #[serde(skip)]
    pub policy: Option<Arc<PolicyInputs>>,
    /// Services with their cluster IPs and EndpointSlices.
    #[serde(skip)]
    pub services: Arc<ServiceTable>,
    /// `externals:` (SPEC §7), in the dataplane's order.
    #[serde(skip)]
    pub externals: Vec<crate::model::external::External>,
    /// The Service routes each node advertises (`forwarding::advertise`).
    #[serde(skip)]
    pub service_routes: BTreeMap<DeviceId, std::collections::BTreeSet<IpNet>>,
}

/// What the engine knows about BGP beyond the engine itself: when the FIBs changed and when
/// scenario events happened (for `convergedWithin`), and whose Loc-RIBs to keep.
pub struct BgpView<'a> {
    pub now: SimTime,
    pub fib_changes: &'a [SimTime],
    pub action_times: &'a [SimTime],
    pub ribs_of: &'a [String],
}

fn bgp_state(engine: &BgpEngine, topo: &Topology, view: &BgpView<'_>) -> BgpState {
    let name = |d: DeviceId| topo.device(d).name.clone();
    // Each speaker's name once, shared by the rows of its sessions.
    let names: Vec<Arc<str>> = engine
        .speakers()
        .iter()
        .map(|sp| Arc::from(sp.name.as_str()))
        .collect();
    let speaker_name = |s: SpeakerId| -> Arc<str> {
        names
            .get(s.index())
            .map_or_else(|| Arc::from(""), Arc::clone)
    };
    // Room for every session at once: half a million rows grown by doubling would copy
    // (and fault in) the rows again at each step.
    let mut sessions: Vec<SessionRow> =
        Vec::with_capacity(engine.sessions().size_hint().1.unwrap_or(0));
    sessions.extend(engine.sessions().map(|s| {
        let a = speaker_name(s.a);
        let b =
            s.b.map(speaker_name)
                .unwrap_or_else(|| Arc::from(s.b_address.to_string()));
        SessionRow {
            reflector: if s.reflects[0] {
                Some(Arc::clone(&a))
            } else if s.reflects[1] {
                Some(Arc::clone(&b))
            } else {
                None
            },
            a,
            b,
            session_type: s.session_type.as_str(),
            reflector_client: s.reflector_client(),
            state: match s.state {
                SessionState::Idle => "Idle",
                SessionState::Connect => "Connect",
                SessionState::Established => "Established",
            },
            reason: s.reason.as_ref().map(ToString::to_string),
            times_down: engine.session_downs(s.id),
        }
    }));
    // E: the latest scenario event at or before now; the last FIB change in (E, now].
    let event = view
        .action_times
        .iter()
        .copied()
        .filter(|t| *t <= view.now)
        .max()
        .unwrap_or(SimTime::ZERO);
    let last_change = view
        .fib_changes
        .iter()
        .copied()
        .filter(|t| *t > event && *t <= view.now)
        .max();
    let converged = last_change.map_or(SimDuration::ZERO, |t| t - event);
    let mut ribs = BTreeMap::new();
    for speaker in view.ribs_of {
        let Some(device) = topo.device_by_name(speaker) else {
            continue;
        };
        let rows = engine
            .best_routes(device)
            .into_iter()
            .map(|r| RibRow {
                prefix: r.prefix,
                next_hop: if r.local {
                    "blackhole".to_string()
                } else {
                    r.next_hop_device
                        .map(name)
                        .unwrap_or_else(|| r.next_hop.to_string())
                },
            })
            .collect();
        ribs.insert(speaker.clone(), rows);
    }
    BgpState {
        sessions_established: sessions.iter().filter(|s| s.state == "Established").count(),
        sessions,
        updates: engine.total_updates(),
        converged_within_us: converged.as_micros(),
        ribs,
    }
}

/// An all-pairs reachability result kept from one run for the next runs of the same
/// scenario (the variants of a sweep), given to a snapshot whose forwarding state is the
/// kept one with the pods renamed ([`Dataplane::same_but_pod_keys`]).
///
/// Invariants: a result is kept and given only without network policy (the policy names
/// pods by their labels, which the renaming does not follow) and only when no pair is
/// unreachable, so the result names no pod: its counts are the same for the renamed pods, and
/// a snapshot given it reports exactly what computing it would have. Which run's result is
/// kept depends on the order runs finish in; what a snapshot reports does not.
/// What this is not: not a cache of anything else in a snapshot, and it keeps one result
/// (the latest that could be kept) with its dataplane, not one per run.
#[derive(Default)]
pub struct ReachabilityMemo {
    kept: Mutex<Option<(Arc<Dataplane>, super::policy::Pairs)>>,
    given: std::sync::atomic::AtomicUsize,
}

impl ReachabilityMemo {
    /// Gives `snap` the kept result when it applies; whether it did.
    pub fn give(&self, snap: &Snapshot) -> bool {
        if snap.policy.is_some() || snap.reach.get().is_some() {
            return false;
        }
        // The comparison runs outside the lock: another run may keep its result meanwhile.
        let Some((dataplane, pairs)) = self.kept.lock().ok().and_then(|k| k.clone()) else {
            return false;
        };
        if !snap.dataplane.same_but_pod_keys(&dataplane) {
            return false;
        }
        let given = snap.reach.set(pairs).is_ok();
        if given {
            self.given
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        given
    }

    /// Keeps `snap`'s all-pairs result, when it has been computed and can be given.
    pub fn keep(&self, snap: &Snapshot) {
        let Some(pairs) = snap.reach.get() else {
            return;
        };
        if snap.policy.is_some() || !pairs.groups.is_empty() || pairs.reachable != pairs.pairs {
            return;
        }
        if let Ok(mut kept) = self.kept.lock() {
            *kept = Some((snap.dataplane.clone(), pairs.clone()));
        }
    }

    /// How many snapshots were given a kept result.
    pub fn given(&self) -> usize {
        self.given.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Snapshot {
    pub fn capture(
        now: SimTime,
        world: &World,
        network: &Network,
        workloads: &[Workload],
        seed: u64,
        bgp_view: BgpView<'_>,
        dataplanes: Option<&crate::forwarding::DataplaneMemo>,
    ) -> Snapshot {
        let topo = &world.topology;
        let bgp_engine = world.control.bgp.as_deref();
        let dataplane = dataplane::build(world, dataplanes);
        let (mut namespaces, mut pools) = (SharedNames::default(), SharedNames::default());
        let workload_names: Vec<Arc<str>> = workloads
            .iter()
            .map(|w| Arc::from(w.name.as_str()))
            .collect();
        let node_names: Vec<Arc<str>> = topo
            .nodes
            .iter()
            .map(|n| Arc::from(n.name.as_str()))
            .collect();
        let pods = world
            .cluster
            .pods()
            .map(|p| {
                let a = p.address.as_ref();
                PodRow {
                    name: p.name.clone(),
                    namespace: namespaces.get(&p.namespace),
                    workload: workload_names
                        .get(p.workload.index())
                        .cloned()
                        .unwrap_or_else(|| Arc::from("")),
                    node: p.node.and_then(|n| node_names.get(n.index()).cloned()),
                    ip: p.ip(topo),
                    pool: a.map(|a| pools.get(&a.pool)),
                    block: a.and_then(|a| a.block),
                    borrowed: a.is_some_and(|a| a.borrowed),
                    status: p.status(),
                    reason: p.reason.clone(),
                    key: PodKey(p.id.0),
                }
            })
            .collect();
        let pools = world.addressing.pools(network);
        let calico = world.addressing.calico();
        let blocks = calico
            .map(|ipam| {
                ipam.blocks()
                    .into_iter()
                    .map(|b| BlockRow {
                        cidr: b.cidr,
                        pool: b.pool,
                        affinity: b.affinity,
                        allocated: b.allocated,
                        reserved: b.reserved,
                        capacity: b.capacity,
                        free: b.free,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let nodes = topo
            .live_nodes()
            .map(|(id, n)| {
                let ipam = calico.map(|c| c.node_report(&n.name));
                NodeRow {
                    name: n.name.clone(),
                    zone: topo.zones[n.zone.index()].name.clone(),
                    rack: topo.racks[n.rack.index()].name.clone(),
                    ip: n.ip.to_string(),
                    os: n.os.as_str(),
                    up: !n.down,
                    max_pods: n.max_pods,
                    pods: world.cluster.pods_on(id),
                    blocks: ipam
                        .as_ref()
                        .map(|r| r.affine_blocks.iter().map(ToString::to_string).collect())
                        .unwrap_or_default(),
                    borrowed_ips: ipam.as_ref().map_or(0, |r| r.borrowed_ips.len()),
                    rib_routes: bgp_engine
                        .filter(|b| b.speaker(n.device).is_some())
                        .map(|b| b.rib_size(n.device)),
                    fib_routes: dataplane.fib_len(n.device),
                    updates_sent: bgp_engine
                        .filter(|b| b.speaker(n.device).is_some())
                        .map(|b| b.updates_sent(n.device)),
                    updates_received: bgp_engine
                        .filter(|b| b.speaker(n.device).is_some())
                        .map(|b| b.updates_received(n.device)),
                }
            })
            .collect();
        let services = super::services::table(world, workloads, seed);
        Snapshot {
            time_us: now.as_micros(),
            pods,
            pools,
            blocks,
            nodes,
            dataplane: Arc::new(dataplane),
            reach: OnceLock::new(),
            devices: topo.devices.iter().map(|d| d.name.clone()).collect(),
            bgp: bgp_engine.map(|b| bgp_state(b, topo, &bgp_view)),
            policy: super::policy::inputs(world, network, workloads)
                .map(|mut inputs| {
                    inputs.services = services.policy_endpoints();
                    inputs
                })
                .map(Arc::new),
            services: Arc::new(services),
            externals: topo.externals.clone(),
            service_routes: world.control.service_routes.clone(),
        }
    }

    /// Reachability between every ordered pair of distinct pods, with network policy when any is
    /// enforced. Computed on the first call
    /// and kept.
    pub fn reachability(&self) -> &super::policy::Pairs {
        self.reach
            .get_or_init(|| super::policy::all_pairs(&self.dataplane, self.policy.as_deref()))
    }

    /// Whether [`Snapshot::reachability`] has been computed already.
    #[cfg(test)]
    pub(super) fn reachability_known(&self) -> bool {
        self.reach.get().is_some()
    }

    pub fn count(&self, status: PodStatus) -> usize {
        self.pods.iter().filter(|p| p.status == status).count()
    }

    /// Pods Pending because IPAM could not give them an address.
    pub fn allocation_failures(&self) -> usize {
        self.pods.iter().filter(|p| p.pending_for_ipam()).count()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::sim::Simulation;

    /// Two workloads in two namespaces over two racks with a pool each: each namespace,
    /// workload, node and pool name is one string that every row naming it shares.
    #[test]
    fn rows_share_the_names_they_have_in_common() {
        let s = crate::scenario::load_str(
            "t.yaml",
            r#"name: t
topology:
  zones:
  - name: z
    racks:
    - {name: a, subnet: 10.0.0.0/24, nodes: [{namePrefix: a, count: 2}]}
    - {name: b, subnet: 10.0.1.0/24, nodes: [{namePrefix: b, count: 2}]}
resources:
- {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: one}, spec: {cidr: 10.64.0.0/24, blockSize: 28, nodeSelector: "podnet.io/rack == 'a'"}}
- {apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {name: two}, spec: {cidr: 10.65.0.0/24, blockSize: 28, nodeSelector: "podnet.io/rack == 'b'"}}
workloads:
- {name: web, replicas: 12}
- {name: db, namespace: data, replicas: 8}
"#,
        )
        .expect("valid scenario");
        let out = Simulation::new(&s).run();
        let pods = &out.last.pods;
        assert_eq!(pods.len(), 20);
        let mut pools = 0;
        for (i, p) in pods.iter().enumerate() {
            for q in &pods[i + 1..] {
                // Equal names are one string; different ones differ.
                let same = |a: &Arc<str>, b: &Arc<str>| {
                    assert_eq!(a == b, Arc::ptr_eq(a, b), "{a} and {b}");
                };
                same(&p.namespace, &q.namespace);
                same(&p.workload, &q.workload);
                if let (Some(a), Some(b)) = (&p.node, &q.node) {
                    same(a, b);
                }
                if let (Some(a), Some(b)) = (&p.pool, &q.pool) {
                    same(a, b);
                    pools += usize::from(a != b);
                }
            }
        }
        assert!(pools > 0, "both pools were used");
    }

    /// Two racks of two nodes, one pool of /28 blocks (IPIP between nodes), a Deployment of `replicas` pods spread
    /// over the nodes by the scheduler (which pod goes where depends on `seed`), and `extra`
    /// resources.
    fn spread(seed: u64, replicas: usize, extra: &str) -> super::Snapshot {
        let text = format!(
            r#"name: t
seed: {seed}
topology:
  zones:
  - name: z
    racks:
    - {{name: a, subnet: 10.0.0.0/24, nodes: [{{namePrefix: a, count: 2}}]}}
    - {{name: b, subnet: 10.0.1.0/24, nodes: [{{namePrefix: b, count: 2}}]}}
resources:
- {{apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {{name: one}}, spec: {{cidr: 10.64.0.0/24, blockSize: 28, ipipMode: Always}}}}
{extra}
workloads:
- {{name: web, replicas: {replicas}}}
"#
        );
        let s = crate::scenario::load_str("t.yaml", &text).expect("valid scenario");
        Simulation::new(&s).run().last
    }

    /// The all-pairs result computed afresh, without policy.
    fn computed(snap: &super::Snapshot) -> crate::sim::policy::Pairs {
        crate::sim::policy::all_pairs(&snap.dataplane, None)
    }

    #[test]
    fn a_run_ending_in_a_kept_forwarding_state_is_given_its_result() {
        let memo = super::ReachabilityMemo::default();
        let first = spread(1, 12, "");
        // Kept only once computed.
        memo.keep(&first);
        assert_eq!(first.reachability().reachable, 12 * 11);
        memo.keep(&first);
        let second = spread(2, 12, "");
        // The seed put other pods in the same places: the pod keys at the addresses differ.
        let places = |s: &super::Snapshot| -> Vec<_> {
            let mut p: Vec<_> = s.dataplane.pods().map(|p| (p.ip, p.key)).collect();
            p.sort();
            p
        };
        assert_ne!(places(&first), places(&second));
        assert!(memo.give(&second));
        assert!(second.reachability_known());
        assert_eq!(second.reachability(), &computed(&second));
        assert_eq!(memo.given(), 1);
        // A snapshot that has its result already is not given another.
        assert!(!memo.give(&second));
    }

    #[test]
    fn no_result_is_given_across_forwarding_states_with_unreachable_pairs_or_with_policy() {
        // Another forwarding state: one more pod.
        let memo = super::ReachabilityMemo::default();
        let first = spread(1, 12, "");
        first.reachability();
        memo.keep(&first);
        assert!(!memo.give(&spread(2, 13, "")));
        // Unreachable pairs: without the node-to-node mesh no node learns another's blocks,
        // so only pods of one node reach each other; such a result names pods, and is not kept.
        let no_mesh = "- {apiVersion: projectcalico.org/v3, kind: BGPConfiguration, metadata: {name: default}, spec: {nodeToNodeMeshEnabled: false}}";
        let memo = super::ReachabilityMemo::default();
        let first = spread(1, 12, no_mesh);
        assert!(first.reachability().reachable < first.reachability().pairs);
        memo.keep(&first);
        assert!(!memo.give(&spread(1, 12, no_mesh)));
        // Policy: judged per pod by labels, not kept and not given.
        let deny = "- {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: deny, namespace: default}, spec: {podSelector: {}, policyTypes: [Ingress]}}";
        let memo = super::ReachabilityMemo::default();
        let first = spread(1, 12, deny);
        assert!(first.policy.is_some());
        first.reachability();
        memo.keep(&first);
        assert!(!memo.give(&spread(1, 12, deny)));
        // Nor is a kept result without policy given to a snapshot with policy.
        let memo = super::ReachabilityMemo::default();
        let first = spread(1, 12, "");
        first.reachability();
        memo.keep(&first);
        assert!(!memo.give(&spread(1, 12, deny)));
        assert_eq!(memo.given(), 0);
    }
}
