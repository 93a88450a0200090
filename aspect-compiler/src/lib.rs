//! fgft-aspect: KLAS aspects: pointcuts, join points, woven hooks and C trampolines.
