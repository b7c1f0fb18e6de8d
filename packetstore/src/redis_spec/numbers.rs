//! Numbers as Redis reads them from a command's arguments.
//!
//! Invariant: what Redis's `string2ll` refuses is refused here too, so a
//! command accepts exactly the integers Redis accepts.

/// A signed 64-bit integer written as Redis's `string2ll` accepts it: no
/// sign but '-', no leading zeros, no "-0", at most 20 characters.
pub fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.is_empty() || text.len() > 20 || text.starts_with('+') || (text.starts_with('0') && text.len() > 1) {
        return None;
    }
    if text.starts_with("-0") {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn integers_as_redis_reads_them() {
        assert_eq!(parse_i64(b"-42"), Some(-42));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for refused in [&b""[..], b"+1", b"01", b"-0", b" 1", b"1.0", b"9223372036854775808"] {
            assert_eq!(parse_i64(refused), None, "{}", String::from_utf8_lossy(refused));
        }
    }
}
