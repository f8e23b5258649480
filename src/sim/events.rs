//! The event log of a run (`events.jsonl`, SPEC §6): how much of it is kept (`--events`) and
//! where it goes — held in memory (tests, `podnet sweep`'s callers that read it), streamed to
//! a writer line by line as the events happen (`podnet run`), or dropped (`podnet check`).
//!
//! Invariants: the level and the destination only decide what is written down, never what
//! happens — the simulation records every event the same way whatever the log keeps, so the
//! run, its end and every snapshot are the same at every level. A streamed line is the same
//! bytes [`crate::report::events_jsonl`] writes for the same entry. Streaming holds one
//! buffer, never the log: memory does not grow with the number of events.
//!
//! What it is not: the BGP engine's own choice of which lines to build at all
//! ([`crate::bgp::LogOptions`]); [`EventLevel::bgp_options`] derives that from the level.

use std::io::{self, BufWriter, Write};

use super::LogEntry;
use crate::bgp::LogOptions;

/// How much of the event log a run keeps (`podnet run --events`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventLevel {
    /// No lines.
    None,
    /// Everything but the per-UPDATE and per-route BGP lines (`update`, `bestPathChanged`,
    /// `routeRejected`): pods, IPAM, scenario events, sessions and speakers. Grows with the
    /// number of pods, nodes and sessions, not with nodes² as the route lines do; the
    /// default of `podnet run`.
    #[default]
    Sessions,
    /// Every line.
    All,
}

impl EventLevel {
    /// The BGP lines the engine needs to build for this level.
    pub fn bgp_options(self) -> LogOptions {
        let all = self == EventLevel::All;
        LogOptions {
            updates: all,
            routes: all,
        }
    }

    /// Whether a line of this kind is kept at this level.
    pub fn keeps(self, kind: &str) -> bool {
        match self {
            EventLevel::None => false,
            EventLevel::Sessions => !ROUTE_KINDS.contains(&kind),
            EventLevel::All => true,
        }
    }
}

/// Log kinds that record a scenario event (SPEC §2.5 `events`): `addNode` per node of
/// `addNodes`; `podDeleted` with the outcome "deleted" stands for `deletePods` (scaling down
/// deletes pods too, but `scale` records that).
const SCENARIO_EVENT_KINDS: [&str; 9] = [
    "scale",
    "nodeDown",
    "nodeUp",
    "deleteNode",
    "addNode",
    "linkDown",
    "linkUp",
    "apply",
    "delete",
];

/// Whether a log line records a scenario event. Every log keeps these aside, whatever its
/// level and destination ([`EventsWritten::scenario_events`]): the time charts mark them.
pub fn is_scenario_event(entry: &LogEntry) -> bool {
    SCENARIO_EVENT_KINDS.contains(&entry.kind)
        || (entry.kind == "podDeleted" && entry.outcome == "deleted")
}

/// The per-UPDATE and per-route BGP line kinds: n² of them in an n-node cluster.
pub const ROUTE_KINDS: [&str; 3] = ["update", "bestPathChanged", "routeRejected"];

/// Where kept lines go.
enum Sink {
    Discard,
    Memory(Vec<LogEntry>),
    Stream {
        out: BufWriter<Box<dyn Write>>,
        /// The first write error; later lines are dropped.
        error: Option<io::Error>,
    },
}

/// The event log of one run: a level and a destination, and how many lines it kept.
pub struct EventLog {
    level: EventLevel,
    sink: Sink,
    lines: usize,
    /// Scenario events' lines, whatever the level and sink.
    scenario_events: Vec<LogEntry>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sink = match &self.sink {
            Sink::Discard => "discard",
            Sink::Memory(_) => "memory",
            Sink::Stream { .. } => "stream",
        };
        f.debug_struct("EventLog")
            .field("level", &self.level)
            .field("sink", &sink)
            .field("lines", &self.lines)
            .finish()
    }
}

impl EventLog {
    /// Every line, held in memory ([`super::Outcome::log`]).
    pub fn memory(level: EventLevel) -> EventLog {
        EventLog {
            level,
            sink: Sink::Memory(Vec::new()),
            lines: 0,
            scenario_events: Vec::new(),
        }
    }

    /// No line kept anywhere (the run is the same; only the count of lines is lost).
    pub fn discard() -> EventLog {
        EventLog {
            level: EventLevel::None,
            sink: Sink::Discard,
            lines: 0,
            scenario_events: Vec::new(),
        }
    }

    /// The lines of `level`, written to `out` as JSON lines as they happen, through a buffer.
    pub fn stream(level: EventLevel, out: Box<dyn Write>) -> EventLog {
        EventLog {
            level,
            sink: Sink::Stream {
                out: BufWriter::with_capacity(1 << 16, out),
                error: None,
            },
            lines: 0,
            scenario_events: Vec::new(),
        }
    }

    pub fn level(&self) -> EventLevel {
        self.level
    }

    /// Whether a line of `kind` would be kept, or recorded as a scenario event: when not,
    /// [`EventLog::push`] would leave no trace of it, so it need not be built at all.
    pub fn wants(&self, kind: &str) -> bool {
        self.level.keeps(kind) || SCENARIO_EVENT_KINDS.contains(&kind) || kind == "podDeleted"
    }

    /// Keeps `entry` if the level keeps its kind, and aside if it records a scenario event.
    pub fn push(&mut self, entry: LogEntry) {
        if is_scenario_event(&entry) {
            self.scenario_events.push(entry.clone());
        }
        if !self.level.keeps(entry.kind) {
            return;
        }
        self.lines += 1;
        match &mut self.sink {
            Sink::Discard => {}
            Sink::Memory(v) => v.push(entry),
            Sink::Stream { out, error } => {
                if error.is_none() {
                    let written = serde_json::to_writer(&mut *out, &entry)
                        .map_err(io::Error::from)
                        .and_then(|()| out.write_all(b"\n"));
                    if let Err(e) = written {
                        *error = Some(e);
                    }
                }
            }
        }
    }

    /// Ends the log: flushes a stream. The lines held in memory (empty unless
    /// [`EventLog::memory`]), how many lines were kept, and the first write error.
    pub fn finish(self) -> (Vec<LogEntry>, EventsWritten) {
        let lines = self.lines;
        let (log, error) = match self.sink {
            Sink::Discard => (Vec::new(), None),
            Sink::Memory(v) => (v, None),
            Sink::Stream { mut out, error } => {
                let error = match error {
                    Some(e) => Some(e),
                    None => out.flush().err(),
                };
                (Vec::new(), error.map(|e| e.to_string()))
            }
        };
        (
            log,
            EventsWritten {
                lines,
                error,
                scenario_events: self.scenario_events,
            },
        )
    }
}

/// What the event log of a finished run kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventsWritten {
    /// Lines kept (in memory or written).
    pub lines: usize,
    /// The first error writing a streamed log, if any.
    pub error: Option<String>,
    /// The scenario events' lines, kept at every level (time-chart markers).
    pub scenario_events: Vec<LogEntry>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn entry(time_us: u64, kind: &'static str) -> LogEntry {
        LogEntry {
            time_us,
            kind,
            subject: format!("s{time_us}"),
            outcome: "o \"quoted\"".to_string(),
            block: None,
        }
    }

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::other("disk full"))
        }
    }

    const KINDS: [&str; 6] = [
        "podScheduled",
        "update",
        "sessionEstablished",
        "bestPathChanged",
        "routeRejected",
        "blockClaimed",
    ];

    #[test]
    fn levels_keep_what_they_say() {
        // Sessions drops exactly the three route kinds; All keeps the six; None keeps nothing.
        for (level, kept) in [
            (EventLevel::None, 0),
            (EventLevel::Sessions, 3),
            (EventLevel::All, 6),
        ] {
            let mut log = EventLog::memory(level);
            for (i, k) in KINDS.iter().enumerate() {
                log.push(entry(i as u64, k));
            }
            let (entries, written) = log.finish();
            assert_eq!(entries.len(), kept, "{level:?}");
            assert_eq!(written.lines, kept, "{level:?}");
            assert!(entries.iter().all(|e| level.keeps(e.kind)));
        }
        assert_eq!(
            EventLevel::Sessions.bgp_options(),
            LogOptions {
                updates: false,
                routes: false
            }
        );
        assert_eq!(EventLevel::All.bgp_options(), LogOptions::default());
    }

    #[test]
    fn a_discarded_log_wants_only_scenario_events() {
        // `check` discards the log: a pod's placement lines need no outcome written out,
        // but scenario events are still recorded (`podDeleted` is one when its outcome is
        // "deleted", so its outcome is always wanted).
        let discard = EventLog::discard();
        assert!(!discard.wants("podScheduled"));
        assert!(!discard.wants("podAddressed"));
        assert!(discard.wants("nodeDown"));
        assert!(discard.wants("podDeleted"));
        // A level that keeps a kind wants it; Sessions keeps pod lines, not route lines.
        let sessions = EventLog::memory(EventLevel::Sessions);
        assert!(sessions.wants("podScheduled"));
        assert!(!sessions.wants("bestPathChanged"));
        assert!(EventLog::memory(EventLevel::All).wants("bestPathChanged"));
    }

    #[test]
    fn a_line_not_wanted_would_leave_no_trace() {
        // `Simulation::record` skips building the lines `wants` refuses: pushing one must
        // keep nothing, at every level, whatever its outcome (`podDeleted` "deleted" is a
        // scenario event, so `podDeleted` is always wanted).
        let kinds = KINDS.iter().chain(SCENARIO_EVENT_KINDS.iter()).chain(
            [
                "podCreated",
                "podScheduled",
                "podAddressed",
                "podPending",
                "podDeleted",
            ]
            .iter(),
        );
        for level in [EventLevel::None, EventLevel::Sessions, EventLevel::All] {
            for kind in kinds.clone() {
                for outcome in ["deleted", "evicted", "created"] {
                    let mut log = EventLog::memory(level);
                    if log.wants(kind) {
                        continue;
                    }
                    log.push(LogEntry {
                        outcome: outcome.to_string(),
                        ..entry(1, kind)
                    });
                    let (entries, written) = log.finish();
                    assert!(entries.is_empty(), "{level:?} {kind} {outcome}");
                    assert_eq!(written.lines, 0, "{level:?} {kind} {outcome}");
                    assert!(written.scenario_events.is_empty(), "{level:?} {kind}");
                }
            }
        }
    }

    #[test]
    fn a_stream_writes_the_bytes_events_jsonl_writes() {
        let buffer = Shared::default();
        let mut log = EventLog::stream(EventLevel::All, Box::new(buffer.clone()));
        let entries: Vec<LogEntry> = KINDS
            .iter()
            .enumerate()
            .map(|(i, k)| entry(i as u64, k))
            .collect();
        for e in &entries {
            log.push(e.clone());
        }
        let (held, written) = log.finish();
        assert!(held.is_empty(), "a stream holds nothing");
        assert_eq!(written.lines, entries.len());
        assert_eq!(written.error, None);
        let bytes = buffer.0.lock().expect("not poisoned").clone();
        assert_eq!(
            String::from_utf8(bytes).expect("UTF-8"),
            crate::report::events_jsonl(&entries)
        );
    }

    #[test]
    fn a_write_error_is_kept_not_panicked() {
        let mut log = EventLog::stream(EventLevel::All, Box::new(Broken));
        // More than the buffer holds, so the writer is reached before the flush.
        for i in 0..5_000 {
            log.push(entry(i, "podScheduled"));
        }
        let (_, written) = log.finish();
        assert_eq!(written.error.as_deref(), Some("disk full"));
    }
}
