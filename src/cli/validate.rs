//! `podnet validate`: load and validate scenarios, print every problem.

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
                outln!(
                    "{}: valid ({} nodes, {} workloads, {} resources, {} events, {} expectations)",
                    path.display(),
                    s.topology.nodes.len(),
                    s.workloads.len(),
                    s.resources.len(),
                    s.actions.len(),
                    s.expectations.len()
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
