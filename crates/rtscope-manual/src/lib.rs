//! rtscope's manual: one man page per subcommand (`rtscope-measure(1)`, `rtscope-runs-show(1)`
//! …) and the bash, zsh and fish completions, generated from the clap command definition.
//!
//! The options come from clap (so a page can never miss one); what clap does not know — the
//! exit codes of each command, the `rtscope.db` file, `RTSCOPE_DB`, examples, cross references
//! and cyclictest's hand-parsed options — comes from [`notes`]. The `rtscope man` command and the
//! release script (`scripts/dist.sh`) both call [`pages`] and [`write_completions`].

#![warn(missing_docs)]

mod notes;

use clap_complete::Shell;
use roff::{bold, italic, roman, Roff};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a page generation needs besides the clap command.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The option text of `rtscope cyclictest --help`: cyclictest's options are parsed by hand
    /// (getopt-compatible), so clap does not know them; the page prints them verbatim.
    pub cyclictest_usage: &'a str,
    /// The page footer's date (e.g. `2026-11-22`); empty leaves it out, which keeps the
    /// output reproducible.
    pub date: &'a str,
}

/// One rendered man page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The page name without section, e.g. `rtscope-measure` (`rtscope` for the top page).
    pub name: String,
    /// The subcommand path, e.g. `["runs", "show"]`; empty for the top page.
    pub path: Vec<String>,
    /// The page in roff, ready for `man -l`.
    pub roff: String,
}

impl Page {
    /// The file name in section 1: `rtscope-measure.1`.
    pub fn file_name(&self) -> String {
        format!("{}.1", self.name)
    }
}

/// Errors of the generation.
#[derive(Debug, thiserror::Error)]
pub enum ManualError {
    /// No such subcommand.
    #[error("no man page for `{0}`: not a subcommand of rtscope")]
    UnknownCommand(String),
    /// Writing a file failed.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Every page: the top page `rtscope(1)` and one per visible subcommand at any depth, in
/// depth-first order.
pub fn pages(cmd: &clap::Command, inputs: Inputs<'_>) -> Vec<Page> {
    let mut cmd = cmd.clone().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    collect(&cmd, &cmd, &mut Vec::new(), inputs, &mut out);
    out
}

/// The page of one subcommand path (`&[]` for the top page, `&["runs", "show"]`).
pub fn page(cmd: &clap::Command, path: &[&str], inputs: Inputs<'_>) -> Result<Page, ManualError> {
    pages(cmd, inputs)
        .into_iter()
        .find(|p| p.path.iter().map(String::as_str).eq(path.iter().copied()))
        .ok_or_else(|| ManualError::UnknownCommand(path.join(" ")))
}

fn collect(
    root: &clap::Command,
    cmd: &clap::Command,
    path: &mut Vec<String>,
    inputs: Inputs<'_>,
    out: &mut Vec<Page>,
) {
    out.push(render(root, cmd, path, inputs));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        path.push(sub.get_name().to_owned());
        collect(root, sub, path, inputs, out);
        path.pop();
    }
}

fn render(root: &clap::Command, cmd: &clap::Command, path: &[String], inputs: Inputs<'_>) -> Page {
    let name = std::iter::once(root.get_name().to_owned())
        .chain(path.iter().cloned())
        .collect::<Vec<_>>()
        .join("-");
    let key = path.join(" ");
    let note = notes::for_command(&key);
    let version = root
        .get_version()
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or_default();
    let man = clap_mangen::Man::new(cmd.clone());
    // The title line is written here: clap_mangen drops an empty date argument, which shifts
    // the source and manual into the wrong fields.
    let title = [
        name.to_uppercase().as_str(),
        "1",
        inputs.date,
        &format!("rtscope {version}"),
        "rtscope manual",
    ]
    .map(|a| format!("\"{}\"", a.replace(['"', '\\'], "")))
    .join(" ");
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = man.render_name_section(&mut buf);
    let _ = man.render_synopsis_section(&mut buf);
    let _ = man.render_description_section(&mut buf);
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut buf);
    }
    if key == "cyclictest" && !inputs.cyclictest_usage.is_empty() {
        buf.extend(verbatim_section("CYCLICTEST OPTIONS", inputs.cyclictest_usage).as_bytes());
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        let _ = man.render_subcommands_section(&mut buf);
    }
    buf.extend(extra_sections(&note, &name, root, path).as_bytes());
    let body = String::from_utf8_lossy(&buf);
    Page {
        name,
        path: path.to_vec(),
        roff: format!("{PREAMBLE}.TH {title}\n{}", body.replace(PREAMBLE, "")),
    }
}

/// What every clap_mangen section starts with (the apostrophe string for groff and others);
/// a page needs it once, before the title.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

fn verbatim_section(title: &str, text: &str) -> String {
    let mut r = Roff::new();
    r.control("SH", [title]).control("nf", []);
    for line in text.lines() {
        r.text([roman(line)]);
    }
    r.control("fi", []);
    r.to_roff()
}

fn extra_sections(
    note: &notes::Notes,
    name: &str,
    root: &clap::Command,
    path: &[String],
) -> String {
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    for (status, text) in notes::exit_codes(note) {
        r.control("TP", [])
            .text([bold(status.code().to_string())])
            .text([roman(text)]);
    }
    r.control("SH", ["ENVIRONMENT"]);
    r.control("TP", []).text([bold("RTSCOPE_DB")]);
    r.text([roman(note.environment)]);
    r.control("SH", ["FILES"]);
    r.control("TP", []).text([italic("./rtscope.db")]);
    r.text([roman(note.files)]);
    if !note.examples.is_empty() {
        r.control("SH", ["EXAMPLES"]);
        for (command, what) in note.examples {
            r.control("PP", []).text([roman(*what)]);
            r.control("RS", ["4"]).control("nf", []);
            r.text([bold(*command)]);
            r.control("fi", []).control("RE", []);
        }
    }
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(see_also(name, root, path, note))]);
    r.to_roff()
}

/// `rtscope(1)`, the parent's and sibling pages, plus the note's external references.
fn see_also(name: &str, root: &clap::Command, path: &[String], note: &notes::Notes) -> String {
    let mut refs: Vec<String> = Vec::new();
    let root_name = root.get_name();
    if !path.is_empty() {
        refs.push(format!("{root_name}(1)"));
    }
    let parent = &path[..path.len().saturating_sub(1)];
    let mut parent_cmd = root;
    for p in parent {
        if let Some(c) = parent_cmd.find_subcommand(p) {
            parent_cmd = c;
        }
    }
    if path.len() > 1 {
        refs.push(format!("{root_name}-{}(1)", parent.join("-")));
    }
    let prefix = std::iter::once(root_name.to_owned())
        .chain(parent.iter().cloned())
        .collect::<Vec<_>>()
        .join("-");
    for sub in parent_cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let page = format!("{prefix}-{}", sub.get_name());
        if page != name {
            refs.push(format!("{page}(1)"));
        }
    }
    for r in note.see_also {
        if !refs.iter().any(|x| x == r) {
            refs.push((*r).to_owned());
        }
    }
    refs.join(", ")
}

/// Writes every page into `dir` (created if needed) and returns the files written.
pub fn write_pages(
    cmd: &clap::Command,
    dir: &Path,
    inputs: Inputs<'_>,
) -> Result<Vec<PathBuf>, ManualError> {
    let mut written = Vec::new();
    std::fs::create_dir_all(dir).map_err(|source| ManualError::Write {
        path: dir.to_owned(),
        source,
    })?;
    for p in pages(cmd, inputs) {
        let path = dir.join(p.file_name());
        write_new(&path, p.roff.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

/// The completion script of `shell`.
pub fn completion(cmd: &clap::Command, shell: Shell) -> Vec<u8> {
    let mut cmd = cmd.clone();
    let bin = cmd.get_name().to_owned();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, bin, &mut out);
    out
}

/// The file name each shell loads a completion from: `rtscope.bash`, `_rtscope`,
/// `rtscope.fish` (Debian installs them under /usr/share/{bash-completion/completions,
/// zsh/vendor-completions,fish/vendor_completions.d}; the bash one there is named `rtscope`).
pub fn completion_file_name(cmd: &clap::Command, shell: Shell) -> String {
    let bin = cmd.get_name();
    match shell {
        Shell::Zsh => format!("_{bin}"),
        Shell::Fish => format!("{bin}.fish"),
        Shell::Elvish => format!("{bin}.elv"),
        Shell::PowerShell => format!("_{bin}.ps1"),
        _ => format!("{bin}.bash"),
    }
}

/// Writes the bash, zsh and fish completions into `dir` and returns the files written.
pub fn write_completions(cmd: &clap::Command, dir: &Path) -> Result<Vec<PathBuf>, ManualError> {
    std::fs::create_dir_all(dir).map_err(|source| ManualError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let mut written = Vec::new();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path = dir.join(completion_file_name(cmd, shell));
        write_new(&path, &completion(cmd, shell))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes a file atomically (a new temporary file, then a rename over `path`), so an existing
/// symlink at `path` is replaced, never written through.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), ManualError> {
    let err = |source| ManualError::Write {
        path: path.to_owned(),
        source,
    };
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(err)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
