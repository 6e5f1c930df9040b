//! Debian packages as data sources: `apt-get download` (no root needed) and `dpkg-deb -x`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// `apt-get download PACKAGE` into `work`; when apt knows no such package and we are root,
/// `apt-get update` first (and say so). Returns the `.deb` file.
pub fn download(package: &str, work: &Path) -> Result<PathBuf> {
    let download = || {
        Command::new("apt-get")
            .args(["download", package])
            .current_dir(work)
            .output()
    };
    let output = download().map_err(|error| {
        Error::Input(format!(
            "cannot run apt-get ({error}): this needs a Debian-based system"
        ))
    })?;
    let output = if output.status.success() {
        output
    } else if is_root() {
        crate::note!("apt-get download failed; running apt-get update (as root) and retrying");
        run(Command::new("apt-get").arg("update"))?;
        download().map_err(|error| Error::Input(format!("apt-get: {error}")))?
    } else {
        return Err(Error::Input(format!(
            "apt-get download {package} failed ({}); if apt's package lists are empty, run `sudo apt-get update` and retry",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    };
    if !output.status.success() {
        return Err(Error::Input(format!(
            "apt-get download {package} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    fs::read_dir(work)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .ok_or_else(|| Error::Input("apt-get download left no .deb file".into()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

fn run(command: &mut Command) -> Result<()> {
    let output = command
        .output()
        .map_err(|error| Error::Input(format!("cannot run {command:?}: {error}")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// Unpacks the files of `deb` under `dir`.
pub fn extract(deb: &Path, dir: &Path) -> Result<()> {
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(dir))
}
