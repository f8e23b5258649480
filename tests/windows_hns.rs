//! Windows nodes' HNS objects over a whole run, in the three layouts, read back as a user
//! reads `events.jsonl` and `report.json`. Expected values are derived by hand in
//! `scenarios/windows-hns-multi-subnet.yaml`'s header and in each test.

use podnet::model::workload::PodStatus;
use podnet::report::Report;
use podnet::scenario;
use podnet::sim::expect::evaluate;
use podnet::sim::{Outcome, Simulation};

const LIBRARY: &str = include_str!("../scenarios/windows-hns-multi-subnet.yaml");

/// The library scenario with `network.windowsHns` set to `layout`.
fn run(layout: &str) -> (scenario::Scenario, Outcome) {
    let yaml = LIBRARY.replace("windowsHns: multi-subnet", &format!("windowsHns: {layout}"));
    let s = scenario::load_str("inline.yaml", &yaml).unwrap_or_else(|d| panic!("invalid:\n{d}"));
    let outcome = Simulation::new(&s).run();
    (s, outcome)
}

/// (kind, subject, block) of every HNS line of the event log, in order.
fn hns_lines(outcome: &Outcome) -> Vec<(String, String, String)> {
    outcome
        .log
        .iter()
        .filter(|e| e.kind.starts_with("hns"))
        .map(|e| {
            (
                e.kind.to_string(),
                e.subject.clone(),
                e.block.clone().expect("an HNS line names its block"),
            )
        })
        .collect()
}

#[test]
fn multi_subnet_holds_one_ip_subnet_per_block_and_removes_the_released_one() {
    let (_, outcome) = run("multi-subnet");
    let lines = hns_lines(&outcome);
    for node in ["win-1", "win-2"] {
        let mine: Vec<_> = lines.iter().filter(|l| l.1 == node).collect();
        let kinds: Vec<&str> = mine.iter().map(|l| l.0.as_str()).collect();
        // First block: the network; second block: an IP subnet; after GC (16m): the second
        // block's IP subnet goes, the node's last block stays.
        assert_eq!(
            kinds,
            [
                "hnsNetworkCreated",
                "hnsIpSubnetAdded",
                "hnsIpSubnetRemoved"
            ],
            "{node}"
        );
        // The removed IP subnet is one of the two blocks the node held.
        assert!(mine[2].2 == mine[0].2 || mine[2].2 == mine[1].2);
        let host = &outcome.world.hns.hosts[node];
        let network = &host.networks["Calico"];
        // The pool's VXLAN mode makes it an Overlay network with Calico's VSID 4096; its one
        // subnet is the pool, gateway the pool's first host address.
        assert_eq!(network.kind.as_str(), "Overlay");
        assert_eq!(network.vsid, Some(4096));
        assert_eq!(network.subnets.len(), 1);
        assert_eq!(network.subnets[0].prefix.to_string(), "10.244.0.0/22");
        assert_eq!(network.subnets[0].gateway.to_string(), "10.244.0.1");
        // What HNS holds is exactly what IPAM gives the node.
        let ipam = outcome.world.addressing.calico().unwrap();
        assert_eq!(host.blocks(), ipam.node_report(node).affine_blocks);
        assert_eq!(host.blocks().len(), 1);
    }
}

#[test]
fn network_per_block_names_each_network_after_its_block() {
    let (_, outcome) = run("network-per-block");
    let ipam = outcome.world.addressing.calico().unwrap();
    for node in ["win-1", "win-2"] {
        let host = &outcome.world.hns.hosts[node];
        let blocks = ipam.node_report(node).affine_blocks;
        // Calico's CreateNetworkName: "Calico-" + the block's address with dashes.
        let expected: Vec<String> = blocks
            .iter()
            .map(|b| format!("Calico-{}", b.network().to_string().replace('.', "-")))
            .collect();
        let names: Vec<String> = host.networks.keys().cloned().collect();
        assert_eq!(names, expected, "{node}");
    }
    // Two networks per node were created (2 blocks each), one per node removed by GC.
    let lines = hns_lines(&outcome);
    let created = lines.iter().filter(|l| l.0 == "hnsNetworkCreated").count();
    let removed = lines.iter().filter(|l| l.0 == "hnsNetworkRemoved").count();
    assert_eq!((created, removed), (4, 2));
}

#[test]
fn single_network_holds_one_block_so_the_sixty_first_pod_stays_pending() {
    let (s, outcome) = run("single-network");
    // 65 pods per node, 60 addresses in the one /26 block: 5 Pending per node at 30s.
    let at_30s = &outcome.snapshots[0];
    let pending = at_30s
        .pods
        .iter()
        .filter(|p| p.status == PodStatus::Pending)
        .count();
    assert_eq!(pending, 10);
    for node in ["win-1", "win-2"] {
        let host = &outcome.world.hns.hosts[node];
        assert_eq!(host.networks.keys().collect::<Vec<_>>(), ["Calico"]);
    }
    // The library's expectations of two blocks per node fail under this layout.
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    assert!(results.iter().any(|r| !r.passed));
}

#[test]
fn the_report_has_a_windows_section_comparing_the_layouts() {
    let (s, outcome) = run("multi-subnet");
    let report = Report::new(&s, &outcome, Vec::new());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let w = &json["windows"];
    assert_eq!(w["hns"], "multi-subnet");
    let nodes = w["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["name"], "win-1");
    assert_eq!(nodes[0]["changes"], 3);
    let net = &nodes[0]["networks"][0];
    assert_eq!(net["type"], "Overlay");
    assert_eq!(net["subnets"][0]["ipSubnets"][0]["flags"], 3);
    // /26 blocks, 4 reserved: single network 1 × 60 = 60 pods; the other layouts 20 blocks
    // (maxBlocksPerHost 0 → 20) × 60 = 1200 addresses, capped by maxPods 110.
    let layouts: Vec<(String, u64, u64)> = nodes[0]["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["hns"].as_str().unwrap().to_string(),
                l["blocksPerHost"].as_u64().unwrap(),
                l["podsPerHost"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        layouts,
        [
            ("single-network".to_string(), 1, 60),
            ("network-per-block".to_string(), 20, 110),
            ("multi-subnet".to_string(), 20, 110),
        ]
    );
    let md = podnet::report::markdown::render(&report, &[], None);
    assert!(md.contains("## Windows nodes (HNS)"));
    assert!(md.contains("### win-2"));
    assert!(md.contains("| win-1 | multi-subnet (in force) | 20 | 60 | 110 |"));
}

#[test]
fn linux_only_clusters_have_no_windows_section() {
    let yaml = LIBRARY.replace("os: windows", "os: linux");
    let s = scenario::load_str("inline.yaml", &yaml).unwrap();
    let outcome = Simulation::new(&s).run();
    assert!(outcome.world.hns.hosts.is_empty());
    let report = Report::new(&s, &outcome, Vec::new());
    assert!(!report.to_json().contains("\"windows\""));
}

/// `"IpAddressPrefix"="<prefix>"` and `-AddressPrefix "<prefix>"` occurrences of a prefix.
fn mentions(script: &str, prefix: &str) -> usize {
    script
        .matches(&format!("\"IpAddressPrefix\"=\"{prefix}\""))
        .count()
        + script
            .matches(&format!("-AddressPrefix \"{prefix}\""))
            .count()
}

#[test]
fn the_exported_state_names_every_held_block_once_with_its_flags() {
    use podnet::export::hns::{Kind, render};
    use podnet::model::time::SimTime;
    let (_, outcome) = run("multi-subnet");
    let end = outcome.end;
    let scripts = render(&outcome.world, end, None, Kind::State).unwrap();
    assert_eq!(
        scripts.iter().map(|s| s.node.as_str()).collect::<Vec<_>>(),
        ["win-1", "win-2"]
    );
    let ipam = outcome.world.addressing.calico().unwrap();
    for s in &scripts {
        let held = ipam.node_report(&s.node).affine_blocks;
        // One network, built by New-HnsNetwork with the pool as its subnet.
        assert_eq!(s.text.matches("New-HnsNetwork ").count(), 1);
        assert!(s.text.contains(
            "New-HnsNetwork -Type Overlay -Name Calico -AddressPrefix \"10.244.0.0/22\" -Gateway \"10.244.0.1\" -Vsid 4096 -IPSubnets @("
        ));
        for b in &held {
            assert_eq!(mentions(&s.text, &b.to_string()), 1, "{}: {b}", s.node);
            // Flags 3 = EnableBroadcast | ReserveNetworkAddress, as modelled.
            assert!(s.text.contains(&format!(
                "@{{\"IpAddressPrefix\"=\"{b}\";\"Flags\"=([IPSubnetFlags]::EnableBroadcast -bor [IPSubnetFlags]::ReserveNetworkAddress)}}"
            )));
        }
        // Blocks the node claimed and lost appear nowhere in the state at the end.
        for line in outcome
            .log
            .iter()
            .filter(|e| e.kind == "hnsIpSubnetRemoved" && e.subject == s.node)
        {
            let gone = line.block.as_deref().unwrap();
            assert_eq!(mentions(&s.text, gone), 0, "{gone} was removed");
        }
    }
    // At 30s each node held two blocks: both appear, once each.
    let library = scenario::load_str("inline.yaml", LIBRARY).unwrap();
    let mut sim = Simulation::new(&library);
    let at = SimTime::ZERO + podnet::model::time::SimDuration::from_secs(30);
    sim.run_until(at);
    let early = render(sim.world(), at, Some("win-1"), Kind::State).unwrap();
    let ipam = sim.world().addressing.calico().unwrap();
    let held = ipam.node_report("win-1").affine_blocks;
    assert_eq!(held.len(), 2);
    for b in &held {
        assert_eq!(mentions(&early[0].text, &b.to_string()), 1);
    }
}

#[test]
fn the_exported_changes_add_and_remove_each_block_in_run_order() {
    use podnet::export::hns::{Kind, render};
    let (_, outcome) = run("multi-subnet");
    let scripts = render(&outcome.world, outcome.end, Some("win-1"), Kind::Changes).unwrap();
    let text = &scripts[0].text;
    let commands: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("$net = New-HnsNetwork")
                || l.starts_with("New-HnsIPSubnet")
                || l.starts_with("Remove-HnsIpSubnet")
        })
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(commands, ["$net", "New-HnsIPSubnet", "Remove-HnsIpSubnet"]);
    // The removed block is looked up by its prefix before Remove-HnsIpSubnet.
    let removed = outcome
        .log
        .iter()
        .find(|e| e.kind == "hnsIpSubnetRemoved" && e.subject == "win-1")
        .and_then(|e| e.block.clone())
        .unwrap();
    assert!(text.contains(&format!(
        "$ipSubnet = $subnet.IpSubnets | Where-Object {{ $_.IpAddressPrefix -eq \"{removed}\" }}\nRemove-HnsIpSubnet -NetworkID $net.ID -SubnetID $subnet.ID -IPSubnets @{{\"ID\"=$ipSubnet.ID}}"
    )));
    // Each change's comment gives its time and block.
    assert!(text.contains(&format!("# 16m: IP subnet {removed} removed")));
}

#[test]
fn exporting_hns_needs_a_windows_node() {
    use podnet::export::hns::{HnsExportError, Kind, render};
    let (_, outcome) = run("multi-subnet");
    assert_eq!(
        render(&outcome.world, outcome.end, Some("linux-1"), Kind::State),
        Err(HnsExportError::NotWindows("linux-1".into()))
    );
}
