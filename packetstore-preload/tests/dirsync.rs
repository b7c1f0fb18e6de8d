//! Directory syncs the cache answers from its log when asked to
//! (PACKETSTORE_CACHE_DIRSYNC=log), and those it must pass to the disk
//! (tests/programs/dirsync.c, the library's counts printed at exit with
//! PACKETSTORE_CACHE_STATS): a created and written file, and an unlink,
//! are in the log; a mkdir, a rename and a created empty file are not, so
//! the next sync of their directory is real. By default none is answered.

mod common;
use common::{program, Setup};

#[test]
fn a_directory_sync_is_answered_only_when_the_log_covers_it() {
    let setup = Setup::new("dirsync");
    let dirsync = program("dirsync");
    for (mode, counts) in [("log", "3 answered by the cache, 3 real"), ("real", "0 answered by the cache")] {
        let _ = std::fs::remove_dir_all(&setup.dir);
        std::fs::create_dir_all(&setup.dir).unwrap();
        let mut command = setup.cached(&dirsync);
        command.env("PACKETSTORE_CACHE_STATS", "1").env("PACKETSTORE_CACHE_DIRSYNC", mode).arg(&setup.dir);
        let output = command.output().unwrap();
        let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "{out} {err}");
        assert_eq!(out.lines().collect::<Vec<_>>(), ["written", "unlinked", "mkdir", "renamed", "empty", "again"]);
        // Asked for: written, unlinked, again answered; mkdir, renamed,
        // empty real. By default none is answered.
        assert!(err.contains(&format!("directory syncs: {counts}")), "{mode}: {err}");
        assert!(setup.dir.join("c").exists() && setup.dir.join("sub").is_dir() && !setup.dir.join("a").exists());
    }
}
