//! Device specs as users type them: `cpu`, `gpu`, `gpu:1`, `discrete`, `integrated:0`,
//! `virtual`, `cuda:0`, `mps`, `default`.

use std::fmt;
use std::str::FromStr;

/// Which device of a backend to open; which specs a backend accepts is up to the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DeviceSpec {
    /// The backend's own default device.
    #[default]
    Default,
    /// The CPU (for wgpu: a CPU adapter such as lavapipe).
    Cpu,
    /// A GPU: `gpu` is the backend's best GPU, `gpu:N` the N-th (discrete GPU N for wgpu).
    Gpu(Option<usize>),
    /// The N-th discrete GPU (wgpu).
    Discrete(usize),
    /// The N-th integrated GPU (wgpu).
    Integrated(usize),
    /// The N-th virtual GPU (wgpu).
    Virtual(usize),
    /// CUDA device N (cuda, tch).
    Cuda(usize),
    /// Apple's Metal Performance Shaders (tch).
    Mps,
}

/// The accepted spellings, for error messages.
pub const DEVICE_SPEC_FORMS: &str =
    "default, cpu, gpu[:N], discrete[:N], integrated[:N], virtual[:N], cuda[:N], mps";

impl FromStr for DeviceSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.trim().to_ascii_lowercase();
        let (name, index) = match lower.split_once(':') {
            Some((name, index)) => {
                let index = index.parse::<usize>().map_err(|_| {
                    format!("device `{text}`: `{index}` is not a device index (expected e.g. `{name}:0`)")
                })?;
                (name, Some(index))
            }
            None => (lower.as_str(), None),
        };
        let index_or_zero = index.unwrap_or(0);
        let spec = match (name, index) {
            ("default", None) => DeviceSpec::Default,
            ("cpu", None) => DeviceSpec::Cpu,
            ("gpu", _) => DeviceSpec::Gpu(index),
            ("discrete", _) => DeviceSpec::Discrete(index_or_zero),
            ("integrated", _) => DeviceSpec::Integrated(index_or_zero),
            ("virtual", _) => DeviceSpec::Virtual(index_or_zero),
            ("cuda", _) => DeviceSpec::Cuda(index_or_zero),
            ("mps", None) => DeviceSpec::Mps,
            _ => {
                return Err(format!(
                    "unknown device `{text}`: expected one of {DEVICE_SPEC_FORMS}"
                ))
            }
        };
        Ok(spec)
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Default => write!(f, "default"),
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Gpu(None) => write!(f, "gpu"),
            DeviceSpec::Gpu(Some(index)) => write!(f, "gpu:{index}"),
            DeviceSpec::Discrete(index) => write!(f, "discrete:{index}"),
            DeviceSpec::Integrated(index) => write!(f, "integrated:{index}"),
            DeviceSpec::Virtual(index) => write!(f, "virtual:{index}"),
            DeviceSpec::Cuda(index) => write!(f, "cuda:{index}"),
            DeviceSpec::Mps => write!(f, "mps"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_prints_it_back() {
        for (text, spec) in [
            ("default", DeviceSpec::Default),
            ("CPU", DeviceSpec::Cpu),
            ("gpu", DeviceSpec::Gpu(None)),
            ("gpu:2", DeviceSpec::Gpu(Some(2))),
            ("discrete", DeviceSpec::Discrete(0)),
            ("integrated:1", DeviceSpec::Integrated(1)),
            ("virtual:0", DeviceSpec::Virtual(0)),
            ("cuda:3", DeviceSpec::Cuda(3)),
            ("mps", DeviceSpec::Mps),
        ] {
            assert_eq!(text.parse::<DeviceSpec>(), Ok(spec), "{text}");
            assert_eq!(spec.to_string().parse::<DeviceSpec>(), Ok(spec));
        }
    }

    #[test]
    fn rejects_unknown_names_and_bad_indices_with_the_text() {
        let error = "tpu".parse::<DeviceSpec>().unwrap_err();
        assert!(
            error.contains("`tpu`") && error.contains("cuda[:N]"),
            "{error}"
        );
        let error = "cuda:x".parse::<DeviceSpec>().unwrap_err();
        assert!(error.contains("`x`"), "{error}");
        assert!("cpu:1".parse::<DeviceSpec>().is_err());
    }
}
