//! `podnet sweep --emit-job`: a sweep as a Kubernetes Indexed Job, the scheduler users
//! already have, instead of one of podnet's own.
//!
//! The manifest is a `v1` List (JSON, which `kubectl apply -f` reads as YAML) of a ConfigMap
//! holding the scenario file and a `batch/v1` Job in `Indexed` completion mode: `completions`
//! shards, each pod running `podnet sweep ... --shard $(JOB_COMPLETION_INDEX)/N`. The index
//! comes from the pod's `batch.kubernetes.io/job-completion-index` annotation through the
//! downward API (declared in `env`, so `$(...)` expands in `args`). Results go to a
//! PersistentVolumeClaim as `shard-I.json`, or to each pod's stdout (`kubectl logs`). A pod
//! exits 0 once its rows are written, so a failed expectation is not a failed pod; the
//! verdict is `podnet sweep merge`'s.
//! What this is not: no cluster access; the scenario must be one self-contained file (its
//! `include:` and `manifests:` files are not in the ConfigMap).

use std::path::Path;

use serde_json::{Value, json};

use super::{SweepArgs, exit};
use crate::scenario;

/// Shards when `--shards` is not given: one per variant, at most this many.
const DEFAULT_SHARDS: usize = 10;

/// Prints the manifest; exit 2 when the scenario cannot be read or is invalid.
pub fn emit(args: &SweepArgs, path: &Path, variants: usize) -> i32 {
    let loaded = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}\n", path.display()))
        .and_then(|text| {
            scenario::load(path)
                .map(|s| (s.name, text))
                .map_err(|d| d.to_string())
        });
    let (name, text) = match loaded {
        Ok(x) => x,
        Err(message) => {
            eprint!("{message}");
            return exit::INVALID;
        }
    };
    let shards = args
        .shards
        .map_or(variants.clamp(1, DEFAULT_SHARDS), |n| n as usize);
    if shards == 0 {
        eprintln!("--shards: at least 1");
        return exit::INVALID;
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario.yaml".to_string());
    let manifest = manifest(&Job {
        name: &name,
        file: &file,
        scenario_text: &text,
        sets: &args.set,
        expect: &args.expect,
        shards,
        parallelism: args.parallelism.map_or(shards, |p| p as usize),
        image: args
            .image
            .clone()
            .unwrap_or_else(|| format!("podnet:{}", env!("CARGO_PKG_VERSION"))),
        results_claim: args.results_claim.as_deref(),
    });
    outln!(
        "{}",
        serde_json::to_string_pretty(&manifest).unwrap_or_default()
    );
    exit::OK
}

struct Job<'a> {
    /// The scenario's name (`[a-z0-9-]+`, SPEC §2): the objects are `podnet-sweep-<name>`.
    name: &'a str,
    file: &'a str,
    scenario_text: &'a str,
    sets: &'a [String],
    expect: &'a [String],
    shards: usize,
    parallelism: usize,
    image: String,
    results_claim: Option<&'a str>,
}

/// Kubernetes object names here are label values too (`job-name`): at most 63 characters,
/// not ending in `-`.
fn object_name(scenario: &str) -> String {
    let mut name: String = format!("podnet-sweep-{scenario}")
        .chars()
        .take(63)
        .collect();
    while name.ends_with('-') {
        name.pop();
    }
    name
}

fn manifest(job: &Job<'_>) -> Value {
    let name = object_name(job.name);
    let mut args: Vec<String> = vec!["sweep".into(), format!("/scenario/{}", job.file)];
    for set in job.sets {
        args.push("--set".into());
        args.push(set.clone());
    }
    for expect in job.expect {
        args.push("--expect".into());
        args.push(expect.clone());
    }
    args.push("--shard".into());
    args.push(format!("$(JOB_COMPLETION_INDEX)/{}", job.shards));
    let mut mounts = vec![json!({"name": "scenario", "mountPath": "/scenario", "readOnly": true})];
    let mut volumes = vec![json!({"name": "scenario", "configMap": {"name": name}})];
    if let Some(claim) = job.results_claim {
        args.push("--out".into());
        args.push("/results/shard-$(JOB_COMPLETION_INDEX).json".into());
        mounts.push(json!({"name": "results", "mountPath": "/results"}));
        volumes.push(json!({"name": "results", "persistentVolumeClaim": {"claimName": claim}}));
    }
    let labels = json!({"app.kubernetes.io/name": "podnet", "podnet/scenario": job.name});
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": labels},
                "data": {job.file: job.scenario_text}
            },
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "completionMode": "Indexed",
                    "completions": job.shards,
                    "parallelism": job.parallelism,
                    // A shard exits 0 with its rows written, so a failure is a lost node
                    // or pod: one retry per shard.
                    "backoffLimit": job.shards,
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{
                                "name": "podnet",
                                "image": job.image,
                                "command": ["podnet"],
                                "args": args,
                                "env": [{
                                    "name": "JOB_COMPLETION_INDEX",
                                    "valueFrom": {"fieldRef": {"fieldPath":
                                        "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
                                }],
                                "volumeMounts": mounts
                            }],
                            "volumes": volumes
                        }
                    }
                }
            }
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_a_label_value() {
        assert_eq!(object_name("block-limit"), "podnet-sweep-block-limit");
        let long = object_name(&"a-".repeat(40));
        assert!(long.len() <= 63 && !long.ends_with('-'), "{long}");
    }
}
