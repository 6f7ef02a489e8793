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
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", deny_unknown_fields)]
        pub enum $Enum {
            $(
                $(#[$gate])*
                #[doc = concat!("`kind = \"", $name, "\"`: [`", stringify!($Config), "`].")]
                #[serde(rename = $name)]
                $Variant($Config),
            )+
        }

        impl $Enum {
            /// Every `kind` name, in registry order (the order serde lists them in errors).
            pub const NAMES: &'static [&'static str] = &[$( $(#[$gate])* $name ),+];

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
