//! A counter-based random generator: every draw is a pure function of (seed, counter), so a
//! recompute that restores the counter replays exactly the same numbers, and kernels can fill
//! large buffers in parallel.
//!
//! A checkpoint's forward draws from the global generator exactly as the plain run does, and
//! records the key of every draw in its [`DrawLog`]. Its recompute plays that log back: each
//! draw gets the key the forward got, whatever other threads drew from the global generator
//! in between (they interleave with the forward's draws, so the forward's keys need not be
//! contiguous). The global generator is never rewound, so draws in other threads are never
//! repeated, and it advances by exactly what the plain run draws.

use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

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
    /// This thread's private stream: while it recomputes a checkpoint (draws past the end of
    /// the played-back log, `manual_seed` inside the function), a generator's `run`, or a
    /// measuring run.
    static REPLAY: Cell<Option<RngState>> = const { Cell::new(None) };
    /// The logs of the checkpoint forwards running on this thread, innermost last: every draw
    /// is recorded in each (an outer region's recompute re-runs the inner one's forward).
    static RECORDING: RefCell<Vec<Arc<DrawLog>>> = const { RefCell::new(Vec::new()) };
    /// The log being played back by this thread's recompute, and the next entry to hand out.
    static PLAYBACK: RefCell<Option<(Arc<DrawLog>, usize)>> = const { RefCell::new(None) };
}

/// The keys of the draws one checkpoint region's forward made, in order, so that its
/// recompute draws exactly the same numbers (see [`record`] and [`playback`]).
#[derive(Debug, Default)]
pub struct DrawLog {
    keys: Mutex<Vec<RngState>>,
}

impl DrawLog {
    /// An empty log.
    pub fn new() -> Arc<DrawLog> {
        Arc::new(DrawLog::default())
    }

    /// How many draws the forward made.
    pub fn len(&self) -> usize {
        self.keys.lock().len()
    }

    /// Whether the forward drew nothing.
    pub fn is_empty(&self) -> bool {
        self.keys.lock().is_empty()
    }
}

/// Until the guard drops, every draw this thread makes is also recorded in `log`. Nests.
pub fn record(log: Arc<DrawLog>) -> RecordGuard {
    RECORDING.with_borrow_mut(|r| r.push(log));
    RecordGuard(())
}

/// Ends a [`record`] when dropped.
pub struct RecordGuard(());

impl Drop for RecordGuard {
    fn drop(&mut self) {
        RECORDING.with_borrow_mut(|r| r.pop());
    }
}

/// Until the guard drops, this thread's draws get the keys of `log` in order, and once they
/// run out (a function that draws more when re-run) continue from `state` on a private
/// stream; `manual_seed` inside also seeds that private stream. The global generator is left
/// alone. Nests (the previous playback comes back on drop).
pub fn playback(log: Arc<DrawLog>, state: RngState) -> PlaybackGuard {
    let replay = replay(state);
    let previous = PLAYBACK.with_borrow_mut(|p| p.replace((log, 0)));
    PlaybackGuard {
        previous,
        _replay: replay,
    }
}

/// Ends a [`playback`] when dropped.
pub struct PlaybackGuard {
    previous: Option<(Arc<DrawLog>, usize)>,
    _replay: ReplayGuard,
}

impl Drop for PlaybackGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        PLAYBACK.with_borrow_mut(|p| *p = previous);
    }
}

/// The next key of the log being played back, if any is left.
fn next_played() -> Option<RngState> {
    PLAYBACK.with_borrow_mut(|p| {
        let (log, at) = p.as_mut()?;
        let key = *log.keys.lock().get(*at)?;
        *at += 1;
        Some(key)
    })
}

/// Record a key this thread drew in the logs of the forwards running on it.
fn note_drawn(key: RngState) {
    RECORDING.with_borrow(|r| {
        for log in r {
            log.keys.lock().push(key);
        }
    });
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

/// Reserve `n` counters of this thread's stream and return the key of the first. During a
/// recompute, the key the forward got for the same draw.
pub fn reserve(n: u64) -> RngState {
    let key = next_played().unwrap_or_else(|| draw(n));
    note_drawn(key);
    key
}

fn draw(n: u64) -> RngState {
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

    #[test]
    fn a_playback_hands_out_the_recorded_keys_then_continues_privately() {
        // The "generator" the forward draws from: a private stream, so that tests running in
        // parallel on the global one are not disturbed.
        let _source = replay(RngState { seed: 5, offset: 0 });
        let log = DrawLog::new();
        let recorded: Vec<RngState> = {
            let _r = record(log.clone());
            let a = reserve(4);
            // Another thread's draws between the two: the forward's keys are not contiguous.
            set_state(RngState {
                offset: a.offset + 100,
                ..a
            });
            vec![a, reserve(2)]
        };
        assert_eq!(log.len(), 2);
        assert_eq!(recorded[1].offset, recorded[0].offset + 100);
        let source = get_state();
        let fallback = RngState {
            seed: 99,
            offset: 0,
        };
        {
            let _p = playback(log.clone(), fallback);
            assert_eq!(reserve(4), recorded[0]);
            assert_eq!(reserve(2), recorded[1]);
            // Past the log: the private fallback stream.
            assert_eq!(reserve(3), fallback);
            assert_eq!(reserve(1).offset, 3);
        }
        assert_eq!(get_state(), source);
        assert!(PLAYBACK.with_borrow(|p| p.is_none()));
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
