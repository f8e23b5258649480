//! podnet: a deterministic discrete-event simulator of Kubernetes pod networking.
//!
//! An architect describes a cluster (zones, racks, nodes, fabric), the Calico and Spiderpool
//! resources they intend to apply, the workloads and the failures they fear; podnet simulates
//! scheduling, IP address management, BGP and forwarding and answers whether every pod gets an
//! address, which routes each node holds, and whether pod A reaches pod B.
//!
//! The layers, lowest first (a module only uses the ones above it in this list):
//! - [`model`]: ids, simulated time, labels, selectors, the topology graph.
//! - [`policy`]: network policy as Calico sees it: tiers, policies, rules, the set in force.
//! - [`hns`]: what a Windows node's Host Networking Service holds for its blocks.
//! - [`scenario`]: YAML → located raw types → validated model (the only parser of input).
//! - [`sim`]: the event queue, seeded random streams and the engine loop.
//! - [`report`]: the results as plain data, and their renderings.
//! - [`diff`]: the semantic difference between two runs (`podnet diff`).
//! - [`cli`]: subcommands; the only code that touches files, stdout and exit codes.
//!
//! ```
//! let scenario = podnet::scenario::load_str("inline.yaml", r#"
//! name: tiny
//! topology:
//!   zones:
//!   - name: z
//!     racks:
//!     - name: r
//!       subnet: 10.0.0.0/24
//!       nodes: [{namePrefix: n, count: 3}]
//! "#).expect("valid scenario");
//! assert_eq!(scenario.topology.nodes.len(), 3);
//! ```

pub mod bgp;
pub mod cli;
pub mod diff;
pub mod export;
pub mod forwarding;
pub mod hns;
pub mod ipam;
pub mod model;
pub mod policy;
pub mod report;
pub mod scenario;
pub mod sim;
