//! `podnet sweep` beyond one table: a sweep split into shards and merged gives exactly the
//! unsharded output; the manifest of `--emit-job` is valid against the Kubernetes Job schema
//! (`tests/fixtures/kubernetes/job-schema.json`, written by hand from the API reference) and
//! runs the shards it promises; the compact table, `--verbose`, the trade-off chart, and
//! `--expect` judging every variant alike.

mod common;

use std::path::Path;

use common::{Output, temp_dir};

use serde_json::Value;

fn podnet(args: &[&str]) -> Output {
    common::run(args)
}

/// Six variants; some break block-limit's expectations (written for /28 and a limit of 2),
/// so the sweep exits 1 and prints FAIL lines, which the merge must reproduce too.
const SWEEP: [&str; 6] = [
    "sweep",
    "scenarios/block-limit.yaml",
    "--set",
    "resources[0].spec.blockSize=27,28,29",
    "--set",
    "resources[1].spec.maxBlocksPerHost=2,3",
];

fn shard_files(dir: &Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let file = dir.join(format!("n{n}-shard-{i}.json"));
            let file = file.to_str().unwrap().to_string();
            let shard = format!("{i}/{n}");
            let out = podnet(&[&SWEEP[..], &["--shard", &shard, "--out", &file]].concat());
            assert_eq!(out.code, 0, "a shard exits 0 once written: {}", out.stderr);
            assert_eq!(out.stdout, "", "rows go to --out");
            file
        })
        .collect()
}

#[test]
fn sharded_and_merged_is_the_unsharded_sweep_byte_for_byte() {
    let dir = temp_dir("merge");
    let whole_svg = dir.join("whole.svg");
    let merged_svg = dir.join("merged.svg");
    for format in ["table", "csv", "json"] {
        let whole = podnet(
            &[
                &SWEEP[..],
                &["--format", format, "--chart", whole_svg.to_str().unwrap()],
            ]
            .concat(),
        );
        assert_eq!(whole.code, 1, "{}", whole.stderr);
        for n in [1, 2, 4, 7] {
            let files = shard_files(&dir, n);
            // In any order.
            let mut args: Vec<&str> = vec!["sweep", "merge", "--format", format];
            args.extend(["--chart", merged_svg.to_str().unwrap()]);
            args.extend(files.iter().rev().map(String::as_str));
            let merged = podnet(&args);
            assert_eq!(merged.stdout, whole.stdout, "{format}, {n} shards");
            assert_eq!(merged.code, whole.code, "{format}, {n} shards");
            assert_eq!(
                std::fs::read(&merged_svg).unwrap(),
                std::fs::read(&whole_svg).unwrap(),
                "{format}, {n} shards: the chart"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_variant_is_in_exactly_one_shard() {
    let dir = temp_dir("split");
    let files = shard_files(&dir, 4);
    let mut indices: Vec<u64> = Vec::new();
    for f in &files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        indices.extend(
            v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["index"].as_u64().unwrap()),
        );
    }
    indices.sort_unstable();
    assert_eq!(indices, [0, 1, 2, 3, 4, 5]);
    // The same split from every shard: running shard 2 again writes the same file.
    let again = dir.join("again.json");
    podnet(
        &[
            &SWEEP[..],
            &["--shard", "2/4", "--out", again.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&files[2]).unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_merge_of_the_wrong_files_is_invalid_input() {
    let dir = temp_dir("bad");
    let files = shard_files(&dir, 3);
    let missing = podnet(&["sweep", "merge", &files[0], &files[2]]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("missing shard 1 of 3"),
        "{}",
        missing.stderr
    );
    let twice = podnet(&["sweep", "merge", &files[0], &files[1], &files[2], &files[1]]);
    assert_eq!(twice.code, 2);
    assert!(twice.stderr.contains("shard 1 is also"), "{}", twice.stderr);
    let other = dir.join("other.json");
    let other = other.to_str().unwrap();
    podnet(&[
        "sweep",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=27",
        "--shard",
        "0/3",
        "--out",
        other,
    ]);
    let mixed = podnet(&["sweep", "merge", &files[0], &files[1], other]);
    assert_eq!(mixed.code, 2);
    assert!(mixed.stderr.contains("another sweep"), "{}", mixed.stderr);
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, "{\"rows\": 3}").unwrap();
    let g = podnet(&["sweep", "merge", garbage.to_str().unwrap()]);
    assert_eq!(g.code, 2);
    assert!(g.stderr.contains("garbage.json:1:"), "{}", g.stderr);
    for bad in ["2/2", "x/2", "1"] {
        assert_eq!(
            podnet(&[&SWEEP[..], &["--shard", bad]].concat()).code,
            2,
            "{bad}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// --- A small JSON Schema checker for the subset the fixture uses. ---

fn check(schema: &Value, root: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/definitions/");
        return check(&root["definitions"][name], root, v, at, errors);
    }
    if let Some(kinds) = schema.get("oneOfKind") {
        match v["kind"].as_str().and_then(|k| kinds[k].as_str()) {
            Some(r) => check(&serde_json::json!({"$ref": r}), root, v, at, errors),
            None => errors.push(format!("{at}: unexpected kind {}", v["kind"])),
        }
        return;
    }
    if let Some(c) = schema.get("const")
        && v != c
    {
        errors.push(format!("{at}: {v} is not {c}"));
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        errors.push(format!("{at}: {v} is not one of {e:?}"));
    }
    let type_ok = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("object") => v.is_object(),
        Some("array") => v.is_array(),
        Some("string") => v.is_string(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("boolean") => v.is_boolean(),
        Some(other) => panic!("type {other} not supported"),
    };
    if !type_ok {
        errors.push(format!("{at}: {v} is not of type {}", schema["type"]));
        return;
    }
    if let Some(n) = v.as_f64() {
        if schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n < m)
        {
            errors.push(format!("{at}: {n} is below the minimum"));
        }
        if schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| n > m)
        {
            errors.push(format!("{at}: {n} is above the maximum"));
        }
    }
    if let (Some(format), Some(s)) = (schema.get("format").and_then(Value::as_str), v.as_str()) {
        let label = |s: &str| {
            !s.is_empty()
                && s.len() <= 63
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        let ok = match format {
            "dns1123-label" => label(s),
            "dns1123-subdomain" => s.len() <= 253 && s.split('.').all(label),
            "label-value" => {
                s.len() <= 63
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    && s.chars().next().is_none_or(|c| c.is_ascii_alphanumeric())
                    && s.chars().last().is_none_or(|c| c.is_ascii_alphanumeric())
            }
            // KeyToPath.path: "may not be an absolute path; may not contain the path
            // element '..'; may not start with the string '..'".
            "relative-path" => {
                !s.is_empty()
                    && !s.starts_with('/')
                    && !s.starts_with("..")
                    && !s.split('/').any(|e| e == "..")
            }
            other => panic!("format {other} not supported"),
        };
        if !ok {
            errors.push(format!("{at}: `{s}` is not a valid {format}"));
        }
    }
    if let Some(items) = v.as_array() {
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| (items.len() as u64) < m)
        {
            errors.push(format!("{at}: fewer than {} items", schema["minItems"]));
        }
        if let Some(item) = schema.get("items") {
            for (i, x) in items.iter().enumerate() {
                check(item, root, x, &format!("{at}[{i}]"), errors);
            }
        }
    }
    if let Some(map) = v.as_object() {
        if schema.get("format").and_then(Value::as_str) == Some("configmap-keys") {
            for k in map.keys() {
                if !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
                {
                    errors.push(format!("{at}: `{k}` is not a valid ConfigMap key"));
                }
            }
        }
        for r in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !map.contains_key(r.as_str().unwrap()) {
                errors.push(format!("{at}: missing required field {r}"));
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, x) in map {
            let at = format!("{at}.{k}");
            match (
                props.and_then(|p| p.get(k)),
                schema.get("additionalProperties"),
            ) {
                (Some(s), _) => check(s, root, x, &at, errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{at}: unknown field")),
                (None, Some(s)) if s.is_object() => check(s, root, x, &at, errors),
                _ => {}
            }
        }
    }
}

fn validate(manifest: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubernetes/job-schema.json"),
    )
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let mut errors = Vec::new();
    check(
        &schema["definitions"]["List"],
        &schema,
        manifest,
        "",
        &mut errors,
    );
    errors
}

#[test]
fn the_checker_catches_what_the_api_server_refuses() {
    let bad = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [{
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "Bad_Name"},
        "spec": {"completionMode": "indexed", "completions": -1, "paralelism": 2,
                 "template": {"spec": {"restartPolicy": "Always", "containers": []}}}}]});
    let errors = validate(&bad);
    for expected in [
        "metadata.name: `Bad_Name`",
        "completionMode: \"indexed\"",
        "completions: -1",
        "paralelism: unknown field",
        "restartPolicy: \"Always\"",
        "containers: fewer than 1",
    ] {
        assert!(
            errors.iter().any(|e| e.contains(expected)),
            "{expected} not in {errors:#?}"
        );
    }
}

fn emit(extra: &[&str]) -> Value {
    let out = podnet(&[&SWEEP[..], &["--emit-job"], extra].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).expect("the manifest is JSON")
}

#[test]
fn the_emitted_job_is_a_valid_indexed_job() {
    let m = emit(&[
        "--shards",
        "3",
        "--parallelism",
        "2",
        "--image",
        "registry.example/podnet:1",
        "--results-claim",
        "sweep-results",
    ]);
    assert_eq!(validate(&m), Vec::<String>::new());
    let (config, job) = (&m["items"][0], &m["items"][1]);
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    // The Job API: Indexed mode needs `completions`; each index is one shard.
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 3);
    assert_eq!(spec["parallelism"], 2);
    let pod = &spec["template"]["spec"];
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "registry.example/podnet:1");
    // $(VAR) in args expands only from variables the container declares.
    assert_eq!(c["env"][0]["name"], "JOB_COMPLETION_INDEX");
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2)
            .any(|w| w == ["--shard", "$(JOB_COMPLETION_INDEX)/3"]),
        "{args:?}"
    );
    assert!(
        args.windows(2)
            .any(|w| w == ["--out", "/results/shard-$(JOB_COMPLETION_INDEX).json"]),
        "{args:?}"
    );
    // The scenario is the ConfigMap's key, mounted where the args read it.
    let volumes = pod["volumes"].as_array().unwrap();
    assert_eq!(volumes[0]["configMap"]["name"], config["metadata"]["name"]);
    assert_eq!(
        volumes[1]["persistentVolumeClaim"]["claimName"],
        "sweep-results"
    );
    assert_eq!(args[1], "/scenario/block-limit.yaml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/block-limit.yaml"),
    )
    .unwrap();
    assert_eq!(config["data"]["block-limit.yaml"], text.as_str());

    // What the three pods run, run here (the index substituted, the file read locally):
    // merged, it is the unsharded sweep.
    let dir = temp_dir("job");
    let mut files = Vec::new();
    for i in 0..3 {
        let file = dir
            .join(format!("shard-{i}.json"))
            .to_str()
            .unwrap()
            .to_string();
        let local: Vec<String> = args
            .iter()
            .map(|a| match *a {
                "/scenario/block-limit.yaml" => "scenarios/block-limit.yaml".to_string(),
                a if a.starts_with("/results/") => file.clone(),
                a => a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string()),
            })
            .collect();
        let local: Vec<&str> = local.iter().map(String::as_str).collect();
        assert_eq!(podnet(&local).code, 0);
        files.push(file);
    }
    let mut merge = vec!["sweep", "merge"];
    merge.extend(files.iter().map(String::as_str));
    assert_eq!(podnet(&merge).stdout, podnet(&SWEEP).stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_claim_the_rows_go_to_the_pod_log() {
    let m = emit(&[]);
    assert_eq!(validate(&m), Vec::<String>::new());
    let job = &m["items"][1];
    // Six variants: one shard each by default, all at once, the image of this version.
    assert_eq!(job["spec"]["completions"], 6);
    assert_eq!(job["spec"]["parallelism"], 6);
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], format!("podnet:{}", env!("CARGO_PKG_VERSION")));
    assert!(!c["args"].as_array().unwrap().iter().any(|a| a == "--out"));
    assert_eq!(
        job["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// A scenario spread over files: `include:` below its folder and `manifests:` in a sibling
/// folder (`../manifests/`). The ConfigMap must hold all three files and the volume's items
/// must put them back where the scenario's relative paths look, under the folder the three
/// have in common (`tree/`), since a key-to-path may not climb with `..`.
#[test]
fn the_job_carries_every_file_the_scenario_reads() {
    let tree = temp_dir("job-tree");
    let here = tree.join("scenarios");
    std::fs::create_dir_all(here.join("parts")).unwrap();
    std::fs::create_dir_all(tree.join("manifests")).unwrap();
    let block_limit = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/block-limit.yaml"),
    )
    .unwrap();
    // block-limit with its two resources moved out: the pool into a manifest file, the
    // IPAM settings into an include. The expectations are block-limit's, unchanged.
    let (head, rest) = block_limit.split_once("resources:\n").unwrap();
    let (resources, tail) = rest.split_once("\nworkloads:").unwrap();
    let (pool, ipam) = resources
        .split_once("- apiVersion: projectcalico.org/v3\n  kind: IPAMConfiguration")
        .unwrap();
    let main =
        format!("{head}include: [parts/ipam.yaml]\nmanifests: [../manifests/]\n\nworkloads:{tail}");
    let scenario = common::write(&here, "limit.yaml", &main);
    common::write(
        &here.join("parts"),
        "ipam.yaml",
        &format!(
            "resources:\n- apiVersion: projectcalico.org/v3\n  kind: IPAMConfiguration{ipam}\n"
        ),
    );
    let pool = pool.trim_start_matches("- ").replace("\n  ", "\n");
    common::write(&tree.join("manifests"), "pool.yaml", &pool);
    let sweep = ["sweep", &scenario, "--set", "workloads[0].replicas=30,40"];
    let local = podnet(&sweep);
    // At 30 replicas all fit in the two /28 blocks (32 addresses), so block-limit's
    // `pending: 8` fails: exit 1, and the merge must say the same.
    assert_eq!(local.code, 1, "{}", local.stderr);

    let out = podnet(&[&sweep[..], &["--emit-job", "--shards", "2"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let m: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(validate(&m), Vec::<String>::new());
    let (config, job) = (&m["items"][0], &m["items"][1]);
    let pod = &job["spec"]["template"]["spec"];
    let items = pod["volumes"][0]["configMap"]["items"].as_array().unwrap();
    let mut paths: Vec<&str> = items.iter().map(|i| i["path"].as_str().unwrap()).collect();
    paths.sort_unstable();
    assert_eq!(
        paths,
        [
            "manifests/pool.yaml",
            "scenarios/limit.yaml",
            "scenarios/parts/ipam.yaml"
        ]
    );
    let args = pod["containers"][0]["args"].as_array().unwrap();
    assert_eq!(args[1], "/scenario/scenarios/limit.yaml");

    // What the pods see: each key's text at its item path under the mount. Run the shards
    // there; merged, they are the sweep of the original files.
    let mount = temp_dir("job-mount");
    for item in items {
        let file = mount.join(item["path"].as_str().unwrap());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let text = config["data"][item["key"].as_str().unwrap()]
            .as_str()
            .unwrap();
        std::fs::write(&file, text).unwrap();
    }
    let mut shards = Vec::new();
    for i in 0..2 {
        let file = mount.join(format!("shard-{i}.json")).display().to_string();
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                let a = a.as_str().unwrap();
                match a.strip_prefix("/scenario/") {
                    Some(rest) => mount.join(rest).display().to_string(),
                    None => a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string()),
                }
            })
            .chain(["--out".to_string(), file.clone()])
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let shard = podnet(&args);
        assert_eq!(shard.code, 0, "{}", shard.stderr);
        shards.push(file);
    }
    let mut merge = vec!["sweep", "merge"];
    merge.extend(shards.iter().map(String::as_str));
    let merged = podnet(&merge);
    assert_eq!(merged.stdout, local.stdout);
    assert_eq!(merged.code, local.code);
    let _ = std::fs::remove_dir_all(&tree);
    let _ = std::fs::remove_dir_all(&mount);
}

/// More than a ConfigMap holds is refused, naming the limit.
#[test]
fn files_beyond_one_configmap_are_refused() {
    let dir = temp_dir("job-big");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/block-limit.yaml"),
    )
    .unwrap();
    // A YAML comment of 1.1 MB keeps the scenario valid and over the limit.
    let big = format!("{text}\n# {}\n", "x".repeat(1_100_000));
    let scenario = common::write(&dir, "big.yaml", &big);
    let out = podnet(&[
        "sweep",
        &scenario,
        "--set",
        "workloads[0].replicas=30,40",
        "--emit-job",
    ]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr.contains("one ConfigMap holds at most 1048576"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The default table is compact: the varied fields, Pending pods, allocation failures,
/// route counts, convergence as a duration, the share of pairs delivered and the expectations
/// as a count; `--verbose` has every metric and the failed expectations.
/// block-limit at blockSize 28 and limit 2 is the file as written: 8 Pending (derivation in
/// the scenario), all 4 expectations hold; at /27 (32 addresses a block, two blocks = 64 ≥ 40
/// pods) nobody is Pending, and the 3 expectations written for /28 that count Pending pods,
/// allocation failures and pool addresses fail: 1 of 4.
#[test]
fn the_default_table_is_compact_and_verbose_has_the_detail() {
    let dir = temp_dir("table");
    let svg = dir.join("c.svg");
    let args = [
        "sweep",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=27,28",
        "--chart",
        svg.to_str().unwrap(),
    ];
    let out = podnet(&args);
    assert_eq!(
        out.code, 1,
        "a failing variant is a finding: exit 1, no crash: {}",
        out.stderr
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "resources[0].spec.blockSize",
            "pending",
            "allocFailures",
            "maxRib",
            "maxFib",
            "converged",
            "delivered",
            "expectations"
        ]
    );
    let row27: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        (row27[0], row27[1], row27[2]),
        ("27", "0", "0"),
        "{}",
        lines[2]
    );
    assert_eq!(&row27[row27.len() - 3..], ["1", "of", "4"], "{}", lines[2]);
    let row28: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(
        (row28[0], row28[1], row28[2]),
        ("28", "8", "8"),
        "{}",
        lines[3]
    );
    assert_eq!(&row28[row28.len() - 3..], ["4", "of", "4"], "{}", lines[3]);
    assert_eq!(
        lines[4],
        "1 of 2 variants fail some expectations (--verbose lists them)"
    );
    assert!(!out.stdout.contains("FAIL ["));
    let verbose = podnet(&[&args[..], &["--verbose"]].concat());
    assert!(
        verbose
            .stdout
            .lines()
            .next()
            .unwrap()
            .contains(" convergence ")
    );
    assert_eq!(
        verbose
            .stdout
            .matches("FAIL [resources[0].spec.blockSize=27]")
            .count(),
        3
    );
    // The chart: one point per variant, the passing one filled, each labelled.
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(chart.starts_with("<svg"), "{chart}");
    assert!(chart.contains("Sweep: routes per node vs Pending pods (2 variants)"));
    assert_eq!(chart.matches("<circle").count(), 2, "{chart}");
    assert!(chart.contains("blockSize=27") && chart.contains("blockSize=28"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--expect` judges every variant by the same relative expectation instead of the file's
/// absolute ones: no allocation failure. /27 gives 64 addresses for 40 pods (none refused),
/// /28 gives 32 (8 refused, the scenario's own derivation).
#[test]
fn expect_judges_every_variant_by_what_makes_sense_for_it() {
    let out = podnet(&[
        "sweep",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=27,28",
        "--expect",
        "{allocationFailures: 0}",
        "--no-chart",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    let verdicts: Vec<(u64, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["expectationsPassed"].as_u64().unwrap(),
                r["expectationsFailed"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(verdicts, [(1, 0), (0, 1)]);
    // A bad expectation is a located input error, as a bad --set is.
    let bad = podnet(&[
        "sweep",
        "scenarios/block-limit.yaml",
        "--set",
        "resources[0].spec.blockSize=27",
        "--expect",
        "{allocationFailure: 0}",
        "--no-chart",
    ]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("allocationFailure"), "{}", bad.stderr);
}
