//! What this build can really run on: for each backend, compiled in or not, and whether its
//! default device opens — a wgpu adapter found, libtorch loaded — with the reason when not.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

use burn::tensor::{Device, Tensor};

use crate::backend::{Backend, BackendError};
use crate::spec::DeviceSpec;

/// One row of `attnzoo backends`.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The backend probed.
    pub backend: Backend,
    /// Whether its cargo feature is on in this build.
    pub compiled: bool,
    /// The opened default device, when it computes.
    pub device: Option<Device>,
    /// A description of that device (adapter name for wgpu/cuda).
    pub description: String,
    /// Why it is not usable, when it is not.
    pub reason: Option<String>,
}

impl Probe {
    /// Whether the backend's default device opened and computed.
    pub fn usable(&self) -> bool {
        self.device.is_some()
    }
}

/// Probes one backend's default device. The answer is cached: opening a GPU is slow and a
/// failed driver initialisation is not retried within a process.
pub fn probe(backend: Backend) -> Probe {
    static CACHE: OnceLock<Mutex<Vec<Probe>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(Vec::new()));
    let mut cache = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = cache.iter().find(|probe| probe.backend == backend) {
        return found.clone();
    }
    let probe = probe_uncached(backend);
    cache.push(probe.clone());
    probe
}

/// Probes every backend attnzoo knows, in [`Backend::ALL`] order.
pub fn probe_all() -> Vec<Probe> {
    Backend::ALL.into_iter().map(probe).collect()
}

fn probe_uncached(backend: Backend) -> Probe {
    match backend.open(DeviceSpec::Default) {
        Ok(device) => Probe {
            backend,
            compiled: true,
            description: describe(backend, &device),
            device: Some(device),
            reason: None,
        },
        Err(error) => Probe {
            backend,
            compiled: !matches!(error, BackendError::NotCompiled(_)),
            device: None,
            description: String::new(),
            reason: Some(match error {
                BackendError::NotCompiled(backend) => {
                    format!("not compiled in (cargo feature `{}`)", backend.name())
                }
                BackendError::Unavailable { reason, .. } => reason,
                other => other.to_string(),
            }),
        },
    }
}

#[allow(deprecated)] // burn-tch is deprecated in Burn 0.22 but still supported.
fn describe(backend: Backend, device: &Device) -> String {
    #[cfg(any(feature = "wgpu", feature = "cuda"))]
    if let Some(identity) = device.identity() {
        return format!("{} ({})", identity.name, identity.fingerprint);
    }
    #[cfg(feature = "tch")]
    if backend == Backend::Tch && *device == Device::libtorch() {
        return "CPU (LibTorch)".to_string();
    }
    match backend {
        Backend::Ndarray => "CPU (burn-ndarray)".to_string(),
        Backend::Flex => "CPU (burn-flex)".to_string(),
        Backend::Tch => format!("LibTorch {device:?}"),
        Backend::Wgpu | Backend::Cuda => format!("{device:?}"),
    }
}

/// Runs a tiny computation on `device`. Burn reports a device that cannot open (no wgpu
/// adapter, no CUDA driver) by panicking; that panic is caught here and becomes the reason.
pub(crate) fn try_open(device: &Device) -> Result<(), String> {
    static QUIET_PANICS: Mutex<()> = Mutex::new(());
    let _one_probe_at_a_time = QUIET_PANICS.lock().unwrap_or_else(|p| p.into_inner());
    let previous_hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        Tensor::<1>::from_floats([1.0, 2.0], device)
            .sum()
            .into_scalar::<f32>()
    }));
    panic::set_hook(previous_hook);
    match outcome {
        Ok(3.0) => Ok(()),
        Ok(sum) => Err(format!("a test sum gave {sum} instead of 3")),
        Err(payload) => Err(panic_message(payload.as_ref())),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the backend panicked while opening the device".to_string());
    // The first line of the cause: a LibTorch error arrives as the `Debug` of `Torch("why\n
    // Exception raised from … frame #0 …")` inside an `unwrap` message, its newlines escaped.
    let first = text.lines().next().unwrap_or_default();
    let first = first.split("\\n").next().unwrap_or_default();
    let first = first
        .trim_start_matches("called `Result::unwrap()` on an `Err` value: ")
        .trim_start_matches("Torch(\"")
        .trim_end_matches("\")");
    first.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn a_panic_becomes_the_first_line_of_its_cause() {
        let torch = "called `Result::unwrap()` on an `Err` value: Torch(\"PyTorch is not linked \
                     with support for mps devices\\nException raised from getDeviceGuardImpl\\n\
                     frame #0: c10::Error::Error\")";
        assert_eq!(
            panic_message(&torch.to_string()),
            "PyTorch is not linked with support for mps devices"
        );
        assert_eq!(panic_message(&"no adapter\nmore"), "no adapter");
        assert_eq!(
            panic_message(&5_u8),
            "the backend panicked while opening the device"
        );
    }
}
