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
static ALLOCATOR: Allocator = Allocator;

/// mimalloc, with the whole 2 MiB pages of every large block offered to the kernel for
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`, which THP's default `madvise` mode
/// honours): arenas are committed on demand (`commit_on_demand`), on small pages, and the
/// large arrays read at random — a full mesh's half a million sessions — are where huge
/// pages save TLB misses and page faults.
struct Allocator;

/// The size from which a block's whole 2 MiB pages are offered for huge pages.
const LARGE: usize = 4 << 20;

#[cfg(target_os = "linux")]
fn offer_huge_pages(block: *mut u8, size: usize) {
    const HUGE: usize = 2 << 20;
    if block.is_null() || size < LARGE {
        return;
    }
    let start = (block as usize).next_multiple_of(HUGE);
    let end = (block as usize + size) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside a block the allocator just handed out; `madvise`
        // with MADV_HUGEPAGE changes how the kernel backs it, never its contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn offer_huge_pages(_block: *mut u8, _size: usize) {}

// SAFETY: every call is mimalloc's; `offer_huge_pages` only advises the kernel.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let block = unsafe { mimalloc::MiMalloc.alloc(layout) };
        offer_huge_pages(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let block = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        offer_huge_pages(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let block = unsafe { mimalloc::MiMalloc.realloc(block, layout, size) };
        offer_huge_pages(block, size);
        block
    }
}

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
/// balloon hands freed memory back to the host, most of that at the host's cost too. Large
/// blocks still get huge pages ([`Allocator`]), as the BGP state table's slabs do
/// (`bgp/rib/tiles.rs`). Alternating the binaries (`docs/performance-history.md`, session
/// 35): rr-5000 `check` 6.69–6.95 s against 6.99–7.36 s (system time 0.49 against 0.78 s,
/// user time the same), resident 474 → 450 MiB (rr-1000 `check` 93 → 81 MiB); the ten-variant
/// sweep's system time 0.22–0.24 → 0.07–0.17 s. On demand for every block, user time rose
/// 4 % (rr-5000) and 10 % (mesh-1000): small pages' TLB misses in the large arrays.
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

    /// A large block's whole 2 MiB pages are advised for huge pages: the mapping holding
    /// them carries the `hg` flag (`/proc/self/smaps`, `VmFlags`), whether or not the kernel
    /// has huge pages to give.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_block_is_offered_huge_pages() {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            eprintln!("skipped: no /proc/self/smaps");
            return;
        };
        drop(smaps);
        let block: Vec<u8> = Vec::with_capacity(LARGE + (4 << 20));
        let inside = (block.as_ptr() as usize).next_multiple_of(2 << 20);
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("readable");
        let mut holds = false;
        let mut flags = None;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((a, b)) = range
                && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            {
                holds = a <= inside && inside < b;
            } else if holds && let Some(f) = line.strip_prefix("VmFlags:") {
                flags = Some(f.split_whitespace().map(str::to_string).collect::<Vec<_>>());
            }
        }
        let flags = flags.expect("the block's mapping is listed");
        assert!(flags.iter().any(|f| f == "hg"), "{flags:?}");
        drop(block);
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
