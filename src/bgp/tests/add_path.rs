//! ADD-PATH (RFC 7911) as Calico configures it: `add paths on` on every session of a node, so
//! where both ends are Calico nodes a speaker sends every candidate that passes its export
//! rules (BIRD 2's `add paths tx` exports any route of its table, `RA_ANY`), each under its
//! own path id, and the receiver keeps them all; a session to a router (an operator's
//! configuration, no `add paths`) gets the best route only.
//!
//! The topology of most cases is `reflected(n, false)`: r0n0 (10.0.0.10) reflects for cluster
//! 1.1.1.1, r0n1 (10.0.0.11) for cluster 1.1.1.2, every other node is a client of both, and
//! the two reflectors are each other's clients (different cluster IDs, Calico's template
//! makes both sides `rr client`), as in the BIRD lab's `reflectors-two-clusters`.

use super::*;

/// A candidate as these tests compare it: `<peer> [<cluster list>] orig <originator>`, or
/// `local`.
fn candidates(net: &Net, node: &str, prefix: &str) -> Vec<String> {
    let Some(e) = net.entry(node, prefix) else {
        return Vec::new();
    };
    let mut out: Vec<String> = e
        .routes
        .iter()
        .map(|r| match r.from {
            None => "local".to_string(),
            Some(d) => {
                let clusters: Vec<String> =
                    r.attrs.cluster_list.iter().map(|c| c.to_string()).collect();
                let orig = r
                    .attrs
                    .originator_id
                    .map_or("-".to_string(), |o| o.to_string());
                format!(
                    "{} [{}] orig {orig}",
                    net.topology.device(d).name,
                    clusters.join(" ")
                )
            }
        })
        .collect();
    out.sort();
    out
}

/// The best candidate in the form of [`candidates`].
fn best(net: &Net, node: &str, prefix: &str) -> String {
    let e = net.entry(node, prefix).expect("a route");
    let r = &e.routes[0];
    assert!(r.status.is_best());
    let d = r.from.expect("learned");
    let clusters: Vec<String> = r.attrs.cluster_list.iter().map(|c| c.to_string()).collect();
    format!(
        "{} [{}] orig {}",
        net.topology.device(d).name,
        clusters.join(" "),
        r.attrs
            .originator_id
            .map_or("-".to_string(), |o| o.to_string())
    )
}

/// Checks every `(node, expected candidates)` row for `prefix`.
fn check(net: &Net, prefix: &str, rows: &[(&str, &[&str])]) {
    for (node, want) in rows {
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(
            candidates(net, node, prefix),
            want,
            "{node}'s candidates for {prefix}"
        );
    }
}

#[test]
fn reflectors_send_every_path_to_add_path_peers() {
    // r0n2 (10.0.0.12) originates its block. Derivation (REFERENCE §4.2, BIRD's
    // `bgp_preexport`: a route goes back to no session it came from, a client's route goes
    // to everyone, a CLUSTER_LIST holding the session's cluster ID goes to no `rr client`):
    // - r0n0 has r0n2's own announcement and r0n1's reflection of it ([1.1.1.2]); r0n1's copy
    //   of r0n0's reflection would go back where it came from. r0n1 likewise.
    // - r0n3 gets both of r0n0's paths, each with 1.1.1.1 prepended ([1.1.1.1] and
    //   [1.1.1.1 1.1.1.2]), and both of r0n1's. Best paths only would give it two.
    // - r0n2 refuses every copy of its own route (ORIGINATOR_ID is itself).
    let mut net = reflected(4, false);
    let b = "10.244.2.0/26";
    net.originate("r0n2", b);
    net.settle();
    let orig = "orig 10.0.0.12";
    check(
        &net,
        b,
        &[
            (
                "r0n0",
                &["r0n2 [] orig -", &format!("r0n1 [1.1.1.2] {orig}")],
            ),
            (
                "r0n1",
                &["r0n2 [] orig -", &format!("r0n0 [1.1.1.1] {orig}")],
            ),
            (
                "r0n3",
                &[
                    &format!("r0n0 [1.1.1.1] {orig}"),
                    &format!("r0n0 [1.1.1.1 1.1.1.2] {orig}"),
                    &format!("r0n1 [1.1.1.2] {orig}"),
                    &format!("r0n1 [1.1.1.2 1.1.1.1] {orig}"),
                ],
            ),
            ("r0n2", &["local"]),
        ],
    );
    // The decision is unchanged: same next hop and originator, so the shorter CLUSTER_LIST,
    // then the lower peer address (r0n0) wins.
    assert_eq!(best(&net, "r0n3", b), format!("r0n0 [1.1.1.1] {orig}"));
    assert_eq!(net.next_hop_name("r0n3", b).unwrap(), "r0n2");
}

#[test]
fn a_router_peer_without_add_path_gets_the_best_path_only() {
    // As above, and r0n0 also peers over eBGP with its ToR (AS 65101), whose operator
    // configuration has no `add paths`: ADD-PATH is not negotiated there, so of r0n0's two
    // paths to r0n2's block the ToR gets one (its best), while the client r0n3 gets both.
    let t = topology(
        &[RackSpec {
            nodes: 4,
            node_bgp: two_clusters,
        }],
        true,
    );
    let to_rr = to_reflectors();
    let mut tor = Peer::named("r0n0-to-tor");
    tor.node = Some("r0n0".into());
    tor.peer_ip = Some(ip("10.0.0.1"));
    tor.as_number = Some(65101);
    let mut net = Net::new(t, &no_mesh(), &[to_rr, tor], TimerProfile::CalicoBird);
    assert_eq!(
        net.session_between("r0n0", "tor-r0").session_type,
        SessionType::Ebgp
    );
    let b = "10.244.2.0/26";
    net.originate("r0n2", b);
    net.settle();
    assert_eq!(candidates(&net, "r0n0", b).len(), 2);
    assert_eq!(candidates(&net, "r0n3", b).len(), 4);
    // eBGP export: next hop r0n0, AS_PATH [64512], no reflection attributes.
    assert_eq!(candidates(&net, "tor-r0", b), ["r0n0 [] orig -"]);
    let e = net.entry("tor-r0", b).unwrap();
    assert_eq!(e.routes[0].attrs.as_path, [64512]);
    assert_eq!(e.routes[0].attrs.next_hop, ip("10.0.0.10"));
}

#[test]
fn withdrawing_one_path_withdraws_only_that_path() {
    // r0n2 and r0n3 both originate one prefix (an anycast block). r0n4 then holds eight
    // paths: from each reflector, each originator's announcement ([own cluster]) and its
    // reflection through the other reflector ([own cluster, other cluster]). The best is the
    // lowest ORIGINATOR_ID (10.0.0.12, RFC 4456 §9), then the shorter CLUSTER_LIST, then
    // the lower peer address: r0n0's direct copy of r0n2's.
    let mut net = reflected(5, false);
    let p = "10.244.9.0/26";
    net.originate("r0n2", p);
    net.originate("r0n3", p);
    net.settle();
    let paths = |orig: &str| -> Vec<String> {
        vec![
            format!("r0n0 [1.1.1.1] orig {orig}"),
            format!("r0n0 [1.1.1.1 1.1.1.2] orig {orig}"),
            format!("r0n1 [1.1.1.2] orig {orig}"),
            format!("r0n1 [1.1.1.2 1.1.1.1] orig {orig}"),
        ]
    };
    let both: Vec<String> = paths("10.0.0.12")
        .into_iter()
        .chain(paths("10.0.0.13"))
        .collect();
    let both: Vec<&str> = both.iter().map(String::as_str).collect();
    check(&net, p, &[("r0n4", &both)]);
    assert_eq!(best(&net, "r0n4", p), "r0n0 [1.1.1.1] orig 10.0.0.12");
    // r0n3 stops: each reflector withdraws exactly the two paths that were r0n3's, under
    // their path ids, and announces nothing again; r0n2's four paths stay as they were.
    let withdrawn_at = net.now;
    let d = net.dev("r0n3");
    let evs = net.engine.withdraw(net.now, d, cidr(p));
    net.push(evs);
    net.settle();
    let kept = paths("10.0.0.12");
    let kept: Vec<&str> = kept.iter().map(String::as_str).collect();
    check(&net, p, &[("r0n4", &kept)]);
    assert_eq!(best(&net, "r0n4", p), "r0n0 [1.1.1.1] orig 10.0.0.12");
    for rr in ["r0n0", "r0n1"] {
        let updates: Vec<&str> = net
            .log
            .iter()
            .filter(|l| {
                l.time >= withdrawn_at
                    && l.kind == BgpLogKind::Update
                    && l.subject == format!("{rr} -> r0n4")
            })
            .map(|l| l.outcome.as_str())
            .collect();
        // r0n3's own withdrawal reaches the reflector first, r0n0's or r0n1's withdrawal
        // of its reflected copy a moment later: two UPDATEs, one path each.
        assert_eq!(updates.len(), 2, "{rr}: {updates:?}");
        for u in &updates {
            assert!(
                u.starts_with("withdraw ") && !u.contains("announce"),
                "{rr}: {u}"
            );
            assert_eq!(u.matches(p).count(), 1, "{rr}: {u}");
        }
        assert_ne!(updates[0], updates[1], "two different path ids");
    }
}

#[test]
fn a_mesh_sends_one_path_per_prefix_as_before() {
    // In a full mesh nobody passes on what it learned (iBGP split horizon), so ADD-PATH
    // changes nothing: each node has one candidate per other node's block.
    let t = one_rack(4);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    for i in 0..4 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.settle();
    for i in 0..4 {
        for j in 0..4 {
            let want = if i == j {
                vec!["local".to_string()]
            } else {
                vec![format!("r0n{j} [] orig -")]
            };
            assert_eq!(candidates(&net, &format!("r0n{i}"), &block(0, j)), want);
        }
    }
}
