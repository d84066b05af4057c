//! A getopt_long-compatible argument scanner, so cyclictest command lines parse exactly as they
//! do with glibc: bundled short flags (`-mSq`), attached values (`-p90`, `--json=FILE`),
//! separate values (`-p 90`, `--json FILE`), unambiguous long-option prefixes (`--dur=10`),
//! `--` ending the options, and cyclictest's optional values that may also stand in the next
//! argument (`-t 4`, `-a 0-3`).

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy)]
pub enum Arg {
    /// A flag.
    None,
    /// A value, attached or in the next argument.
    Required,
    /// An optional value: attached, or the next argument when `next_ok` accepts it.
    Optional(fn(&str) -> bool),
}

/// One option of the table.
#[derive(Debug, Clone, Copy)]
pub struct OptDef {
    /// Short letter, if any.
    pub short: Option<char>,
    /// Long name, if any.
    pub long: Option<&'static str>,
    /// Value kind.
    pub arg: Arg,
    /// Identifier handed back to the caller.
    pub id: &'static str,
}

/// A scanned option occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The option's id.
    pub id: &'static str,
    /// How the user spelled it (`-p`, `--priority`), for messages.
    pub spelled: String,
    /// Its value, if any.
    pub value: Option<String>,
}

/// A scanning error, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// Not in the table.
    #[error("unknown option '{0}'")]
    Unknown(String),
    /// Prefix of several long options.
    #[error("option '{0}' is ambiguous: it could be {1}")]
    Ambiguous(String, String),
    /// A value is missing.
    #[error("option '{0}' needs a value")]
    MissingValue(String),
    /// A flag was given a value.
    #[error("option '{0}' takes no value")]
    UnexpectedValue(String),
    /// A positional argument.
    #[error("unexpected argument '{0}' (cyclictest takes options only)")]
    Positional(String),
}

/// Scans `args` (without the program name) against `table`.
pub fn scan(table: &[OptDef], args: &[String]) -> Result<Vec<Hit>, ScanError> {
    let mut hits = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            if let Some(rest) = args.get(i) {
                return Err(ScanError::Positional(rest.clone()));
            }
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            hits.push(scan_long(table, body, args, &mut i)?);
        } else if a.len() > 1 && a.starts_with('-') {
            scan_short_cluster(table, &a[1..], args, &mut i, &mut hits)?;
        } else {
            return Err(ScanError::Positional(a.clone()));
        }
    }
    Ok(hits)
}

fn find_long<'t>(table: &'t [OptDef], name: &str) -> Result<&'t OptDef, ScanError> {
    if let Some(d) = table.iter().find(|d| d.long == Some(name)) {
        return Ok(d);
    }
    let cands: Vec<&OptDef> = table
        .iter()
        .filter(|d| d.long.is_some_and(|l| l.starts_with(name)))
        .collect();
    match cands.as_slice() {
        [one] => Ok(one),
        [] => Err(ScanError::Unknown(format!("--{name}"))),
        many => {
            let names: Vec<String> = many
                .iter()
                .filter_map(|d| d.long.map(|l| format!("--{l}")))
                .collect();
            Err(ScanError::Ambiguous(format!("--{name}"), names.join(", ")))
        }
    }
}

fn scan_long(
    table: &[OptDef],
    body: &str,
    args: &[String],
    i: &mut usize,
) -> Result<Hit, ScanError> {
    let (name, attached) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (body, None),
    };
    let def = find_long(table, name)?;
    let spelled = format!("--{}", def.long.unwrap_or(name));
    let value = match (def.arg, attached) {
        (Arg::None, Some(_)) => return Err(ScanError::UnexpectedValue(spelled)),
        (Arg::None, None) => None,
        (_, Some(v)) => Some(v),
        (Arg::Required, None) => {
            Some(take_next(args, i).ok_or_else(|| ScanError::MissingValue(spelled.clone()))?)
        }
        (Arg::Optional(ok), None) => take_next_if(args, i, ok),
    };
    Ok(Hit {
        id: def.id,
        spelled,
        value,
    })
}

fn scan_short_cluster(
    table: &[OptDef],
    cluster: &str,
    args: &[String],
    i: &mut usize,
    hits: &mut Vec<Hit>,
) -> Result<(), ScanError> {
    for (pos, c) in cluster.char_indices() {
        let def = table
            .iter()
            .find(|d| d.short == Some(c))
            .ok_or_else(|| ScanError::Unknown(format!("-{c}")))?;
        let spelled = format!("-{c}");
        let rest = &cluster[pos + c.len_utf8()..];
        match def.arg {
            Arg::None => hits.push(Hit {
                id: def.id,
                spelled,
                value: None,
            }),
            Arg::Required => {
                let value = if rest.is_empty() {
                    take_next(args, i).ok_or_else(|| ScanError::MissingValue(spelled.clone()))?
                } else {
                    rest.to_string()
                };
                hits.push(Hit {
                    id: def.id,
                    spelled,
                    value: Some(value),
                });
                return Ok(());
            }
            Arg::Optional(ok) => {
                let value = if rest.is_empty() {
                    take_next_if(args, i, ok)
                } else {
                    Some(rest.to_string())
                };
                hits.push(Hit {
                    id: def.id,
                    spelled,
                    value,
                });
                return Ok(());
            }
        }
    }
    Ok(())
}

fn take_next(args: &[String], i: &mut usize) -> Option<String> {
    let v = args.get(*i)?.clone();
    *i += 1;
    Some(v)
}

fn take_next_if(args: &[String], i: &mut usize, ok: fn(&str) -> bool) -> Option<String> {
    match args.get(*i) {
        Some(next) if ok(next) => take_next(args, i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(s: &str) -> bool {
        s.bytes().next().is_some_and(|b| b.is_ascii_digit())
    }

    const T: &[OptDef] = &[
        OptDef {
            short: Some('m'),
            long: Some("mlockall"),
            arg: Arg::None,
            id: "m",
        },
        OptDef {
            short: Some('q'),
            long: Some("quiet"),
            arg: Arg::None,
            id: "q",
        },
        OptDef {
            short: Some('p'),
            long: Some("priority"),
            arg: Arg::Required,
            id: "p",
        },
        OptDef {
            short: Some('t'),
            long: Some("threads"),
            arg: Arg::Optional(numeric),
            id: "t",
        },
        OptDef {
            short: None,
            long: Some("histogram"),
            arg: Arg::Required,
            id: "h",
        },
        OptDef {
            short: None,
            long: Some("histofall"),
            arg: Arg::Required,
            id: "H",
        },
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn ids(v: &[&str]) -> Vec<(&'static str, Option<String>)> {
        scan(T, &s(v))
            .unwrap()
            .into_iter()
            .map(|h| (h.id, h.value))
            .collect()
    }

    #[test]
    fn bundles_attached_and_separate_values() {
        assert_eq!(
            ids(&["-mqp90"]),
            vec![("m", None), ("q", None), ("p", Some("90".into()))]
        );
        assert_eq!(
            ids(&["-p", "80", "--priority=70", "--priority", "60"]).len(),
            3
        );
        assert_eq!(ids(&["-t"]), vec![("t", None)]);
        assert_eq!(ids(&["-t16"]), vec![("t", Some("16".into()))]);
        assert_eq!(
            ids(&["-t", "4", "-q"]),
            vec![("t", Some("4".into())), ("q", None)]
        );
        assert_eq!(ids(&["-t", "-q"]), vec![("t", None), ("q", None)]);
        assert_eq!(ids(&["--thr=3"]), vec![("t", Some("3".into()))]);
    }

    #[test]
    fn rejects_what_getopt_would_not_parse() {
        assert_eq!(scan(T, &s(&["-x"])), Err(ScanError::Unknown("-x".into())));
        assert_eq!(
            scan(T, &s(&["-p"])),
            Err(ScanError::MissingValue("-p".into()))
        );
        assert!(matches!(
            scan(T, &s(&["--hist=3"])),
            Err(ScanError::Ambiguous(..))
        ));
        assert!(matches!(
            scan(T, &s(&["--quiet=1"])),
            Err(ScanError::UnexpectedValue(..))
        ));
        assert!(matches!(
            scan(T, &s(&["report"])),
            Err(ScanError::Positional(..))
        ));
    }
}
