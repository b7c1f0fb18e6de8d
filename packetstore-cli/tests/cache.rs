//! `packetstore cache recover POOL`: the writes a program made through the
//! write cache, left in its log (the program was killed before a
//! write-back), reach their files, and the log is emptied.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use packetstore::apps::cache::{Cache, PathFiles, SyncFile};
use packetstore::{Geometry, PersistOptions, Pool, PoolKind, PoolKindExt};

struct NoSync;

impl SyncFile for NoSync {
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn sync_dir(&self, _: &[u8]) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn recover_applies_what_the_log_holds() {
    let pool = common::TempPool::new("cache-recover");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cache-recover-{}.dat", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let gone = file.with_extension("gone");
    std::fs::write(&gone, b"old").unwrap();
    let mut geometry = Geometry::for_file_size(32 << 20, 4096, 4 << 20).unwrap();
    geometry.log_count = 2;
    {
        let created = Pool::open_or_create_as(&pool.0, PoolKind::WriteCache, geometry, &PersistOptions::default());
        let (cache, _) = Cache::recover(created.unwrap(), &mut PathFiles).unwrap();
        let cached = cache.file((1, 1), &file, || Arc::new(NoSync)).unwrap();
        // Logged, but never applied nor written back (as if killed).
        cache.write(&cached, 0, b"hello ", || Ok(6)).unwrap();
        cache.write(&cached, 6, b"world", || Ok(5)).unwrap();
        cache.truncate(&cached, 11, || Ok(())).unwrap();
        // Written, then unlinked; the unlink did not reach the disk (as a
        // power failure may leave it): the replay removes the file again.
        let doomed = cache.file((1, 2), &gone, || Arc::new(NoSync)).unwrap();
        cache.write(&doomed, 0, b"new", || Ok(3)).unwrap();
        cache.unlink(&doomed, || Ok(())).unwrap();
        assert_eq!(cache.live_records(), 5);
    }
    assert!(!file.exists());
    let output =
        Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["cache", "recover"]).arg(&pool.0).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout} {}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains("replayed 4 records (11 bytes) to 1 files") && stdout.contains("0 records left"),
        "{stdout}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"hello world");
    assert!(!gone.exists(), "the unlinked file is removed again");
    // Nothing is left to replay.
    let output =
        Command::new(env!("CARGO_BIN_EXE_packetstore")).args(["cache", "recover"]).arg(&pool.0).output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("replayed 0 records"));
    std::fs::remove_file(&file).unwrap();
}
