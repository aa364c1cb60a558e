//! Autocast (automatic mixed precision), as PyTorch's `torch.autocast`: inside a region, the
//! ops of PyTorch's lists run in a lower-precision float (matrix products, convolutions,
//! attention), in float32 (losses, and on CUDA the ops whose range or accumulation matter:
//! softmax, norms, exp/log/pow, sums), or in the widest float of their inputs (joins and
//! mixed-input ops), per device.
//!
//! The state is thread-local, like grad mode, and is consulted in one place: when an op runs
//! (`autograd::node::apply`), and at the entry of the composite ops that have a list entry of
//! their own ([`op_entry`]), so that their pieces are not cast again. Inside an op autocast
//! has cast for, autocast is suspended, as PyTorch's dispatcher excludes its key while the op
//! runs.
//!
//! The casts are ordinary differentiable `to_dtype` ops, so gradients flow back to float32
//! parameters in float32. They are not numbered for selective checkpoint policies (they run as
//! temporaries of the op they feed), so a cache hit or miss never changes the op numbering a
//! policy sees. The cast of a float32 leaf that requires grad (a parameter) is cached for the
//! outermost region, as PyTorch caches it; remat keys the cache by the parameter's storage
//! version too, so an in-place update inside the region casts again rather than reusing
//! stale values, and casts made under `no_grad` are not cached (their result has no graph).
//!
//! Checkpoint segments record [`state`] at their forward and recompute under it
//! ([`enter_state`]), whatever the state is at backward time.

pub use crate::autocast_lists::CastPolicy;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// One device's autocast setting: whether it is on, and the lower-precision dtype it casts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAutocast {
    /// Whether ops on this device are autocast.
    pub enabled: bool,
    /// The dtype of the lower-precision list (bfloat16 or float16).
    pub dtype: DType,
}

/// The whole autocast state of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutocastState {
    /// The CPU's setting (PyTorch's default dtype: bfloat16).
    pub cpu: DeviceAutocast,
    /// CUDA's setting (PyTorch's default dtype: float16).
    pub cuda: DeviceAutocast,
    /// Whether casts of parameters are cached for the outermost region.
    pub cache_enabled: bool,
}

impl Default for AutocastState {
    fn default() -> Self {
        AutocastState {
            cpu: DeviceAutocast {
                enabled: false,
                dtype: DType::BF16,
            },
            cuda: DeviceAutocast {
                enabled: false,
                dtype: DType::F16,
            },
            cache_enabled: true,
        }
    }
}

impl AutocastState {
    /// The setting of the device kind of `device`.
    pub fn device(&self, device: Device) -> DeviceAutocast {
        match device {
            Device::Cpu => self.cpu,
            Device::Cuda(_) => self.cuda,
        }
    }

    fn device_mut(&mut self, device: Device) -> &mut DeviceAutocast {
        match device {
            Device::Cpu => &mut self.cpu,
            Device::Cuda(_) => &mut self.cuda,
        }
    }

    /// Whether any device is autocast.
    pub fn any_enabled(&self) -> bool {
        self.cpu.enabled || self.cuda.enabled
    }
}

struct CachedCast {
    /// Keeps the source alive, so its address is not reused while the entry lives.
    _source: Tensor,
    version: u64,
    cast: Tensor,
}

thread_local! {
    static STATE: Cell<AutocastState> = Cell::new(AutocastState::default());
    static NESTING: Cell<usize> = const { Cell::new(0) };
    static SUSPENDED: Cell<usize> = const { Cell::new(0) };
    static CACHE: RefCell<HashMap<(usize, DType), CachedCast>> = RefCell::new(HashMap::new());
}

/// This thread's autocast state.
pub fn state() -> AutocastState {
    STATE.with(|s| s.get())
}

/// Whether autocast is on for the device kind of `device` on this thread.
pub fn is_enabled(device: Device) -> bool {
    state().device(device).enabled
}

/// The lower-precision dtype of the device kind of `device` on this thread.
pub fn dtype(device: Device) -> DType {
    state().device(device).dtype
}

/// Whether parameter casts are cached on this thread.
pub fn is_cache_enabled() -> bool {
    state().cache_enabled
}

/// Turn autocast on or off for a device kind, outside any region (PyTorch's
/// `torch.set_autocast_enabled`).
pub fn set_enabled(device: Device, enabled: bool) {
    STATE.with(|s| {
        let mut st = s.get();
        st.device_mut(device).enabled = enabled;
        s.set(st);
    });
}

/// Set a device kind's lower-precision dtype (PyTorch's `torch.set_autocast_dtype`).
pub fn set_dtype(device: Device, dtype: DType) -> Result<()> {
    check_dtype(device, dtype)?;
    STATE.with(|s| {
        let mut st = s.get();
        st.device_mut(device).dtype = dtype;
        s.set(st);
    });
    Ok(())
}

/// Turn the parameter-cast cache on or off (PyTorch's `torch.set_autocast_cache_enabled`).
pub fn set_cache_enabled(enabled: bool) {
    STATE.with(|s| {
        let mut st = s.get();
        st.cache_enabled = enabled;
        s.set(st);
    });
}

/// Drop every cached parameter cast of this thread.
pub fn clear_cache() {
    let dropped = CACHE.with(|c| std::mem::take(&mut *c.borrow_mut()));
    drop(dropped);
}

/// Error unless `dtype` is one autocast can cast to on `device` (bfloat16 or float16).
pub fn check_dtype(device: Device, dtype: DType) -> Result<()> {
    if dtype.is_half() {
        return Ok(());
    }
    let kind = match device {
        Device::Cpu => "CPU",
        Device::Cuda(_) => "CUDA",
    };
    Err(Error::dtype(
        "autocast",
        format!(
            "{kind} autocast only supports bfloat16 and float16 as its dtype, got {dtype}; \
             float32 and float64 are what runs without autocast"
        ),
    ))
}

/// Restores the previous autocast state when dropped, and clears the cache when it ends the
/// outermost region.
pub struct AutocastGuard {
    prev: AutocastState,
    prev_suspended: usize,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        let outermost = NESTING.with(|n| {
            let v = n.get().saturating_sub(1);
            n.set(v);
            v == 0
        });
        if outermost {
            // try_with: a guard may drop while the thread's locals are torn down.
            let dropped = CACHE.try_with(|c| std::mem::take(&mut *c.borrow_mut()));
            drop(dropped);
        }
        let _ = STATE.try_with(|s| s.set(self.prev));
        let _ = SUSPENDED.try_with(|s| s.set(self.prev_suspended));
    }
}

/// Enter a region with the whole state `st` (a checkpoint's recompute enters the state of
/// its forward, from inside a backward that suspends autocast): the previous state comes
/// back when the guard drops.
pub fn enter_state(st: AutocastState) -> AutocastGuard {
    NESTING.with(|n| n.set(n.get() + 1));
    AutocastGuard {
        prev: STATE.with(|s| s.replace(st)),
        prev_suspended: SUSPENDED.with(|s| s.replace(0)),
    }
}

/// Suspend autocast while a backward pass runs: backward ops compute in the dtypes the
/// forward chose (as PyTorch documents), whatever the state at backward time; a
/// checkpoint's recompute inside re-enters the state of its forward.
pub fn suspend_for_backward() -> Suspended {
    suspend()
}

/// Enter an autocast region for one device kind, as `with torch.autocast(...)` does: on or
/// off, with `dtype` (None: the device's current one) and the cache setting (None: the
/// current one). The dtype must be bfloat16 or float16 when the region is on.
pub fn enter(
    device: Device,
    dtype: Option<DType>,
    enabled: bool,
    cache_enabled: Option<bool>,
) -> Result<AutocastGuard> {
    let mut st = state();
    if let Some(d) = dtype {
        if enabled {
            check_dtype(device, d)?;
        }
        if d.is_half() {
            st.device_mut(device).dtype = d;
        }
    }
    st.device_mut(device).enabled = enabled;
    if let Some(c) = cache_enabled {
        st.cache_enabled = c;
    }
    Ok(enter_state(st))
}

/// Suspends autocast while an op it cast for runs (its pieces are not cast again).
pub struct Suspended(());

impl Drop for Suspended {
    fn drop(&mut self) {
        let _ = SUSPENDED.try_with(|s| s.set(s.get().saturating_sub(1)));
    }
}

fn suspend() -> Suspended {
    SUSPENDED.with(|s| s.set(s.get() + 1));
    Suspended(())
}

/// An op's inputs as autocast casts them, and autocast suspended while the op runs.
pub struct CastInputs {
    /// The inputs, cast where the op's list says.
    pub inputs: Vec<Tensor>,
    _suspended: Suspended,
}

impl CastInputs {
    /// The cast inputs as references, for an op's entry.
    pub fn refs(&self) -> Vec<&Tensor> {
        self.inputs.iter().collect()
    }
}

/// At the entry of op `name` on `inputs`: None when autocast does not apply (off for the
/// op's device, suspended inside another autocast op, or `name` in no list); otherwise the
/// inputs cast by the op's list, with autocast suspended until the result drops.
pub fn op_entry(name: &str, inputs: &[&Tensor]) -> Result<Option<CastInputs>> {
    let st = state();
    if !st.any_enabled() || SUSPENDED.with(|s| s.get()) > 0 {
        return Ok(None);
    }
    let device = inputs
        .iter()
        .map(|t| t.device())
        .find(|d| *d != Device::Cpu)
        .unwrap_or(Device::Cpu);
    let setting = st.device(device);
    if !setting.enabled {
        return Ok(None);
    }
    let Some(policy) = policy(device, name) else {
        return Ok(None);
    };
    let kind = |d: Device| std::mem::discriminant(&d);
    // PyTorch's eligibility: floating-point tensors of the op's device kind, never float64.
    let eligible = |t: &Tensor| {
        t.dtype().is_float() && t.dtype() != DType::F64 && kind(t.device()) == kind(device)
    };
    let target = match policy {
        CastPolicy::LowerPrecision => setting.dtype,
        CastPolicy::Float32 => DType::F32,
        CastPolicy::Promote => inputs
            .iter()
            .filter(|t| eligible(t))
            .fold(setting.dtype, |acc, t| acc.promote(t.dtype())),
    };
    let suspended = suspend();
    let cast = inputs
        .iter()
        .map(|t| {
            if eligible(t) && t.dtype() != target {
                cast_cached(t, target, setting.dtype, st.cache_enabled)
            } else {
                Ok((*t).clone())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(CastInputs {
        inputs: cast,
        _suspended: suspended,
    }))
}

/// `t` cast to `to`: a differentiable cast, run as a temporary of the op it feeds (not
/// numbered for selective policies), and cached when `t` is a parameter cast to the
/// lower-precision dtype.
fn cast_cached(t: &Tensor, to: DType, lower: DType, cache_enabled: bool) -> Result<Tensor> {
    let cacheable = cache_enabled
        && to == lower
        && t.dtype() == DType::F32
        && t.requires_grad()
        && t.is_leaf()
        && crate::ops::inplace::recorded::view_root(t).is_none();
    let key = (std::sync::Arc::as_ptr(&t.0) as *const () as usize, to);
    if cacheable {
        let hit = CACHE.with(|c| {
            c.borrow()
                .get(&key)
                .filter(|e| e.version == t.version() && !graph_released(&e.cast))
                .map(|e| e.cast.clone())
        });
        if let Some(cast) = hit {
            return Ok(cast);
        }
    }
    let cast = {
        let _temporary = crate::checkpoint::context::OpForward::enter();
        crate::ops::to_dtype(t, to)?
    };
    // A cast made without grad has no graph: a later use that needs one casts again.
    if cacheable && crate::grad_mode::is_grad_enabled() {
        CACHE.with(|c| {
            c.borrow_mut().insert(
                key,
                CachedCast {
                    _source: t.clone(),
                    version: t.version(),
                    cast: cast.clone(),
                },
            )
        });
    }
    Ok(cast)
}

/// Whether a backward without `retain_graph` already went through the cast's node (a
/// planner measuring layers inside the region does that): a new use must cast again.
fn graph_released(cast: &Tensor) -> bool {
    cast.grad_fn().is_some_and(|n| n.saved.lock().is_none())
}

/// The list op `name` is in on `device`, if any: PyTorch's autocast lists for the CPU and for
/// CUDA, by remat's op names.
pub fn policy(device: Device, name: &str) -> Option<CastPolicy> {
    let lists = match device {
        Device::Cpu => &crate::autocast_lists::CPU,
        Device::Cuda(_) => &crate::autocast_lists::CUDA,
    };
    lists.policy(name)
}

/// At the entry of a composite op `name` (one built from other ops, with a list entry of its
/// own, as PyTorch's `scaled_dot_product_attention` or `group_norm`): run `body` on the
/// tensor arguments (None for an absent optional one) cast by `name`'s list, with autocast
/// suspended inside, so the pieces are not cast again; or on the arguments as they are
/// when autocast does not apply.
pub fn composite<const N: usize, R>(
    name: &str,
    args: [Option<&Tensor>; N],
    body: impl FnOnce([Option<&Tensor>; N]) -> Result<R>,
) -> Result<R> {
    let present: Vec<&Tensor> = args.iter().flatten().copied().collect();
    match op_entry(name, &present)? {
        None => body(args),
        Some(cast) => {
            let mut it = cast.inputs.iter();
            body(args.map(|a| a.and_then(|_| it.next())))
        }
    }
}
