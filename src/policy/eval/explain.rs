//! What a check decided and why: the deciding tier, policy and rule ([`DecidedBy`]), and, when
//! asked for, every step of the evaluation ([`Step`]) with the criterion each rule missed on,
//! as `podnet trace` prints it.
//!
//! Invariants: asking for no explanation (`()` as [`Explain`]) builds no step at all, so the
//! fast path allocates nothing. What this is not: no evaluation.

use super::*;

/// Who decided a check.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DecidedBy {
    /// Rule `index` (0-based) of `policy` in `tier`, with its action (Allow or Deny).
    Rule {
        tier: String,
        policy: String,
        index: usize,
        action: Action,
    },
    /// Nothing in a fixed tier (`default`, the admin and baseline tiers) acted: its Deny.
    EndOfTier { tier: String },
    /// Nothing in a user Tier acted and its `defaultAction` is Deny.
    TierDefault { tier: String },
    /// Every applicable tier passed (or none applied) and the profile allows.
    Profile { profile: String },
    /// No profile allows: on Windows, a Pass out of the last tier when the default tier
    /// applied (HNS appends no profile then).
    NoProfile,
}

impl DecidedBy {
    /// The word SPEC §7 uses for the `rule` field: the index, `end-of-tier`, `tier-default`,
    /// `no-profile`, or the profile's name.
    pub fn rule_text(&self) -> String {
        match self {
            DecidedBy::Rule { index, .. } => index.to_string(),
            DecidedBy::EndOfTier { .. } => "end-of-tier".to_string(),
            DecidedBy::TierDefault { .. } => "tier-default".to_string(),
            DecidedBy::Profile { profile } => profile.clone(),
            DecidedBy::NoProfile => "no-profile".to_string(),
        }
    }

    pub fn tier(&self) -> Option<&str> {
        match self {
            DecidedBy::Rule { tier, .. }
            | DecidedBy::EndOfTier { tier }
            | DecidedBy::TierDefault { tier } => Some(tier),
            _ => None,
        }
    }

    pub fn policy(&self) -> Option<&str> {
        match self {
            DecidedBy::Rule { policy, .. } => Some(policy),
            _ => None,
        }
    }
}

impl fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecidedBy::Rule {
                tier,
                policy,
                index,
                action,
            } => write!(f, "tier {tier}: {policy} rule {index} ({action})"),
            DecidedBy::EndOfTier { tier } => write!(f, "end of tier {tier}"),
            DecidedBy::TierDefault { tier } => write!(f, "default action of tier {tier}"),
            DecidedBy::Profile { profile } => write!(f, "profile {profile}"),
            DecidedBy::NoProfile => f.write_str("no profile (Windows: Pass out of the last tier)"),
        }
    }
}

/// The outcome of one check at one endpoint in one direction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Outcome {
    pub allowed: bool,
    pub by: DecidedBy,
}

/// Which end of the connection a rule criterion looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Source,
    Destination,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Source => "source",
            End::Destination => "destination",
        }
    }
}

/// Why a rule did not match (the first criterion that failed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    Protocol,
    NotProtocol,
    Icmp,
    NotIcmp,
    Nets(End),
    NotNets(End),
    /// The rule selects endpoints and that end is an address no workload endpoint owns.
    NotAnEndpoint(End),
    Namespace(End),
    Selector(End),
    NotSelector(End),
    ServiceAccount(End),
    Ports(End),
    NotPorts(End),
    Services(End),
}

/// One step of an explanation, in evaluation order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// No non-staged policy of the tier selects the endpoint in this direction.
    TierSkipped {
        tier: String,
    },
    /// A policy applies to the endpoint.
    Policy {
        tier: String,
        policy: String,
    },
    RuleMissed {
        index: usize,
        action: Action,
        miss: Miss,
        /// The criterion, as written (selector, nets, ports…), for the text.
        detail: String,
    },
    /// Windows: HNS cannot express the rule, so it is left out.
    RuleSkipped {
        index: usize,
        action: Action,
        why: &'static str,
    },
    RuleMatched {
        index: usize,
        action: Action,
    },
    /// No rule of the policy acted.
    PolicyDone {
        policy: String,
    },
    /// The tier ended without a decision and its default action ran.
    TierEnd {
        tier: String,
        action: TierAction,
    },
    Decided(Outcome),
}

/// Where explanation steps go: nowhere (the fast path) or a list.
pub trait Explain {
    fn step(&mut self, make: impl FnOnce() -> Step);
}

impl Explain for () {
    #[inline]
    fn step(&mut self, _: impl FnOnce() -> Step) {}
}

impl Explain for Vec<Step> {
    fn step(&mut self, make: impl FnOnce() -> Step) {
        self.push(make());
    }
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The criterion a miss names, as written in the rule.
pub(super) fn criterion_text(rule: &Rule, miss: &Miss) -> String {
    let entity = |end: &End| match end {
        End::Source => &rule.source,
        End::Destination => &rule.destination,
    };
    let opt = |s: &Option<crate::model::selector::Selector>| {
        s.as_ref().map_or(String::new(), ToString::to_string)
    };
    match miss {
        Miss::Protocol => format!(
            "protocol {}",
            rule.protocol.map_or(String::new(), |p| p.to_string())
        ),
        Miss::NotProtocol => format!(
            "notProtocol {}",
            rule.not_protocol.map_or(String::new(), |p| p.to_string())
        ),
        Miss::Icmp => format!("icmp {:?}", rule.icmp),
        Miss::NotIcmp => format!("notICMP {:?}", rule.not_icmp),
        Miss::Nets(e) => format!("{} nets [{}]", e.as_str(), list(&entity(e).nets)),
        Miss::NotNets(e) => format!("{} notNets [{}]", e.as_str(), list(&entity(e).not_nets)),
        Miss::NotAnEndpoint(e) => format!(
            "{} selects workload endpoints; the address is none",
            e.as_str()
        ),
        Miss::Namespace(e) => match &entity(e).namespace_selector {
            Some(s) => format!("{} namespaceSelector {s}", e.as_str()),
            None => format!("{} limited to the policy's namespace", e.as_str()),
        },
        Miss::Selector(e) => format!("{} selector {}", e.as_str(), opt(&entity(e).selector)),
        Miss::NotSelector(e) => {
            format!(
                "{} notSelector {}",
                e.as_str(),
                opt(&entity(e).not_selector)
            )
        }
        Miss::ServiceAccount(e) => format!("{} serviceAccounts", e.as_str()),
        Miss::Ports(e) => format!("{} ports [{}]", e.as_str(), list(&entity(e).ports)),
        Miss::NotPorts(e) => format!("{} notPorts [{}]", e.as_str(), list(&entity(e).not_ports)),
        Miss::Services(e) => match &entity(e).services {
            Some(s) => format!("{} services {}/{}", e.as_str(), s.namespace, s.name),
            None => format!("{} services", e.as_str()),
        },
    }
}

/// The explanation as text lines, one per step.
pub fn explain_lines(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .map(|s| match s {
            Step::TierSkipped { tier } => format!("tier {tier}: no policy applies, skipped"),
            Step::Policy { tier, policy } => format!("tier {tier}: policy {policy} applies"),
            Step::RuleMissed {
                index,
                action,
                detail,
                ..
            } => format!("  rule {index} ({action}): no match, {detail}"),
            Step::RuleSkipped { index, action, why } => {
                format!("  rule {index} ({action}): skipped on Windows, {why}")
            }
            Step::RuleMatched { index, action } => match action {
                Action::Log => format!("  rule {index} (Log): matched, logged, continuing"),
                Action::Pass => format!("  rule {index} (Pass): matched, on to the next tier"),
                _ => format!("  rule {index} ({action}): matched"),
            },
            Step::PolicyDone { policy } => format!("  {policy}: no rule acted"),
            Step::TierEnd { tier, action } => {
                format!("tier {tier}: nothing acted, default action {action}")
            }
            Step::Decided(o) => format!(
                "=> {} by {}",
                if o.allowed { "allowed" } else { "denied" },
                o.by
            ),
        })
        .collect()
}
