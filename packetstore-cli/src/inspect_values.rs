//! `packetstore inspect --verify`'s check of the tree's values: every value
//! read and checked against the CRC stored with it (`docs/format.md`,
//! "Value checksums"), each that fails named by its key as a user knows it
//! (the key and database of a string or a collection's element).
//!
//! Invariant: reads only; a value's bytes are never printed.

use std::collections::HashMap;
use std::ops::Bound;

use packetstore::index::node::Value;
use packetstore::index::tree::{key_text, Tree, ValuesReport};
use packetstore::store::keyspace::{Meta, KEY_PREFIX_LEN, NS_ELEMENT, NS_META, NS_STRING};
use packetstore::Pool;

/// Checks every value of `tree` (if there is one): the report goes in
/// `values`, and each corrupt value or failure is a problem.
pub fn verify_values(pool: &Pool, values: &mut Option<ValuesReport>, problems: &mut Vec<String>, tree: Option<&Tree>) {
    let Some(tree) = tree else { return };
    let report = match tree.check_values(pool) {
        Ok(report) => report,
        Err(error) => {
            problems.push(format!("values: the walk stopped: {error}"));
            return;
        }
    };
    let owners = if report.corrupt.iter().any(|key| key.first() == Some(&NS_ELEMENT)) {
        collection_names(pool, tree)
    } else {
        HashMap::new()
    };
    for key in &report.corrupt {
        problems.push(format!("corrupt value for key {}: checksum mismatch", describe(key, &owners)));
    }
    *values = Some(report);
}

/// Each collection's object id, with its key and physical database.
fn collection_names(pool: &Pool, tree: &Tree) -> HashMap<u64, (u32, Vec<u8>)> {
    let start = [NS_META];
    let end = [NS_META + 1];
    let mut names = HashMap::new();
    for (key, value) in tree.range(pool, (Bound::Included(&start[..]), Bound::Excluded(&end[..])), false).flatten() {
        if let (Value::Inline(bytes), Some(db)) = (&value, physical_db(&key)) {
            if let Some(meta) = Meta::decode(bytes) {
                names.insert(meta.oid, (db, key[KEY_PREFIX_LEN..].to_vec()));
            }
        }
    }
    names
}

fn physical_db(tree_key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(tree_key.get(1..KEY_PREFIX_LEN)?.try_into().ok()?))
}

/// A tree key as a user knows it.
fn describe(key: &[u8], owners: &HashMap<u64, (u32, Vec<u8>)>) -> String {
    match key.first() {
        Some(&NS_STRING) | Some(&NS_META) if key.len() >= KEY_PREFIX_LEN => {
            let db = physical_db(key).unwrap_or(0);
            format!("'{}' (physical database {db})", key_text(&key[KEY_PREFIX_LEN..]))
        }
        Some(&NS_ELEMENT) if key.len() >= 9 => {
            let oid = u64::from_be_bytes(key[1..9].try_into().expect("8 bytes"));
            match owners.get(&oid) {
                Some((db, name)) => format!(
                    "'{}' (physical database {db}; its element at tree key '{}')",
                    key_text(name),
                    key_text(key)
                ),
                None => format!("tree key '{}' (an element of object {oid}, whose key was not found)", key_text(key)),
            }
        }
        _ => format!("tree key '{}'", key_text(key)),
    }
}
