//! In-place ops on the CPU allocate no tensor storage: the byte counters (current and peak)
//! do not move, whatever the destination's layout or the operand (one test: the counters
//! are process-wide, so nothing else may run beside it in this binary).

#![allow(clippy::unwrap_used)]

use remat_core::ops::{self, IndexItem};
use remat_core::{no_grad, DType, Device, Tensor};

#[test]
fn in_place_ops_leave_the_byte_counters_alone() {
    let x = ops::randn(&[64, 32], DType::F32, Device::Cpu).unwrap();
    let y = ops::randn(&[64, 32], DType::F32, Device::Cpu).unwrap();
    let y64 = ops::randn(&[32], DType::F64, Device::Cpu).unwrap();
    let mask = Tensor::from_vec((0..64).map(|i| (i % 3 == 0) as u8).collect(), &[64, 1]).unwrap();
    let w = ops::randn(&[32, 32], DType::F32, Device::Cpu).unwrap();
    w.set_requires_grad(true).unwrap();
    let xt = ops::transpose(&x, 0, 1).unwrap();
    let row = ops::index(&x, &[IndexItem::Int(3)]).unwrap();
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    x.add_(&y, 0.5).unwrap();
    x.sub_(&row, 1.0).unwrap(); // overlaps the destination: copied into a plain buffer
    x.mul_(1.5).unwrap();
    x.div_(&y64).unwrap(); // mixed dtype, broadcast
    xt.clamp_(Some(-1.0), Some(1.0)).unwrap();
    x.masked_fill_(&mask, 0.25).unwrap(); // a bool mask: read as it is
    x.copy_(&y).unwrap();
    xt.fill_(2.0).unwrap();
    x.zero_().unwrap();
    xt.normal_(0.0, 1.0).unwrap();
    x.uniform_(-1.0, 1.0).unwrap();
    x.setitem(&[IndexItem::Int(0).into()], 3.0).unwrap();
    x.setitem(
        &[IndexItem::Ellipsis.into(), IndexItem::Int(1).into()],
        &ops::index(&y, &[IndexItem::Ellipsis, IndexItem::Int(2)]).unwrap(),
    )
    .unwrap();
    {
        let _g = no_grad();
        w.normal_(0.0, 0.02).unwrap();
        w.mul_(0.5).unwrap();
    }
    assert_eq!(remat_core::memory_allocated(Device::Cpu), base);
    assert_eq!(remat_core::max_memory_allocated(Device::Cpu), base);
    assert!(x.to_vec::<f32>().iter().all(|v| v.is_finite()));
}
