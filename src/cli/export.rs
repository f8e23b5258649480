//! `podnet export bird`: writes `<device>.conf` per node and router, the BIRD 2 configuration
//! `export::bird` renders for the scenario at an instant, and lists the files on stdout.
//! `podnet export hns`: writes `<node>.ps1` (or `<node>.changes.ps1` with `--changes`) per
//! Windows node, the PowerShell `export::hns` renders, and lists the files; with `--node` and
//! no `--out` it prints the one script instead.

use std::path::PathBuf;

use super::common::with_state_at;
use super::{ExportArgs, ExportWhat, exit};
use crate::export::{bird, hns};
use crate::model::time::SimTime;

pub fn run(args: &ExportArgs) -> i32 {
    match args.what {
        ExportWhat::Bird if args.changes => {
            eprintln!("--changes applies to `podnet export hns` only");
            return exit::INVALID;
        }
        ExportWhat::Bird => {}
        ExportWhat::Hns => return run_hns(args),
    }
    with_state_at(
        &args.scenario,
        args.at.as_deref(),
        |scenario, world, snap| {
            let configs = match bird::render(scenario, world, snap, args.node.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{}: {e}", args.scenario.display());
                    return exit::INVALID;
                }
            };
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("output").join(&scenario.name).join("bird"));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("{}: {e}", dir.display());
                return exit::INVALID;
            }
            // Every file is written before anything is printed, so `| head` loses none.
            let mut written = Vec::with_capacity(configs.len());
            for c in &configs {
                let path = dir.join(format!("{}.conf", c.device));
                if let Err(e) = std::fs::write(&path, &c.text) {
                    eprintln!("{}: {e}", path.display());
                    return exit::INVALID;
                }
                written.push(path);
            }
            for path in &written {
                outln!("{}", path.display());
            }
            if configs.is_empty() {
                eprintln!("{}: the node does not run BIRD", args.scenario.display());
                return exit::INVALID;
            }
            exit::OK
        },
    )
}

fn run_hns(args: &ExportArgs) -> i32 {
    let kind = if args.changes {
        hns::Kind::Changes
    } else {
        hns::Kind::State
    };
    with_state_at(
        &args.scenario,
        args.at.as_deref(),
        |scenario, world, snap| {
            let now = SimTime::from_nanos(snap.time_us.saturating_mul(1000));
            let scripts = match hns::render(world, now, args.node.as_deref(), kind) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("{}: {e}", args.scenario.display());
                    return exit::INVALID;
                }
            };
            if args.node.is_some() && args.out.is_none() {
                for s in &scripts {
                    out!("{}", s.text);
                }
                return exit::OK;
            }
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| PathBuf::from("output").join(&scenario.name).join("hns"));
            if let Err(e) = std::fs::create_dir_all(&dir) {
                eprintln!("{}: {e}", dir.display());
                return exit::INVALID;
            }
            let suffix = if args.changes { ".changes.ps1" } else { ".ps1" };
            let mut written = Vec::with_capacity(scripts.len());
            for s in &scripts {
                let path = dir.join(format!("{}{suffix}", s.node));
                if let Err(e) = std::fs::write(&path, &s.text) {
                    eprintln!("{}: {e}", path.display());
                    return exit::INVALID;
                }
                written.push(path);
            }
            for path in &written {
                outln!("{}", path.display());
            }
            exit::OK
        },
    )
}
