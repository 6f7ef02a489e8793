//! Multipath transport: what a connection with several subflows needs beyond one TCP.
//!
//! So far only the shape: the world gives a flow several paths ([`crate::subflow`]), and
//! [`coupled`] is the trait through which a congestion controller sees all subflows of its
//! connection. MPTCP itself (RFC 8684: MP_CAPABLE / MP_JOIN, the data sequence mapping of §3.3,
//! DATA_ACK, the scheduler) is not modelled yet.

pub mod coupled;
