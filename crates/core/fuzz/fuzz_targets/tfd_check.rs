//! The properties checked on every input, by the fuzzer and by the corpus replay test.
//!
//! Every entry point must return without panicking, and:
//! - a successful decode re-encodes to exactly the input (strict decoding: one encoding per
//!   accepted option);
//! - a TFD option found in an options area or Hop-by-Hop header re-encodes to the octets at
//!   the reported offset;
//! - appending an option succeeds only where none was found, leaves a well-formed, padded
//!   list in which the option is then found, and leaves the input unchanged on error.

use qoelab_core::ip::tfd::{self, NextData, TfdFlags, TfdOption};

/// A fixed option to append: any valid one will do.
fn sample() -> TfdOption {
    TfdOption::new(TfdFlags::FORECAST | TfdFlags::DATA_FLOAT | TfdFlags::STREAM, NextData::Float(3.25e5), 300)
        .expect("sample option is valid")
}

pub fn check(data: &[u8]) {
    if let Ok(o) = tfd::decode_ipv4(data) {
        assert_eq!(o.ipv4_bytes()[..], data[..], "IPv4 decode then encode changed the bytes");
    }
    if let Ok(o) = tfd::decode_ipv6(data) {
        assert_eq!(o.ipv6_bytes()[..], data[..], "IPv6 decode then encode changed the bytes");
    }

    let found_v4 = tfd::find_in_ipv4_options(data);
    if let Ok(Some((off, o))) = found_v4 {
        assert_eq!(data[off..off + tfd::ENCODED_LEN], o.ipv4_bytes()[..], "IPv4 option at {off}");
    }
    let found_v6 = tfd::find_in_ipv6_hop_by_hop(data);
    if let Ok(Some((off, o))) = found_v6 {
        assert_eq!(data[off..off + tfd::ENCODED_LEN], o.ipv6_bytes()[..], "IPv6 option at {off}");
    }

    let opt = sample();
    let mut area = data.to_vec();
    match tfd::append_to_ipv4_options(&mut area, &opt) {
        Ok(off) => {
            assert_eq!(found_v4, Ok(None), "append succeeded on a list that was not clean");
            assert_eq!(area.len() % 4, 0);
            assert!(area.len() <= tfd::IPV4_MAX_OPTIONS_LEN);
            assert_eq!(area[..off], data[..off]);
            assert_eq!(tfd::find_in_ipv4_options(&area), Ok(Some((off, opt))));
        }
        Err(_) => assert_eq!(area, data, "failed IPv4 append modified the area"),
    }
    let mut hdr = data.to_vec();
    match tfd::append_to_ipv6_hop_by_hop(&mut hdr, &opt) {
        Ok(off) => {
            assert_eq!(found_v6, Ok(None), "append succeeded on a header that was not clean");
            assert_eq!(hdr.len() % 8, 0);
            assert_eq!(off % 4, 0);
            assert_eq!(usize::from(hdr[1]), hdr.len() / 8 - 1);
            assert_eq!(tfd::find_in_ipv6_hop_by_hop(&hdr), Ok(Some((off, opt))));
        }
        Err(_) => assert_eq!(hdr, data, "failed IPv6 append modified the header"),
    }
}
