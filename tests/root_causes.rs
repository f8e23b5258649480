//! report.json `unreachableCauses`: what the routing itself got wrong, told apart into causes
//! a user can act on (ARCHITECTURE.md, choices: root causes). Each scenario is built to
//! produce one cause; the derivations are in the scenario files and below.

mod common;

/// The causes of a library scenario as (cause, count, detail, stopped).
fn causes(name: &str) -> Vec<(String, u64, String, String)> {
    let (json, _) = common::library_report(name);
    json["unreachableCauses"]
        .as_array()
        .expect("unreachableCauses")
        .iter()
        .map(|c| {
            (
                c["cause"].as_str().unwrap_or("").to_string(),
                c["count"].as_u64().unwrap_or(0),
                c["detail"].as_str().unwrap_or("").to_string(),
                c["stopped"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// scenarios/crosssubnet-overlay.yaml: 12 pods (DaemonSets web and native/db, one pod each
/// on 3 + 3 nodes of two racks); the fabric does not speak BGP. A native/db pod (pool
/// `native`, ipipMode Never) is reached natively, so from each of the 6 pods of the other
/// rack the packet goes to the source rack's ToR, which knows node subnets only: 3 db pods
/// per rack x 6 sources = 18 pairs stopped at each ToR, 36 in all. Tunnelled traffic (the
/// overlay pool across racks) is delivered. The fix is the pool's encapsulation or a BGP
/// fabric, not any node or session.
#[test]
fn native_pod_traffic_into_a_fabric_without_bgp() {
    let got = causes("crosssubnet-overlay");
    assert_eq!(got.len(), 2, "{got:?}");
    for ((cause, count, detail, stopped), tor) in got.iter().zip(["tor-rack-1", "tor-rack-2"]) {
        assert_eq!(cause, "native-over-fabric", "{got:?}");
        assert_eq!(*count, 18, "{got:?}");
        assert_eq!(stopped, &format!("no-route at {tor}"));
        assert!(
            detail.starts_with(&format!("{tor} knows node subnets only and ")),
            "{detail}"
        );
        assert!(
            detail.contains(", pool native unencapsulated: encapsulate it"),
            "{detail}"
        );
    }
}

/// scenarios/unpeered-node.yaml: the BGPPeer misses n-3, so its block is advertised to no
/// one. a-0 -> c-0 and b-0 -> c-0 leave n-1 and n-2 by their default route and stop at
/// tor-rack-1, which learned only n-1's and n-2's blocks: 2 pairs, one group, one cause. The
/// source's node fell back to its default route, so it is the first device without the
/// block; n-3 has no session at all, which is what to fix.
#[test]
fn a_block_nobody_learned_names_its_owner_and_its_sessions() {
    let got = causes("unpeered-node");
    assert_eq!(got.len(), 1, "{got:?}");
    let (cause, count, detail, stopped) = &got[0];
    assert_eq!(
        (cause.as_str(), *count, stopped.as_str()),
        ("block-not-learned", 2, "no-route at tor-rack-1")
    );
    assert!(
        detail.starts_with("n-1 has no route to the destination's block (e.g. 10.48.")
            || detail.starts_with("n-2 has no route to the destination's block (e.g. 10.48."),
        "{detail}"
    );
    assert!(
        detail.ends_with("/26 of n-3, pool pods: n-3 has no BGP session)"),
        "{detail}"
    );
}

/// scenarios/external-nat-outgoing.yaml: 9 pods (DaemonSets in three namespaces, pools
/// `private`, `routable`, `stranded`, on r1-n-1, r1-n-2, r2-n-1); `private` and `stranded`
/// have disableBGPExport. A pod of either is reached from the 6 pods on the two other nodes
/// (the 2 on its own node deliver locally): 6 destinations x 6 = 36 pairs. Their blocks were
/// never exported, so the source's node has only its default route (to its ToR), the ToR
/// its default to the spine, and the spine's 0.0.0.0/0 leaves the fabric: no-route at
/// spine-zone-a-1, one group. The owner's one session (to its ToR) is Established: the
/// block was not exported, which is what to look at.
#[test]
fn a_block_never_exported_says_the_owner_s_sessions_are_up() {
    let got = causes("external-nat-outgoing");
    assert_eq!(got.len(), 1, "{got:?}");
    let (cause, count, detail, stopped) = &got[0];
    assert_eq!(
        (cause.as_str(), *count, stopped.as_str()),
        ("block-not-learned", 36, "no-route at spine-zone-a-1")
    );
    assert!(
        detail.ends_with(
            "has 1 BGP session, all Established, so the block is not exported or not passed on)"
        ),
        "{detail}"
    );
    assert!(
        detail.contains(", pool private: ") || detail.contains(", pool stranded: "),
        "{detail}"
    );
}
