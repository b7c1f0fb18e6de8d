//! A program killed inside each call of the library that changes a cached
//! file (an open with O_TRUNC, creat, ftruncate, truncate, pwrite, write,
//! unlink, rename), just before the call's kernel part and just after it,
//! by the library's test switch (`PACKETSTORE_CACHE_KILL_AT`, refused
//! unless `PACKETSTORE_ENABLE_TEST_SWITCHES=1`): no tracer, no timing.
//! The next program's first open recovers the log. The file must then be
//! as it was before the call (every acknowledged write in it) or as the
//! call leaves it, never anything else. Each point is tried with the page
//! cache kept (a kill) and lost (the file back to what was last synced),
//! except a rename, which syncs the file first (the names a power failure
//! leaves after it are the file system's, not the cache's).
//!
//! The program (tests/programs/kills.c) writes the file in a first run,
//! whose records the second run's recovery replays and releases; the
//! second rewrites one block (a live record) and then makes the change.
//! That is the O_TRUNC window: a kernel that emptied the file
//! before the cache logged the truncate left the live record to be
//! replayed into the empty file (8 KiB of zeros and one block).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

mod common;
use common::{program, Setup};

const BLOCK: usize = 4096;
const BLOCKS: usize = 16;

/// The file after the first run: block i all 'A' + i.
fn written() -> Vec<u8> {
    (0..BLOCKS).flat_map(|i| vec![b'A' + i as u8; BLOCK]).collect()
}

/// `bytes` with block `block` all `fill`.
fn with_block(mut bytes: Vec<u8>, block: usize, fill: u8) -> Vec<u8> {
    bytes[block * BLOCK..(block + 1) * BLOCK].fill(fill);
    bytes
}

/// The file the second run acknowledged before its change.
fn acknowledged() -> Vec<u8> {
    with_block(written(), 2, b'q')
}

/// Files `f` and `g` (None: absent).
type Files = (Option<Vec<u8>>, Option<Vec<u8>>);

/// The files once `change` is made (the state before it is
/// `(acknowledged, absent)`).
fn after(change: &str) -> Files {
    let f = match change {
        "o_trunc" | "creat" => Vec::new(),
        "ftruncate" | "truncate" => acknowledged()[..2 * BLOCK].to_vec(),
        "pwrite" => with_block(acknowledged(), 5, b'z'),
        "write" => with_block(acknowledged(), 7, b'y'),
        "unlink" => return (None, None),
        "rename" => return (None, Some(acknowledged())),
        other => panic!("no change {other}"),
    };
    (Some(f), None)
}

/// The library's kill point for `change`, and which pass of it the change
/// is (the second run's own pwrite of block 2 is the first pwrite).
fn kill_point(change: &str) -> (&'static str, u32) {
    match change {
        "o_trunc" | "creat" => ("o_trunc", 1),
        "ftruncate" => ("ftruncate", 1),
        "truncate" => ("truncate", 1),
        "pwrite" => ("pwrite", 2),
        "write" => ("write", 1),
        "unlink" => ("unlink", 1),
        "rename" => ("rename", 1),
        other => panic!("no change {other}"),
    }
}

/// tests/programs/kills.c, compiled once for all the tests here.
fn kills() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| program("kills")).clone()
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

fn describe(files: &Files) -> String {
    let one = |file: &Option<Vec<u8>>| match file {
        None => "absent".to_string(),
        Some(bytes) => {
            let blocks: String =
                bytes.chunks(BLOCK).map(|b| if b.iter().all(|&x| x == b[0]) { b[0] as char } else { '?' }).collect();
            format!("{} bytes [{}]", bytes.len(), blocks.replace('\0', "0"))
        }
    };
    format!("f {}, g {}", one(&files.0), one(&files.1))
}

/// Kills the program inside `change` at `phase` (before or after its
/// kernel part), loses the page cache if `lose_page_cache`, recovers, and
/// checks the files.
fn killed_inside(change: &str, phase: &str, lose_page_cache: bool) {
    let name = format!("kills-{change}-{phase}-{}", if lose_page_cache { "lost" } else { "kept" });
    let setup = Setup::new(&name);
    let kills = kills();
    let (f, g) = (setup.dir.join("f"), setup.dir.join("g"));
    let first = setup.cached(&kills).arg(&setup.dir).arg("setup").output().unwrap();
    assert!(first.status.success(), "{name}: setup: {}", String::from_utf8_lossy(&first.stderr));
    assert_eq!(read(&f), Some(written()), "{name}: setup");
    let (call, nth) = kill_point(change);
    let second = setup
        .cached(&kills)
        .arg(&setup.dir)
        .arg(change)
        .env("PACKETSTORE_ENABLE_TEST_SWITCHES", "1")
        .env("PACKETSTORE_CACHE_KILL_AT", format!("{call}:{phase}:{nth}"))
        // No write-back: the block rewritten stays a live record.
        .env("PACKETSTORE_CACHE_WRITEBACK_MS", "3600000")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stdout);
    assert!(
        second.status.signal() == Some(libc::SIGKILL) && said == "acked\n",
        "{name}: not killed inside the change ({:?}): {said} {}",
        second.status,
        String::from_utf8_lossy(&second.stderr)
    );
    if lose_page_cache {
        // What was last synced: the first run's file (the second run's
        // recovery synced it); nothing since was (no write-back, every
        // fsync answered by the log). A removed name may come back too.
        std::fs::write(&f, written()).unwrap();
    }
    let touch = setup.cached("touch").arg(setup.dir.join("recovered")).output().unwrap();
    assert!(touch.status.success(), "{name}: recovery: {}", String::from_utf8_lossy(&touch.stderr));
    let found = (read(&f), read(&g));
    let before = (Some(acknowledged()), None);
    assert!(
        found == before || found == after(change),
        "{name}: after recovery {}; only {} (before) or {} (after) are right",
        describe(&found),
        describe(&before),
        describe(&after(change))
    );
}

fn killed_inside_each_point(changes: &[&str]) {
    for change in changes {
        for phase in ["before", "after"] {
            killed_inside(change, phase, false);
            if *change != "rename" {
                killed_inside(change, phase, true);
            }
        }
    }
}

#[test]
fn a_kill_inside_an_open_with_o_trunc_leaves_the_file_before_or_after_it() {
    killed_inside_each_point(&["o_trunc", "creat"]);
}

#[test]
fn a_kill_inside_a_truncate_leaves_the_file_before_or_after_it() {
    killed_inside_each_point(&["ftruncate", "truncate"]);
}

#[test]
fn a_kill_inside_a_write_leaves_the_file_before_or_after_it() {
    killed_inside_each_point(&["pwrite", "write"]);
}

#[test]
fn a_kill_inside_an_unlink_or_a_rename_leaves_the_names_before_or_after_it() {
    killed_inside_each_point(&["unlink", "rename"]);
}

/// The switch kills nothing unless test switches are enabled: the cache
/// refuses it and passes every call through.
#[test]
fn the_kill_switch_is_refused_without_test_switches() {
    let setup = Setup::new("kills-refused");
    let kills = kills();
    let output = setup
        .cached(&kills)
        .arg(&setup.dir)
        .arg("setup")
        .env("PACKETSTORE_CACHE_KILL_AT", "pwrite:before")
        .env_remove("PACKETSTORE_ENABLE_TEST_SWITCHES")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("refused unless PACKETSTORE_ENABLE_TEST_SWITCHES=1"), "{stderr}");
}
