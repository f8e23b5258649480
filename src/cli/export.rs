//! `podnet export bird`: writes `<device>.conf` per node and router, the BIRD 2 configuration
//! `export::bird` renders for the scenario at an instant, and lists the files on stdout.

use std::path::PathBuf;

use super::common::with_state_at;
use super::{ExportArgs, ExportWhat, exit};
use crate::export::bird;

pub fn run(args: &ExportArgs) -> i32 {
    match args.what {
        ExportWhat::Bird => {}
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
