//! Standard output for every subcommand.
//!
//! `print!` panics when stdout is closed, which would turn `podnet run | head -1` into an
//! "internal error". Every command writes through [`out!`]/[`outln!`] instead (`print!` is
//! denied in `cli` by `clippy::print_stdout`): a closed stdout (`EPIPE`) ends the process
//! quietly with exit 0, as Unix tools end on `SIGPIPE` (SPEC §1). Any other write error is
//! reported on stderr and exits with 2, like an unwritable output folder.

use std::fmt;
use std::io::{ErrorKind, Write};

use super::exit;

/// Writes `args` to stdout and flushes; never returns if stdout cannot be written.
pub fn emit(args: fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(exit::OK),
        Err(e) => {
            eprintln!("cannot write to standard output: {e}");
            std::process::exit(exit::INVALID)
        }
    }
}

/// `print!` to stdout through [`emit`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::output::emit(format_args!($($arg)*)) };
}

/// `println!` to stdout through [`emit`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::output::emit(format_args!("{}\n", format_args!($($arg)*))) };
}
