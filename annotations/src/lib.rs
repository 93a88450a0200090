//! fgft-annotations: Sidecar annotation format (TOML) and the fgft.h C header.
