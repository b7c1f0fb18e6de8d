//! HTTP/1.1 request heads: a small, strict, allocation-free parser.
//!
//! Owns: turning the bytes of a request head (request line and headers, up
//! to the blank line) into what the servers need: method, target, body
//! length, keep-alive. Everything else is skipped. Bodies are not parsed
//! here; the caller takes `content_length` bytes after the head.
//!
//! Limits are explicit: the head is at most `HEAD_SIZE_MAX` bytes and has
//! at most `HEADERS_MAX` headers; a body longer than the caller's limit is
//! refused before a byte of it is read. Anything malformed is an error
//! with the status to answer (400, 411, 413, 431, 501, 505), after which the
//! connection is closed: a stream we could not parse cannot be resynchronised.

pub const HEAD_SIZE_MAX: usize = 8 * 1024;
pub const HEADERS_MAX: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
}

/// A parsed request head. `target` is a byte range of the head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHead {
    pub method: Method,
    pub target: std::ops::Range<usize>,
    pub content_length: u64,
    pub keep_alive: bool,
    /// The `Authorization` header's value, a byte range of the head.
    pub authorization: Option<std::ops::Range<usize>>,
    /// Bytes of the head, blank line included.
    pub head_len: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// More bytes are needed (and fewer than `HEAD_SIZE_MAX` were seen).
    Incomplete,
    /// The request is refused: answer this status, then close.
    Refuse(u16, &'static str),
}

/// Finds the end of the head (the index after "\r\n\r\n") in `bytes`.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete or partial head. `body_size_max` bounds Content-Length.
pub fn parse_head(bytes: &[u8], body_size_max: u64) -> Result<RequestHead, HeadError> {
    let window = &bytes[..bytes.len().min(HEAD_SIZE_MAX)];
    let Some(head_len) = head_end(window) else {
        return Err(if bytes.len() >= HEAD_SIZE_MAX {
            HeadError::Refuse(431, "request head too large")
        } else {
            HeadError::Incomplete
        });
    };
    let head = &bytes[..head_len - 4];
    let mut lines = head.split(|&b| b == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let request_line = lines.next().ok_or(HeadError::Refuse(400, "empty request"))?;
    let (method, target, version) = split_request_line(request_line)?;
    let method = match method {
        b"GET" => Method::Get,
        b"HEAD" => Method::Head,
        b"POST" => Method::Post,
        b"PUT" => Method::Put,
        b"DELETE" => Method::Delete,
        _ => return Err(HeadError::Refuse(501, "method not implemented")),
    };
    let mut keep_alive = match version {
        b"HTTP/1.1" => true,
        b"HTTP/1.0" => false,
        _ => return Err(HeadError::Refuse(505, "HTTP version not supported")),
    };
    let target_start = target.as_ptr() as usize - bytes.as_ptr() as usize;
    let mut content_length: Option<u64> = None;
    let mut authorization = None;
    for (count, line) in lines.enumerate() {
        if count >= HEADERS_MAX {
            return Err(HeadError::Refuse(431, "too many headers"));
        }
        let colon = line.iter().position(|&b| b == b':').ok_or(HeadError::Refuse(400, "header without a colon"))?;
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        if name.is_empty() || name.iter().any(|&b| b == b' ' || b == b'\t') {
            return Err(HeadError::Refuse(400, "malformed header name"));
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let length = parse_decimal(value).ok_or(HeadError::Refuse(400, "malformed Content-Length"))?;
            if content_length.is_some_and(|previous| previous != length) {
                return Err(HeadError::Refuse(400, "conflicting Content-Length headers"));
            }
            content_length = Some(length);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Err(HeadError::Refuse(411, "chunked bodies are not accepted: send Content-Length"));
        } else if name.eq_ignore_ascii_case(b"authorization") {
            let start = value.as_ptr() as usize - bytes.as_ptr() as usize;
            authorization = Some(start..start + value.len());
        } else if name.eq_ignore_ascii_case(b"connection") {
            if contains_token(value, b"close") {
                keep_alive = false;
            } else if contains_token(value, b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    let content_length = content_length.unwrap_or(0);
    if content_length > body_size_max {
        return Err(HeadError::Refuse(413, "body larger than the server's limit"));
    }
    Ok(RequestHead {
        method,
        target: target_start..target_start + target.len(),
        content_length,
        keep_alive,
        authorization,
        head_len,
    })
}

/// Method, target and version of a request line.
type RequestLine<'a> = (&'a [u8], &'a [u8], &'a [u8]);

fn split_request_line(line: &[u8]) -> Result<RequestLine<'_>, HeadError> {
    let malformed = HeadError::Refuse(400, "malformed request line");
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().filter(|m| !m.is_empty()).ok_or(malformed)?;
    let target = parts.next().filter(|t| t.first() == Some(&b'/')).ok_or(malformed)?;
    let version = parts.next().ok_or(malformed)?;
    if parts.next().is_some() || target.iter().any(|&b| b < 0x21 || b == 0x7f) {
        return Err(malformed);
    }
    Ok((method, target, version))
}

fn trim(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

fn parse_decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 {
        return None;
    }
    text.iter().try_fold(0u64, |n, &b| b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0')))
}

fn contains_token(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|part| trim(part).eq_ignore_ascii_case(token))
}

/// The standard reason phrase of the statuses the servers send.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        401 => "Unauthorized",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Unknown",
    }
}

/// The password an `Authorization` header carries: `Bearer <password>`, or
/// `Basic base64(user:password)` whose user is empty or `default` (Redis's
/// only user). None: no credentials in a form this server takes.
pub fn authorization_password(value: &[u8]) -> Option<Vec<u8>> {
    let split = value.iter().position(|&b| b == b' ')?;
    let (scheme, credentials) = (&value[..split], trim(&value[split + 1..]));
    if scheme.eq_ignore_ascii_case(b"bearer") {
        return Some(credentials.to_vec());
    }
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let decoded = base64_decode(credentials)?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = &decoded[..colon];
    (user.is_empty() || user == b"default").then(|| decoded[colon + 1..].to_vec())
}

/// Standard base64 with padding (RFC 4648), as Basic credentials use.
fn base64_decode(text: &[u8]) -> Option<Vec<u8>> {
    fn sextet(b: u8) -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    if text.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    for (i, quad) in text.chunks(4).enumerate() {
        let last = i + 1 == text.len() / 4;
        let pad = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &b in &quad[..4 - pad] {
            n = (n << 6) | sextet(b)?;
        }
        n <<= 6 * pad as u32;
        out.extend_from_slice(&n.to_be_bytes()[1..4 - pad]);
    }
    Some(out)
}

/// A 401 asking for the password (either scheme); closes the connection
/// when the refused request has a body (it is not read).
pub fn respond_unauthorized(out: &mut Vec<u8>, keep_alive: bool) {
    let body = b"authentication required: send Authorization: Bearer <password> (or Basic)\n";
    let mut head = Vec::new();
    respond_head(&mut head, 401, &[], body.len(), keep_alive);
    head.truncate(head.len() - 2);
    out.extend_from_slice(&head);
    out.extend_from_slice(
        b"WWW-Authenticate: Basic realm=\"packetstore\"\r\nWWW-Authenticate: Bearer realm=\"packetstore\"\r\n\r\n",
    );
    out.extend_from_slice(body);
}

/// Prometheus's text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Appends a complete response with `body` of `content_type`.
pub fn respond_typed(out: &mut Vec<u8>, status: u16, content_type: &str, body: &[u8], keep_alive: bool) {
    let mut head = Vec::new();
    respond_head(&mut head, status, &[], body.len(), keep_alive);
    // The head ends with an empty line: the Content-Type goes before it.
    head.truncate(head.len() - 2);
    out.extend_from_slice(&head);
    out.extend_from_slice(b"Content-Type: ");
    out.extend_from_slice(content_type.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(body);
}

/// Appends a complete response with `body`.
pub fn respond(out: &mut Vec<u8>, status: u16, headers: &[(&str, u64)], body: &[u8], keep_alive: bool) {
    respond_head(out, status, headers, body.len(), keep_alive);
    out.extend_from_slice(body);
}

pub fn respond_head(out: &mut Vec<u8>, status: u16, headers: &[(&str, u64)], body_len: usize, keep_alive: bool) {
    // Written by hand: this runs once per request, and core::fmt was 8% of
    // the server's time in a profile.
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: ");
    push_decimal(out, body_len as u64);
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        push_decimal(out, *value);
        out.extend_from_slice(b"\r\n");
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

pub fn push_decimal(out: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<RequestHead, HeadError> {
        parse_head(text.as_bytes(), 1 << 20)
    }

    #[test]
    fn post_with_body_length() {
        let text = "POST /wal HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\nBODY";
        let head = parse(text).unwrap();
        assert_eq!(head.method, Method::Post);
        assert_eq!(&text[head.target.clone()], "/wal");
        assert_eq!(head.content_length, 1024);
        assert!(head.keep_alive);
        assert_eq!(head.head_len, text.len() - 4);
    }

    #[test]
    fn authorization_schemes() {
        let text = "GET /kv/a HTTP/1.1\r\nAuthorization:  Bearer s3cret \r\n\r\n";
        let head = parse(text).unwrap();
        let value = &text.as_bytes()[head.authorization.clone().unwrap()];
        assert_eq!(authorization_password(value).as_deref(), Some(&b"s3cret"[..]));
        // "default:s3cret" and ":pa:ss" (a colon in the password).
        assert_eq!(authorization_password(b"Basic ZGVmYXVsdDpzM2NyZXQ=").as_deref(), Some(&b"s3cret"[..]));
        assert_eq!(authorization_password(b"basic OnBhOnNz").as_deref(), Some(&b"pa:ss"[..]));
        // "alice:s3cret": not the default user.
        assert_eq!(authorization_password(b"Basic YWxpY2U6czNjcmV0"), None);
        assert_eq!(authorization_password(b"Basic ZGVmYXVsdDpzM2NyZXQ"), None, "unpadded");
        assert_eq!(authorization_password(b"Digest x"), None);
        assert_eq!(authorization_password(b"Bearer"), None);
        assert_eq!(parse("GET / HTTP/1.1\r\n\r\n").unwrap().authorization, None);
    }

    #[test]
    fn keep_alive_rules() {
        assert!(!parse("GET / HTTP/1.0\r\n\r\n").unwrap().keep_alive);
        assert!(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap().keep_alive);
        assert!(!parse("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n").unwrap().keep_alive);
    }

    #[test]
    fn refusals() {
        assert_eq!(parse("GET / HTTP/1.1\r\n"), Err(HeadError::Incomplete));
        assert!(matches!(parse("BREW / HTTP/1.1\r\n\r\n"), Err(HeadError::Refuse(501, _))));
        assert!(matches!(parse("GET / HTTP/2.0\r\n\r\n"), Err(HeadError::Refuse(505, _))));
        assert!(matches!(parse("GET nope HTTP/1.1\r\n\r\n"), Err(HeadError::Refuse(400, _))));
        assert!(matches!(parse("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), Err(HeadError::Refuse(400, _))));
        assert!(matches!(
            parse("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(HeadError::Refuse(400, _))
        ));
        assert!(matches!(
            parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(HeadError::Refuse(411, _))
        ));
        assert!(matches!(parse("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n"), Err(HeadError::Refuse(413, _))));
        assert!(matches!(parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), Err(HeadError::Refuse(400, _))));
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(HEAD_SIZE_MAX));
        assert!(matches!(parse(&huge), Err(HeadError::Refuse(431, _))));
        let many: String = (0..HEADERS_MAX + 1).map(|i| format!("H{i}: v\r\n")).collect();
        assert!(matches!(parse(&format!("GET / HTTP/1.1\r\n{many}\r\n")), Err(HeadError::Refuse(431, _))));
    }

    proptest! {
        #[test]
        fn never_panics_and_is_prefix_stable(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let whole = parse_head(&bytes, 1 << 20);
            // A complete head parses the same from any longer input.
            if let Ok(head) = &whole {
                let mut longer = bytes.clone();
                longer.extend_from_slice(b"trailing");
                let again = parse_head(&longer, 1 << 20);
                prop_assert_eq!(again.as_ref(), Ok(head));
            }
        }

        #[test]
        fn valid_heads_parse(path in "/[a-z0-9/]{0,40}", length in 0u64..100_000, extra in 0usize..5) {
            let headers: String = (0..extra).map(|i| format!("X-{i}: value {i}\r\n")).collect();
            let text = format!("POST {path} HTTP/1.1\r\n{headers}Content-Length: {length}\r\n\r\n");
            let head = parse(&text).unwrap();
            prop_assert_eq!(&text[head.target.clone()], path.as_str());
            prop_assert_eq!(head.content_length, length);
            prop_assert_eq!(head.head_len, text.len());
        }
    }
}
