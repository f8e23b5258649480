//! Scenario files: reading, decoding and validating them into a [`Scenario`] (SPEC §2).
//!
//! The pipeline is YAML text → located tree (`yaml`) → raw types that mirror the YAML
//! (`raw`, via `decode`) → the validated model (`build`). Every stage collects its problems
//! as [`Diagnostic`]s with file, line, column and field path instead of stopping, so one call
//! reports everything wrong with a scenario.
//!
//! This is the only module that parses input and the only one that reads files other than
//! the CLI; the YAML crate is used nowhere else. Reading is bounded by [`LIMITS`].

pub mod api_fields;
pub mod build;
pub mod decode;
pub mod diag;
pub mod duration;
mod externals;
pub mod footprint;
pub mod kinds;
pub mod overrides;
mod pod_names;
pub mod policy_fields;
mod policy_kinds;
pub mod raw;
pub mod resource;
mod service_kind;
pub mod workload_manifest;
pub mod yaml;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use diag::{Diagnostic, Diagnostics, SourceMap};
pub use resource::Resource;

use crate::model::action::ScheduledAction;
use crate::model::expect::Expectation;
use crate::model::network::{Network, Profile};
use crate::model::time::SimTime;
use crate::model::topology::Topology;
use crate::model::workload::Workload;
use decode::{Cx, Decode, Loc};
use diag::{FileId, Pos};
use raw::{RawFragment, RawScenario};
use yaml::Limits;

/// The limits on input that keep podnet's time and memory bounded (documented in README).
#[derive(Clone, Copy, Debug)]
pub struct InputLimits {
    pub yaml: Limits,
    /// Bytes read across the scenario, its includes and manifests.
    pub max_total_bytes: usize,
    /// Files read for one scenario (includes and manifests).
    pub max_files: usize,
    /// Nodes in the cluster, counting generators and `addNodes`.
    pub max_nodes: u64,
    /// Pods the workloads may ask for at any time.
    pub max_pods: u64,
    pub max_pods_per_node: u32,
    /// Labels of all nodes together: each node's copy of its zone's and rack's labels and
    /// its automatic ones count (`addNodes` included).
    pub max_node_labels: u64,
    /// Entries of `ips` and `excludeIPs`, all SpiderIPPools together.
    pub max_spiderpool_entries: usize,
    /// SpiderIPPools with the same `subnet`.
    pub max_spiderpools_per_subnet: usize,
}

pub const LIMITS: InputLimits = InputLimits {
    yaml: Limits::DEFAULT,
    max_total_bytes: 64 * 1024 * 1024,
    max_files: 1_000,
    max_nodes: 100_000,
    max_pods: 2_000_000,
    max_pods_per_node: 10_000,
    max_node_labels: 1_000_000,
    max_spiderpool_entries: 10_000,
    max_spiderpools_per_subnet: 1_000,
};

/// A validated scenario, ready to simulate.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// Stop at this time; `None`: when no event is left.
    pub until: Option<SimTime>,
    pub profile: Profile,
    pub network: Network,
    pub topology: Topology,
    /// Resources present from the start, in file order (includes and manifests appended).
    pub resources: Vec<Resource>,
    /// Resources applied by events, indexed by `Action::Apply`.
    pub applied: Vec<Resource>,
    /// What each of `resources` means (`None` only if it had errors, which stops loading).
    pub specs: Vec<Option<kinds::ResourceSpec>>,
    /// What each of `applied` means.
    pub applied_specs: Vec<Option<kinds::ResourceSpec>>,
    pub workloads: Vec<Workload>,
    /// The network policy state at time zero (policies, tiers, namespaces and service
    /// accounts of `resources`); `Action::Apply` of a `ResourceSpec::Policy` or
    /// `ResourceSpec::Namespace` and `Action::Delete` ([`crate::policy::PolicySet::delete_named`])
    /// change it as the run goes.
    pub policies: crate::policy::PolicySet,
    /// Scenario events in the order they happen (time, then file order).
    pub actions: Vec<ScheduledAction>,
    pub expectations: Vec<Expectation>,
    /// Problems that did not stop loading.
    pub warnings: Vec<Diagnostic>,
    /// The files read, to name them in messages.
    pub sources: SourceMap,
}

impl Scenario {
    /// The warnings rendered as `FILE:LINE:COL: path: warning: message`.
    pub fn warning_lines(&self) -> Vec<String> {
        self.warnings
            .iter()
            .map(|w| w.display(&self.sources).to_string())
            .collect()
    }
}

/// Loads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, Diagnostics> {
    let mut loader = Loader::default();
    let text = loader.read(path, None);
    loader.finish(path, text)
}

/// Loads a scenario from text; `name` is shown in messages and includes are resolved
/// relative to the current directory (or to `name`'s folder if it has one).
pub fn load_str(name: &str, text: &str) -> Result<Scenario, Diagnostics> {
    let mut loader = Loader::default();
    let path = Path::new(name);
    loader.sources.add(path);
    loader.stack.push(path.to_path_buf());
    loader.finish(path, Some((FileId(0), text.to_string())))
}

/// Loads a scenario with some fields replaced, as `podnet sweep --set PATH=VALUE` asks:
/// each `(path, value)` sets the field at `path` (`resources[0].spec.blockSize`,
/// `topology.fabric.spinesPerZone`) of the scenario file to the YAML `value`, creating
/// missing mapping keys. A path that leads nowhere is a located error in the pseudo-file
/// `--set`, whose line is the override's position on the command line.
pub fn load_with_overrides(
    path: &Path,
    overrides: &[(String, String)],
) -> Result<Scenario, Diagnostics> {
    let mut loader = Loader {
        overrides: overrides.to_vec(),
        ..Loader::default()
    };
    let text = loader.read(path, None);
    loader.finish(path, text)
}

/// Loads one variant of `podnet sweep`: the scenario with `variant` (the swept fields) and
/// `common` (`--expect`) set as [`load_with_overrides`] does. An expectation's `when:` may
/// name only swept fields: any other has one value in every variant, so naming it is a
/// mistake (a located error).
pub fn load_variant(
    path: &Path,
    variant: &[(String, String)],
    common: &[(String, String)],
) -> Result<Scenario, Diagnostics> {
    let mut loader = Loader {
        overrides: variant.iter().chain(common).cloned().collect(),
        swept: Some(
            variant
                .iter()
                .map(|(p, _)| overrides::canonical_path(p).unwrap_or_else(|_| p.clone()))
                .collect(),
        ),
        ..Loader::default()
    };
    let text = loader.read(path, None);
    loader.finish(path, text)
}

struct Loader {
    sources: SourceMap,
    cx: Cx,
    total_bytes: usize,
    /// What the YAML of every file read so far expands to (one budget per scenario).
    budget: yaml::Budget,
    /// Every file read so far (canonical path) and where it was first named, so a file listed
    /// twice is read once.
    seen: BTreeMap<PathBuf, Pos>,
    /// The chain of files being included, for cycle detection.
    stack: Vec<PathBuf>,
    /// Fields to replace in the scenario file before decoding it (`podnet sweep`).
    overrides: Vec<(String, String)>,
    /// `podnet sweep`: the swept fields, which alone an expectation's `when:` may name.
    swept: Option<BTreeSet<String>>,
}

/// The values written in the scenario file `root` at every field the expectations' `when:`
/// name (`Gathered::when_values`).
fn when_values(
    root: &yaml::YamlNode,
    expect: &[(String, Loc<raw::RawExpectation>)],
) -> BTreeMap<String, String> {
    expect
        .iter()
        .filter_map(|(_, e)| e.value.when.as_ref())
        .flat_map(|w| &w.value.0)
        .filter_map(|(key, _)| {
            let path = overrides::canonical_path(&key.value).ok()?;
            let value = overrides::canonical_value(overrides::lookup(root, &path)?);
            Some((path, value))
        })
        .collect()
}

impl Default for Loader {
    fn default() -> Loader {
        Loader {
            sources: SourceMap::default(),
            cx: Cx::default(),
            total_bytes: 0,
            budget: yaml::Budget::new(LIMITS.yaml),
            seen: BTreeMap::new(),
            stack: Vec::new(),
            overrides: Vec::new(),
            swept: None,
        }
    }
}

impl Loader {
    /// Reads a file, reporting problems at `from` (the `include:` entry that named it) or at
    /// the file itself. Returns its id and text.
    fn read(&mut self, path: &Path, from: Option<(Pos, String)>) -> Option<(FileId, String)> {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let (Some(first), Some((at, field))) = (self.seen.get(&canonical), &from) {
            let message = format!(
                "`{}` is already read for this scenario ({}:{}:{}); a file is read once",
                path.display(),
                self.sources.name(first.file),
                first.line,
                first.col
            );
            self.cx
                .with_path_prefix(field, |cx| cx.warning(*at, message));
            return None;
        }
        let file = self.sources.add(path);
        let (at, field) = from.unwrap_or((Pos::new(file, 1, 1), String::new()));
        self.seen.insert(canonical, at);
        // Problems reading a file are reported at the entry that named it, under its path.
        let mut cx = std::mem::take(&mut self.cx);
        let result = cx.with_path_prefix(&field, |cx| {
            Self::read_checked(&mut self.sources, &mut self.total_bytes, path, file, at, cx)
        });
        self.cx = cx;
        if result.is_some() {
            self.stack.push(path.to_path_buf());
        }
        result
    }

    fn read_checked(
        sources: &mut SourceMap,
        total_bytes: &mut usize,
        path: &Path,
        file: FileId,
        at: Pos,
        cx: &mut Cx,
    ) -> Option<(FileId, String)> {
        if sources.len() > LIMITS.max_files {
            cx.error(
                at,
                format!(
                    "more than {} files are read for this scenario",
                    LIMITS.max_files
                ),
            );
            return None;
        }
        let size = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                cx.error(at, format!("`{}` is a folder, not a file", path.display()));
                return None;
            }
            // A device (`/dev/urandom`), FIFO or socket could block or never end: refused
            // without being opened.
            Ok(m) if !m.is_file() => {
                cx.error(
                    at,
                    format!(
                        "`{}` is not a regular file (a device, FIFO or socket); refusing to read it",
                        path.display()
                    ),
                );
                return None;
            }
            Ok(m) => m.len(),
            Err(e) => {
                cx.error(
                    at,
                    format!("cannot read `{}`: {}", path.display(), io_reason(&e)),
                );
                return None;
            }
        };
        let limit = LIMITS.yaml.max_file_bytes as u64;
        if size > limit {
            cx.error(
                at,
                format!(
                    "`{}` is {size} bytes, more than the limit of {limit} bytes",
                    path.display()
                ),
            );
            return None;
        }
        *total_bytes = total_bytes.saturating_add(size as usize);
        if *total_bytes > LIMITS.max_total_bytes {
            cx.error(
                at,
                format!(
                    "the scenario's files add up to more than {} bytes",
                    LIMITS.max_total_bytes
                ),
            );
            return None;
        }
        match read_at_most(path, limit) {
            Ok(bytes) if bytes.len() as u64 > limit => {
                cx.error(
                    at,
                    format!(
                        "`{}` grew past the limit of {limit} bytes while being read",
                        path.display()
                    ),
                );
                None
            }
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Some((file, text)),
                Err(_) => {
                    cx.error(at, format!("`{}` is not UTF-8 text", path.display()));
                    None
                }
            },
            Err(e) => {
                cx.error(
                    at,
                    format!("cannot read `{}`: {}", path.display(), io_reason(&e)),
                );
                None
            }
        }
    }

    fn finish(
        mut self,
        path: &Path,
        text: Option<(FileId, String)>,
    ) -> Result<Scenario, Diagnostics> {
        let scenario = text.and_then(|(file, text)| self.scenario(path, file, &text));
        let mut items = std::mem::take(&mut self.cx.diagnostics);
        items.sort_by(|a, b| a.pos.cmp(&b.pos).then_with(|| a.path.cmp(&b.path)));
        items.dedup();
        match scenario {
            Some(mut s) if !items.iter().any(Diagnostic::is_error) => {
                s.warnings = items;
                s.sources = self.sources;
                Ok(s)
            }
            _ => Err(Diagnostics {
                sources: self.sources,
                items,
            }),
        }
    }

    fn scenario(&mut self, path: &Path, file: FileId, text: &str) -> Option<Scenario> {
        let root = match yaml::parse_single_within(text, file, &mut self.budget) {
            Ok(node) => node,
            Err(d) => {
                self.cx.diagnostics.push(d);
                return None;
            }
        };
        let mut root = root;
        if !self.overrides.is_empty() {
            let set = self.sources.add(Path::new("--set"));
            for (i, (field, value)) in self.overrides.clone().iter().enumerate() {
                let at = Pos::new(set, i + 1, 1);
                if let Err(message) =
                    overrides::apply(&mut root, field, value, at, &mut self.budget)
                {
                    self.cx.error_at(at, field, message);
                }
            }
            if self.cx.has_errors() {
                return None;
            }
        }
        let raw = RawScenario::decode(&root, &mut self.cx)?;
        let mut g = build::Gathered {
            raw: RawScenario::default(),
            resources: Vec::new(),
            workloads: Vec::new(),
            events: Vec::new(),
            expect: Vec::new(),
            when_values: BTreeMap::new(),
            swept: self.swept.clone(),
        };
        let mut raw = raw;
        self.collect(
            &mut g,
            "",
            raw.resources.take(),
            raw.workloads.take(),
            raw.events.take(),
            raw.expect.take(),
        );
        if let Some(manifests) = &raw.manifests {
            self.manifests(path, manifests, &mut g);
        }
        if let Some(include) = &raw.include {
            self.includes(path, include, &mut g);
        }
        g.when_values = when_values(&root, &g.expect);
        // The decoded lists moved into `g`: the tree they came from is dropped before
        // building, nothing is kept twice (the YAML budget charged it once).
        drop(root);
        g.raw = raw;
        build::build(g, &mut self.cx)
    }

    /// Appends one file's lists, each entry with its field path.
    fn collect(
        &mut self,
        g: &mut build::Gathered,
        prefix: &str,
        resources: Option<Loc<Vec<Loc<decode::AnyNode>>>>,
        workloads: Option<Loc<Vec<Loc<raw::RawWorkload>>>>,
        events: Option<Loc<Vec<Loc<raw::RawEvent>>>>,
        expect: Option<Loc<Vec<Loc<raw::RawExpectation>>>>,
    ) {
        let _ = prefix;
        if let Some(list) = resources {
            for (i, r) in list.value.into_iter().enumerate() {
                self.cx.with_path_prefix("resources", |cx| {
                    cx.at_index(i, |cx| resource::unwrap(r.value.0, cx, &mut g.resources))
                });
            }
        }
        if let Some(list) = workloads {
            g.workloads.extend(
                list.value
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| (format!("workloads[{i}]"), w)),
            );
        }
        if let Some(list) = events {
            g.events.extend(
                list.value
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| (format!("events[{i}]"), e)),
            );
        }
        if let Some(list) = expect {
            g.expect.extend(
                list.value
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| (format!("expect[{i}]"), e)),
            );
        }
    }

    fn includes(&mut self, from: &Path, include: &Loc<Vec<Loc<String>>>, g: &mut build::Gathered) {
        let base = from.parent().unwrap_or(Path::new(""));
        for (i, entry) in include.value.iter().enumerate() {
            let path = base.join(&entry.value);
            let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            let cycle = self
                .stack
                .iter()
                .any(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()) == canonical);
            if cycle {
                let chain: Vec<String> =
                    self.stack.iter().map(|p| p.display().to_string()).collect();
                self.cx.with_path_prefix("include", |cx| {
                    cx.at_index(i, |cx| {
                        cx.error(
                            entry.pos,
                            format!(
                                "include cycle: {} -> {}",
                                chain.join(" -> "),
                                path.display()
                            ),
                        )
                    })
                });
                continue;
            }
            let Some((file, text)) = self.read(&path, Some((entry.pos, format!("include[{i}]"))))
            else {
                continue;
            };
            match yaml::parse_single_within(&text, file, &mut self.budget) {
                Ok(root) => {
                    let frag = self
                        .cx
                        .with_path_prefix("", |cx| RawFragment::decode(&root, cx));
                    drop(root);
                    if let Some(mut frag) = frag {
                        self.collect(
                            g,
                            "",
                            frag.resources.take(),
                            frag.workloads.take(),
                            frag.events.take(),
                            frag.expect.take(),
                        );
                        if let Some(nested) = &frag.include {
                            self.includes(&path, nested, g);
                        }
                    }
                }
                Err(d) => self.cx.diagnostics.push(d),
            }
            self.stack.pop();
        }
    }

    /// `manifests:` files and folders, every document read as `kubectl apply -f` would.
    fn manifests(
        &mut self,
        from: &Path,
        manifests: &Loc<Vec<Loc<String>>>,
        g: &mut build::Gathered,
    ) {
        let base = from.parent().unwrap_or(Path::new(""));
        for (i, entry) in manifests.value.iter().enumerate() {
            let path = base.join(&entry.value);
            let files = if path.is_dir() {
                match manifest_files(&path) {
                    Ok(files) => files,
                    Err(e) => {
                        self.cx.with_path_prefix("manifests", |cx| {
                            cx.at_index(i, |cx| {
                                cx.error(
                                    entry.pos,
                                    format!(
                                        "cannot read folder `{}`: {}",
                                        path.display(),
                                        io_reason(&e)
                                    ),
                                )
                            })
                        });
                        continue;
                    }
                }
            } else {
                vec![path]
            };
            for file_path in files {
                let Some((file, text)) =
                    self.read(&file_path, Some((entry.pos, format!("manifests[{i}]"))))
                else {
                    continue;
                };
                self.stack.pop();
                match yaml::parse_documents_within(&text, file, &mut self.budget) {
                    Ok(docs) => {
                        for doc in docs {
                            self.cx.with_path_prefix("", |cx| {
                                resource::unwrap(doc, cx, &mut g.resources)
                            });
                        }
                    }
                    Err(d) => self.cx.diagnostics.push(d),
                }
            }
        }
    }
}

/// At most `limit + 1` bytes of a file (one more than allowed tells that it is too large).
fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The `*.yaml` and `*.yml` files of a folder, in name order.
fn manifest_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: BTreeSet<PathBuf> = BTreeSet::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if is_yaml && path.is_file() {
            files.insert(path);
        }
    }
    Ok(files.into_iter().collect())
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}
