//! Saved tensors and the version counter, as in PyTorch: every storage counts its in-place
//! writes (`Storage::version`), a saved tensor remembers the count when it was saved, and
//! reading it back for a backward (or a recompute) compares. A mismatch means the values a
//! backward rule would see are not the ones the forward used, so it is an `Error::Graph`
//! naming the op that saved the tensor, never a wrong gradient.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::fmt_shape;
use crate::tensor_data::TensorData;

/// A tensor's data together with its storage's version at the moment it was saved. While it
/// lives, the storage counts it (`Storage::saved_for_backward`), so NumPy views of memory a
/// graph needs are read-only.
#[derive(Debug)]
pub(crate) struct Saved {
    pub(crate) data: TensorData,
    pub(crate) version: u64,
}

impl Clone for Saved {
    fn clone(&self) -> Saved {
        Saved::at(&self.data, self.version)
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        self.data.storage.release_saved();
    }
}

impl Saved {
    /// Save `d` as it is now.
    pub(crate) fn new(d: &TensorData) -> Saved {
        Saved::at(d, d.storage.version())
    }

    /// Save `d`, which the saver read at `version` (possibly older than now: the check then
    /// fails at the first read, as it should).
    pub(crate) fn at(d: &TensorData, version: u64) -> Saved {
        d.storage.retain_saved();
        Saved {
            data: d.clone(),
            version,
        }
    }

    /// The data, unless something wrote into it since it was saved; `who` names the saver
    /// (an op, a checkpoint segment) in the error.
    pub(crate) fn get(&self, who: &str) -> Result<&TensorData> {
        check(&self.data, self.version, who)?;
        Ok(&self.data)
    }
}

/// `Ok` when `d`'s storage is still at `saved`, else the error of [`modified`].
pub(crate) fn check(d: &TensorData, saved: u64, who: &str) -> Result<()> {
    let now = d.storage.version();
    if now == saved {
        Ok(())
    } else {
        Err(modified(
            who,
            d.storage.dtype(),
            &d.layout.shape,
            saved,
            now,
        ))
    }
}

/// PyTorch's error for a saved tensor that was modified in place, naming who saved it, its
/// dtype, shape and both versions.
pub(crate) fn modified(who: &str, dtype: DType, shape: &[usize], saved: u64, now: u64) -> Error {
    Error::graph(
        "backward",
        format!(
            "one of the variables needed for gradient computation has been modified by an \
             inplace operation: {who} saved a {dtype} tensor of shape {} at version {saved}, \
             now at version {now}; use an out-of-place op, or modify a clone() instead",
            fmt_shape(shape)
        ),
    )
}
