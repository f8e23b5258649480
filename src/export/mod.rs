//! `podnet export`: the configuration the real systems would hold for a simulated cluster at
//! an instant (SPEC §1).
//!
//! - [`bird`]: per Calico node, the BIRD 2 configuration Calico's confd templates render for it;
//!   per fabric router, an operator's BIRD 2 configuration for podnet's fabric model.
//!
//! Invariants: pure — the world and a snapshot come in, text comes out; nothing here reads or
//! writes files (`cli::export` does). The same world gives the same text, byte for byte.
//! - [`hns`]: per Windows node, the HNS.V2 PowerShell that builds its HNS objects at an
//!   instant, or the sequence of changes the run made.

pub mod bird;
pub mod hns;
