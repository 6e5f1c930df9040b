mod base;
mod conversion;
mod view;

pub use base::*;
pub use view::*;
