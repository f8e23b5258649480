//! Fixtures shared by the report tests.

use crate::model::topology::{LinkKind, Topology};

/// Zone z with racks r1 (nodes a-1, a-2) and r2 (node b-1), its first fabric link down.
pub fn two_racks_one_fabric_link_down() -> Topology {
    const TWO_RACKS: &str = r#"
name: tiny
topology:
  zones:
  - name: z
    racks:
    - {name: r1, subnet: 10.0.1.0/24, nodes: [{namePrefix: a, count: 2}]}
    - {name: r2, subnet: 10.0.2.0/24, nodes: [{namePrefix: b, count: 1}]}
"#;
    let mut topo = crate::scenario::load_str("tiny.yaml", TWO_RACKS)
        .expect("valid")
        .topology;
    let link = topo
        .links
        .iter()
        .position(|l| l.kind == LinkKind::Fabric)
        .expect("a fabric link");
    topo.links[link].up = false;
    topo
}
