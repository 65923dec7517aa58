//! The methods `arbor serve` answers with, built over the opened index (`Method::spec().serve`) and kept
//! for later requests, with bounded memory whatever clients send. Either named at start (`--methods`: built
//! before the server listens, any other refused) or built on a request's first use and kept in a cache of
//! `--method-cache` entries, the least recently used dropped first. The default method (`--method`) is
//! built at start and never dropped. A method is keyed by how an experiment file writes it (`ron`), so
//! `bm25`, `Bm25` and `Bm25(())` share one entry.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::library::query::Opened;
use crate::methods::{Method, Served};

pub struct Methods {
    opened: &'static Opened,
    /// Named at start: only those are served.
    fixed: bool,
    capacity: usize,
    kept: Mutex<Kept>,
    built: AtomicU64,
}

#[derive(Default)]
struct Kept {
    entries: Vec<Entry>,
    clock: u64,
}

struct Entry {
    name: String,
    served: Arc<Served<'static>>,
    /// Built at start: never dropped.
    pinned: bool,
    used: u64,
}

impl Methods {
    /// The default method and those `named` (if any), built now; `capacity` methods more kept when none
    /// is named.
    pub fn new(opened: &'static Opened, default: &Method, named: &[Method], capacity: usize) -> anyhow::Result<Methods> {
        let methods = Methods { opened, fixed: !named.is_empty(), capacity, kept: Mutex::default(), built: AtomicU64::new(0) };
        for method in std::iter::once(default).chain(named) {
            let name = ron::to_string(method)?;
            if methods.find(&name).is_none() {
                let served = Arc::new(methods.build(method)?);
                methods.kept().entries.push(Entry { name, served, pinned: true, used: 0 });
            }
        }
        Ok(methods)
    }

    /// The method as served, with its name as an experiment file writes it: kept, or built now (under
    /// `--methods`, a method not named is refused).
    pub fn get(&self, method: &Method) -> anyhow::Result<(String, Arc<Served<'static>>)> {
        let name = ron::to_string(method)?;
        if let Some(served) = self.find(&name) {
            return Ok((name, served));
        }
        anyhow::ensure!(!self.fixed, "method {name} is not served here: this server serves {} (arbor serve --methods)", self.names().join(", "));
        // Built outside the lock: other requests are answered meanwhile (two first uses at once build twice,
        // and one of the two is kept).
        let served = Arc::new(self.build(method)?);
        let mut kept = self.kept();
        kept.clock += 1;
        let used = kept.clock;
        if let Some(entry) = kept.entries.iter_mut().find(|e| e.name == name) {
            entry.used = used;
            return Ok((name, Arc::clone(&entry.served)));
        }
        kept.entries.push(Entry { name: name.clone(), served: Arc::clone(&served), pinned: false, used });
        while kept.entries.iter().filter(|e| !e.pinned).count() > self.capacity {
            let oldest = kept.entries.iter().enumerate().filter(|(_, e)| !e.pinned).min_by_key(|(_, e)| e.used).map(|(i, _)| i);
            match oldest {
                Some(i) => drop(kept.entries.remove(i)),
                None => break,
            }
        }
        Ok((name, served))
    }

    /// The methods kept now, pinned ones first.
    pub fn names(&self) -> Vec<String> {
        self.kept().entries.iter().map(|e| e.name.clone()).collect()
    }

    /// How many methods are kept now.
    pub fn kept_count(&self) -> usize {
        self.kept().entries.len()
    }

    /// Methods built since the start (those built at start included).
    pub fn built(&self) -> u64 {
        self.built.load(Ordering::Relaxed)
    }

    fn find(&self, name: &str) -> Option<Arc<Served<'static>>> {
        let mut kept = self.kept();
        kept.clock += 1;
        let used = kept.clock;
        let entry = kept.entries.iter_mut().find(|e| e.name == name)?;
        entry.used = used;
        Some(Arc::clone(&entry.served))
    }

    fn build(&self, method: &Method) -> anyhow::Result<Served<'static>> {
        let served = method.spec().serve(&self.opened.serving())?;
        self.built.fetch_add(1, Ordering::Relaxed);
        Ok(served)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
