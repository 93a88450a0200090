//! fgft-stubs: Marshaling, demarshaling and object-tracking code for isolated entry points.
