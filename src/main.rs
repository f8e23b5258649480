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
    let code = std::panic::catch_unwind(podnet::cli::main).unwrap_or(podnet::cli::exit::INTERNAL);
    std::process::exit(code);
}
