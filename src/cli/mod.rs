//! The command line (SPEC §1): argument parsing, subcommand dispatch and exit codes.
//!
//! This is the only layer that touches files, stdout, stderr and exit codes. Each subcommand
//! lives in its own file and returns an [`ExitCode`]-like number; `main` just exits with it.
//! Commands write stdout only through `out!`/`outln!` (`output.rs`), so that a closed stdout
//! ends quietly with exit 0 (SPEC §1).

#![deny(clippy::print_stdout)]

#[macro_use]
mod output;

mod check;
mod common;
mod diff;
mod export;
mod policy;
mod routes;
mod run;
mod schema;
mod sweep;
mod sweep_job;
mod sweep_memory;
mod sweep_shard;
mod trace;
mod trace_entry;
mod trace_external;
mod trace_service;
mod validate;

pub use common::QUICKSTART;

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit codes shared by every command.
pub mod exit {
    pub const OK: i32 = 0;
    /// Expectations failed (`check`), or a packet was not delivered (`trace`).
    pub const FAILED: i32 = 1;
    /// Invalid input: a missing file, bad YAML, a failed validation.
    pub const INVALID: i32 = 2;
    /// A bug in podnet.
    pub const INTERNAL: i32 = 3;
}

#[derive(Debug, Parser)]
#[command(
    name = "podnet",
    version,
    about = "Deterministic simulator of Kubernetes pod networking: scheduling, Calico and \
             Spiderpool IPAM, BGP and forwarding.",
    after_help = "Examples:\n  podnet run                      # the built-in quick-start scenario\n  \
                  podnet run scenarios/quickstart.yaml --seed 7\n  \
                  podnet validate scenarios/*.yaml"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a scenario and write its output folder.
    #[command(
        after_help = "Examples:\n  podnet run\n  podnet run scenarios/quickstart.yaml --out /tmp/qs --format json"
    )]
    Run(RunArgs),
    /// Run scenarios and judge their expectations: PASS/FAIL per expectation.
    #[command(
        after_help = "Examples:\n  podnet check scenarios/*.yaml\n  podnet check scenarios/quickstart.yaml --junit junit.xml"
    )]
    Check(CheckArgs),
    /// Load and validate scenarios; print every problem as FILE:LINE:COL: path: message.
    #[command(after_help = "Example:\n  podnet validate scenarios/quickstart.yaml")]
    Validate(ValidateArgs),
    /// Follow one packet hop by hop: the FIB entry at each device, encapsulation, verdict.
    #[command(
        after_help = "Examples:\n  podnet trace scenarios/quickstart.yaml --from web-0 --to web-5\n  \
                            podnet trace scenarios/crosssubnet-overlay.yaml --from a1-w-1 --to 10.2.1.11 --at 30s\n  \
                            podnet trace scenarios/service-ingress-denied.yaml --from shop/front-0 --to svc/shop/store --port 3306"
    )]
    Trace(TraceArgs),
    /// Show a node's or router's BGP RIB (birdc style, with why each route won or lost) or FIB.
    #[command(
        after_help = "Examples:\n  podnet routes scenarios/quickstart.yaml --node a1-w-1\n  \
                            podnet routes scenarios/quickstart.yaml --node a1-w-1 --table fib --at 1m"
    )]
    Routes(RoutesArgs),
    /// Write the configuration the real systems would hold: BIRD 2 per node and router; the
    /// HNS PowerShell per Windows node.
    #[command(
        after_help = "Examples:\n  podnet export bird scenarios/route-reflectors.yaml --out /tmp/bird\n  \
                            podnet export bird scenarios/quickstart.yaml --node a1-w-1 --at 1m\n  \
                            podnet export hns scenarios/windows-hns-multi-subnet.yaml --node win-1 --at 30s\n  \
                            podnet export hns scenarios/windows-hns-multi-subnet.yaml --node win-1 --changes"
    )]
    Export(ExportArgs),
    /// Run the cross product of field variants in parallel; one row of metrics per variant.
    #[command(
        after_help = "Examples:\n  podnet sweep scenarios/block-limit.yaml \\\n    --set resources[0].spec.blockSize=26,27,28 --set workloads[0].replicas=30,40\n  \
                      podnet sweep scenarios/block-limit.yaml --set resources[0].spec.blockSize=26,27,28 --shard 0/2 --out shard-0.json\n  \
                      podnet sweep merge shard-0.json shard-1.json\n  \
                      podnet sweep scenarios/block-limit.yaml --set resources[0].spec.blockSize=26,27,28 --emit-job --shards 3 --image ghcr.io/me/podnet:0.1.0",
        args_conflicts_with_subcommands = true
    )]
    Sweep(SweepArgs),
    /// The policies and profiles that apply to a pod, per direction, in evaluation order, and
    /// the rules that select it as a peer.
    #[command(
        after_help = "Examples:\n  podnet policy scenarios/policy-default-deny-rollout.yaml --pod shop/db-0\n  \
                            podnet policy scenarios/policy-default-deny-rollout.yaml --pod shop/db-0 --at 90s --format json"
    )]
    Policy(PolicyArgs),
    /// What a layout change breaks and fixes: two runs with the same seed, compared
    /// semantically (pods, IPAM, BGP, reachability, expectations).
    #[command(
        after_help = "Examples:\n  podnet diff scenarios/mesh-vs-route-reflectors.yaml scenarios/route-reflectors.yaml\n  \
                            podnet diff scenarios/block-limit.yaml --set resources[0].spec.blockSize=28\n  \
                            podnet diff scenarios/quickstart.yaml --base-ref origin/main --format markdown\n\n\
                      Exit codes: 0 nothing regressed, 1 regressed (see --fail-on), 2 invalid input."
    )]
    Diff(DiffArgs),
    /// Print the JSON Schema of the scenario file (for editors).
    #[command(after_help = "Example:\n  podnet schema > podnet.schema.json\n  \
                            then in a scenario: # yaml-language-server: $schema=podnet.schema.json")]
    Schema,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The scenario file; without it, the built-in quick-start scenario.
    pub scenario: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output folder (default: output/<scenario name>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Stop at this simulated time, such as 10m (overrides the scenario's `until`).
    #[arg(long)]
    pub until: Option<String>,
    /// Print nothing on stdout and no warnings.
    #[arg(long)]
    pub quiet: bool,
    /// What events.jsonl gets: nothing, everything but the per-UPDATE and per-route BGP
    /// lines (pods, IPAM, scenario events, sessions), or every line.
    #[arg(long, value_enum, default_value_t = EventsArg::Sessions)]
    pub events: EventsArg,
}

/// `podnet run --events` (SPEC §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EventsArg {
    None,
    Sessions,
    All,
}

impl EventsArg {
    pub fn level(self) -> crate::sim::events::EventLevel {
        use crate::sim::events::EventLevel;
        match self {
            EventsArg::None => EventLevel::None,
            EventsArg::Sessions => EventLevel::Sessions,
            EventsArg::All => EventLevel::All,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Scenario files.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// Also write a JUnit XML report (one test case per expectation).
    #[arg(long)]
    pub junit: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// A pod (`name` or `namespace/name`), a node or router, an IP address, or an external
    /// (the name of an `externals:` entry).
    #[arg(long)]
    pub from: String,
    /// A pod, a node or router, an IP address, a Service: `svc/NAMESPACE/NAME` or its
    /// cluster IP (with `--port`: the connection is DNATed to one ready endpoint, as
    /// kube-proxy does), or an external (natOutgoing's SNAT and the reply are shown).
    #[arg(long)]
    pub to: String,
    /// The simulated time to trace at (default: the end of the run).
    #[arg(long)]
    pub at: Option<String>,
    /// Destination port: a number or a container port name of the destination pod (network
    /// policy matches on it); for a Service, a Service port number or name. Without `--port` and `--protocol` the packet is an ICMP echo
    /// request, as `ping` sends.
    #[arg(long)]
    pub port: Option<String>,
    /// TCP (default with `--port`), UDP, SCTP or ICMP.
    #[arg(long, value_parser = ["TCP", "UDP", "SCTP", "ICMP"])]
    pub protocol: Option<String>,
    /// ICMP type (default 8, echo request).
    #[arg(long)]
    pub icmp_type: Option<u8>,
    /// ICMP code (default 0).
    #[arg(long)]
    pub icmp_code: Option<u8>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct RoutesArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The node or router.
    #[arg(long)]
    pub node: String,
    /// The simulated time (default: the end of the run).
    #[arg(long)]
    pub at: Option<String>,
    #[arg(long, value_enum, default_value_t = RouteTableArg::Rib)]
    pub table: RouteTableArg,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RouteTableArg {
    Rib,
    Fib,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// What to export: `bird` (Calico's BIRD configuration per node, an operator's per router)
    /// or `hns` (the HNS.V2 PowerShell per Windows node; with `--node` and no `--out`, printed).
    #[arg(value_enum)]
    pub what: ExportWhat,
    /// The scenario file.
    pub scenario: PathBuf,
    /// Only this node or router.
    #[arg(long)]
    pub node: Option<String>,
    /// The simulated time (default: the end of the run).
    #[arg(long)]
    pub at: Option<String>,
    /// Output folder (default: output/<scenario name>/bird or .../hns).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// `hns` only: the sequence of HNS changes up to `--at` instead of the objects at `--at`.
    #[arg(long)]
    pub changes: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExportWhat {
    Bird,
    Hns,
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// The scenario file.
    pub scenario: Option<PathBuf>,
    /// PATH=V1,V2,... : a scenario field and the values to try (repeatable).
    #[arg(long)]
    pub set: Vec<String>,
    #[command(flatten)]
    pub show: SweepShow,
    /// Variants run at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// An expectation (an `expect:` item, in YAML flow style) judged in every variant instead
    /// of the scenario's own, such as `{pods: {of: all, pending: 0}}` (repeatable). Each
    /// variant can also have its own list: `--set 'expect=[...],[...]'`.
    #[arg(long, value_name = "YAML")]
    pub expect: Vec<String>,
    /// I/N: run only the variants of shard I of N (0 ≤ I < N; a split balanced by predicted
    /// cost) and write their rows as JSON for `podnet sweep merge`.
    #[arg(long, value_name = "I/N", conflicts_with = "emit_job")]
    pub shard: Option<String>,
    /// Where a shard writes its rows (default: stdout).
    #[arg(long, requires = "shard")]
    pub out: Option<PathBuf>,
    /// Print a Kubernetes manifest (a ConfigMap with the scenario and an Indexed batch/v1
    /// Job, one completion per shard) instead of running; apply it with `kubectl apply -f`.
    #[arg(long)]
    pub emit_job: bool,
    /// Shards of the emitted Job (`completions`; default: one per variant, at most 10).
    #[arg(long, requires = "emit_job")]
    pub shards: Option<u32>,
    /// Shards running at once (`parallelism`; default: all).
    #[arg(long, requires = "emit_job")]
    pub parallelism: Option<u32>,
    /// The container image with podnet on its PATH (default: podnet:VERSION).
    #[arg(long, requires = "emit_job")]
    pub image: Option<String>,
    /// A PersistentVolumeClaim to write `shard-I.json` files to (default: each shard's rows
    /// on stdout, read with `kubectl logs`).
    #[arg(long, requires = "emit_job")]
    pub results_claim: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Combine the files of every shard into the table, chart and exit code of the whole sweep.
    Merge(SweepMergeArgs),
}

#[derive(Debug, clap::Args)]
pub struct SweepMergeArgs {
    /// The shard files, in any order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub show: SweepShow,
}

/// How a sweep (or a merge of its shards) shows its rows.
#[derive(Debug, clap::Args)]
pub struct SweepShow {
    #[arg(long, value_enum, default_value_t = SweepFormat::Table)]
    pub format: SweepFormat,
    /// The full table: every metric and every failed expectation.
    #[arg(long)]
    pub verbose: bool,
    /// Where to write the trade-off chart (default: output/<scenario file stem>/sweep.svg).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Write no chart.
    #[arg(long, conflicts_with = "chart")]
    pub no_chart: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The base scenario (with `--set` or `--base-ref` alone: the file compared with itself).
    pub base: PathBuf,
    /// The new scenario.
    pub new: Option<PathBuf>,
    /// PATH=VALUE: a field of the new side's scenario replaced, as `sweep --set` does with
    /// one value (repeatable).
    #[arg(long)]
    pub set: Vec<String>,
    /// Read the base from this git revision of BASE (`git show REV:./FILE`); the new side is
    /// NEW, or BASE as it is on disk.
    #[arg(long, value_name = "REV")]
    pub base_ref: Option<String>,
    /// What counts as a regression (exit 1).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = crate::diff::DEFAULT_FAIL_ON)]
    pub fail_on: Vec<crate::diff::FailOn>,
    /// Seed for both sides (default: the base's).
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Scenario files.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The pod, as `namespace/name`.
    #[arg(long)]
    pub pod: String,
    /// The simulated time to look at (default: the end of the run).
    #[arg(long)]
    pub at: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// The command line, or the exit code when there is nothing to run: `--help` and
/// `--version` print and give 0, bad arguments print why and give 2.
pub fn parse() -> Result<Cli, i32> {
    Cli::try_parse().map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            exit::INVALID
        } else {
            exit::OK
        }
    })
}

/// Runs a parsed command and returns the process exit code.
pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::check(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Export(args) => export::run(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Routes(args) => routes::run(&args),
        Command::Policy(args) => policy::run(&args),
        Command::Validate(args) => validate::validate(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Schema => schema::schema(),
    }
}
