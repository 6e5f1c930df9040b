//! The TrueType font that plots need: the file named by `ATTNZOO_FONT`, or DejaVu Sans —
//! installed, or else unpacked from Debian's `fonts-dejavu-core` into `~/.cache/attnzoo/fonts`
//! on first use.

use std::path::PathBuf;
use std::sync::OnceLock;

use plotters::style::FontStyle;

use crate::{debian, home_cache, CliError};

const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Where [`fetch_font`] unpacks `fonts-dejavu-core`.
fn cached_font() -> PathBuf {
    home_cache()
        .join("fonts")
        .join(FONT_PATHS[0].trim_start_matches('/'))
}

/// Unpacks DejaVu Sans from Debian's `fonts-dejavu-core` into the cache; returns the file.
pub fn fetch_font() -> Result<PathBuf, CliError> {
    let target = cached_font();
    if target.is_file() {
        return Ok(target);
    }
    let work = home_cache().join(format!("font-download.{}", std::process::id()));
    std::fs::create_dir_all(&work)
        .map_err(|error| CliError::Input(format!("{}: {error}", work.display())))?;
    let result = debian::download("fonts-dejavu-core", &work)
        .and_then(|deb| debian::extract(&deb, &home_cache().join("fonts")));
    let _ = std::fs::remove_dir_all(&work);
    result?;
    if target.is_file() {
        Ok(target)
    } else {
        Err(CliError::Input(format!(
            "fonts-dejavu-core did not contain {}",
            target.display()
        )))
    }
}

/// Registers `$ATTNZOO_FONT` or DejaVu Sans as plotters' sans-serif, once.
pub fn ensure_font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<PathBuf> = std::env::var_os("ATTNZOO_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from))
            .chain([cached_font()])
            .collect();
        let path = match candidates.into_iter().find(|path| path.is_file()) {
            Some(path) => path,
            None => {
                eprintln!("no TrueType font installed: fetching Debian's fonts-dejavu-core into the cache");
                fetch_font().map_err(|error| {
                    format!("heatmaps need a TrueType font: install fonts-dejavu-core or set ATTNZOO_FONT ({error})")
                })?
            }
        };
        let bytes = std::fs::read(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{} is not a usable TrueType font", path.display()))
    })
    .clone()
}
