//! One-line registries: the tagged config enums that scenario files select with `kind = "..."`.
//!
//! Queue disciplines, congestion controllers, applications, loss models and channels are each
//! listed once, in one invocation of the crate-internal `registry!` macro, one line per kind:
//!
//! ```text
//! registry! {
//!     /// Every discipline, as selected by `kind` in scenario files.
//!     pub enum QueueConfig: dyn Build {
//!         fifo::Fifo(FifoConfig) = "fifo",
//!         drr::Drr(DrrConfig) = "drr",
//!     }
//! }
//! ```
//!
//! A line `module::Variant(Config) = "name"` declares `pub mod module;`, re-exports
//! `module::Config`, and adds the variant `Variant(module::Config)` tagged `kind = "name"`. The
//! enum gets `NAMES` (every tag, in line order, for error messages and docs), `kind()` (the
//! tag of a value) and `config()` (the selected config as the registry's trait object), so
//! per-kind behaviour lives in each config's trait impl, in its own file, and the registry's
//! own methods dispatch through `config()` without naming a kind.
//!
//! The tag is written once, on the registry line: serde needs it as a literal, so it cannot be
//! read from a constant in the component's file. Attributes on a line (such as `#[cfg(test)]`)
//! apply to everything the line declares, so a kind can be compiled in for tests only.
//!
//! Serde behaviour is that of the hand-written enums this replaces: internally tagged by
//! `kind`, unknown fields denied, and an unknown tag reported by serde as
//! ``unknown variant `x`, expected one of `a`, `b` `` in line order.

/// Declares a registry; see the [module docs](self).
macro_rules! registry {
    (
        $(#[$attr:meta])*
        pub enum $Enum:ident: dyn $Trait:ident {
            $( $(#[$gate:meta])* $module:ident :: $Variant:ident ( $Config:ident ) = $name:literal ),+ $(,)?
        }
    ) => {
        $(
            $(#[$gate])*
            pub mod $module;
            $(#[$gate])*
            pub use $module::$Config;
        )+

        $(#[$attr])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
        #[serde(tag = "kind")]
        pub enum $Enum {
            $(
                $(#[$gate])*
                // For rustdoc only: the schema describes a kind by its config's own doc comment.
                #[cfg_attr(doc, doc = concat!("`kind = \"", $name, "\"`: [`", stringify!($Config), "`]."))]
                #[serde(rename = $name)]
                $Variant($Config),
            )+
        }

        impl<'de> serde::Deserialize<'de> for $Enum {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let (kind, rest) = $crate::registry::split_kind(d)?;
                match kind.as_str() {
                    $(
                        $(#[$gate])*
                        $name => $crate::registry::config_from(rest).map(Self::$Variant),
                    )+
                    other => Err($crate::registry::unknown_kind(other, Self::NAMES)),
                }
            }
        }

        impl $Enum {
            /// Every `kind` name, in registry order (the order serde lists them in errors).
            pub const NAMES: &'static [&'static str] = &[$( $(#[$gate])* $name ),+];

            /// The JSON Schema of a key that takes a bare kind name (standing for `{ kind = name }`)
            /// or the tagged table, as `cc` and `coupled` do.
            #[allow(dead_code)]
            pub fn name_or_table_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "oneOf": [
                        { "type": "string", "enum": Self::NAMES, "description": "a kind name: the table with that `kind` and every other key at its default" },
                        g.subschema_for::<Self>(),
                    ]
                })
            }

            /// The `kind` tag of this config.
            pub fn kind(&self) -> &'static str {
                match self {
                    $( $(#[$gate])* Self::$Variant(_) => $name, )+
                }
            }

            /// The selected config, through the trait every kind of this registry implements.
            pub fn config(&self) -> &dyn $Trait {
                match self {
                    $( $(#[$gate])* Self::$Variant(c) => c, )+
                }
            }
        }
    };
}
pub(crate) use registry;

/// Marks the key path inside a tagged config in an error message: `MARK path MARK reason`.
/// Serde loses the path inside an internally tagged enum (it buffers the table first), so a
/// registry deserialises the selected config itself, records the path within it this way, and
/// [`Scenario::from_toml`](crate::Scenario::from_toml) joins it to the outer path:
/// `links[0].queue.quantum: …` rather than `links[0].queue: …`.
pub const PATH_MARK: char = '\u{1f}';

/// Reads a tagged table: its `kind` and the other keys.
pub fn split_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<(String, toml::Value), D::Error> {
    use serde::de::Error;
    let v = <toml::Value as serde::Deserialize>::deserialize(d)?;
    let toml::Value::Table(mut t) = v else {
        return Err(D::Error::custom(format!("invalid type: {}, expected a table with `kind`", v.type_str())));
    };
    match t.remove("kind") {
        Some(toml::Value::String(k)) => Ok((k, toml::Value::Table(t))),
        Some(other) => {
            Err(D::Error::custom(marked("kind", &format!("invalid type: {}, expected a string", other.type_str()))))
        }
        None => Err(D::Error::missing_field("kind")),
    }
}

/// Deserialises one kind's config from the table without `kind`, keeping the key path of an
/// error (see [`PATH_MARK`]).
pub fn config_from<T: serde::de::DeserializeOwned, E: serde::de::Error>(rest: toml::Value) -> Result<T, E> {
    // Kept for a clearer message about a named value given as a number or a boolean (below).
    let copy = rest.clone();
    serde_path_to_error::deserialize::<_, T>(rest).map_err(|e| {
        let path = e.path().to_string();
        let segments: Vec<serde_path_to_error::Segment> = e.path().iter().cloned().collect();
        // The message alone: `to_string` would append toml's " in `key`", which the path says.
        let inner: toml::de::Error = e.into_inner();
        let msg = inner.message().trim();
        if msg.starts_with(NAMED_VALUE_NOT_A_STRING) {
            if let Some(better) = named_value_message::<T>(copy, &segments) {
                return E::custom(marked(&path, &better));
            }
        }
        E::custom(marked(&path, msg))
    })
}

/// What toml's `Value` says when an enum of names (`backoff_rule = "lazy"`) is given a number,
/// a boolean or a date: it names neither the value nor the names it takes.
const NAMED_VALUE_NOT_A_STRING: &str = "invalid type: unit variant, expected string only";

/// For [`NAMED_VALUE_NOT_A_STRING`] at `segments`: `invalid type: integer `0`, expected `a` or
/// `b``: the value found there, and the names from serde's own message for an unknown name
/// (the config deserialised once more with a name no enum has in the value's place).
fn named_value_message<T: serde::de::DeserializeOwned>(
    mut v: toml::Value,
    segments: &[serde_path_to_error::Segment],
) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut at = &mut v;
    for s in segments {
        at = match (s, at) {
            (Segment::Map { key }, toml::Value::Table(t)) => t.get_mut(key.as_str())?,
            (Segment::Seq { index }, toml::Value::Array(a)) => a.get_mut(*index)?,
            _ => return None,
        };
    }
    let got = match &*at {
        toml::Value::Integer(i) => format!("integer `{i}`"),
        toml::Value::Float(f) => format!("floating point `{f}`"),
        toml::Value::Boolean(b) => format!("boolean `{b}`"),
        other => other.type_str().to_string(),
    };
    const PROBE: &str = "\u{1}";
    *at = toml::Value::String(PROBE.into());
    let e = match serde_path_to_error::deserialize::<_, T>(v) {
        Ok(_) => return None,
        Err(e) => e.into_inner(),
    };
    let expected = e.message().split_once("expected ")?.1.trim().to_string();
    Some(format!("invalid type: {got}, expected {expected}"))
}

/// An unknown `kind`, reported at the `kind` key in serde's words (``unknown variant `x`,
/// expected one of `a`, `b` ``).
pub fn unknown_kind<E: serde::de::Error>(kind: &str, names: &'static [&'static str]) -> E {
    let e: toml::de::Error = serde::de::Error::unknown_variant(kind, names);
    E::custom(marked("kind", e.message()))
}

/// `msg` marked as being at `path` (relative); a message already marked keeps its own inner
/// path, appended.
fn marked(path: &str, msg: &str) -> String {
    let (inner, reason) = split_marked(msg);
    let full = join_path(path, inner.unwrap_or(""));
    format!("{PATH_MARK}{full}{PATH_MARK}{reason}")
}

/// `(Some(inner path), reason)` of a marked message, `(None, msg)` otherwise.
pub fn split_marked(msg: &str) -> (Option<&str>, &str) {
    let Some(rest) = msg.strip_prefix(PATH_MARK) else { return (None, msg) };
    match rest.split_once(PATH_MARK) {
        Some((path, reason)) => (Some(path), reason),
        None => (None, rest),
    }
}

/// `a.b` + `c[0]` → `a.b.c[0]`; `.` or empty stands for no path.
pub fn join_path(outer: &str, inner: &str) -> String {
    let outer = if outer == "." { "" } else { outer };
    let inner = if inner == "." { "" } else { inner };
    match (outer.is_empty(), inner.is_empty()) {
        (_, true) => outer.to_string(),
        (true, false) => inner.to_string(),
        (false, false) if inner.starts_with('[') => format!("{outer}{inner}"),
        (false, false) => format!("{outer}.{inner}"),
    }
}

/// `names` quoted and joined for a message: `"a"`, `"a" or "b"`, `"a", "b" or "c"`, with
/// `last` (such as "or") before the final name.
pub fn quoted_list(names: &[&str], last: &str) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((only, [])) => only.clone(),
        Some((tail, head)) => format!("{} {last} {tail}", head.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::quoted_list;

    #[test]
    fn quoted_lists() {
        assert_eq!(quoted_list(&[], "or"), "");
        assert_eq!(quoted_list(&["a"], "or"), "\"a\"");
        assert_eq!(quoted_list(&["a", "b"], "or"), "\"a\" or \"b\"");
        assert_eq!(quoted_list(&["a", "b", "c"], "or"), "\"a\", \"b\" or \"c\"");
    }
}
