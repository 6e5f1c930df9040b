//! The TrueType font that plots need: the file named by `ATTNZOO_FONT`, or an installed DejaVu
//! Sans (Debian's `fonts-dejavu-core`).

use std::path::PathBuf;
use std::sync::OnceLock;

use plotters::style::FontStyle;

use crate::error::{Error, Result};

const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// Registers `$ATTNZOO_FONT` or DejaVu Sans as plotters' sans-serif, once; without either, an
/// error that names the package to install.
pub fn ensure_font() -> Result<()> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<PathBuf> = std::env::var_os("ATTNZOO_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from))
            .collect();
        let path = candidates
            .into_iter()
            .find(|path| path.is_file())
            .ok_or("plots need a TrueType font: install Debian's fonts-dejavu-core (`sudo apt-get install fonts-dejavu-core`) or set ATTNZOO_FONT to a .ttf file")?;
        let bytes = std::fs::read(&path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{} is not a usable TrueType font", path.display()))
    })
    .clone()
    .map_err(Error::Input)
}
