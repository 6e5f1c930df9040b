//! `attnzoo backends` and `attnzoo check`.

use anyhow::Result;
use attnzoo_backends::{probe_all, DeviceArgs};
use attnzoo_models::attention::masked_softmax;
use burn::tensor::{Bool, Tensor};

use super::output::Stdout;

/// Prints one row per backend: compiled in, usable, device, reason.
pub fn run() -> Result<()> {
    let mut out = Stdout::open()?;
    let rows: Vec<[String; 5]> = probe_all()
        .into_iter()
        .map(|probe| {
            let yes_no = |flag: bool| if flag { "yes" } else { "no" }.to_string();
            [
                probe.backend.to_string(),
                yes_no(probe.compiled),
                yes_no(probe.usable()),
                probe.description.clone(),
                probe.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let header = ["backend", "compiled", "usable", "device", "reason"].map(String::from);
    let widths: Vec<usize> = (0..5)
        .map(|column| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.line(cells.join("  ").trim_end())?;
    }
    out.finish()
}

/// `attnzoo check`: runs a 1×2×3 masked attention (one query with every key masked) on the
/// chosen device.
pub fn check(args: &DeviceArgs) -> Result<()> {
    let mut out = Stdout::open()?;
    let (backend, device) = args.open()?;
    let scores = Tensor::<3>::from_floats([[[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]], &device);
    let mask = Tensor::<3, Bool>::from_bool([[[false, false, true], [true, true, true]]], &device);
    let weights = masked_softmax(scores, Some(mask));
    out.line(format!(
        "{backend} ({}) weights: {}",
        args.device,
        weights.into_data()
    ))?;
    out.finish()
}
