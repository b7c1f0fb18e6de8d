//! What Redis 7 functions keep (`cmd/functions.rs` runs FUNCTION and
//! FCALL, and keeps the libraries' code in the store): the libraries in
//! memory and their interpreter (`Functions`), and a library's metadata
//! read from its shebang (`library_name`).
//!
//! Invariants: a library name is at most `LIBRARY_NAME_MAX` bytes; a
//! function name belongs to one library.

use std::collections::BTreeMap;

use mlua::MultiValue;

use crate::script::{valid_name, LuaVm, Registered};

/// The longest library name.
const LIBRARY_NAME_MAX: usize = 256;

pub(in crate::apps::kv) struct Library {
    pub(in crate::apps::kv) code: Vec<u8>,
    pub(in crate::apps::kv) functions: Vec<Registered>,
}

/// The libraries and their interpreter.
#[derive(Default)]
pub(in crate::apps::kv) struct Functions {
    pub(in crate::apps::kv) vm: Option<LuaVm>,
    pub(in crate::apps::kv) libraries: BTreeMap<String, Library>,
    /// The tree's libraries were loaded (after a start).
    pub(in crate::apps::kv) loaded: bool,
}

/// Redis's `functionExtractLibMetaData`: the library's name and engine.
/// The shebang's words as Redis's `sdssplitargs` splits them: quotes
/// (double or single) group and are removed; None if one is left open.
fn split_args(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_ascii_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    quote.is_none().then_some(words)
}

pub(in crate::apps::kv) fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = code.iter().position(|&b| b == b'\n').ok_or("ERR Invalid library metadata")?;
    let line = String::from_utf8_lossy(&code[..end]);
    let parts = split_args(&line).ok_or("ERR Invalid library metadata")?;
    let mut parts = parts.iter().map(String::as_str);
    let engine = parts.next().ok_or("ERR Invalid library metadata")?[2..].to_string();
    let mut name = None;
    for part in parts {
        match part.get(..5) {
            Some(prefix) if prefix.eq_ignore_ascii_case("name=") && name.is_none() => {
                name = Some(part[5..].to_string())
            }
            Some(prefix) if prefix.eq_ignore_ascii_case("name=") => {
                return Err("ERR Invalid metadata value, name argument was given multiple times".into())
            }
            _ => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !valid_name(&name) || name.len() > LIBRARY_NAME_MAX {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one \
                    character long"
            .into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok(name)
}

impl Functions {
    pub(in crate::apps::kv) fn vm(&mut self) -> Result<LuaVm, String> {
        if self.vm.is_none() {
            self.vm = Some(LuaVm::new().map_err(|e| format!("ERR the Lua interpreter failed to start: {e}"))?);
        }
        Ok(self.vm.clone().expect("made above"))
    }

    /// Compiles a library and runs its code, which registers its
    /// functions; checks it against the others (`replace`: one of the
    /// same name goes).
    pub(in crate::apps::kv) fn create(&mut self, code: &[u8], replace: bool) -> Result<(String, Library), String> {
        let name = library_name(code)?;
        if self.libraries.contains_key(&name) && !replace {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let vm = self.vm()?;
        let body_start = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
        let body = vm
            .compile(&code[body_start..], "@user_function")
            .map_err(|why| format!("ERR Error compiling function: {why}"))?;
        *vm.flags.registering.borrow_mut() = Some(Vec::new());
        // The library's code sees only the load API (prelude.lua).
        let _ = vm.natives.raw_set("loading", true);
        let ran = vm.run(&body, MultiValue::new());
        let _ = vm.natives.raw_set("loading", mlua::Value::Nil);
        let functions = vm.flags.registering.borrow_mut().take().unwrap_or_default();
        if let Err(error) = ran {
            let msg = match &error {
                mlua::Value::Table(t) => t.raw_get::<String>("err").unwrap_or_default(),
                _ => "ERR execution failure".into(),
            };
            return Err(format!("ERR Error registering functions: {msg}"));
        }
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for f in &functions {
            let taken = self
                .libraries
                .iter()
                .any(|(lib, l)| *lib != name && l.functions.iter().any(|o| o.name.eq_ignore_ascii_case(&f.name)));
            if taken {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        Ok((name, Library { code: code.to_vec(), functions }))
    }

    pub(in crate::apps::kv) fn find(&self, name: &str) -> Option<&Registered> {
        self.libraries.values().flat_map(|l| l.functions.iter()).find(|f| f.name.eq_ignore_ascii_case(name))
    }
}
