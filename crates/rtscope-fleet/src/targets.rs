//! The boards a remote run goes to: `--target` texts resolved against a `targets.toml` of
//! named boards (docs/fleet.md):
//!
//! ```toml
//! [defaults]                 # every key of a board, applied where the board has none
//! user = "rt"
//! identity = "~/.ssh/lab_ed25519"
//!
//! [boards.rpi4]
//! host = "10.0.0.21"         # a host name, an address or an ~/.ssh/config Host alias
//! port = 22
//! tags = { rack = "1", soc = "bcm2711" }
//!
//! [boards.imx8]
//! host = "imx8.lab"
//! binary = "/usr/local/bin/rtscope"  # an installed rtscope: nothing is copied
//! prefix = ["sudo", "-n"]            # how rtscope is started there
//! ```
//!
//! `--target rpi4` names a board; `--target rack=1` every board with that tag (`board=NAME`
//! matches names); `--target all` every board of the file; anything else is
//! `[user@]host[:port]`, its name the host.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the boards could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// `--target` text that is neither a board of targets.toml, a tag nor `[user@]host[:port]`.
    #[error(
        "invalid target '{0}': expected a board of targets.toml, KEY=VALUE or [user@]host[:port]"
    )]
    Bad(String),
    /// A board's name refused by the names check (too long).
    #[error("{0}")]
    Name(String),
    /// A tag selection matched no board.
    #[error("no board of {file} has the tag {tag}")]
    NoMatch {
        /// The targets file (or `no targets.toml`).
        file: String,
        /// The tag.
        tag: String,
    },
    /// The targets file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A local file a board's run needs is missing or not a regular file.
    #[error("board {board}: {key} = {path}: {why}")]
    LocalFile {
        /// The board.
        board: String,
        /// `identity` or `copy`.
        key: &'static str,
        /// The file.
        path: String,
        /// Why it cannot be used.
        #[source]
        why: NotRegular,
    },
    /// The targets file does not parse, or a board in it is invalid.
    #[error("{path}: {why}")]
    Parse {
        /// The file.
        path: String,
        /// Why (toml's message names line and column).
        why: String,
    },
}

/// One board to run on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Target {
    /// The board's name: the value of the `board` tag of its runs.
    pub name: String,
    /// Host name, address or ssh alias.
    pub host: String,
    /// ssh login user (`-l`); ssh's default without one.
    pub user: Option<String>,
    /// ssh port; ssh's default without one.
    pub port: Option<u16>,
    /// ssh identity file (`-i`, with `IdentitiesOnly=yes`).
    pub identity: Option<PathBuf>,
    /// An rtscope already installed on the board (its path there): nothing is copied.
    pub binary: Option<String>,
    /// The local binary to copy, instead of the one matching the board's architecture.
    pub copy: Option<PathBuf>,
    /// The architecture of the board's user space, instead of `uname -m` (a 32-bit user space
    /// on a 64-bit kernel, an emulated board).
    pub arch: Option<String>,
    /// The command rtscope is started through on the board (`sudo -n`, `chrt`, an emulator).
    pub prefix: Vec<String>,
    /// Tags set on the board's runs besides `board=NAME`.
    pub tags: Vec<(String, String)>,
    /// Seconds ssh may take to connect (TCP and handshake); [`DEFAULT_CONNECT_TIMEOUT_S`]
    /// without one.
    pub connect_timeout_s: Option<u32>,
    /// Seconds each step around the run may take (architecture, copy, fetch, cleanup);
    /// [`DEFAULT_STEP_TIMEOUT_S`] without one. The run itself is bounded by its length and
    /// ssh's keep-alives instead.
    pub step_timeout_s: Option<u32>,
}

/// ssh's `ConnectTimeout` for a board without `connect_timeout`, seconds.
pub const DEFAULT_CONNECT_TIMEOUT_S: u32 = 15;
/// The limit of each step around a run for a board without `step_timeout`, seconds: a 4 MB
/// binary over a slow link fits.
pub const DEFAULT_STEP_TIMEOUT_S: u32 = 300;
/// The largest targets file read, bytes.
const MAX_TARGETS_FILE: u64 = 1 << 20;

impl Target {
    /// Checks the local files this board's run would use — `identity` and `copy` — before
    /// anything touches a board: each must be a regular file (a missing identity made ssh
    /// fall back to other keys; `copy = "/dev/zero"` streamed gigabytes to the board; a FIFO
    /// hung).
    pub fn check_local_files(&self) -> Result<(), TargetError> {
        let what = [("identity", &self.identity), ("copy", &self.copy)];
        for (key, path) in what {
            if let Some(p) = path {
                regular_file(p).map_err(|why| TargetError::LocalFile {
                    board: self.name.clone(),
                    key,
                    path: p.display().to_string(),
                    why,
                })?;
            }
        }
        Ok(())
    }
}

/// Why a local input is not a file rtscope reads.
#[derive(Debug, thiserror::Error)]
pub enum NotRegular {
    /// It cannot be looked at (missing, no permission).
    #[error(transparent)]
    Unreadable(#[from] std::io::Error),
    /// A directory.
    #[error("a directory, not a file")]
    Directory,
    /// A device, FIFO or socket (reading one may never end).
    #[error("not a regular file (a device, FIFO or socket)")]
    Special,
}

/// `Ok` for a regular file (symlinks followed), else why not.
pub fn regular_file(p: &Path) -> Result<(), NotRegular> {
    let m = std::fs::metadata(p)?;
    if m.is_file() {
        Ok(())
    } else if m.is_dir() {
        Err(NotRegular::Directory)
    } else {
        Err(NotRegular::Special)
    }
}

/// A board of targets.toml; every key optional so `[defaults]` has the same shape.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardEntry {
    host: Option<String>,
    user: Option<String>,
    port: Option<u16>,
    identity: Option<String>,
    binary: Option<String>,
    copy: Option<String>,
    arch: Option<String>,
    prefix: Option<Vec<String>>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
    connect_timeout: Option<u32>,
    step_timeout: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: BoardEntry,
    #[serde(default)]
    boards: BTreeMap<String, BoardEntry>,
}

/// The boards of a targets file.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    /// Where they were read from (`None`: no file).
    pub path: Option<PathBuf>,
    /// The boards, by name.
    pub boards: Vec<Target>,
}

/// `true` for a name, user or host safe on an ssh command line (never an option).
fn plain(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// A timeout of targets.toml: absent, or at least 1 s.
fn positive(v: Option<u32>) -> Result<Option<u32>, ()> {
    match v {
        Some(0) => Err(()),
        v => Ok(v),
    }
}

/// `~/…` with `$HOME`; relative paths against the targets file's directory.
fn expand(path: &str, base: &Path) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => base.join(path),
    }
}

impl Targets {
    /// The targets file: `explicit`, else `$RTSCOPE_TARGETS`, else `./targets.toml` when it
    /// exists; no file gives no named boards.
    pub fn load(explicit: Option<&Path>) -> Result<Targets, TargetError> {
        let env = std::env::var_os("RTSCOPE_TARGETS").map(PathBuf::from);
        let path = match explicit.map(Path::to_path_buf).or(env) {
            Some(p) => p,
            None if Path::new("targets.toml").is_file() => PathBuf::from("targets.toml"),
            None => return Ok(Targets::default()),
        };
        let read_err = |source| TargetError::Read {
            path: path.display().to_string(),
            source,
        };
        // A device or FIFO named as the targets file would hang or never end.
        regular_file(&path).map_err(|why| read_err(std::io::Error::other(why.to_string())))?;
        let mut text = String::new();
        use std::io::Read as _;
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_TARGETS_FILE + 1).read_to_string(&mut text))
            .map_err(read_err)?;
        if text.len() as u64 > MAX_TARGETS_FILE {
            return Err(read_err(std::io::Error::other(format!(
                "larger than {MAX_TARGETS_FILE} bytes"
            ))));
        }
        Targets::parse(&text, &path)
    }

    /// Parses a targets file's text; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Targets, TargetError> {
        let err = |why: String| TargetError::Parse {
            path: path.display().to_string(),
            why,
        };
        let file: File = toml::from_str(text).map_err(|e| err(e.to_string().trim().into()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        let d = &file.defaults;
        let mut boards = Vec::new();
        for (name, b) in &file.boards {
            let host = b.host.clone().or_else(|| d.host.clone());
            let host = host.unwrap_or_else(|| name.clone());
            let user = b.user.clone().or_else(|| d.user.clone());
            if !plain(name) || !plain(&host) || user.as_deref().is_some_and(|u| !plain(u)) {
                return Err(err(format!(
                    "board '{}': names, hosts and users may hold only letters, digits, '.', '_' and '-' (and not start with '-')",
                    rtscope_core::text::escape(&rtscope_core::text::clip(name, 60))
                )));
            }
            rtscope_common::names::check_board_name(name).map_err(|e| err(e.message))?;
            let mut tags: BTreeMap<String, String> = d.tags.clone();
            tags.extend(b.tags.clone());
            tags.remove("board");
            // The one validator of every tag (as --tag): a value from this file reaches
            // terminals, SVG and HTML like any other (issue 26, N8).
            for (k, v) in &tags {
                use rtscope_common::names::{
                    check_name, MAX_NAME_BYTES, MAX_TAG_KEY_BYTES, RESERVED_TAGS,
                };
                let what = format!("board '{name}': tag {k}");
                check_name(k, &what, MAX_TAG_KEY_BYTES)
                    .and_then(|()| check_name(v, &what, MAX_NAME_BYTES))
                    .map_err(|e| err(e.message))?;
                if RESERVED_TAGS.contains(&k.as_str()) {
                    return Err(err(format!(
                        "board '{name}': the tag '{k}' is set by campaigns (reserved: {})",
                        RESERVED_TAGS.join(", ")
                    )));
                }
            }
            let pick = |a: &Option<String>, b: &Option<String>| a.clone().or_else(|| b.clone());
            boards.push(Target {
                name: name.clone(),
                host,
                user,
                port: b.port.or(d.port),
                identity: pick(&b.identity, &d.identity).map(|p| expand(&p, base)),
                binary: pick(&b.binary, &d.binary),
                copy: pick(&b.copy, &d.copy).map(|p| expand(&p, base)),
                arch: pick(&b.arch, &d.arch),
                prefix: b
                    .prefix
                    .clone()
                    .or_else(|| d.prefix.clone())
                    .unwrap_or_default(),
                tags: tags.into_iter().collect(),
                connect_timeout_s: positive(b.connect_timeout.or(d.connect_timeout)).map_err(
                    |()| {
                        err(format!(
                            "board '{name}': connect_timeout must be 1 second or more"
                        ))
                    },
                )?,
                step_timeout_s: positive(b.step_timeout.or(d.step_timeout)).map_err(|()| {
                    err(format!(
                        "board '{name}': step_timeout must be 1 second or more"
                    ))
                })?,
            });
        }
        Ok(Targets {
            path: Some(path.to_path_buf()),
            boards,
        })
    }

    /// The boards `texts` name, in order, each once.
    pub fn resolve(&self, texts: &[String]) -> Result<Vec<Target>, TargetError> {
        let mut out: Vec<Target> = Vec::new();
        for text in texts {
            for t in self.select(text)? {
                if !out.iter().any(|o| o.name == t.name) {
                    out.push(t);
                }
            }
        }
        Ok(out)
    }

    fn select(&self, text: &str) -> Result<Vec<Target>, TargetError> {
        if let Some(b) = self.boards.iter().find(|b| b.name == text) {
            return Ok(vec![b.clone()]);
        }
        if text == "all" && !self.boards.is_empty() {
            return Ok(self.boards.clone());
        }
        if let Some((k, v)) = text.split_once('=') {
            let found: Vec<Target> = self
                .boards
                .iter()
                .filter(|b| {
                    (k == "board" && b.name == v)
                        || b.tags.iter().any(|(tk, tv)| tk == k && tv == v)
                })
                .cloned()
                .collect();
            if found.is_empty() {
                return Err(TargetError::NoMatch {
                    file: self
                        .path
                        .as_ref()
                        .map_or("no targets.toml".into(), |p| p.display().to_string()),
                    tag: text.into(),
                });
            }
            return Ok(found);
        }
        parse_address(text).map(|t| vec![t])
    }
}

/// `[user@]host[:port]`: a board named after its host.
pub fn parse_address(text: &str) -> Result<Target, TargetError> {
    let shown = rtscope_core::text::escape(&rtscope_core::text::clip(text, 60)).into_owned();
    let bad = || TargetError::Bad(shown.clone());
    let (dest, port) = match text.rsplit_once(':') {
        Some((d, p)) => (d, Some(p.parse::<u16>().map_err(|_| bad())?)),
        None => (text, None),
    };
    let (user, host) = match dest.split_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, dest),
    };
    if !plain(host) || user.is_some_and(|u| !plain(u)) {
        return Err(bad());
    }
    rtscope_common::names::check_board_name(host).map_err(|e| TargetError::Name(e.message))?;
    Ok(Target {
        name: host.to_string(),
        host: host.to_string(),
        user: user.map(str::to_string),
        port,
        ..Target::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_refuse_option_injection() {
        let t = parse_address("root@127.0.0.2:2222").unwrap();
        assert_eq!(
            (t.name.as_str(), t.user.as_deref(), t.port),
            ("127.0.0.2", Some("root"), Some(2222))
        );
        assert_eq!(parse_address("rpi4").unwrap().port, None);
        for bad in [
            "",
            "-oProxyCommand=x",
            "a@-b",
            "a@b@c",
            "h:port",
            "h:70000",
            "a b",
        ] {
            assert!(parse_address(bad).is_err(), "{bad}");
        }
    }

    const FILE: &str = r#"
[defaults]
user = "rt"
identity = "keys/lab"
tags = { lab = "x" }

[boards.a]
host = "127.0.0.2"
port = 2201
tags = { rack = "1" }

[boards.b]
host = "127.0.0.3"
user = "root"
prefix = ["sudo", "-n"]
tags = { rack = "1", board = "ignored" }

[boards.c]
binary = "/usr/bin/rtscope"
tags = { rack = "2" }
"#;

    #[test]
    fn boards_take_defaults_and_are_selected_by_name_tag_or_address() {
        let t = Targets::parse(FILE, Path::new("/lab/targets.toml")).unwrap();
        let a = &t.boards[0];
        assert_eq!(
            (a.host.as_str(), a.user.as_deref(), a.port),
            ("127.0.0.2", Some("rt"), Some(2201))
        );
        assert_eq!(a.identity.as_deref(), Some(Path::new("/lab/keys/lab")));
        assert_eq!(
            a.tags,
            [("lab".into(), "x".into()), ("rack".into(), "1".into())]
        );
        assert_eq!(t.boards[1].prefix, ["sudo", "-n"]);
        assert!(t.boards[1].tags.iter().all(|(k, _)| k != "board"));
        assert_eq!(t.boards[2].host, "c");
        let names = |sel: &[&str]| {
            let s: Vec<String> = sel.iter().map(|s| s.to_string()).collect();
            t.resolve(&s)
                .unwrap()
                .into_iter()
                .map(|b| b.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&["rack=1", "a", "c"]), ["a", "b", "c"]);
        assert_eq!(names(&["board=b", "u@10.0.0.9"]), ["b", "10.0.0.9"]);
        assert_eq!(names(&["all"]), ["a", "b", "c"]);
        assert!(matches!(
            t.resolve(&["rack=9".into()]),
            Err(TargetError::NoMatch { .. })
        ));
    }

    #[test]
    fn bad_files_are_refused_with_their_place() {
        let e = Targets::parse("[boards.a]\nhots = \"x\"\n", Path::new("t.toml")).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = Targets::parse(
            "[boards.a]\nhost = \"-oProxyCommand=x\"\n",
            Path::new("t.toml"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("board 'a'"), "{e}");
    }

    fn mkfifo(p: &Path) {
        let st = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success(), "mkfifo {}", p.display());
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rtscope-targets-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// N4, N15: `copy = "/dev/zero"`, a FIFO, a directory or a missing file, and a missing
    /// identity, are refused before any board is touched.
    #[test]
    fn local_files_of_a_board_must_be_regular_files() {
        let d = scratch("local");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        let file = d.join("key");
        std::fs::write(&file, "k").unwrap();
        let board = |identity: Option<&Path>, copy: Option<&Path>| Target {
            name: "b1".into(),
            identity: identity.map(Path::to_path_buf),
            copy: copy.map(Path::to_path_buf),
            ..Target::default()
        };
        assert!(board(Some(&file), Some(&file)).check_local_files().is_ok());
        for (t, words) in [
            (
                board(None, Some(Path::new("/dev/zero"))),
                "copy = /dev/zero: not a regular file",
            ),
            (board(None, Some(&fifo)), "not a regular file"),
            (board(None, Some(&d)), "a directory"),
            (board(Some(&d.join("missing")), None), "identity ="),
        ] {
            let e = t.check_local_files().unwrap_err().to_string();
            assert!(e.contains(words) && e.contains("board b1"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    /// N5: a targets file that is a device or a FIFO is refused at once (it hung).
    #[test]
    fn a_targets_file_that_is_not_a_regular_file_is_refused() {
        let d = scratch("file");
        let fifo = d.join("targets.toml");
        mkfifo(&fifo);
        for p in [Path::new("/dev/zero"), fifo.as_path()] {
            let e = Targets::load(Some(p)).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn timeouts_are_read_per_board_with_defaults_and_zero_is_refused() {
        let text = "[defaults]\nconnect_timeout = 7\n[boards.a]\nstep_timeout = 30\n[boards.b]\nconnect_timeout = 3\n";
        let t = Targets::parse(text, Path::new("t.toml")).unwrap();
        let a = t.boards.iter().find(|b| b.name == "a").unwrap();
        let b = t.boards.iter().find(|b| b.name == "b").unwrap();
        assert_eq!((a.connect_timeout_s, a.step_timeout_s), (Some(7), Some(30)));
        assert_eq!((b.connect_timeout_s, b.step_timeout_s), (Some(3), None));
        let e = Targets::parse("[boards.a]\nstep_timeout = 0\n", Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("step_timeout must be 1 second or more"), "{e}");
    }

    /// N8: tags from targets.toml went round the control-character check (ESC stored, the
    /// reserved `campaign` tag settable).
    /// Issue 49: a board's name is bounded like a label (it becomes the `board` tag), in a
    /// targets file and as the host of an address; the refusal quotes it clipped.
    #[test]
    fn board_names_are_bounded_like_labels() {
        let long = "b".repeat(5000);
        let e = parse_address(&format!("root@{long}:22"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("5000 bytes, at most 256"), "{e}");
        assert!(e.len() < 300, "{e}");
        let ok = "b".repeat(256);
        assert_eq!(parse_address(&ok).unwrap().name, ok);
        let text = format!("[boards.{long}]\nhost = \"h\"\n");
        let e = Targets::parse(&text, Path::new("t.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("5000 bytes, at most 256"), "{e}");
        assert!(e.len() < 300, "{e}");
    }

    #[test]
    fn board_tags_go_through_the_tag_validator() {
        for (text, words) in [
            (
                "[boards.a]\ntags = { rack = \"1\\u001b[31m\" }\n",
                "control characters",
            ),
            (
                "[boards.a]\ntags = { campaign = \"x\" }\n",
                "set by campaigns",
            ),
            (
                "[defaults]\ntags = { \"k\\u0007\" = \"v\" }\n[boards.a]\n",
                "control characters",
            ),
        ] {
            let e = Targets::parse(text, Path::new("t.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(words) && e.contains("board 'a'"), "{text}: {e}");
        }
    }
}
