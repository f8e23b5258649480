//! Validation of bad scenario files (SPEC §2, §5): every problem is reported at once, each as
//! `FILE:LINE:COL: path.to.field: message`, and hostile input is refused quickly.
//!
//! The tests are data-driven: [`check`] writes a scenario to a fresh temporary folder, loads it
//! and returns the rendered diagnostics with the folder stripped, and [`assert_lines`] compares
//! them with the expected lines. An expected line may hold `…`, which matches any text; it is
//! used only where a known bug (an `#[ignore]`d test below pins the exact line) makes the
//! field path wrong, so the rest of the line is still checked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty temporary folder for one check.
fn fresh_dir() -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("podnet-validation-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

/// Writes `files` (name, text) into a fresh folder, loads the first one, and returns every
/// diagnostic (errors, or the warnings of a valid scenario) with the folder removed from
/// file names.
fn check_files(files: &[(&str, &str)]) -> Vec<String> {
    let dir = fresh_dir();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create dir");
        std::fs::write(path, text).expect("write fixture");
    }
    let lines = load_lines(&dir, &dir.join(files[0].0));
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

fn load_lines(dir: &Path, main: &Path) -> Vec<String> {
    let prefix = format!("{}/", dir.display());
    let lines = match podnet::scenario::load(main) {
        Ok(s) => s.warning_lines(),
        Err(d) => d
            .items
            .iter()
            .map(|i| i.display(&d.sources).to_string())
            .collect(),
    };
    lines.into_iter().map(|l| l.replace(&prefix, "")).collect()
}

/// Files to write (name, text), the first one loaded.
type Files<'a> = &'a [(&'a str, &'a str)];
/// Expected diagnostic lines.
type Lines<'a> = &'a [&'a str];

/// One scenario file, `s.yaml`.
fn check(yaml: &str) -> Vec<String> {
    check_files(&[("s.yaml", yaml)])
}

/// Like [`check`], and asserts the load took less than a second (hostile input).
fn check_quickly(yaml: &str) -> Vec<String> {
    // How quickly is measured by `benches/hostile.rs` (and memory by `tests/hostile.rs`),
    // never by a timed test: this one only checks what is said.
    check(yaml)
}

/// `actual` must have exactly the `expected` lines, in order; `…` in an expected line
/// matches any text.
#[track_caller]
fn assert_lines(actual: &[String], expected: &[&str]) {
    let ok =
        actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, e)| matches(a, e));
    assert!(
        ok,
        "diagnostics differ\n--- expected\n{}\n--- actual\n{}\n",
        expected.join("\n"),
        actual.join("\n")
    );
}

fn matches(actual: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return actual == pattern;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

/// A valid scenario of ten lines; tests append to it, so their own lines start at 11.
const BASE: &str = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: rack-a1
      subnet: 10.0.0.0/24
      nodes:
      - {name: n1}
      - {name: n2}
";

/// The same cluster as [`BASE`] with a second zone (so `core` exists), ending at line 16.
const TWO_ZONES: &str = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: rack-a1
      subnet: 10.0.0.0/24
      nodes:
      - {name: n1}
      - {name: n2}
  - name: zone-b
    racks:
    - name: rack-b1
      subnet: 10.1.0.0/24
      nodes:
      - {name: n3}
";

#[test]
fn the_base_scenarios_are_valid() {
    assert_lines(&check(BASE), &[]);
    assert_lines(&check(TWO_ZONES), &[]);
}

// ---------------------------------------------------------------------------------------------
// Malformed YAML

#[test]
fn malformed_yaml_is_located() {
    let cases: &[(&str, &[&str])] = &[
        // An unclosed flow sequence: the parser notices at the end of the file.
        (
            "name: t\ntopology: {zones: [\n",
            &["s.yaml:3:1: invalid YAML: while parsing a node, did not find expected node content"],
        ),
        (
            "name: t\ntopology:\n  zones:\n   - name: a\n  x: 1\n y: 2\n",
            // ` y` at column 2 ends the topology mapping (keys at column 3), so the block it
            // falls in is the top-level mapping (`name`, `topology`): line 1, column 1.
            &[
                "s.yaml:6:2: invalid YAML: while parsing a block mapping, did not find expected key; the enclosing block began at line 1, column 1, so its entries are indented by 0 spaces",
            ],
        ),
        (
            "name: t\ntopology:\n\tzones: []\n",
            // The top-level mapping (`name`, `topology`) begins at line 1, column 1.
            &[
                "s.yaml:3:2: invalid YAML: tabs disallowed within this context (block indentation); the enclosing block began at line 1, column 1, so its entries are indented by 0 spaces",
            ],
        ),
        (
            "name: t\nname: u\n",
            &["s.yaml:2:1: duplicate key `name` (first at line 1, column 1)"],
        ),
        (
            "name: t\n---\nname: u\n",
            &[
                "s.yaml:3:1: a scenario file holds one YAML document; this is a second one (remove the `---`)",
            ],
        ),
        (
            "",
            &["s.yaml:1:1: the file is empty: expected a YAML mapping"],
        ),
    ];
    for (yaml, expected) in cases {
        assert_lines(&check(yaml), expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Unknown keys and wrong types

#[test]
fn unknown_keys_at_every_level_suggest_the_nearest_key() {
    let yaml = "name: t
topology:
  fabric: {spinesperzone: 2}
  zones:
  - name: zone-a
    racks:
    - name: rack-a1
      subnet: 10.0.0.0/24
      nodes:
      - {namPrefix: w, count: 2}
workload: []
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:3:12: topology.fabric.spinesperzone: unknown field `spinesperzone`; did you mean `spinesPerZone`?",
            "s.yaml:10:10: topology.zones[0].racks[0].nodes[0].namPrefix: unknown field `namPrefix`; did you mean `namePrefix`?",
            "s.yaml:11:1: workload: unknown field `workload`; did you mean `workloads`?",
        ],
    );
}

#[test]
fn an_unknown_key_far_from_every_valid_key_lists_them() {
    let yaml = format!("{BASE}zzz: 1\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:11:1: zzz: unknown field `zzz`; expected one of: name, description, seed, until, profile, topology, network, resources, workloads, events, expect, manifests, include, externals",
        ],
    );
}

#[test]
fn wrong_types_of_optional_fields() {
    let yaml = format!(
        "{BASE}seed: one
network: {{hostMtu: [1500], windowsUseSingleNetwork: \"yes\"}}
workloads:
- {{name: web, replicas: two, labels: [a]}}
"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:11:7: seed: expected an integer, found a string",
            "s.yaml:12:20: network.hostMtu: expected an integer, found a list",
            "s.yaml:12:53: network.windowsUseSingleNetwork: expected true or false, found a string",
            "s.yaml:14:25: workloads[0].replicas: expected an integer, found a string",
            "s.yaml:14:38: workloads[0].labels: expected a mapping of strings, found a list",
        ],
    );
}

/// A required field written with the wrong type is one problem, not also "missing".
#[test]
fn wrong_types_of_required_fields_are_reported_once() {
    let yaml = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: [rack]
      subnet: 10.0.0.0/24
      nodes:
      - {namePrefix: w, count: two}
      - {name: 7}
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:6:13: topology.zones[0].racks[0].name: expected a string, found a list",
            "s.yaml:9:32: topology.zones[0].racks[0].nodes[0].count: expected an integer, found a string",
            "s.yaml:10:16: topology.zones[0].racks[0].nodes[1].name: expected a string, found an integer (write it in quotes: \"7\")",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Addresses and subnets

/// Bad CIDRs where the field is optional (so no "missing" follows): the message is the same
/// wherever a CIDR is read.
#[test]
fn bad_cidrs_are_refused_with_the_fix_suggested() {
    let yaml = format!(
        "{BASE}workloads: [{{name: web}}]
expect:
- pod: {{name: web-0, inCidr: 10.0.0.0/33}}
- pod: {{name: web-0, inCidr: 10.6.0.5/16}}
- pod: {{name: web-0, inCidr: garbage}}
"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:13:30: expect[0].pod.inCidr: `10.0.0.0/33` is not a CIDR such as 10.0.0.0/16",
            "s.yaml:14:30: expect[1].pod.inCidr: `10.6.0.5/16` has host bits set; did you mean `10.6.0.0/16`?",
            "s.yaml:15:30: expect[2].pod.inCidr: `garbage` is not a CIDR such as 10.0.0.0/16",
        ],
    );
}

#[test]
fn bad_rack_subnets_are_reported_once() {
    let yaml = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: r1
      subnet: 10.0.0.0/33
    - name: r2
      subnet: 10.6.0.5/16
    - name: r3
      subnet: garbage
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:7:15: topology.zones[0].racks[0].subnet: `10.0.0.0/33` is not a CIDR such as 10.0.0.0/16",
            "s.yaml:9:15: topology.zones[0].racks[1].subnet: `10.6.0.5/16` has host bits set; did you mean `10.6.0.0/16`?",
            "s.yaml:11:15: topology.zones[0].racks[2].subnet: `garbage` is not a CIDR such as 10.0.0.0/16",
        ],
    );
}

/// A broken rack subnet is the one error: links naming the rack's ToR or its nodes are not
/// also refused as unknown devices (the ToR `tor-r1` and node `n1` exist once the subnet is
/// fixed), while a truly unknown device next to them still is.
#[test]
fn a_broken_rack_gives_no_knock_on_errors_in_link_events() {
    let yaml = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: r1
      subnet: 10.0.0.0/33
      nodes:
      - {name: n1}
    - name: r2
      subnet: 10.0.1.0/24
      nodes:
      - {name: n2}
events:
- {at: 1s, linkDown: [tor-r1, spine-zone-a-1]}
- {at: 2s, linkUp: [n1, tor-r1]}
- {at: 3s, linkDown: [tor-r1, spine-zone-a-7]}
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:7:15: topology.zones[0].racks[0].subnet: `10.0.0.0/33` is not a CIDR such as 10.0.0.0/16",
            "s.yaml:17:31: events[2].linkDown[1]: no device named `spine-zone-a-7`; did you mean `spine-zone-a-1`?",
        ],
    );
}

#[test]
fn bad_addresses_and_nodes_outside_their_rack() {
    let yaml = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: r4
      subnet: 10.7.0.0/16
      gateway: 10.7.0.300
      nodes:
      - {name: n1, ip: 10.8.0.1}
      - {name: n2, ip: not-an-ip}
      - {name: n3, ip: 10.7.0.1}
      - {name: n4, ip: 10.7.0.0}
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:8:16: topology.zones[0].racks[0].gateway: `10.7.0.300` is not an IP address",
            "s.yaml:10:24: topology.zones[0].racks[0].nodes[0].ip: 10.8.0.1 is outside the rack subnet 10.7.0.0/16",
            "s.yaml:11:24: topology.zones[0].racks[0].nodes[1].ip: `not-an-ip` is not an IP address",
            "s.yaml:12:24: topology.zones[0].racks[0].nodes[2].ip: 10.7.0.1 is the rack's gateway (the ToR's address)",
            "s.yaml:13:24: topology.zones[0].racks[0].nodes[3].ip: 10.7.0.0 is not a host address of 10.7.0.0/16",
        ],
    );
}

#[test]
fn a_duplicated_node_address_names_the_first_owner() {
    // (A generated or defaulted address skips explicit ones, so only two explicit ones clash.)
    let yaml =
        format!("{BASE}      - {{name: n3, ip: 10.0.0.9}}\n      - {{name: n4, ip: 10.0.0.9}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:12:24: topology.zones[0].racks[0].nodes[3]…: address 10.0.0.9 is already node `n3`'s (line 11, column 16)",
        ],
    );
}

#[test]
fn overlapping_rack_subnets_name_the_other_rack_and_where_it_is() {
    let yaml = "name: t
topology:
  zones:
  - name: zone-a
    racks:
    - name: r1
      subnet: 10.0.0.0/16
    - name: r2
      subnet: 10.0.128.0/24
  - name: zone-b
    racks:
    - {name: r3, subnet: 10.0.0.0/8}
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:9:15: topology.zones[0].racks[1].subnet: 10.0.128.0/24 overlaps 10.0.0.0/16 of rack `r1` (line 7, column 15)",
            "s.yaml:12:26: topology.zones[1].racks[0].subnet: 10.0.0.0/8 overlaps 10.0.0.0/16 of rack `r1` (line 7, column 15)",
            "s.yaml:12:26: topology.zones[1].racks[0].subnet: 10.0.0.0/8 overlaps 10.0.128.0/24 of rack `r2` (line 9, column 15)",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Names

#[test]
fn duplicate_names_share_one_namespace() {
    let yaml = format!(
        "{TWO_ZONES}  - name: n2
    racks:
    - name: rack-a1
      subnet: 10.2.0.0/24
      nodes:
      - {{name: n1}}
      - {{name: zone-b}}
      - {{name: tor-rack-b1}}
"
    );
    let shared = "zones, racks, nodes and devices share one namespace";
    assert_lines(
        &check(&yaml),
        &[
            &format!(
                "s.yaml:17:11: topology.zones[2].name: zone name `n2` is already used (line 10, column 16); {shared}"
            ),
            &format!(
                "s.yaml:19:13: topology.zones[2].racks[0]…: rack name `rack-a1` is already used (line 6, column 13); {shared}"
            ),
            &format!(
                "s.yaml:19:13: topology.zones[2].racks[0]…: device name `tor-rack-a1` is already used (line 6, column 13); {shared}"
            ),
            &format!(
                "s.yaml:22:16: topology.zones[2].racks[0].nodes[0]…: node name `n1` is already used (line 9, column 16); {shared}"
            ),
            &format!(
                "s.yaml:23:16: topology.zones[2].racks[0].nodes[1]…: node name `zone-b` is already used (line 11, column 11); {shared}"
            ),
            &format!(
                "s.yaml:24:16: topology.zones[2].racks[0].nodes[2]…: node name `tor-rack-b1` is already used (line 13, column 13); {shared}"
            ),
        ],
    );
}

/// Two zones of one name are one problem; their spines' names must not clash a second time.
#[test]
fn a_duplicate_zone_name_is_reported_once() {
    let yaml = format!(
        "{TWO_ZONES}  - name: zone-a\n    racks: [{{name: rack-c1, subnet: 10.2.0.0/24}}]\n"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:17:11: topology.zones[2].name: zone name `zone-a` is already used (line 4, column 11); zones, racks, nodes and devices share one namespace",
        ],
    );
}

#[test]
fn a_node_named_like_a_router_is_refused() {
    let yaml = format!("{TWO_ZONES}      - {{name: core}}\n      - {{name: spine-zone-a-1}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:17:16: topology.zones[1].racks[0].nodes[1].name: `core` is the name of a router podnet creates; choose another name",
            "s.yaml:18:16: topology.zones[1].racks[0].nodes[2].name: `spine-zone-a-1` is the name of a router podnet creates; choose another name",
        ],
    );
}

/// Every diagnostic's path names the field at its position.
#[test]
fn field_paths_name_the_field_at_the_reported_position() {
    let dup_ip =
        format!("{BASE}      - {{name: n3, ip: 10.0.0.9}}\n      - {{name: n4, ip: 10.0.0.9}}\n");
    assert_lines(
        &check(&dup_ip),
        &[
            "s.yaml:12:24: topology.zones[0].racks[0].nodes[3].ip: address 10.0.0.9 is already node `n3`'s (line 11, column 16)",
        ],
    );
    let dup_node = format!("{BASE}      - {{name: n1}}\n");
    assert_lines(
        &check(&dup_node),
        &[
            "s.yaml:11:16: topology.zones[0].racks[0].nodes[2].name: node name `n1` is already used (line 9, column 16); zones, racks, nodes and devices share one namespace",
        ],
    );
    // A node named like a router: at the node, not at `topology`.
    let core = format!("{TWO_ZONES}      - {{name: core}}\n");
    assert_lines(
        &check(&core),
        &["s.yaml:17:16: topology.zones[1].racks[0].nodes[1].name: …`core`…"],
    );
}

#[test]
fn scenario_names_are_lowercase() {
    let yaml = BASE.replace("name: t\n", "name: Bad_Name\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:1:7: name: `Bad_Name` must be 1-63 characters of lowercase letters, digits and `-`",
        ],
    );
}

#[test]
fn missing_required_fields() {
    assert_lines(
        &check("description: nothing else\n"),
        &[
            "s.yaml:1:1: missing required field `name`",
            "s.yaml:1:1: missing required field `topology`",
        ],
    );
    let no_subnet = "name: t
topology:
  zones:
  - racks:
    - name: r1
      nodes: [{name: n1}]
";
    assert_lines(
        &check(no_subnet),
        &[
            "s.yaml:4:5: topology.zones[0]: missing required field `name`",
            "s.yaml:5:7: topology.zones[0].racks[0]: missing required field `subnet`",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Ranges, AS numbers, durations

#[test]
fn out_of_range_values() {
    let yaml = "name: t
topology:
  fabric: {spinesPerZone: 0}
  zones:
  - name: zone-a
    racks:
    - name: r1
      subnet: 10.0.0.0/16
      nodes:
      - {name: n1, maxPods: 20000}
      - {namePrefix: w, count: 0}
network: {hostMtu: 100}
";
    assert_lines(
        &check(yaml),
        &[
            "s.yaml:3:27: topology.fabric.spinesPerZone: 0 is outside 1..=64",
            "s.yaml:10:29: topology.zones[0].racks[0].nodes[0].maxPods: 20000 is outside 0..=10000",
            "s.yaml:11:32: topology.zones[0].racks[0].nodes[1].count: 0 is outside 1..=100000",
            "s.yaml:12:20: network.hostMtu: 100 is outside 576..=65535",
        ],
    );
    let high = BASE.replace("topology:\n", "topology:\n  fabric: {spinesPerZone: 65}\n")
        + "network: {hostMtu: 70000}\n";
    assert_lines(
        &check(&high),
        &[
            "s.yaml:3:27: topology.fabric.spinesPerZone: 65 is outside 1..=64",
            "s.yaml:12:20: network.hostMtu: 70000 is outside 576..=65535",
        ],
    );
}

/// Zone A with 100 racks: the default AS of its 100th ToR (65100 + 1 + 99) is zone B's default
/// AS (65200). Zone C's explicit AS 65534 pushes its ToR's default to 65535, out of range.
fn as_layout(bgp: bool) -> String {
    let mut yaml = format!(
        "name: t\ntopology:\n  fabric: {{bgp: {bgp}}}\n  zones:\n  - name: zone-a\n    racks:\n"
    );
    for i in 1..=100 {
        yaml.push_str(&format!("    - {{name: r{i}, subnet: 10.0.{i}.0/24}}\n"));
    }
    // Lines 7..=106 are the racks; zone-b starts at line 107.
    yaml.push_str("  - name: zone-b\n    racks:\n    - {name: rb, subnet: 10.1.0.0/24}\n");
    yaml.push_str("  - name: zone-c\n    asNumber: 65534\n    racks:\n    - {name: rc, subnet: 10.2.0.0/24}\n");
    yaml
}

#[test]
fn default_as_collisions_and_overflows_need_an_explicit_as_with_fabric_bgp() {
    assert_lines(
        &check(&as_layout(true)),
        &[
            "s.yaml:106:7: topology.zones[0].racks[99]: the default AS 65200 of `tor-r100` collides with `zone-b` (line 107, column 5); set `asNumber` here explicitly",
            "s.yaml:107:5: topology.zones[1]: the default AS 65200 of `zone-b` collides with `tor-r100` (line 106, column 7); set `asNumber` here explicitly",
            "s.yaml:113:7: topology.zones[2].racks[0]: the default AS 65535 of `tor-rc` is outside the private range 64512-65534; set `asNumber` here explicitly",
        ],
    );
}

#[test]
fn default_as_errors_name_the_zone_or_rack() {
    assert_lines(
        &check(&as_layout(true)),
        &[
            "s.yaml:106:7: topology.zones[0].racks[99]: the default AS 65200 of `tor-r100` collides with `zone-b` (line 107, column 5); set `asNumber` here explicitly",
            "s.yaml:107:5: topology.zones[1]: the default AS 65200 of `zone-b` collides with `tor-r100` (line 106, column 7); set `asNumber` here explicitly",
            "s.yaml:113:7: topology.zones[2].racks[0]: the default AS 65535 of `tor-rc` is outside the private range 64512-65534; set `asNumber` here explicitly",
        ],
    );
}

#[test]
fn the_same_layout_without_fabric_bgp_is_valid() {
    assert_lines(&check(&as_layout(false)), &[]);
}

#[test]
fn durations_need_a_known_unit_and_at_most_24h() {
    let yaml = BASE.replace("name: t\n", "name: t\nuntil: 10\n").replace(
        "topology:\n",
        "topology:\n  fabric:\n    latency: {access: 10parsecs, fabric: 25h, interZone: 1.5s}\n",
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:2:8: until: a duration needs a unit: `10s`, `10ms`, `10us`, `10m` or `10h`",
            "s.yaml:5:23: topology.fabric.latency.access: `10parsecs` has an unknown unit `parsecs`; use ns, us, ms, s, m or h",
            "s.yaml:5:42: topology.fabric.latency.fabric: `25h` is longer than the limit of 24h",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// Events and expectations

#[test]
fn dangling_references_in_events() {
    let yaml = format!(
        "{TWO_ZONES}workloads: [{{name: web, replicas: 2}}]
events:
- {{at: 1s, nodeDown: n1x}}
- {{at: 1s, linkDown: [tor-rack-a1, spine-zone-a-9]}}
- {{at: 1s, linkDown: [n1, spine-zone-b-1]}}
- {{at: 1s, scale: {{workload: api, replicas: 3}}}}
- {{at: 1s, delete: {{kind: IPPool, name: extra}}}}
- {{at: 1s, deletePods: {{pod: api-0}}}}
- {{at: 1s, linkUp: [spine-zone-a-1, tor-rack-a1]}}
- {{at: 2s, deleteNode: n2}}
- {{at: 3s, nodeUp: n2}}
"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:19:22: events[0].nodeDown: no node named `n1x`; did you mean `n1`?",
            "s.yaml:20:36: events[1].linkDown[1]: no device named `spine-zone-a-9`; did you mean `spine-zone-a-1`?",
            "s.yaml:21:22: events[2].linkDown: there is no link between `n1` and `spine-zone-b-1`",
            "s.yaml:22:30: events[3].scale.workload: no workload `default/api`",
            "s.yaml:23:20: events[4].delete: no IPPool named `extra` is defined at this time",
            "s.yaml:24:30: events[5].deletePods.pod: no workload creates a pod named `api-0`",
            "s.yaml:27:20: events[8].nodeUp: node `n2` was deleted by an earlier event",
        ],
    );
}

#[test]
fn an_event_has_exactly_one_action() {
    let yaml = format!(
        "{BASE}events:\n- {{at: 1s, nodeDown: n1, nodeUp: n1}}\n- {{at: 1s}}\n- {{nodeUp: n1}}\n"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:12:3: events[0]: an event has exactly one action; this one has nodeDown, nodeUp",
            "s.yaml:13:3: events[1]: an event needs exactly one action: scale, nodeDown, nodeUp, restartBgp, deleteNode, addNodes, linkDown, linkUp, deletePods, apply, delete",
            "s.yaml:14:3: events[2]: missing required field `at`",
        ],
    );
}

#[test]
fn restart_bgp_needs_a_known_node_and_a_duration() {
    let yaml = format!(
        "{BASE}events:
- {{at: 1s, restartBgp: {{node: n1x, downFor: 30s}}}}
- {{at: 1s, restartBgp: {{node: n1}}}}
- {{at: 1s, restartBgp: {{node: n1, downFor: 0s}}}}
- {{at: 1s, restartBgp: {{node: n1, downFor: 3x}}}}
- {{at: 1s, restartBgp: {{node: n1, downFor: 1s, down: 2s}}}}
- {{at: 1s, restartBgp: n1}}
- {{at: 2s, deleteNode: n2}}
- {{at: 3s, restartBgp: {{node: n2, downFor: 1s}}}}
"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:12:31: events[0].restartBgp.node: no node named `n1x`; did you mean `n1`?",
            "s.yaml:13:24: events[1].restartBgp: missing required field `downFor`",
            "s.yaml:14:44: events[2].restartBgp.downFor: a restart takes some time: give a duration above 0",
            "s.yaml:15:44: events[3].restartBgp.downFor: `3x` has an unknown unit `x`; use ns, us, ms, s, m or h",
            "s.yaml:16:48: events[4].restartBgp.down: unknown field `down`; did you mean `downFor`?",
            "s.yaml:17:3: events[5]: an event needs exactly one action: …",
            "s.yaml:17:24: events[5].restartBgp: expected a mapping, found a string",
            "s.yaml:19:31: events[7].restartBgp.node: node `n2` was deleted by an earlier event",
        ],
    );
}

#[test]
fn dangling_references_in_expectations() {
    let yaml = format!(
        "{BASE}workloads: [{{name: web, replicas: 2}}]
expect:
- pod: {{name: db-0}}
- node: {{name: n9}}
- pool: {{name: nopool}}
- pods: {{of: {{workload: api}}, running: 1}}
- route: {{node: n1, prefix: 10.0.0.0/24, nextHop: tor-rack-a2}}
- pods: {{of: {{node: n1}}, running: 1}}
- pool: {{name: default-ipv4-ippool, allocated: {{atLeast: 0}}}}
"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:13:15: expect[0].pod.name: no workload can create a pod named `db-0` at any time of the run",
            "s.yaml:14:16: expect[1].node.name: no node or device named `n9` exists at any time of the run",
            "s.yaml:15:16: expect[2].pool.name: no pool named `nopool` is declared or applied by any event",
            "s.yaml:16:14: expect[3].pods.of: no workload `default/api`",
            "s.yaml:17:51: expect[4].route.nextHop: no node or device named `tor-rack-a2` exists at any time of the run; did you mean `tor-rack-a1`?",
        ],
    );
}

#[test]
fn an_expectation_has_exactly_one_kind() {
    let yaml = format!(
        "{BASE}workloads: [{{name: web}}]\nexpect:\n- {{pod: {{name: web-0}}, allocationFailures: 0}}\n- {{name: nothing}}\n"
    );
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:13:3: expect[0]: an expectation has exactly one kind; this one has pod, allocationFailures",
            "s.yaml:14:3: expect[1]: an expectation needs exactly one kind: pod, pods, pool, node, block, route, reachable, unreachable, isolated, policy, path, bgp, allocationFailures",
        ],
    );
}

/// Nodes added by an `addNodes` event exist at the end of the run, so expectations may name them.
#[test]
fn expectations_may_name_nodes_added_by_events() {
    let yaml = format!(
        "{BASE}events:\n- {{at: 1s, addNodes: {{rack: rack-a1, namePrefix: x, count: 2}}}}\nexpect:\n- node: {{name: x-1, blocks: {{atMost: 5}}}}\n"
    );
    assert_lines(&check(&yaml), &[]);
}

// ---------------------------------------------------------------------------------------------
// Every problem at once

#[test]
fn every_problem_of_a_file_is_reported_sorted_by_position() {
    let yaml = "name: Two_Zones
until: 90
topology:
  fabric: {spinesPerZone: 99, bgpp: true}
  zones:
  - name: zone-a
    racks:
    - name: r1
      subnet: 10.0.0.0/16
      nodes:
      - {name: n1, ip: 10.1.0.5}
    - name: r2
      subnet: 10.0.4.0/24
workloads: [{name: web, replicas: 3}]
events:
- {at: 1s, nodeDown: n7}
expect:
- pool: {name: nopool}
";
    let lines = check(yaml);
    assert_lines(
        &lines,
        &[
            "s.yaml:1:7: name: `Two_Zones` must be 1-63 characters of lowercase letters, digits and `-`",
            "s.yaml:2:8: until: a duration needs a unit: `90s`, `90ms`, `90us`, `90m` or `90h`",
            "s.yaml:4:27: topology.fabric.spinesPerZone: 99 is outside 1..=64",
            "s.yaml:4:31: topology.fabric.bgpp: unknown field `bgpp`; did you mean `bgp`?",
            "s.yaml:11:24: topology.zones[0].racks[0].nodes[0].ip: 10.1.0.5 is outside the rack subnet 10.0.0.0/16",
            "s.yaml:13:15: topology.zones[0].racks[1].subnet: 10.0.4.0/24 overlaps 10.0.0.0/16 of rack `r1` (line 9, column 15)",
            "s.yaml:16:22: events[0].nodeDown: no node named `n7`",
            "s.yaml:18:16: expect[0].pool.name: no pool named `nopool` is declared or applied by any event",
        ],
    );
    assert!(lines.len() >= 5);
}

// ---------------------------------------------------------------------------------------------
// Includes and manifests

#[test]
fn a_relative_include_appends_its_workloads_and_expectations() {
    let dir = fresh_dir();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("a.yaml"),
        format!("{BASE}workloads: [{{name: web, replicas: 2}}]\ninclude: [sub/b.yaml]\nexpect:\n- pods: {{of: {{workload: web}}, running: 2}}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("sub/b.yaml"),
        "workloads:\n- {name: db, replicas: 1}\nexpect:\n- pod: {name: db-0, status: Running}\n",
    )
    .unwrap();
    let s = podnet::scenario::load(&dir.join("a.yaml")).expect("valid with its include");
    let workloads: Vec<&str> = s.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(workloads, ["web", "db"]);
    let expectations: Vec<&str> = s.expectations.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(expectations, ["pods workload web", "pod db-0"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn expectation_names_come_from_their_content_not_their_position() {
    // JUnit test names must not change when an expectation is inserted above others: a name
    // is the given `name:`, else the kind, summary and `at:`; identical ones are numbered.
    let names = |expect: &str| -> Vec<String> {
        let text = format!("{BASE}workloads: [{{name: web, replicas: 2}}]\nexpect:\n{expect}");
        let s = podnet::scenario::load_str("names.yaml", &text).expect("valid");
        s.expectations.into_iter().map(|e| e.name).collect()
    };
    let before =
        names("- pods: {of: {workload: web}, running: 2}\n- {allocationFailures: 0, at: 1m30s}\n");
    let after = names(
        "- {name: first, allocationFailures: 0}\n- pods: {of: {workload: web}, running: 2}\n- {allocationFailures: 0, at: 1m30s}\n- {allocationFailures: 0, at: 1m30s}\n",
    );
    assert_eq!(before[..], after[1..3]);
    assert_eq!(after[0], "first");
    assert_eq!(after[3], format!("{} (2)", after[2]));
    assert!(after[2].ends_with(" at 1m30s"), "{after:?}");
}

#[test]
fn include_problems_point_into_the_right_file() {
    let cases: &[(Files, Lines)] = &[
        (
            &[(
                "a.yaml",
                "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24}]}]}\ninclude:\n- missing.yaml\n",
            )],
            &["a.yaml:4:3: …cannot read `missing.yaml`: no such file"],
        ),
        (
            &[
                (
                    "a.yaml",
                    "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24}]}]}\ninclude: [b.yaml]\n",
                ),
                ("b.yaml", "include: [a.yaml]\n"),
            ],
            &["b.yaml:1:11: include[0]: include cycle: a.yaml -> b.yaml -> a.yaml"],
        ),
        (
            &[
                (
                    "a.yaml",
                    "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24, nodes: [{name: n1}]}]}]}\ninclude: [b.yaml]\n",
                ),
                (
                    "b.yaml",
                    "workloads:\n- {name: db, replicas: x}\nevents:\n- {at: 1s, nodeDown: n9}\nzones: []\n",
                ),
            ],
            &[
                "b.yaml:2:24: workloads[0].replicas: expected an integer, found a string",
                "b.yaml:4:22: events[0].nodeDown: no node named `n9`",
                "b.yaml:5:1: zones: unknown field `zones`; expected one of: resources, workloads, events, expect, include",
            ],
        ),
        (
            &[
                (
                    "a.yaml",
                    "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24}]}]}\ninclude: [b.yaml]\n",
                ),
                ("b.yaml", "workloads: [\n"),
            ],
            &["b.yaml:2:1: invalid YAML: while parsing a node, did not find expected node content"],
        ),
        (
            &[(
                "a.yaml",
                "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24}]}]}\nmanifests: [calico/pools.yaml]\n",
            )],
            &["a.yaml:3:13: …cannot read `calico/pools.yaml`: no such file"],
        ),
    ];
    for (files, expected) in cases {
        assert_lines(&check_files(files), expected);
    }
}

#[test]
fn a_missing_include_or_manifest_is_reported_at_its_entry_path() {
    let topo = "name: t\ntopology: {zones: [{name: z, racks: [{name: r, subnet: 10.0.0.0/24}]}]}\n";
    assert_lines(
        &check_files(&[("a.yaml", &format!("{topo}include:\n- missing.yaml\n"))]),
        &["a.yaml:4:3: include[0]: cannot read `missing.yaml`: no such file"],
    );
    assert_lines(
        &check_files(&[("a.yaml", &format!("{topo}manifests: [calico/pools.yaml]\n"))]),
        &["a.yaml:3:13: manifests[0]: cannot read `calico/pools.yaml`: no such file"],
    );
}

/// The fixture files under tests/fixtures/validation/ load as the README promises.
#[test]
fn fixture_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validation");
    let prefix_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lines = load_lines(prefix_dir, &dir.join("include-cycle-a.yaml"));
    assert_lines(
        &lines,
        &[
            "tests/fixtures/validation/include-cycle-b.yaml:3:3: include[0]: include cycle: …include-cycle-a.yaml -> …include-cycle-b.yaml -> …include-cycle-a.yaml",
        ],
    );
    let lines = load_lines(prefix_dir, &dir.join("many-problems.yaml"));
    assert!(lines.len() >= 5, "{lines:#?}");
    let mut sorted = lines.clone();
    sorted.sort_by_key(|l| {
        let mut parts = l.split(':').skip(1);
        let line: u32 = parts.next().unwrap().parse().unwrap();
        let col: u32 = parts.next().unwrap().parse().unwrap();
        (line, col)
    });
    assert_eq!(lines, sorted);
}

// ---------------------------------------------------------------------------------------------
// Hostile input: refused quickly, with bounded memory, never a panic

/// Eleven levels of ten aliases each: 10^11 nodes if expanded.
fn alias_bomb() -> String {
    let mut bomb = String::from("name: t\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb
}

#[test]
fn an_alias_bomb_is_refused() {
    // Anchor a_k is s_k nodes (s_0 = 11, s_k = 1 + 10 s_(k-1)) and is charged twice: built,
    // and copied for its aliases. Before a5's line (line 7): 2 × (11 + 111 + 1,111 + 11,111 +
    // 111,111) = 246,930 nodes plus 13 for `name`, the keys and a5's list. Each alias of a4
    // costs 111,111, so the 7th makes it 246,943 + 7 × 111,111 = 1,024,720 > 1,000,000: the
    // 7th alias of line 7 starts at column 10 + 6 × 5 = 40.
    assert_lines(
        &check(&alias_bomb()),
        &[
            "s.yaml:7:40: the scenario's YAML expands to more than 1000000 nodes (aliases and every file read included); refusing it",
        ],
    );
}

#[test]
fn deep_nesting_is_refused() {
    let flow = format!("name: t\ntopology: {}\n", "[".repeat(100_000));
    assert_lines(
        &check_quickly(&flow),
        &["s.yaml:2:…: nesting deeper than 64 levels; refusing the document"],
    );
    let mut block = String::from("name: t\n");
    for depth in 0..1_000 {
        block.push_str(&" ".repeat(depth));
        block.push_str("a:\n");
    }
    assert_lines(
        &check_quickly(&block),
        &["s.yaml:66:65: nesting deeper than 64 levels; refusing the document"],
    );
}

#[test]
fn a_file_over_16_mib_is_refused_before_parsing() {
    let mut text = String::from("name: t\n# ");
    text.push_str(&"x".repeat(17 * 1024 * 1024));
    text.push('\n');
    let size = text.len();
    assert_lines(
        &check_quickly(&text),
        &[&format!(
            "s.yaml:1:1: `s.yaml` is {size} bytes, more than the limit of 16777216 bytes"
        )],
    );
}

#[test]
fn gigantic_counts_are_refused() {
    let yaml = format!("{BASE}      - {{namePrefix: w, count: 1000000000}}\n");
    assert_lines(
        &check_quickly(&yaml),
        &[
            "s.yaml:11:32: topology.zones[0].racks[0].nodes[2].count: 1000000000 is outside 1..=100000",
        ],
    );
    let pods = format!(
        "{BASE}workloads:\n- {{name: a, replicas: 1000000}}\n- {{name: b, replicas: 900000}}\n- {{name: c, replicas: 200000}}\n"
    );
    assert_lines(
        &check_quickly(&pods),
        &["s.yaml:14:23: workloads[2]: the workloads would create more than 2000000 pods"],
    );
    let until = format!("{BASE}until: 100000000h\n");
    assert_lines(
        &check_quickly(&until),
        &["s.yaml:11:8: until: `100000000h` is longer than the limit of 24h"],
    );
}

/// Generators that sum to more than the node limit are refused before building them.
#[test]
fn generators_summing_over_the_node_limit_are_refused_quickly() {
    let mut yaml = String::from("name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n");
    for i in 0..5 {
        yaml.push_str(&format!(
            "    - name: r{i}\n      subnet: 10.{i}.0.0/16\n      nodes: [{{namePrefix: w{i}, count: 25000}}]\n"
        ));
    }
    assert_lines(
        &check_quickly(&yaml),
        &[
            "s.yaml:20:39: topology.zones[0].racks[4].nodes[0].count: the topology would have more than 100000 nodes",
        ],
    );
}

/// Kubernetes label values are at most 63 characters; a 100,000-character selector-like value
/// is refused at its place.
#[test]
fn a_huge_label_value_is_refused() {
    let yaml = format!(
        "{BASE}      - name: n3\n        labels: {{sel: \"has(a) && {}\"}}\n",
        "(".repeat(100_000)
    );
    assert_lines(
        &check_quickly(&yaml),
        &["s.yaml:12:23: topology.zones[0].racks[0].nodes[2].labels.sel: …"],
    );
}

/// A label key's prefix is a DNS subdomain, whose parts begin and end with a letter or digit
/// (Kubernetes' `IsQualifiedName`): `-example.com/app` is refused as a node label, as it is in
/// a SpiderIPPool's `matchLabels` (`model::label` checks both).
#[test]
fn a_label_key_prefix_beginning_with_a_dash_is_refused() {
    // BASE ends at line 10; the label map opens at column 17 of line 12, so the key is at 18.
    let yaml = format!("{BASE}      - name: n3\n        labels: {{-example.com/app: x}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:12:18: topology.zones[0].racks[0].nodes[2].labels.-example.com/app: \
             `-example.com/app` is not a valid label key: the prefix before `/` must be a \
             lowercase DNS subdomain of at most 253 characters, such as `example.com`",
        ],
    );
}

/// A 100,000-parenthesis selector in a resource must not overflow the selector parser's stack.
#[test]
fn a_huge_selector_does_not_crash() {
    let yaml = format!(
        "{BASE}resources:\n- apiVersion: projectcalico.org/v3\n  kind: IPPool\n  metadata: {{name: p}}\n  spec: {{cidr: 10.9.0.0/16, nodeSelector: \"{}\"}}\n",
        "(".repeat(100_000)
    );
    let lines = check_quickly(&yaml);
    for line in &lines {
        assert!(line.starts_with("s.yaml:15:"), "{line}");
    }
}

#[test]
fn a_broken_rack_subnet_does_not_make_its_nodes_unknown() {
    // The subnet is the one mistake: the event and the expectation naming n1 must not add
    // "no node named `n1`" errors of their own.
    let yaml = BASE.replace("10.0.0.0/24", "10.0.0.0/33")
        + "events:\n- {at: 1m, nodeDown: n1}\nexpect:\n- pods: {of: {node: n1}, running: 0}\n";
    let lines = check(&yaml);
    assert_lines(
        &lines,
        &["s.yaml:7:15: topology.zones[0].racks[0].subnet: …"],
    );
}

/// `network.windowsHns` is one of three layouts (the nearest suggested), and may not
/// contradict Calico's `windowsUseSingleNetwork` when both are written.
#[test]
fn windows_hns_is_a_known_layout_that_agrees_with_windows_use_single_network() {
    let yaml = format!("{BASE}network: {{windowsHns: multi-subnets}}\n");
    assert_lines(
        &check(&yaml),
        &["s.yaml:11:23: network.windowsHns: …multi-subnet…"],
    );
    let yaml =
        format!("{BASE}network: {{windowsUseSingleNetwork: true, windowsHns: multi-subnet}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:11:54: network.windowsHns: `multi-subnet` contradicts windowsUseSingleNetwork: true (write one of them)",
        ],
    );
    let agreeing = format!(
        "{BASE}network: {{windowsUseSingleNetwork: false, windowsHns: network-per-block}}\n"
    );
    assert_lines(&check(&agreeing), &[]);
}

/// `network.windowsReservation` is one of three models; the micro-pool ones need the
/// multi-subnet HNS layout, and `windowsReservedAddresses` is only theirs, in range.
#[test]
fn windows_reservation_needs_multi_subnet_and_a_count_in_range() {
    let yaml = format!("{BASE}network: {{windowsReservation: per-hosts}}\n");
    assert_lines(
        &check(&yaml),
        &["s.yaml:11:31: network.windowsReservation: …per-host…"],
    );
    let yaml = format!("{BASE}network: {{windowsReservation: per-host}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:11:31: network.windowsReservation: `per-host` needs windowsHns: multi-subnet (in `single-network` every block is an HNS subnet whose gateway is its reserved second address)",
        ],
    );
    let yaml = format!("{BASE}network: {{windowsReservedAddresses: 3}}\n");
    assert_lines(
        &check(&yaml),
        &[
            "s.yaml:11:37: network.windowsReservedAddresses: only with windowsReservation: per-host or per-pool (per-block reserves Calico's first three and last address of every block)",
        ],
    );
    let yaml = format!(
        "{BASE}network: {{windowsHns: multi-subnet, windowsReservation: per-host, windowsReservedAddresses: 0}}\n"
    );
    assert_lines(
        &check(&yaml),
        &["s.yaml:11:93: network.windowsReservedAddresses: 0 is outside 1..=16 for `per-host`"],
    );
    let yaml = format!(
        "{BASE}network: {{windowsHns: multi-subnet, windowsReservation: per-pool, windowsReservedAddresses: 17}}\n"
    );
    assert_lines(
        &check(&yaml),
        &["s.yaml:11:93: network.windowsReservedAddresses: 17 is outside 0..=16 for `per-pool`"],
    );
    let fine = format!(
        "{BASE}network: {{windowsHns: multi-subnet, windowsReservation: per-pool, windowsReservedAddresses: 0}}\n"
    );
    assert_lines(&check(&fine), &[]);
}
