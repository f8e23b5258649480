//! IP address management: Calico's block IPAM and Spiderpool's pool IPAM.
//!
//! Both are synchronous, deterministic state machines driven by the simulator: it asks for
//! addresses when pods start, releases them when pods go, and reads the state for reports.
//! Neither knows about time beyond the `SimTime` it is handed, nor about scheduling or routes.

pub mod calico;
pub mod ranges;
pub mod spiderpool;
