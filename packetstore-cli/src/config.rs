//! `--config FILE`: a TOML file whose keys are the subcommand's long flags,
//! without the dashes (`pool-size = "1GiB"`, `requirepass = "s3cret"`,
//! `busy-poll = true`), or for `serve` a Redis user's `redis.conf`
//! (`packetstore::launch::redis_conf` turns its directives into `serve`'s
//! options). The file's values are placed before the command line's
//! arguments and every flag keeps its last value, so a flag given on the
//! command line wins over the file.

use std::ffi::OsString;

use anyhow::{bail, Context};

/// Expands `--config FILE` (or `--config=FILE`) in the arguments of
/// `subcommand` (`args[1]`) into the file's flags. Keys are checked
/// against the subcommand's flags (`flags`, long names).
pub fn expand(args: Vec<OsString>, flags: &[String]) -> anyhow::Result<Vec<OsString>> {
    let mut path = None;
    let mut iter = args.iter().enumerate().skip(2);
    while let Some((i, arg)) = iter.next() {
        let Some(text) = arg.to_str() else { continue };
        if text == "--config" {
            path = args.get(i + 1).cloned();
            if path.is_none() {
                bail!("--config needs a file");
            }
            iter.next();
        } else if let Some(value) = text.strip_prefix("--config=") {
            path = Some(OsString::from(value));
        }
    }
    let Some(path) = path else { return Ok(args) };
    let shown = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read the config file {shown}"))?;
    if packetstore::launch::redis_conf::looks_like_redis_conf(&text) {
        if !flags.iter().any(|flag| flag == "redis-param") {
            bail!("{shown} reads as a redis.conf: only `packetstore serve` takes one");
        }
        let mut from_file = packetstore::launch::redis_conf::translate(std::path::Path::new(&path))?;
        // The file CONFIG REWRITE rewrites (absolute: the server may not
        // stay in this directory).
        let absolute = std::fs::canonicalize(&path).with_context(|| format!("cannot resolve {shown}"))?;
        from_file.push(format!("--redis-conf={}", absolute.display()));
        return Ok(splice(args, from_file));
    }
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{shown} is not valid TOML (keys are flag names: pool-size = \"1GiB\")"))?;
    let mut from_file = Vec::new();
    for (key, value) in table {
        if key == "config" {
            bail!("{shown}: a config file cannot name another one");
        }
        if !flags.contains(&key) {
            bail!("{shown}: unknown key '{key}'; the keys are the command's flags: {}", flags.join(", "));
        }
        let flag = format!("--{key}");
        match value {
            toml::Value::Boolean(true) => from_file.push(flag),
            toml::Value::Boolean(false) => {}
            toml::Value::String(s) => from_file.extend([flag, s]),
            toml::Value::Integer(n) => from_file.extend([flag, n.to_string()]),
            toml::Value::Float(x) => from_file.extend([flag, x.to_string()]),
            _ => bail!("{shown}: '{key}' must be a string, a number or a boolean"),
        }
    }
    Ok(splice(args, from_file))
}

/// The command line with `from_file` placed after the subcommand, before
/// the command line's own flags (which therefore win).
fn splice(args: Vec<OsString>, from_file: Vec<String>) -> Vec<OsString> {
    let mut expanded: Vec<OsString> = args[..2].to_vec();
    expanded.extend(from_file.into_iter().map(OsString::from));
    expanded.extend(args[2..].iter().cloned());
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn file_flags_come_first_so_the_command_line_wins() {
        let dir = std::env::temp_dir().join(format!("packetstore-config-{}", std::process::id()));
        std::fs::write(&dir, "pool-size = \"2GiB\"\nbusy-poll = true\nring-entries = 512\nwhole-buffers = false\n")
            .unwrap();
        let flags: Vec<String> = ["pool-size", "busy-poll", "ring-entries", "whole-buffers", "config"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let args: Vec<OsString> = ["packetstore", "serve", "--config", dir.to_str().unwrap(), "--pool-size", "1GiB"]
            .iter()
            .map(OsString::from)
            .collect();
        let expanded = strings(&expand(args, &flags).unwrap());
        assert_eq!(
            expanded,
            vec![
                "packetstore",
                "serve",
                "--busy-poll",
                "--pool-size",
                "2GiB",
                "--ring-entries",
                "512",
                "--config",
                dir.to_str().unwrap(),
                "--pool-size",
                "1GiB"
            ]
        );
        std::fs::write(&dir, "pool-sise = \"2GiB\"\n").unwrap();
        let args: Vec<OsString> =
            ["packetstore", "serve", "--config", dir.to_str().unwrap()].iter().map(OsString::from).collect();
        let error = expand(args, &flags).unwrap_err().to_string();
        assert!(error.contains("unknown key 'pool-sise'"), "{error}");
        std::fs::write(&dir, "pool-size = [1]\n").unwrap();
        let args: Vec<OsString> =
            ["packetstore", "serve", "--config", dir.to_str().unwrap()].iter().map(OsString::from).collect();
        assert!(expand(args, &flags).unwrap_err().to_string().contains("must be a string"));
        let _ = std::fs::remove_file(&dir);
    }
}
