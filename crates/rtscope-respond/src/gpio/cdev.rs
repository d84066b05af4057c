//! [`Gpio`] on the Linux GPIO character device, uAPI v2, through the `gpiocdev` crate.

use super::{
    Bias, Edge, EdgeEvent, EdgeSelect, EventClock, Gpio, GpioError, InputLine, InputOptions,
    LineId, LineSel, OutputLine,
};
use gpiocdev::line::{self, Value};
use gpiocdev::request::Request;
use rtscope_core::Nanos;
use std::path::PathBuf;
use std::time::Duration;

/// The GPIO chips of the system (`/dev/gpiochip*`).
#[derive(Debug, Default)]
pub struct Cdev;

/// A requested input.
pub struct CdevInput {
    req: Request,
    offsets: Vec<u32>,
    buf: Vec<u64>,
}

/// A requested output.
pub struct CdevOutput {
    req: Request,
    offset: u32,
}

fn chip_path(chip: &str) -> PathBuf {
    if chip.starts_with('/') {
        PathBuf::from(chip)
    } else if chip.starts_with("gpiochip") {
        PathBuf::from("/dev").join(chip)
    } else {
        // A chip label such as `gpio-sim.0-node0` or `pinctrl-bcm2835`.
        gpiocdev::chip::chips()
            .unwrap_or_default()
            .into_iter()
            .find(|p| {
                gpiocdev::Chip::from_path(p)
                    .and_then(|c| c.info())
                    .is_ok_and(|i| i.label == chip)
            })
            .unwrap_or_else(|| PathBuf::from("/dev").join(chip))
    }
}

fn chip_list() -> String {
    let chips = gpiocdev::chip::chips().unwrap_or_default();
    if chips.is_empty() {
        return "  (none: no /dev/gpiochip* — is the GPIO driver loaded?)".into();
    }
    chips
        .iter()
        .filter_map(|p| gpiocdev::Chip::from_path(p).ok()?.info().ok())
        .map(|i| format!("  {} [{}] ({} lines)", i.name, i.label, i.num_lines))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `gpioinfo`-style list of the lines of `chip` (a path, `gpiochipN` or a label).
pub fn list_lines(chip: &str) -> Result<String, GpioError> {
    let path = chip_path(chip);
    let c = open_chip(chip, &path)?;
    let info = c.info().map_err(|e| GpioError::Io(e.to_string()))?;
    let mut s = format!(
        "{} - {} lines [{}]:\n",
        info.name, info.num_lines, info.label
    );
    for li in c
        .line_info_iter()
        .map_err(|e| GpioError::Io(e.to_string()))?
    {
        let Ok(li) = li else { continue };
        let name = if li.name.is_empty() {
            "unnamed".to_string()
        } else {
            format!("\"{}\"", escape(&li.name))
        };
        let consumer = if li.used {
            format!("\"{}\"", escape(&li.consumer))
        } else {
            "unused".into()
        };
        let dir = match li.direction {
            line::Direction::Input => "input",
            line::Direction::Output => "output",
        };
        s.push_str(&format!(
            "\tline {:>3}: {name:<16} {consumer:<16} {dir}\n",
            li.offset
        ));
    }
    Ok(s)
}

/// Line and consumer names come from drivers and other programs: printed as escaped text.
fn escape(s: &str) -> String {
    s.chars().take(64).flat_map(char::escape_default).collect()
}

fn open_chip(chip: &str, path: &std::path::Path) -> Result<gpiocdev::Chip, GpioError> {
    gpiocdev::Chip::from_path(path).map_err(|e| {
        let text = e.to_string();
        if text.contains("ermission") || text.contains("EACCES") {
            GpioError::Permission {
                chip: path.display().to_string(),
                reason: text,
            }
        } else {
            GpioError::NoChip {
                chip: chip.to_string(),
                available: chip_list(),
            }
        }
    })
}

/// Resolves a line to (chip path, offset), with the clear errors for a missing chip or line.
fn resolve(id: &LineId) -> Result<(PathBuf, u32), GpioError> {
    let chip_name = match &id.chip {
        Some(c) => c.clone(),
        None => {
            let LineSel::Name(n) = &id.line else {
                return Err(GpioError::Invalid(format!(
                    "line '{id}': give the chip too, e.g. gpiochip0:{id}"
                )));
            };
            let found = gpiocdev::find_named_line(n).ok_or_else(|| GpioError::NoLine {
                line: id.to_string(),
                lines: all_lines(),
            })?;
            return Ok((found.chip, found.info.offset));
        }
    };
    let path = chip_path(&chip_name);
    let chip = open_chip(&chip_name, &path)?;
    let listing = || list_lines(&chip_name).unwrap_or_default();
    let offset = match &id.line {
        LineSel::Offset(n) => *n,
        LineSel::Name(n) => {
            chip.find_line_info(n)
                .ok_or_else(|| GpioError::NoLine {
                    line: id.to_string(),
                    lines: listing(),
                })?
                .offset
        }
    };
    match chip.line_info(offset) {
        Ok(li) if li.used => Err(GpioError::Busy {
            line: id.to_string(),
            consumer: escape(&li.consumer),
            lines: listing(),
        }),
        Ok(_) => Ok((path, offset)),
        Err(_) => Err(GpioError::NoLine {
            line: id.to_string(),
            lines: listing(),
        }),
    }
}

fn all_lines() -> String {
    gpiocdev::chip::chips()
        .unwrap_or_default()
        .iter()
        .filter_map(|p| list_lines(&p.display().to_string()).ok())
        .collect::<Vec<_>>()
        .join("")
}

fn request_error(id: &LineId, e: gpiocdev::Error) -> GpioError {
    let text = e.to_string();
    if text.contains("busy") || text.contains("EBUSY") {
        GpioError::Busy {
            line: id.to_string(),
            consumer: "another request".into(),
            lines: id
                .chip
                .as_deref()
                .and_then(|c| list_lines(c).ok())
                .unwrap_or_default(),
        }
    } else {
        GpioError::Io(format!("cannot request line {id}: {text}"))
    }
}

impl Gpio for Cdev {
    type Input = CdevInput;
    type Output = CdevOutput;

    fn request_input(
        &mut self,
        lines: &[LineId],
        o: &InputOptions,
    ) -> Result<CdevInput, GpioError> {
        let mut resolved = Vec::new();
        for id in lines {
            resolved.push(resolve(id)?);
        }
        let Some((chip, _)) = resolved.first().cloned() else {
            return Err(GpioError::Invalid("no input line".into()));
        };
        if resolved.iter().any(|(c, _)| *c != chip) {
            return Err(GpioError::Invalid(
                "the watched inputs must be on one chip".into(),
            ));
        }
        let offsets: Vec<u32> = resolved.iter().map(|(_, o)| *o).collect();
        let mut b = Request::builder();
        b.on_chip(&chip)
            .with_consumer("rtscope-respond")
            .with_lines(&offsets)
            .as_input()
            .with_edge_detection(match o.edges {
                EdgeSelect::Rising => line::EdgeDetection::RisingEdge,
                EdgeSelect::Falling => line::EdgeDetection::FallingEdge,
                EdgeSelect::Both => line::EdgeDetection::BothEdges,
            })
            .with_event_clock(match o.clock {
                EventClock::Monotonic => line::EventClock::Monotonic,
                EventClock::Realtime => line::EventClock::Realtime,
                EventClock::Hte => line::EventClock::Hte,
            });
        match o.bias {
            Bias::AsIs => {}
            Bias::PullUp => {
                b.with_bias(line::Bias::PullUp);
            }
            Bias::PullDown => {
                b.with_bias(line::Bias::PullDown);
            }
            Bias::Disabled => {
                b.with_bias(line::Bias::Disabled);
            }
        }
        if let Some(d) = o.debounce {
            b.with_debounce_period(Duration::from_nanos(d.0));
        }
        if let Some(n) = o.kernel_buffer {
            b.with_kernel_event_buffer_size(n);
        }
        let req = b.request().map_err(|e| request_error(&lines[0], e))?;
        let buf = vec![0u64; req.edge_event_u64_size()];
        Ok(CdevInput { req, offsets, buf })
    }

    fn request_output(&mut self, id: &LineId, level: bool) -> Result<CdevOutput, GpioError> {
        let (chip, offset) = resolve(id)?;
        let req = Request::builder()
            .on_chip(&chip)
            .with_consumer("rtscope-respond")
            .with_line(offset)
            .as_output(if level {
                Value::Active
            } else {
                Value::Inactive
            })
            .request()
            .map_err(|e| request_error(id, e))?;
        Ok(CdevOutput { req, offset })
    }
}

impl InputLine for CdevInput {
    fn wait(&mut self, timeout: Duration) -> Result<bool, GpioError> {
        self.req
            .wait_edge_event(timeout)
            .map_err(|e| GpioError::Io(e.to_string()))
    }

    fn read(&mut self) -> Result<EdgeEvent, GpioError> {
        // Read into a buffer allocated at request time: no allocation per edge.
        let n = self
            .req
            .read_edge_events_into_slice(&mut self.buf)
            .map_err(|e| GpioError::Io(e.to_string()))?;
        let ev = self
            .req
            .edge_event_from_slice(&self.buf[..n.max(1).min(self.buf.len())])
            .map_err(|e| GpioError::Io(e.to_string()))?;
        Ok(EdgeEvent {
            offset: ev.offset,
            edge: match ev.kind {
                line::EdgeKind::Rising => Edge::Rising,
                line::EdgeKind::Falling => Edge::Falling,
            },
            timestamp: Nanos(ev.timestamp_ns),
            seqno: ev.seqno,
            line_seqno: ev.line_seqno,
        })
    }

    fn offsets(&self) -> Vec<u32> {
        self.offsets.clone()
    }
}

impl OutputLine for CdevOutput {
    fn set(&mut self, level: bool) -> Result<(), GpioError> {
        let v = if level {
            Value::Active
        } else {
            Value::Inactive
        };
        self.req
            .set_value(self.offset, v)
            .map_err(|e| GpioError::Io(e.to_string()))
    }
}

/// Whether `line` is currently requested by some program (for waiting on a responder that was
/// just started).
pub fn line_in_use(line: &LineId) -> Result<bool, GpioError> {
    match resolve(line) {
        Ok(_) => Ok(false),
        Err(GpioError::Busy { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}
