//! fio (Debian's, unmodified: psync engine, fsync=1) under the preload
//! library with data verification (`verify=crc32c`): every block fio
//! wrote reads back with its checksum through the cache, and after fio is
//! killed with -9 and its file loses every byte the cache had not synced
//! (as a power failure may), the replay at the next program's first open
//! gives back every block fio wrote, each whole.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

mod common;
use common::Setup;

/// fio's job, the same in every run that must verify another's blocks.
/// fio saves a verify state file (`local-cached-0-verify.state`) in its
/// working directory when a job ends early or fails its verification: not
/// saved at all, and fio runs in the test's scratch area (outside the
/// cached directory), never in the repository (issue 35).
fn job<'a>(command: &'a mut Command, file: &Path, size: u64) -> &'a mut Command {
    command
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .args(["--name=cached", "--thread", "--ioengine=psync", "--bs=4k", "--fsync=1", "--verify=crc32c"])
        .arg("--verify_state_save=0")
        .arg(format!("--filename={}", file.display()))
        .arg(format!("--size={size}"))
}

fn succeeded(output: &Output, what: &str) -> String {
    let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what}: {text}");
    assert!(!text.contains("verify: bad"), "{what}: {text}");
    text
}

#[test]
fn fio_verifies_its_random_writes_through_the_cache() {
    let setup = Setup::new("fio-verify");
    let file = setup.dir.join("data");
    let mut fio = setup.cached("fio");
    job(&mut fio, &file, 8 << 20).args(["--rw=randwrite", "--do_verify=1"]);
    let text = succeeded(&fio.output().unwrap(), "fio randwrite + verify");
    assert!(text.contains("caching writes under"), "fio ran under the cache: {text}");
    assert!(text.contains("err= 0"), "{text}");
}

#[test]
fn fio_blocks_survive_a_kill_and_a_lost_page_cache() {
    let setup = Setup::new("fio-kill");
    let file = setup.dir.join("data");
    let mut fio = setup.cached("fio");
    // No write-back during the run (a long interval, one lane far from
    // full): nothing fio wrote is synced, so losing all of it is a state a
    // power failure could leave; only the log can give it back.
    fio.env("PACKETSTORE_CACHE_WRITEBACK_MS", "3600000").env("PACKETSTORE_CACHE_LANES", "1");
    job(&mut fio, &file, 8 << 20).args(["--rw=write", "--do_verify=0", "--rate_iops=4000"]);
    let mut child = fio.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    // Killed once some 200 blocks are written (fio's verify header starts
    // each), however slowly this machine starts fio.
    let written = || {
        let bytes = std::fs::read(&file).unwrap_or_default();
        bytes.chunks(4096).filter(|block| block.starts_with(&[0xca, 0xac])).count()
    };
    let start = std::time::Instant::now();
    while written() < 200 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The page cache, lost.
    std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(0).unwrap();
    let touch = setup.cached("touch").arg(setup.dir.join("recovered")).output().unwrap();
    let banner = String::from_utf8_lossy(&touch.stderr).to_string();
    assert!(touch.status.success(), "{banner}");
    let size = std::fs::metadata(&file).unwrap().len();
    let blocks = size / 4096;
    assert_eq!(size % 4096, 0, "whole blocks replayed: {size} bytes");
    assert!(blocks > 100 && blocks < 2048, "killed mid-run: {blocks} blocks; {banner}");
    assert!(banner.contains(&format!("replayed {blocks} records to 1 files")), "{banner}");
    // fio checks every block it wrote (sequentially: all below the end).
    let mut verify = Command::new("fio");
    job(&mut verify, &file, size).args(["--rw=write", "--verify_only"]);
    succeeded(&verify.output().unwrap(), "fio verify_only after the replay");
    // The check can fail: one damaged block is found.
    std::os::unix::fs::FileExt::write_all_at(
        &std::fs::File::options().write(true).open(&file).unwrap(),
        &[7u8; 64],
        4096 * (blocks / 2),
    )
    .unwrap();
    let damaged = verify.output().unwrap();
    assert!(!damaged.status.success(), "fio finds the damaged block");
}
