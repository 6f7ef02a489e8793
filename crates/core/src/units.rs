//! Units: data rates, and the parsers for unit-carrying scenario strings.
//!
//! Scenario values are strings with units, as ns-3 attributes are: `"10Mbps"`, `"20ms"`,
//! `"64KB"`, `"50p"`. Decimal prefixes (k = 10^3, M = 10^6, G = 10^9) apply to rates and sizes;
//! `KiB`/`MiB` are binary. A parse failure says what was expected and what was found.

use crate::time::Dur;
use std::fmt;

/// A data rate in bits per second.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(pub u64);

impl Rate {
    pub fn bps(self) -> u64 {
        self.0
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond so that a
    /// transmitter never finishes early.
    ///
    /// # Panics
    /// If the rate is zero (scenario validation rejects zero rates).
    pub fn tx_time(self, bytes: u64) -> Dur {
        assert!(self.0 > 0, "tx_time on a zero rate");
        // Every packet size fits the 64-bit path (up to 2.3 GB); u128 division is a libcall
        // several times slower and was ~2 % of a TFD run. Same result either way.
        if let Some(bits) = bytes.checked_mul(8 * 1_000_000_000) {
            return Dur(bits.div_ceil(self.0));
        }
        let bits = bytes as u128 * 8 * 1_000_000_000;
        Dur(bits.div_ceil(self.0 as u128) as u64)
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bps", self.0)
    }
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' || *c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // "1e3ms": the 'e' belongs to the number only if followed by a digit or sign.
    let (mut num, mut unit) = s.split_at(end);
    if num.ends_with(['e', 'E']) {
        num = &num[..num.len() - 1];
        unit = &s[num.len()..];
    }
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// Parses a rate such as `"10Mbps"`, `"1.5Gbps"`, `"64kbps"`, `"800bps"`.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let bad = || format!("expected a rate like \"10Mbps\", got {s:?}");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit {
        "bps" | "b/s" => 1.0,
        "kbps" | "Kbps" | "kb/s" => 1e3,
        "Mbps" | "Mb/s" => 1e6,
        "Gbps" | "Gb/s" => 1e9,
        "Tbps" => 1e12,
        _ => return Err(bad()),
    };
    if !(v.is_finite()) {
        return Err(bad());
    }
    if v <= 0.0 {
        return Err(format!("rate must be positive, got {s:?}"));
    }
    let bps = (v * mult).round();
    if bps < 1.0 {
        // A rate that rounds to 0 bit/s would never finish serialising a packet.
        return Err(format!("rate must be at least 1bps, got {s:?}"));
    }
    if bps > MAX_RATE_BPS {
        return Err(format!("rate must be at most 1000Tbps, got {s:?}"));
    }
    Ok(Rate(bps as u64))
}

/// Largest rate a scenario may give: 1 Pbit/s, far above any link, far below `u64` bits/s.
const MAX_RATE_BPS: f64 = 1e15;

/// Largest time a scenario may give, 2^62 ns (about 146 years): half of the `u64` nanosecond
/// range, so a start time plus a duration or a step times a count can be checked instead of
/// silently saturating.
pub const MAX_TIME_NS: u64 = 1 << 62;

/// Largest size in bytes a scenario may give (2^62 B): sums of sizes stay within `u64`.
const MAX_BYTES: f64 = (1u64 << 62) as f64;

/// Parses a duration such as `"20ms"`, `"1.5s"`, `"250us"`, `"10ns"`, `"2min"`.
pub fn parse_time(s: &str) -> Result<Dur, String> {
    let bad = || format!("expected a time like \"20ms\", got {s:?}");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    if !v.is_finite() {
        return Err(bad());
    }
    if v < 0.0 {
        return Err(format!("time must not be negative, got {s:?}"));
    }
    if v * mult * 1e9 > MAX_TIME_NS as f64 {
        return Err(format!("time must be below 146 years (2^62 ns), got {s:?}"));
    }
    Ok(Dur::from_secs_f64(v * mult))
}

/// Parses a size in bytes such as `"1250B"`, `"64KB"`, `"4MiB"`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let bad = || format!("expected a size like \"64KB\", got {s:?}");
    let (v, unit) = split_number(s).ok_or_else(bad)?;
    let mult = match unit {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    if !v.is_finite() {
        return Err(bad());
    }
    if v < 0.0 {
        return Err(format!("size must not be negative, got {s:?}"));
    }
    if v * mult > MAX_BYTES {
        return Err(format!("size must be below 2^62 bytes, got {s:?}"));
    }
    Ok((v * mult).round() as u64)
}

/// A buffer limit: in packets (`"50p"`) or in bytes (`"64KB"`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

/// A buffer limit: at least one packet (`"1p"`) or one byte. A zero limit would drop every
/// packet, which is never what a scenario means.
pub fn parse_limit(s: &str) -> Result<Limit, String> {
    let t = s.trim();
    let l = if let Some(n) = t.strip_suffix('p') {
        n.trim()
            .parse::<u64>()
            .map(Limit::Packets)
            .map_err(|_| format!("expected a limit like \"50p\" or \"64KB\", got {s:?}"))?
    } else {
        parse_bytes(t).map(Limit::Bytes).map_err(|_| format!("expected a limit like \"50p\" or \"64KB\", got {s:?}"))?
    };
    match l {
        Limit::Packets(0) | Limit::Bytes(0) => {
            Err(format!("a buffer limit must be at least 1 packet or 1 byte, got {s:?}"))
        }
        l => Ok(l),
    }
}

/// Serde adapters: scenario fields hold the typed value but (de)serialise as unit strings.
///
/// Each adapter is a unit type named as a module would be (`#[serde(with =
/// "serde_units::time")]` calls `time::deserialize`/`time::serialize`), so that the same path
/// also gives the field's JSON Schema (`schemars::JsonSchema` on the adapter): a string with the
/// unit's pattern, as [`crate::schema`] publishes it.
#[allow(non_camel_case_types)]
pub mod serde_units {
    use super::*;
    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
    use serde::{de, Deserializer, Serializer};
    use std::borrow::Cow;

    /// A decimal number as the unit parsers read it (no sign: every quantity is ≥ 0).
    const NUM: &str = r"^\s*\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*";
    /// The unit suffixes each parser accepts (`parse_rate`, `parse_time`, `parse_bytes`).
    pub const RATE_UNITS: &str = "(bps|b/s|kbps|Kbps|kb/s|Mbps|Mb/s|Gbps|Gb/s|Tbps)";
    pub const TIME_UNITS: &str = "(ns|us|µs|ms|s|min|h)";
    pub const SIZE_UNITS: &str = "(B|KB|kB|MB|GB|KiB|MiB|GiB)";

    fn quantity(name: &str, units: &str, description: &str, example: &str) -> Schema {
        json_schema!({
            "title": name,
            "type": "string",
            "pattern": format!("{NUM}{units}\\s*$"),
            "description": description,
            "examples": [example],
        })
    }

    /// What a unit-carrying field expects, for errors on a value of the wrong type: the
    /// quantity's name, an example, and the unit to suggest after a bare number.
    #[derive(Copy, Clone)]
    struct Expected {
        /// e.g. `a time like "20ms"`.
        what: &'static str,
        /// Appended to a bare number to suggest the fix: `10` → `"10s"`.
        unit: &'static str,
    }

    const RATE: Expected = Expected { what: "a rate like \"10Mbps\"", unit: "Mbps" };
    const TIME: Expected = Expected { what: "a time like \"20ms\"", unit: "s" };
    const SIZE: Expected = Expected { what: "a size like \"64KB\"", unit: "KB" };
    const LIMIT: Expected = Expected { what: "a limit like \"50p\" or \"64KB\"", unit: "p" };

    /// A unit string; anything else is refused saying which string was expected, with an
    /// example, and for a bare number the same number with a unit (`sim.duration = 10`:
    /// `expected a time like "20ms", got the number 10 without a unit (write "10s")`).
    struct UnitString(Expected);

    impl<'de> de::Visitor<'de> for UnitString {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(self.0.what)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
            Err(self.bare(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
            Err(self.bare(v))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
            // Debug: the shortest form, with an exponent where Display would print 1e300 in full.
            Err(self.bare(format_args!("{v:?}")))
        }
    }

    impl UnitString {
        fn bare<E: de::Error>(&self, v: impl fmt::Display) -> E {
            E::custom(format_args!(
                "expected {}, got the number {v} without a unit (write \"{v}{}\")",
                self.0.what, self.0.unit
            ))
        }
    }

    fn unit_string<'de, D: Deserializer<'de>>(d: D, e: Expected) -> Result<String, D::Error> {
        d.deserialize_any(UnitString(e))
    }

    /// As [`unit_string`], for an optional field (absent or `None` stays `None`).
    fn opt_unit_string<'de, D: Deserializer<'de>>(d: D, e: Expected) -> Result<Option<String>, D::Error> {
        struct Opt(Expected);
        impl<'de> de::Visitor<'de> for Opt {
            type Value = Option<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(self.0.what)
            }
            fn visit_none<E: de::Error>(self) -> Result<Option<String>, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
                unit_string(d, self.0).map(Some)
            }
        }
        d.deserialize_option(Opt(e))
    }

    macro_rules! adapter {
        ($name:ident, $ty:ty, $parse:expr, $fmt:expr, $schema:expr, $expected:expr) => {
            #[doc = concat!("Serde adapter and schema of a `", stringify!($name), "` field.")]
            pub struct $name;
            impl $name {
                pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                    let s = unit_string(d, $expected)?;
                    $parse(&s).map_err(de::Error::custom)
                }
                pub fn serialize<S: Serializer>(v: &$ty, s: S) -> Result<S::Ok, S::Error> {
                    s.serialize_str(&$fmt(v))
                }
            }
            impl JsonSchema for $name {
                fn schema_name() -> Cow<'static, str> {
                    stringify!($name).into()
                }
                fn json_schema(_: &mut SchemaGenerator) -> Schema {
                    $schema
                }
            }
        };
    }
    adapter!(rate, Rate, parse_rate, |r: &Rate| format!("{}bps", r.0), rate_schema(), RATE);
    adapter!(time, Dur, parse_time, |d: &Dur| format!("{}ns", d.0), time_schema(), TIME);
    adapter!(bytes, u64, parse_bytes, |b: &u64| format!("{b}B"), bytes_schema(), SIZE);
    adapter!(
        limit,
        Limit,
        parse_limit,
        |l: &Limit| match l {
            Limit::Packets(p) => format!("{p}p"),
            Limit::Bytes(b) => format!("{b}B"),
        },
        json_schema!({
            "title": "limit",
            "type": "string",
            "pattern": format!(r"^\s*[0-9]+\s*p\s*$|{NUM}{SIZE_UNITS}\s*$"),
            "description": "a buffer limit in packets (\"50p\") or in bytes (\"64KB\"); at least 1",
            "examples": ["50p", "64KB"],
        }),
        LIMIT
    );

    fn rate_schema() -> Schema {
        quantity("rate", RATE_UNITS, "a bit rate with its unit, bit/s to Tbit/s (at least 1bps)", "10Mbps")
    }
    fn time_schema() -> Schema {
        quantity("time", TIME_UNITS, "a time with its unit, ns to h (below 146 years)", "20ms")
    }
    fn bytes_schema() -> Schema {
        quantity("bytes", SIZE_UNITS, "a size with its unit, B to GiB (decimal KB/MB/GB, binary KiB/MiB/GiB)", "64KB")
    }

    /// An optional size: absent, or as [`bytes`].
    pub struct opt_bytes;
    impl opt_bytes {
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
            let s = opt_unit_string(d, SIZE)?;
            s.map(|s| parse_bytes(&s).map_err(de::Error::custom)).transpose()
        }
        pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(b) => s.serialize_str(&format!("{b}B")),
                None => s.serialize_none(),
            }
        }
    }
    impl JsonSchema for opt_bytes {
        fn schema_name() -> Cow<'static, str> {
            "bytes".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            bytes_schema()
        }
    }

    /// An optional time: absent, or as [`time`].
    pub struct opt_time;
    impl opt_time {
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dur>, D::Error> {
            let s = opt_unit_string(d, TIME)?;
            s.map(|s| parse_time(&s).map_err(de::Error::custom)).transpose()
        }
        pub fn serialize<S: Serializer>(v: &Option<Dur>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(d) => s.serialize_str(&format!("{}ns", d.0)),
                None => s.serialize_none(),
            }
        }
    }
    impl JsonSchema for opt_time {
        fn schema_name() -> Cow<'static, str> {
            "time".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            time_schema()
        }
    }

    /// An optional rate: absent, or as [`rate`].
    pub struct opt_rate;
    impl opt_rate {
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
            let s = opt_unit_string(d, RATE)?;
            s.map(|s| parse_rate(&s).map_err(de::Error::custom)).transpose()
        }
        pub fn serialize<S: Serializer>(v: &Option<Rate>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(r) => s.serialize_str(&format!("{}bps", r.0)),
                None => s.serialize_none(),
            }
        }
    }
    impl JsonSchema for opt_rate {
        fn schema_name() -> Cow<'static, str> {
            "rate".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            rate_schema()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field of each unit type given a bare number (or another non-string) is refused with the
    /// expected form, an example and the number with a unit.
    #[test]
    fn bare_numbers_suggest_the_unit() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            #[serde(default, with = "serde_units::time")]
            t: Dur,
            #[serde(default, with = "serde_units::rate")]
            r: Rate,
            #[serde(default, with = "serde_units::bytes")]
            b: u64,
            #[serde(default = "one_p", with = "serde_units::limit")]
            l: Limit,
            #[serde(default, with = "serde_units::opt_time")]
            ot: Option<Dur>,
        }
        fn one_p() -> Limit {
            Limit::Packets(1)
        }
        let err = |text: &str| toml::from_str::<S>(text).unwrap_err().message().to_owned();
        assert_eq!(err("t = 10"), "expected a time like \"20ms\", got the number 10 without a unit (write \"10s\")");
        assert_eq!(
            err("r = 1e300"),
            "expected a rate like \"10Mbps\", got the number 1e300 without a unit (write \"1e300Mbps\")"
        );
        assert_eq!(
            err("r = 1.5"),
            "expected a rate like \"10Mbps\", got the number 1.5 without a unit (write \"1.5Mbps\")"
        );
        assert_eq!(err("b = 64"), "expected a size like \"64KB\", got the number 64 without a unit (write \"64KB\")");
        assert_eq!(
            err("l = 50"),
            "expected a limit like \"50p\" or \"64KB\", got the number 50 without a unit (write \"50p\")"
        );
        assert_eq!(err("ot = 3"), "expected a time like \"20ms\", got the number 3 without a unit (write \"3s\")");
        assert!(err("t = true").contains("expected a time like \"20ms\""), "{}", err("t = true"));
        assert!(err("t = [1]").contains("expected a time like \"20ms\""), "{}", err("t = [1]"));
        let ok: S = toml::from_str("t = \"2s\"\nl = \"5p\"\not = \"1ms\"").unwrap();
        assert_eq!((ok.t, ok.l, ok.ot), (Dur::from_secs_f64(2.0), Limit::Packets(5), Some(Dur::from_secs_f64(1e-3))));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps").unwrap(), Rate(10_000_000));
        assert_eq!(parse_rate("1.5Gbps").unwrap(), Rate(1_500_000_000));
        assert_eq!(parse_rate(" 64kbps ").unwrap(), Rate(64_000));
        assert!(parse_rate("10").unwrap_err().contains("expected a rate"));
        assert!(parse_rate("-5Mbps").unwrap_err().contains("positive"));
        assert!(parse_rate("0Mbps").is_err());
        assert!(parse_rate("10MBps").is_err());
        // Rounds to 0 bit/s: would divide by zero when serialising.
        assert!(parse_rate("0.4bps").unwrap_err().contains("at least 1bps"));
        assert_eq!(parse_rate("0.5bps").unwrap(), Rate(1));
        assert!(parse_rate("1e30bps").unwrap_err().contains("at most"));
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("20ms").unwrap(), Dur::from_millis(20));
        assert_eq!(parse_time("1.5s").unwrap(), Dur::from_millis(1500));
        assert_eq!(parse_time("250us").unwrap(), Dur::from_micros(250));
        assert_eq!(parse_time("1e3ms").unwrap(), Dur::from_secs(1));
        assert!(parse_time("-1ms").unwrap_err().contains("negative"));
        assert!(parse_time("20").is_err());
        // Beyond the checked range: an error, not a value clamped to u64::MAX nanoseconds.
        assert!(parse_time("1e11s").unwrap_err().contains("146 years"));
        assert!(parse_time("100years").is_err());
        assert_eq!(parse_time("100000h").unwrap(), Dur::from_secs(360_000_000));
    }

    #[test]
    fn sizes_and_limits() {
        assert_eq!(parse_bytes("64KB").unwrap(), 64_000);
        assert_eq!(parse_bytes("4MiB").unwrap(), 4 * 1024 * 1024);
        assert_eq!(parse_limit("50p").unwrap(), Limit::Packets(50));
        assert_eq!(parse_limit("64KB").unwrap(), Limit::Bytes(64_000));
        assert!(parse_limit("50").is_err());
        assert!(parse_limit("0p").is_err());
        assert!(parse_limit("0B").is_err());
        assert_eq!(parse_limit("1p").unwrap(), Limit::Packets(1));
        assert!(parse_limit("x p").is_err());
        assert!(parse_bytes("1e30B").unwrap_err().contains("2^62"));
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1500 B at 10 Mbit/s = 1.2 ms exactly.
        assert_eq!(Rate(10_000_000).tx_time(1500), Dur::from_micros(1200));
        // 1 B at 3 bit/s = 2.666.. s -> rounded up.
        assert_eq!(Rate(3).tx_time(1), Dur(2_666_666_667));
    }

    #[test]
    fn tx_time_64_bit_path_agrees_with_128_bit_arithmetic() {
        // The boundary where bytes * 8e9 stops fitting 64 bits, and ordinary sizes.
        let edge = u64::MAX / 8_000_000_000;
        for bytes in [0, 1, 40, 1500, 65_535, 1 << 32, edge - 1, edge, edge + 1, edge * 3] {
            for rate in [1u64, 3, 9_600, 10_000_000, 999_999_937, 1_000_000_000, 1_000_000_000_000_000] {
                let want = (bytes as u128 * 8_000_000_000).div_ceil(rate as u128);
                if want <= u64::MAX as u128 {
                    assert_eq!(Rate(rate).tx_time(bytes).0 as u128, want, "{bytes} B at {rate} bit/s");
                }
            }
        }
    }
}
