//! The control plane during the run: Felix's routes and the BGP engine, planned from the
//! BGP resources in force ([`BgpInputs`]) and re-planned when one changes, IPAM changes turned
//! into routes to originate or withdraw, and BGP's own events scheduled on the queue.

use super::*;

impl Simulation<'_> {
    /// Block claims, releases and borrows become log lines, as they happen. A block or a
    /// borrowed address given back (by a release, a deleted node or garbage collection) may
    /// be what a Pending pod waits for: Pending pods are retried at once (SPEC §2.4).
    pub(super) fn drain_ipam_changes(&mut self) {
        let changes = self.world.addressing.take_changes();
        if changes.iter().any(IpamChange::frees) {
            self.queue_retry();
        }
        for change in changes {
            // What the control plane must announce (Some(owner)) or withdraw (None).
            let route: Option<(IpNet, Option<String>)> = match change {
                IpamChange::BlockClaimed { node, block } => {
                    self.record(
                        "blockClaimed",
                        block.to_string(),
                        format!("affine to {node}"),
                    );
                    let pool = self.world.addressing.pool_of_block(&block).unwrap_or(block);
                    let now = self.now;
                    let hns = self
                        .world
                        .hns
                        .block_claimed(now, &node, block, pool)
                        .to_vec();
                    self.record_hns(&hns);
                    Some((block, Some(node)))
                }
                IpamChange::BlockAffinityReleased { node, block } => {
                    self.record(
                        "blockReleased",
                        block.to_string(),
                        format!("no longer affine to {node}"),
                    );
                    let now = self.now;
                    let hns = self.world.hns.block_released(now, &node, block).to_vec();
                    self.record_hns(&hns);
                    Some((block, None))
                }
                IpamChange::BlockDeleted { block } => {
                    self.record("blockDeleted", block.to_string(), "empty, deleted");
                    None
                }
                IpamChange::Borrowed { node, ip, block } => {
                    self.record(
                        "borrowed",
                        ip.to_string(),
                        format!("{node} borrowed from {block}"),
                    );
                    Some((IpNet::from(ip), Some(node)))
                }
                IpamChange::BorrowReleased { node, ip } => {
                    self.record(
                        "borrowReleased",
                        ip.to_string(),
                        format!("released by {node}"),
                    );
                    Some((IpNet::from(ip), None))
                }
            };
            if let Some((prefix, owner)) = route {
                self.route_changed(prefix, owner);
            }
        }
    }

    /// Hands a block or borrowed address to the control plane: with Calico's VXLAN backend,
    /// every node learns it from the datastore after `datastoreDelay` (SPEC §3.4).
    pub(super) fn route_changed(&mut self, prefix: IpNet, owner: Option<String>) {
        let device = owner
            .as_ref()
            .and_then(|n| self.world.topology.node_by_name(n))
            .map(|id| self.world.topology.node(id).device);
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            // The owner originates; a withdrawal comes from whoever originated it.
            let scheduled = match device {
                Some(d) => bgp.originate(self.now, d, prefix),
                None => {
                    let origin = self.originators.remove(&prefix);
                    origin
                        .map(|d| bgp.withdraw(self.now, d, prefix))
                        .unwrap_or_default()
                }
            };
            if let Some(d) = device {
                self.originators.insert(prefix, d);
            }
            self.schedule_bgp(scheduled);
        }
        if self.world.control.felix.is_some() {
            let next_hop = owner
                .and_then(|n| self.world.topology.node_by_name(&n))
                .map(|id| self.world.topology.node(id).ip);
            let at = self.now + self.scenario.network.datastore_delay;
            self.queue.push(at, Event::Datastore { prefix, next_hop });
        }
    }

    /// Sets up Felix or the BGP speakers and their sessions, as the network asks.
    pub(super) fn start_control_plane(&mut self, bgp_log: bgp::LogOptions) {
        let network = &self.scenario.network;
        let calico_bird =
            network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Bird;
        if network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Vxlan {
            self.world.control.felix = Some(BTreeMap::new());
        }
        if !calico_bird && !self.world.topology.fabric.bgp {
            return;
        }
        let inputs = BgpInputs::from_specs(&self.scenario.specs);
        let peering = bgp::plan(
            &self.world.topology,
            &inputs.config,
            &inputs.peers,
            calico_bird,
        );
        self.world.control.bgp_inputs = inputs;
        let timers = bgp::Timers::for_profile(self.scenario.profile.bgp_timers);
        let mut engine = BgpEngine::new(&self.world.topology, peering, timers, &network.bgp);
        engine.set_log_options(bgp_log);
        engine.keep_lines(self.log.level() != events::EventLevel::None);
        // Calico's v3.32+ BIRD templates set local-pref on every iBGP export (REFERENCE §4.4).
        let v3_32 = matches!(
            self.scenario.profile.calico,
            CalicoProfile::V3_32 | CalicoProfile::V3_33
        );
        engine.set_ibgp_local_pref(v3_32.then_some(bgp::config::CALICO_IBGP_LOCAL_PREF));
        engine.set_jitter(Box::new(Stream::new(
            self.scenario.seed,
            Purpose::BgpTimers,
        )));
        let pools = match &self.world.addressing {
            Addressing::Calico(ipam) => ipam
                .pool_names()
                .iter()
                .filter_map(|n| ipam.pool(n))
                .map(|p| bgp::ExportPool {
                    cidr: p.network(),
                    disable_bgp_export: p.disable_bgp_export,
                })
                .collect(),
            Addressing::Spiderpool(_) => Vec::new(),
        };
        let mut scheduled = engine.set_pools(self.now, pools);
        scheduled.extend(engine.start(self.now));
        self.world.control.bgp = Some(Box::new(engine));
        self.schedule_bgp(scheduled);
    }

    /// Re-plans the BGP peering from the configuration in force and the topology as they are
    /// now, and moves the running engine to it: unchanged sessions keep running, removed ones
    /// go down, changed ones reset, new ones connect (`bgp::reconfigure`).
    pub(super) fn replan_bgp(&mut self, cause: &str) {
        let network = &self.scenario.network;
        let calico_bird =
            network.cni == Cni::Calico && network.calico_backend == CalicoBackend::Bird;
        let Some(engine) = self.world.control.bgp.as_mut() else {
            return;
        };
        let inputs = &self.world.control.bgp_inputs;
        let peering = bgp::plan(
            &self.world.topology,
            &inputs.config,
            &inputs.peers,
            calico_bird,
        );
        let scheduled = engine.reconfigure(self.now, &self.world.topology, peering, cause);
        self.schedule_bgp(scheduled);
    }

    /// Queues what the BGP engine scheduled and moves its log into the event log.
    pub(super) fn schedule_bgp(
        &mut self,
        scheduled: impl IntoIterator<Item = (SimTime, BgpEvent)>,
    ) {
        for (at, ev) in scheduled {
            self.queue.push(at, Event::Bgp(ev));
        }
        let Some(bgp) = self.world.control.bgp.as_mut() else {
            return;
        };
        for time in bgp.drain_fib_change_times() {
            if self.fib_changes.last() != Some(&time) {
                self.fib_changes.push(time);
            }
        }
        if bgp.last_activity() > self.last_change {
            // Described whatever the log level keeps: the route lines may not exist.
            self.last_change = bgp.last_activity();
            self.last_change_what = ("bgp", "UPDATEs and route changes".to_string());
        }
        // Every UPDATE is sent at the instant the engine was called for (its log line has
        // that time), so the count since the last look belongs to now.
        let sent = bgp.total_updates();
        if sent > self.updates_seen {
            let n = sent - self.updates_seen;
            self.updates_seen = sent;
            let t = self.now.as_micros();
            match self.bgp_updates.last_mut() {
                Some((at, count)) if *at == t => *count += n,
                _ => self.bgp_updates.push((t, n)),
            }
        }
        for e in bgp.log() {
            self.log.push(LogEntry {
                time_us: e.time.as_micros(),
                kind: e.kind.as_str(),
                subject: e.subject,
                outcome: e.outcome,
                block: None,
            });
        }
    }
}

/// The BGP configuration in force: Calico's `BGPConfiguration` `default` and the `BGPPeer`s,
/// in the order they were first applied. A change during the run replaces one of them and
/// re-plans the peering from all of them, as Calico's confd regenerates BIRD's configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BgpInputs {
    pub config: bgp::BgpConfig,
    pub peers: Vec<bgp::Peer>,
    /// The Service CIDRs of `BGPConfiguration` `default` (`service_routes.rs`).
    pub services: crate::forwarding::advertise::ServiceCidrs,
}

impl BgpInputs {
    /// The resources present at the start, in file order.
    pub(super) fn from_specs(specs: &[Option<ResourceSpec>]) -> BgpInputs {
        let mut inputs = BgpInputs::default();
        for spec in specs.iter().flatten() {
            match spec {
                ResourceSpec::BgpConfiguration(c) if c.name == "default" => {
                    if let Some(asn) = c.as_number {
                        inputs.config.as_number = asn;
                    }
                    if let Some(mesh) = c.node_to_node_mesh_enabled {
                        inputs.config.node_to_node_mesh = mesh;
                    }
                    inputs.config.node_mesh_restart_time =
                        c.node_mesh_max_restart_time.map(bgp::whole_seconds);
                    inputs.services = service_cidrs(c);
                }
                ResourceSpec::BgpPeer(p) => inputs.peers.push(p.clone()),
                _ => {}
            }
        }
        inputs
    }

    /// A `BGPPeer` applied: it replaces the one of the same name, or comes last.
    pub(super) fn apply_peer(&mut self, peer: bgp::Peer) {
        match self.peers.iter_mut().find(|p| p.name == peer.name) {
            Some(old) => *old = peer,
            None => self.peers.push(peer),
        }
    }

    /// `BGPConfiguration` `default` applied: the whole spec replaces the old one (`kubectl
    /// apply` drops fields the new manifest no longer sets), so absent fields take Calico's
    /// defaults.
    pub(super) fn apply_config(&mut self, c: &BgpConfiguration) {
        let default = bgp::BgpConfig::default();
        self.config = bgp::BgpConfig {
            as_number: c.as_number.unwrap_or(default.as_number),
            node_to_node_mesh: c
                .node_to_node_mesh_enabled
                .unwrap_or(default.node_to_node_mesh),
            node_mesh_restart_time: c.node_mesh_max_restart_time.map(bgp::whole_seconds),
        };
        self.services = service_cidrs(c);
    }
}

/// The IPv4 Service CIDRs of a BGPConfiguration (podnet's fabric is IPv4; Calico renders
/// the IPv6 ones into `bird6.cfg`, which podnet does not model).
fn service_cidrs(c: &BgpConfiguration) -> crate::forwarding::advertise::ServiceCidrs {
    let v4 = |nets: &[IpNet]| -> Vec<IpNet> {
        nets.iter()
            .copied()
            .filter(|n| matches!(n, IpNet::V4(_)))
            .collect()
    };
    crate::forwarding::advertise::ServiceCidrs {
        cluster_ips: v4(&c.service_cluster_ips),
        external_ips: v4(&c.service_external_ips),
        load_balancer_ips: v4(&c.service_load_balancer_ips),
    }
}

/// Who installs routes: Felix from the datastore (Calico's VXLAN backend), and BGP speakers
/// (Calico nodes with BIRD, and routers when the fabric speaks BGP). Neither, for Spiderpool
/// pods on a fabric that does not speak BGP: they live on their rack segments.
#[derive(Debug, Default)]
pub struct ControlPlane {
    /// Felix's routes, the same on every node: prefix → owner node's address.
    pub felix: Option<BTreeMap<IpNet, IpAddr>>,
    pub bgp: Option<Box<BgpEngine>>,
    /// What the BGP peering is planned from, as it stands now.
    pub bgp_inputs: BgpInputs,
    /// The Service routes each node originates now (`service_routes.rs`).
    pub service_routes: BTreeMap<DeviceId, BTreeSet<IpNet>>,
}
