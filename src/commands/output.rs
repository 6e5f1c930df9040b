//! Standard output, checked: every command writes through [`Stdout`]. A reader that goes away
//! (`| head`) ends the command quietly; any other failure (a full disk, a closed stdout) is an
//! error, never a panic.

use std::fmt::Display;
use std::io::{self, BufWriter, StdoutLock, Write};
use std::sync::atomic::{AtomicBool, Ordering};

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

    /// Writes `text` as it is and flushes it: output that streams as it is made.
    pub fn stream(&mut self, text: &str) -> anyhow::Result<()> {
        self.0.write_all(text.as_bytes()).map_err(failed)?;
        self.0.flush().map_err(failed)
    }

    /// Flushes what is buffered: the last chance for an error to show.
    pub fn finish(mut self) -> anyhow::Result<()> {
        self.0.flush().map_err(failed)
    }
}

/// Whether stdout was closed when the program started (`>&-`). Rust's runtime then opens
/// `/dev/null` in its place before `main`, so the descriptor is looked at earlier, from the
/// executable's initialisers (Linux; elsewhere never). A `/dev/null` the caller opened itself
/// (`>/dev/null`, Python's `subprocess.DEVNULL`) is an ordinary stdout.
fn closed_at_start() -> bool {
    STDOUT_CLOSED_AT_START.load(Ordering::Relaxed)
}

static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static RECORD_STDOUT_AT_START: extern "C" fn() = {
    extern "C" fn record() {
        // SAFETY: F_GETFD only reads the descriptor's flags; -1 means there is no descriptor 1.
        let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
        STDOUT_CLOSED_AT_START.store(closed, Ordering::Relaxed);
    }
    record
};
