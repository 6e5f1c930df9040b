//! Files and streams: UTF-8 lines in, whole files out through a rename.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// Marks a file being written; a name containing it is a leftover of an interrupted write.
pub const PARTIAL: &str = ".partial";

/// UTF-8 lines of `input`, which errors call `name` (a final newline ends the last line;
/// `\r\n` is one newline).
pub fn read_lines(mut input: impl Read, name: &str) -> Result<Vec<String>> {
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|error| Error::read(Path::new(name), error))?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let offset = error.utf8_error().valid_up_to();
        let line = 1 + error.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        Error::Input(format!("{name} is not UTF-8 (line {line}, byte {offset})"))
    })?;
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let body = text.strip_suffix('\n').unwrap_or(&text);
    Ok(body
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line).to_string())
        .collect())
}

/// The lines of the file at `path`.
pub fn read_file_lines(path: &Path) -> Result<Vec<String>> {
    let file = fs::File::open(path).map_err(|error| Error::read(path, error))?;
    read_lines(file, &path.display().to_string())
}

/// Writes `contents` to `path` through a temporary file, `fsync` and a rename, so a reader never
/// sees half a file and an interruption never destroys the previous one. The temporary file is
/// removed when the write fails.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = path.with_file_name(format!("{name}{PARTIAL}.{}", std::process::id()));
    let written = (|| {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temporary);
        return Err(Error::write(path, error));
    }
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        // The rename itself is durable once the folder is synced (best effort: not every
        // file system lets a folder be opened for it).
        let _ = fs::File::open(dir).and_then(|dir| dir.sync_all());
    }
    Ok(())
}

/// The file that `name` is an interrupted [`write_atomically`] of (`<file>.partial.<pid>`).
pub fn partial_of(name: &str) -> Option<&str> {
    let (file, pid) = name.rsplit_once(PARTIAL)?;
    let pid = pid.strip_prefix('.')?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then_some(file)
}

/// Removes the leftovers of interrupted writes in `dir` of the files that `owned` accepts.
pub fn remove_partial_files(dir: &Path, owned: impl Fn(&str) -> bool) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if partial_of(&entry.file_name().to_string_lossy()).is_some_and(&owned) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_file_is_named_after_its_file_and_a_process() {
        assert_eq!(partial_of("state.json.partial.123"), Some("state.json"));
        for name in [
            "state.json",
            "my.partial.notes",
            "a.partial.",
            "a.partial.12x",
            "a.partial",
        ] {
            assert_eq!(partial_of(name), None, "{name}");
        }
    }

    #[test]
    fn lines_keep_empty_sentences_and_reject_bad_utf8() {
        let lines = |bytes: &[u8]| read_lines(bytes, "stdin");
        assert_eq!(lines(b"").unwrap(), Vec::<String>::new());
        assert_eq!(lines(b"\n").unwrap(), vec![""]);
        assert_eq!(lines(b"a\n\nb\r\nc").unwrap(), vec!["a", "", "b", "c"]);
        let error = lines(b"ok\nbad \xff\n").unwrap_err().to_string();
        assert_eq!(error, "stdin is not UTF-8 (line 2, byte 7)");
    }

    #[test]
    fn an_atomic_write_leaves_the_file_and_no_partial_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let error = write_atomically(&dir.path().join("no/such/folder"), b"x").unwrap_err();
        assert!(error.to_string().starts_with("cannot write "), "{error}");
    }
}
