//! Attention heatmaps as PNG and SVG (plotters): rows are queries (target tokens), columns keys
//! (source tokens), darker is more weight, token labels on both axes, a colour bar beside.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use image::codecs::png::PngEncoder;
use image::{ColorType, ImageEncoder};

use crate::error::{Error, Result};
use crate::files::write_atomically;
use crate::fonts::ensure_font;

/// Weights `[rows][cols]` with labels.
pub struct Heatmap<'a> {
    /// Title above the map.
    pub title: &'a str,
    /// One label per row (query / target token).
    pub row_labels: &'a [String],
    /// One label per column (key / source token).
    pub col_labels: &'a [String],
    /// Row-major weights in `[0, 1]`, `row_labels.len() × col_labels.len()`.
    pub weights: &'a [f32],
}

/// The picture's cells fill about this many pixels across (short sentences get larger cells).
const GRID: i32 = 640;
/// The smallest and largest cell, in pixels.
const CELLS: (i32, i32) = (28, 56);
/// Label text size, and about how wide one of its characters is, in pixels.
const FONT: u32 = 14;
const CHAR: i32 = 9;
/// Height of the title line.
const TITLE: i32 = 30;
/// Room right of the cells for the colour bar and its labels.
const BAR_SPACE: i32 = 50;
/// Shades in the colour bar.
const BAR_STEPS: i32 = 10;

/// The colour of a weight in `[0, 1]`: white to blue.
fn shade(weight: f32) -> RGBColor {
    let level = (255.0 * (1.0 - weight.clamp(0.0, 1.0))).round() as u8;
    RGBColor(level, level, 255)
}

/// The longest label's length in characters.
fn longest(labels: &[String]) -> i32 {
    labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as i32
}

impl Heatmap<'_> {
    /// A cell's side: the grid about [`GRID`] pixels across, within [`CELLS`].
    fn cell(&self) -> i32 {
        let tokens = self.row_labels.len().max(self.col_labels.len()).max(1) as i32;
        (GRID / tokens).clamp(CELLS.0, CELLS.1)
    }

    /// Left of the cells: room for the row labels.
    fn left(&self) -> i32 {
        12 + CHAR * longest(self.row_labels).max(3)
    }

    /// Above the cells: the title, then room for the vertical column labels.
    fn top(&self) -> i32 {
        TITLE + 10 + CHAR * longest(self.col_labels).max(3)
    }

    /// The picture fits the cells and their labels; the title is cut to fit it.
    fn size(&self) -> (u32, u32) {
        let (rows, cols) = (self.row_labels.len() as i32, self.col_labels.len() as i32);
        (
            (self.left() + cols.max(4) * self.cell() + BAR_SPACE) as u32,
            (self.top() + rows.max(4) * self.cell() + 12) as u32,
        )
    }

    /// The title, cut with `…` to the picture's width (about 9 px a character at 15 px).
    fn fitted_title(&self) -> String {
        let room = ((self.size().0 as i32 - 16) / 9).max(8) as usize;
        let title = printable(self.title);
        if title.chars().count() <= room {
            title
        } else {
            title.chars().take(room - 1).chain(['…']).collect()
        }
    }

    /// A vertical bar of the colours of weights 1 (top) to 0 (bottom), labelled, right of the
    /// cells.
    fn draw_colour_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        font: &FontDesc,
    ) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let x = self.left() + self.col_labels.len() as i32 * self.cell() + 12;
        let height = self.row_labels.len().max(4) as i32 * self.cell();
        let top = self.top();
        let step = height / BAR_STEPS;
        for i in 0..BAR_STEPS {
            let weight = 1.0 - (i as f32 + 0.5) / BAR_STEPS as f32;
            let y = top + i * step;
            root.draw(&Rectangle::new(
                [(x, y), (x + 12, y + step)],
                shade(weight).filled(),
            ))?;
        }
        let left = TextStyle::from(font.clone()).pos(Pos::new(HPos::Left, VPos::Center));
        for (label, y) in [("1", top), ("0", top + BAR_STEPS * step)] {
            root.draw(&Text::new(label, (x + 16, y), left.clone()))?;
        }
        Ok(())
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> std::result::Result<(), String> {
        let failed = |error: DrawingAreaErrorKind<DB::ErrorType>| error.to_string();
        let cols = self.col_labels.len();
        if self.weights.len() != self.row_labels.len() * cols {
            return Err(format!(
                "heatmap has {} weights for {} × {cols} cells",
                self.weights.len(),
                self.row_labels.len()
            ));
        }
        root.fill(&WHITE).map_err(failed)?;
        let font = ("sans-serif", FONT).into_font();
        let (left, top, cell) = (self.left(), self.top(), self.cell());
        root.draw(&Text::new(
            self.fitted_title(),
            (8, 8),
            ("sans-serif", 15).into_font(),
        ))
        .map_err(failed)?;
        let right = TextStyle::from(font.clone()).pos(Pos::new(HPos::Right, VPos::Center));
        for (row, label) in self.row_labels.iter().enumerate() {
            let y = top + row as i32 * cell;
            root.draw(&Text::new(
                printable(&token_label(label)),
                (left - 6, y + cell / 2),
                right.clone(),
            ))
            .map_err(failed)?;
            for col in 0..cols {
                let x = left + col as i32 * cell;
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell, y + cell)],
                    shade(self.weights[row * cols + col]).filled(),
                ))
                .map_err(failed)?;
            }
        }
        let vertical = TextStyle::from(font.transform(FontTransform::Rotate270))
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (col, label) in self.col_labels.iter().enumerate() {
            let x = left + col as i32 * cell + cell / 2;
            root.draw(&Text::new(
                printable(&token_label(label)),
                (x, top - 6),
                vertical.clone(),
            ))
            .map_err(failed)?;
        }
        self.draw_colour_bar(root, &font).map_err(failed)?;
        root.present().map_err(failed)
    }

    /// Writes `stem.png` and `stem.svg`, each drawn in memory and written through a temporary
    /// file and a rename.
    pub fn write(&self, stem: &Path) -> Result<()> {
        ensure_font()?;
        let drawing_failed =
            |error: String| Error::Input(format!("cannot draw {}: {error}", self.title));
        let (width, height) = self.size();
        let mut pixels = vec![0u8; 3 * width as usize * height as usize];
        self.draw(&BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area())
            .map_err(drawing_failed)?;
        let mut png = Vec::new();
        PngEncoder::new(&mut png)
            .write_image(&pixels, width, height, ColorType::Rgb8)
            .map_err(|error| drawing_failed(error.to_string()))?;
        let mut svg = String::new();
        self.draw(&SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area())
            .map_err(drawing_failed)?;
        write_atomically(&stem.with_extension("png"), &png)?;
        write_atomically(&stem.with_extension("svg"), svg.as_bytes())
    }
}

/// A token as the attention explorer labels it: a word piece's continuation mark `##` as `-`,
/// a word-initial `▁` as `·`.
fn token_label(token: &str) -> String {
    if let Some(rest) = token.strip_prefix("##") {
        format!("-{rest}")
    } else if let Some(rest) = token.strip_prefix('▁') {
        format!("·{rest}")
    } else {
        token.to_string()
    }
}

/// `text` without control characters (they have no glyph, and XML forbids most of them).
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_and_an_svg_with_one_cell_per_weight_and_the_labels() {
        let rows = vec!["a<b".to_string(), "c\u{1}\u{1b}[31m".to_string()];
        let cols = vec!["x".to_string(), "##le".to_string(), "▁z".to_string()];
        let weights = [1.0, 0.0, 0.0, 0.2, 0.3, 0.5];
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let map = Heatmap {
            title: "t",
            row_labels: &rows,
            col_labels: &cols,
            weights: &weights,
        };
        map.write(&dir.join("map")).unwrap();
        let svg = std::fs::read_to_string(dir.join("map.svg")).unwrap();
        let png = std::fs::read(dir.join("map.png")).unwrap();
        assert_eq!(
            svg.matches("<rect").count(),
            1 + 6 + BAR_STEPS as usize,
            "background, six cells and the colour bar"
        );
        assert!(
            svg.contains("\n-le\n") && svg.contains("\n·z\n") && !svg.contains("##"),
            "word pieces labelled as the explorer labels them: {svg}"
        );
        assert!(
            svg.contains("a&lt;b") && svg.contains("#0000FF") && svg.contains("#FFFFFF"),
            "{svg}"
        );
        assert!(
            !svg.chars().any(|c| c.is_control() && c != '\n'),
            "control characters are not XML"
        );
        assert_eq!(&png[1..4], b"PNG");
        let words: Vec<String> = (0..8).map(|i| format!("▁word{i:02}")).collect();
        let grid = Heatmap {
            title: &"a long sentence for a title ".repeat(8),
            row_labels: &words,
            col_labels: &words,
            weights: &[0.5; 64],
        };
        let (width, height) = grid.size();
        let cells = f64::from(8 * grid.cell()).powi(2);
        assert!(
            cells > 0.35 * f64::from(width) * f64::from(height),
            "the cells fill the picture, not the title: {width}×{height}"
        );
        assert!(grid.fitted_title().ends_with('…'));
        let short = Heatmap {
            weights: &weights[..5],
            ..map
        };
        assert!(short
            .write(Path::new("/tmp/never"))
            .unwrap_err()
            .to_string()
            .contains("5 weights"));
    }
}
