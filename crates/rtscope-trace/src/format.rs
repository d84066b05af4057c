//! The tracefs text descriptions the binary pages are decoded with: an event's `format` file
//! (its ID and the offset, size and signedness of each field) and `events/header_page` (where the
//! page timestamp, the commit word and the data start). Pure functions of the file text.

use crate::TraceError;

/// The longest `format` file accepted (bytes); real ones are under 4 KiB.
pub const MAX_FORMAT_LEN: usize = 64 << 10;

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`prev_pid`, `name`, …), without array brackets.
    pub name: String,
    /// Byte offset from the start of the record (the common fields included).
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Whether the field is signed.
    pub signed: bool,
    /// A `__data_loc` field: a u32 holding (length << 16 | offset) of a variable-length string.
    pub data_loc: bool,
}

/// The parsed `format` file of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// Event name (`sched_switch`).
    pub name: String,
    /// The numeric type ID stored in each record's `common_type`.
    pub id: u16,
    /// All fields, common ones first.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses the text of an `events/<system>/<event>/format` file.
    pub fn parse(text: &str) -> Result<EventFormat, TraceError> {
        if text.len() > MAX_FORMAT_LEN {
            return Err(TraceError::Format("format file too long".into()));
        }
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = v.trim().parse::<u16>().ok();
            } else if line.starts_with("field:") {
                fields.push(parse_field(line)?);
            }
        }
        let name = name.ok_or_else(|| TraceError::Format("no name: line".into()))?;
        let id = id.ok_or_else(|| TraceError::Format(format!("{name}: no valid ID: line")))?;
        Ok(EventFormat { name, id, fields })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parses `field:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;`.
fn parse_field(line: &str) -> Result<Field, TraceError> {
    let bad = || TraceError::Format(format!("bad field line: {}", line.escape_debug()));
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or_else(bad)?;
    let last = decl.split_whitespace().last().ok_or_else(bad)?;
    let name = last.split('[').next().unwrap_or(last).to_string();
    Ok(Field {
        name,
        offset: offset.ok_or_else(bad)?,
        size: size.ok_or_else(bad)?,
        signed,
        data_loc: decl.contains("__data_loc"),
    })
}

/// Layout of a ring-buffer page (`events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the u64 page timestamp.
    pub timestamp_offset: usize,
    /// Offset of the commit word (size of the data plus flag bits).
    pub commit_offset: usize,
    /// Size of the commit word (8 on 64-bit kernels, 4 on 32-bit).
    pub commit_size: usize,
    /// Offset of the first event.
    pub data_offset: usize,
}

impl Default for PageLayout {
    /// The layout of 64-bit kernels.
    fn default() -> Self {
        PageLayout {
            timestamp_offset: 0,
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
        }
    }
}

impl PageLayout {
    /// Parses `events/header_page`.
    pub fn parse(text: &str) -> Result<PageLayout, TraceError> {
        if text.len() > MAX_FORMAT_LEN {
            return Err(TraceError::Format("header_page too long".into()));
        }
        let mut layout = PageLayout {
            timestamp_offset: usize::MAX,
            ..Default::default()
        };
        let mut seen = 0;
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("field:"))
        {
            let f = parse_field(line)?;
            match f.name.as_str() {
                "timestamp" => {
                    layout.timestamp_offset = f.offset;
                    seen |= 1;
                }
                "commit" => {
                    layout.commit_offset = f.offset;
                    layout.commit_size = f.size;
                    seen |= 2;
                }
                "data" => {
                    layout.data_offset = f.offset;
                    seen |= 4;
                }
                _ => {}
            }
        }
        if seen != 7 || !matches!(layout.commit_size, 4 | 8) {
            return Err(TraceError::Format(
                "header_page lacks timestamp, commit or data".into(),
            ));
        }
        Ok(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\nprint fmt: \"x\"\n";

    #[test]
    fn format_files_give_id_and_field_offsets() {
        let f = EventFormat::parse(SWITCH).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
        let c = f.field("prev_comm").unwrap();
        assert_eq!((c.offset, c.size, c.signed), (8, 16, false));
        assert!(f.field("prev_prio").unwrap().signed);
    }

    #[test]
    fn data_loc_fields_are_flagged() {
        let text = "name: irq_handler_entry\nID: 225\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n";
        let f = EventFormat::parse(text).unwrap();
        assert!(f.field("name").unwrap().data_loc);
    }

    #[test]
    fn header_page_of_this_kernel_parses() {
        let text = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(PageLayout::parse(text).unwrap(), PageLayout::default());
        assert!(PageLayout::parse("garbage").is_err());
        assert!(EventFormat::parse("ID: x").is_err());
    }
}
