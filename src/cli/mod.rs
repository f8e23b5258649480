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
mod export;
mod policy;
mod routes;
mod run;
mod schema;
mod sweep;
mod trace;
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
                            podnet trace scenarios/crosssubnet-overlay.yaml --from a1-w-1 --to 10.2.1.11 --at 30s"
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
        after_help = "Example:\n  podnet sweep scenarios/block-limit.yaml \\\n    --set resources[0].spec.blockSize=26,27,28 --set workloads[0].replicas=30,40"
    )]
    Sweep(SweepArgs),
    /// The policies and profiles that apply to a pod, per direction, in evaluation order, and
    /// the rules that select it as a peer.
    #[command(
        after_help = "Examples:\n  podnet policy scenarios/policy-default-deny-rollout.yaml --pod shop/db-0\n  \
                            podnet policy scenarios/policy-default-deny-rollout.yaml --pod shop/db-0 --at 90s --format json"
    )]
    Policy(PolicyArgs),
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
    /// A pod (`name` or `namespace/name`), a node or router, or an IP address.
    #[arg(long)]
    pub from: String,
    /// A pod, a node or router, or an IP address.
    #[arg(long)]
    pub to: String,
    /// The simulated time to trace at (default: the end of the run).
    #[arg(long)]
    pub at: Option<String>,
    /// Destination port: a number or a container port name of the destination pod (network
    /// policy matches on it). Without `--port` and `--protocol` the packet is an ICMP echo
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
    /// The scenario file.
    pub scenario: PathBuf,
    /// PATH=V1,V2,... : a scenario field and the values to try (repeatable).
    #[arg(long, required = true)]
    pub set: Vec<String>,
    #[arg(long, value_enum, default_value_t = SweepFormat::Table)]
    pub format: SweepFormat,
    /// Variants run at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepFormat {
    Table,
    Csv,
    Json,
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

/// Parses the arguments, runs the command, and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Check(args) => check::check(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Export(args) => export::run(&args),
        Command::Trace(args) => trace::run(&args),
        Command::Routes(args) => routes::run(&args),
        Command::Policy(args) => policy::run(&args),
        Command::Validate(args) => validate::validate(&args),
        Command::Schema => schema::schema(),
    }
}
