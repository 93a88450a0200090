//! Types from the Kbuild-preprocessed unit (placeholder, filled in below).
