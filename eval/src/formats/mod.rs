//! Files on disk: [`files`] (atomic writes and checksums, shared by reports, caches and checkpoints) and the
//! versioned binary formats of cached artefacts: [`tree_io`], [`raptor_io`], [`vectors_io`].

pub mod files;
pub mod raptor_io;
pub mod tree_io;
pub mod vectors_io;
