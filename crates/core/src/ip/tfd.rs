//! The IP Traffic Flow Description (TFD) option as a wire format.
//!
//! A sender puts the TFD option in its packets to tell routers how much data it will send in
//! the next period: `Next Data` bytes within `Next Time` milliseconds. A TFD-capable router
//! reads it while forwarding and reserves about `Next Data / Next Time` for the flow. This file
//! is only the encoding: the typed [`TfdOption`], strict encode/decode for IPv4 and IPv6, and
//! helpers that place the option in an IPv4 options area or an IPv6 Hop-by-Hop Options header.
//!
//! Reading list:
//! - A. Chodorek, R. R. Chodorek, *Performance evaluation of the TFD-capable dynamic QoS
//!   assurance of HD video streaming in well-dimensioned network*, §III
//!   (`shared/papers/tfd-dynamic-qos-hd-video.txt`): the five fields, the Len values, and the
//!   meaning of the flags B, F, D, M, L, S, E. Its Fig. 1c (the flag positions) is not in the
//!   text we have, so the bit positions below are our choice.
//! - RFC 791 §3.1 "Options": the IPv4 option type octet (copied flag, class, number), the
//!   length octet that counts type and length, End of Option List (0) and No Operation (1).
//! - RFC 8200 §4.2 "Extension Header Options": the IPv6 option type (two action bits, the
//!   change-en-route bit, then the number), Opt Data Len excluding type and length, Pad1 and
//!   PadN, alignment requirements; §4.3 the Hop-by-Hop Options header and its 8-octet length.
//! - RFC 4727 §2.5 (IPv4) and §2.6 (IPv6): option number 30 is reserved for experiments, which
//!   we use until IANA assigns the TFD option a number.
//!
//! # Layout
//!
//! Both versions are 12 octets; only the first two differ. Multi-octet fields are in network
//! byte order (big-endian). Bit 0 is the most significant bit, as in RFC 791.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Option Type  |  Len / Opt Data Len |B|F|D|M|L|S|E|  reserved  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           Next Data                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           Next Time                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! (The Len field is 8 bits; the Flags field occupies bits 16–31 of the first word.)
//!
//! | field | IPv4 | IPv6 |
//! |---|---|---|
//! | Option Type | `0x9E`: copied 1, class 0 (control), number 30 | `0x1E`: action 00 (skip if unrecognised), change 0 (not changed en route), number 30 |
//! | Len / Opt Data Len | 12 (counts type and length) | 10 (excludes them) |
//!
//! Flags (our positions, in the order the paper lists the flags, from the most significant
//! bit of the 16-bit field):
//!
//! | bit | mask | flag | meaning |
//! |---|---|---|---|
//! | 0 | `0x8000` | B | knowledge from the send buffer |
//! | 1 | `0x4000` | F | knowledge from a forecaster (B and F together are invalid) |
//! | 2 | `0x2000` | D | Next Data is an IEEE-754 binary32 float, not an unsigned integer |
//! | 3 | `0x1000` | M | Next Data is the maximum of this transmission |
//! | 4 | `0x0800` | L | a large transfer (file, video) |
//! | 5 | `0x0400` | S | stream (inelastic) traffic |
//! | 6 | `0x0200` | E | elastic traffic |
//! | 7–15 | `0x01FF` | — | reserved, must be zero |
//!
//! Next Data is in bytes; Next Time in milliseconds.
//!
//! # Strictness
//!
//! Decoding rejects, in this order: a wrong option type, a wrong length octet, a buffer shorter
//! or longer than the option, reserved flag bits, B and F both set, and (with D) a float that
//! is NaN, infinite or has its sign bit set (so −0.0 is rejected as negative). As a result every
//! successfully decoded option re-encodes to exactly the input bytes. A [`TfdOption`] can only
//! be built valid, so encoding cannot fail except for a short buffer.
//!
//! # Not modelled
//!
//! - IANA has not assigned the option a number; experimental number 30 is shared with any
//!   other RFC 4727 experiment, so a peer's unrelated experiment would be misread.
//! - S and E together, or M without a meaningful maximum, are not rejected: the paper does not
//!   forbid them. Next Time = 0 is accepted on the wire; [`TfdOption::rate_bps`] returns `None`.
//! - No IPv4 header checksum, IHL, or IPv6 Payload Length bookkeeping: the helpers produce the
//!   options area / extension header only, and the caller fits it into the packet.
//! - Other IP options are passed over, not interpreted; routers' option processing (which is
//!   the TFD router's job) is elsewhere.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// RFC 4727 experimental option number used for TFD until IANA assigns one.
pub const OPTION_NUMBER: u8 = 30;

/// IPv4 option type: copied flag 1, class 0 (control), number 30 (RFC 791 §3.1).
// The digit groups are the RFC fields (copied | class | number), hence the allows.
#[allow(clippy::unusual_byte_groupings)]
pub const IPV4_OPTION_TYPE: u8 = 0b1_00_00000 | OPTION_NUMBER;

/// IPv6 option type: action bits 00 (skip if unrecognised), change bit 0 (data does not change
/// en route), number 30 (RFC 8200 §4.2).
#[allow(clippy::unusual_byte_groupings, clippy::identity_op)]
pub const IPV6_OPTION_TYPE: u8 = 0b00_0_00000 | OPTION_NUMBER;

/// Encoded size of the option in octets, type and length octets included (IPv4 and IPv6).
pub const ENCODED_LEN: usize = 12;

/// Value of the IPv4 Len octet: the whole option, type and length included (RFC 791 §3.1).
pub const IPV4_LEN: u8 = ENCODED_LEN as u8;

/// Value of the IPv6 Opt Data Len octet: the option without type and length (RFC 8200 §4.2).
pub const IPV6_OPT_DATA_LEN: u8 = ENCODED_LEN as u8 - 2;

/// Largest IPv4 options area: the header is at most 15 words, 5 of them fixed (RFC 791 §3.1).
pub const IPV4_MAX_OPTIONS_LEN: usize = 40;

/// Largest IPv6 Hop-by-Hop Options header: Hdr Ext Len 255 means (255 + 1) × 8 octets.
pub const IPV6_MAX_HOP_BY_HOP_LEN: usize = 2048;

/// IPv4 End of Option List (RFC 791 §3.1).
const IPV4_EOL: u8 = 0;
/// IPv4 No Operation (RFC 791 §3.1).
const IPV4_NOP: u8 = 1;
/// IPv6 Pad1 (RFC 8200 §4.2).
const IPV6_PAD1: u8 = 0;
/// IPv6 PadN (RFC 8200 §4.2).
const IPV6_PADN: u8 = 1;

/// The 16-bit Flags field. Only the seven defined flags can be set; reserved bits cannot be
/// represented, so a `TfdFlags` value is always encodable.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TfdFlags(u16);

impl TfdFlags {
    /// B: the description comes from analysing the send buffer.
    pub const BUFFER: Self = Self(0x8000);
    /// F: the description comes from a traffic forecaster.
    pub const FORECAST: Self = Self(0x4000);
    /// D: Next Data is an IEEE-754 binary32 float rather than a u32.
    pub const DATA_FLOAT: Self = Self(0x2000);
    /// M: Next Data is the maximum of this transmission.
    pub const MAXIMUM: Self = Self(0x1000);
    /// L: a large amount of data is being transferred (file, video).
    pub const LARGE: Self = Self(0x0800);
    /// S: stream (inelastic) traffic.
    pub const STREAM: Self = Self(0x0400);
    /// E: elastic traffic.
    pub const ELASTIC: Self = Self(0x0200);

    /// Mask of the defined flags.
    pub const DEFINED_MASK: u16 = 0xFE00;
    /// Mask of the reserved bits, which must be zero.
    pub const RESERVED_MASK: u16 = !Self::DEFINED_MASK;

    const NAMES: [(Self, &'static str); 7] = [
        (Self::BUFFER, "B"),
        (Self::FORECAST, "F"),
        (Self::DATA_FLOAT, "D"),
        (Self::MAXIMUM, "M"),
        (Self::LARGE, "L"),
        (Self::STREAM, "S"),
        (Self::ELASTIC, "E"),
    ];

    /// No flag set: the description comes straight from the encoder, Next Data is a u32.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// The field as it goes on the wire (host order here; encoding makes it big-endian).
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The flags of a raw field, or `None` if any reserved bit is set.
    pub const fn from_bits(bits: u16) -> Option<Self> {
        if bits & Self::RESERVED_MASK == 0 {
            Some(Self(bits))
        } else {
            None
        }
    }

    /// Whether every flag of `other` is set in `self`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// `self` with the flags of `other` also set.
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// `self` with the flags of `other` cleared.
    pub const fn difference(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl BitOr for TfdFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        self.union(rhs)
    }
}

impl BitOrAssign for TfdFlags {
    fn bitor_assign(&mut self, rhs: Self) {
        *self = self.union(rhs);
    }
}

impl fmt::Debug for TfdFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TfdFlags(")?;
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str(" | ")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("empty")?;
        }
        f.write_str(")")
    }
}

/// Where the sender's knowledge of its forthcoming traffic comes from (flags B and F).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnowledgeSource {
    /// B and F clear: from the encoder or the stored trace; the most accurate.
    Encoder,
    /// B set: from analysing the send buffer.
    Buffer,
    /// F set: from a traffic forecaster; approximate.
    Forecast,
}

/// The Next Data field, in bytes: an unsigned integer, or a float when flag D is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NextData {
    /// Bytes as a u32 (flag D clear).
    Bytes(u32),
    /// Bytes as an IEEE-754 binary32 (flag D set). Valid values are finite with the sign bit
    /// clear: +0.0, subnormals and normals up to `f32::MAX`.
    Float(f32),
}

impl NextData {
    /// The amount in bytes as an `f64` (exact for both variants).
    pub fn bytes_f64(self) -> f64 {
        match self {
            NextData::Bytes(b) => f64::from(b),
            NextData::Float(x) => f64::from(x),
        }
    }

    /// The field's 32 bits, before byte-order conversion.
    fn to_bits(self) -> u32 {
        match self {
            NextData::Bytes(b) => b,
            NextData::Float(x) => x.to_bits(),
        }
    }
}

/// A valid TFD option. Build one with [`TfdOption::new`] or a decoder; both enforce the rules
/// listed in the module docs, so every value encodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TfdOption {
    /// Invariant: no reserved bit (by `TfdFlags`), not B and F together, and D set exactly
    /// when `next_data` is `Float`.
    flags: TfdFlags,
    /// Invariant: a `Float` is finite with its sign bit clear.
    next_data: NextData,
    next_time_ms: u32,
}

/// Why [`TfdOption::new`] refused its arguments.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TfdValueError {
    /// B and F are both set; the paper denies that combination (§III.C).
    #[error("flags B (buffer) and F (forecast) are both set; at most one source is allowed")]
    BothBufferAndForecast,
    /// Flag D does not agree with the `NextData` variant.
    #[error("flag D is {} but Next Data is {}", if *flag_d { "set" } else { "clear" }, if *flag_d { "an integer" } else { "a float" })]
    DataFormatMismatch {
        /// Whether the flags passed had D set.
        flag_d: bool,
    },
    /// Next Data is a NaN float.
    #[error("Next Data is NaN")]
    FloatNaN,
    /// Next Data is an infinite float.
    #[error("Next Data is infinite")]
    FloatInfinite,
    /// Next Data is a float with its sign bit set (including −0.0).
    #[error("Next Data is negative ({value})")]
    NegativeFloat {
        /// The rejected value.
        value: f32,
    },
}

/// Why a decoder refused its input.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TfdDecodeError {
    /// The option type octet is not TFD's for this IP version.
    #[error("option type {found:#04x} is not the TFD option ({expected:#04x})")]
    WrongType {
        /// Type octet read.
        found: u8,
        /// Type octet expected for this IP version.
        expected: u8,
    },
    /// The length octet is not 12 (IPv4 Len) or 10 (IPv6 Opt Data Len).
    #[error("length octet is {found}, expected {expected}")]
    WrongLength {
        /// Length octet read.
        found: u8,
        /// Length octet expected for this IP version.
        expected: u8,
    },
    /// The buffer ends before the option does.
    #[error("option truncated: needs {needed} octets, {available} available")]
    Truncated {
        /// Octets needed (the type and length octets first, then the whole option).
        needed: usize,
        /// Octets in the buffer.
        available: usize,
    },
    /// The buffer continues past the option's 12 octets.
    #[error("{extra} octets after the 12-octet option")]
    TrailingBytes {
        /// Octets beyond the option.
        extra: usize,
    },
    /// Reserved flag bits are set.
    #[error("reserved flag bits {bits:#06x} are set")]
    ReservedBitsSet {
        /// The reserved bits that were set (the defined flags masked out).
        bits: u16,
    },
    /// B and F are both set.
    #[error("flags B (buffer) and F (forecast) are both set; at most one source is allowed")]
    BothBufferAndForecast,
    /// D is set and Next Data is NaN.
    #[error("Next Data is NaN")]
    FloatNaN,
    /// D is set and Next Data is infinite.
    #[error("Next Data is infinite")]
    FloatInfinite,
    /// D is set and Next Data has its sign bit set (including −0.0).
    #[error("Next Data is negative ({value})")]
    NegativeFloat {
        /// The rejected value.
        value: f32,
    },
}

/// Why an encoder could not write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TfdEncodeError {
    /// The output buffer is shorter than the option.
    #[error("buffer too small: needs {needed} octets, {available} available")]
    BufferTooSmall {
        /// Octets needed (always [`ENCODED_LEN`]).
        needed: usize,
        /// Octets in the buffer.
        available: usize,
    },
}

/// Why an IPv4 options area or IPv6 Hop-by-Hop header could not be walked.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionListError {
    /// The Hop-by-Hop header is shorter than its own Hdr Ext Len says (or than 2 octets).
    #[error("hop-by-hop header truncated: needs {needed} octets, {available} available")]
    HeaderTruncated {
        /// Octets the header needs.
        needed: usize,
        /// Octets in the buffer.
        available: usize,
    },
    /// An option's type octet is the last octet of the area, with no length octet after it.
    #[error("option at offset {offset} has no length octet")]
    MissingLength {
        /// Offset of the option's type octet.
        offset: usize,
    },
    /// An IPv4 option's Len is below 2, the size of its own type and length octets.
    #[error("option at offset {offset} has length {len}, below the minimum of 2")]
    LengthTooSmall {
        /// Offset of the option's type octet.
        offset: usize,
        /// The Len octet.
        len: u8,
    },
    /// An option runs past the end of the area.
    #[error("option at offset {offset} needs {needed} octets, {available} remain")]
    Overrun {
        /// Offset of the option's type octet.
        offset: usize,
        /// Octets the option claims, type and length included.
        needed: usize,
        /// Octets from `offset` to the end of the area.
        available: usize,
    },
    /// The area carries a second TFD option.
    #[error("second TFD option at offset {offset}")]
    DuplicateTfd {
        /// Offset of the second option's type octet.
        offset: usize,
    },
    /// A TFD option is present but invalid.
    #[error("TFD option at offset {offset}: {source}")]
    Tfd {
        /// Offset of the option's type octet.
        offset: usize,
        /// What is wrong with it.
        source: TfdDecodeError,
    },
}

/// Why a TFD option could not be added to an options area or Hop-by-Hop header.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TfdAppendError {
    /// The existing options are malformed.
    #[error(transparent)]
    List(#[from] OptionListError),
    /// The existing options already carry a TFD option.
    #[error("a TFD option is already present at offset {offset}")]
    AlreadyPresent {
        /// Offset of its type octet.
        offset: usize,
    },
    /// The Hop-by-Hop buffer is longer than its Hdr Ext Len says.
    #[error("{extra} octets after the hop-by-hop header")]
    TrailingBytes {
        /// Octets beyond the header.
        extra: usize,
    },
    /// The result would exceed the largest options area or header.
    #[error("no room: the result needs {needed} octets, the limit is {limit}")]
    NoRoom {
        /// Octets the result would take.
        needed: usize,
        /// [`IPV4_MAX_OPTIONS_LEN`] or [`IPV6_MAX_HOP_BY_HOP_LEN`].
        limit: usize,
    },
}

/// A rule broken by flags and Next Data; shared by [`TfdOption::new`] and the decoders, which
/// report it through their own error enums.
enum Invalid {
    BothBufferAndForecast,
    FloatNaN,
    FloatInfinite,
    NegativeFloat(f32),
}

impl From<Invalid> for TfdValueError {
    fn from(e: Invalid) -> Self {
        match e {
            Invalid::BothBufferAndForecast => TfdValueError::BothBufferAndForecast,
            Invalid::FloatNaN => TfdValueError::FloatNaN,
            Invalid::FloatInfinite => TfdValueError::FloatInfinite,
            Invalid::NegativeFloat(value) => TfdValueError::NegativeFloat { value },
        }
    }
}

impl From<Invalid> for TfdDecodeError {
    fn from(e: Invalid) -> Self {
        match e {
            Invalid::BothBufferAndForecast => TfdDecodeError::BothBufferAndForecast,
            Invalid::FloatNaN => TfdDecodeError::FloatNaN,
            Invalid::FloatInfinite => TfdDecodeError::FloatInfinite,
            Invalid::NegativeFloat(value) => TfdDecodeError::NegativeFloat { value },
        }
    }
}

/// The rules beyond reserved bits (which `TfdFlags` cannot hold) and the D/variant agreement.
fn validate(flags: TfdFlags, next_data: NextData) -> Result<(), Invalid> {
    // §III.C: "The sequence of the B and F bit set is denied."
    if flags.contains(TfdFlags::BUFFER | TfdFlags::FORECAST) {
        return Err(Invalid::BothBufferAndForecast);
    }
    if let NextData::Float(x) = next_data {
        // NaN first: a NaN's sign bit carries no meaning, so it is not "negative".
        if x.is_nan() {
            return Err(Invalid::FloatNaN);
        }
        if x.is_infinite() {
            return Err(Invalid::FloatInfinite);
        }
        // The sign bit, not `x < 0.0`: −0.0 is rejected too, which keeps one encoding per
        // decoded value comparable with `==`.
        if x.is_sign_negative() {
            return Err(Invalid::NegativeFloat(x));
        }
    }
    Ok(())
}

impl TfdOption {
    /// A TFD option announcing `next_data` bytes within the next `next_time_ms` milliseconds.
    ///
    /// `flags` must have D set exactly when `next_data` is [`NextData::Float`], must not have
    /// both B and F, and a float must be finite and non-negative (sign bit clear).
    pub fn new(flags: TfdFlags, next_data: NextData, next_time_ms: u32) -> Result<Self, TfdValueError> {
        let flag_d = flags.contains(TfdFlags::DATA_FLOAT);
        if flag_d != matches!(next_data, NextData::Float(_)) {
            return Err(TfdValueError::DataFormatMismatch { flag_d });
        }
        validate(flags, next_data)?;
        Ok(Self { flags, next_data, next_time_ms })
    }

    /// The Flags field, D included.
    pub fn flags(&self) -> TfdFlags {
        self.flags
    }

    /// Next Data, in bytes.
    pub fn next_data(&self) -> NextData {
        self.next_data
    }

    /// Next Time, the planning horizon, in milliseconds.
    pub fn next_time_ms(&self) -> u32 {
        self.next_time_ms
    }

    /// Where the description comes from (flags B and F).
    pub fn source(&self) -> KnowledgeSource {
        if self.flags.contains(TfdFlags::BUFFER) {
            KnowledgeSource::Buffer
        } else if self.flags.contains(TfdFlags::FORECAST) {
            KnowledgeSource::Forecast
        } else {
            KnowledgeSource::Encoder
        }
    }

    /// The announced rate, `8 × Next Data / Next Time`, in bits per second; `None` when Next
    /// Time is zero.
    pub fn rate_bps(&self) -> Option<f64> {
        if self.next_time_ms == 0 {
            return None;
        }
        Some(self.next_data.bytes_f64() * 8.0 * 1000.0 / f64::from(self.next_time_ms))
    }

    /// The option as it appears in an IPv4 header.
    pub fn ipv4_bytes(&self) -> [u8; ENCODED_LEN] {
        self.bytes_with(IPV4_OPTION_TYPE, IPV4_LEN)
    }

    /// The option as it appears in an IPv6 Hop-by-Hop (or Destination) Options header.
    pub fn ipv6_bytes(&self) -> [u8; ENCODED_LEN] {
        self.bytes_with(IPV6_OPTION_TYPE, IPV6_OPT_DATA_LEN)
    }

    /// Writes the IPv4 option into `buf[..12]` and returns the octets written (12).
    pub fn encode_ipv4(&self, buf: &mut [u8]) -> Result<usize, TfdEncodeError> {
        write_into(buf, &self.ipv4_bytes())
    }

    /// Writes the IPv6 option into `buf[..12]` and returns the octets written (12).
    pub fn encode_ipv6(&self, buf: &mut [u8]) -> Result<usize, TfdEncodeError> {
        write_into(buf, &self.ipv6_bytes())
    }

    fn bytes_with(&self, option_type: u8, len: u8) -> [u8; ENCODED_LEN] {
        let mut out = [0u8; ENCODED_LEN];
        out[0] = option_type;
        out[1] = len;
        out[2..4].copy_from_slice(&self.flags.bits().to_be_bytes());
        out[4..8].copy_from_slice(&self.next_data.to_bits().to_be_bytes());
        out[8..12].copy_from_slice(&self.next_time_ms.to_be_bytes());
        out
    }
}

fn write_into(buf: &mut [u8], bytes: &[u8; ENCODED_LEN]) -> Result<usize, TfdEncodeError> {
    let available = buf.len();
    let dst = buf.get_mut(..ENCODED_LEN).ok_or(TfdEncodeError::BufferTooSmall { needed: ENCODED_LEN, available })?;
    dst.copy_from_slice(bytes);
    Ok(ENCODED_LEN)
}

/// Decodes exactly one IPv4 TFD option: `buf` must be the option's 12 octets, no more.
pub fn decode_ipv4(buf: &[u8]) -> Result<TfdOption, TfdDecodeError> {
    decode_with(buf, IPV4_OPTION_TYPE, IPV4_LEN)
}

/// Decodes exactly one IPv6 TFD option: `buf` must be the option's 12 octets, no more.
pub fn decode_ipv6(buf: &[u8]) -> Result<TfdOption, TfdDecodeError> {
    decode_with(buf, IPV6_OPTION_TYPE, IPV6_OPT_DATA_LEN)
}

fn decode_with(buf: &[u8], option_type: u8, len: u8) -> Result<TfdOption, TfdDecodeError> {
    if buf.len() < 2 {
        return Err(TfdDecodeError::Truncated { needed: 2, available: buf.len() });
    }
    if buf[0] != option_type {
        return Err(TfdDecodeError::WrongType { found: buf[0], expected: option_type });
    }
    if buf[1] != len {
        return Err(TfdDecodeError::WrongLength { found: buf[1], expected: len });
    }
    if buf.len() < ENCODED_LEN {
        return Err(TfdDecodeError::Truncated { needed: ENCODED_LEN, available: buf.len() });
    }
    if buf.len() > ENCODED_LEN {
        return Err(TfdDecodeError::TrailingBytes { extra: buf.len() - ENCODED_LEN });
    }
    let raw_flags = u16::from_be_bytes([buf[2], buf[3]]);
    let flags = TfdFlags::from_bits(raw_flags)
        .ok_or(TfdDecodeError::ReservedBitsSet { bits: raw_flags & TfdFlags::RESERVED_MASK })?;
    let raw_data = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    // D selects the representation of Next Data (§III.D).
    let next_data = if flags.contains(TfdFlags::DATA_FLOAT) {
        NextData::Float(f32::from_bits(raw_data))
    } else {
        NextData::Bytes(raw_data)
    };
    let next_time_ms = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
    validate(flags, next_data)?;
    Ok(TfdOption { flags, next_data, next_time_ms })
}

/// One option found while walking a list.
struct Walked {
    offset: usize,
    option_type: u8,
    /// Total octets, type and length included.
    len: usize,
}

/// Walks an IPv4 options area up to End of Option List or its end (RFC 791 §3.1), calling
/// `visit` for every option except EOL and NOP. Returns the offset where the list ends (the
/// EOL's offset, or the area's length).
fn walk_ipv4(
    area: &[u8],
    mut visit: impl FnMut(Walked) -> Result<(), OptionListError>,
) -> Result<usize, OptionListError> {
    let mut i = 0;
    while i < area.len() {
        match area[i] {
            // RFC 791: EOL marks the end of the option list; what follows is padding.
            IPV4_EOL => return Ok(i),
            IPV4_NOP => i += 1,
            option_type => {
                let len = *area.get(i + 1).ok_or(OptionListError::MissingLength { offset: i })?;
                // RFC 791: the length octet counts the type and length octets.
                if len < 2 {
                    return Err(OptionListError::LengthTooSmall { offset: i, len });
                }
                let len = usize::from(len);
                if len > area.len() - i {
                    return Err(OptionListError::Overrun { offset: i, needed: len, available: area.len() - i });
                }
                visit(Walked { offset: i, option_type, len })?;
                i += len;
            }
        }
    }
    Ok(area.len())
}

/// Walks the options of an IPv6 Hop-by-Hop header `hdr[2..end]` (RFC 8200 §4.2), calling
/// `visit` for every option except Pad1 and PadN. Returns the offset just past the last option
/// that is not padding (2 if there is none).
fn walk_ipv6(
    hdr: &[u8],
    end: usize,
    mut visit: impl FnMut(Walked) -> Result<(), OptionListError>,
) -> Result<usize, OptionListError> {
    let mut i = 2;
    let mut last_end = 2;
    while i < end {
        if hdr[i] == IPV6_PAD1 {
            i += 1;
            continue;
        }
        let data_len = *hdr[..end].get(i + 1).ok_or(OptionListError::MissingLength { offset: i })?;
        // RFC 8200 §4.2: Opt Data Len excludes the type and length octets.
        let len = 2 + usize::from(data_len);
        if len > end - i {
            return Err(OptionListError::Overrun { offset: i, needed: len, available: end - i });
        }
        if hdr[i] != IPV6_PADN {
            visit(Walked { offset: i, option_type: hdr[i], len })?;
            last_end = i + len;
        }
        i += len;
    }
    Ok(last_end)
}

/// Length of a Hop-by-Hop header from its Hdr Ext Len octet, checked against the buffer.
fn hop_by_hop_len(hdr: &[u8]) -> Result<usize, OptionListError> {
    if hdr.len() < 2 {
        return Err(OptionListError::HeaderTruncated { needed: 2, available: hdr.len() });
    }
    // RFC 8200 §4.3: Hdr Ext Len counts 8-octet units, not including the first 8 octets.
    let total = (usize::from(hdr[1]) + 1) * 8;
    if hdr.len() < total {
        return Err(OptionListError::HeaderTruncated { needed: total, available: hdr.len() });
    }
    Ok(total)
}

/// Collects the one TFD option a list may hold, rejecting a second one or an invalid one.
fn tfd_visitor<'a>(
    bytes: &'a [u8],
    option_type: u8,
    decode: fn(&[u8]) -> Result<TfdOption, TfdDecodeError>,
    found: &'a mut Option<(usize, TfdOption)>,
) -> impl FnMut(Walked) -> Result<(), OptionListError> + 'a {
    move |w| {
        if w.option_type != option_type {
            return Ok(());
        }
        if found.is_some() {
            return Err(OptionListError::DuplicateTfd { offset: w.offset });
        }
        let opt = decode(&bytes[w.offset..w.offset + w.len])
            .map_err(|source| OptionListError::Tfd { offset: w.offset, source })?;
        *found = Some((w.offset, opt));
        Ok(())
    }
}

/// Finds the TFD option in an IPv4 options area (the header octets after the fixed 20).
///
/// Returns the offset of its type octet and the option, or `None` if the list has none. Walks
/// to End of Option List; a malformed list, a second TFD option or an invalid one is an error.
/// Type octets other than `0x9E` are passed over, including `0x1E`/`0x5E`/`0xDE`, which are
/// other RFC 4727 experiments with the same number.
pub fn find_in_ipv4_options(area: &[u8]) -> Result<Option<(usize, TfdOption)>, OptionListError> {
    let mut found = None;
    walk_ipv4(area, tfd_visitor(area, IPV4_OPTION_TYPE, decode_ipv4, &mut found))?;
    Ok(found)
}

/// Appends `opt` to an IPv4 options area, returning the offset of its type octet.
///
/// The list is cut at End of Option List (what follows is padding, RFC 791 §3.1), the option
/// appended, and the area padded with zero octets (EOL) to a multiple of 4, as the IHL field
/// counts 32-bit words. On error `area` is left unchanged.
pub fn append_to_ipv4_options(area: &mut Vec<u8>, opt: &TfdOption) -> Result<usize, TfdAppendError> {
    let mut found = None;
    let list_end = walk_ipv4(area, tfd_visitor(area, IPV4_OPTION_TYPE, decode_ipv4, &mut found))?;
    if let Some((offset, _)) = found {
        return Err(TfdAppendError::AlreadyPresent { offset });
    }
    let needed = (list_end + ENCODED_LEN).next_multiple_of(4);
    if needed > IPV4_MAX_OPTIONS_LEN {
        return Err(TfdAppendError::NoRoom { needed, limit: IPV4_MAX_OPTIONS_LEN });
    }
    area.truncate(list_end);
    area.extend_from_slice(&opt.ipv4_bytes());
    area.resize(needed, IPV4_EOL);
    Ok(list_end)
}

/// An IPv4 options area holding only `opt`: 12 octets, already a multiple of 4.
pub fn ipv4_options_area(opt: &TfdOption) -> Vec<u8> {
    let mut area = Vec::with_capacity(ENCODED_LEN);
    append_to_ipv4_options(&mut area, opt).expect("an empty options area has room for one 12-octet option");
    area
}

/// Finds the TFD option in an IPv6 Hop-by-Hop Options header.
///
/// `hdr` starts at the header's Next Header octet and may continue past the header (into the
/// rest of the packet); only the `(Hdr Ext Len + 1) × 8` octets of the header are read. Returns
/// the offset of the option's type octet within `hdr`, and the option.
pub fn find_in_ipv6_hop_by_hop(hdr: &[u8]) -> Result<Option<(usize, TfdOption)>, OptionListError> {
    let end = hop_by_hop_len(hdr)?;
    let mut found = None;
    walk_ipv6(hdr, end, tfd_visitor(hdr, IPV6_OPTION_TYPE, decode_ipv6, &mut found))?;
    Ok(found)
}

/// Appends `opt` to an IPv6 Hop-by-Hop Options header, returning the offset of its type octet.
///
/// `hdr` must be exactly one header. Trailing Pad1/PadN options are dropped, the option is
/// placed at a multiple of 4 from the header start (our alignment choice, "4n" in RFC 8200
/// §4.2 notation, so that Next Data and Next Time are 32-bit aligned), the header padded to a
/// multiple of 8 octets, and Hdr Ext Len updated. On error `hdr` is left unchanged.
pub fn append_to_ipv6_hop_by_hop(hdr: &mut Vec<u8>, opt: &TfdOption) -> Result<usize, TfdAppendError> {
    let end = hop_by_hop_len(hdr)?;
    if hdr.len() > end {
        return Err(TfdAppendError::TrailingBytes { extra: hdr.len() - end });
    }
    let mut found = None;
    let last_end = walk_ipv6(hdr, end, tfd_visitor(hdr, IPV6_OPTION_TYPE, decode_ipv6, &mut found))?;
    if let Some((offset, _)) = found {
        return Err(TfdAppendError::AlreadyPresent { offset });
    }
    let offset = last_end.next_multiple_of(4);
    let needed = (offset + ENCODED_LEN).next_multiple_of(8);
    if needed > IPV6_MAX_HOP_BY_HOP_LEN {
        return Err(TfdAppendError::NoRoom { needed, limit: IPV6_MAX_HOP_BY_HOP_LEN });
    }
    hdr.truncate(last_end);
    push_ipv6_padding(hdr, offset - last_end);
    hdr.extend_from_slice(&opt.ipv6_bytes());
    push_ipv6_padding(hdr, needed - hdr.len());
    hdr[1] = u8::try_from(needed / 8 - 1).expect("needed <= 2048 octets, so at most 255 units after the first");
    Ok(offset)
}

/// An IPv6 Hop-by-Hop Options header carrying only `opt`, 16 octets:
/// `next_header`, Hdr Ext Len 1, PadN of 2 octets, then the option at offset 4.
pub fn ipv6_hop_by_hop(next_header: u8, opt: &TfdOption) -> Vec<u8> {
    // The smallest valid header: 2 octets, then PadN covering the other 6.
    let mut hdr = vec![next_header, 0, IPV6_PADN, 4, 0, 0, 0, 0];
    append_to_ipv6_hop_by_hop(&mut hdr, opt).expect("a header of padding only has room for one option");
    hdr
}

/// Appends `n` octets of padding: Pad1 for one octet, PadN otherwise (RFC 8200 §4.2).
fn push_ipv6_padding(hdr: &mut Vec<u8>, n: usize) {
    match n {
        0 => {}
        1 => hdr.push(IPV6_PAD1),
        _ => {
            hdr.push(IPV6_PADN);
            hdr.push(u8::try_from(n - 2).expect("padding is shorter than 8 octets"));
            hdr.resize(hdr.len() + n - 2, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opt(flags: TfdFlags, next_data: NextData, next_time_ms: u32) -> TfdOption {
        TfdOption::new(flags, next_data, next_time_ms).expect("test option is valid")
    }

    /// The paper's setting: a video described by its encoder, 1.5 MB in the next 300 ms.
    fn video() -> TfdOption {
        opt(TfdFlags::LARGE | TfdFlags::STREAM, NextData::Bytes(1_500_000), 300)
    }

    // Vectors written from the layout in the module docs, not from the encoder:
    // L|S = 0x0800|0x0400 = 0x0C00; 1_500_000 = 0x0016_E360; 300 = 0x0000_012C.
    const VIDEO_V4: [u8; 12] = [0x9E, 0x0C, 0x0C, 0x00, 0x00, 0x16, 0xE3, 0x60, 0x00, 0x00, 0x01, 0x2C];
    const VIDEO_V6: [u8; 12] = [0x1E, 0x0A, 0x0C, 0x00, 0x00, 0x16, 0xE3, 0x60, 0x00, 0x00, 0x01, 0x2C];

    #[test]
    fn type_octets_follow_the_rfc_bit_layout() {
        // RFC 791: copied (1 bit), class (2 bits), number (5 bits).
        assert_eq!(IPV4_OPTION_TYPE >> 7, 1, "copied flag");
        assert_eq!((IPV4_OPTION_TYPE >> 5) & 0b11, 0, "class 0, control");
        assert_eq!(IPV4_OPTION_TYPE & 0x1F, 30);
        assert_eq!(IPV4_OPTION_TYPE, 0x9E);
        // RFC 8200: action (2 bits) 00 = skip, change (1 bit) 0, then the rest.
        assert_eq!(IPV6_OPTION_TYPE >> 6, 0, "skip if unrecognised");
        assert_eq!((IPV6_OPTION_TYPE >> 5) & 1, 0, "not changed en route");
        assert_eq!(IPV6_OPTION_TYPE, 0x1E);
        assert_eq!((IPV4_LEN, IPV6_OPT_DATA_LEN), (12, 10));
    }

    #[test]
    fn flag_positions_are_the_documented_ones() {
        let table = [
            (TfdFlags::BUFFER, 0x8000),
            (TfdFlags::FORECAST, 0x4000),
            (TfdFlags::DATA_FLOAT, 0x2000),
            (TfdFlags::MAXIMUM, 0x1000),
            (TfdFlags::LARGE, 0x0800),
            (TfdFlags::STREAM, 0x0400),
            (TfdFlags::ELASTIC, 0x0200),
        ];
        let mut all = 0u16;
        for (flag, bits) in table {
            assert_eq!(flag.bits(), bits, "{flag:?}");
            all |= bits;
        }
        assert_eq!(all, TfdFlags::DEFINED_MASK);
        assert_eq!(TfdFlags::RESERVED_MASK, 0x01FF);
        assert_eq!(TfdFlags::from_bits(0x0100), None);
        assert_eq!(TfdFlags::from_bits(0x0001), None);
        assert_eq!(TfdFlags::from_bits(0x0600), Some(TfdFlags::STREAM | TfdFlags::ELASTIC));
    }

    #[test]
    fn flags_debug_names_the_set_flags() {
        assert_eq!(format!("{:?}", TfdFlags::empty()), "TfdFlags(empty)");
        assert_eq!(format!("{:?}", TfdFlags::BUFFER | TfdFlags::STREAM | TfdFlags::LARGE), "TfdFlags(B | L | S)");
        let mut f = TfdFlags::FORECAST;
        f |= TfdFlags::DATA_FLOAT;
        assert!(f.contains(TfdFlags::DATA_FLOAT) && !f.contains(TfdFlags::BUFFER));
        assert_eq!(f.difference(TfdFlags::DATA_FLOAT), TfdFlags::FORECAST);
        assert!(!f.is_empty());
    }

    #[test]
    fn encoder_video_vector_v4_and_v6() {
        assert_eq!(video().ipv4_bytes(), VIDEO_V4);
        assert_eq!(video().ipv6_bytes(), VIDEO_V6);
        assert_eq!(decode_ipv4(&VIDEO_V4), Ok(video()));
        assert_eq!(decode_ipv6(&VIDEO_V6), Ok(video()));
    }

    #[test]
    fn buffer_maximum_all_ones_vector() {
        let o = opt(TfdFlags::BUFFER | TfdFlags::MAXIMUM, NextData::Bytes(u32::MAX), u32::MAX);
        let v4 = [0x9E, 0x0C, 0x90, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        assert_eq!(o.ipv4_bytes(), v4);
        assert_eq!(decode_ipv4(&v4), Ok(o));
        assert_eq!(o.source(), KnowledgeSource::Buffer);
    }

    #[test]
    fn forecast_float_vector() {
        // F|D|E = 0x4000|0x2000|0x0200 = 0x6200. 1.5e6 = 1.430511474609375 × 2^20:
        // sign 0, exponent 20 + 127 = 0x93, fraction 0x16E360 without its leading 1, shifted
        // left by 3 → 0x49B7_1B00. 40 ms = 0x28.
        let o = opt(TfdFlags::FORECAST | TfdFlags::DATA_FLOAT | TfdFlags::ELASTIC, NextData::Float(1.5e6), 40);
        let v6 = [0x1E, 0x0A, 0x62, 0x00, 0x49, 0xB7, 0x1B, 0x00, 0x00, 0x00, 0x00, 0x28];
        assert_eq!(o.ipv6_bytes(), v6);
        assert_eq!(decode_ipv6(&v6), Ok(o));
        assert_eq!(o.source(), KnowledgeSource::Forecast);
    }

    #[test]
    fn empty_flags_zero_data_vector() {
        let o = opt(TfdFlags::empty(), NextData::Bytes(0), 0);
        assert_eq!(o.ipv4_bytes(), [0x9E, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(o.source(), KnowledgeSource::Encoder);
        assert_eq!(o.rate_bps(), None);
    }

    #[test]
    fn float_edge_values_decode() {
        // +0.0, the smallest subnormal, and f32::MAX are valid.
        for (bits, value) in [(0x0000_0000u32, 0.0f32), (0x0000_0001, f32::from_bits(1)), (0x7F7F_FFFF, f32::MAX)] {
            let mut b = [0x9E, 0x0C, 0x20, 0x00, 0, 0, 0, 0, 0, 0, 0, 1];
            b[4..8].copy_from_slice(&bits.to_be_bytes());
            let o = decode_ipv4(&b).expect("valid float");
            assert_eq!(o.next_data(), NextData::Float(value));
            assert_eq!(o.ipv4_bytes(), b);
        }
    }

    #[test]
    fn rate_is_bits_per_second() {
        // 1.5 MB in 300 ms = 40 Mbit/s, the paper's target bit rate.
        assert_eq!(video().rate_bps(), Some(40e6));
        let f = opt(TfdFlags::DATA_FLOAT, NextData::Float(125.0), 1);
        assert_eq!(f.rate_bps(), Some(1e6));
    }

    #[test]
    fn encode_into_buffer_reports_size_and_short_buffer() {
        let mut buf = [0xAAu8; 14];
        assert_eq!(video().encode_ipv4(&mut buf), Ok(12));
        assert_eq!(buf[..12], VIDEO_V4);
        assert_eq!(buf[12..], [0xAA, 0xAA], "octets past the option untouched");
        assert_eq!(video().encode_ipv6(&mut buf[..12]), Ok(12));
        assert_eq!(buf[..12], VIDEO_V6);
        let mut short = [0u8; 11];
        assert_eq!(video().encode_ipv4(&mut short), Err(TfdEncodeError::BufferTooSmall { needed: 12, available: 11 }));
        assert_eq!(video().encode_ipv6(&mut short), Err(TfdEncodeError::BufferTooSmall { needed: 12, available: 11 }));
        assert_eq!(short, [0u8; 11], "a failed encode writes nothing");
    }

    #[test]
    fn new_rejects_invalid_values() {
        use TfdValueError as E;
        let bf = TfdFlags::BUFFER | TfdFlags::FORECAST;
        assert_eq!(TfdOption::new(bf, NextData::Bytes(1), 1), Err(E::BothBufferAndForecast));
        assert_eq!(
            TfdOption::new(TfdFlags::empty(), NextData::Float(1.0), 1),
            Err(E::DataFormatMismatch { flag_d: false })
        );
        assert_eq!(
            TfdOption::new(TfdFlags::DATA_FLOAT, NextData::Bytes(1), 1),
            Err(E::DataFormatMismatch { flag_d: true })
        );
        let d = TfdFlags::DATA_FLOAT;
        assert_eq!(TfdOption::new(d, NextData::Float(f32::NAN), 1), Err(E::FloatNaN));
        assert_eq!(TfdOption::new(d, NextData::Float(-f32::NAN), 1), Err(E::FloatNaN));
        assert_eq!(TfdOption::new(d, NextData::Float(f32::INFINITY), 1), Err(E::FloatInfinite));
        assert_eq!(TfdOption::new(d, NextData::Float(f32::NEG_INFINITY), 1), Err(E::FloatInfinite));
        assert_eq!(TfdOption::new(d, NextData::Float(-1.0), 1), Err(E::NegativeFloat { value: -1.0 }));
        let neg_zero = TfdOption::new(d, NextData::Float(-0.0), 1);
        assert!(matches!(neg_zero, Err(E::NegativeFloat { value }) if value.to_bits() == 0x8000_0000), "{neg_zero:?}");
        // Messages name the problem.
        assert_eq!(E::DataFormatMismatch { flag_d: true }.to_string(), "flag D is set but Next Data is an integer");
    }

    /// `VIDEO_V4` with one octet replaced.
    fn v4_with(i: usize, b: u8) -> Vec<u8> {
        let mut v = VIDEO_V4.to_vec();
        v[i] = b;
        v
    }

    #[test]
    fn decode_rejects_wrong_type() {
        use TfdDecodeError as E;
        assert_eq!(decode_ipv4(&VIDEO_V6), Err(E::WrongType { found: 0x1E, expected: 0x9E }));
        assert_eq!(decode_ipv6(&VIDEO_V4), Err(E::WrongType { found: 0x9E, expected: 0x1E }));
        // Same number, other copy/class bits: another experiment, not TFD.
        assert_eq!(decode_ipv4(&v4_with(0, 0xDE)), Err(E::WrongType { found: 0xDE, expected: 0x9E }));
    }

    #[test]
    fn decode_rejects_wrong_length_octet() {
        use TfdDecodeError as E;
        // IPv4 Len counts type and length; IPv6 Opt Data Len does not: the other's value fails.
        assert_eq!(decode_ipv4(&v4_with(1, 10)), Err(E::WrongLength { found: 10, expected: 12 }));
        let mut v6 = VIDEO_V6;
        v6[1] = 12;
        assert_eq!(decode_ipv6(&v6), Err(E::WrongLength { found: 12, expected: 10 }));
        assert_eq!(decode_ipv4(&v4_with(1, 0)), Err(E::WrongLength { found: 0, expected: 12 }));
    }

    #[test]
    fn decode_rejects_truncated_and_trailing() {
        use TfdDecodeError as E;
        assert_eq!(decode_ipv4(&[]), Err(E::Truncated { needed: 2, available: 0 }));
        assert_eq!(decode_ipv6(&[0x1E]), Err(E::Truncated { needed: 2, available: 1 }));
        assert_eq!(decode_ipv4(&VIDEO_V4[..11]), Err(E::Truncated { needed: 12, available: 11 }));
        assert_eq!(decode_ipv6(&VIDEO_V6[..2]), Err(E::Truncated { needed: 12, available: 2 }));
        let mut long = VIDEO_V4.to_vec();
        long.extend_from_slice(&[0, 0]);
        assert_eq!(decode_ipv4(&long), Err(E::TrailingBytes { extra: 2 }));
    }

    #[test]
    fn decode_rejects_every_reserved_bit() {
        for bit in 0..9 {
            let reserved = 1u16 << bit;
            let mut b = VIDEO_V4;
            b[2..4].copy_from_slice(&(0x0C00 | reserved).to_be_bytes());
            assert_eq!(decode_ipv4(&b), Err(TfdDecodeError::ReservedBitsSet { bits: reserved }), "bit {bit}");
        }
        // Reserved bits are reported before B+F.
        let mut b = VIDEO_V4;
        b[2..4].copy_from_slice(&0xC1FFu16.to_be_bytes());
        assert_eq!(decode_ipv4(&b), Err(TfdDecodeError::ReservedBitsSet { bits: 0x01FF }));
    }

    #[test]
    fn decode_rejects_buffer_and_forecast() {
        assert_eq!(decode_ipv4(&v4_with(2, 0xC0)), Err(TfdDecodeError::BothBufferAndForecast));
        let mut v6 = VIDEO_V6;
        v6[2] = 0xFE; // every defined flag
        assert_eq!(decode_ipv6(&v6), Err(TfdDecodeError::BothBufferAndForecast));
    }

    #[test]
    fn decode_rejects_bad_floats() {
        use TfdDecodeError as E;
        let with_float = |bits: u32| {
            let mut b = VIDEO_V4;
            b[2] = 0x20; // D
            b[4..8].copy_from_slice(&bits.to_be_bytes());
            decode_ipv4(&b)
        };
        assert_eq!(with_float(0x7FC0_0000), Err(E::FloatNaN));
        assert_eq!(with_float(0xFFC0_0001), Err(E::FloatNaN), "negative NaN is NaN");
        assert_eq!(with_float(0x7F80_0001), Err(E::FloatNaN), "signalling NaN");
        assert_eq!(with_float(0x7F80_0000), Err(E::FloatInfinite));
        assert_eq!(with_float(0xFF80_0000), Err(E::FloatInfinite));
        assert_eq!(with_float(0xBF80_0000), Err(E::NegativeFloat { value: -1.0 }));
        assert!(matches!(with_float(0x8000_0000), Err(E::NegativeFloat { .. })), "-0.0");
        // Without D the same bits are just a large integer.
        let mut b = VIDEO_V4;
        b[4..8].copy_from_slice(&0x7FC0_0000u32.to_be_bytes());
        assert_eq!(decode_ipv4(&b).map(|o| o.next_data()), Ok(NextData::Bytes(0x7FC0_0000)));
    }

    #[test]
    fn decode_error_messages() {
        assert_eq!(
            TfdDecodeError::WrongType { found: 0x1E, expected: 0x9E }.to_string(),
            "option type 0x1e is not the TFD option (0x9e)"
        );
        assert_eq!(TfdDecodeError::ReservedBitsSet { bits: 0x0100 }.to_string(), "reserved flag bits 0x0100 are set");
    }

    // ---- IPv4 options area ----

    #[test]
    fn ipv4_area_with_only_tfd_is_the_option() {
        let area = ipv4_options_area(&video());
        assert_eq!(area, VIDEO_V4);
        assert_eq!(find_in_ipv4_options(&area), Ok(Some((0, video()))));
    }

    #[test]
    fn ipv4_append_after_nop_pads_with_eol() {
        let mut area = vec![IPV4_NOP];
        assert_eq!(append_to_ipv4_options(&mut area, &video()), Ok(1));
        let mut expected = vec![0x01];
        expected.extend_from_slice(&VIDEO_V4);
        expected.extend_from_slice(&[0x00, 0x00, 0x00]);
        assert_eq!(area, expected);
        assert_eq!(find_in_ipv4_options(&area), Ok(Some((1, video()))));
    }

    #[test]
    fn ipv4_append_replaces_eol_and_padding() {
        // Router Alert (RFC 2113: 0x94, Len 4, value 0), then EOL and padding.
        let mut area = vec![0x94, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(append_to_ipv4_options(&mut area, &video()), Ok(4));
        let mut expected = vec![0x94, 0x04, 0x00, 0x00];
        expected.extend_from_slice(&VIDEO_V4);
        assert_eq!(area, expected, "16 octets, already a multiple of 4: no EOL needed");
    }

    #[test]
    fn ipv4_find_stops_at_eol_and_skips_other_options() {
        // NOP, an RFC 4727 experiment with the same number but copy flag clear (0x1E), EOL,
        // then bytes after EOL that look like TFD but are padding.
        let mut area = vec![0x01, 0x1E, 0x03, 0xAA, 0x00];
        area.extend_from_slice(&VIDEO_V4);
        assert_eq!(find_in_ipv4_options(&area), Ok(None));
        assert_eq!(find_in_ipv4_options(&[]), Ok(None));
        assert_eq!(find_in_ipv4_options(&[0x01, 0x01, 0x01, 0x01]), Ok(None));
    }

    #[test]
    fn ipv4_list_errors() {
        use OptionListError as E;
        assert_eq!(find_in_ipv4_options(&[0x01, 0x94]), Err(E::MissingLength { offset: 1 }));
        assert_eq!(find_in_ipv4_options(&[0x94, 0x01, 0x00, 0x00]), Err(E::LengthTooSmall { offset: 0, len: 1 }));
        assert_eq!(
            find_in_ipv4_options(&[0x94, 0x06, 0x00, 0x00]),
            Err(E::Overrun { offset: 0, needed: 6, available: 4 })
        );
        // Boundaries: an option ending exactly at the end fits; one octet more overruns.
        assert_eq!(find_in_ipv4_options(&[0x94, 0x04, 0x00, 0x00]), Ok(None));
        assert_eq!(
            find_in_ipv4_options(&[0x94, 0x05, 0x00, 0x00]),
            Err(E::Overrun { offset: 0, needed: 5, available: 4 })
        );
        let mut two = VIDEO_V4.to_vec();
        two.extend_from_slice(&VIDEO_V4);
        assert_eq!(find_in_ipv4_options(&two), Err(E::DuplicateTfd { offset: 12 }));
        let mut bad = VIDEO_V4.to_vec();
        bad[2] = 0xC0;
        assert_eq!(
            find_in_ipv4_options(&bad),
            Err(E::Tfd { offset: 0, source: TfdDecodeError::BothBufferAndForecast })
        );
        // A TFD type octet with the IPv6 length is caught by the walker as too short for TFD.
        let short = [0x9E, 0x0A, 0x0C, 0x00, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            find_in_ipv4_options(&short),
            Err(E::Tfd { offset: 0, source: TfdDecodeError::WrongLength { found: 10, expected: 12 } })
        );
    }

    #[test]
    fn ipv4_append_errors_leave_area_unchanged() {
        let mut present = ipv4_options_area(&video());
        assert_eq!(append_to_ipv4_options(&mut present, &video()), Err(TfdAppendError::AlreadyPresent { offset: 0 }));
        assert_eq!(present, VIDEO_V4);

        let mut full = vec![IPV4_NOP; 29];
        assert_eq!(append_to_ipv4_options(&mut full, &video()), Err(TfdAppendError::NoRoom { needed: 44, limit: 40 }));
        assert_eq!(full, vec![IPV4_NOP; 29]);
        let mut just_fits = vec![IPV4_NOP; 28];
        assert_eq!(append_to_ipv4_options(&mut just_fits, &video()), Ok(28));
        assert_eq!(just_fits.len(), 40);

        let mut broken = vec![0x94, 0x09];
        assert_eq!(
            append_to_ipv4_options(&mut broken, &video()),
            Err(TfdAppendError::List(OptionListError::Overrun { offset: 0, needed: 9, available: 2 }))
        );
        assert_eq!(broken, [0x94, 0x09]);
    }

    // ---- IPv6 Hop-by-Hop header ----

    #[test]
    fn ipv6_header_with_only_tfd_vector() {
        // Next Header 17 (UDP), Hdr Ext Len 1 (16 octets), PadN of 2 (0x01 0x00), TFD at 4.
        let hdr = ipv6_hop_by_hop(17, &video());
        let mut expected = vec![17, 1, 0x01, 0x00];
        expected.extend_from_slice(&VIDEO_V6);
        assert_eq!(hdr, expected);
        assert_eq!(find_in_ipv6_hop_by_hop(&hdr), Ok(Some((4, video()))));
    }

    #[test]
    fn ipv6_append_after_router_alert_vector() {
        // RFC 2711 Router Alert (type 5, Opt Data Len 2), then PadN of 2 to fill 8 octets.
        let mut hdr = vec![6, 0, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00];
        assert_eq!(append_to_ipv6_hop_by_hop(&mut hdr, &video()), Ok(8));
        let mut expected = vec![6, 2, 0x05, 0x02, 0x00, 0x00, 0x01, 0x00];
        expected.extend_from_slice(&VIDEO_V6);
        expected.extend_from_slice(&[0x01, 0x02, 0x00, 0x00]);
        assert_eq!(hdr, expected);
        assert_eq!(find_in_ipv6_hop_by_hop(&hdr), Ok(Some((8, video()))));
    }

    #[test]
    fn ipv6_append_uses_pad1_for_one_octet() {
        // An unknown skippable option ending at offset 7: one octet to reach offset 8.
        let mut hdr = vec![59, 0, 0x07, 0x03, 0xAA, 0xBB, 0xCC, 0x00];
        assert_eq!(append_to_ipv6_hop_by_hop(&mut hdr, &video()), Ok(8));
        assert_eq!(hdr[..8], [59, 2, 0x07, 0x03, 0xAA, 0xBB, 0xCC, 0x00]);
        assert_eq!(hdr[8..20], VIDEO_V6);
        assert_eq!(hdr[20..], [0x01, 0x02, 0x00, 0x00]);
    }

    #[test]
    fn ipv6_find_reads_only_the_header() {
        let mut packet = ipv6_hop_by_hop(17, &video());
        // A payload that happens to contain TFD bytes is not part of the header.
        packet.extend_from_slice(&VIDEO_V6);
        assert_eq!(find_in_ipv6_hop_by_hop(&packet), Ok(Some((4, video()))));
        // A header of padding only.
        assert_eq!(find_in_ipv6_hop_by_hop(&[17, 0, 0, 0, 0, 0, 0, 0]), Ok(None));
        assert_eq!(find_in_ipv6_hop_by_hop(&[17, 0, 1, 4, 0, 0, 0, 0]), Ok(None));
    }

    #[test]
    fn ipv6_list_errors() {
        use OptionListError as E;
        assert_eq!(find_in_ipv6_hop_by_hop(&[17]), Err(E::HeaderTruncated { needed: 2, available: 1 }));
        assert_eq!(
            find_in_ipv6_hop_by_hop(&[17, 1, 0, 0, 0, 0, 0, 0]),
            Err(E::HeaderTruncated { needed: 16, available: 8 })
        );
        assert_eq!(find_in_ipv6_hop_by_hop(&[17, 0, 0, 0, 0, 0, 0, 0x05]), Err(E::MissingLength { offset: 7 }));
        assert_eq!(
            find_in_ipv6_hop_by_hop(&[17, 0, 0x01, 0x05, 0, 0, 0, 0]),
            Err(E::Overrun { offset: 2, needed: 7, available: 6 })
        );
        // Boundaries: a PadN ending exactly at the header's end fits; one octet more overruns.
        assert_eq!(find_in_ipv6_hop_by_hop(&[17, 0, 0x01, 0x04, 0, 0, 0, 0]), Ok(None));
        assert_eq!(
            find_in_ipv6_hop_by_hop(&[17, 0, 0x07, 0x05, 0, 0, 0, 0, 0xEE]),
            Err(E::Overrun { offset: 2, needed: 7, available: 6 })
        );
        let mut two = ipv6_hop_by_hop(17, &video());
        two[1] = 3;
        two.extend_from_slice(&[0x01, 0x02, 0, 0]);
        two.extend_from_slice(&VIDEO_V6);
        assert_eq!(find_in_ipv6_hop_by_hop(&two), Err(E::DuplicateTfd { offset: 20 }));
        let mut bad = ipv6_hop_by_hop(17, &video());
        bad[7] = 0x01; // a reserved flag bit
        assert_eq!(
            find_in_ipv6_hop_by_hop(&bad),
            Err(E::Tfd { offset: 4, source: TfdDecodeError::ReservedBitsSet { bits: 1 } })
        );
    }

    #[test]
    fn ipv6_append_errors_leave_header_unchanged() {
        let mut present = ipv6_hop_by_hop(17, &video());
        let before = present.clone();
        assert_eq!(
            append_to_ipv6_hop_by_hop(&mut present, &video()),
            Err(TfdAppendError::AlreadyPresent { offset: 4 })
        );
        assert_eq!(present, before);

        let mut trailing = vec![17, 0, 0, 0, 0, 0, 0, 0, 0xFF];
        assert_eq!(append_to_ipv6_hop_by_hop(&mut trailing, &video()), Err(TfdAppendError::TrailingBytes { extra: 1 }));
        let mut short = vec![17, 1, 0, 0];
        assert_eq!(
            append_to_ipv6_hop_by_hop(&mut short, &video()),
            Err(TfdAppendError::List(OptionListError::HeaderTruncated { needed: 16, available: 4 }))
        );

        // Largest header (2048 octets) whose last option ends at 2040: no room left.
        let mut full = vec![17, 255];
        full.extend_from_slice(&[0x07, 255]);
        full.resize(2 + 2 + 255, 0xAB);
        while full.len() < 2040 {
            let n = (2040 - full.len()).min(257);
            full.push(0x07);
            full.push(u8::try_from(n - 2).unwrap());
            full.resize(full.len() + n - 2, 0xAB);
        }
        full.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(full.len(), 2048);
        let before = full.clone();
        assert_eq!(
            append_to_ipv6_hop_by_hop(&mut full, &video()),
            Err(TfdAppendError::NoRoom { needed: 2056, limit: 2048 })
        );
        assert_eq!(full, before);
    }

    // ---- properties ----

    fn arb_flags() -> impl Strategy<Value = TfdFlags> {
        // Source: none, B or F (never both); any subset of M, L, S, E.
        (0usize..3, 0u16..16).prop_map(|(source, rest)| {
            let mut f = TfdFlags::from_bits(rest << 9).expect("M, L, S, E are bits 9..12");
            f |= [TfdFlags::empty(), TfdFlags::BUFFER, TfdFlags::FORECAST][source];
            f
        })
    }

    fn arb_option() -> impl Strategy<Value = TfdOption> {
        let data = prop_oneof![
            any::<u32>().prop_map(NextData::Bytes),
            // Every finite, sign-clear binary32: exponent field below all-ones.
            (0u32..0x7F80_0000).prop_map(|b| NextData::Float(f32::from_bits(b))),
        ];
        (arb_flags(), data, any::<u32>()).prop_map(|(flags, data, t)| {
            let flags = match data {
                NextData::Float(_) => flags | TfdFlags::DATA_FLOAT,
                NextData::Bytes(_) => flags,
            };
            opt(flags, data, t)
        })
    }

    /// Bytes near the option: a valid encoding with a few octets overwritten, then cut or
    /// extended, so that mutations reach the checks past type and length.
    fn arb_near_option() -> impl Strategy<Value = Vec<u8>> {
        (arb_option(), any::<bool>(), proptest::collection::vec((0usize..12, any::<u8>()), 0..4), 0usize..15).prop_map(
            |(o, v6, edits, len)| {
                let mut b = if v6 { o.ipv6_bytes().to_vec() } else { o.ipv4_bytes().to_vec() };
                for (i, x) in edits {
                    b[i] = x;
                }
                b.resize(len, 0);
                b
            },
        )
    }

    /// A well-formed IPv4 options list without TFD: NOPs and other options, maybe an EOL and
    /// padding after it.
    fn arb_ipv4_list() -> impl Strategy<Value = Vec<u8>> {
        arb_ipv4_list_with_end().prop_map(|(area, _)| area)
    }

    /// As [`arb_ipv4_list`], with the offset where the list ends (its EOL, or its length).
    fn arb_ipv4_list_with_end() -> impl Strategy<Value = (Vec<u8>, usize)> {
        let item = prop_oneof![
            Just(vec![IPV4_NOP]),
            (2u8..=255, proptest::collection::vec(any::<u8>(), 0..6)).prop_filter_map("not TFD", |(t, data)| {
                (t != IPV4_OPTION_TYPE).then(|| {
                    let mut v = vec![t, data.len() as u8 + 2];
                    v.extend_from_slice(&data);
                    v
                })
            }),
        ];
        (proptest::collection::vec(item, 0..6), 0usize..4).prop_map(|(items, eol_pad)| {
            let mut area: Vec<u8> = items.concat();
            let list_end = area.len();
            area.resize(area.len() + eol_pad, IPV4_EOL);
            (area, list_end)
        })
    }

    /// The options of a well-formed IPv6 Hop-by-Hop header without TFD: Pad1, PadN and others.
    fn arb_ipv6_options() -> impl Strategy<Value = Vec<u8>> {
        let item = prop_oneof![
            Just(vec![IPV6_PAD1]),
            (0u8..=255, proptest::collection::vec(any::<u8>(), 0..6)).prop_filter_map(
                "not TFD or Pad1",
                |(t, data)| {
                    (t != IPV6_OPTION_TYPE && t != IPV6_PAD1).then(|| {
                        let mut v = vec![t, data.len() as u8];
                        v.extend_from_slice(&data);
                        v
                    })
                }
            ),
        ];
        proptest::collection::vec(item, 0..5).prop_map(|items| items.concat())
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(o in arb_option()) {
            prop_assert_eq!(decode_ipv4(&o.ipv4_bytes()), Ok(o));
            prop_assert_eq!(decode_ipv6(&o.ipv6_bytes()), Ok(o));
            // The two encodings differ only in the first two octets.
            prop_assert_eq!(&o.ipv4_bytes()[2..], &o.ipv6_bytes()[2..]);
        }

        #[test]
        fn decoded_reencodes_to_input(b in prop_oneof![proptest::collection::vec(any::<u8>(), 0..20), arb_near_option()]) {
            // Never panics; success means the input was exactly one canonical option.
            if let Ok(o) = decode_ipv4(&b) {
                prop_assert_eq!(&o.ipv4_bytes()[..], &b[..]);
            }
            if let Ok(o) = decode_ipv6(&b) {
                prop_assert_eq!(&o.ipv6_bytes()[..], &b[..]);
            }
        }

        #[test]
        fn ipv4_append_then_find(
            prefix in prop_oneof![arb_ipv4_list(), proptest::collection::vec(any::<u8>(), 0..40)],
            o in arb_option(),
        ) {
            let mut area = prefix.clone();
            let found_before = find_in_ipv4_options(&prefix);
            match append_to_ipv4_options(&mut area, &o) {
                Ok(offset) => {
                    prop_assert_eq!(found_before, Ok(None));
                    prop_assert_eq!(area.len() % 4, 0);
                    prop_assert!(area.len() <= IPV4_MAX_OPTIONS_LEN);
                    prop_assert_eq!(&area[..offset], &prefix[..offset], "options before the EOL kept");
                    prop_assert_eq!(find_in_ipv4_options(&area), Ok(Some((offset, o))));
                }
                Err(_) => prop_assert_eq!(area, prefix),
            }
        }

        #[test]
        fn ipv6_append_then_find(
            body in prop_oneof![arb_ipv6_options(), proptest::collection::vec(any::<u8>(), 0..30)],
            o in arb_option(),
        ) {
            // Build a header of the right length around arbitrary option bytes.
            let mut hdr = vec![17, 0];
            hdr.extend_from_slice(&body);
            let total = hdr.len().next_multiple_of(8);
            hdr.resize(total, 0);
            hdr[1] = (total / 8 - 1) as u8;
            let before = hdr.clone();
            let found_before = find_in_ipv6_hop_by_hop(&before);
            match append_to_ipv6_hop_by_hop(&mut hdr, &o) {
                Ok(offset) => {
                    prop_assert_eq!(found_before, Ok(None));
                    prop_assert_eq!(hdr.len() % 8, 0);
                    prop_assert_eq!(offset % 4, 0);
                    prop_assert_eq!(usize::from(hdr[1]), hdr.len() / 8 - 1);
                    prop_assert_eq!(hdr[0], 17);
                    prop_assert_eq!(find_in_ipv6_hop_by_hop(&hdr), Ok(Some((offset, o))));
                }
                Err(_) => prop_assert_eq!(hdr, before),
            }
        }

        #[test]
        fn well_formed_lists_take_the_option(
            (v4, list_end) in arb_ipv4_list_with_end(),
            v6 in arb_ipv6_options(),
            o in arb_option(),
        ) {
            // Without TFD and with room, appending must succeed (the random-bytes cases above
            // mostly exercise the error path).
            let mut area = v4.clone();
            let r = append_to_ipv4_options(&mut area, &o);
            if list_end + ENCODED_LEN <= IPV4_MAX_OPTIONS_LEN {
                prop_assert_eq!(r, Ok(list_end));
            } else {
                prop_assert!(matches!(r, Err(TfdAppendError::NoRoom { .. })), "{:?}", r);
            }
            let mut hdr = vec![59, 0];
            hdr.extend_from_slice(&v6);
            let total = hdr.len().next_multiple_of(8);
            hdr.resize(total, IPV6_PAD1);
            hdr[1] = (total / 8 - 1) as u8;
            let offset = append_to_ipv6_hop_by_hop(&mut hdr, &o);
            prop_assert!(offset.is_ok(), "{:?}", offset);
            prop_assert_eq!(&hdr[offset.unwrap()..offset.unwrap() + ENCODED_LEN], &o.ipv6_bytes()[..]);
        }

        #[test]
        fn find_never_panics_and_locates_exact_bytes(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(Some((off, o))) = find_in_ipv4_options(&b) {
                prop_assert_eq!(&b[off..off + ENCODED_LEN], &o.ipv4_bytes()[..]);
            }
            if let Ok(Some((off, o))) = find_in_ipv6_hop_by_hop(&b) {
                prop_assert_eq!(&b[off..off + ENCODED_LEN], &o.ipv6_bytes()[..]);
            }
        }
    }
}
