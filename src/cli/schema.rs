//! `podnet schema`: the JSON Schema of the scenario file.

use super::exit;

pub fn schema() -> i32 {
    let schema = crate::scenario::raw::scenario_schema();
    match serde_json::to_string_pretty(&schema) {
        Ok(text) => {
            outln!("{text}");
            exit::OK
        }
        Err(e) => {
            eprintln!("internal error: cannot render the schema: {e}");
            exit::INTERNAL
        }
    }
}
