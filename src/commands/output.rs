//! Standard output, checked: every command writes through [`Stdout`]. A reader that goes away
//! (`| head`) ends the command quietly; any other failure (a full disk, a closed stdout) is an
//! error, never a panic.

use std::fmt::Display;
use std::io::{self, BufWriter, StdoutLock, Write};

/// The reader of stdout went away: stop quietly.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct BrokenPipe;

/// Stdout cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to stdout: {0}")]
pub struct StdoutFailed(String);

/// Buffered, checked standard output.
pub struct Stdout(BufWriter<StdoutLock<'static>>);

fn failed(error: io::Error) -> anyhow::Error {
    if error.kind() == io::ErrorKind::BrokenPipe {
        BrokenPipe.into()
    } else {
        StdoutFailed(error.to_string()).into()
    }
}

impl Stdout {
    /// Stdout, refusing one that was closed when the program started (`>&-`).
    pub fn open() -> anyhow::Result<Self> {
        if closed_at_start() {
            return Err(StdoutFailed("it is closed".into()).into());
        }
        Ok(Self(BufWriter::new(io::stdout().lock())))
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: impl Display) -> anyhow::Result<()> {
        writeln!(self.0, "{text}").map_err(failed)
    }

    /// Flushes what is buffered: the last chance for an error to show.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.0.flush().map_err(failed)
    }
}

/// Whether stdout was closed when the program started. Rust's runtime then opens `/dev/null` in
/// its place, read-write, where a shell's `>/dev/null` opens it write-only (Linux: read from
/// `/proc`; elsewhere never).
fn closed_at_start() -> bool {
    if !cfg!(target_os = "linux") {
        return false;
    }
    let is_null = std::fs::read_link("/proc/self/fd/1").is_ok_and(|path| path == *"/dev/null");
    let read_write = std::fs::read_to_string("/proc/self/fdinfo/1").is_ok_and(|info| {
        info.lines()
            .filter_map(|line| line.strip_prefix("flags:"))
            .any(|flags| u32::from_str_radix(flags.trim(), 8).is_ok_and(|f| f & 0o3 == 0o2))
    });
    is_null && read_write
}
