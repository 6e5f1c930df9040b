//! Attention heatmaps as SVG: rows are queries (targets), columns keys (sources), darker is more
//! weight, with token labels on both axes.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// Weights `[rows][cols]` with labels, drawn as an SVG heatmap.
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

const CELL: usize = 28;
const MARGIN: usize = 110;

impl Heatmap<'_> {
    /// The SVG document.
    pub fn to_svg(&self) -> String {
        let (rows, cols) = (self.row_labels.len(), self.col_labels.len());
        assert_eq!(
            self.weights.len(),
            rows * cols,
            "heatmap weights are not rows × cols"
        );
        let (width, height) = (MARGIN + cols * CELL + 20, MARGIN + rows * CELL + 20);
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="18" font-size="14">{}</text>"#,
            MARGIN,
            escape(self.title)
        );
        for (row, label) in self.row_labels.iter().enumerate() {
            let y = MARGIN + row * CELL;
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                MARGIN - 6,
                y + CELL / 2 + 4,
                escape(label)
            );
            for col in 0..cols {
                let weight = self.weights[row * cols + col].clamp(0.0, 1.0);
                let shade = (255.0 * (1.0 - weight)).round() as u8;
                let _ = writeln!(
                    svg,
                    r#"<rect x="{}" y="{y}" width="{CELL}" height="{CELL}" fill="rgb({shade},{shade},255)"><title>{weight:.3}</title></rect>"#,
                    MARGIN + col * CELL
                );
            }
        }
        for (col, label) in self.col_labels.iter().enumerate() {
            let x = MARGIN + col * CELL + CELL / 2;
            let _ = writeln!(
                svg,
                r#"<text transform="translate({x},{}) rotate(-60)">{}</text>"#,
                MARGIN - 6,
                escape(label)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }

    /// Writes the SVG to `path` atomically (a temporary file, then a rename).
    pub fn write(&self, path: &Path) -> io::Result<()> {
        let temporary = path.with_extension("svg.tmp");
        std::fs::write(&temporary, self.to_svg())?;
        std::fs::rename(temporary, path)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_cell_per_weight_and_escapes_labels() {
        let rows = vec!["a<b".to_string(), "c".to_string()];
        let cols = vec!["x".to_string(), "y".to_string(), "z".to_string()];
        let weights = [1.0, 0.0, 0.0, 0.2, 0.3, 0.5];
        let svg = Heatmap {
            title: "t",
            row_labels: &rows,
            col_labels: &cols,
            weights: &weights,
        }
        .to_svg();
        assert_eq!(svg.matches("<rect x=").count(), 6);
        assert!(
            svg.contains("a&lt;b")
                && svg.contains("rgb(0,0,255)")
                && svg.contains("rgb(255,255,255)")
        );
    }
}
