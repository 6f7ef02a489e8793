//! A row of a video trace: one NAL unit, as the trace-driven source ([`super::video`]) reads it
//! and the TFD sender ([`super::tfd`]) describes it. Its own file so that neither of them
//! depends on the other for it.

/// One NAL unit of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct NalRow {
    /// NAL-unit index in the trace.
    pub nal: i64,
    /// Decode-order frame number.
    pub frame: i64,
    /// Frame type (`b'I'`, `b'P'`, `b'B'`).
    pub kind: u8,
    pub size_bytes: u32,
    /// Time stamp of its frame, ns from the start of the clip.
    pub ts_ns: u64,
}
