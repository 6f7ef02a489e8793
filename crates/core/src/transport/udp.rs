//! UDP (RFC 768), optionally carrying RTP (RFC 3550 §5.1): one datagram per application send.

use super::{Datagram, Endpoint, EndpointSetup, FlowCtx, Outgoing, Service};
use crate::packet::{Dir, RtpHdr, UdpHdr, IPV4_HEADER, L4, RTP_HEADER, UDP_HEADER};

/// The sending side of a UDP flow.
#[derive(Clone, Debug)]
pub struct UdpSender {
    pub src_port: u16,
    pub dst_port: u16,
    mtu_bytes: u32,
    /// RTP: SSRC and the next sequence number, if this flow carries RTP.
    rtp: Option<(u32, u16)>,
}

impl UdpSender {
    pub fn new(s: &EndpointSetup, rtp: bool) -> Self {
        // SSRC derived from the flow name so it is stable across runs (RFC 3550 wants random;
        // determinism matters more here).
        let ssrc = s.flow_name.bytes().fold(0x5eed_u32, |h, b| h.rotate_left(5) ^ b as u32);
        UdpSender { src_port: s.src_port, dst_port: s.dst_port, mtu_bytes: s.mtu_bytes, rtp: rtp.then_some((ssrc, 0)) }
    }

    fn overhead(&self) -> u32 {
        IPV4_HEADER + UDP_HEADER + if self.rtp.is_some() { RTP_HEADER } else { 0 }
    }
}

impl Endpoint for UdpSender {
    fn service(&self) -> Service {
        Service::Datagram
    }

    fn max_datagram_payload(&self) -> u32 {
        self.mtu_bytes - self.overhead()
    }

    fn send_datagram(&mut self, d: Datagram, cx: &mut FlowCtx) {
        let Datagram { payload, media, rtp_ts, marker, tfd } = d;
        let rtp = self.rtp.as_mut().map(|(ssrc, seq)| {
            let h = RtpHdr { seq: *seq, timestamp: rtp_ts, ssrc: *ssrc, marker, payload_type: 96 };
            *seq = seq.wrapping_add(1);
            h
        });
        let size_bytes = self.overhead() + payload;
        cx.send(Outgoing {
            dir: Dir::Fwd,
            size_bytes,
            l4: L4::Udp(UdpHdr { src_port: self.src_port, dst_port: self.dst_port, rtp, media, tfrc: None }),
            path: 0,
            tfd,
            ecn: crate::packet::Ecn::NotEct,
        });
    }
}

/// UDP has no receiver state: the world counts arrivals.
pub struct UdpReceiver;

impl Endpoint for UdpReceiver {
    fn service(&self) -> Service {
        Service::Datagram
    }
}
