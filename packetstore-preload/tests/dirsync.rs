//! Directory syncs the cache answers from its log, and those it must pass
//! to the disk (tests/programs/dirsync.c, the library's counts printed at
//! exit with PACKETSTORE_CACHE_STATS): a created and written file, and an
//! unlink, are in the log; a mkdir, a rename and a created empty file are
//! not, so the next sync of their directory is real.

mod common;
use common::{program, Setup};

#[test]
fn a_directory_sync_is_answered_only_when_the_log_covers_it() {
    let setup = Setup::new("dirsync");
    let dirsync = program("dirsync");
    let output = setup.cached(&dirsync).env("PACKETSTORE_CACHE_STATS", "1").arg(&setup.dir).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{out} {err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["written", "unlinked", "mkdir", "renamed", "empty", "again"]);
    // written, unlinked, again: answered; mkdir, renamed, empty: real.
    assert!(err.contains("directory syncs: 3 answered by the cache, 3 real"), "{err}");
    assert!(setup.dir.join("c").exists() && setup.dir.join("sub").is_dir() && !setup.dir.join("a").exists());
}
