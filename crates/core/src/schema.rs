//! The JSON Schema of a scenario file, generated from the config types themselves.
//!
//! Every config struct derives `schemars::JsonSchema` beside `serde::Deserialize`, so the
//! schema's keys, types, defaults and doc comments are the parser's: a key the parser accepts is
//! in the schema and the other way round. Quantities with units are strings with the unit's
//! pattern ([`crate::units::serde_units`]); a registry (`kind = "…"`) is a `oneOf` over its kinds.
//! The schema is JSON Schema draft-07, the dialect TOML editors (taplo, Even Better TOML) read.
//!
//! What the schema cannot say, the build still checks: cross-references (a flow's `src` names a
//! node), ranges that depend on other keys (an MSS below the MTU), files that must exist.

use crate::scenario::Scenario;

/// The `$id` the schema is published under (the key editors associate with `*.toml` files).
pub const SCHEMA_ID: &str = "https://qoelab.dev/schema/scenario.schema.json";

/// The scenario schema as a JSON value.
pub fn scenario_schema() -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft07();
    let mut schema = settings.into_generator().into_root_schema_for::<Scenario>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("$id".into(), SCHEMA_ID.into());
        obj.insert("title".into(), "qoelab scenario".into());
    }
    schema
}

/// The scenario schema as pretty-printed JSON, keys in a stable order.
pub fn scenario_schema_json() -> String {
    let mut s = serde_json::to_string_pretty(&scenario_schema()).expect("a JSON value always serialises");
    s.push('\n');
    s
}
