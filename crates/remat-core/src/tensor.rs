//! `Tensor`: a cheap, cloneable handle (`Arc`) to storage + layout + autograd state.
//!
//! Graph nodes never hold `Tensor`s of their inputs: they hold edges to other nodes and
//! saved-tensor slots. That is what lets checkpointing free activations.

use crate::autograd::node::{Creation, Node};
use crate::checkpoint::recipe::Recipe;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Layout};
use crate::storage::Storage;
pub use crate::tensor_data::TensorData;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Mutable per-tensor autograd state.
#[derive(Default)]
pub(crate) struct TensorState {
    /// Accumulated gradient (leaves).
    pub(crate) grad: Option<Tensor>,
    /// Whether the engine made `grad` (then backward may add into it in place, the optimizer
    /// fast path); false for a gradient the user assigned, which the engine never writes
    /// into (it replaces it with `old + new` instead, as PyTorch does).
    pub(crate) grad_owned: bool,
    /// The leaf's gradient accumulator node, shared by every graph that uses the leaf.
    pub(crate) accumulator: Weak<Node>,
    /// The op and input data that produced this tensor, so `checkpoint(x)` can replay it.
    pub(crate) creation: Option<Arc<Creation>>,
    /// Set on checkpointed tensors: consumers save this recipe instead of the data.
    pub(crate) recipe: Option<Arc<Recipe>>,
    /// Gradient hooks of a leaf (a non-leaf's live on its grad_fn node).
    pub(crate) hooks: crate::autograd::hooks::HookList,
    /// Hooks run with a leaf after backward accumulated into its `.grad`, with their ids.
    pub(crate) post_accumulate_hooks: Vec<(u64, crate::autograd::hooks::PostAccumulateHook)>,
    /// Whether `retain_grad` was called (non-leaves).
    pub(crate) retains_grad: bool,
    /// The evictable cell of this tensor's storage (made under a memory limit).
    pub(crate) dtr: Option<crate::dtr::CellRef>,
    /// The tensor whose storage this view shares (the root of a chain of views, made by a
    /// view op): an in-place write recorded through the view rebases it, and the view's
    /// graph is regenerated from it after a recorded write through another view.
    pub(crate) view_base: Option<Tensor>,
}

/// The shared part of a tensor.
pub(crate) struct TensorImpl {
    pub(crate) data: TensorData,
    pub(crate) requires_grad: AtomicBool,
    /// The node that made this tensor; replaced when an in-place write is recorded (the
    /// tensor is rebased onto the write's node, as PyTorch does).
    pub(crate) grad_fn: RwLock<Option<Arc<Node>>>,
    /// The storage's count of recorded in-place writes when `grad_fn` was last set: a
    /// different count means another tensor sharing the storage was written through the
    /// graph since, so this one's graph is stale (see `ops::inplace::recorded`).
    pub(crate) graph_at: AtomicU64,
    pub(crate) state: Mutex<TensorState>,
}

/// An n-dimensional array of float32 or float64 on a device, with autograd.
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

impl Tensor {
    /// A tensor without autograd state over `data`.
    pub fn from_data(data: TensorData) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            graph_at: AtomicU64::new(data.storage.graph_writes()),
            data,
            requires_grad: AtomicBool::new(false),
            grad_fn: RwLock::new(None),
            state: Mutex::new(TensorState::default()),
        }))
    }

    pub(crate) fn with_grad_fn(
        data: TensorData,
        grad_fn: Option<Arc<Node>>,
        requires_grad: bool,
        state: TensorState,
    ) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            graph_at: AtomicU64::new(data.storage.graph_writes()),
            data,
            requires_grad: AtomicBool::new(requires_grad),
            grad_fn: RwLock::new(grad_fn),
            state: Mutex::new(state),
        }))
    }

    /// A contiguous tensor from a vector and a shape.
    pub fn from_vec<T: Scalar>(v: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let n: usize = shape.iter().product();
        if n != v.len() {
            return Err(Error::shape(
                "tensor",
                format!(
                    "{} elements cannot have shape {}",
                    v.len(),
                    fmt_shape(shape)
                ),
            ));
        }
        Ok(Tensor::from_data(TensorData {
            storage: Arc::new(Storage::from_vec(v)),
            layout: Layout::contiguous(shape),
        }))
    }

    /// A 0-d tensor holding `v` in `dtype` (converted as [`Scalar::from_f64`] does).
    pub fn scalar(v: f64, dtype: DType) -> Tensor {
        crate::dispatch_any!(dtype, T => Tensor::from_data(TensorData {
            storage: Arc::new(Storage::from_vec(vec![<T as Scalar>::from_f64(v)])),
            layout: Layout::contiguous(&[]),
        }))
    }

    /// A 0-d integer tensor holding `v` exactly (int64 values beyond 2^53 included).
    pub fn scalar_i64(v: i64, dtype: DType) -> Tensor {
        crate::dispatch_any!(dtype, T => Tensor::from_data(TensorData {
            storage: Arc::new(Storage::from_vec(vec![<T as Scalar>::from_i64(v)])),
            layout: Layout::contiguous(&[]),
        }))
    }

    /// The data part (storage + layout).
    pub fn data(&self) -> &TensorData {
        &self.0.data
    }
    /// The shared storage.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.data.storage
    }
    /// The layout of this view.
    pub fn layout(&self) -> &Layout {
        &self.0.data.layout
    }
    /// Extent of each axis.
    pub fn shape(&self) -> &[usize] {
        &self.0.data.layout.shape
    }
    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.0.data.layout.ndim()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.data.layout.numel()
    }
    /// Element type.
    pub fn dtype(&self) -> DType {
        self.0.data.storage.dtype()
    }
    /// Device of the storage.
    pub fn device(&self) -> Device {
        self.0.data.storage.device()
    }
    /// Bytes of this tensor's elements.
    pub fn nbytes(&self) -> usize {
        self.0.data.nbytes()
    }
    /// Whether the view is C-contiguous.
    pub fn is_contiguous(&self) -> bool {
        self.0.data.layout.is_contiguous()
    }
    /// Whether gradients flow to this tensor.
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed)
    }
    /// Whether this tensor was created by the user rather than by a recorded op.
    pub fn is_leaf(&self) -> bool {
        self.0.grad_fn.read().is_none()
    }
    /// The node that produced this tensor (or its last recorded in-place write), if any.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.0.grad_fn.read().clone()
    }
    /// Whether two handles are the same tensor.
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Turn gradient tracking on or off. Only leaves can change it, as in PyTorch.
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        if !self.is_leaf() {
            return Err(Error::graph(
                "requires_grad_",
                "you can only change requires_grad of leaf tensors; use detach() to get a \
                 leaf that does not require grad",
            ));
        }
        if flag && !self.dtype().is_float() {
            return Err(Error::dtype(
                "requires_grad_",
                format!(
                    "only floating point tensors can require gradients, got a {} tensor of \
                     shape {}",
                    self.dtype(),
                    fmt_shape(self.shape())
                ),
            ));
        }
        self.0.requires_grad.store(flag, Ordering::Relaxed);
        Ok(())
    }

    /// The accumulated gradient.
    pub fn grad(&self) -> Option<Tensor> {
        self.0.state.lock().grad.clone()
    }

    /// Replace the gradient (None clears it). The new gradient must match shape, dtype and
    /// device, and cannot be the tensor itself. Backward never writes into an assigned
    /// gradient: its first accumulation makes a new tensor (PyTorch's rule), so the caller's
    /// tensor, and any tensor sharing its storage, keeps its values.
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.same(self) {
                return Err(Error::graph(
                    "grad",
                    "assigned grad can't be the tensor itself",
                ));
            }
            if g.device() != self.device() {
                return Err(Error::device(
                    "grad",
                    format!(
                        "assigned grad is on {} but the tensor is on {}",
                        g.device(),
                        self.device()
                    ),
                ));
            }
            if g.shape() != self.shape() {
                return Err(Error::shape(
                    "grad",
                    format!(
                        "assigned grad has shape {} but the tensor has shape {}",
                        fmt_shape(g.shape()),
                        fmt_shape(self.shape())
                    ),
                ));
            }
            if g.dtype() != self.dtype() {
                return Err(Error::dtype(
                    "grad",
                    format!(
                        "assigned grad has dtype {} but the tensor has {}",
                        g.dtype(),
                        self.dtype()
                    ),
                ));
            }
        }
        let mut st = self.0.state.lock();
        st.grad = grad;
        st.grad_owned = false;
        Ok(())
    }

    /// A new leaf sharing this tensor's storage, cut from the graph.
    pub fn detach(&self) -> Tensor {
        Tensor::from_data(self.0.data.clone())
    }

    /// The recipe set on a checkpointed tensor.
    pub(crate) fn recipe(&self) -> Option<Arc<Recipe>> {
        self.0.state.lock().recipe.clone()
    }
    /// The evictable cell of this tensor's storage, if it was made under a memory limit.
    pub(crate) fn dtr_cell(&self) -> Option<crate::dtr::CellRef> {
        self.0.state.lock().dtr.clone()
    }
    pub(crate) fn creation(&self) -> Option<Arc<Creation>> {
        self.0.state.lock().creation.clone()
    }
    /// Forget how this tensor was made (segment outputs: their producers' inputs must not be
    /// kept alive by the output handle).
    pub(crate) fn clear_creation(&self) {
        self.0.state.lock().creation = None;
    }

    /// The elements in C order as a `Vec<T>`, copied to the host first for a device tensor
    /// (errors when that copy fails or memory runs out).
    pub fn try_to_vec<T: Scalar>(&self) -> Result<Vec<T>> {
        if self.device() != Device::Cpu {
            let host = crate::cuda::launch::transfer("to_vec", self, Device::Cpu)?;
            return host.try_to_vec::<T>();
        }
        crate::cpu::catch_oom("to_vec", || {
            Ok(
                crate::dispatch_any!(self.dtype(), S => crate::cpu::gather_cast::<S, T>(self.data())),
            )
        })
    }

    /// The elements in C order as a `Vec<T>` (copies; casts if the dtype differs). A device
    /// tensor whose copy to the host fails gives an empty vector, and so does a copy that
    /// runs out of memory; use [`Tensor::try_to_vec`] to see the error.
    pub fn to_vec<T: Scalar>(&self) -> Vec<T> {
        self.try_to_vec::<T>().unwrap_or_default()
    }

    /// The single element of a one-element tensor, as f64.
    pub fn item(&self) -> Result<f64> {
        if self.numel() != 1 {
            return Err(Error::shape(
                "item",
                format!(
                    "only one-element tensors can be converted to a scalar, got shape {}",
                    fmt_shape(self.shape())
                ),
            ));
        }
        Ok(self.try_to_vec::<f64>()?[0])
    }

    /// The single element of a one-element tensor, as i64 (exact for int64 tensors; floats
    /// truncate toward zero).
    pub fn item_i64(&self) -> Result<i64> {
        self.item()?;
        Ok(self.try_to_vec::<i64>()?[0])
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={}, dtype={}, device={}, requires_grad={})",
            fmt_shape(self.shape()),
            self.dtype(),
            self.device(),
            self.requires_grad()
        )
    }
}
