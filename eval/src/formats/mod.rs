//! The versioned binary formats of cached artefacts: [`tree_io`], [`raptor_io`], [`vectors_io`] (written
//! and read back through arbor-files' atomic writes and checksums).

pub mod raptor_io;
pub mod tree_io;
pub mod vectors_io;
