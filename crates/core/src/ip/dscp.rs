//! DiffServ code points (DSCP): the 6-bit field in the IPv4 TOS / IPv6 Traffic Class octet
//! that selects a packet's per-hop behaviour (RFC 2474 §3).
//!
//! Reading list: RFC 2474 (the field; class selectors CS0–CS7, §4.2.2), RFC 2597 (Assured
//! Forwarding AFxy: class x = 1..4, drop precedence y = 1..3, code point `8x + 2y`), RFC 3246
//! (Expedited Forwarding, EF = 46), RFC 5865 (VOICE-ADMIT, 44), RFC 8622 (Lower Effort, LE = 1),
//! RFC 4594 (the service classes that use them). `docs/models/diffserv.md`.
//!
//! Scenario files name a code point either by number (0–63) or by its name, case-insensitive:
//! `"BE"` / `"default"` / `"CS0"` (0), `"CS1"`…`"CS7"`, `"AF11"`…`"AF43"`, `"EF"`,
//! `"VOICE-ADMIT"`, `"LE"`. The ECN bits (the octet's two low bits, RFC 3168) are not part of
//! the code point.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// A DiffServ code point, 0–63.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dscp(u8);

impl Dscp {
    /// Default forwarding / best effort (RFC 2474 §4.1).
    pub const BE: Dscp = Dscp(0);
    /// Expedited Forwarding (RFC 3246 §2.4).
    pub const EF: Dscp = Dscp(46);

    /// The code point `v`, if it fits 6 bits.
    pub const fn new(v: u8) -> Option<Dscp> {
        if v < 64 {
            Some(Dscp(v))
        } else {
            None
        }
    }

    /// Class selector `CSn` (RFC 2474 §4.2.2.1): `8n`, for `n` in 0..=7.
    ///
    /// # Panics
    /// If `n > 7`.
    pub const fn cs(n: u8) -> Dscp {
        assert!(n <= 7, "class selectors are CS0..CS7");
        Dscp(n << 3)
    }

    /// Assured Forwarding `AFxy` (RFC 2597 §6): `8x + 2y`, class `x` in 1..=4, drop precedence
    /// `y` in 1..=3.
    ///
    /// # Panics
    /// If `x` or `y` is out of range.
    pub const fn af(x: u8, y: u8) -> Dscp {
        assert!(x >= 1 && x <= 4 && y >= 1 && y <= 3, "AF classes are AF11..AF43");
        Dscp(8 * x + 2 * y)
    }

    /// The 6-bit value.
    pub const fn value(self) -> u8 {
        self.0
    }

    /// Parses a name (`"EF"`, `"AF41"`, `"CS5"`, `"BE"`, …, case-insensitive) or a decimal number
    /// 0–63. The error says what was expected.
    pub fn parse(s: &str) -> Result<Dscp, String> {
        let t = s.trim();
        if let Ok(v) = t.parse::<u64>() {
            return Dscp::from_number(v);
        }
        let u = t.to_ascii_uppercase();
        let named = match u.as_str() {
            "BE" | "DEFAULT" | "DF" => Some(Dscp::BE),
            "EF" => Some(Dscp::EF),
            "VOICE-ADMIT" | "VA" => Some(Dscp(44)),
            "LE" => Some(Dscp(1)),
            _ => {
                let b = u.as_bytes();
                match (b.len(), b) {
                    (3, [b'C', b'S', n @ b'0'..=b'7']) => Some(Dscp::cs(n - b'0')),
                    (4, [b'A', b'F', x @ b'1'..=b'4', y @ b'1'..=b'3']) => Some(Dscp::af(x - b'0', y - b'0')),
                    _ => None,
                }
            }
        };
        named.ok_or_else(|| {
            format!(
                "unknown DSCP {t:?}: expected a number 0-63 or a name: BE (or default), CS0-CS7, AF11-AF43 \
                 (AFxy, x 1-4, y 1-3), EF, VOICE-ADMIT, LE"
            )
        })
    }

    fn from_number(v: u64) -> Result<Dscp, String> {
        if v < 64 {
            Ok(Dscp(v as u8))
        } else {
            Err(format!("DSCP {v} out of range: a code point is 6 bits, 0-63"))
        }
    }

    /// The code point's name if it has one (`EF`, `AF41`, `CS5`, `BE`), else its number.
    pub fn name(self) -> String {
        match self.0 {
            0 => "BE".into(),
            1 => "LE".into(),
            44 => "VOICE-ADMIT".into(),
            46 => "EF".into(),
            v if v % 8 == 0 => format!("CS{}", v / 8),
            v if (1..=4).contains(&(v / 8)) && matches!(v % 8, 2 | 4 | 6) => format!("AF{}{}", v / 8, v % 8 / 2),
            v => v.to_string(),
        }
    }
}

impl fmt::Display for Dscp {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Dscp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Dscp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dscp, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Dscp;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a DSCP: a number 0-63 or a name like \"EF\" or \"AF41\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dscp, E> {
                Dscp::parse(v).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dscp, E> {
                Dscp::from_number(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dscp, E> {
                match u64::try_from(v) {
                    Ok(u) => self.visit_u64(u),
                    Err(_) => Err(E::custom(format!("DSCP {v} out of range: a code point is 6 bits, 0-63"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Dscp {
    fn schema_name() -> Cow<'static, str> {
        "dscp".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "title": "dscp",
            "description": "a DiffServ code point: a number 0-63 or a name (BE/default, CS0-CS7, AF11-AF43, EF, \
                            VOICE-ADMIT, LE; case-insensitive)",
            "oneOf": [
                { "type": "integer", "minimum": 0, "maximum": 63 },
                { "type": "string", "pattern": "(?i)^\\s*(BE|DEFAULT|DF|EF|VOICE-ADMIT|VA|LE|CS[0-7]|AF[1-4][1-3]|[0-9]+)\\s*$" }
            ],
            "examples": ["EF", "AF41", 46],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rfcs() {
        // RFC 3246: EF = 101110; RFC 2597 §6 table: AF11 = 001010 … AF43 = 100110.
        assert_eq!(Dscp::parse("EF").unwrap().value(), 0b101110);
        assert_eq!(Dscp::parse("af11").unwrap().value(), 0b001010);
        assert_eq!(Dscp::parse("AF13").unwrap().value(), 0b001110);
        assert_eq!(Dscp::parse("AF41").unwrap().value(), 0b100010);
        assert_eq!(Dscp::parse("AF43").unwrap().value(), 0b100110);
        assert_eq!(Dscp::parse("CS7").unwrap().value(), 56);
        assert_eq!(Dscp::parse("default").unwrap(), Dscp::BE);
        assert_eq!(Dscp::parse(" 34 ").unwrap(), Dscp::af(4, 1));
        for v in 0..64 {
            let d = Dscp(v);
            assert_eq!(Dscp::parse(&d.name()).unwrap(), d, "{v} round-trips through {}", d.name());
        }
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        for bad in ["AF44", "AF51", "CS8", "XX", "64", ""] {
            let e = Dscp::parse(bad).unwrap_err();
            assert!(e.contains("0-63"), "{bad}: {e}");
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            d: Dscp,
        }
        let e = toml::from_str::<S>("d = 99").unwrap_err().to_string();
        assert!(e.contains("DSCP 99 out of range"), "{e}");
        let e = toml::from_str::<S>("d = -1").unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
        assert_eq!(toml::from_str::<S>("d = 46").unwrap().d, Dscp::EF);
    }
}
