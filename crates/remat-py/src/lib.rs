//! PyO3 bindings (filled in next).
