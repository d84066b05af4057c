//! Small allocation-free helpers for reading and parsing /sys and /proc text.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Reads the file at `path` into `buf` (cleared first), reusing `buf`'s allocation.
///
/// A file that is not valid UTF-8 is an error like any other read error; callers treat every
/// error as "skip this reading".
pub(crate) fn read_into(path: &Path, buf: &mut String) -> io::Result<()> {
    let mut bytes = std::mem::take(buf).into_bytes();
    bytes.clear();
    let read = read_bytes(path, &mut bytes);
    match String::from_utf8(bytes) {
        Ok(s) => {
            *buf = s;
            read
        }
        Err(e) => {
            let mut bytes = e.into_bytes();
            bytes.clear();
            *buf = String::from_utf8(bytes).unwrap_or_default();
            read.and(Err(io::Error::new(io::ErrorKind::InvalidData, "not UTF-8")))
        }
    }
}

/// Appends the file's bytes to `bytes` the way procps does: `openat`, `read` until a read
/// comes back short, `close`. A /proc or /sys file is generated whole on each read call and
/// a short read means its end, so the usual extra `read` that returns 0 is saved, as are the
/// `statx` and `lseek` that `File::read_to_end` spends on a size hint (/proc sizes are 0).
fn read_bytes(path: &Path, bytes: &mut Vec<u8>) -> io::Result<()> {
    let mut f = File::open(path)?;
    let mut chunk = 4096;
    loop {
        let len = bytes.len();
        bytes.resize(len + chunk, 0);
        match f.read(&mut bytes[len..]) {
            Ok(n) => {
                bytes.truncate(len + n);
                if n < chunk {
                    return Ok(());
                }
                chunk = (chunk * 2).min(1 << 20);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => bytes.truncate(len),
            Err(e) => {
                bytes.truncate(len);
                return Err(e);
            }
        }
    }
}

/// Reads a whole small file and returns it trimmed, or `None` if it cannot be read or is empty.
pub(crate) fn read_trimmed(path: &Path) -> Option<String> {
    let mut buf = String::new();
    read_into(path, &mut buf).ok()?;
    let t = buf.trim();
    (!t.is_empty()).then(|| t.to_owned())
}

/// Parses the first whitespace-separated token of `s` as a signed integer.
pub(crate) fn first_i64(s: &str) -> Option<i64> {
    s.split_ascii_whitespace().next()?.parse().ok()
}

/// Parses the first whitespace-separated token of `s` as an unsigned integer.
pub(crate) fn first_u64(s: &str) -> Option<u64> {
    s.split_ascii_whitespace().next()?.parse().ok()
}

/// Byte offset of `part` inside `whole`; `part` must be a sub-slice of `whole`.
pub(crate) fn offset_in(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

/// Appends the whitespace-separated tokens of `s` to `dst`, joined by single spaces.
pub(crate) fn push_collapsed(dst: &mut String, s: &str) {
    for (i, tok) in s.split_ascii_whitespace().enumerate() {
        if i > 0 {
            dst.push(' ');
        }
        dst.push_str(tok);
    }
}

/// The numeric suffix of a directory entry name such as `thermal_zone3` (prefix
/// `thermal_zone`) or `cpu12` (prefix `cpu`); `None` if the rest is not all digits.
pub(crate) fn numbered(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The entries of directory `dir` named `<prefix><N>`, as `(N, name)`, sorted by `N`.
/// A missing or unreadable directory yields an empty list.
pub(crate) fn numbered_entries(dir: &Path, prefix: &str) -> Vec<(u32, String)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = rd
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some((numbered(&name, prefix)?, name))
        })
        .collect();
    out.sort();
    out
}

pub(crate) use rtscope_core::cpulist::parse as parse_cpulist;

/// Gives every name that occurs more than once in `items` the suffix `.<disambiguator>`,
/// so that metric names stay unique (for example two thermal zones both of type `acpitz`).
pub(crate) fn disambiguate(items: &mut [(String, String)]) {
    let dup: Vec<bool> = items
        .iter()
        .map(|(n, _)| items.iter().filter(|(m, _)| m == n).count() > 1)
        .collect();
    for ((name, suffix), is_dup) in items.iter_mut().zip(dup) {
        if is_dup {
            name.push('.');
            name.push_str(suffix);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_files_of_every_size() {
        let dir = std::env::temp_dir().join(format!("rtscope-monitor-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut buf = String::from("old");
        for len in [0usize, 1, 4095, 4096, 4097, 12_288, 100_000] {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            let p = dir.join("f");
            std::fs::write(&p, &text).expect("write");
            read_into(&p, &mut buf).expect("read");
            assert_eq!(buf, text, "length {len}");
        }
        std::fs::write(dir.join("bin"), [b'1', 0xff, b'2']).expect("write");
        assert!(read_into(&dir.join("bin"), &mut buf).is_err());
        assert!(buf.is_empty());
        assert!(read_into(&dir.join("missing"), &mut buf).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn numbered_names() {
        assert_eq!(numbered("thermal_zone12", "thermal_zone"), Some(12));
        assert_eq!(numbered("cpufreq", "cpu"), None);
        assert_eq!(numbered("cpu", "cpu"), None);
        assert_eq!(numbered("cpu+1", "cpu"), None);
    }

    #[test]
    fn first_numbers() {
        assert_eq!(first_i64(" -5000\n"), Some(-5000));
        assert_eq!(first_i64(""), None);
        assert_eq!(first_u64("12 kB"), Some(12));
        assert_eq!(first_u64("x"), None);
    }

    #[test]
    fn collapse_and_disambiguate() {
        let mut s = String::new();
        push_collapsed(&mut s, "  a   b\tc ");
        assert_eq!(s, "a b c");
        let mut items = vec![
            ("temp.acpitz".to_owned(), "zone0".to_owned()),
            ("temp.x86".to_owned(), "zone1".to_owned()),
            ("temp.acpitz".to_owned(), "zone2".to_owned()),
        ];
        disambiguate(&mut items);
        let names: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["temp.acpitz.zone0", "temp.x86", "temp.acpitz.zone2"]
        );
    }
}
