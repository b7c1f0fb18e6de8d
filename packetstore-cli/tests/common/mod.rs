//! What the binary's integration tests share: a pool file that is removed
//! when the test ends.

use std::path::PathBuf;

/// A pool path, unique to this test process, deleted on drop.
pub struct TempPool(pub PathBuf);

impl TempPool {
    /// On tmpfs: the cache-line domain (emulated persistent memory).
    pub fn new(name: &str) -> TempPool {
        Self::at("/dev/shm", name)
    }

    /// On the project's disk: the page domain (fdatasync through io_uring).
    pub fn on_disk(name: &str) -> TempPool {
        Self::at(env!("CARGO_TARGET_TMPDIR"), name)
    }

    fn at(dir: &str, name: &str) -> TempPool {
        let path = PathBuf::from(dir).join(format!("packetstore-test-{name}-{}.pool", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempPool(path)
    }
}

impl Drop for TempPool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
