//! Import and export policy: Calico's BIRD export filter on nodes, iBGP split horizon and
//! RFC 4456 route reflection, eBGP loop prevention, and the attributes a route is sent with.
//!
//! Export is split in three, so the engine can do the expensive parts once:
//! [`calico_export_filter`] depends only on the prefix and the speaker (once per prefix);
//! [`may_send`] decides per session whether the route goes there at all and how
//! ([`ExportKey`]); [`export_attrs`] builds the attributes, which depend only on the key,
//! so one reflected route is built once for all clients.
//!
//! This module does not choose routes (`decision`) or send anything (`engine`).

use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::SessionId;
use super::config::ExportPool;
use super::peering::Speaker;
use super::rib::{DEFAULT_LOCAL_PREF, PathAttributes};

/// Why Calico's export filter (`calico_export_to_bgp_peers`) refuses a prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filtered {
    /// Inside a pool with `disableBGPExport: true`.
    DisabledPool(IpNet),
    /// A more-specific route inside one of this node's own blocks (`calico_aggr`): only the
    /// block itself is advertised.
    InsideOwnBlock(IpNet),
    /// Not inside any IP pool.
    OutsidePools,
}

impl fmt::Display for Filtered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Filtered::DisabledPool(p) => write!(f, "pool {p} has disableBGPExport"),
            Filtered::InsideOwnBlock(b) => write!(f, "more specific than own block {b}"),
            Filtered::OutsidePools => f.write_str("outside every IP pool"),
        }
    }
}

/// Calico's BIRD export filter for a node: nothing from pools with `disableBGPExport`; each
/// of the node's own blocks as the block prefix and nothing more specific inside it; then
/// anything inside one of the node's static routes (`/staticroutes`: the Service CIDRs and
/// /32s it advertises, `net ~ cidr`, so more-specifics learned from peers too); then any
/// route inside a pool (borrowed /32s, routes learned from peers). `own` holds what the node
/// originates from IPAM: its confirmed blocks and the addresses it borrowed; `statics` its
/// Service routes (`bird_ipam.cfg.template`, `calico_export_to_bgp_peers`).
pub fn calico_export_filter(
    prefix: IpNet,
    own: &[IpNet],
    statics: &[IpNet],
    pools: &[ExportPool],
) -> Result<(), Filtered> {
    if let Some(pool) = pools
        .iter()
        .find(|p| p.disable_bgp_export && p.cidr.contains(&prefix))
    {
        return Err(Filtered::DisabledPool(pool.cidr));
    }
    if own.contains(&prefix) {
        return Ok(());
    }
    if let Some(block) = own.iter().find(|b| b.contains(&prefix)) {
        return Err(Filtered::InsideOwnBlock(*block));
    }
    if statics.iter().any(|s| s.contains(&prefix)) {
        return Ok(());
    }
    if pools.iter().any(|p| p.cidr.contains(&prefix)) {
        Ok(())
    } else {
        Err(Filtered::OutsidePools)
    }
}

/// A route as its exporter classifies it (RFC 4456 §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteClass {
    /// Originated here.
    Local,
    /// Learned over eBGP.
    Ebgp,
    /// Learned over iBGP from one of this speaker's route-reflector clients.
    IbgpFromClient,
    /// Learned over iBGP from a non-client.
    IbgpFromNonClient,
}

/// The receiving end of a session, as the exporter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportSession {
    pub id: SessionId,
    pub ebgp: bool,
    /// The receiver is this speaker's route-reflector client.
    pub peer_is_client: bool,
    pub peer_as: u32,
    /// The segment both ends share (third-party next hop).
    pub shared_subnet: Option<IpNet>,
    /// The exporter keeps next hops on eBGP (`keepOriginalNextHop`).
    pub keep_next_hop: bool,
    /// The session's `rr cluster id`: the exporter's cluster ID on a session to its
    /// route-reflector client (Calico sets it only there), `None` elsewhere.
    pub cluster_id: Option<IpAddr>,
}

/// Why a route is not sent on a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotSent {
    /// It was learned from this very peer.
    BackToSender,
    /// iBGP-learned and this speaker does not reflect: never to iBGP peers (RFC 4271 §9.2.1).
    IbgpSplitHorizon,
    /// From a non-client: a reflector sends it to its clients only (RFC 4456 §6).
    NonClientToNonClient,
    /// The receiver's AS is already in the AS_PATH: it would reject it (RFC 4271 §9.1.2).
    AsPathLoop(u32),
    /// Reflected to a client session whose cluster ID is already in the CLUSTER_LIST
    /// (BIRD checks this on export, `bgp_import_control`, not on import from a non-client).
    ClusterListLoop(IpAddr),
}

/// How a route is transformed for a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExportKey {
    pub ebgp: bool,
    pub next_hop_self: bool,
    /// Reflected: ORIGINATOR_ID and CLUSTER_LIST are set (RFC 4456 §8).
    pub reflect: bool,
}

/// Whether `route` (of class `class`, learned on `learned_on`) goes to `to`, and how.
///
/// Next hop: a router sets itself, except when the current next hop lies in the subnet it
/// shares with the receiver (third-party next hop, RFC 4271 §5.1.3); a Calico node (BIRD)
/// keeps the next hop on iBGP and sets itself on eBGP unless `keepOriginalNextHop`; a local
/// route always carries the originator's address.
///
/// Cluster-list loops are refused here, where BIRD refuses them: a route whose CLUSTER_LIST
/// holds the session's cluster ID is not sent to a route-reflector client (BIRD 1.6
/// `bgp_import_control` → `bgp_cluster_list_loopy`, which only looks at `rr client`
/// sessions). So two reflectors of one cluster, peered as plain iBGP as Calico does, keep
/// and use each other's reflected routes but never pass them to their clients.
pub fn may_send(
    exporter_is_router: bool,
    exporter_reflects: bool,
    class: RouteClass,
    learned_on: Option<SessionId>,
    attrs: &PathAttributes,
    to: &ExportSession,
) -> Result<ExportKey, NotSent> {
    if learned_on == Some(to.id) {
        return Err(NotSent::BackToSender);
    }
    if let Some(c) = to.cluster_id
        && !to.ebgp
        && attrs.cluster_list.contains(&c)
    {
        return Err(NotSent::ClusterListLoop(c));
    }
    let reflect = !to.ebgp
        && matches!(
            class,
            RouteClass::IbgpFromClient | RouteClass::IbgpFromNonClient
        );
    if !to.ebgp {
        match class {
            RouteClass::Local | RouteClass::Ebgp | RouteClass::IbgpFromClient => {}
            RouteClass::IbgpFromNonClient if to.peer_is_client => {}
            // A speaker with no clients at all is not a reflector: plain split horizon.
            RouteClass::IbgpFromNonClient if !exporter_reflects => {
                return Err(NotSent::IbgpSplitHorizon);
            }
            RouteClass::IbgpFromNonClient => {
                return Err(NotSent::NonClientToNonClient);
            }
        }
    } else if attrs.as_path.contains(&to.peer_as) {
        return Err(NotSent::AsPathLoop(to.peer_as));
    }
    let third_party = to
        .shared_subnet
        .is_some_and(|s| s.contains(&attrs.next_hop));
    let next_hop_self = match class {
        RouteClass::Local => true,
        _ if exporter_is_router => !third_party,
        _ => to.ebgp && !to.keep_next_hop,
    };
    Ok(ExportKey {
        ebgp: to.ebgp,
        next_hop_self,
        reflect,
    })
}

/// The attributes `me` sends a route with, for `key`. `learned_from` is the BGP Identifier of
/// the peer the route came from (it becomes the ORIGINATOR_ID when first reflected).
/// `ibgp_local_pref`: the LOCAL_PREF a Calico node's export filter sets on every route it sends
/// over iBGP (Calico v3.32+, REFERENCE §4.4); routers leave LOCAL_PREF as it is.
/// A pure function of its arguments, of which it reads only `me`'s kind, address, AS and
/// cluster ID: the engine's export cache (`engine/send.rs`) relies on it.
pub fn export_attrs(
    attrs: &PathAttributes,
    key: ExportKey,
    me: &Speaker,
    learned_from: IpAddr,
    ibgp_local_pref: Option<u32>,
) -> PathAttributes {
    let mut out = attrs.clone();
    if let Some(pref) = ibgp_local_pref
        && !key.ebgp
        && !me.is_router()
    {
        out.local_pref = pref;
    }
    if key.next_hop_self {
        out.next_hop = me.address;
    }
    if key.ebgp {
        // RFC 4271 §5.1.2: prepend our AS; LOCAL_PREF, ORIGINATOR_ID and CLUSTER_LIST do not
        // cross AS borders, and a MED learned from another AS is not passed on (§5.1.4).
        out.as_path.insert(0, me.as_number);
        out.local_pref = DEFAULT_LOCAL_PREF;
        if !attrs.as_path.is_empty() {
            out.med = 0;
        }
        out.originator_id = None;
        out.cluster_list.clear();
    } else if key.reflect {
        // RFC 4456 §8: the first reflector records the originator; every reflector
        // prepends its cluster ID.
        out.originator_id.get_or_insert(learned_from);
        if let Some(cluster) = me.cluster_id {
            out.cluster_list.insert(0, cluster);
        }
    }
    out
}

/// Why a received route is rejected on import (loop detection).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportRejected {
    /// eBGP route whose AS_PATH holds our AS (RFC 4271 §9.1.2).
    AsPathLoop(u32),
    /// Reflected back to its originator (RFC 4456 §8).
    OriginatorIsSelf,
    /// Our cluster ID is in its CLUSTER_LIST and it came from our route-reflector client
    /// (RFC 4456 §8, checked by BIRD only on `rr client` sessions).
    ClusterListLoop(IpAddr),
}

impl fmt::Display for ImportRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportRejected::AsPathLoop(asn) => write!(f, "AS_PATH contains own AS {asn}"),
            ImportRejected::OriginatorIsSelf => f.write_str("ORIGINATOR_ID is own router ID"),
            ImportRejected::ClusterListLoop(c) => {
                write!(f, "CLUSTER_LIST contains own cluster ID {c}")
            }
        }
    }
}

/// Loop checks on a received route, where BIRD makes them (`proto/bgp/attrs.c`, REFERENCE
/// §4.2): the AS_PATH on eBGP, the ORIGINATOR_ID on every session, and the CLUSTER_LIST only
/// on a session to our route-reflector client (`from_client`): a reflector keeps a route its
/// same-cluster partner reflected to it over plain iBGP.
pub fn import_check(
    attrs: &PathAttributes,
    ebgp: bool,
    from_client: bool,
    me: &Speaker,
) -> Result<(), ImportRejected> {
    if ebgp && attrs.as_path.contains(&me.as_number) {
        return Err(ImportRejected::AsPathLoop(me.as_number));
    }
    originator_check(attrs, me.router_id)?;
    if let Some(c) = me.cluster_id
        && from_client
        && attrs.cluster_list.contains(&c)
    {
        return Err(ImportRejected::ClusterListLoop(c));
    }
    Ok(())
}

/// The ORIGINATOR_ID part of [`import_check`]: the whole of it for a route learned over
/// iBGP from a peer that is not the receiver's client.
pub fn originator_check(attrs: &PathAttributes, router_id: IpAddr) -> Result<(), ImportRejected> {
    if attrs.originator_id == Some(router_id) {
        return Err(ImportRejected::OriginatorIsSelf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgp::SpeakerId;
    use crate::model::topology::DeviceId;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn pools() -> Vec<ExportPool> {
        vec![
            ExportPool {
                cidr: net("10.244.0.0/16"),
                disable_bgp_export: false,
            },
            ExportPool {
                cidr: net("10.99.0.0/16"),
                disable_bgp_export: true,
            },
        ]
    }

    #[test]
    fn calico_filter_exports_blocks_and_borrowed_addresses_but_not_more_specifics() {
        let own = [net("10.244.1.0/26"), net("10.244.2.7/32")];
        let p = pools();
        assert_eq!(
            calico_export_filter(net("10.244.1.0/26"), &own, &[], &p),
            Ok(())
        );
        // A borrowed /32 (inside another node's block) is accepted.
        assert_eq!(
            calico_export_filter(net("10.244.2.7/32"), &own, &[], &p),
            Ok(())
        );
        // Another node's /32 inside our block is not (REFERENCE §4.3 "derived").
        assert_eq!(
            calico_export_filter(net("10.244.1.5/32"), &own, &[], &p),
            Err(Filtered::InsideOwnBlock(net("10.244.1.0/26")))
        );
        // Learned routes inside a pool are accepted; outside every pool they are not.
        assert_eq!(
            calico_export_filter(net("10.244.9.0/26"), &own, &[], &p),
            Ok(())
        );
        assert_eq!(
            calico_export_filter(net("172.16.0.0/26"), &own, &[], &p),
            Err(Filtered::OutsidePools)
        );
        // A node's static routes (Service CIDRs and /32s) pass, and so does anything
        // inside them (another node's Service /32 a reflector passes on); without them a
        // Service address is outside every pool.
        let statics = [net("10.96.0.0/12"), net("192.0.2.10/32")];
        assert_eq!(
            calico_export_filter(net("10.96.0.10/32"), &own, &statics, &p),
            Ok(())
        );
        assert_eq!(
            calico_export_filter(net("192.0.2.10/32"), &own, &statics, &p),
            Ok(())
        );
        assert_eq!(
            calico_export_filter(net("10.96.0.10/32"), &own, &[], &p),
            Err(Filtered::OutsidePools)
        );
        assert_eq!(
            calico_export_filter(net("192.0.2.11/32"), &own, &statics, &p),
            Err(Filtered::OutsidePools)
        );
        let disabled = [net("10.99.0.0/26")];
        assert_eq!(
            calico_export_filter(net("10.99.0.0/26"), &disabled, &[], &p),
            Err(Filtered::DisabledPool(net("10.99.0.0/16")))
        );
    }

    fn session(ebgp: bool, client: bool) -> ExportSession {
        ExportSession {
            id: SessionId(9),
            ebgp,
            peer_is_client: client,
            peer_as: 65002,
            shared_subnet: Some(net("10.6.0.0/16")),
            keep_next_hop: false,
            cluster_id: client.then(|| ip("10.6.0.1")),
        }
    }

    #[test]
    fn reflection_rules_follow_rfc_4456() {
        let a = PathAttributes::local(ip("10.6.0.10"));
        use RouteClass::*;
        // Client routes go to clients and non-clients; non-client routes to clients only.
        for to_client in [true, false] {
            let s = session(false, to_client);
            assert!(may_send(false, true, IbgpFromClient, Some(SessionId(1)), &a, &s).is_ok());
            assert!(may_send(false, true, Ebgp, Some(SessionId(1)), &a, &s).is_ok());
            assert_eq!(
                may_send(false, true, IbgpFromNonClient, Some(SessionId(1)), &a, &s).is_ok(),
                to_client
            );
        }
        // A speaker that reflects nothing applies plain iBGP split horizon.
        assert_eq!(
            may_send(
                false,
                false,
                IbgpFromNonClient,
                Some(SessionId(1)),
                &a,
                &session(false, false)
            ),
            Err(NotSent::IbgpSplitHorizon)
        );
        assert_eq!(
            may_send(
                false,
                true,
                IbgpFromClient,
                Some(SessionId(9)),
                &a,
                &session(false, true)
            ),
            Err(NotSent::BackToSender)
        );
    }

    #[test]
    fn cluster_list_loop_is_refused_on_export_to_clients_only() {
        // REFERENCE §4.2 (BIRD `bgp_import_control`): a route reflected to this reflector by
        // its same-cluster partner carries the shared cluster ID 10.6.0.1 in CLUSTER_LIST. It
        // must not go to a client session (cluster ID 10.6.0.1); it is not sent to another
        // non-client either, but by the reflection rule, not the loop check.
        let mut a = PathAttributes::local(ip("10.6.0.10"));
        a.originator_id = Some(ip("10.6.0.10"));
        a.cluster_list = vec![ip("10.6.0.1")];
        let from_partner = RouteClass::IbgpFromNonClient;
        assert_eq!(
            may_send(
                false,
                true,
                from_partner,
                Some(SessionId(1)),
                &a,
                &session(false, true)
            ),
            Err(NotSent::ClusterListLoop(ip("10.6.0.1")))
        );
        assert_eq!(
            may_send(
                false,
                true,
                from_partner,
                Some(SessionId(1)),
                &a,
                &session(false, false)
            ),
            Err(NotSent::NonClientToNonClient)
        );
        // From a client, with another cluster's ID in the list: sent to clients and
        // non-clients alike.
        a.cluster_list = vec![ip("10.7.0.1")];
        for client in [true, false] {
            let s = session(false, client);
            assert!(may_send(false, true, RouteClass::IbgpFromClient, None, &a, &s).is_ok());
        }
    }

    #[test]
    fn calico_v3_32_sets_its_ibgp_local_pref_on_nodes_only() {
        // REFERENCE §4.4: from v3.32 Calico's export filter gives every route a node sends
        // over iBGP local-pref 2147482623; eBGP never carries LOCAL_PREF (RFC 4271 §5.1.5)
        // and a router (operator-configured FRR) does not run Calico's filter.
        let mut node = Speaker {
            id: SpeakerId(0),
            device: DeviceId(0),
            name: "n".into(),
            node: Some(crate::model::topology::NodeId(0)),
            rack: None,
            as_number: 64512,
            router_id: ip("10.6.0.10"),
            address: ip("10.6.0.10"),
            cluster_id: None,
            up: true,
            hold_time: None,
        };
        let a = PathAttributes::local(ip("10.6.0.10"));
        let ibgp = ExportKey {
            ebgp: false,
            next_hop_self: true,
            reflect: false,
        };
        let pref = Some(crate::bgp::config::CALICO_IBGP_LOCAL_PREF);
        assert_eq!(
            export_attrs(&a, ibgp, &node, node.router_id, pref).local_pref,
            2147482623
        );
        assert_eq!(
            export_attrs(&a, ibgp, &node, node.router_id, None).local_pref,
            100
        );
        let ebgp = ExportKey { ebgp: true, ..ibgp };
        assert_eq!(
            export_attrs(&a, ebgp, &node, node.router_id, pref).local_pref,
            100
        );
        node.node = None;
        assert_eq!(
            export_attrs(&a, ibgp, &node, node.router_id, pref).local_pref,
            100
        );
    }

    #[test]
    fn next_hop_self_except_third_party_on_routers_and_keep_on_ibgp_nodes() {
        let inside = PathAttributes::local(ip("10.6.0.10"));
        let outside = PathAttributes::local(ip("10.7.0.10"));
        let c = RouteClass::Ebgp;
        let s = session(true, false);
        assert!(
            !may_send(true, true, c, None, &inside, &s)
                .unwrap()
                .next_hop_self
        );
        assert!(
            may_send(true, true, c, None, &outside, &s)
                .unwrap()
                .next_hop_self
        );
        // A node keeps the next hop on iBGP, sets itself on eBGP unless told to keep it.
        assert!(
            !may_send(false, true, c, None, &outside, &session(false, false))
                .unwrap()
                .next_hop_self
        );
        assert!(
            may_send(false, true, c, None, &outside, &s)
                .unwrap()
                .next_hop_self
        );
        let keep = ExportSession {
            keep_next_hop: true,
            ..s
        };
        assert!(
            !may_send(false, true, c, None, &outside, &keep)
                .unwrap()
                .next_hop_self
        );
    }

    #[test]
    fn ebgp_export_prepends_and_refuses_loops() {
        let mut a = PathAttributes::local(ip("10.7.0.10"));
        a.as_path = vec![65002, 65100];
        assert_eq!(
            may_send(
                true,
                true,
                RouteClass::Ebgp,
                None,
                &a,
                &session(true, false)
            ),
            Err(NotSent::AsPathLoop(65002))
        );
        let me = Speaker {
            id: SpeakerId(0),
            device: DeviceId(0),
            name: "tor".into(),
            node: None,
            rack: None,
            as_number: 65101,
            router_id: ip("10.6.0.1"),
            address: ip("10.6.0.1"),
            cluster_id: Some(ip("10.6.0.1")),
            up: true,
            hold_time: None,
        };
        a.as_path = vec![65100];
        a.originator_id = Some(ip("10.7.0.10"));
        let key = ExportKey {
            ebgp: true,
            next_hop_self: true,
            reflect: false,
        };
        let out = export_attrs(&a, key, &me, ip("10.9.9.9"), None);
        assert_eq!(out.as_path, [65101, 65100]);
        assert_eq!(out.next_hop, ip("10.6.0.1"));
        assert_eq!(out.originator_id, None);
        // Reflection sets the originator once and prepends the cluster ID.
        let key = ExportKey {
            ebgp: false,
            next_hop_self: false,
            reflect: true,
        };
        let plain = PathAttributes::local(ip("10.6.0.10"));
        let out = export_attrs(&plain, key, &me, ip("10.6.0.10"), None);
        assert_eq!(out.originator_id, Some(ip("10.6.0.10")));
        assert_eq!(out.cluster_list, [ip("10.6.0.1")]);
        // And the receiver-side loop checks catch what comes back from a client; from a
        // non-client (a same-cluster partner reflector) it is kept (BIRD: REFERENCE §4.2).
        assert_eq!(
            import_check(&out, false, true, &me),
            Err(ImportRejected::ClusterListLoop(ip("10.6.0.1")))
        );
        assert_eq!(import_check(&out, false, false, &me), Ok(()));
        let mut looped = plain.clone();
        looped.as_path = vec![65001, 65101];
        assert_eq!(
            import_check(&looped, true, false, &me),
            Err(ImportRejected::AsPathLoop(65101))
        );
    }
}
