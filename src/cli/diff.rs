//! `podnet diff`: what a change to a layout breaks and fixes (issue #15, SPEC §1).
//!
//! The two sides are two files, one file and the same file with `--set` overrides, or one
//! file at a git revision (`--base-ref`, read with `git show REV:./FILE` from the file's
//! folder) and as it is now. Both are loaded first (so an invalid side exits 2 before
//! anything runs), run with the same seed one after the other, each reduced to a digest
//! before the next runs (`diff::digest`), and compared.

use std::path::{Path, PathBuf};

use super::common::run_loaded;
use super::{DiffArgs, DiffFormat, exit};
use crate::diff::{self, Digest, FailOn, Grouping, render};
use crate::scenario::{self, Scenario};
use crate::sim::events::EventLog;

pub fn run(args: &DiffArgs) -> i32 {
    let (base, new) = match load_sides(args) {
        Ok(sides) => sides,
        Err(code) => return code,
    };
    let ((mut base, base_source), (mut new, new_source)) = (base, new);
    // The same seed on both sides: `--seed`, else the base's.
    let seed = args.seed.unwrap_or(base.seed);
    base.seed = seed;
    new.seed = seed;
    let grouping = Grouping::choose(&[&base, &new]);
    let base_digest = match digest(base, &args.base, grouping, false) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let new_path = args.new.as_deref().unwrap_or(&args.base);
    let new_digest = match digest(new, new_path, grouping, true) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let fail_on: Vec<FailOn> = if args.fail_on.contains(&FailOn::None) {
        Vec::new()
    } else {
        args.fail_on.clone()
    };
    let diff = diff::compare(
        &base_digest,
        &new_digest,
        (base_source, new_source),
        &fail_on,
    );
    match args.format {
        DiffFormat::Text => out!("{}", render::text(&diff)),
        DiffFormat::Markdown => out!("{}", render::markdown(&diff)),
        DiffFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&diff).unwrap_or_default()
        ),
    }
    if diff.regressed {
        exit::FAILED
    } else {
        exit::OK
    }
}

/// Runs one side and keeps its digest; the world is freed before the other side runs (the
/// last one is left to the process exit, as `check` does).
fn digest(s: Scenario, path: &Path, grouping: Grouping, last: bool) -> Result<Digest, i32> {
    let ran = run_loaded(s, Some(path), |_| Ok(EventLog::discard()))?;
    let digest = Digest::new(&ran.scenario, &ran.outcome, ran.results, grouping);
    if last {
        std::mem::forget(ran.outcome);
    }
    Ok(digest)
}

type Side = (Scenario, String);

/// Loads both sides, printing every problem of either; exit 2 when one is invalid or the
/// arguments do not name two sides.
fn load_sides(args: &DiffArgs) -> Result<(Side, Side), i32> {
    let sets = parse_sets(&args.set).map_err(|m| {
        eprintln!("--set: {m}");
        exit::INVALID
    })?;
    if args.new.is_none() && sets.is_empty() && args.base_ref.is_none() {
        eprintln!(
            "podnet diff needs two sides: BASE NEW, or SCENARIO --set PATH=VALUE, or SCENARIO --base-ref REV"
        );
        return Err(exit::INVALID);
    }
    let base = match &args.base_ref {
        Some(rev) => {
            let text = git_show(rev, &args.base)?;
            let name = args.base.display().to_string();
            scenario::load_str(&name, &text)
                .map(|s| (s, format!("{name}@{rev}")))
                .map_err(|d| format!("the base at {rev}:\n{d}"))
        }
        None => scenario::load(&args.base)
            .map(|s| (s, args.base.display().to_string()))
            .map_err(|d| d.to_string()),
    };
    let new_path: &PathBuf = args.new.as_ref().unwrap_or(&args.base);
    let label = std::iter::once(new_path.display().to_string())
        .chain(sets.iter().map(|(p, v)| format!("--set {p}={v}")))
        .collect::<Vec<_>>()
        .join(" ");
    let new = scenario::load_with_overrides(new_path, &sets)
        .map(|s| (s, label))
        .map_err(|d| d.to_string());
    match (base, new) {
        (Ok(b), Ok(n)) => Ok((b, n)),
        (b, n) => {
            for e in [b.err(), n.err()].into_iter().flatten() {
                eprint!("{e}");
            }
            Err(exit::INVALID)
        }
    }
}

/// `PATH=VALUE` pairs (one value each: a comma belongs to the value).
fn parse_sets(sets: &[String]) -> Result<Vec<(String, String)>, String> {
    sets.iter()
        .map(|set| match set.split_once('=') {
            Some((path, value)) if !path.is_empty() && !value.is_empty() => {
                Ok((path.to_string(), value.to_string()))
            }
            _ => Err(format!("`{set}` is not PATH=VALUE")),
        })
        .collect()
}

/// The file's text at `rev`, read with `git show REV:./NAME` in the file's folder (so the
/// path is relative to it, wherever podnet runs).
fn git_show(rev: &str, file: &Path) -> Result<String, i32> {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(name) = file.file_name() else {
        eprintln!("--base-ref: {} is not a file", file.display());
        return Err(exit::INVALID);
    };
    let spec = format!("{rev}:./{}", name.to_string_lossy());
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(["show", &spec])
        .output();
    match output {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).map_err(|_| {
            eprintln!("--base-ref: {} at {rev} is not UTF-8", file.display());
            exit::INVALID
        }),
        Ok(o) => {
            eprintln!(
                "--base-ref: git show {spec} (in {}) failed: {}",
                folder.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            );
            Err(exit::INVALID)
        }
        Err(e) => {
            eprintln!("--base-ref: cannot run git: {e}");
            Err(exit::INVALID)
        }
    }
}
