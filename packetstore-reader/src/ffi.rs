//! The C ABI (`include/packetstore_reader.h`): a handle per reader, one
//! thread at a time per handle; values borrowed from the handle until its
//! next call.
//!
//! Owns: `Handle`, the boxed reader behind a C pointer, with the last
//! value and the last error text.
//!
//! Invariant: every pointer from C is checked for null and every length
//! is taken as given (the caller owns that memory); a panic inside is
//! caught and reported as an error, never unwound into C.

use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use packetstore::reader::{Reader, ReaderError, ReaderOptions};

/// Returned when a key has a value.
pub const FOUND: c_int = 1;
/// Returned when a key is absent (or expired).
pub const ABSENT: c_int = 0;
/// Returned on an error (`packetstore_reader_error` says which).
pub const ERROR: c_int = -1;
/// Returned when the key holds another type (Redis's WRONGTYPE).
pub const WRONG_TYPE: c_int = -2;

/// A reader behind a C pointer.
pub struct Handle {
    reader: Reader,
    value: Vec<u8>,
    error: CString,
}

/// The reader's counters, as C sees them.
#[repr(C)]
#[derive(Default)]
pub struct Stats {
    pub one_sided: u64,
    pub from_log: u64,
    pub retries: u64,
    pub fallbacks: u64,
}

fn text(message: &str) -> CString {
    CString::new(message.replace('\0', " ")).expect("no NUL left")
}

/// A C string argument, if given and UTF-8.
///
/// # Safety
/// `pointer` is null or a NUL-terminated string.
unsafe fn optional_str<'a>(pointer: *const c_char) -> Result<Option<&'a str>, String> {
    if pointer.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller passes a NUL-terminated string (header contract).
    unsafe { CStr::from_ptr(pointer) }.to_str().map(Some).map_err(|_| "an argument is not UTF-8".to_string())
}

/// Writes `message` into the caller's `error` buffer (NUL-terminated,
/// truncated to `error_len`).
///
/// # Safety
/// `error` is null or points at `error_len` writable bytes.
unsafe fn report(error: *mut c_char, error_len: usize, message: &str) {
    if error.is_null() || error_len == 0 {
        return;
    }
    let bytes = message.as_bytes();
    let len = bytes.len().min(error_len - 1);
    // SAFETY: `len + 1 <= error_len` bytes of the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), error.cast::<u8>(), len);
        *error.add(len) = 0;
    }
}

/// Opens a reader of the pool at `pool_path`; `server` (`host:port`, or
/// null) is where reads that cannot be proved fall back. Null on error,
/// with the reason in `error`.
///
/// # Safety
/// `pool_path` is a NUL-terminated string; `server` is null or one;
/// `error` is null or `error_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_open(
    pool_path: *const c_char,
    server: *const c_char,
    error: *mut c_char,
    error_len: usize,
) -> *mut Handle {
    let opened = catch_unwind(|| {
        // SAFETY: the header's contract for both strings.
        let path = unsafe { optional_str(pool_path) }?.ok_or("no pool path")?;
        // SAFETY: as above.
        let server = unsafe { optional_str(server) }?.map(str::to_string);
        let options = ReaderOptions { server, ..ReaderOptions::default() };
        Reader::open(Path::new(path), options).map_err(|e| e.to_string())
    });
    match opened {
        Ok(Ok(reader)) => Box::into_raw(Box::new(Handle { reader, value: Vec::new(), error: CString::default() })),
        Ok(Err(message)) => {
            // SAFETY: the caller's buffer (header contract).
            unsafe { report(error, error_len, &message) };
            std::ptr::null_mut()
        }
        Err(_) => {
            // SAFETY: as above.
            unsafe { report(error, error_len, "packetstore_reader_open panicked") };
            std::ptr::null_mut()
        }
    }
}

/// Closes a reader (null is ignored).
///
/// # Safety
/// `handle` is null or from `packetstore_reader_open`, not used after.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_close(handle: *mut Handle) {
    if !handle.is_null() {
        // SAFETY: a pointer `packetstore_reader_open` made, closed once.
        drop(unsafe { Box::from_raw(handle) });
    }
}

/// Runs `read` on the handle: the outcome code, and the value's pointer
/// and length on `FOUND`.
///
/// # Safety
/// `handle` from `packetstore_reader_open`; `value` and `value_len` null
/// or writable.
unsafe fn run(
    handle: *mut Handle,
    value: *mut *const u8,
    value_len: *mut usize,
    read: impl FnOnce(&mut Reader, &mut Vec<u8>) -> Result<bool, ReaderError>,
) -> c_int {
    if handle.is_null() {
        return ERROR;
    }
    // SAFETY: a live handle, used by one thread at a time (header).
    let handle = unsafe { &mut *handle };
    let outcome = catch_unwind(AssertUnwindSafe(|| read(&mut handle.reader, &mut handle.value)));
    let code = match outcome {
        Ok(Ok(true)) => FOUND,
        Ok(Ok(false)) => ABSENT,
        Ok(Err(ReaderError::WrongType)) => {
            handle.error = text(&ReaderError::WrongType.to_string());
            WRONG_TYPE
        }
        Ok(Err(error)) => {
            handle.error = text(&error.to_string());
            ERROR
        }
        Err(_) => {
            handle.error = text("the read panicked");
            ERROR
        }
    };
    if code == FOUND {
        // SAFETY: the caller's out-parameters, if given.
        unsafe {
            if !value.is_null() {
                *value = handle.value.as_ptr();
            }
            if !value_len.is_null() {
                *value_len = handle.value.len();
            }
        }
    }
    code
}

/// A database number from C (0-15; a larger one is the reader's error).
fn database(db: u32) -> Result<u8, ReaderError> {
    u8::try_from(db).map_err(|_| ReaderError::Open(format!("database {db} does not exist")))
}

/// The bytes at `pointer`, `len` long (empty for a null pointer).
///
/// # Safety
/// `pointer` is null (with `len` 0) or points at `len` readable bytes.
unsafe fn bytes<'a>(pointer: *const u8, len: usize) -> &'a [u8] {
    if pointer.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(pointer, len) }
}

/// GET `key` in logical database `db`: `FOUND` (value borrowed until the
/// next call on `handle`), `ABSENT`, `WRONG_TYPE` or `ERROR`.
///
/// # Safety
/// `handle` from `packetstore_reader_open`; `key` points at `key_len`
/// bytes; `value` and `value_len` null or writable.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_get(
    handle: *mut Handle,
    db: u32,
    key: *const u8,
    key_len: usize,
    value: *mut *const u8,
    value_len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract for `key`.
    let key = unsafe { bytes(key, key_len) };
    // SAFETY: the caller's contract for the rest.
    unsafe { run(handle, value, value_len, |reader, out| reader.get_into(database(db)?, key, out)) }
}

/// HGET `field` of the hash `key` in database `db`, as
/// `packetstore_reader_get`.
///
/// # Safety
/// As `packetstore_reader_get`; `field` points at `field_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_hget(
    handle: *mut Handle,
    db: u32,
    key: *const u8,
    key_len: usize,
    field: *const u8,
    field_len: usize,
    value: *mut *const u8,
    value_len: *mut usize,
) -> c_int {
    // SAFETY: the caller's contract for `key` and `field`.
    let (key, field) = unsafe { (bytes(key, key_len), bytes(field, field_len)) };
    // SAFETY: the caller's contract for the rest.
    unsafe {
        run(handle, value, value_len, |reader, out| {
            let found = reader.hget(database(db)?, key, field)?;
            *out = found.clone().unwrap_or_default();
            Ok(found.is_some())
        })
    }
}

/// The last error's text (valid until the next call on `handle`).
///
/// # Safety
/// `handle` from `packetstore_reader_open`.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_error(handle: *const Handle) -> *const c_char {
    if handle.is_null() {
        return c"no reader".as_ptr();
    }
    // SAFETY: a live handle.
    unsafe { (*handle).error.as_ptr() }
}

/// Copies the reader's counters into `out`.
///
/// # Safety
/// `handle` from `packetstore_reader_open`; `out` writable.
#[no_mangle]
pub unsafe extern "C" fn packetstore_reader_stats(handle: *const Handle, out: *mut Stats) {
    if handle.is_null() || out.is_null() {
        return;
    }
    // SAFETY: a live handle and the caller's out-parameter.
    let stats = unsafe { (*handle).reader.stats() };
    // SAFETY: as above.
    unsafe {
        *out = Stats {
            one_sided: stats.one_sided,
            from_log: stats.from_log,
            retries: stats.retries,
            fallbacks: stats.fallbacks,
        }
    };
}
