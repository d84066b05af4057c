//! External load programs: finding them, telling early when one is missing, and reading what
//! they print.

use crate::{LoadError, LoadSpec};
use std::path::{Path, PathBuf};

/// Checks a spec before anything is started: its values ([`LoadSpec::check`]) and, for an
/// external load, that the program is installed (on `PATH`, or an executable path).
pub fn validate(spec: &LoadSpec) -> Result<(), LoadError> {
    spec.check()?;
    match spec {
        LoadSpec::External { program, .. } => {
            find_program(program).map(drop)?;
        }
        // Checked before the load starts: a missing directory is the caller's mistake (exit
        // 2), not a load that failed while it ran (issue 26, N12).
        LoadSpec::Io { dir: Some(d), .. } if !d.is_dir() => {
            return Err(LoadError::BadSpec {
                kind: "io",
                field: "dir",
                value: rtscope_core::text::escape(&d.display().to_string()).into_owned(),
                expected: if d.exists() {
                    "it must be a directory, and this is not one".into()
                } else {
                    "it must be an existing directory, and there is none".into()
                },
            });
        }
        _ => {}
    }
    Ok(())
}

/// The executable `program` names: itself when it contains a `/`, else the first match on
/// `PATH`.
pub fn find_program(program: &str) -> Result<PathBuf, LoadError> {
    let not_found = || LoadError::ProgramNotFound {
        program: program.to_string(),
        hint: install_hint(program),
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(not_found())
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
        .ok_or_else(not_found)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The Debian/Ubuntu package that installs a well-known load tool.
fn install_hint(program: &str) -> Option<&'static str> {
    let name = Path::new(program).file_name()?.to_str()?;
    Some(match name {
        "hackbench" | "cyclictest" | "oslat" | "signaltest" | "pi_stress" => "apt install rt-tests",
        "stress-ng" => "apt install stress-ng",
        "stressapptest" => "apt install stressapptest",
        "stress" => "apt install stress",
        "iperf3" => "apt install iperf3",
        "fio" => "apt install fio",
        _ => return None,
    })
}

/// The seconds of every `Time: 9.899` line hackbench printed.
pub fn hackbench_times(output: &str) -> Vec<f64> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Time:"))
        .filter_map(|v| v.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_on_path_and_names_the_package_of_missing_ones() {
        assert!(find_program("sh").unwrap().is_absolute());
        let e = find_program("hackbench-not-installed").unwrap_err();
        assert!(e.to_string().contains("'hackbench-not-installed'"), "{e}");
        let e = find_program("/nonexistent/hackbench").unwrap_err();
        assert_eq!(
            e.hint().unwrap(),
            "install it (`apt install rt-tests`) or give its full path"
        );
    }

    /// Issue 67 item 12: the refusal says what `dir` must be, and why this one is not it.
    #[test]
    fn an_io_directory_that_is_not_one_is_refused_saying_it_must_be() {
        let io = |dir: &str| LoadSpec::Io {
            threads: 1,
            dir: Some(PathBuf::from(dir)),
            file_mb: 1,
        };
        let e = validate(&io("/nonexistent/dir")).unwrap_err().to_string();
        assert!(
            e.ends_with("(it must be an existing directory, and there is none)"),
            "{e}"
        );
        let e = validate(&io("/dev/null")).unwrap_err().to_string();
        assert!(
            e.ends_with("(it must be a directory, and this is not one)"),
            "{e}"
        );
        assert!(validate(&io("/tmp")).is_ok());
    }

    #[test]
    fn reads_hackbench_times() {
        let out = "Running in process mode with 10 groups\nTime: 9.899\nTime: 9.595\n";
        assert_eq!(hackbench_times(out), vec![9.899, 9.595]);
    }
}
