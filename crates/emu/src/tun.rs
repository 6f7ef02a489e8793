//! TUN devices inside network namespaces.
//!
//! A real node's device is a TUN device (`/dev/net/tun`, `IFF_TUN | IFF_NO_PI`): a layer-3
//! point-to-point interface, so each `read` returns one IPv4 datagram the host sent and each
//! `write` hands the host one datagram, with no Ethernet header and no ARP (the simulated
//! network is a layer-3 one; a TAP device would need both emulated). The device is not
//! persistent: it disappears when its descriptor is closed, so a crashed or killed driver
//! leaves no device behind.
//!
//! The device is created in the namespace the creating thread is in. [`open_in`] therefore
//! creates it on a short-lived thread that first joins the target namespace (`setns`, which
//! for a network namespace changes only the calling thread), so the caller's own namespace is
//! never touched.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Why a device could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum TunError {
    #[error("device name {0:?}: 1 to 15 bytes without NUL, '/' or whitespace")]
    Name(String),
    #[error("cannot open network namespace {path}: {err}")]
    Namespace { path: String, err: io::Error },
    #[error("cannot enter network namespace {path} (needs root / CAP_SYS_ADMIN): {err}")]
    Enter { path: String, err: io::Error },
    #[error("cannot open /dev/net/tun: {0}")]
    Open(io::Error),
    #[error("cannot create TUN device {name}: {err}")]
    Create { name: String, err: io::Error },
}

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags in the union.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Creates the non-blocking TUN device `name` (no packet-information header) in the network
/// namespace at `netns` (e.g. `/run/netns/NAME` or `/proc/PID/ns/net`), or in the caller's own
/// namespace when `netns` is `None`. The device is down and has no address; the caller
/// configures it.
pub fn open_in(netns: Option<&Path>, name: &str) -> Result<OwnedFd, TunError> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0 || b == b'/' || b <= b' ') {
        return Err(TunError::Name(name.into()));
    }
    let Some(netns) = netns else { return create(name) };
    let ns = File::open(netns).map_err(|err| TunError::Namespace { path: netns.display().to_string(), err })?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: `ns` is an open namespace file; setns changes this thread's namespace only,
            // and the thread ends right after creating the device.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                let err = io::Error::last_os_error();
                return Err(TunError::Enter { path: netns.display().to_string(), err });
            }
            create(name)
        })
        .join()
        .expect("the device thread does not panic")
    })
}

fn create(name: &str) -> Result<OwnedFd, TunError> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: a valid NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(TunError::Open(io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req =
        IfReq { name: [0; libc::IFNAMSIZ], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads an ifreq, which `req` is laid out as.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReq) } < 0 {
        return Err(TunError::Create { name: name.into(), err: io::Error::last_os_error() });
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_anything_is_opened() {
        for bad in ["", "0123456789abcdef", "a/b", "a b"] {
            assert!(matches!(open_in(None, bad), Err(TunError::Name(_))), "{bad:?}");
        }
        let e = open_in(Some(Path::new("/nonexistent/ns")), "t0").unwrap_err();
        assert!(matches!(e, TunError::Namespace { .. }), "{e}");
    }
}
