//! A counter-based random generator: every draw is a pure function of (seed, counter), so a
//! recompute that restores the counter replays exactly the same numbers, and kernels can fill
//! large buffers in parallel.
//!
//! A checkpoint's recompute replays its draws from its own stream: a thread-local override
//! of the generator state, active only while that thread recomputes. The global generator is
//! never rewound, so draws made meanwhile by other threads neither shift a replayed mask nor
//! repeat numbers already handed out.

use parking_lot::Mutex;
use std::cell::Cell;

/// A position in the random stream: the seed and the next unused counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngState {
    /// The seed set by `manual_seed`.
    pub seed: u64,
    /// The next counter value to hand out.
    pub offset: u64,
}

static GLOBAL: Mutex<RngState> = Mutex::new(RngState {
    seed: 0x5eed_2026,
    offset: 0,
});

thread_local! {
    /// This thread's replay stream, while it recomputes a checkpoint.
    static REPLAY: Cell<Option<RngState>> = const { Cell::new(None) };
}

/// Seed every random source (randn, rand, dropout, initialisation). During a replay (a
/// function that seeds itself being recomputed) it seeds the replay stream instead.
pub fn manual_seed(seed: u64) {
    set_state(RngState { seed, offset: 0 });
}

/// The current state of this thread's stream: the replay stream during a recompute, else
/// the global generator (checkpoint segments save it to replay their draws).
pub fn get_state() -> RngState {
    REPLAY.get().unwrap_or_else(|| *GLOBAL.lock())
}

/// Restore a state saved with `get_state` (into the replay stream during a replay).
pub fn set_state(state: RngState) {
    if REPLAY.get().is_some() {
        REPLAY.set(Some(state));
    } else {
        *GLOBAL.lock() = state;
    }
}

/// Reserve `n` counters of this thread's stream and return the key of the first.
pub fn reserve(n: u64) -> RngState {
    if let Some(key) = REPLAY.get() {
        REPLAY.set(Some(RngState {
            offset: key.offset.wrapping_add(n),
            ..key
        }));
        return key;
    }
    let mut g = GLOBAL.lock();
    let key = *g;
    g.offset = g.offset.wrapping_add(n);
    key
}

/// Until the guard drops, this thread draws from a private stream starting at `state`; the
/// global generator is left alone. Nests (the previous stream comes back on drop).
pub fn replay(state: RngState) -> ReplayGuard {
    ReplayGuard(REPLAY.replace(Some(state)))
}

/// Ends a [`replay`] when dropped.
pub struct ReplayGuard(Option<RngState>);

impl Drop for ReplayGuard {
    fn drop(&mut self) {
        REPLAY.set(self.0);
    }
}

#[inline(always)]
fn mix(mut z: u64) -> u64 {
    // SplitMix64 finaliser: a strong 64-bit bijection.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64 random bits for counter `i` under `key`.
#[inline(always)]
pub fn bits(key: RngState, i: u64) -> u64 {
    mix(mix(key.seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(key.offset.wrapping_add(i)))
}

/// A uniform float in [0, 1) for counter `i`.
#[inline(always)]
pub fn uniform(key: RngState, i: u64) -> f64 {
    (bits(key, i) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A standard normal for counter `i` (Box-Muller over two derived uniforms).
#[inline(always)]
pub fn normal(key: RngState, i: u64) -> f64 {
    let b = bits(key, i);
    let u1 = ((b >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
    let u2 = (mix(b) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_replay_from_a_saved_state() {
        let k = RngState {
            seed: 7,
            offset: 100,
        };
        assert_eq!(uniform(k, 3), uniform(k, 3));
        assert_ne!(uniform(k, 3), uniform(k, 4));
        let mean: f64 = (0..10_000).map(|i| normal(k, i)).sum::<f64>() / 10_000.0;
        assert!(mean.abs() < 0.05);
    }

    #[test]
    fn a_replay_draws_from_its_own_stream_and_leaves_the_global_one_alone() {
        let start = get_state();
        let other = RngState {
            seed: 1,
            offset: 40,
        };
        {
            let _r = replay(other);
            assert_eq!(reserve(8), other);
            assert_eq!(get_state().offset, 48);
            {
                let _nested = replay(start);
                assert_eq!(reserve(1), start);
            }
            assert_eq!(get_state().offset, 48);
        }
        assert!(REPLAY.get().is_none());
    }
}

/// The seed of this thread's stream (the last `manual_seed`, or the default seed).
pub fn initial_seed() -> u64 {
    get_state().seed
}

/// A private random stream, as `torch.Generator`: ops run under [`Generator::run`] draw from
/// it instead of the global generator (which is left alone), and it advances by what they
/// drew, so a generator seeded the same way gives the same numbers whatever else runs.
#[derive(Debug)]
pub struct Generator {
    state: Mutex<RngState>,
}

impl Default for Generator {
    fn default() -> Self {
        Generator::new(0x5eed_2026)
    }
}

impl Generator {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator {
            state: Mutex::new(RngState { seed, offset: 0 }),
        }
    }

    /// Restart the stream from `seed`.
    pub fn manual_seed(&self, seed: u64) {
        *self.state.lock() = RngState { seed, offset: 0 };
    }

    /// The current position of the stream.
    pub fn state(&self) -> RngState {
        *self.state.lock()
    }

    /// Move the stream to a position saved with [`Generator::state`].
    pub fn set_state(&self, state: RngState) {
        *self.state.lock() = state;
    }

    /// Run `f` drawing from this generator, then keep the position it reached.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let mut state = self.state.lock();
        let guard = replay(*state);
        let out = f();
        *state = get_state();
        drop(guard);
        out
    }
}
