//! Reading a user's file by path: the one reader of every file a scenario names (video traces,
//! transcoder ladders, DASH MPDs and segment tables).
//!
//! A path in a scenario may point anywhere: at a FIFO (an open for reading would wait for a
//! writer forever), a device (`/dev/zero` never ends), a folder, or a file of gigabytes. So:
//!
//! 1. the file is opened with `O_NONBLOCK` (opening a FIFO returns at once instead of waiting
//!    for a writer) and `O_CLOEXEC`;
//! 2. `fstat` of the open descriptor (not of the path, which could be swapped in between) must
//!    say *regular file*; anything else is refused naming what it is;
//! 3. at most `max` bytes are read (a `.gz` file: at most `max` bytes after decompression, every
//!    gzip member), and a larger file is refused before more is read.
//!
//! Errors read `cannot read <what>: <reason>` or `<what> is larger than …`, without the OS's
//! decoration (the caller names the path), and never quote the file's bytes.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Parsed input files for one scenario build: every flow that names the same file(s) for the
/// same purpose shares one parsed, immutable copy, so N flows on one trace, ladder or MPD read
/// and hold it once (validation stays linear in flows with a small constant). Keyed by
/// `(kind, paths)`; an ordered map, no hashing. Errors are not kept: the build stops at the
/// first.
#[derive(Default)]
pub struct InputCache(RefCell<BTreeMap<(&'static str, Vec<PathBuf>), Arc<dyn Any + Send + Sync>>>);

impl InputCache {
    /// The parsed `kind` input of `paths`: from the cache, or from `read` (then kept).
    ///
    /// # Panics
    /// If one `kind` is used with two types (a bug in the caller).
    pub fn get<T: Any + Send + Sync, E>(
        &self,
        kind: &'static str,
        paths: &[&Path],
        read: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        let key = (kind, paths.iter().map(|p| p.to_path_buf()).collect::<Vec<_>>());
        if let Some(v) = self.0.borrow().get(&key) {
            return Ok(v.clone().downcast::<T>().expect("one type per input kind"));
        }
        let v = Arc::new(read()?);
        self.0.borrow_mut().insert(key, v.clone());
        Ok(v)
    }
}

/// The bytes of the `what` file at `path` (`.gz`: decompressed), at most `max` of them.
pub fn read_capped(path: &Path, what: &str, max: u64) -> Result<Vec<u8>, String> {
    let file = open_regular(path, what)?;
    let input: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut bytes = Vec::new();
    input.take(max + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {what}: {}", io_reason(&e)))?;
    if bytes.len() as u64 > max {
        return Err(format!("{what} is larger than {} (after decompression)", human(max)));
    }
    Ok(bytes)
}

/// Opens `path` for reading if it is a regular file (see the module header).
pub fn open_regular(path: &Path, what: &str) -> Result<File, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot read {what}: {}", io_reason(&e)))?;
    let meta = file.metadata().map_err(|e| format!("cannot read {what}: {}", io_reason(&e)))?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(format!("cannot read {what}: {kind}, not a regular file"));
    }
    Ok(file)
}

/// An I/O error's reason without the OS's decoration (the path is named by the caller).
fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "no such file".into(),
        K::PermissionDenied => "permission denied".into(),
        K::InvalidInput | K::InvalidData => "not a valid gzip file".into(),
        K::UnexpectedEof => "truncated gzip data".into(),
        K::IsADirectory => "a directory, not a regular file".into(),
        K::NotADirectory => "a path component is not a directory".into(),
        _ => e.kind().to_string(),
    }
}

/// `n` bytes as MiB when whole, else in bytes.
fn human(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("qoelab-input-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let d = dir("kinds");
        let fifo = d.join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer: a blocking open would wait forever; this one returns at once.
        assert_eq!(read_capped(&fifo, "MPD", 100).unwrap_err(), "cannot read MPD: a FIFO, not a regular file");
        assert_eq!(read_capped(&d, "ladder", 100).unwrap_err(), "cannot read ladder: a directory, not a regular file");
        let e = read_capped(Path::new("/dev/zero"), "trace", 100).unwrap_err();
        assert_eq!(e, "cannot read trace: a device, not a regular file");
        let e = read_capped(&d.join("missing"), "trace", 100).unwrap_err();
        assert_eq!(e, "cannot read trace: no such file");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn caps_the_size_and_follows_a_symlink_to_a_regular_file() {
        let d = dir("cap");
        let p = d.join("big.csv");
        std::fs::write(&p, vec![b'x'; 2048]).unwrap();
        assert_eq!(read_capped(&p, "trace", 2048).unwrap().len(), 2048);
        assert_eq!(
            read_capped(&p, "trace", 2047).unwrap_err(),
            "trace is larger than 2047 bytes (after decompression)"
        );
        std::os::unix::fs::symlink(&p, d.join("link.csv")).unwrap();
        assert_eq!(read_capped(&d.join("link.csv"), "trace", 4096).unwrap().len(), 2048);
        std::fs::remove_dir_all(&d).ok();
    }
}
