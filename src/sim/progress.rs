//! How far a running simulation has got, for a progress line on a terminal: the phase, the
//! simulated time reached and the events processed, published through atomics that another
//! thread reads.
//!
//! Invariants: the simulation only writes here, never reads, so a run with progress is the
//! same run as one without; the values are monotone snapshots, not a synchronisation point
//! (relaxed atomics: a reader may see a phase a moment late).
//!
//! What it is not: the drawing of the line (the CLI's), nor a log.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// What a run is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Reading and validating the scenario.
    Loading = 0,
    /// Building the world: addresses of the nodes, BGP peering plan, placement.
    Setup,
    /// Scheduling pods and assigning their addresses (Calico IPAM runs in the CNI ADD).
    Scheduling,
    /// IPAM's own work: garbage collection, datastore routes.
    Ipam,
    /// BGP sessions and UPDATEs.
    Bgp,
    /// A scenario event (apply, scale, node or link down/up).
    Events,
    /// Capturing a snapshot: FIBs and all-pairs reachability.
    Reachability,
    /// Writing the reports.
    Reports,
}

impl Phase {
    const ALL: [Phase; 8] = [
        Phase::Loading,
        Phase::Setup,
        Phase::Scheduling,
        Phase::Ipam,
        Phase::Bgp,
        Phase::Events,
        Phase::Reachability,
        Phase::Reports,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Loading => "loading",
            Phase::Setup => "setup",
            Phase::Scheduling => "scheduling",
            Phase::Ipam => "IPAM",
            Phase::Bgp => "BGP",
            Phase::Events => "events",
            Phase::Reachability => "reachability",
            Phase::Reports => "reports",
        }
    }
}

/// The published state of one run.
#[derive(Debug, Default)]
pub struct Progress {
    phase: AtomicU8,
    sim_time_us: AtomicU64,
    events: AtomicU64,
}

/// What a reader sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressView {
    pub phase: Phase,
    pub sim_time_us: u64,
    pub events: u64,
}

impl Progress {
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// One more event processed, at `sim_time_us`, in `phase`.
    pub fn event(&self, phase: Phase, sim_time_us: u64) {
        self.set_phase(phase);
        self.sim_time_us.store(sim_time_us, Ordering::Relaxed);
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    pub fn view(&self) -> ProgressView {
        let phase = self.phase.load(Ordering::Relaxed);
        ProgressView {
            phase: Phase::ALL
                .get(usize::from(phase))
                .copied()
                .unwrap_or(Phase::Loading),
            sim_time_us: self.sim_time_us.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_sees_what_was_published() {
        let p = Progress::default();
        assert_eq!(p.view().phase, Phase::Loading);
        for phase in Phase::ALL {
            p.set_phase(phase);
            assert_eq!(p.view().phase, phase);
        }
        p.event(Phase::Bgp, 5_000_000);
        p.event(Phase::Scheduling, 7_000_000);
        assert_eq!(
            p.view(),
            ProgressView {
                phase: Phase::Scheduling,
                sim_time_us: 7_000_000,
                events: 2
            }
        );
    }
}
