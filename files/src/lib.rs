//! arbor-files: files that are never torn and never read back damaged: every report, artefact and checkpoint goes
//! through [`atomic_write`] (temporary file, fsync, rename, fsync of the folder), and every cached
//! artefact through [`write_checked`] / [`read_checked`], which end the file with a SHA-256 of its body:
//!
//! ```text
//! body  b"ARBORSUM"  sha256(body) (32 bytes)
//! ```
//!
//! A file whose digest does not match (a flipped byte), that is cut short, or that has no trailer (written
//! by an arbor from before checksums) reads back as [`Damage`]: the caller rebuilds it and says so.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

const TRAILER: &[u8; 8] = b"ARBORSUM";
const TRAILER_LEN: usize = 8 + 32;

/// Writes `bytes` to `path` through a temporary file in the same folder: write, fsync, rename, so a
/// crash leaves either the old file or the new one, never a torn one.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    // Make the rename itself durable.
    std::fs::File::open(dir)?.sync_all()
}

/// [`atomic_write`] of `body` followed by its checksum trailer.
pub fn write_checked(path: &Path, body: &[u8]) -> std::io::Result<()> {
    atomic_write(path, &with_checksum(body))
}

/// `body` with its checksum trailer.
pub fn with_checksum(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + TRAILER_LEN);
    out.extend_from_slice(body);
    out.extend_from_slice(TRAILER);
    out.extend_from_slice(&Sha256::digest(body));
    out
}

/// Why a checked file cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// It could not be read at all.
    Unreadable(String),
    /// It has no checksum trailer: cut short, or written before files were checked.
    NoChecksum,
    /// Its body does not match its checksum.
    Mismatch,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Unreadable(e) => write!(f, "cannot be read ({e})"),
            Damage::NoChecksum => write!(f, "has no checksum (cut short, or written by an older arbor)"),
            Damage::Mismatch => write!(f, "does not match its checksum (damaged on disk)"),
        }
    }
}

/// The body of a file written by [`write_checked`], if its checksum holds.
pub fn read_checked(path: &Path) -> Result<Vec<u8>, Damage> {
    let bytes = std::fs::read(path).map_err(|e| Damage::Unreadable(e.to_string()))?;
    check(bytes)
}

/// The body of checked bytes, if their checksum holds.
pub fn check(mut bytes: Vec<u8>) -> Result<Vec<u8>, Damage> {
    if bytes.len() < TRAILER_LEN || &bytes[bytes.len() - TRAILER_LEN..bytes.len() - 32] != TRAILER {
        return Err(Damage::NoChecksum);
    }
    let body_len = bytes.len() - TRAILER_LEN;
    if Sha256::digest(&bytes[..body_len]).as_slice() != &bytes[body_len + 8..] {
        return Err(Damage::Mismatch);
    }
    bytes.truncate(body_len);
    Ok(bytes)
}

/// The SHA-256 of a file, in hex, streamed (checkpoint items and encoder weights are checked against it).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

/// `bytes` in lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_file_reads_back_its_body_and_any_damage_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.vec");
        let body: Vec<u8> = (0..=255u8).collect();
        write_checked(&path, &body).unwrap();
        assert_eq!(read_checked(&path).unwrap(), body);
        // Every single flipped byte, body or trailer, is caught.
        let good = std::fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert!(check(bad).is_err(), "byte {at}");
        }
        // Cut short anywhere: no trailer.
        for len in [0, 1, good.len() / 2, good.len() - 1] {
            assert_eq!(check(good[..len].to_vec()), Err(Damage::NoChecksum), "{len} bytes");
        }
        assert!(matches!(read_checked(&dir.path().join("missing")), Err(Damage::Unreadable(_))));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_file_digest_is_the_sha256_of_its_bytes_in_hex() {
        // FIPS 180-2's "abc" example.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(sha256_file(&path).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }
}
