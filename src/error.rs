//! The library's error: one line for a user (control characters it quotes escaped), saying what
//! is wrong and with which value or file.

use std::io;
use std::path::{Path, PathBuf};

use attnzoo_backends::BackendError;
use attnzoo_models::{escape_control, AttnError};

/// What went wrong in the library half of attnzoo (translation, embeddings, plots).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a config value, a file's contents, a sentence.
    #[error("{}", escape_control(.0))]
    Input(String),
    /// A file or folder that cannot be read or written.
    #[error("{action} {}: {error}", escape_control(&path.display().to_string()))]
    Io {
        /// What was being done: `cannot read`, `cannot write`, ….
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why (shown in this error's own line, so not a `source` of it).
        error: io::Error,
    },
    /// The backend or device cannot be used.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A model rejected its config or input.
    #[error(transparent)]
    Model(#[from] AttnError),
    /// The machine failed, not the input: a thread that cannot start, a backend that panicked.
    #[error("{}", escape_control(.0))]
    Machine(String),
}

/// The library's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `cannot read PATH: why`.
    pub fn read(path: &Path, error: io::Error) -> Self {
        Error::Io {
            action: "cannot read",
            path: path.to_path_buf(),
            error,
        }
    }

    /// `cannot write PATH: why`.
    pub fn write(path: &Path, error: io::Error) -> Self {
        Error::Io {
            action: "cannot write",
            path: path.to_path_buf(),
            error,
        }
    }

    /// Whether the environment failed (a full disk, a quota) rather than the input being wrong.
    pub fn is_environment(&self) -> bool {
        match self {
            Error::Io { error, .. } => is_environment(error),
            Error::Machine(_) => true,
            _ => false,
        }
    }
}

/// Whether an I/O error is the machine's fault (a full disk, a quota, a read-only file system, a
/// failing device), not the user's input.
pub fn is_environment(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull
            | io::ErrorKind::QuotaExceeded
            | io::ErrorKind::FileTooLarge
            | io::ErrorKind::ReadOnlyFilesystem
            | io::ErrorKind::OutOfMemory
    ) || matches!(error.raw_os_error(), Some(libc::ENOSPC | libc::EIO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_disk_is_the_environment_and_a_missing_file_the_input() {
        for code in [libc::ENOSPC, libc::EIO, libc::EROFS, libc::EDQUOT] {
            assert!(
                is_environment(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
        for code in [libc::ENOENT, libc::EACCES, libc::EISDIR, libc::ENOTDIR] {
            assert!(
                !is_environment(&io::Error::from_raw_os_error(code)),
                "{code}"
            );
        }
    }

    /// Found by the `checkpoint` fuzz target: serde's message quotes the JSON string it did not
    /// expect (`unknown variant `\n``), and a newline in it made the error two lines.
    #[test]
    fn an_error_quoting_a_newline_stays_one_line() {
        #[derive(Debug, serde::Deserialize)]
        enum Kind {
            Rnn,
        }
        let damaged = serde_json::from_str::<Kind>("\"\\n\"").unwrap_err();
        let errors = [
            Error::Input(format!("damaged checkpoint file model.json: {damaged}")),
            Error::Model(AttnError("a\r\nb\u{1b}".into())),
            Error::read(
                Path::new("runs/a\nb"),
                io::Error::from(io::ErrorKind::NotFound),
            ),
        ];
        for error in errors {
            let line = error.to_string();
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
    }
}
