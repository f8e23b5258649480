//! The report's network policy section: what the policies in force select and decide, the
//! rules that never act, the pods no policy selects, and the connectivity table (SPEC §7).
//!
//! Built from [`Report::policy`] and [`Report::connectivity`] only; bounded like every other
//! section (long lists are cut with a line saying how many rows report.json holds besides).
//! There is no section when no policy is enforced.

use super::Report;
use super::sections::{Block, LIST_LIMIT, Section, Table, Tone, count};

pub fn section(report: &Report) -> Option<Section> {
    let audit = report.policy.as_ref()?;
    let mut blocks = Vec::new();
    let tiers: std::collections::BTreeSet<&str> =
        audit.policies.iter().map(|p| p.tier.as_str()).collect();
    let mut intro = format!(
        "{} enforced in {}.",
        plural(audit.policies.len(), "policy", "policies"),
        plural(tiers.len(), "tier", "tiers"),
    );
    if !audit.staged.is_empty() {
        intro.push_str(&format!(
            " {} loaded and not enforced.",
            plural(
                audit.staged.len(),
                "staged policy is",
                "staged policies are"
            )
        ));
    }
    intro.push_str(
        " A rule “acts” for a pod pair when evaluation reaches it and it matches a packet; \
         it is “shadowed” when it would match but earlier rules, policies or tiers always \
         decide first; “unmatched” rules match no traffic between pods (they may match \
         traffic to or from outside the cluster).",
    );
    blocks.push(Block::Paragraph(intro));

    let mut table = Table::new(&[
        ("tier", false),
        ("policy", false),
        ("pods selected", true),
        ("rules acting", true),
        ("shadowed", true),
        ("unmatched", true),
    ]);
    for p in audit.policies.iter().take(LIST_LIMIT) {
        let with = |status: &str| p.rules.iter().filter(|r| r.status == status).count();
        let (shadowed, unmatched) = (with("shadowed"), with("unmatched"));
        table.push_toned(
            vec![
                p.tier.clone(),
                p.name.clone(),
                count(p.selected_pods),
                count(with("acts")),
                count(shadowed),
                count(unmatched),
            ],
            if p.selected_pods == 0 || shadowed > 0 {
                Tone::Bad
            } else {
                Tone::Plain
            },
        );
    }
    blocks.push(Block::Subheading(
        "Policies in evaluation order".to_string(),
    ));
    blocks.push(Block::Table(table));
    more(&mut blocks, audit.policies.len(), "policies");

    let mut findings: Vec<String> = audit
        .unused_policies
        .iter()
        .map(|p| format!("{p} selects no pod"))
        .collect();
    findings.extend(
        audit
            .shadowed_rules
            .iter()
            .map(|r| format!("{r} is shadowed: it never acts")),
    );
    findings.extend(
        audit
            .unmatched_rules
            .iter()
            .map(|r| format!("{r} matches no traffic between pods")),
    );
    if !findings.is_empty() {
        let n = findings.len();
        findings.truncate(LIST_LIMIT);
        blocks.push(Block::Subheading("Unused policies and rules".to_string()));
        blocks.push(Block::List(findings));
        more(&mut blocks, n, "findings");
    }

    if !audit.unselected.is_empty() {
        let mut table = Table::new(&[
            ("workload", false),
            ("pods", true),
            ("no ingress policy", true),
            ("no egress policy", true),
        ]);
        for u in audit.unselected.iter().take(LIST_LIMIT) {
            table.push(vec![
                u.workload.clone(),
                count(u.pods),
                count(u.no_ingress_policy),
                count(u.no_egress_policy),
            ]);
        }
        blocks.push(Block::Subheading("Pods no policy selects".to_string()));
        blocks.push(Block::Table(table));
        more(&mut blocks, audit.unselected.len(), "workloads");
    }

    if let Some(rows) = &report.connectivity {
        // Restricted pairs first: they are what a reader looks for.
        let mut ordered: Vec<_> = rows.iter().filter(|c| c.allowed != "all").collect();
        ordered.extend(rows.iter().filter(|c| c.allowed == "all"));
        let mut table = Table::new(&[
            ("from", false),
            ("to", false),
            ("pod pairs", true),
            ("policy allows", false),
            ("also, for some pairs", false),
        ]);
        for c in ordered.iter().take(LIST_LIMIT) {
            table.push_toned(
                vec![
                    c.from.clone(),
                    c.to.clone(),
                    count(c.pairs),
                    c.allowed.clone(),
                    c.allowed_for_some.clone().unwrap_or_default(),
                ],
                if c.allowed == "none" && c.allowed_for_some.is_none() {
                    Tone::Bad
                } else {
                    Tone::Plain
                },
            );
        }
        blocks.push(Block::Subheading(
            "Connectivity between workloads".to_string(),
        ));
        blocks.push(Block::Paragraph(
            "What the sender's egress and the receiver's ingress policy both allow; whether \
             the fabric delivers is the reachability section's answer."
                .to_string(),
        ));
        blocks.push(Block::Table(table));
        more(&mut blocks, rows.len(), "workload pairs");
    }
    Some(Section {
        title: "Network policy",
        id: "policy",
        blocks,
    })
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", count(n))
    }
}

fn more(blocks: &mut Vec<Block>, total: usize, what: &str) {
    if total > LIST_LIMIT {
        blocks.push(Block::Paragraph(format!(
            "{} more {what} are not listed; report.json has them all.",
            count(total - LIST_LIMIT)
        )));
    }
}
