//! BIRD 2 configuration for every BGP speaker of a simulated cluster at one instant.
//!
//! For a Calico node: what Calico v3.30's confd templates (`confd/etc/calico/confd/templates/`
//! `bird.cfg.template`, `bird_aggr.cfg.template`, `bird_ipam.cfg.template`, tag v3.30.7) render
//! for that node, written in BIRD 2's syntax (Calico ships a BIRD 1.6 fork; the channel options
//! `import`, `export`, `gateway recursive`, `add paths` and `next hop keep` move into an `ipv4`
//! channel). The three template files are rendered into one file, in the order BIRD reads
//! them. The one thing BIRD 2 cannot say is Calico's `krt_tunnel` attribute (its fork's IPIP
//! tunnel device): the kernel filter keeps a comment where the fork sets it, so IPIP routes are
//! programmed natively. As in v3.30, mesh sessions say nothing about `multihop` (BIRD makes
//! iBGP multihop and eBGP direct by default) and BGPPeer sessions say `multihop`.
//!
//! For a router (ToR, spine, core): an operator's configuration for podnet's fabric model
//! (SPEC §2.1, §3.4, §3.5): static routes for the rack subnets and loopbacks over the fabric
//! (podnet's IGP abstraction), and, when `fabric.bgp`, one session per BGP neighbour that
//! passes on only BGP-learned routes — eBGP single-hop on fabric links, the ToR reflecting for
//! the nodes of its rack with next-hop-self only for routes learned over eBGP.
//!
//! Invariants: sessions come from podnet's peering plan (the engine's sessions, so the file
//! shows exactly the peers podnet simulates), but every attribute Calico's templates decide —
//! protocol names, `passive`, `rr client`, `rr cluster id`, `next hop keep`, the filters — is
//! derived here by the templates' own rules, so a disagreement with the plan shows up when the
//! file runs in real BIRD. Output is ordered as confd orders it (keys sorted as strings).
//!
//! Not here: BGPFilters, passwords, communities, listen ports, IPv6 (podnet models none of
//! them), and Felix's routes (local pod routes are the kernel's, not BIRD's).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

use ipnet::IpNet;

use crate::bgp::{BgpEngine, Peer, SessionSource, Speaker};
use crate::forwarding::{FibAction, Origin};
use crate::ipam::calico::{EncapMode, IpPool};
use crate::model::network::{Bfd, TimerProfile};
use crate::model::time::SimDuration;
use crate::model::topology::{DeviceId, DeviceKind, Topology};
use crate::scenario::Scenario;
use crate::sim::{Snapshot, World};

/// The Calico release whose templates are rendered.
pub const CALICO_VERSION: &str = "v3.30.7";

/// One rendered file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BirdConfig {
    /// The node or router it configures (the file is `<device>.conf`).
    pub device: String,
    pub role: Role,
    pub text: String,
}

/// Who wrote the configuration a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Rendered from Calico's confd templates.
    CalicoNode,
    /// An operator's configuration for podnet's fabric model.
    Router,
}

/// Why nothing can be exported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportError {
    /// No device runs BIRD: not Calico with the `bird` backend, and no BGP fabric.
    NoBgp,
    /// `--node` names a device that is neither a node nor a router.
    UnknownDevice(String),
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::NoBgp => f.write_str(
                "nothing in this scenario runs BIRD (Calico with calicoBackend: bird, or \
                 topology.fabric.bgp: true)",
            ),
            ExportError::UnknownDevice(name) => write!(f, "no node or router `{name}`"),
        }
    }
}

/// What the templates read, gathered once from the world at the instant.
struct Inputs<'a> {
    topology: &'a Topology,
    engine: &'a BgpEngine,
    peers: &'a [Peer],
    /// Pools sorted as confd lists `/v1/ipam/v4/pool` (by CIDR text).
    pools: Vec<&'a IpPool>,
    /// Each node's affine blocks, sorted as confd lists them (by CIDR text).
    blocks: BTreeMap<String, Vec<IpNet>>,
    /// Each router's fabric routes (prefix, next hop), from the dataplane.
    fabric_routes: BTreeMap<DeviceId, Vec<(IpNet, IpAddr)>>,
    profile: TimerProfile,
    bfd: Option<Bfd>,
    /// `nodeMeshMaxRestartTime` (whole seconds).
    mesh_restart_time: Option<SimDuration>,
    /// The Service CIDRs of the BGPConfiguration (`/rejectcidrs`), in confd's order.
    reject_cidrs: Vec<IpNet>,
}

/// Renders the configuration of every speaker (or only `only`), in device order.
pub fn render(
    scenario: &Scenario,
    world: &World,
    snapshot: &Snapshot,
    only: Option<&str>,
) -> Result<Vec<BirdConfig>, ExportError> {
    let Some(engine) = world.control.bgp.as_deref() else {
        return Err(ExportError::NoBgp);
    };
    let topology = &world.topology;
    if let Some(name) = only
        && topology.device_by_name(name).is_none()
    {
        return Err(ExportError::UnknownDevice(name.to_string()));
    }
    let mut pools: Vec<&IpPool> = world
        .addressing
        .calico()
        .map(|ipam| {
            ipam.pool_names()
                .iter()
                .filter_map(|n| ipam.pool(n))
                .collect()
        })
        .unwrap_or_default();
    pools.sort_by_key(|p| confd_key(&p.cidr.to_string()));
    let blocks = snapshot
        .nodes
        .iter()
        .map(|n| {
            let mut b: Vec<IpNet> = n.blocks.iter().filter_map(|c| c.parse().ok()).collect();
            b.sort_by_key(|c| confd_key(&c.to_string()));
            (n.name.clone(), b)
        })
        .collect();
    let mut fabric_routes = BTreeMap::new();
    let dp = &snapshot.dataplane;
    for (i, d) in topology.devices.iter().enumerate() {
        if !d.is_router() {
            continue;
        }
        let id = DeviceId(i as u32);
        let routes = dp
            .entries(id)
            .into_iter()
            .filter(|e| e.origin == Origin::Fabric)
            .filter_map(|e| match e.action {
                FibAction::Via { next_hop, .. } => Some((e.prefix, next_hop)),
                _ => None,
            })
            .collect();
        fabric_routes.insert(id, routes);
    }
    let inputs = Inputs {
        topology,
        engine,
        peers: &world.control.bgp_inputs.peers,
        pools,
        blocks,
        fabric_routes,
        profile: scenario.profile.bgp_timers,
        bfd: scenario.network.bgp.bfd,
        mesh_restart_time: world.control.bgp_inputs.config.node_mesh_restart_time,
        reject_cidrs: confd_sorted(world.control.bgp_inputs.services.all()),
    };
    let mut out = Vec::new();
    for (i, d) in topology.devices.iter().enumerate() {
        if only.is_some_and(|n| n != d.name) {
            continue;
        }
        let id = DeviceId(i as u32);
        match (d.kind, engine.speaker(id)) {
            (DeviceKind::Node(_), Some(s)) => out.push(BirdConfig {
                device: d.name.clone(),
                role: Role::CalicoNode,
                text: node_config(&inputs, s),
            }),
            (DeviceKind::Node(_), None) => {}
            (_, speaker) => out.push(BirdConfig {
                device: d.name.clone(),
                role: Role::Router,
                text: router_config(&inputs, id, speaker),
            }),
        }
    }
    Ok(out)
}

/// confd keys are paths with `/` in a CIDR written `-`, listed in string order.
fn confd_key(cidr: &str) -> String {
    cidr.replace('/', "-")
}

/// CIDRs in confd's listing order, each once.
fn confd_sorted(nets: impl IntoIterator<Item = IpNet>) -> Vec<IpNet> {
    let mut v: Vec<IpNet> = nets.into_iter().collect();
    v.sort_by_key(|c| confd_key(&c.to_string()));
    v.dedup();
    v
}

/// `10.0.0.2` → `10_0_0_2`, as the templates name protocols.
fn protocol_suffix(ip: IpAddr) -> String {
    ip.to_string().replace(['.', ':'], "_")
}

/// The timer lines of a session template. `calico-bird` is Calico v3.30's template verbatim
/// (BIRD's own defaults: hold 240 s, keepalive 80 s); the other profiles are podnet's and are
/// said to be so.
fn timer_lines(profile: TimerProfile) -> String {
    let t = crate::bgp::Timers::for_profile(profile);
    match profile {
        TimerProfile::CalicoBird => "  connect delay time 2;\n  connect retry time 5;\n  \
                                     error wait time 5,30;\n"
            .to_string(),
        _ => format!(
            "  # podnet's `{}` timer profile, not Calico's template values:\n  \
             hold time {};\n  keepalive time {};\n  connect delay time {};\n  \
             connect retry time {};\n  error wait time 5,30;\n",
            profile,
            t.hold.as_nanos() / 1_000_000_000,
            t.keepalive.as_nanos() / 1_000_000_000,
            t.connect_delay.as_nanos() / 1_000_000_000,
            t.connect_retry.as_nanos() / 1_000_000_000,
        ),
    }
}

/// The template's `graceful restart time` line for `nodeMeshMaxRestartTime` or a BGPPeer's
/// `maxRestartTime` (confd writes whole seconds), nothing when unset.
fn restart_time_line(t: Option<SimDuration>) -> String {
    t.map_or(String::new(), |t| {
        format!(
            "  graceful restart time {};\n",
            t.as_nanos() / 1_000_000_000
        )
    })
}

fn bfd_protocol(bfd: Bfd, interfaces: &str) -> String {
    let ms = bfd.interval.as_nanos() / 1_000_000;
    format!(
        "# BFD: podnet's network.bgp.bfd ({ms} ms x {m}); Calico v3.30's template has none,\n\
         # later templates enable it with `bfd graceful` on every session.\n\
         protocol bfd {{\n  interface {interfaces} {{\n    interval {ms} ms;\n    multiplier {m};\n  }};\n  \
         multihop {{\n    interval {ms} ms;\n    multiplier {m};\n  }};\n}}\n\n",
        m = bfd.multiplier
    )
}

/// Calico's `calico_node` peers (nodes) carry their cluster ID in `rr_cluster_id`; a peer
/// given by `peerIP` that is not a node carries none.
fn rr_cluster_id(peer: Option<&Speaker>) -> Option<IpAddr> {
    peer.filter(|s| !s.is_router()).and_then(|s| s.cluster_id)
}

/// Where a BGPPeer session sits in the node's file: `Global_` when some global BGPPeer peers
/// every node with this address (confd then skips node-specific keys for it), else `Node_`.
fn is_global_peer(inputs: &Inputs, peer_address: IpAddr, peer: Option<&Speaker>) -> bool {
    inputs.peers.iter().filter(|p| p.is_global()).any(|p| {
        if let Some(ip) = p.peer_ip {
            return ip == peer_address;
        }
        match (&p.peer_selector, peer.and_then(|s| s.node)) {
            (Some(sel), Some(n)) => sel.matches(&inputs.topology.node(n).labels),
            _ => false,
        }
    })
}

struct PeerBlock {
    key: String,
    text: String,
}

fn node_config(inputs: &Inputs, me: &Speaker) -> String {
    let mut out = String::new();
    let node_ip = me.address;
    let _ = writeln!(
        out,
        "# BIRD 2 configuration of node {} as Calico {CALICO_VERSION}'s confd templates render it\n\
         # (bird.cfg, bird_aggr.cfg and bird_ipam.cfg in one file), written by `podnet export bird`.\n\
         # Calico runs its BIRD 1.6 fork; this is the same configuration in BIRD 2's syntax.\n",
        me.name
    );
    out.push_str("function apply_communities ()\n{\n}\n\n");

    // ---- bird_aggr.cfg ----
    out.push_str("# ---- bird_aggr.cfg ----\nprotocol static {\n  ipv4;\n");
    let blocks = inputs
        .blocks
        .get(&me.name)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // `/staticroutes`: the Service routes this node advertises (`bgp::engine` statics).
    let statics = confd_sorted(inputs.engine.statics(me.device).iter().copied());
    if blocks.is_empty() && statics.is_empty() {
        out.push_str("   # No IP blocks or static routes for this host.\n");
    }
    if !blocks.is_empty() {
        out.push_str("   # IP blocks for this host.\n");
        for b in blocks.iter().filter(|b| b.prefix_len() != 32) {
            let _ = writeln!(out, "   route {b} blackhole;");
        }
    }
    if !statics.is_empty() {
        out.push_str("   # Static routes.\n");
        for r in &statics {
            let _ = writeln!(out, "   route {r} blackhole;");
        }
    }
    out.push_str(
        "}\n\n# Aggregation of routes on this host; export the block, nothing beneath it.\n\
         function calico_aggr ()\n{\n",
    );
    for b in blocks {
        let _ = writeln!(
            out,
            "      # Block {b} is confirmed\n      if ( net = {b} ) then {{ accept; }}\n      \
             if ( net ~ {b} ) then {{ reject; }}"
        );
    }
    out.push_str("}\n\n");

    // ---- bird_ipam.cfg ----
    out.push_str("# ---- bird_ipam.cfg ----\nfunction reject_disabled_pools ()\n{\n");
    for p in inputs.pools.iter().filter(|p| p.disable_bgp_export) {
        let _ = writeln!(out, "  if ( net ~ {} ) then {{ reject; }}", p.cidr);
    }
    out.push_str(
        "}\n\nfunction reject_tunnel_routes () {\n  \
         # Don't export tunnel routes to other nodes, Felix programs them.\n  \
         # IPIP routes are handled by Bird, and it does not re-advertise them.\n  \
         if (defined(ifname)) then {\n     \
         if ((ifname ~ \"*.cali\") || (ifname ~ \"*.calico\")) then {\n        reject;\n     }\n  }\n}\n\n\
         function reject_local_routes () {\n  \
         # Don't export local routes learned via BPF as they should never leave the node.\n  \
         if (defined(ifname)) then {\n     if (ifname ~ \"bpf*.cali\") then {\n        reject;\n     }\n  }\n}\n\n\
         function calico_export_to_bgp_peers(bool internal_peer) {\n  \
         reject_disabled_pools();\n  if (internal_peer) then {\n    reject_tunnel_routes();\n  }\n  \
         reject_local_routes();\n  apply_communities();\n  calico_aggr();\n",
    );
    if !statics.is_empty() {
        out.push_str("\n  # Export static routes.\n");
        for r in &statics {
            let _ = writeln!(out, "  if ( net ~ {r} ) then {{ accept; }}");
        }
    }
    for p in &inputs.pools {
        if p.disable_bgp_export {
            let _ = writeln!(out, "  # Skip {} as BGP export is disabled for it", p.cidr);
        } else {
            let _ = writeln!(out, "  if ( net ~ {} ) then {{\n    accept;\n  }}", p.cidr);
        }
    }
    out.push_str("}\n\nfilter calico_kernel_programming {\n");
    if !inputs.reject_cidrs.is_empty() {
        out.push_str("\n  # Don't program static routes into kernel.\n");
        for r in &inputs.reject_cidrs {
            let _ = writeln!(out, "  if ( net ~ {r} ) then {{ reject; }}");
        }
        out.push('\n');
    }
    for p in &inputs.pools {
        let _ = writeln!(out, "  if ( net ~ {} ) then {{", p.cidr);
        if p.vxlan_mode != EncapMode::Never {
            out.push_str(
                "    # Don't program VXLAN routes into the kernel - these are handled by Felix.\n    \
                 reject;\n  }\n",
            );
            continue;
        }
        match p.ipip_mode {
            EncapMode::Never => out.push_str(
                "    # Calico's BIRD sets krt_tunnel = \"\" here (no IPIP).\n    accept;\n  }\n",
            ),
            mode => {
                let _ = writeln!(
                    out,
                    "    # Calico's BIRD sets krt_tunnel = \"tunl0\" here (ipipMode {mode:?}); BIRD 2 has\n    \
                     # no krt_tunnel, so this route is programmed natively, without the tunnel.\n    \
                     accept;\n  }}"
                );
            }
        }
    }
    out.push_str("  accept;\n}\n\n");

    // ---- bird.cfg ----
    let _ = writeln!(
        out,
        "# ---- bird.cfg ----\nrouter id {};\n\n\
         # Configure synchronization between routing tables and kernel.\nprotocol kernel {{\n  \
         learn;             # Learn all alien routes from the kernel\n  \
         persist;           # Don't remove routes on bird shutdown\n  \
         scan time 2;       # Scan kernel routing table every 2 seconds\n  \
         graceful restart;\n  merge paths on;    # Allow export multipath routes (ECMP)\n  \
         ipv4 {{\n    import all;\n    export filter calico_kernel_programming; # Default is export none\n  }};\n}}\n\n\
         # Watch interface up/down events.\nprotocol device {{\n  debug {{ states }};\n  \
         scan time 2;    # Scan interfaces every 2 seconds\n}}\n\n\
         protocol direct {{\n  debug {{ states }};\n  ipv4;\n  \
         interface -\"cali*\", -\"kube-ipvs*\", \"*\"; # Exclude cali* and kube-ipvs* but\n                                          \
         # include everything else.\n}}\n",
        me.router_id
    );
    if let Some(bfd) = inputs.bfd {
        out.push_str(&bfd_protocol(bfd, "-\"cali*\", -\"kube-ipvs*\", \"*\""));
    }
    let _ = writeln!(
        out,
        "# Template for all BGP clients\ntemplate bgp bgp_template {{\n  debug {{ states }};\n  \
         description \"Connection to BGP peer\";\n  local as {};\n  ipv4 {{\n    \
         gateway recursive; # This should be the default, but just in case.\n    add paths on;\n  }};\n  \
         graceful restart;  # See comment in kernel section about graceful restart.\n{}}}\n",
        me.as_number,
        timer_lines(inputs.profile)
    );

    let bfd_line = if inputs.bfd.is_some() {
        "  bfd graceful;\n"
    } else {
        ""
    };
    let mut mesh = Vec::new();
    let mut global = Vec::new();
    let mut node = Vec::new();
    for s in inputs.engine.sessions_of(me.device) {
        if s.reason.as_ref().is_some_and(|r| r.is_gone()) {
            continue;
        }
        let Some(side) = s.side_of(me.id) else {
            continue;
        };
        let other = s
            .peer_of(side)
            .map(|o| &inputs.engine.speakers()[o.index()]);
        let peer_address = other.map_or(s.b_address, |o| o.address);
        let suffix = protocol_suffix(peer_address);
        match &s.source {
            SessionSource::Mesh => {
                let Some(o) = other else { continue };
                // Go templates compare the addresses as strings.
                let passive = if o.address.to_string() > node_ip.to_string() {
                    "\n  passive on; # Mesh is unidirectional, peer will connect to us."
                } else {
                    ""
                };
                let restart = restart_time_line(inputs.mesh_restart_time);
                mesh.push(PeerBlock {
                    key: o.name.clone(),
                    text: format!(
                        "# For peer /bgp/v1/host/{}/ip_addr_v4\nprotocol bgp Mesh_{suffix} from bgp_template {{\n  \
                         neighbor {} as {};\n  \
                         source address {node_ip};  # The local address we use for the TCP connection\n  \
                         ipv4 {{\n    import all;\n    export filter {{\n      \
                         calico_export_to_bgp_peers(true);\n      reject;\n    }};  \
                         # Only want to export routes for workloads.\n  }};{passive}\n{restart}{bfd_line}}}\n",
                        o.name, o.address, o.as_number
                    ),
                });
                // A BGPPeer that also pairs the two nodes is one more peering key to confd,
                // so the template renders a second protocol to the same neighbour (podnet
                // simulates the one session).
                if let Some(dup) = inputs.peers.iter().find(|p| pairs(inputs, p, me, o))
                    && let Some((global_peer, block)) =
                        peer_block(inputs, me, other, peer_address, &dup.name, bfd_line)
                {
                    if global_peer {
                        global.push(block);
                    } else {
                        node.push(block);
                    }
                }
            }
            SessionSource::Peer(bgp_peer) => {
                let Some((global_peer, block)) =
                    peer_block(inputs, me, other, peer_address, bgp_peer, bfd_line)
                else {
                    continue;
                };
                if global_peer {
                    global.push(block);
                } else {
                    node.push(block);
                }
            }
            SessionSource::Fabric => {}
        }
    }
    out.push_str("# ------------- Node-to-node mesh -------------\n");
    if me.cluster_id.is_some() {
        let _ = writeln!(
            out,
            "# This node ({}) is configured as a route reflector with cluster ID {};\n\
             # ignore node-to-node mesh setting.",
            me.name,
            me.cluster_id.map(|c| c.to_string()).unwrap_or_default()
        );
    } else if mesh.is_empty() {
        out.push_str("# Node-to-node mesh disabled\n");
    }
    for list in [&mut mesh, &mut global, &mut node] {
        list.sort_by(|a, b| a.key.cmp(&b.key));
    }
    push_blocks(&mut out, &mesh);
    out.push_str("\n# ------------- Global peers -------------\n");
    if global.is_empty() {
        out.push_str("# No global peers configured.\n");
    }
    push_blocks(&mut out, &global);
    out.push_str("\n# ------------- Node-specific peers -------------\n");
    if node.is_empty() {
        out.push_str("# No node-specific peers configured.\n");
    }
    push_blocks(&mut out, &node);
    out
}

/// Whether BGPPeer `p` peers `a` with `b`, in either direction (confd adds the reverse
/// peering itself): it applies to one (`node`, `nodeSelector`, or every node) and targets
/// the other (`peerIP`, or `peerSelector`).
fn pairs(inputs: &Inputs, p: &Peer, a: &Speaker, b: &Speaker) -> bool {
    let node = |s: &Speaker| s.node.map(|n| inputs.topology.node(n));
    let applies = |s: &Speaker| {
        node(s).is_some_and(|n| match (&p.node, &p.node_selector) {
            (Some(name), _) => n.name == *name,
            (None, Some(sel)) => sel.matches(&n.labels),
            (None, None) => true,
        })
    };
    let targets = |s: &Speaker| match (p.peer_ip, &p.peer_selector) {
        (Some(ip), _) => ip == s.address,
        (None, Some(sel)) => node(s).is_some_and(|n| sel.matches(&n.labels)),
        (None, None) => false,
    };
    (applies(a) && targets(b)) || (applies(b) && targets(a))
}

/// The `Global_`/`Node_` protocol BGPPeer `bgp_peer` gives `me` towards `peer_address`
/// (`other` when a speaker owns it), and whether it is global; `None` when the peer's AS is
/// unknown.
fn peer_block(
    inputs: &Inputs,
    me: &Speaker,
    other: Option<&Speaker>,
    peer_address: IpAddr,
    bgp_peer: &str,
    bfd_line: &str,
) -> Option<(bool, PeerBlock)> {
    let node_ip = me.address;
    let suffix = protocol_suffix(peer_address);
    let peer_name = other.map_or(String::new(), |o| format!(" ({})", o.name));
    let config = inputs.peers.iter().find(|p| p.name == bgp_peer);
    let peer_as = match other {
        Some(o) => o.as_number,
        None => config.and_then(|c| c.as_number)?,
    };
    let internal = peer_as == me.as_number;
    let global_peer = is_global_peer(inputs, peer_address, other);
    let calico_node = other.is_some_and(|o| !o.is_router());
    let mut lines = String::new();
    if global_peer && calico_node && peer_address.to_string() > node_ip.to_string() {
        lines.push_str("  passive on; # Peering is unidirectional, peer will connect to us.\n");
    }
    lines.push_str(&restart_time_line(config.and_then(|c| c.max_restart_time)));
    // A peering this node has from its own BGPPeer's `peerIP` carries no
    // `rr_cluster_id` (confd's client.go fills it only for peerings built from a
    // node: `peerSelector`, and the automatic reverse of a `peerIP` peering).
    let from_peer_ip = config.and_then(|c| c.peer_ip) == Some(peer_address);
    let peer_cluster = if from_peer_ip {
        None
    } else {
        rr_cluster_id(other)
    };
    if internal
        && let Some(cid) = me.cluster_id
        && peer_cluster != Some(cid)
    {
        let _ = writeln!(lines, "  rr client;\n  rr cluster id {cid};");
    }
    let keep = !internal && config.is_some_and(|c| c.keep_original_next_hop);
    let keep_line = if keep { "    next hop keep;\n" } else { "" };
    let prefix = if global_peer { "Global" } else { "Node" };
    // `peerIP: 10.0.0.1:1179`: BIRD's `neighbor <ip> port <n>` (179 without it).
    let port = config
        .and_then(|c| c.peer_port)
        .map_or(String::new(), |p| format!(" port {p}"));
    let block = PeerBlock {
        key: peer_address.to_string(),
        text: format!(
            "# For peer {}/{peer_address}{peer_name}, BGPPeer {bgp_peer}\n\
             protocol bgp {prefix}_{suffix} from bgp_template {{\n  ttl security off;\n  multihop;\n  \
             neighbor {peer_address}{port} as {peer_as};\n  \
             source address {node_ip};  # The local address we use for the TCP connection\n  \
             ipv4 {{\n    import filter {{\n      accept;\n    }};\n    export filter {{\n      \
             calico_export_to_bgp_peers({internal});\n      reject;\n    }};  \
             # Only want to export routes for workloads.\n{keep_line}  }};\n{lines}{bfd_line}}}\n",
            if global_peer {
                "/bgp/v1/global/peer_v4".to_string()
            } else {
                format!("/bgp/v1/host/{}/peer_v4", me.name)
            },
        ),
    };
    Some((global_peer, block))
}

fn push_blocks(out: &mut String, blocks: &[PeerBlock]) {
    for b in blocks {
        out.push('\n');
        out.push_str(&b.text);
    }
}

fn router_config(inputs: &Inputs, id: DeviceId, me: Option<&Speaker>) -> String {
    let device = inputs.topology.device(id);
    let mut out = String::new();
    let what = match device.kind {
        DeviceKind::Tor(_) => "ToR",
        DeviceKind::Spine { .. } => "spine",
        _ => "core router",
    };
    let _ = writeln!(
        out,
        "# BIRD 2 configuration of {what} {name}: NOT rendered by Calico. It is what an operator\n\
         # would configure for podnet's fabric model (SPEC 2.1, 3.4, 3.5), written by\n\
         # `podnet export bird`: static routes for the rack subnets and loopbacks over the fabric\n\
         # (podnet's IGP abstraction){bgp}.\n\
         # Fabric links are point-to-point: each end holds its own address with the other end's\n\
         # address as peer (`ip addr add LOCAL peer REMOTE dev IF`).\n\
         router id {rid};\n\n\
         protocol device {{\n  scan time 2;\n}}\n\n\
         {kernel}",
        kernel = if inputs.topology.fabric.ecmp {
            "# Equal-cost BGP paths merged into one multipath route (topology.fabric.ecmp).\n\
             protocol kernel {\n  scan time 2;\n  merge paths on;\n  ipv4 {\n    import none;\n    \
             export all;\n  };\n}\n"
        } else {
            "# One path per prefix, as podnet's FIBs hold (no ECMP).\n\
             protocol kernel {\n  scan time 2;\n  ipv4 {\n    import none;\n    export all;\n  \
             };\n}\n"
        },
        name = device.name,
        bgp = if me.is_some() {
            " and one BGP session per neighbour passing on only BGP-learned routes"
        } else {
            "; the fabric does not speak BGP (topology.fabric.bgp is false)"
        },
        rid = device.address,
    );
    let routes = inputs
        .fabric_routes
        .get(&id)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // A route to a point-to-point neighbour's own address is the link's connected route.
    let routes: Vec<_> = routes
        .iter()
        .filter(|(p, nh)| !(p.prefix_len() == 32 && p.addr() == *nh))
        .collect();
    if !routes.is_empty() {
        out.push_str("# podnet's fabric routes (shortest paths, equal costs broken by device name).\nprotocol static fabric {\n  ipv4;\n");
        for (p, nh) in routes {
            let _ = writeln!(out, "  route {p} via {nh};");
        }
        out.push_str("}\n\n");
    }
    let Some(me) = me else {
        return out;
    };
    if let Some(bfd) = inputs.bfd {
        out.push_str(&bfd_protocol(bfd, "\"*\""));
    }
    out.push_str(
        "# Only routes learned over BGP are passed on; a router originates nothing.\n\
         filter fabric_bgp_export {\n  if source = RTS_BGP then accept;\n  reject;\n}\n\n",
    );
    let timers = timer_lines(inputs.profile);
    let mut blocks = Vec::new();
    for s in inputs.engine.sessions_of(me.device) {
        if s.reason.as_ref().is_some_and(|r| r.is_gone()) {
            continue;
        }
        let Some(side) = s.side_of(me.id) else {
            continue;
        };
        let Some(o) = s
            .peer_of(side)
            .map(|o| &inputs.engine.speakers()[o.index()])
        else {
            continue;
        };
        let ibgp = o.as_number == me.as_number;
        let mut opts = String::new();
        // Nodes and fabric neighbours are all one hop away from a router.
        opts.push_str("  direct;\n");
        if s.reflects[side] {
            let _ = writeln!(
                opts,
                "  rr client;\n  rr cluster id {};",
                me.cluster_id.unwrap_or(me.router_id)
            );
        }
        let next_hop = if ibgp {
            // Third-party next hops of the rack are kept; routes from the fabric get ours.
            "    next hop self ebgp;\n"
        } else {
            ""
        };
        let bfd = if inputs.bfd.is_some() && o.node.is_some() {
            "  bfd graceful;\n"
        } else if inputs.bfd.is_some() {
            "  bfd on;\n"
        } else {
            ""
        };
        blocks.push(PeerBlock {
            key: o.name.clone(),
            text: format!(
                "protocol bgp {} {{\n  description \"{} ({})\";\n  local {} as {};\n  neighbor {} as {};\n{opts}  \
                 ipv4 {{\n    import all;\n    export filter fabric_bgp_export;\n{next_hop}  }};\n  \
                 graceful restart;\n{timers}{bfd}}}\n",
                bird_name(&o.name),
                o.name,
                if ibgp { "iBGP" } else { "eBGP" },
                me.address,
                me.as_number,
                o.address,
                o.as_number,
            ),
        });
    }
    blocks.sort_by(|a, b| a.key.cmp(&b.key));
    for b in &blocks {
        out.push_str(&b.text);
        out.push('\n');
    }
    out
}

/// A BIRD protocol name from a device name (letters, digits and `_`).
fn bird_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests;
