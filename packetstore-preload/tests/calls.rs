//! Writes the log cannot describe, on cached files (copy_file_range,
//! sendfile, splice, pwritev2 with RWF_APPEND), pwritev2 with RWF_DSYNC,
//! and a reopen with O_TRUNC: each overwrites bytes an earlier logged
//! write put there, and the program ends with the logged write's record
//! still live (no write-back ran). The next program's recovery must not bring the older
//! bytes back (tests/programs/calls.c).

mod common;
use common::{program, Setup};

#[test]
fn unlogged_writes_are_not_undone_by_a_replay() {
    let setup = Setup::new("calls");
    let calls = program("calls");
    let output =
        setup.cached(&calls).env("PACKETSTORE_CACHE_WRITEBACK_MS", "3600000").arg(&setup.dir).output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{said} {}", String::from_utf8_lossy(&output.stderr));
    let names = ["copy_file_range", "sendfile", "splice", "pwritev2", "o_trunc", "pwritev2_append"];
    for name in names {
        assert!(said.contains(&format!("ok {name}\n")), "{said}");
    }
    let touch = setup.cached("touch").arg(setup.dir.join("recovered")).output().unwrap();
    let banner = String::from_utf8_lossy(&touch.stderr).to_string();
    assert!(touch.status.success() && !banner.contains("replayed 0 records"), "a replay ran: {banner}");
    for name in names {
        let bytes = std::fs::read(setup.dir.join(name)).unwrap();
        assert_eq!(bytes.len(), if name == "o_trunc" { 100 } else { 4096 }, "{name}");
        assert!(bytes.iter().all(|&b| b == b'b'), "{name}: the replay brought back the older bytes");
    }
}
