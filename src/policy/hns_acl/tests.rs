//! Hand-derived ACL lists (calico:felix/dataplane/windows/policysets/policysets.go,
//! flattener.go, endpoint_mgr.go; REFERENCE-policy §4). The cluster: namespace `shop` with
//! `web` 10.0.0.10 (the Windows pod), `client` 10.0.0.20, `db` 10.0.0.30 and `db-v6`
//! fd00::30 (an IPv6 pod, which Windows rules never name); the node's address 10.30.1.10.

use super::*;
use crate::model::Labels;
use crate::model::network::CalicoProfile;
use crate::model::selector::Selector;
use crate::policy::model::{
    IcmpMatch, Policy, PolicyKind, PolicyResource, PolicySet, PolicyTypes, Tier,
};

const HOST: Ipv4Addr = Ipv4Addr::new(10, 30, 1, 10);

fn endpoint(name: &str, ip: &str, app: &str) -> Endpoint {
    let labels: Labels = [("app".to_string(), app.to_string())].into_iter().collect();
    Endpoint {
        windows: name == "web",
        ..Endpoint::pod("shop", name, ip.parse().unwrap(), &labels)
    }
}

fn endpoints() -> Vec<Endpoint> {
    vec![
        endpoint("web", "10.0.0.10", "web"),
        endpoint("client", "10.0.0.20", "client"),
        endpoint("db", "10.0.0.30", "db"),
        endpoint("db-v6", "fd00::30", "db"),
    ]
}

fn cnp(name: &str, tier: &str, selector: &str, types: PolicyTypes) -> Policy {
    Policy {
        tier: tier.to_string(),
        order: Some(100.0),
        selector: Selector::parse(selector).unwrap(),
        types,
        ..Policy::new(PolicyKind::CalicoNetworkPolicy, Some("shop"), name)
    }
}

fn rule(action: Action, protocol: Option<Protocol>) -> Rule {
    Rule {
        protocol,
        ..Rule::any(action)
    }
}

fn ports(list: &[(u16, u16)]) -> Vec<PortMatch> {
    list.iter()
        .map(|&(first, last)| PortMatch::Range { first, last })
        .collect()
}

fn set_of(tiers: &[Tier], policies: Vec<Policy>) -> PolicySet {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    set.apply(&PolicyResource::Namespace {
        name: "shop".to_string(),
        labels: Labels::new(),
    });
    for t in tiers {
        set.apply(&PolicyResource::Tier(t.clone()));
    }
    for p in policies {
        set.apply(&PolicyResource::Policy(Box::new(p)));
    }
    set
}

/// `web`'s lists under `set`.
fn acls_of_web(set: &PolicySet) -> EndpointAcls {
    let eps = endpoints();
    let mut engine = Engine::new(set);
    engine.know_endpoints(&eps);
    let peers = Peers::resolve(&engine, &eps);
    endpoint_acls(&engine, &peers, &eps[0], Some(HOST))
}

/// An entry from its HNS fields, in the order `Get-HnsEndpoint` shows them.
#[allow(clippy::too_many_arguments)]
fn acl(
    id: &str,
    action: AclAction,
    direction: AclDirection,
    protocol: u16,
    local: &str,
    remote: &str,
    local_ports: &str,
    remote_ports: &str,
    priority: u16,
    origin: &str,
) -> AclEntry {
    AclEntry {
        id: id.to_string(),
        action,
        direction,
        protocol,
        local_addresses: local.to_string(),
        remote_addresses: remote.to_string(),
        local_ports: local_ports.to_string(),
        remote_ports: remote_ports.to_string(),
        priority,
        rule_type: RuleType::Switch,
        origin: origin.to_string(),
    }
}

fn host_rule(direction: AclDirection) -> AclEntry {
    AclEntry {
        rule_type: RuleType::Host,
        ..acl(
            "",
            AclAction::Allow,
            direction,
            256,
            "",
            "",
            "",
            "",
            0,
            "host",
        )
    }
}

fn host_to_endpoint() -> AclEntry {
    acl(
        "allow-host-to-endpoint",
        AclAction::Allow,
        AclDirection::In,
        256,
        "",
        "10.30.1.10/32",
        "",
        "",
        900,
        "host-to-endpoint",
    )
}

use AclAction::{Allow, Block};
use AclDirection::{In, Out};

/// One default-tier policy `shop/web` selecting `web`, both directions:
///   ingress 0: Allow TCP from app == 'client' to ports 80, 8080-8081
///   ingress 1: Deny UDP
///   ingress 2: Allow ICMP type 8             (skipped: ICMP type)
///   ingress 3: Allow from nets 192.168.0.0/16
///   egress 0:  Allow TCP to app == 'db' port 5432
/// In: the host-to-endpoint Allow (900); rule 0 → Allow 6, Remote = client's /32, LocalPorts
/// = destination ports (1000); rule 1 → Block 17 (1001); rule 2 left out; rule 3 → Allow
/// 256 Remote 192.168.0.0/16 (1002); the default tier's end-of-tier Block (1003); no profile
/// (the default tier applies); the host rule. Out: rule 0 → Allow 6, Remote = db's IPv4 /32
/// only (db-v6 is IPv6), RemotePorts 5432 (1000); end-of-tier Block (1001); the host rule.
#[test]
fn one_default_tier_policy_becomes_one_entry_per_programmable_rule() {
    let mut p = cnp(
        "web",
        DEFAULT_TIER,
        "app == 'web'",
        PolicyTypes {
            ingress: true,
            egress: true,
        },
    );
    let mut from_client = rule(Action::Allow, Some(Protocol::TCP));
    from_client.source.selector = Some(Selector::parse("app == 'client'").unwrap());
    from_client.destination.ports = ports(&[(80, 80), (8080, 8081)]);
    let mut ping = rule(Action::Allow, Some(Protocol::ICMP));
    ping.icmp = Some(IcmpMatch {
        icmp_type: 8,
        code: None,
    });
    let mut lan = rule(Action::Allow, None);
    lan.source.nets = vec!["192.168.0.0/16".parse().unwrap()];
    p.ingress = vec![
        from_client,
        rule(Action::Deny, Some(Protocol::UDP)),
        ping,
        lan,
    ];
    let mut to_db = rule(Action::Allow, Some(Protocol::TCP));
    to_db.destination.selector = Some(Selector::parse("app == 'db'").unwrap());
    to_db.destination.ports = ports(&[(5432, 5432)]);
    p.egress = vec![to_db];

    let got = acls_of_web(&set_of(&[], vec![p]));
    let at = |dir: &str, i: usize| format!("tier default: shop/web {dir} rule {i}");
    let want = vec![
        host_to_endpoint(),
        acl(
            "policy-shop/web-ingress0-0",
            Allow,
            In,
            6,
            "",
            "10.0.0.20/32",
            "80,8080-8081",
            "",
            1000,
            &at("ingress", 0),
        ),
        acl(
            "policy-shop/web-ingress1-0",
            Block,
            In,
            17,
            "",
            "",
            "",
            "",
            1001,
            &at("ingress", 1),
        ),
        acl(
            "policy-shop/web-ingress3-0",
            Allow,
            In,
            256,
            "",
            "192.168.0.0/16",
            "",
            "",
            1002,
            &at("ingress", 3),
        ),
        acl(
            "",
            Block,
            In,
            256,
            "",
            "",
            "",
            "",
            1003,
            "end of tier default",
        ),
        host_rule(In),
        acl(
            "policy-shop/web-egress0-0",
            Allow,
            Out,
            6,
            "",
            "10.0.0.30/32",
            "",
            "5432",
            1000,
            &at("egress", 0),
        ),
        acl(
            "",
            Block,
            Out,
            256,
            "",
            "",
            "",
            "",
            1001,
            "end of tier default",
        ),
        host_rule(Out),
    ];
    assert_eq!(got.acls, want);
    assert_eq!(
        got.skipped,
        vec![LeftOut {
            rule: RuleRef {
                tier: DEFAULT_TIER.to_string(),
                policy: "shop/web".to_string(),
                direction: "ingress",
                index: 2,
            },
            why: "HNS cannot match an ICMP type or code",
        }]
    );
    assert!(got.not_modelled.is_empty());
}

/// Tier `security` (order 10, default Pass) with `shop/sec` (all(), ingress only):
///   0: Pass TCP from nets 10.0.0.0/24;  1: Deny UDP from nets 172.16.0.0/12
/// then the default tier's `shop/web` (ingress only): 0: Allow TCP to port 80; 1: Allow UDP.
/// Unflattened In tiers: security [Pass 6 R=10.0.0.0/24, Block 17 R=172.16.0.0/12, Pass
/// any (end of tier, default Pass)], default [Allow 6 LP=80, Allow 17, Block any].
/// Flattening replaces each Pass by the default tier combined with it:
///   Pass 6 R=10.0.0.0/24 ∧ Allow 6 LP=80 → Allow 6 R=10.0.0.0/24 LP=80 (web's Id)  1000
///   Pass 6 R=10.0.0.0/24 ∧ Allow 17      → protocols differ: dropped
///   Pass 6 R=10.0.0.0/24 ∧ Block any     → Block 6 R=10.0.0.0/24                    1001
///   Block 17 R=172.16.0.0/12 (sec rule 1)                                            1002
///   Pass any ∧ each default entry        → Allow 6 LP=80, Allow 17, Block any       1003-1005
/// Out: no policy → the profile kns.shop (Allow any 1000) and the default Block (1001).
#[test]
fn a_pass_is_replaced_by_the_next_tier_combined_with_it() {
    let security = Tier {
        name: "security".to_string(),
        order: Some(10.0),
        default_action: TierAction::Pass,
    };
    let ingress_only = PolicyTypes {
        ingress: true,
        egress: false,
    };
    let mut sec = cnp("sec", "security", "all()", ingress_only);
    let mut pass = rule(Action::Pass, Some(Protocol::TCP));
    pass.source.nets = vec!["10.0.0.0/24".parse().unwrap()];
    let mut deny = rule(Action::Deny, Some(Protocol::UDP));
    deny.source.nets = vec!["172.16.0.0/12".parse().unwrap()];
    sec.ingress = vec![pass, deny];
    let mut web = cnp("web", DEFAULT_TIER, "app == 'web'", ingress_only);
    let mut http = rule(Action::Allow, Some(Protocol::TCP));
    http.destination.ports = ports(&[(80, 80)]);
    web.ingress = vec![http, rule(Action::Allow, Some(Protocol::UDP))];

    let got = acls_of_web(&set_of(&[security], vec![sec, web]));
    let web0 = "tier default: shop/web ingress rule 0";
    let web1 = "tier default: shop/web ingress rule 1";
    let want = vec![
        host_to_endpoint(),
        acl(
            "policy-shop/web-ingress0-0",
            Allow,
            In,
            6,
            "",
            "10.0.0.0/24",
            "80",
            "",
            1000,
            web0,
        ),
        acl(
            "",
            Block,
            In,
            6,
            "",
            "10.0.0.0/24",
            "",
            "",
            1001,
            "end of tier default",
        ),
        acl(
            "policy-shop/sec-ingress1-0",
            Block,
            In,
            17,
            "",
            "172.16.0.0/12",
            "",
            "",
            1002,
            "tier security: shop/sec ingress rule 1",
        ),
        acl(
            "policy-shop/web-ingress0-0",
            Allow,
            In,
            6,
            "",
            "",
            "80",
            "",
            1003,
            web0,
        ),
        acl(
            "policy-shop/web-ingress1-0",
            Allow,
            In,
            17,
            "",
            "",
            "",
            "",
            1004,
            web1,
        ),
        acl(
            "",
            Block,
            In,
            256,
            "",
            "",
            "",
            "",
            1005,
            "end of tier default",
        ),
        host_rule(In),
        acl(
            "profile-kns.shop-0-0",
            Allow,
            Out,
            256,
            "",
            "",
            "",
            "",
            1000,
            "profile kns.shop",
        ),
        acl("", Block, Out, 256, "", "", "", "", 1001, "default"),
        host_rule(Out),
    ];
    assert_eq!(got.acls, want);
}

/// A Pass in the last tier is a Block (flattener.go): one tier [Pass 6, Allow any] flattens
/// to [Block 6, Allow any].
#[test]
fn a_pass_in_the_last_tier_blocks() {
    let mut pass = Draft::any(None, "p".to_string());
    pass.protocol = 6;
    let allow = Draft::any(Some(AclAction::Allow), "a".to_string());
    let got: Vec<(Option<AclAction>, u16)> = flatten(vec![vec![pass, allow]])
        .into_iter()
        .map(|d| (d.action, d.protocol))
        .collect();
    assert_eq!(got, vec![(Some(Block), 6), (Some(Allow), 256)]);
}

/// Chunks of 2 (the real limit is 4000): an ingress rule from three pods (10.0.0.10, .20,
/// .30 once db-v6 is dropped) to ports 1, 2, 3 loops Local addresses (any) › Local ports
/// [1,2] [3] › Remote addresses [.10,.20] [.30] › Remote ports (any): four entries -0…-3.
/// Ports are written item by item as the rule lists them (appendPortsinList), never merged.
#[test]
fn long_lists_split_into_every_combination_of_chunks() {
    let mut r = rule(Action::Allow, Some(Protocol::TCP));
    r.source.selector = Some(Selector::parse("all()").unwrap());
    r.destination.ports = ports(&[(1, 1), (2, 2), (3, 3)]);
    let pods: Vec<Ipv4Net> = ["10.0.0.10/32", "10.0.0.20/32", "10.0.0.30/32"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let got: Vec<(String, String, String)> = rule_drafts(
        &r,
        Direction::Ingress,
        "x",
        |end| (end == End::Source).then_some(&pods),
        "o",
        2,
    )
    .into_iter()
    .map(|d| (d.id, port_text(&d.local_ports), join(&d.remote)))
    .collect();
    let pair = "10.0.0.10/32,10.0.0.20/32";
    let one = "10.0.0.30/32";
    let want = [
        ("x-0", "1,2", pair),
        ("x-1", "1,2", one),
        ("x-2", "3", pair),
        ("x-3", "3", one),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want);
}

/// Nets and a selector are ANDed (policysets.go intersects CIDRs with the IP set): nets
/// 10.0.0.16/29 (.16-.23) with pods .10/.20/.30 keeps .20 only; nets 192.168.0.0/16 keeps none and the
/// rule is a no-op; IPv6-only nets make it a no-op on IPv4.
#[test]
fn nets_and_selected_pods_intersect() {
    let pods: Vec<Ipv4Net> = ["10.0.0.10/32", "10.0.0.20/32", "10.0.0.30/32"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let entity = |nets: &str| EntityRule {
        nets: vec![nets.parse().unwrap()],
        selector: Some(Selector::parse("all()").unwrap()),
        ..EntityRule::default()
    };
    assert_eq!(
        entity_addresses(&entity("10.0.0.16/29"), Some(&pods)),
        Some(Some(vec!["10.0.0.20/32".parse().unwrap()]))
    );
    assert_eq!(
        entity_addresses(&entity("192.168.0.0/16"), Some(&pods)),
        None
    );
    let v6 = EntityRule {
        nets: vec!["fd00::/64".parse().unwrap()],
        ..EntityRule::default()
    };
    assert_eq!(entity_addresses(&v6, None), None);
}
