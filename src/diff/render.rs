//! The human renderings of a [`Diff`]: plain text for a terminal, Markdown for a pull-request
//! comment (the verdict and the headline numbers first, every section collapsed in
//! `<details>`). JSON is the `Diff` itself, through serde.
//!
//! Both renderings read the same [`Section`]s, so they cannot disagree; a section lists at
//! most [`SHOWN`] items and says how many more there are (JSON has them all).

use super::{Change, Diff, FieldChange};
use crate::report::sections::{count, percent, time};

/// Items listed per section in text and Markdown.
pub const SHOWN: usize = 20;

struct Section {
    title: String,
    lines: Vec<String>,
}

fn arrow<T: std::fmt::Display>(c: &Change<T>) -> String {
    if c.base.to_string() == c.new.to_string() {
        c.base.to_string()
    } else {
        format!("{} → {}", c.base, c.new)
    }
}

fn counts(c: &Change<usize>) -> String {
    arrow(&Change {
        base: count(c.base),
        new: count(c.new),
    })
}

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

fn optc<T: std::fmt::Display>(c: &Change<Option<T>>) -> String {
    arrow(&Change {
        base: opt(&c.base),
        new: opt(&c.new),
    })
}

/// The verdict line: what regressed (by `--fail-on`), or that nothing did.
pub fn verdict(diff: &Diff) -> String {
    let failing: Vec<&str> = diff
        .regressions
        .iter()
        .filter(|r| diff.fail_on.contains(&r.kind))
        .map(|r| r.what.as_str())
        .collect();
    if !failing.is_empty() {
        format!("REGRESSED: {}", failing.join("; "))
    } else if diff.is_empty() {
        "no difference".to_string()
    } else {
        "no regression".to_string()
    }
}

/// The headline numbers, one line per area.
fn summary(diff: &Diff) -> Vec<String> {
    let p = &diff.pods;
    let i = &diff.ipam;
    let r = &diff.reachability;
    let mut out = vec![
        format!(
            "pods: {} ({} running, {} pending), allocation failures {}",
            counts(&p.count),
            counts(&p.running),
            counts(&p.pending),
            counts(&p.allocation_failures)
        ),
        format!(
            "ipam: blocks {}, borrowed addresses {}, nodes at their block limit {}",
            counts(&i.blocks),
            counts(&i.borrowed),
            counts(&i.nodes_at_block_limit)
        ),
    ];
    if let Some(b) = &diff.bgp {
        out.push(format!(
            "bgp: sessions Established {} of {}, UPDATEs {}, convergence {}",
            counts(&b.established),
            counts(&b.sessions),
            arrow(&Change {
                base: count(b.updates.base),
                new: count(b.updates.new)
            }),
            arrow(&Change {
                base: time(b.convergence_time_us.base),
                new: time(b.convergence_time_us.new)
            })
        ));
    }
    let share = |d: u64, p: u64| percent(u128::from(d), u128::from(p));
    out.push(format!(
        "reachability: {} of {} pod pairs delivered ({})",
        arrow(&Change {
            base: count(r.delivered.base),
            new: count(r.delivered.new)
        }),
        arrow(&Change {
            base: count(r.pairs.base),
            new: count(r.pairs.new)
        }),
        arrow(&Change {
            base: share(r.delivered.base, r.pairs.base),
            new: share(r.delivered.new, r.pairs.new)
        })
    ));
    if !diff.expectations.is_empty() {
        let newly = diff
            .expectations
            .iter()
            .filter(|e| e.passed.new == Some(false))
            .count();
        out.push(format!(
            "expectations: {} hold on one side only ({newly} newly failing)",
            diff.expectations.len()
        ));
    }
    out
}

fn fields(f: &[FieldChange]) -> String {
    f.iter()
        .map(|f| format!("{} {} → {}", f.field, f.base, f.new))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sections(diff: &Diff) -> Vec<Section> {
    let mut out = Vec::new();
    let mut push = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            out.push(Section {
                title: format!("{title} ({})", count(lines.len())),
                lines,
            });
        }
    };
    let p = &diff.pods;
    push(
        "pods that became Pending",
        p.newly_pending
            .iter()
            .map(|(pod, reason)| format!("{pod}: {reason}"))
            .collect(),
    );
    push(
        "pods that changed",
        p.changed
            .iter()
            .map(|c| format!("{}: {}", c.pod, fields(&c.fields)))
            .collect(),
    );
    push(
        "pods on one side only",
        p.removed
            .iter()
            .map(|n| format!("{n}: base only"))
            .chain(p.added.iter().map(|n| format!("{n}: new only")))
            .collect(),
    );
    push(
        "allocation failures",
        p.allocation_failures_gained
            .iter()
            .map(|n| format!("{n}: refused an address (new)"))
            .chain(
                p.allocation_failures_lost
                    .iter()
                    .map(|n| format!("{n}: no longer refused")),
            )
            .collect(),
    );
    let r = &diff.reachability;
    let cell = |c: &super::CellChange, side: &str| {
        let failures = c
            .failures
            .iter()
            .map(|f| {
                format!(
                    "{} {} at {}, e.g. {} → {}",
                    count(f.count),
                    f.reason,
                    f.stopped_at,
                    f.example.0,
                    f.example.1
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        format!(
            "{} → {}: {} pairs ({} of {} delivered); {side}: {failures}",
            c.from,
            c.to,
            count(c.count),
            arrow(&Change {
                base: count(c.delivered.base),
                new: count(c.delivered.new)
            }),
            arrow(&Change {
                base: count(c.pairs.base),
                new: count(c.pairs.new)
            }),
        )
    };
    let by = match r.grouping {
        super::Grouping::Workload => "by workload",
        super::Grouping::Namespace => "by namespace",
        super::Grouping::All => "all pods",
    };
    push(
        &format!("pod pairs that became unreachable, {by}"),
        r.became_unreachable
            .iter()
            .map(|c| cell(c, "new"))
            .collect(),
    );
    push(
        &format!("pod pairs that became reachable, {by}"),
        r.became_reachable.iter().map(|c| cell(c, "base")).collect(),
    );
    push(
        "per port and protocol",
        r.packets
            .iter()
            .map(|c| {
                format!(
                    "{} → {} {}: delivered pairs {}",
                    c.from,
                    c.to,
                    c.packet,
                    arrow(&c.delivered)
                )
            })
            .collect(),
    );
    let i = &diff.ipam;
    push(
        "IPAM per node",
        i.nodes
            .iter()
            .map(|n| {
                let limit = match (n.block_limit_reached.base, n.block_limit_reached.new) {
                    (false, true) => ", block limit reached",
                    (true, false) => ", block limit no longer reached",
                    _ => "",
                };
                format!(
                    "{}: blocks {}, borrowed {}{limit}",
                    n.node,
                    arrow(&n.blocks),
                    arrow(&n.borrowed)
                )
            })
            .collect(),
    );
    push(
        "IPAM per pool",
        i.pools
            .iter()
            .map(|p| {
                let util = |a: Option<u64>, c: Option<u128>| match (a, c) {
                    (Some(a), Some(c)) => percent(u128::from(a), c),
                    _ => "-".to_string(),
                };
                format!(
                    "{}: blocks {}, allocated {} of {} ({})",
                    p.pool,
                    optc(&p.blocks),
                    optc(&p.allocated),
                    optc(&p.capacity),
                    arrow(&Change {
                        base: util(p.allocated.base, p.capacity.base),
                        new: util(p.allocated.new, p.capacity.new)
                    })
                )
            })
            .collect(),
    );
    if let Some(b) = &diff.bgp {
        push(
            "BGP sessions",
            b.session_changes
                .iter()
                .map(|s| {
                    let why = match (&s.state.new, &s.reason.new) {
                        (Some(_), Some(reason)) => format!(" ({reason})"),
                        _ => String::new(),
                    };
                    let state = match (s.state.base, s.state.new) {
                        (None, Some(n)) => format!("gained, {n}"),
                        (Some(b), None) => format!("lost (was {b})"),
                        _ => optc(&s.state),
                    };
                    format!("{} – {}: {state}{why}", s.a, s.b)
                })
                .collect(),
        );
        push(
            "routes per node (Loc-RIB, FIB)",
            b.nodes
                .iter()
                .map(|n| {
                    format!(
                        "{}: rib {}, fib {}",
                        n.node,
                        optc(&n.rib_routes),
                        optc(&n.fib_routes)
                    )
                })
                .collect(),
        );
        let prefix =
            |p: &super::PrefixChange| format!("{} (speakers {})", p.prefix, arrow(&p.speakers));
        push(
            "prefixes that appeared",
            b.prefixes_appeared.iter().map(prefix).collect(),
        );
        push(
            "prefixes that disappeared",
            b.prefixes_disappeared.iter().map(prefix).collect(),
        );
        push(
            "prefixes held by a different number of speakers",
            b.prefixes_spread_changed.iter().map(prefix).collect(),
        );
    }
    push(
        "expectations that hold on one side only",
        diff.expectations
            .iter()
            .map(|e| {
                let verdict = |v: Option<bool>| match v {
                    Some(true) => "PASS",
                    Some(false) => "FAIL",
                    None => "absent",
                };
                format!(
                    "{}: {} → {} (expected {}; got {})",
                    e.name,
                    verdict(e.passed.base),
                    verdict(e.passed.new),
                    e.expected,
                    optc(&e.actual)
                )
            })
            .collect(),
    );
    out
}

fn shown(lines: &[String]) -> (&[String], usize) {
    let n = lines.len().min(SHOWN);
    (&lines[..n], lines.len() - n)
}

fn heading(diff: &Diff) -> String {
    let seed = if diff.base.seed == diff.new.seed {
        format!("seed {}", diff.base.seed)
    } else {
        format!("seeds {} and {}", diff.base.seed, diff.new.seed)
    };
    format!(
        "podnet diff: {} ({}) → {} ({}), {seed}",
        diff.base.source, diff.base.scenario, diff.new.source, diff.new.scenario
    )
}

/// For a terminal.
pub fn text(diff: &Diff) -> String {
    let mut out = format!("{}\n{}\n", heading(diff), verdict(diff));
    for line in summary(diff) {
        out.push_str(&format!("  {line}\n"));
    }
    for s in sections(diff) {
        out.push_str(&format!("{}:\n", s.title));
        let (lines, more) = shown(&s.lines);
        for line in lines {
            out.push_str(&format!("  {line}\n"));
        }
        if more > 0 {
            out.push_str(&format!(
                "  … and {} more (--format json lists all)\n",
                count(more)
            ));
        }
    }
    out
}

/// Markdown text: `|`, `*`, `_`, backticks and angle brackets would be read as markup.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '|' | '*' | '_' | '`' | '<' | '>' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// For a pull-request comment: the verdict and the summary, then each section collapsed.
pub fn markdown(diff: &Diff) -> String {
    let icon = if diff.regressed { "❌" } else { "✅" };
    let mut out = format!(
        "### {icon} {}\n\n{}\n\n",
        md(&verdict(diff)),
        md(&heading(diff))
    );
    for line in summary(diff) {
        out.push_str(&format!("- {}\n", md(&line)));
    }
    for s in sections(diff) {
        out.push_str(&format!(
            "\n<details><summary>{}</summary>\n\n",
            md(&s.title)
        ));
        let (lines, more) = shown(&s.lines);
        for line in lines {
            out.push_str(&format!("- {}\n", md(line)));
        }
        if more > 0 {
            out.push_str(&format!("- … and {} more\n", count(more)));
        }
        out.push_str("\n</details>\n");
    }
    out
}
