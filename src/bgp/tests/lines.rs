//! Log lines are only written down (`BgpEngine::keep_lines`): an engine that keeps none
//! does exactly what one that keeps them does — same events, same RIBs, same instants of
//! activity — and its log stays empty.

use super::*;

/// A mesh of four nodes through a crash, hold-timer detection and recovery; what the engine
/// did: events handled, UPDATEs sent, the last activity and every node's Loc-RIB.
fn mesh_through_a_crash(kept: bool) -> (usize, u64, SimTime, Vec<Vec<RibEntry>>, usize) {
    let mut net = Net::new(
        one_rack(4),
        &BgpConfig::default(),
        &[],
        TimerProfile::CalicoBird,
    );
    net.engine.keep_lines(kept);
    // The start's connect lines were written before the switch.
    net.engine.log();
    for i in 0..4 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.run_until(secs(10));
    let d = net.dev("r0n3");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.settle();
    let evs = net.engine.speaker_up(net.now, d);
    net.push(evs);
    net.settle();
    let ribs = (0..4)
        .map(|i| net.engine.loc_rib(net.dev(&format!("r0n{i}"))))
        .collect();
    let lines = net.log.len() + net.engine.log().len();
    (
        net.handled,
        net.engine.total_updates(),
        net.engine.last_activity(),
        ribs,
        lines,
    )
}

#[test]
fn an_engine_keeping_no_lines_does_the_same_and_writes_none() {
    let (handled, updates, last, ribs, lines) = mesh_through_a_crash(true);
    // Six sessions up, then r0n3's three down and up again: lines of every kind.
    assert!(lines > 20, "{lines} lines");
    let quiet = mesh_through_a_crash(false);
    assert_eq!(quiet, (handled, updates, last, ribs, 0));
}
