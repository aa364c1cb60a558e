//! `TensorData`: storage plus the layout of a view of it, the data part of a tensor without
//! autograd. It sits below `Tensor` so that the kernels, which read and write buffers through
//! layouts, need nothing of the graph.

use crate::layout::Layout;
use crate::storage::Storage;
use std::sync::Arc;

/// Storage plus the layout of a view of it: the data part of a tensor, without autograd.
#[derive(Clone, Debug)]
pub struct TensorData {
    /// The shared buffer.
    pub storage: Arc<Storage>,
    /// How this view's elements sit in the buffer.
    pub layout: Layout,
}

impl TensorData {
    /// Bytes of this view's elements.
    pub fn nbytes(&self) -> usize {
        self.layout.numel() * self.storage.dtype().size()
    }
}
