//! `[[load_case.load]]` entries: from the file's keys to [`LoadSpec`]s, with the peer tools'
//! defaults, a check that external programs are installed, and the text a dry run prints.

use super::file::RawLoad;
use super::pos::{suggest, Source};
use rtscope_common::error::UsageError;
use rtscope_load::{LoadSpec, MsgMode, MsgTransport};
use std::path::{Path, PathBuf};

/// Every `kind` a load can have.
pub const KINDS: &[&str] = &[
    "messaging",
    "memory",
    "cpu",
    "io",
    "network",
    "hackbench",
    "stress-ng",
    "stressapptest",
    "external",
];

/// The keys each kind takes (besides `kind`).
fn keys_of(kind: &str) -> &'static [&'static str] {
    match kind {
        "messaging" => &["groups", "fds", "size", "transport", "mode"],
        "memory" => &["threads", "megabytes"],
        "cpu" => &["threads"],
        "io" => &["threads", "dir", "file_mb"],
        "network" => &["threads", "size"],
        "external" => &["program", "args"],
        _ => &["args"],
    }
}

/// Default arguments of the external tools when `args` is not given: the tools' own defaults
/// for the load itself, with a length long enough to outlast any run (rtscope stops the tool
/// when the run ends).
fn default_args(kind: &str, cpus: usize) -> Vec<String> {
    let v: Vec<String> = match kind {
        "hackbench" => ["-g", "10", "-f", "20", "-s", "100", "-l", "1000000000"]
            .map(String::from)
            .to_vec(),
        "stress-ng" => ["--cpu", "0", "--timeout", "0"].map(String::from).to_vec(),
        _ => vec![
            "-s".into(),
            "86400".into(),
            "-M".into(),
            "256".into(),
            "-m".into(),
            cpus.to_string(),
        ],
    };
    v
}

/// The hint for a program that is not installed.
fn install_hint(program: &str) -> String {
    match program {
        "hackbench" => "apt install rt-tests, or use kind = \"messaging\" (built-in)".into(),
        "stress-ng" => "apt install stress-ng, or use kind = \"cpu\" (built-in)".into(),
        "stressapptest" => "apt install stressapptest, or use kind = \"memory\" (built-in)".into(),
        _ => "install it, or give its full path in 'program'".into(),
    }
}

/// Turns one `[[load_case.load]]` into a [`LoadSpec`]; `cpus` is the number of online CPUs
/// (the default thread count of the memory and CPU loads).
pub(crate) fn spec(src: &Source, l: &RawLoad, cpus: usize) -> Result<LoadSpec, UsageError> {
    let kind = l.kind.get_ref().as_str();
    if !KINDS.contains(&kind) {
        let mut hint = format!("kinds: {}", KINDS.join(", "));
        if let Some(s) = suggest(kind, KINDS) {
            hint = format!("did you mean '{s}'? ({hint})");
        }
        return Err(src
            .error(l.kind.span(), format!("unknown load kind '{kind}'"))
            .hint(hint));
    }
    check_keys(src, l, kind)?;
    let n = |v: &Option<toml::Spanned<u32>>, d: u32| v.as_ref().map_or(d, |s| *s.get_ref());
    let cpus32 = u32::try_from(cpus).unwrap_or(u32::MAX);
    let spec = match kind {
        "messaging" => LoadSpec::Messaging {
            groups: n(&l.groups, 10),
            fds: n(&l.fds, 20),
            size: n(&l.size, 100),
            transport: transport(src, l)?,
            mode: mode(src, l)?,
        },
        "memory" => LoadSpec::Memory {
            threads: n(&l.threads, cpus32),
            megabytes: l.megabytes.as_ref().map_or(256, |m| *m.get_ref()),
        },
        "cpu" => LoadSpec::Cpu {
            threads: n(&l.threads, cpus32),
        },
        "io" => LoadSpec::Io {
            threads: n(&l.threads, 1),
            // Refused now, before any run starts, rather than a load failing in every run.
            dir: match l.dir.as_ref() {
                Some(d) if !std::path::Path::new(d.get_ref()).is_dir() => {
                    return Err(src.error(
                        d.span(),
                        format!(
                            "the io load's directory '{}' does not exist or is not a directory",
                            rtscope_core::text::escape(d.get_ref())
                        ),
                    ))
                }
                d => d.map(|d| PathBuf::from(d.get_ref())),
            },
            file_mb: l.file_mb.as_ref().map_or(16, |m| *m.get_ref()),
        },
        "network" => LoadSpec::Network {
            threads: n(&l.threads, 1),
            size: n(&l.size, 1024),
        },
        _ => external(src, l, kind, cpus)?,
    };
    check_counts(src, l)?;
    Ok(spec)
}

fn external(src: &Source, l: &RawLoad, kind: &str, cpus: usize) -> Result<LoadSpec, UsageError> {
    let (program, span) = match (kind, &l.program) {
        ("external", Some(p)) => (p.get_ref().clone(), p.span()),
        ("external", None) => {
            return Err(src
                .error(l.kind.span(), "kind = \"external\" needs 'program'")
                .hint("e.g. program = \"stress-ng\", args = [\"--cpu\", \"0\"]"))
        }
        _ => (kind.to_string(), l.kind.span()),
    };
    if find_on_path(&program).is_none() {
        return Err(src
            .error(span, format!("load '{program}' is not installed"))
            .hint(install_hint(&program)));
    }
    let args = match &l.args {
        Some(a) => a.get_ref().clone(),
        None if kind == "external" => Vec::new(),
        None => default_args(kind, cpus),
    };
    Ok(LoadSpec::External { program, args })
}

/// Rejects keys that do not apply to the load's kind.
fn check_keys(src: &Source, l: &RawLoad, kind: &str) -> Result<(), UsageError> {
    let given: [(&str, Option<std::ops::Range<usize>>); 11] = [
        ("groups", l.groups.as_ref().map(|s| s.span())),
        ("fds", l.fds.as_ref().map(|s| s.span())),
        ("size", l.size.as_ref().map(|s| s.span())),
        ("transport", l.transport.as_ref().map(|s| s.span())),
        ("mode", l.mode.as_ref().map(|s| s.span())),
        ("threads", l.threads.as_ref().map(|s| s.span())),
        ("megabytes", l.megabytes.as_ref().map(|s| s.span())),
        ("file_mb", l.file_mb.as_ref().map(|s| s.span())),
        ("dir", l.dir.as_ref().map(|s| s.span())),
        ("program", l.program.as_ref().map(|s| s.span())),
        ("args", l.args.as_ref().map(|s| s.span())),
    ];
    let allowed = keys_of(kind);
    for (key, span) in given {
        if let Some(span) = span.filter(|_| !allowed.contains(&key)) {
            return Err(src
                .error(span, format!("'{key}' does not apply to kind = \"{kind}\""))
                .hint(format!("keys of {kind}: kind, {}", allowed.join(", "))));
        }
    }
    Ok(())
}

/// Rejects counts of zero, which would start a load that does nothing.
fn check_counts(src: &Source, l: &RawLoad) -> Result<(), UsageError> {
    let counts = [
        ("groups", &l.groups),
        ("fds", &l.fds),
        ("size", &l.size),
        ("threads", &l.threads),
    ];
    for (key, v) in counts {
        if let Some(v) = v.as_ref().filter(|v| *v.get_ref() == 0) {
            return Err(src
                .error(v.span(), format!("'{key}' must be at least 1"))
                .hint("leave the key out for its default"));
        }
    }
    Ok(())
}

fn transport(src: &Source, l: &RawLoad) -> Result<MsgTransport, UsageError> {
    match l
        .transport
        .as_ref()
        .map(|t| (t.get_ref().as_str(), t.span()))
    {
        None | Some(("socket", _)) => Ok(MsgTransport::Socket),
        Some(("pipe", _)) => Ok(MsgTransport::Pipe),
        Some((other, span)) => Err(src
            .error(span, format!("invalid transport '{other}'"))
            .hint("use \"socket\" (hackbench's default) or \"pipe\"")),
    }
}

fn mode(src: &Source, l: &RawLoad) -> Result<MsgMode, UsageError> {
    match l.mode.as_ref().map(|t| (t.get_ref().as_str(), t.span())) {
        None | Some(("processes", _)) => Ok(MsgMode::Processes),
        Some(("threads", _)) => Ok(MsgMode::Threads),
        Some((other, span)) => Err(src
            .error(span, format!("invalid mode '{other}'"))
            .hint("use \"processes\" (hackbench's default) or \"threads\"")),
    }
}

/// The executable `program` names: itself if it contains a `/`, else the first match on
/// `PATH` (the lookup the load supervisor uses to start it).
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    rtscope_load::find_program(program).ok()
}

/// A short name for tables: `messaging`, `memory`, …, or the external program's file name.
pub fn short_name(s: &LoadSpec) -> String {
    match s {
        LoadSpec::Messaging { .. } => "messaging".into(),
        LoadSpec::Memory { .. } => "memory".into(),
        LoadSpec::Cpu { .. } => "cpu".into(),
        LoadSpec::Io { .. } => "io".into(),
        LoadSpec::Network { .. } => "network".into(),
        LoadSpec::External { program, .. } => Path::new(program)
            .file_name()
            .map_or(program.clone(), |n| n.to_string_lossy().into_owned()),
    }
}

/// What will be started, in one line: the built-in load's parameters, or the exact external
/// command line (arguments quoted where a shell would need it).
pub fn describe(s: &LoadSpec) -> String {
    match s {
        LoadSpec::Messaging {
            groups,
            fds,
            size,
            transport,
            mode,
        } => format!(
            "built-in messaging: {groups} groups × {fds} senders → {fds} receivers, {size}-byte messages over {}, as {}",
            if *transport == MsgTransport::Socket { "socket pairs" } else { "pipes" },
            if *mode == MsgMode::Processes { "processes" } else { "threads" }
        ),
        LoadSpec::Memory { threads, megabytes } => {
            format!("built-in memory: {threads} copy threads over {megabytes} MiB, every copy verified")
        }
        LoadSpec::Cpu { threads } => format!("built-in cpu: {threads} spinning threads"),
        LoadSpec::Io { threads, dir, file_mb } => format!(
            "built-in io: {threads} threads writing {file_mb} MiB files with fsync in {}",
            dir.as_ref().map_or("the temp directory".into(), |d| d.display().to_string())
        ),
        LoadSpec::Network { threads, size } => {
            format!("built-in network: {threads} TCP connections over loopback, {size}-byte messages")
        }
        LoadSpec::External { program, args } => std::iter::once(program)
            .chain(args)
            .map(|a| quote(a))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// `a` as one shell word: as is when plain, else single-quoted.
pub(crate) fn quote(a: &str) -> String {
    let plain = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_command_lines_are_quoted_for_a_shell() {
        let s = LoadSpec::External {
            program: "stress-ng".into(),
            args: vec!["--cpu".into(), "0".into(), "a b".into(), "it's".into()],
        };
        assert_eq!(describe(&s), r"stress-ng --cpu 0 'a b' 'it'\''s'");
    }

    #[test]
    fn programs_are_found_on_path_or_by_path() {
        assert!(find_on_path("sh").is_some());
        assert_eq!(find_on_path("/bin/sh"), Some(PathBuf::from("/bin/sh")));
        assert!(find_on_path("rtscope-no-such-program-xyz").is_none());
        let plain = std::env::temp_dir().join(format!("rtscope-plain-{}", std::process::id()));
        std::fs::write(&plain, "not a program").unwrap();
        let found = find_on_path(plain.to_str().unwrap());
        std::fs::remove_file(&plain).unwrap();
        assert!(
            found.is_none(),
            "a file without execute permission is not a program"
        );
    }
}
