//! `podnet policy`: the policies and profiles that apply to one pod, per direction, in
//! evaluation order, and the rules that select it as a peer (as `calicoq endpoint` does).

use serde_json::json;

use super::common::with_state_at;
use super::{Format, PolicyArgs, exit};
use crate::model::TextEnum;
use crate::policy::eval::{Endpoint, Engine};
use crate::policy::model::{Direction, Policy};

pub fn run(args: &PolicyArgs) -> i32 {
    with_state_at(
        &args.scenario,
        args.at.as_deref(),
        |scenario, world, snap| {
            let Some((ns, name)) = args.pod.split_once('/') else {
                eprintln!("--pod: give the pod as NAMESPACE/NAME");
                return exit::INVALID;
            };
            let Some(row) = snap
                .pods
                .iter()
                .find(|p| *p.namespace == *ns && p.name == name)
            else {
                eprintln!(
                    "--pod: no pod `{}` at {}",
                    args.pod,
                    crate::report::sections::time(snap.time_us)
                );
                return exit::INVALID;
            };
            let endpoints = crate::sim::policy::endpoints(world, &scenario.workloads);
            let Some(endpoint) = endpoints.get(&row.key) else {
                let host_network = world
                    .cluster
                    .find(&args.pod)
                    .is_some_and(|id| world.cluster.pod(id).host_network);
                let why = if host_network {
                    "a hostNetwork pod: Calico makes none, and its traffic is its node's"
                } else {
                    "it has no address"
                };
                eprintln!("--pod: `{}` has no workload endpoint ({why})", args.pod);
                return exit::INVALID;
            };
            let mut engine = Engine::new(&world.policy);
            engine.know_endpoints(endpoints.values());
            let view = View::of(&engine, endpoint);
            match args.format {
                Format::Text => out!("{}", view.text(&args.pod, snap.time_us)),
                Format::Json => outln!(
                    "{}",
                    serde_json::to_string_pretty(&view.json(&args.pod, snap.time_us))
                        .unwrap_or_default()
                ),
            }
            exit::OK
        },
    )
}

/// One applying policy: tier, order, qualified name, staged or not.
struct Row {
    tier: String,
    order: Option<f64>,
    name: String,
}

struct View {
    ingress: Vec<Row>,
    egress: Vec<Row>,
    profiles: [String; 2],
    peer_of: Vec<String>,
    enforced: bool,
}

impl View {
    fn of(engine: &Engine<'_>, e: &Endpoint) -> View {
        let set = engine.set();
        let order_of = |qualified: &str| -> Option<f64> {
            set.policies()
                .find(|p: &&Policy| p.qualified_name() == qualified)
                .and_then(|p| p.order)
        };
        let rows = |d: Direction| -> Vec<Row> {
            engine
                .applicable(e, d)
                .into_iter()
                .map(|(tier, name)| Row {
                    order: order_of(&name),
                    tier,
                    name,
                })
                .collect()
        };
        let peer_of = engine
            .peer_rules(e)
            .into_iter()
            .map(|(tier, policy, d, i, end)| {
                format!(
                    "tier {tier}: {policy} {} rule {i} {}",
                    d.as_str().to_lowercase(),
                    end.as_str()
                )
            })
            .collect();
        View {
            ingress: rows(Direction::Ingress),
            egress: rows(Direction::Egress),
            profiles: Engine::profiles(e),
            peer_of,
            enforced: set.has_enforced_policy(),
        }
    }

    fn order_text(order: Option<f64>) -> String {
        order.map_or("none".to_string(), |o| o.to_string())
    }

    fn text(&self, pod: &str, time_us: u64) -> String {
        let mut out = format!(
            "policy of {pod} at {}\n",
            crate::report::sections::time(time_us)
        );
        if !self.enforced {
            out.push_str("no policy is enforced in this scenario at this time\n");
        }
        for (d, rows) in [("ingress", &self.ingress), ("egress", &self.egress)] {
            out.push_str(&format!("{d}:\n"));
            if rows.is_empty() {
                out.push_str("  no policy applies\n");
            }
            for (i, r) in rows.iter().enumerate() {
                out.push_str(&format!(
                    "  {}. tier {}  order {}  {}\n",
                    i + 1,
                    r.tier,
                    Self::order_text(r.order),
                    r.name
                ));
            }
            out.push_str(&format!(
                "  then profiles: {} (allows), {} (labels only)\n",
                self.profiles[0], self.profiles[1]
            ));
        }
        out.push_str("selected as a peer by:\n");
        if self.peer_of.is_empty() {
            out.push_str("  no rule\n");
        }
        for p in &self.peer_of {
            out.push_str(&format!("  {p}\n"));
        }
        out
    }

    fn json(&self, pod: &str, time_us: u64) -> serde_json::Value {
        let rows = |rows: &[Row]| {
            rows.iter()
                .map(|r| json!({"tier": r.tier, "order": r.order, "policy": r.name}))
                .collect::<Vec<_>>()
        };
        json!({
            "pod": pod,
            "timeUs": time_us,
            "enforced": self.enforced,
            "ingress": rows(&self.ingress),
            "egress": rows(&self.egress),
            "profiles": self.profiles,
            "peerOf": self.peer_of,
        })
    }
}
