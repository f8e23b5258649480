use super::*;

fn spec(api_version: &str, kind: &str, path: &str) -> FieldCheck {
    let schema =
        kind_schema(api_version, kind).unwrap_or_else(|| panic!("no schema {api_version} {kind}"));
    let segs: Vec<&str> = path.split('.').map(|s| s.trim_end_matches("[]")).collect();
    schema.check(&segs)
}

#[test]
fn brief_examples() {
    for g in [CALICO_V3, CALICO_CRD_V1] {
        assert_eq!(spec(g, "IPPool", "spec.blockSize"), FieldCheck::Modelled);
        assert_eq!(spec(g, "IPPool", "spec.ipipMode"), FieldCheck::Modelled);
        assert_eq!(spec(g, "IPPool", "spec.vxlanMode"), FieldCheck::Modelled);
        assert_eq!(
            spec(g, "IPPool", "spec.blokSize"),
            FieldCheck::Unknown {
                depth: 1,
                nearest: Some("blockSize")
            }
        );
        assert_eq!(
            spec(g, "IPPool", "spec.natoutgoing"),
            FieldCheck::Unknown {
                depth: 1,
                nearest: Some("natOutgoing")
            }
        );
        assert!(matches!(
            spec(g, "IPPool", "spec.ipip.mode"),
            FieldCheck::Removed { depth: 1, .. }
        ));
        assert!(matches!(
            spec(g, "IPPool", "spec.nat-outgoing"),
            FieldCheck::Removed { depth: 1, .. }
        ));
        assert_eq!(
            spec(g, "BGPConfiguration", "spec.listenPort"),
            FieldCheck::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(g, "BGPConfiguration", "spec.communities[].value"),
            FieldCheck::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(g, "BGPConfiguration", "spec.prefixAdvertisements[].cidr"),
            FieldCheck::Unmodelled { depth: 1 }
        );
        assert_eq!(
            spec(g, "BGPConfiguration", "spec.serviceClusterIPs[].cidr"),
            FieldCheck::Modelled
        );
        assert_eq!(
            spec(g, "BGPConfiguration", "spec.communities[].valeu"),
            FieldCheck::Unknown {
                depth: 2,
                nearest: Some("value")
            }
        );
        assert_eq!(
            spec(g, "BGPPeer", "spec.keepOriginalNextHop"),
            FieldCheck::Modelled
        );
        assert_eq!(
            spec(g, "BGPPeer", "spec.password.secretKeyRef.key"),
            FieldCheck::Unmodelled { depth: 1 }
        );
    }
    assert_eq!(
        spec(CALICO_V3, "IPAMConfiguration", "spec.ipCooldownSeconds"),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(CALICO_CRD_V1, "IPAMConfig", "spec.strictAffinity"),
        FieldCheck::Modelled
    );
    assert!(kind_schema(CALICO_CRD_V1, "IPAMConfiguration").is_none());
    assert!(kind_schema(CALICO_V3, "IPAMConfig").is_none());
    assert!(kind_schema(CALICO_CRD_V1, "Node").is_none());

    assert_eq!(
        spec(CALICO_V3, "Node", "spec.bgp.ipv4Address"),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(CALICO_V3, "Node", "spec.bgp.ipv6Address"),
        FieldCheck::Unmodelled { depth: 2 }
    );
    assert_eq!(
        spec(CALICO_V3, "Node", "spec.orchRefs[].orchestrator"),
        FieldCheck::Unmodelled { depth: 1 }
    );
    assert_eq!(
        spec(CALICO_V3, "Node", "spec.bgp.routeReflectorClusterId"),
        FieldCheck::Unknown {
            depth: 2,
            nearest: Some("routeReflectorClusterID")
        }
    );
    // A mapping under a scalar.
    assert_eq!(
        spec(CALICO_V3, "Node", "spec.bgp.asNumber.x"),
        FieldCheck::NotAnObject { depth: 2 }
    );

    let sp = SPIDERPOOL_V2BETA1;
    assert_eq!(
        spec(sp, "SpiderIPPool", "spec.routes[].gw"),
        FieldCheck::Unmodelled { depth: 1 }
    );
    assert_eq!(
        spec(sp, "SpiderIPPool", "spec.nodeAffinity.matchLabels.rack"),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(
            sp,
            "SpiderIPPool",
            "spec.podAffinity.matchExpressions[].operator"
        ),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(sp, "SpiderIPPool", "spec.nodeAfinity"),
        FieldCheck::Unknown {
            depth: 1,
            nearest: Some("nodeAffinity")
        }
    );
    assert!(matches!(
        spec(sp, "SpiderIPPool", "spec.vlan"),
        FieldCheck::Removed { depth: 1, .. }
    ));
    assert_eq!(
        spec(sp, "SpiderReservedIP", "spec.ips"),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(sp, "SpiderReservedIP", "spec.ipVersion"),
        FieldCheck::Unmodelled { depth: 1 }
    );

    // Top level and metadata.
    assert_eq!(
        spec(CALICO_V3, "IPPool", "metadata.labels.anything"),
        FieldCheck::Modelled
    );
    assert_eq!(
        spec(
            CALICO_V3,
            "IPPool",
            "metadata.managedFields[].fieldsV1.f:spec"
        ),
        FieldCheck::Unmodelled { depth: 1 }
    );
    assert_eq!(
        spec(CALICO_V3, "IPPool", "status.conditions"),
        FieldCheck::Unmodelled { depth: 0 }
    );
    assert_eq!(
        spec(CALICO_V3, "IPPool", "metadata.nmae"),
        FieldCheck::Unknown {
            depth: 1,
            nearest: Some("name")
        }
    );
    assert_eq!(
        spec(CALICO_V3, "IPPool", "spce"),
        FieldCheck::Unknown {
            depth: 0,
            nearest: Some("spec")
        }
    );
    assert_eq!(
        spec(CALICO_V3, "IPPool", "metadata.labels.a.b"),
        FieldCheck::NotAnObject { depth: 2 }
    );
}

#[test]
fn modelled_fields_match_spec_2_3() {
    let modelled = |api: &str, kind: &str| -> Vec<&str> {
        kind_schema(api, kind)
            .unwrap()
            .spec
            .iter()
            .filter(|f| f.modelled())
            .map(|f| f.name)
            .collect()
    };
    let ippool = [
        "cidr",
        "blockSize",
        "ipipMode",
        "vxlanMode",
        "natOutgoing",
        "disabled",
        "disableBGPExport",
        "nodeSelector",
        "namespaceSelector",
        "allowedUses",
        "assignmentMode",
    ];
    let ipam = [
        "strictAffinity",
        "autoAllocateBlocks",
        "maxBlocksPerHost",
        "ipCooldownSeconds",
    ];
    // The graceful-restart times (issue #21) are modelled beyond SPEC §2.3's table.
    let bgpconf = [
        "asNumber",
        "nodeToNodeMeshEnabled",
        "nodeMeshMaxRestartTime",
        "serviceClusterIPs",
        "serviceExternalIPs",
        "serviceLoadBalancerIPs",
    ];
    let peer = [
        "node",
        "nodeSelector",
        "peerIP",
        "peerSelector",
        "asNumber",
        "keepOriginalNextHop",
        "maxRestartTime",
    ];
    for g in [CALICO_V3, CALICO_CRD_V1] {
        assert_eq!(modelled(g, "IPPool"), ippool);
        assert_eq!(modelled(g, "IPReservation"), ["reservedCIDRs"]);
        assert_eq!(modelled(g, "BGPConfiguration"), bgpconf);
        assert_eq!(modelled(g, "BGPPeer"), peer);
    }
    assert_eq!(modelled(CALICO_V3, "IPAMConfiguration"), ipam);
    assert_eq!(modelled(CALICO_CRD_V1, "IPAMConfig"), ipam);
    assert_eq!(modelled(CALICO_V3, "Node"), ["bgp"]);
    let bgp = find_field(NODE_SPEC, "bgp").unwrap().children().unwrap();
    let node_bgp: Vec<_> = bgp
        .iter()
        .filter(|f| f.modelled())
        .map(|f| f.name)
        .collect();
    assert_eq!(
        node_bgp,
        ["ipv4Address", "asNumber", "routeReflectorClusterID"]
    );
    assert_eq!(
        modelled(SPIDERPOOL_V2BETA1, "SpiderIPPool"),
        [
            "subnet",
            "ips",
            "excludeIPs",
            "gateway",
            "nodeName",
            "nodeAffinity",
            "namespaceName",
            "namespaceAffinity",
            "podAffinity",
            "default",
            "disable",
        ]
    );
    assert_eq!(modelled(SPIDERPOOL_V2BETA1, "SpiderReservedIP"), ["ips"]);
    // Kinds with a table but not modelled, and modelled kinds.
    for s in SCHEMAS {
        let expect = !matches!(s.kind, "BGPFilter" | "SpiderSubnet");
        assert_eq!(s.modelled, expect, "{} {}", s.api_version, s.kind);
        assert!(
            known_kinds(s.api_version).contains(&s.kind),
            "{} {}",
            s.api_version,
            s.kind
        );
        // Children of an unmodelled field are unmodelled too.
        fn no_modelled_below_unmodelled(fields: &'static [Field], parent_unmodelled: bool) {
            for f in fields {
                assert!(!(parent_unmodelled && f.modelled()), "{}", f.name);
                if let Some(c) = f.children() {
                    no_modelled_below_unmodelled(c, parent_unmodelled || !f.modelled());
                }
            }
        }
        no_modelled_below_unmodelled(s.spec, !s.modelled);
    }
}

#[test]
fn known_kinds_per_group() {
    assert!(known_kinds(CALICO_V3).contains(&"Node"));
    assert!(known_kinds(CALICO_V3).contains(&"IPAMConfiguration"));
    assert!(!known_kinds(CALICO_V3).contains(&"IPAMConfig"));
    assert!(known_kinds(CALICO_CRD_V1).contains(&"IPAMConfig"));
    assert!(!known_kinds(CALICO_CRD_V1).contains(&"IPAMConfiguration"));
    assert!(!known_kinds(CALICO_CRD_V1).contains(&"Node"));
    assert!(known_kinds(SPIDERPOOL_V2BETA1).contains(&"SpiderSubnet"));
    assert!(!known_kinds(SPIDERPOOL_V2BETA1).contains(&"SpiderClaimParameter"));
    assert!(known_kinds(CORE_V1).contains(&"ConfigMap"));
    assert!(known_kinds(APPS_V1).contains(&"Deployment"));
    assert!(known_kinds("batch/v1").is_empty());
    assert_eq!(
        nearest(known_kinds(CALICO_V3).iter().copied(), "BGPPeers"),
        Some("BGPPeer")
    );
    assert_eq!(
        nearest(known_kinds(CALICO_V3).iter().copied(), "IpPool"),
        Some("IPPool")
    );
    let hint = |g, k| unknown_kind_hint(g, k).unwrap_or_default();
    assert_eq!(
        hint(CALICO_CRD_V1, "IPAMConfiguration"),
        "`crd.projectcalico.org/v1` calls this kind `IPAMConfig`"
    );
    assert_eq!(
        hint(CALICO_V3, "IPAMConfig"),
        "`projectcalico.org/v3` calls this kind `IPAMConfiguration`"
    );
    assert_eq!(
        hint(CALICO_CRD_V1, "Node"),
        "`Node` is served by `projectcalico.org/v3`, not by `crd.projectcalico.org/v1`"
    );
    assert_eq!(hint(CALICO_V3, "BGPPeers"), "did you mean `BGPPeer`?");
    assert_eq!(hint(APPS_V1, "Deploymnet"), "did you mean `Deployment`?");
    assert_eq!(hint(CORE_V1, "ConfigMaps"), "did you mean `ConfigMap`?");
    assert_eq!(
        hint(CORE_V1, "StatefulSet"),
        "`StatefulSet` is served by `apps/v1`, not by `v1`"
    );
    assert!(hint(SPIDERPOOL_V2BETA1, "SpiderClaimParameter").contains("removed"));
    assert_eq!(unknown_kind_hint(SPIDERPOOL_V2BETA1, "Frobnicator"), None);
    assert_eq!(
        nearest(API_VERSIONS.iter().copied(), "projectcalico.org/v1"),
        Some(CALICO_V3)
    );
    for g in API_VERSIONS {
        let kinds = known_kinds(g);
        assert!(
            kinds.windows(2).all(|w| w[0] < w[1]),
            "{g}: sorted, no duplicates"
        );
    }
    assert!(
        REMOVED_KINDS
            .iter()
            .all(|(g, k, _)| !known_kinds(g).contains(k))
    );
}

#[test]
fn nearest_is_conservative() {
    let names = ["gw", "dst"];
    assert_eq!(nearest(names, "gateway"), None);
    assert_eq!(nearest(names, "GW"), Some("gw"));
    assert_eq!(
        nearest(["peerIP", "peerSelector"], "peerIp"),
        Some("peerIP")
    );
    assert_eq!(nearest(["asNumber"], "asn"), None);
    // A dashed name with a part left out finds the name that has them all.
    let devices = [
        "c1-w-1",
        "tor-rack-a1",
        "tor-rack-c1",
        "spine-zone-a-1",
        "core",
    ];
    assert_eq!(nearest(devices, "tor-c1"), Some("tor-rack-c1"));
    assert_eq!(nearest(devices, "spine-a-1"), Some("spine-zone-a-1"));
    assert_eq!(nearest(devices, "tor-d1"), None);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
}

// Flattened `spec` field lists of the CRDs at the commits in the module doc
// (space separated, sorted). The projectcalico.org/v3 and crd.projectcalico.org/v1
// CRDs have identical spec trees at that commit; Node has no CRD and its list is
// taken from the Go type (libcalico-go/lib/apis/internalapi/node.go).
const CRD_IPPOOL: &str = "allowedUses assignmentMode blockSize cidr disableBGPExport disabled ipipMode namespaceSelector natOutgoing nodeSelector vxlanMode";
const CRD_IPAMCONFIG: &str = "autoAllocateBlocks ipCooldownSeconds kubeVirtVMAddressPersistence maxBlocksPerHost strictAffinity";
const CRD_IPRESERVATION: &str = "reservedCIDRs";
const CRD_BGPCONFIGURATION: &str = "asNumber bindMode communities communities[].name communities[].value ignoredInterfaces ipv4NormalRoutePriority ipv6NormalRoutePriority listenPort localWorkloadPeeringIPV4 localWorkloadPeeringIPV6 logSeverityScreen nodeMeshMaxRestartTime nodeMeshPassword nodeMeshPassword.secretKeyRef nodeMeshPassword.secretKeyRef.key nodeMeshPassword.secretKeyRef.name nodeMeshPassword.secretKeyRef.optional nodeToNodeMeshEnabled prefixAdvertisements prefixAdvertisements[].cidr prefixAdvertisements[].communities programClusterRoutes serviceClusterIPs serviceClusterIPs[].cidr serviceExternalIPs serviceExternalIPs[].cidr serviceLoadBalancerAggregation serviceLoadBalancerIPs serviceLoadBalancerIPs[].cidr";
const CRD_BGPPEER: &str = "asNumber filters keepOriginalNextHop keepaliveTime localASNumber localWorkloadSelector maxRestartTime nextHopMode node nodeSelector numAllowedLocalASNumbers password password.secretKeyRef password.secretKeyRef.key password.secretKeyRef.name password.secretKeyRef.optional peerIP peerSelector reachableBy reversePeering sourceAddress ttlSecurity";
const CRD_BGPFILTER_RULE: &str = "action asPathPrefix cidr communities communities.values interface matchOperator operations operations[].addCommunity operations[].addCommunity.value operations[].prependASPath operations[].prependASPath.prefix operations[].setPriority operations[].setPriority.value peerType prefixLength prefixLength.max prefixLength.min priority source";
const GO_NODE: &str = "addresses addresses[].address addresses[].type bgp bgp.asNumber bgp.ipv4Address bgp.ipv4IPIPTunnelAddr bgp.ipv6Address bgp.routeReflectorClusterID interfaces interfaces[].addresses interfaces[].name ipv4VXLANTunnelAddr ipv6VXLANTunnelAddr orchRefs orchRefs[].nodeName orchRefs[].orchestrator vxlanTunnelMACAddr vxlanTunnelMACAddrV6 wireguard wireguard.interfaceIPv4Address wireguard.interfaceIPv6Address";
const CRD_SPIDERIPPOOL: &str = "default disable excludeIPs gateway ipVersion ips multusName namespaceAffinity namespaceAffinity.matchExpressions namespaceAffinity.matchExpressions[].key namespaceAffinity.matchExpressions[].operator namespaceAffinity.matchExpressions[].values namespaceAffinity.matchLabels namespaceName nodeAffinity nodeAffinity.matchExpressions nodeAffinity.matchExpressions[].key nodeAffinity.matchExpressions[].operator nodeAffinity.matchExpressions[].values nodeAffinity.matchLabels nodeName podAffinity podAffinity.matchExpressions podAffinity.matchExpressions[].key podAffinity.matchExpressions[].operator podAffinity.matchExpressions[].values podAffinity.matchLabels routes routes[].dst routes[].gw subnet";
const CRD_SPIDERRESERVEDIP: &str = "ipVersion ips";
const CRD_SPIDERSUBNET: &str =
    "excludeIPs gateway ipVersion ips routes routes[].dst routes[].gw subnet";

#[test]
fn tables_match_the_crds() {
    let mut bgpfilter = Vec::new();
    for list in ["exportV4", "exportV6", "importV4", "importV6"] {
        bgpfilter.push(list.to_string());
        bgpfilter.extend(
            CRD_BGPFILTER_RULE
                .split(' ')
                .map(|p| format!("{list}[].{p}")),
        );
    }
    let bgpfilter = bgpfilter.join(" ");
    let mut expected: Vec<(&str, &str, &str)> = Vec::new();
    for g in [CALICO_V3, CALICO_CRD_V1] {
        expected.push((g, "IPPool", CRD_IPPOOL));
        expected.push((g, "IPReservation", CRD_IPRESERVATION));
        expected.push((g, "BGPConfiguration", CRD_BGPCONFIGURATION));
        expected.push((g, "BGPPeer", CRD_BGPPEER));
        expected.push((g, "BGPFilter", &bgpfilter));
    }
    expected.push((CALICO_V3, "IPAMConfiguration", CRD_IPAMCONFIG));
    expected.push((CALICO_CRD_V1, "IPAMConfig", CRD_IPAMCONFIG));
    expected.push((CALICO_V3, "Node", GO_NODE));
    expected.push((SPIDERPOOL_V2BETA1, "SpiderIPPool", CRD_SPIDERIPPOOL));
    expected.push((SPIDERPOOL_V2BETA1, "SpiderReservedIP", CRD_SPIDERRESERVEDIP));
    expected.push((SPIDERPOOL_V2BETA1, "SpiderSubnet", CRD_SPIDERSUBNET));
    assert_eq!(expected.len(), SCHEMAS.len());
    for (g, k, crd) in expected {
        let mut ours = field_paths(kind_schema(g, k).unwrap().spec);
        ours.sort();
        let mut theirs: Vec<String> = crd.split(' ').map(str::to_string).collect();
        theirs.sort();
        assert_eq!(ours, theirs, "{g} {k}");
    }
}

/// Every field path of every Calico/Spiderpool object in
/// shared/real-manifests/ (List items included; label and annotation keys
/// left out), listed by reading the files: `apiVersion kind path`.
const REAL_MANIFEST_PATHS: &str = "
crd.projectcalico.org/v1 IPAMConfig metadata.name
crd.projectcalico.org/v1 IPAMConfig spec.autoAllocateBlocks
crd.projectcalico.org/v1 IPAMConfig spec.strictAffinity
crd.projectcalico.org/v1 IPPool metadata.name
crd.projectcalico.org/v1 IPPool spec.blockSize
crd.projectcalico.org/v1 IPPool spec.cidr
crd.projectcalico.org/v1 IPPool spec.disabled
crd.projectcalico.org/v1 IPPool spec.ipipMode
crd.projectcalico.org/v1 IPPool spec.natOutgoing
crd.projectcalico.org/v1 IPPool spec.nodeSelector
crd.projectcalico.org/v1 IPPool spec.vxlanMode
projectcalico.org/v3 BGPConfiguration metadata.name
projectcalico.org/v3 BGPConfiguration spec.asNumber
projectcalico.org/v3 BGPConfiguration spec.bindMode
projectcalico.org/v3 BGPConfiguration spec.communities
projectcalico.org/v3 BGPConfiguration spec.communities[].name
projectcalico.org/v3 BGPConfiguration spec.communities[].value
projectcalico.org/v3 BGPConfiguration spec.listenPort
projectcalico.org/v3 BGPConfiguration spec.logSeverityScreen
projectcalico.org/v3 BGPConfiguration spec.nodeMeshMaxRestartTime
projectcalico.org/v3 BGPConfiguration spec.nodeToNodeMeshEnabled
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements[].cidr
projectcalico.org/v3 BGPConfiguration spec.prefixAdvertisements[].communities
projectcalico.org/v3 BGPConfiguration spec.serviceClusterIPs
projectcalico.org/v3 BGPConfiguration spec.serviceClusterIPs[].cidr
projectcalico.org/v3 BGPConfiguration spec.serviceExternalIPs
projectcalico.org/v3 BGPConfiguration spec.serviceExternalIPs[].cidr
projectcalico.org/v3 BGPConfiguration spec.serviceLoadBalancerIPs
projectcalico.org/v3 BGPConfiguration spec.serviceLoadBalancerIPs[].cidr
projectcalico.org/v3 BGPFilter metadata.name
projectcalico.org/v3 BGPFilter spec.exportV4
projectcalico.org/v3 BGPFilter spec.exportV4[].action
projectcalico.org/v3 BGPFilter spec.exportV4[].cidr
projectcalico.org/v3 BGPFilter spec.exportV4[].interface
projectcalico.org/v3 BGPFilter spec.exportV4[].matchOperator
projectcalico.org/v3 BGPFilter spec.exportV4[].source
projectcalico.org/v3 BGPFilter spec.exportV6
projectcalico.org/v3 BGPFilter spec.exportV6[].action
projectcalico.org/v3 BGPFilter spec.exportV6[].cidr
projectcalico.org/v3 BGPFilter spec.exportV6[].interface
projectcalico.org/v3 BGPFilter spec.exportV6[].matchOperator
projectcalico.org/v3 BGPFilter spec.exportV6[].source
projectcalico.org/v3 BGPPeer metadata.creationTimestamp
projectcalico.org/v3 BGPPeer metadata.managedFields
projectcalico.org/v3 BGPPeer metadata.managedFields[].apiVersion
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsType
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:asNumber
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:nodeSelector
projectcalico.org/v3 BGPPeer metadata.managedFields[].fieldsV1.f:spec.f:peerIP
projectcalico.org/v3 BGPPeer metadata.managedFields[].manager
projectcalico.org/v3 BGPPeer metadata.managedFields[].operation
projectcalico.org/v3 BGPPeer metadata.managedFields[].time
projectcalico.org/v3 BGPPeer metadata.name
projectcalico.org/v3 BGPPeer metadata.resourceVersion
projectcalico.org/v3 BGPPeer metadata.uid
projectcalico.org/v3 BGPPeer spec.asNumber
projectcalico.org/v3 BGPPeer spec.filters
projectcalico.org/v3 BGPPeer spec.keepOriginalNextHop
projectcalico.org/v3 BGPPeer spec.node
projectcalico.org/v3 BGPPeer spec.nodeSelector
projectcalico.org/v3 BGPPeer spec.peerIP
projectcalico.org/v3 BGPPeer spec.peerSelector
projectcalico.org/v3 BGPPeer spec.sourceAddress
projectcalico.org/v3 IPAMConfiguration metadata.name
projectcalico.org/v3 IPAMConfiguration spec.kubeVirtVMAddressPersistence
projectcalico.org/v3 IPAMConfiguration spec.maxBlocksPerHost
projectcalico.org/v3 IPAMConfiguration spec.strictAffinity
projectcalico.org/v3 IPPool metadata.creationTimestamp
projectcalico.org/v3 IPPool metadata.name
projectcalico.org/v3 IPPool metadata.resourceVersion
projectcalico.org/v3 IPPool metadata.uid
projectcalico.org/v3 IPPool spec.allowedUses
projectcalico.org/v3 IPPool spec.assignmentMode
projectcalico.org/v3 IPPool spec.blockSize
projectcalico.org/v3 IPPool spec.cidr
projectcalico.org/v3 IPPool spec.disableBGPExport
projectcalico.org/v3 IPPool spec.disabled
projectcalico.org/v3 IPPool spec.ipipMode
projectcalico.org/v3 IPPool spec.natOutgoing
projectcalico.org/v3 IPPool spec.nodeSelector
projectcalico.org/v3 IPPool spec.vxlanMode
projectcalico.org/v3 IPReservation metadata.name
projectcalico.org/v3 IPReservation spec.reservedCIDRs
projectcalico.org/v3 Node metadata.labels
projectcalico.org/v3 Node metadata.name
projectcalico.org/v3 Node spec.bgp
projectcalico.org/v3 Node spec.bgp.asNumber
projectcalico.org/v3 Node spec.bgp.ipv4Address
projectcalico.org/v3 Node spec.bgp.ipv4IPIPTunnelAddr
projectcalico.org/v3 Node spec.bgp.ipv6Address
projectcalico.org/v3 Node spec.bgp.routeReflectorClusterID
spiderpool.spidernet.io/v2beta1 SpiderIPPool metadata.labels
spiderpool.spidernet.io/v2beta1 SpiderIPPool metadata.name
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.default
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.disable
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.excludeIPs
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.gateway
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.ipVersion
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.ips
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.multusName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceAffinity.matchLabels
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.namespaceName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].key
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].operator
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeAffinity.matchExpressions[].values
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.nodeName
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.podAffinity
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.podAffinity.matchLabels
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes[].dst
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.routes[].gw
spiderpool.spidernet.io/v2beta1 SpiderIPPool spec.subnet
spiderpool.spidernet.io/v2beta1 SpiderReservedIP metadata.name
spiderpool.spidernet.io/v2beta1 SpiderReservedIP spec.ips
spiderpool.spidernet.io/v2beta1 SpiderSubnet metadata.name
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.gateway
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.ips
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes[].dst
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.routes[].gw
spiderpool.spidernet.io/v2beta1 SpiderSubnet spec.subnet
";

#[test]
fn every_field_of_the_real_manifests_is_known() {
    let mut n = 0;
    for line in REAL_MANIFEST_PATHS.lines().filter(|l| !l.trim().is_empty()) {
        let mut it = line.split(' ');
        let (g, k, p) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
        assert!(known_kinds(g).contains(&k), "{line}");
        let v = spec(g, k, p);
        assert!(!v.is_error(), "{line}: {v:?}");
        n += 1;
    }
    assert!(n > 100);
}
