//! The `podnet` binary: parse, run, exit. A panic is a bug: it is reported in one line and
//! the process exits with 3, never with a backtrace.
//!
//! The allocator is mimalloc: a cold start of a large cluster allocates and frees tens of
//! millions of small objects (UPDATE bodies, path attributes, steps), whose allocation and
//! scattered pages cost about 12 % more CPU time under glibc's malloc (rr-2000 `check`,
//! the two binaries run side by side). Results do not depend on the allocator.
//!
//! It is mimalloc's v2 line (the crate's `v2` feature), not the v3 the crate builds by
//! default: at the same speed, v3's pages leave more of its arena touched — resident memory
//! of rr-1000 `check` 118 → 92 MiB, rr-5000 `run` 548 → 508 MiB, a ten-variant sweep of
//! rr-1000 266 → 193 MiB — and memory first touched costs the kernel's zeroing (on a virtual
//! machine that hands freed pages back to its host, the host's too): that sweep took 1.10
//! times its ten `check`s' time on two cores instead of 1.19 (`docs/performance-history.md`,
//! session 29).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("internal error (a bug in podnet, please report it){location}: {message}");
    }));
    let code = std::panic::catch_unwind(|| {
        let cli = match podnet::cli::parse() {
            Ok(cli) => cli,
            Err(code) => return code,
        };
        if matches!(cli.command, podnet::cli::Command::Sweep(_)) {
            keep_freed_memory();
        }
        podnet::cli::dispatch(cli)
    })
    .unwrap_or(podnet::cli::exit::INTERNAL);
    std::process::exit(code);
}

/// mimalloc v2's `mi_option_purge_delay` (its `include/mimalloc.h`: the sixteenth option,
/// 10 ms by default, -1 for never), which the crate's bindings do not name.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// mimalloc v2's `mi_option_arena_eager_commit` (the fifth option: 2 by default, eager
/// where the OS overcommits, as Linux does; 0 for on demand).
#[cfg(target_os = "linux")]
const MI_OPTION_ARENA_EAGER_COMMIT: std::ffi::c_int = 4;

unsafe extern "C" {
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// A sweep runs its variants one after another on each core, each about the size of the
/// last: memory one variant frees is kept for the next instead of being handed back to the
/// kernel 10 ms later and faulted in again, zeroed, a moment after (on a virtual machine
/// whose balloon reports freed memory to its host, from the host). The process's resident
/// memory stays bounded by its largest moment, since what is kept is reused. The other
/// commands keep the default: for `check` and `run` (one simulation) and `diff` (two, one
/// after the other) keeping it measured within the machine's swing, and it raised mesh-1000
/// `run`'s peak 0.45 → 0.53 GiB (session 32). Ten-variant sweep of rr-1000,
/// `scripts/bench.sh` order: page faults 41,000–45,000 → about 400, CPU time −7 %, resident
/// memory 0.17 → 0.21 GiB (`docs/performance-history.md`, session 31).
fn keep_freed_memory() {
    // SAFETY: `mi_option_set` only stores the option's value (mimalloc reads it at its next
    // purge); 15 is `mi_option_purge_delay` in the mimalloc v2 this binary links (the
    // `v2` feature of the locked `mimalloc` crate; the test below checks its default).
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) }
}

/// Every command commits the allocator's memory as it is used rather than its arenas whole:
/// committed whole, an arena is backed by transparent huge pages that the kernel zeroes 2 MiB
/// at a time at first touch, however little of each is used — on a virtual machine whose
/// balloon hands freed memory back to the host, most of that at the host's cost too. On
/// demand, rr-5000 `check`: system time 1.08 → 0.26 s, wall 7.68 → 6.99 s (user time +2 %,
/// small pages' TLB misses), resident 474 → 450 MiB; rr-1000 `check` 93 → 81 MiB, and the
/// ten-variant sweep's system time 0.22–0.24 → 0.08–0.09 s (`docs/performance-history.md`,
/// session 35). The BGP state table's slabs keep their huge pages (`bgp/rib/tiles.rs`
/// advises them itself).
///
/// Set before anything is allocated: the runtime allocates before `main`, and mimalloc
/// reserves its first arena then. So it runs from the executable's initializers
/// (`.init_array`), which the loader calls before the runtime's start-up (Linux; elsewhere
/// mimalloc's default stays).
#[cfg(target_os = "linux")]
extern "C" fn commit_on_demand() {
    // SAFETY: `mi_option_set` only stores the option's value, read when mimalloc reserves an
    // arena; 4 is `mi_option_arena_eager_commit` in the mimalloc v2 this binary links (the
    // test below checks its default).
    unsafe { mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0) }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static COMMIT_ON_DEMAND: extern "C" fn() = commit_on_demand;

/// The purge delay mimalloc is using, in milliseconds (-1: never).
#[cfg(test)]
fn purge_delay() -> std::ffi::c_long {
    // SAFETY: `mi_option_get` reads an option; 15 is one (see `keep_freed_memory`).
    unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_kept_for_a_sweep_is_mimallocs_purge_delay() {
        // mimalloc v2's `src/options.c`: `purge_delay` defaults to 10 ms unless the
        // environment sets it, and none of its neighbours defaults to 10 (eager_commit_delay
        // 0 or 1, use_numa_nodes 0, disallow_os_alloc 0, os_tag 100), so a numbering that
        // moved fails here.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay(), 10);
        }
        keep_freed_memory();
        assert_eq!(purge_delay(), -1);
    }

    /// The test binary starts as `podnet` does, through the same initializer.
    #[cfg(target_os = "linux")]
    #[test]
    fn arenas_are_committed_on_demand_from_the_start() {
        // SAFETY: `mi_option_get` reads an option.
        let option = |o: std::ffi::c_int| unsafe { mi_option_get(o) };
        if std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_none() {
            assert_eq!(option(MI_OPTION_ARENA_EAGER_COMMIT), 0);
        }
        // Its neighbours keep mimalloc v2's defaults (`src/options.c`): `eager_commit` 1
        // before it, `purge_decommits` 1 after it — a numbering that moved fails here or
        // in the purge delay's test.
        if std::env::var_os("MIMALLOC_EAGER_COMMIT").is_none() {
            assert_eq!(option(MI_OPTION_ARENA_EAGER_COMMIT - 1), 1);
        }
        if std::env::var_os("MIMALLOC_PURGE_DECOMMITS").is_none() {
            assert_eq!(option(MI_OPTION_ARENA_EAGER_COMMIT + 1), 1);
        }
    }
}
