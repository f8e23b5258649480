//! Every real manifest of `../shared/real-manifests/` (SPEC §2.3) through `manifests:`.
//!
//! Each file is loaded by a scenario whose topology has every node the file names (Calico
//! `Node` names, BGPPeer `spec.node`, SpiderIPPool `spec.nodeName`) and whose `network.cni`
//! matches the file's IPAM. Each must load, except the files that are defective as published,
//! which must be refused with a message located in the manifest file itself:
//!
//! - `joshrosso/rr-calico.yaml`: SOURCES.md marks it defective — the unquoted
//!   `nodeSelector: !has(route-reflector)` is a YAML tag, not a selector.
//! - `spiderpool/submariner-cluster-a.yaml`: SOURCES.md leaves the call to podnet; its gateway
//!   172.110.0.1 lies outside its subnet 172.110.1.0/24, which Spiderpool's webhook refuses
//!   ("not pertains to the 'spec.subnet'"), so podnet refuses it too (SPEC §2.3).
//!
//! The corpus is not part of this repository: without the folder the test says so and passes.
//! Run with `--nocapture` to see one line per file (loaded or refused, with its diagnostics).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use podnet::scenario::diag::FileId;
use podnet::scenario::yaml::{Limits, Node, Value, parse_documents};
use podnet::scenario::{Diagnostics, load};

/// Files refused on purpose, with the field path the first error must be at.
const REFUSED: &[(&str, &str)] = &[
    // A YAML syntax problem has no field path.
    ("joshrosso/rr-calico.yaml", ""),
    ("spiderpool/submariner-cluster-a.yaml", "spec.gateway"),
];

#[test]
fn every_real_manifest_loads_or_is_refused_where_it_should_be() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-manifests");
    if !corpus.is_dir() {
        println!("skipped: ../shared/real-manifests not found");
        return;
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-manifests");
    std::fs::create_dir_all(&work).expect("create the scratch folder");
    let files = yaml_files(&corpus);
    assert!(!files.is_empty(), "no manifest under {}", corpus.display());
    let mut problems = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let name = relative_name(&corpus, file);
        let refused = REFUSED.iter().find(|(f, _)| *f == name).map(|(_, p)| *p);
        let scenario = work.join(format!("corpus-{n}.yaml"));
        std::fs::write(&scenario, scenario_for(file)).expect("write the scenario");
        match (load(&scenario), refused) {
            (Ok(s), None) => {
                println!("loaded  {name} ({} warnings)", s.warnings.len());
                for w in s.warning_lines() {
                    println!("          {w}");
                }
            }
            (Err(d), Some(path)) => {
                println!("refused {name}");
                print_diagnostics(&d);
                if let Err(why) = check_refusal(&d, file, path) {
                    problems.push(format!("{name}: {why}"));
                }
            }
            (Ok(_), Some(_)) => problems.push(format!("{name}: loaded, but must be refused")),
            (Err(d), None) => {
                println!("REFUSED {name} (unexpected)");
                print_diagnostics(&d);
                problems.push(format!("{name}: refused:\n{d}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn print_diagnostics(d: &Diagnostics) {
    for line in d.to_string().lines() {
        println!("          {line}");
    }
}

/// The refusal names the manifest file with a line and column, at the expected field.
fn check_refusal(d: &Diagnostics, file: &Path, path: &str) -> Result<(), String> {
    let first = d.errors().next().ok_or("refused without an error")?;
    let named = d.sources.name(first.pos.file);
    let canonical = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let expected = canonical.display().to_string();
    if named != expected {
        return Err(format!(
            "error names `{named}`, not the manifest `{expected}`"
        ));
    }
    if first.pos.line == 0 || first.pos.col == 0 {
        return Err(format!("error is not located: {first:?}"));
    }
    if first.path != path {
        return Err(format!("error at `{}`, expected `{path}`", first.path));
    }
    Ok(())
}

/// A scenario reading `file` with a topology that has the nodes it names. A Calico `Node`
/// with `spec.bgp.ipv4Address` must hold that node's address (SPEC §2.3), so such nodes get
/// it, on a rack whose subnet is the /16 around it; the others share a default rack.
fn scenario_for(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let docs = parse_documents(&text, FileId(0), Limits::DEFAULT).unwrap_or_default();
    let mut nodes: BTreeMap<String, Option<Ipv4Addr>> = BTreeMap::new();
    let mut spiderpool = false;
    for doc in &docs {
        gather(doc, &mut nodes, &mut spiderpool);
    }
    if nodes.is_empty() {
        nodes.insert("node-1".to_string(), None);
    }
    let mut racks: BTreeMap<Option<[u8; 2]>, Vec<String>> = BTreeMap::new();
    for (name, ip) in &nodes {
        let key = ip.map(|ip| [ip.octets()[0], ip.octets()[1]]);
        let entry = match ip {
            Some(ip) => format!("{{name: {name}, ip: {ip}}}"),
            None => format!("{{name: {name}}}"),
        };
        racks.entry(key).or_default().push(entry);
    }
    let mut rack_yaml = String::new();
    for (i, (key, entries)) in racks.iter().enumerate() {
        let [a, b] = key.unwrap_or([10, 250]);
        rack_yaml.push_str(&format!(
            "    - {{name: r{i}, subnet: {a}.{b}.0.0/16, gateway: {a}.{b}.255.254, nodes: [{}]}}\n",
            entries.join(", ")
        ));
    }
    let manifest = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    format!(
        "name: corpus\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: z\n\
         \x20   racks:\n\
         {rack_yaml}\
         network: {{cni: {}}}\n\
         manifests: [{:?}]\n",
        if spiderpool { "spiderpool" } else { "calico" },
        manifest.display().to_string(),
    )
}

/// Collects the node names a document (or the items of a List) mentions, with the IPv4
/// address a Calico `Node` gives, and whether it holds SpiderIPPools.
fn gather(doc: &Node, nodes: &mut BTreeMap<String, Option<Ipv4Addr>>, spiderpool: &mut bool) {
    if let Some(Value::Seq(items)) = doc.get("items").map(|n| &n.value) {
        for item in items {
            gather(item, nodes, spiderpool);
        }
    }
    let text = |n: Option<&Node>| match n.map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => None,
    };
    let kind = text(doc.get("kind")).unwrap_or_default();
    let spec = doc.get("spec");
    let mut add = |name: Option<String>, ip: Option<Ipv4Addr>| {
        if let Some(name) = name {
            let slot = nodes.entry(name).or_default();
            if ip.is_some() {
                *slot = ip;
            }
        }
    };
    match kind.as_str() {
        "Node" => {
            let ip = text(
                spec.and_then(|s| s.get("bgp"))
                    .and_then(|b| b.get("ipv4Address")),
            )
            .and_then(|a| a.split('/').next().and_then(|ip| ip.parse().ok()));
            add(text(doc.get("metadata").and_then(|m| m.get("name"))), ip);
        }
        "BGPPeer" => add(text(spec.and_then(|s| s.get("node"))), None),
        "SpiderIPPool" => {
            *spiderpool = true;
            if let Some(Value::Seq(names)) = spec.and_then(|s| s.get("nodeName")).map(|n| &n.value)
            {
                for n in names {
                    add(text(Some(n)), None);
                }
            }
        }
        _ => {}
    }
}

/// Every `*.yaml` / `*.yml` file below `dir`, in path order.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.insert(path);
            }
        }
    }
    out.into_iter().collect()
}

fn relative_name(corpus: &Path, file: &Path) -> String {
    file.strip_prefix(corpus)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}
