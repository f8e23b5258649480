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
//!
//! The ConfigMap holds every file the scenario reads — the scenario, its `include:` files and
//! every file of its `manifests:` — under keys ConfigMap allows (`[-._a-zA-Z0-9]+`), and the
//! volume's `items` put each back at its path relative to the files' deepest common folder,
//! so the relative paths written in the scenario resolve inside the pod as they do here.
//! Invariant: a key-to-path `path` never holds `..` (the API refuses it), which is why the
//! mount root is the common folder, not the scenario's own.
//! What this is not: no cluster access; files larger together than a ConfigMap holds (1 MiB)
//! are refused, not split.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{SweepArgs, exit};
use crate::scenario;

/// Shards when `--shards` is not given: one per variant, at most this many.
const DEFAULT_SHARDS: usize = 10;

/// What a ConfigMap holds at most: etcd's limit on one object (the API reference: "The data
/// stored in a ConfigMap cannot exceed 1 MiB").
const CONFIGMAP_BYTES: usize = 1 << 20;

/// Prints the manifest; exit 2 when the scenario cannot be read, is invalid, or its files
/// do not fit in one ConfigMap.
pub fn emit(args: &SweepArgs, path: &Path, variants: usize) -> i32 {
    let packed = scenario::load(path)
        .map_err(|d| d.to_string())
        .and_then(|s| {
            let files: Vec<&Path> = s.sources.paths().collect();
            pack(path, &files).map(|p| (s.name, p))
        });
    let (name, packed) = match packed {
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
    let manifest = manifest(&Job {
        name: &name,
        packed: &packed,
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

/// The scenario's files as the ConfigMap holds them.
#[derive(Debug, PartialEq)]
struct Packed {
    /// The scenario file's path under the mount root (`/`-separated).
    scenario: String,
    /// `(key, path under the mount root, text)`, in the order the loader read them.
    files: Vec<(String, String, String)>,
}

/// Reads every file of the scenario (the loader's list, `scenario` first) and names each one
/// by a ConfigMap key and its path under the files' deepest common folder.
fn pack(scenario: &Path, read: &[&Path]) -> Result<Packed, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the current folder: {e}\n"))?;
    let mut seen = BTreeSet::new();
    let absolute: Vec<(PathBuf, &Path)> = std::iter::once(scenario)
        .chain(read.iter().copied())
        .map(|p| (lexical(&cwd.join(p)), p))
        .filter(|(a, _)| seen.insert(a.clone()))
        .collect();
    let root = absolute
        .iter()
        .filter_map(|(a, _)| a.parent())
        .fold(None::<PathBuf>, |acc, dir| {
            Some(match acc {
                None => dir.to_path_buf(),
                Some(acc) => common(&acc, dir),
            })
        })
        .unwrap_or_default();
    let mut keys = BTreeSet::new();
    let mut files = Vec::new();
    let mut bytes = 0;
    for (abs, shown) in &absolute {
        let text =
            std::fs::read_to_string(abs).map_err(|e| format!("{}: {e}\n", shown.display()))?;
        bytes += text.len();
        let under: Vec<String> = abs
            .strip_prefix(&root)
            .unwrap_or(abs)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let under = under.join("/");
        files.push((key(&under, &mut keys), under, text));
    }
    if bytes > CONFIGMAP_BYTES {
        return Err(format!(
            "{}: --emit-job: the scenario's {} files hold {bytes} bytes; one ConfigMap holds at \
             most {CONFIGMAP_BYTES} (1 MiB)\n",
            scenario.display(),
            files.len()
        ));
    }
    Ok(Packed {
        scenario: files[0].1.clone(),
        files,
    })
}

/// `path` with `.` and `..` resolved as written, the way the pod's plain folders resolve them.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The deepest folder holding both.
fn common(a: &Path, b: &Path) -> PathBuf {
    a.components()
        .zip(b.components())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

/// A ConfigMap key for the file at `path`: its characters outside `[-._a-zA-Z0-9]` (the
/// folder separators among them) as `_`, numbered when two paths give the same key.
fn key(path: &str, taken: &mut BTreeSet<String>) -> String {
    let base: String = path
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-._".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut key = base.clone();
    let mut n = 2;
    while !taken.insert(key.clone()) {
        key = format!("{base}-{n}");
        n += 1;
    }
    key
}

struct Job<'a> {
    /// The scenario's name (`[a-z0-9-]+`, SPEC §2): the objects are `podnet-sweep-<name>`.
    name: &'a str,
    packed: &'a Packed,
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
    let mut args: Vec<String> = vec!["sweep".into(), format!("/scenario/{}", job.packed.scenario)];
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
    let items: Vec<Value> = job
        .packed
        .files
        .iter()
        .map(|(key, path, _)| json!({"key": key, "path": path}))
        .collect();
    let data: serde_json::Map<String, Value> = job
        .packed
        .files
        .iter()
        .map(|(key, _, text)| (key.clone(), Value::from(text.as_str())))
        .collect();
    let mut volumes =
        vec![json!({"name": "scenario", "configMap": {"name": name, "items": items}})];
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
                "data": data
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

    #[test]
    fn keys_are_configmap_keys_and_never_collide() {
        let mut taken = BTreeSet::new();
        assert_eq!(key("scenarios/x.yaml", &mut taken), "scenarios_x.yaml");
        // `scenarios_x.yaml` written as a file name gives the same key: numbered.
        assert_eq!(key("scenarios_x.yaml", &mut taken), "scenarios_x.yaml-2");
        assert_eq!(key("a b/c+d.yml", &mut taken), "a_b_c_d.yml");
    }

    #[test]
    fn paths_resolve_as_written_and_meet_at_their_common_folder() {
        assert_eq!(
            lexical(Path::new("/t/scenarios/./parts/../../manifests/p.yaml")),
            Path::new("/t/manifests/p.yaml")
        );
        assert_eq!(
            common(Path::new("/t/scenarios/parts"), Path::new("/t/manifests")),
            Path::new("/t")
        );
    }
}
