//! Inline `FGFT_*` annotations (include/fgft.h), read from C source text.
