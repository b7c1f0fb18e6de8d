//! A multi-threaded C program (tests/programs/writer.c; unmodified as far
//! as the library knows) under the preload library: several threads write
//! versions of blocks into several files (pwrite, pwritev in pieces, holes
//! punched with fallocate), each op followed by an fdatasync, and report
//! each op before it starts and after it returns. Against that model:
//! - killed with -9 at random moments, then recovered by the next
//!   program's first open: every slot holds its last acknowledged version
//!   or the one in flight, whole (a hole punched is never filled again by
//!   a replay of older writes);
//! - run to the end with no write-back and then every file emptied (the
//!   page cache lost, as a power failure may leave it): the replay gives
//!   back every acknowledged write, from every thread's lane.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use packetstore::util::rng::SplitMix64;

mod common;
use common::{program, Setup};

const SLOT_BYTES: u64 = 16384;
const THREADS: u32 = 4;
const FILES: u32 = 3;

/// Per (file, slot): the last acknowledged op and the one in flight, each
/// (version, punched).
#[derive(Default)]
struct Model {
    acked: HashMap<(u32, u32), (u32, bool)>,
    in_flight: HashMap<(u32, u32), (u32, bool)>,
    acks: u64,
}

impl Model {
    fn line(&mut self, line: &str) {
        let words: Vec<&str> = line.split(' ').collect();
        let number = |i: usize| words[i].parse::<u32>().unwrap();
        let key = (number(1), number(2));
        match words[0] {
            "B" => {
                self.in_flight.insert(key, (number(3), words[4] == "P"));
            }
            "A" => {
                let op = self.in_flight.remove(&key).expect("began");
                assert_eq!(op.0, number(3));
                self.acked.insert(key, op);
                self.acks += 1;
            }
            other => panic!("writer said {other}"),
        }
    }
}

/// Starts the writer; a thread feeds its reports into the model.
fn start(command: &mut std::process::Command) -> (Child, Arc<Mutex<Model>>) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let model = Arc::new(Mutex::new(Model::default()));
    let feed = model.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            feed.lock().unwrap().line(&line);
        }
    });
    (child, model)
}

/// What slot `slot` of `bytes` holds: Some(version) of a whole block, None
/// for zeros; a torn or foreign block fails the test.
fn decode(bytes: &[u8], file: u32, slot: u32) -> Option<u32> {
    let start = (u64::from(slot) * SLOT_BYTES) as usize;
    let block = bytes.get(start..).unwrap_or(&[]);
    let block = &block[..block.len().min(SLOT_BYTES as usize)];
    if block.len() < 20 || block[..20].iter().all(|&b| b == 0) {
        return None;
    }
    let word = |i: usize| u32::from_le_bytes(block[i..i + 4].try_into().unwrap());
    assert_eq!(&block[..4], b"PSWB", "file {file} slot {slot}: not a block");
    assert_eq!((word(4), word(8)), (file, slot), "file {file} slot {slot}: another slot's block");
    let (version, len) = (word(12), word(16) as usize);
    assert!(len <= block.len(), "file {file} slot {slot} v{version}: cut short");
    let mix = |mut x: u64| {
        x = x.wrapping_add(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
        x ^ (x >> 31)
    };
    let pattern = mix((u64::from(file) << 48) ^ (u64::from(slot) << 32) ^ u64::from(version));
    for (i, &byte) in block.iter().enumerate().take(len).skip(20) {
        let want = (pattern >> ((i % 8) * 8)) as u8 ^ i as u8;
        assert_eq!(byte, want, "file {file} slot {slot} v{version}: byte {i} torn");
    }
    Some(version)
}

/// Every slot the model knows holds its acknowledged op or the one in
/// flight.
fn check(dir: &Path, model: &Model, context: &str) {
    let files: Vec<Vec<u8>> =
        (0..FILES).map(|f| std::fs::read(dir.join(format!("file{f}"))).unwrap_or_default()).collect();
    let mut keys: Vec<_> = model.acked.keys().chain(model.in_flight.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for (file, slot) in keys {
        let found = decode(&files[file as usize], file, slot);
        let allowed = |op: Option<&(u32, bool)>| match (op, found) {
            (None, None) => true,
            (Some(&(_, true)), None) => true,
            (Some(&(version, false)), Some(found)) => version == found,
            _ => false,
        };
        let acked = model.acked.get(&(file, slot));
        let in_flight = model.in_flight.get(&(file, slot));
        assert!(
            allowed(acked) || (in_flight.is_some() && allowed(in_flight)),
            "{context}: file {file} slot {slot} holds {found:?}; acknowledged {acked:?}, in flight {in_flight:?}"
        );
    }
}

/// The next program's first open under the cache recovers it; its banner.
fn recover(setup: &Setup) -> String {
    let touch = setup.cached("touch").arg(setup.dir.join("recovered")).output().unwrap();
    assert!(touch.status.success());
    String::from_utf8_lossy(&touch.stderr).into()
}

#[test]
fn threads_writing_files_survive_kills() {
    let setup = Setup::new("threads-kill");
    let writer = program("writer");
    let mut rng = SplitMix64::new(21);
    let (mut acks, mut replayed_somewhere) = (0, false);
    for round in 0..6 {
        let dir = setup.dir.join(format!("round{round}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = setup.cached(&writer);
        command.arg(&dir).args([THREADS.to_string(), FILES.to_string(), "0".into(), round.to_string(), "punch".into()]);
        let (mut child, model) = start(&mut command);
        std::thread::sleep(Duration::from_millis(150 + rng.below(350)));
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(50)); // the last reports read
        let banner = recover(&setup);
        replayed_somewhere |= !banner.contains("replayed 0 records");
        let model = model.lock().unwrap();
        check(&dir, &model, &format!("round {round}"));
        acks += model.acks;
    }
    assert!(acks > 1000, "{acks} ops acknowledged in all");
    assert!(replayed_somewhere, "some recovery replayed records a kill left in the log");
}

#[test]
fn threads_writes_come_back_from_the_log_alone() {
    let setup = Setup::new("threads-lost");
    let writer = program("writer");
    let ops_per_thread = 150;
    let mut command = setup.cached(&writer);
    // No write-back during the run: nothing is synced, so losing every
    // byte of the files is a state a power failure could leave.
    command
        .env("PACKETSTORE_CACHE_WRITEBACK_MS", "3600000")
        .env("PACKETSTORE_CACHE_LANES", THREADS.to_string())
        .arg(&setup.dir)
        .args([THREADS.to_string(), FILES.to_string(), ops_per_thread.to_string(), "7".into()]);
    let (mut child, model) = start(&mut command);
    assert!(child.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(50));
    for f in 0..FILES {
        std::fs::OpenOptions::new().write(true).open(setup.dir.join(format!("file{f}"))).unwrap().set_len(0).unwrap();
    }
    let banner = recover(&setup);
    let total = u64::from(THREADS) * ops_per_thread;
    let model = model.lock().unwrap();
    assert_eq!(model.acks, total);
    assert!(banner.contains(&format!("replayed {total} records to {FILES} files")), "{banner}");
    assert!(model.in_flight.is_empty());
    check(&setup.dir, &model, "after the lost page cache");
}
