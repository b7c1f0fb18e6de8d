//! What the preload library's tests share: the library itself (built by
//! cargo for this checkout), a directory of cached files with its pool,
//! commands run under the library, and C programs compiled for a test.

#![allow(dead_code)] // each test file uses a part

use std::path::{Path, PathBuf};
use std::process::Command;

/// The preload library, built now by cargo (a cdylib is not built for a
/// test of its own package): the debug build of this checkout.
pub fn library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-q", "-p", "packetstore-preload", "--lib"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(status.success(), "cargo build -p packetstore-preload failed");
            let library = target_dir().join("debug/libpacketstore_preload.so");
            assert!(library.exists(), "{} after the build", library.display());
            library
        })
        .clone()
}

fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf()
}

/// `tests/programs/NAME.c` compiled (cc, -Wall -Werror, -pthread) into
/// the test's scratch directory; its path.
pub fn program(name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let output = Command::new("cc")
        .args(["-O2", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("cc (apt-get install gcc)");
    assert!(output.status.success(), "cc {}: {}", source.display(), String::from_utf8_lossy(&output.stderr));
    binary
}

/// A directory of cached files and the pool (on /dev/shm) caching them.
pub struct Setup {
    pub dir: PathBuf,
    pub pool: PathBuf,
}

impl Setup {
    pub fn new(name: &str) -> Setup {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("preload-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pool = PathBuf::from(format!("/dev/shm/packetstore-preload-{name}-{}.pool", std::process::id()));
        let _ = std::fs::remove_file(&pool);
        Setup { dir, pool }
    }

    /// `program` run under the library, caching `dir` in `pool`.
    pub fn cached(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("LD_PRELOAD", library())
            .env("PACKETSTORE_CACHE_POOL", &self.pool)
            .env("PACKETSTORE_CACHE_PATHS", format!("{}/", self.dir.display()))
            .env("PACKETSTORE_CACHE_SIZE", "64MiB")
            .env("PACKETSTORE_CACHE_LOG_SIZE", "8MiB");
        command
    }

    /// sqlite3 on `db` under the library; `line_buffered` runs it under
    /// `stdbuf -oL` so that each reply leaves as it is printed.
    pub fn sqlite(&self, db: &Path, line_buffered: bool) -> Command {
        let mut command = match line_buffered {
            true => {
                let mut command = self.cached("stdbuf");
                command.args(["-oL", "sqlite3"]);
                command
            }
            false => self.cached("sqlite3"),
        };
        command.arg(db);
        command
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.pool);
    }
}
