//! The Windows reservation models (`network.windowsReservation`) over whole runs of the three
//! library scenarios `windows-micro-pools-per-{block,host,pool}.yaml`, read back as a user
//! reads `report.json`, `report.md` and `podnet sweep`. Expected values are derived by hand in
//! each scenario's header and below.

mod common;

use std::process::Command;

/// The report of a library scenario, as JSON, and its Markdown.
fn report(model: &str) -> (serde_json::Value, String) {
    common::library_report(&format!("windows-micro-pools-per-{model}"))
}

/// (name, windowsBlocks, addresses, reserved, perBlock, perHost, perPool) of a row list.
fn rows(v: &serde_json::Value) -> Vec<(String, u64, u64, u64, u64, u64, u64)> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
            (
                r["name"].as_str().expect("name").to_string(),
                n("windowsBlocks"),
                n("addresses"),
                n("reserved"),
                n("perBlock"),
                n("perHost"),
                n("perPool"),
            )
        })
        .collect()
}

/// The pool row is the same under every model: 4 Windows blocks of 8 at the end (every block
/// of win-micro is claimed), per-block 4 × 4 = 16, per-host 2 × 2 hosts = 4, per-pool 2.
/// Only `reserved`, what the allocator did, follows the model in force.
#[test]
fn the_pool_row_compares_every_model_and_reserved_follows_the_one_in_force() {
    for (model, reserved) in [("block", 16), ("host", 4), ("pool", 2)] {
        let (json, _) = report(model);
        let r = &json["windows"]["reservation"];
        assert_eq!(r["model"], format!("per-{model}"));
        assert_eq!(r["addresses"], 2);
        assert_eq!(
            rows(&r["pools"]),
            [("win-micro".to_string(), 4, 32, reserved, 16, 4, 2)],
            "per-{model}"
        );
    }
}

/// Per Windows node (2 blocks of 8 each): per-block 8, per-host 2; the per-pool 2 are counted
/// on the node holding the pool's lowest Windows block, so the two nodes' per-pool cells add
/// up to 2. In force: per-block 8 each, per-host 2 each, per-pool 2 on win-1 (its first
/// block is the pool's first Windows block, claimed when it joined first) and 0 on win-2.
#[test]
fn each_windows_node_shows_what_it_loses_under_each_model() {
    for (model, in_force) in [("block", [8, 8]), ("host", [2, 2]), ("pool", [2, 0])] {
        let (json, _) = report(model);
        let nodes = rows(&json["windows"]["reservation"]["nodes"]);
        let names: Vec<&str> = nodes.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(names, ["win-1", "win-2"]);
        for (row, reserved) in nodes.iter().zip(in_force) {
            assert_eq!(
                (row.1, row.2, row.3),
                (2, 16, reserved),
                "per-{model} {row:?}"
            );
            assert_eq!((row.4, row.5), (8, 2), "per-{model} {row:?}");
        }
        assert_eq!(nodes[0].6 + nodes[1].6, 2, "per-{model}");
    }
}

#[test]
fn the_markdown_report_has_the_comparison_table() {
    let (_, md) = report("host");
    assert!(md.contains("### Addresses each reservation model wastes"));
    assert!(md.contains("Reservation model in force: `per-host`"));
    assert!(
        md.contains("| pool win-micro | 4 | 32 | 4 | 16 | 4 | 2 |"),
        "{md}"
    );
    // The layout comparison counts the model in force: /29 blocks give 8 pod addresses
    // each; single network: 1 block × 8 − 2 reserved once = 6 pods per host.
    assert!(
        md.contains("| win-1 | single-network | 1 | 8 | 6 |"),
        "{md}"
    );
}

/// Under per-block the last pods are Pending with Calico's strict-affinity message.
#[test]
fn per_block_runs_out_with_calicos_message() {
    let (_, md) = report("block");
    assert!(
        md.contains(
            "| **Pending** | No more free affine blocks and strict affinity enabled | 12 |"
        ),
        "{md}"
    );
}

/// `podnet sweep` varies the model by its scenario path; the row for each model has the
/// pending counts the three scenario headers derive at the end (12, 0, 1).
#[test]
fn sweep_varies_the_reservation_model() {
    let out = Command::new(env!("CARGO_BIN_EXE_podnet"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "sweep",
            "scenarios/windows-micro-pools-per-block.yaml",
            "--set",
            "network.windowsReservation=per-block,per-host,per-pool",
            "--format",
            "csv",
        ])
        .output()
        .expect("run podnet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0].split(',').take(3).collect::<Vec<_>>(),
        ["network.windowsReservation", "pods", "pending"],
        "{stdout}"
    );
    let pending: Vec<(&str, &str)> = lines[1..]
        .iter()
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[0], cells[2])
        })
        .collect();
    assert_eq!(
        pending,
        [("per-block", "12"), ("per-host", "0"), ("per-pool", "1")]
    );
    // The per-host and per-pool variants break the per-block scenario's expectations.
    assert_eq!(out.status.code(), Some(1));
}

/// The multi-subnet IP subnets keep the network and broadcast addresses (`Flags` 3:
/// EnableBroadcast | ReserveNetworkAddress) only under per-block; the micro-pool models hand
/// both to pods, so their IP subnets carry no flag (0).
#[test]
fn ip_subnet_flags_follow_the_reservation_model() {
    for (model, flags) in [("block", 3), ("host", 0), ("pool", 0)] {
        let (json, _) = report(model);
        for node in json["windows"]["nodes"].as_array().expect("nodes") {
            let subnets = node["networks"][0]["subnets"].as_array().expect("subnets");
            let ip_subnets: Vec<&serde_json::Value> = subnets
                .iter()
                .flat_map(|s| s["ipSubnets"].as_array().expect("ipSubnets"))
                .collect();
            // Two blocks per node at the end.
            assert_eq!(ip_subnets.len(), 2, "per-{model}");
            assert!(
                ip_subnets.iter().all(|i| i["flags"] == flags),
                "per-{model}"
            );
        }
    }
}
