//! HNS layouts, derived by hand from Calico's Windows CNI plugin (`CreateNetworkName`,
//! `getNthIP`) and Microsoft's multi-subnet description (REFERENCE §3).

use super::*;

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn layout(mode: WindowsHns) -> Layout {
    Layout {
        mode,
        kind: NetworkType::L2Bridge,
        ip_subnet_flags: flags::ENABLE_BROADCAST | flags::RESERVE_NETWORK_ADDRESS,
    }
}

#[test]
fn calico_names_a_per_block_network_from_the_block_address_without_its_length() {
    // CreateNetworkName("Calico", 10.244.0.64/26) = "Calico" + "-" + "10-244-0-64".
    assert_eq!(
        network_name_for_block(&net("10.244.0.64/26")),
        "Calico-10-244-0-64"
    );
}

#[test]
fn single_network_holds_the_block_as_its_subnet_with_ordinal_one_as_gateway() {
    let mut host = Host::default();
    let changes = host.add_block(
        &layout(WindowsHns::SingleNetwork),
        net("10.244.0.64/26"),
        net("10.244.0.0/22"),
    );
    assert_eq!(changes.len(), 1);
    let Change::NetworkCreated { network, block } = &changes[0] else {
        panic!("{changes:?}")
    };
    assert_eq!(*block, net("10.244.0.64/26"));
    assert_eq!(network.name, "Calico");
    assert_eq!(network.subnets.len(), 1);
    // getNthIP(10.244.0.64/26, 1) = 10.244.0.65.
    assert_eq!(network.subnets[0].gateway.to_string(), "10.244.0.65");
    assert!(network.subnets[0].ip_subnets.is_empty());
    // A second block (which IPAM never gives in this mode) replaces the stale network, as
    // Calico's EnsureNetworkExists does.
    let changes = host.add_block(
        &layout(WindowsHns::SingleNetwork),
        net("10.244.1.0/26"),
        net("10.244.0.0/22"),
    );
    let kinds: Vec<_> = changes.iter().map(Change::kind).collect();
    assert_eq!(kinds, ["hnsNetworkRemoved", "hnsNetworkCreated"]);
    assert_eq!(host.blocks(), [net("10.244.1.0/26")]);
}

#[test]
fn network_per_block_gives_one_network_per_block_and_removes_it_with_the_block() {
    let l = layout(WindowsHns::NetworkPerBlock);
    let mut host = Host::default();
    host.add_block(&l, net("10.244.0.64/26"), net("10.244.0.0/22"));
    host.add_block(&l, net("10.244.0.128/26"), net("10.244.0.0/22"));
    let names: Vec<_> = host.networks.keys().cloned().collect();
    assert_eq!(names, ["Calico-10-244-0-128", "Calico-10-244-0-64"]);
    let changes = host.remove_block(net("10.244.0.64/26"));
    assert_eq!(
        changes,
        [Change::NetworkRemoved {
            network: "Calico-10-244-0-64".into(),
            block: net("10.244.0.64/26")
        }]
    );
    assert_eq!(host.blocks(), [net("10.244.0.128/26")]);
}

#[test]
fn multi_subnet_adds_one_ip_subnet_per_block_and_one_subnet_per_pool() {
    let l = layout(WindowsHns::MultiSubnet);
    let mut host = Host::default();
    let pool_a = net("10.244.0.0/22");
    let pool_b = net("10.250.0.0/24");
    let kinds = |c: Vec<Change>| c.iter().map(Change::kind).collect::<Vec<_>>();
    assert_eq!(
        kinds(host.add_block(&l, net("10.244.0.64/26"), pool_a)),
        ["hnsNetworkCreated"]
    );
    assert_eq!(
        kinds(host.add_block(&l, net("10.244.0.0/26"), pool_a)),
        ["hnsIpSubnetAdded"]
    );
    assert_eq!(
        kinds(host.add_block(&l, net("10.250.0.16/28"), pool_b)),
        ["hnsSubnetAdded"]
    );
    let network = &host.networks["Calico"];
    assert_eq!(host.networks.len(), 1);
    assert_eq!(network.subnets.len(), 2);
    // The pool's subnet: gateway = the pool's first host address, shared by its blocks;
    // IP subnets in address order, each with the layout's flags (1 | 2 = 3).
    assert_eq!(network.subnets[0].prefix, pool_a);
    assert_eq!(network.subnets[0].gateway.to_string(), "10.244.0.1");
    let ips: Vec<_> = network.subnets[0]
        .ip_subnets
        .iter()
        .map(|i| (i.prefix.to_string(), i.flags))
        .collect();
    assert_eq!(
        ips,
        [
            ("10.244.0.0/26".to_string(), 3),
            ("10.244.0.64/26".to_string(), 3)
        ]
    );
    // Removal: an IP subnet, then the pool's emptied subnet, then the network.
    assert_eq!(
        kinds(host.remove_block(net("10.244.0.0/26"))),
        ["hnsIpSubnetRemoved"]
    );
    assert_eq!(
        kinds(host.remove_block(net("10.250.0.16/28"))),
        ["hnsSubnetRemoved"]
    );
    assert_eq!(
        kinds(host.remove_block(net("10.244.0.64/26"))),
        ["hnsNetworkRemoved"]
    );
    assert!(host.networks.is_empty());
    // A block the host does not hold changes nothing.
    assert!(host.remove_block(net("10.244.0.64/26")).is_empty());
}

#[test]
fn the_state_keeps_every_change_with_its_time_node_and_block() {
    let mut state = HnsState::new(Some(layout(WindowsHns::MultiSubnet)));
    state.add_host("win-1");
    let t = SimTime::from_nanos(5);
    assert_eq!(
        state
            .block_claimed(t, "win-1", net("10.0.0.0/28"), net("10.0.0.0/24"))
            .len(),
        1
    );
    // A Linux node (never registered) has no HNS.
    assert!(
        state
            .block_claimed(t, "linux-1", net("10.0.0.16/28"), net("10.0.0.0/24"))
            .is_empty()
    );
    state.block_released(t, "win-1", net("10.0.0.0/28"));
    let seen: Vec<_> = state
        .history
        .iter()
        .map(|h| {
            (
                h.node.as_str(),
                h.change.kind(),
                h.change.block().to_string(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("win-1", "hnsNetworkCreated", "10.0.0.0/28".to_string()),
            ("win-1", "hnsNetworkRemoved", "10.0.0.0/28".to_string())
        ]
    );
}

#[test]
fn what_each_layout_allows_a_host() {
    // /26 blocks: 64 addresses, 4 reserved per block → 60 pod addresses.
    // Single network: 1 block → 60 pods. Per block / multi-subnet: maxBlocksPerHost 0 means
    // Calico's 20 → 20 × 60 = 1200 addresses, capped by maxPods 110.
    let single = allowance(WindowsHns::SingleNetwork, 64, 4, 0, 110);
    assert_eq!(
        (
            single.blocks_per_host,
            single.pod_addresses_per_block,
            single.pods_per_host
        ),
        (1, 60, 60)
    );
    let per_block = allowance(WindowsHns::NetworkPerBlock, 64, 4, 0, 110);
    assert_eq!(
        (per_block.blocks_per_host, per_block.pods_per_host),
        (20, 110)
    );
    // maxBlocksPerHost 2 with /28 blocks: 2 × (16 − 4) = 24 pods.
    let multi = allowance(WindowsHns::MultiSubnet, 16, 4, 2, 110);
    assert_eq!((multi.blocks_per_host, multi.pods_per_host), (2, 24));
}
