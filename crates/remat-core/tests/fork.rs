//! A process forked after the engine ran parallel kernels can run parallel kernels itself
//! (the child rebuilds the engine's thread pool instead of waiting for the parent's workers,
//! which do not exist in the child). A child that hangs is killed after a generous wait and
//! reported as a failure.
#![allow(clippy::unwrap_used)]

use remat_core::{ops, DType, Device};
use std::time::{Duration, Instant};

/// A sum and an elementwise op big enough to run on the thread pool; the sum's value.
fn parallel_work() -> f64 {
    let x = ops::ones(&[1 << 20], DType::F32, Device::Cpu).unwrap();
    let y = ops::mul(&x, &x).unwrap();
    let a = ops::ones(&[256, 256], DType::F32, Device::Cpu).unwrap();
    let p = ops::matmul(&a, &a).unwrap();
    ops::sum(&y, None, false).unwrap().item().unwrap() + p.to_vec::<f32>()[0] as f64
}

#[test]
fn a_forked_child_runs_parallel_kernels() {
    assert_eq!(parallel_work(), (1 << 20) as f64 + 256.0);
    // SAFETY: the child only runs engine code and leaves with `_exit`, never returning into
    // the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok =
            std::panic::catch_unwind(parallel_work).is_ok_and(|v| v == (1 << 20) as f64 + 256.0);
        // SAFETY: ends the child without running the parent's destructors or harness.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let start = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            // SAFETY: our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child hung in its first parallel kernel");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the forked child failed (status {status})"
    );
    // The parent's pool still works.
    assert_eq!(parallel_work(), (1 << 20) as f64 + 256.0);
}
