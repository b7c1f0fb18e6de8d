//! Goal: a full file system never costs an acknowledged write nor kills
//! the server, and a pool that cannot fit is refused with a clear error.
//!
//! Method: a small ext4 file system on a loop device (root, mkfs.ext4 and
//! mount, which `.ci/run` checks). The server's pool (page domain) reserves
//! its blocks when created; then a filler file takes every block left, and
//! the server must go on taking and keeping writes (without the
//! reservation a store into a hole of the mapping would find no block and
//! kill the server with SIGBUS). Creating a second pool there must fail
//! with an error that says why, and leave no file behind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use redis::Commands;

mod common;
use common::Server;

/// An ext4 file system of `mib` MiB mounted on a fresh directory;
/// unmounted and removed on drop.
struct LoopFs {
    dir: PathBuf,
    mount: PathBuf,
}

impl LoopFs {
    fn new(mib: u64) -> LoopFs {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("diskfull-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("fs.img");
        std::fs::File::create(&image).unwrap().set_len(mib << 20).unwrap();
        let mount = dir.join("mnt");
        std::fs::create_dir(&mount).unwrap();
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
        run(Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mount));
        LoopFs { dir, mount }
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(command: &mut Command) {
    let output =
        command.output().unwrap_or_else(|e| panic!("{command:?}: {e} (this test needs root, mkfs.ext4, mount)"));
    assert!(output.status.success(), "{command:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// Writes a file until the file system is full; returns its size.
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0xabu8; 64 << 10];
    let mut written = 0;
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(error) if error.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(error) => panic!("filling: {error}"),
        }
    }
    let _ = file.sync_all();
    written
}

#[test]
fn a_full_file_system_loses_nothing_and_refuses_new_pools_clearly() {
    let fs = LoopFs::new(64);
    let pool = fs.mount.join("kv.pool");
    // One pool: the file system is sized for one (a shard per core would
    // make one pool file each).
    let args = ["--pool-size", "24MiB", "--log-size", "1MiB", "--ring-entries", "64", "--shards", "1"];
    let mut acknowledged = Vec::new();
    {
        let server = Server::start(&pool, &args);
        let banner = server.banner().join("\n");
        assert!(banner.contains("persistence domain: page"), "{banner}");
        let filled = fill(&fs.mount.join("filler"));
        assert!(filled > 10 << 20, "the filler took only {filled} bytes");
        let mut c = server.client();
        for i in 0..800u32 {
            let value = vec![(i % 251) as u8; 12_000];
            let () = c.set(format!("k{i}"), &value).unwrap_or_else(|e| panic!("write {i} on a full disk: {e}"));
            acknowledged.push(value);
        }
        server.kill();
    }
    let server = Server::start(&pool, &args);
    let mut c = server.client();
    for (i, value) in acknowledged.iter().enumerate() {
        let found: Vec<u8> = c.get(format!("k{i}")).unwrap();
        assert!(found == *value, "k{i} after a restart on a full disk");
    }
    // No room for another pool: a clear refusal, and nothing left behind.
    let second = fs.mount.join("second.pool");
    let output = Command::new(env!("CARGO_BIN_EXE_packetstore"))
        .args(["serve", "--pool", second.to_str().unwrap(), "--pool-size", "32MiB", "--log-size", "1MiB"])
        .args(["--ring-entries", "64", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no room for a pool of 32 MiB"), "{stderr}");
    let leftovers: Vec<_> = std::fs::read_dir(&fs.mount)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("second"))
        .collect();
    assert!(leftovers.is_empty(), "a refused pool left {leftovers:?}");
}
