//! `podnet validate`: load and validate scenarios, print every problem.
//!
//! A valid scenario's summary also gives the memory its simulation needs
//! (`scenario::footprint`); one that cannot fit this machine is still valid input (another
//! machine may run it) but gets a warning with the message and remedy `check` and `run`
//! refuse it with.

use super::{ValidateArgs, exit};
use crate::scenario;

pub fn validate(args: &ValidateArgs) -> i32 {
    let mut code = exit::OK;
    for path in &args.scenarios {
        match scenario::load(path) {
            Ok(s) => {
                for line in s.warning_lines() {
                    eprintln!("{line}");
                }
                let footprint = scenario::footprint::estimate(&s);
                let too_large = scenario::footprint::machine_memory()
                    .and_then(|available| scenario::footprint::refusal(&footprint, available));
                if let Some(why) = too_large {
                    eprintln!("{}: warning: {why}", path.display());
                }
                outln!(
                    "{}: valid ({} nodes, {} workloads, {} resources, {} events, {} expectations; \
                     simulating needs about {})",
                    path.display(),
                    s.topology.nodes.len(),
                    s.workloads.len(),
                    s.resources.len(),
                    s.actions.len(),
                    s.expectations.len(),
                    scenario::footprint::human_bytes(footprint.bytes)
                );
            }
            Err(diags) => {
                out!("{diags}");
                let errors = diags.errors().count();
                outln!(
                    "{}: {errors} error{}",
                    path.display(),
                    if errors == 1 { "" } else { "s" }
                );
                code = exit::INVALID;
            }
        }
    }
    code
}
