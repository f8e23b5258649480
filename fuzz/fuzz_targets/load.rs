//! The loader on any bytes: it must return a scenario or located diagnostics, never panic,
//! and stay within the README's time and memory bounds (run with `-rss_limit_mb=512
//! -timeout=2` to hold it to them).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match podnet::scenario::load_str("fuzz.yaml", text) {
            Ok(s) => {
                let _ = s.warning_lines();
            }
            Err(d) => {
                let _ = d.to_string();
            }
        }
    }
});
