//! DLPack: export and import on the CPU through the C structs themselves (the same code path
//! as CUDA but for the device pointer): zero-copy round trips of strided views in both ABIs,
//! the deleter run exactly once (on drop, on a refused import, after a read-only copy), and
//! the errors for what remat cannot view.
#![allow(clippy::unwrap_used)]

use remat_core::dlpack::{
    self, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor, Managed,
};
use remat_core::{DType, Error, Tensor};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

fn floats(n: usize, shape: &[usize]) -> Tensor {
    Tensor::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>(), shape).unwrap()
}

#[test]
fn a_strided_view_round_trips_without_a_copy_in_both_abis() {
    let base = floats(12, &[3, 4]);
    let view = base.transpose(0, 1).unwrap().narrow(0, 1, 2).unwrap(); // (2, 3), strided
    for versioned in [false, true] {
        let managed = dlpack::export(&view, versioned).unwrap();
        // SAFETY: a managed tensor just made by `export`.
        let back = unsafe { dlpack::import(managed) }.unwrap();
        assert_eq!(back.shape(), view.shape());
        assert_eq!(back.to_vec::<f32>(), view.to_vec::<f32>());
        assert_eq!(back.to_vec::<f32>(), vec![1.0, 5.0, 9.0, 2.0, 6.0, 10.0]);
        // The same memory: the import's first element is the view's.
        let elem = |t: &Tensor| unsafe { t.storage().as_ptr().add(t.layout().offset * 4) };
        assert_eq!(elem(&back), elem(&view));
    }
}

#[test]
fn export_describes_the_view_and_keeps_the_storage_alive() {
    let view = floats(6, &[2, 3]).narrow(1, 1, 2).unwrap();
    let Managed::Versioned(p) = dlpack::export(&view, true).unwrap() else {
        panic!("asked for the versioned ABI")
    };
    drop(view); // the managed tensor still holds the storage
                // SAFETY: `p` is a live managed tensor made by `export`; deleted once below.
    unsafe {
        let t = &(*p).dl_tensor;
        assert_eq!((*p).version, dlpack::VERSION);
        assert_eq!(
            t.device,
            DLDevice {
                device_type: dlpack::DEVICE_CPU,
                device_id: 0
            }
        );
        assert_eq!(
            t.dtype,
            DLDataType {
                code: 2,
                bits: 32,
                lanes: 1
            }
        );
        assert_eq!(std::slice::from_raw_parts(t.shape, 2), &[2, 2]);
        assert_eq!(std::slice::from_raw_parts(t.strides, 2), &[3, 1]);
        assert_eq!(t.byte_offset, 4);
        let first = (t.data as *const u8).add(t.byte_offset as usize) as *const f32;
        assert_eq!(*first, 1.0);
        Managed::Versioned(p).delete();
    }
}

#[test]
fn export_refuses_tensors_that_require_grad() {
    let t = floats(2, &[2]);
    t.set_requires_grad(true).unwrap();
    assert!(matches!(
        dlpack::export(&t, false),
        Err(Error::Graph { .. })
    ));
}

static DELETED: AtomicUsize = AtomicUsize::new(0);

/// A foreign producer's managed tensor over `data` (leaked; the deleter frees the box and
/// counts the call).
fn foreign(
    data: &mut [f64],
    shape: &'static [i64],
    strides: Option<&'static [i64]>,
    dtype: DLDataType,
    device_type: i32,
    read_only: bool,
) -> Managed {
    unsafe extern "C" fn deleter(p: *mut DLManagedTensorVersioned) {
        DELETED.fetch_add(1, Ordering::SeqCst);
        // SAFETY: made by `Box::into_raw` below.
        drop(unsafe { Box::from_raw(p) });
    }
    let t = DLTensor {
        data: data.as_mut_ptr() as *mut c_void,
        device: DLDevice {
            device_type,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype,
        shape: shape.as_ptr() as *mut i64,
        strides: strides.map_or(std::ptr::null_mut(), |s| s.as_ptr() as *mut i64),
        byte_offset: 0,
    };
    Managed::Versioned(Box::into_raw(Box::new(DLManagedTensorVersioned {
        version: dlpack::VERSION,
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(deleter),
        flags: if read_only { dlpack::FLAG_READ_ONLY } else { 0 },
        dl_tensor: t,
    })))
}

const F64: DLDataType = DLDataType {
    code: 2,
    bits: 64,
    lanes: 1,
};

// One test for everything that counts deleter calls (they share the counter).
#[test]
fn imports_view_foreign_memory_and_call_the_deleter_once() {
    let mut data = vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let start = DELETED.load(Ordering::SeqCst);

    // A shared, writable view (C-contiguous: null strides).
    let t = unsafe { dlpack::import(foreign(&mut data, &[2, 3], None, F64, 1, false)) }.unwrap();
    assert_eq!((t.shape().to_vec(), t.dtype()), (vec![2, 3], DType::F64));
    t.fill_(7.0).unwrap();
    assert_eq!(DELETED.load(Ordering::SeqCst), start);
    drop(t);
    assert_eq!(DELETED.load(Ordering::SeqCst), start + 1);
    assert!(data.iter().all(|&v| v == 7.0));

    // Strides: every other element of each row.
    data.copy_from_slice(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let t = unsafe { dlpack::import(foreign(&mut data, &[2, 2], Some(&[3, 2]), F64, 1, false)) }
        .unwrap();
    assert_eq!(t.to_vec::<f64>(), vec![0.0, 2.0, 3.0, 5.0]);
    drop(t);
    assert_eq!(DELETED.load(Ordering::SeqCst), start + 2);

    // Read-only memory is copied, and the producer released at once.
    let t = unsafe { dlpack::import(foreign(&mut data, &[6], None, F64, 1, true)) }.unwrap();
    assert_eq!(DELETED.load(Ordering::SeqCst), start + 3);
    t.fill_(1.0).unwrap();
    assert_eq!(data[0], 0.0);

    // Refused imports release the producer too, with the error naming what is wrong.
    let uint8 = DLDataType {
        code: 1,
        bits: 8,
        lanes: 1,
    };
    let refused = [
        (foreign(&mut data, &[6], None, uint8, 1, false), "uint8"),
        (
            foreign(&mut data, &[2, 3], Some(&[-3, 1]), F64, 1, false),
            "negative strides",
        ),
        (
            foreign(&mut data, &[6], None, F64, 8, false),
            "device (8, 0)",
        ),
    ];
    for (i, (managed, expected)) in refused.into_iter().enumerate() {
        let err = unsafe { dlpack::import(managed) }.unwrap_err();
        assert!(err.to_string().contains(expected), "{err}");
        assert_eq!(DELETED.load(Ordering::SeqCst), start + 4 + i);
    }
}

#[test]
fn dtypes_map_both_ways() {
    for dtype in DType::ALL {
        assert_eq!(
            dlpack::remat_dtype("t", dlpack::dl_dtype(dtype)).unwrap(),
            dtype
        );
    }
    let err = dlpack::remat_dtype(
        "t",
        DLDataType {
            code: 1,
            bits: 8,
            lanes: 1,
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::DType { .. }) && err.to_string().contains("uint8"));
}

#[test]
fn a_legacy_managed_tensor_imports() {
    let t = floats(4, &[4]);
    let Managed::Legacy(p) = dlpack::export(&t, false).unwrap() else {
        panic!("asked for the legacy ABI")
    };
    let p: *mut DLManagedTensor = p;
    let back = unsafe { dlpack::import(Managed::Legacy(p)) }.unwrap();
    assert_eq!(back.to_vec::<f32>(), vec![0.0, 1.0, 2.0, 3.0]);
}
