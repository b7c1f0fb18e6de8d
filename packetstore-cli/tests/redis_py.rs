//! Goal: an application using Python's redis-py (5.0.8, the most used
//! Redis client) works against packetstore: pipelines (plain, MULTI/EXEC,
//! WATCH), pub/sub (channels and patterns), `Lock` (its Lua scripts:
//! acquire, extend, release, expiry), blocking pops (BLPOP woken by a
//! push, BRPOP's timeout, BLMOVE, BZPOPMIN), registered scripts (EVALSHA
//! falling back to EVAL) and stream consumer groups.
//!
//! Method: a virtualenv made once under the target directory (`python3 -m
//! venv`, then pip from PyPI; scripts/test.sh installs python3-venv), then
//! `fixtures/redis_py_check.py` against `packetstore serve`: it asserts
//! each behaviour and exits non-zero at the first failure.

mod common;

use std::process::Command;

use common::{Server, TempPool};

const REDIS_PY_VERSION: &str = "5.0.8";

#[test]
fn redis_py_pipelines_pubsub_locks_blocking_pops_and_streams_work() {
    let python = common::redis_py(REDIS_PY_VERSION);
    let pool = TempPool::new("redis-py");
    let server = Server::start(&pool.0, &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/redis_py_check.py");
    let output = Command::new(python).arg(script).arg(server.resp.port().to_string()).output().expect("python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "redis-py checks failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("all redis-py checks passed"), "{stdout}");
}
