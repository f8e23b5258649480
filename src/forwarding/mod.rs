//! Forwarding: FIBs with longest-prefix match, hop-by-hop packet walks with encapsulation,
//! and all-pairs reachability by equivalence classes (SPEC §3.5, REFERENCE §5).
//!
//! The simulator builds a [`Dataplane`] for an instant with [`Dataplane::builder`]: the
//! builder derives connected, default and fabric routes from the topology, and takes pools,
//! pods, blackholes and learned routes as plain data (this layer does not depend on BGP, IPAM
//! or the engine). Then [`walk::trace`] follows one packet, and [`reach::all_pairs`] /
//! [`reach::reachability`] count reachable pod pairs and group the others by reason.
//!
//! - `fib`: entries, layered tables (shared + per-device overlay), LPM (prefix-trie).
//! - `dataplane`: the builder, next-hop resolution, encapsulation decisions, underlay state.
//! - `walk`: one packet, hop by hop.
//! - `reach`: every pair, by forwarding equivalence classes.
//! - `connect`: a new connection with network policy: sender's egress, the walk, receiver's
//!   ingress.
//! - `service`: a connection to a Service's cluster IP: kube-proxy's DNAT, then `connect`.
//! - `advertise`: which Service addresses each node advertises over BGP.
//! - `service_entry`: a connection from an external to an advertised Service address.
//! - `external`: connections to and from places outside the cluster (natOutgoing SNAT,
//!   replies routed back).
//!
//! Architecture invariant: nothing here mutates simulation state or fails on input; a dropped
//! packet is a [`Verdict`] with a [`Reason`], never an `Err`.

pub mod advertise;
pub mod connect;
mod dataplane;
pub mod ecmp;
pub mod external;
pub mod fib;
pub mod policy_reach;
pub mod reach;
pub mod service;
pub mod service_entry;
pub mod walk;

#[cfg(test)]
pub(crate) mod testutil;

pub use dataplane::{
    Attachment, Dataplane, DataplaneBuilder, DataplaneMemo, ExternalInfo, PodInfo, PoolEncap,
    SharedTableId,
};
pub use fib::{Encap, FibAction, FibEntry, Origin, PodKey};
pub use reach::{Reachability, UnreachableGroup, all_pairs, reachability};
pub use walk::{HOP_LIMIT, Hop, Outer, Reason, Source, Trace, Verdict, trace};
