//! The cross-backend test harness: one list of every usable device, so a numeric test is
//! written once and runs on each.
//!
//! `ATTNZOO_REQUIRE_BACKENDS=ndarray,wgpu,tch` turns a listed backend that is not usable into a
//! test failure instead of a skip (CI sets it).

use std::io::Write;
use std::sync::OnceLock;

use burn::tensor::Device;

use crate::backend::Backend;
use crate::probe::probe;

/// A usable backend and its opened default device.
#[derive(Clone, Debug)]
pub struct TestDevice {
    /// The backend.
    pub backend: Backend,
    /// Its default device, already known to compute.
    pub device: Device,
}

/// Every usable backend's default device, in [`Backend::ALL`] order.
///
/// Prints once per test binary, past the test harness's output capture, which backends run
/// and why the others are skipped.
///
/// # Panics
/// When `ATTNZOO_REQUIRE_BACKENDS` names a backend that is unknown or not usable here.
pub fn test_devices() -> Vec<TestDevice> {
    static DEVICES: OnceLock<Result<Vec<TestDevice>, String>> = OnceLock::new();
    DEVICES
        .get_or_init(collect)
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

fn collect() -> Result<Vec<TestDevice>, String> {
    let required = required_backends()?;
    let mut devices = Vec::new();
    let mut skipped = Vec::new();
    let mut missing = Vec::new();
    for backend in Backend::ALL {
        let probe = probe(backend);
        match (probe.device, probe.reason) {
            (Some(device), _) => devices.push(TestDevice { backend, device }),
            (None, reason) => {
                let reason = reason.unwrap_or_default();
                if required.contains(&backend) {
                    missing.push(format!("{backend}: {reason}"));
                }
                skipped.push(format!("{backend} ({reason})"));
            }
        }
    }
    let names: Vec<&str> = devices.iter().map(|d| d.backend.name()).collect();
    let _ = writeln!(
        std::io::stderr(),
        "attnzoo test backends: running on [{}]; skipped: [{}]",
        names.join(", "),
        skipped.join("; ")
    );
    if !missing.is_empty() {
        return Err(format!(
            "ATTNZOO_REQUIRE_BACKENDS requires backends that are not usable: {}",
            missing.join("; ")
        ));
    }
    Ok(devices)
}

fn required_backends() -> Result<Vec<Backend>, String> {
    let Ok(list) = std::env::var("ATTNZOO_REQUIRE_BACKENDS") else {
        return Ok(Vec::new());
    };
    list.split(',')
        .filter(|name| !name.trim().is_empty())
        .map(|name| {
            Backend::from_name(name).ok_or_else(|| {
                format!(
                    "ATTNZOO_REQUIRE_BACKENDS names an unknown backend `{}`",
                    name.trim()
                )
            })
        })
        .collect()
}
