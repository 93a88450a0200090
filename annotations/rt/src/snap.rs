//! Snapshot strategies for driver state, chosen per field by type at
//! compile time (autoref specialization; see `#[fgft::isolate]`):
//!
//! 1. the field's type is `Clone`: a copy is kept and assigned back on abort;
//! 2. it implements [`DeviceState`] (MMIO windows, DMA regions, interrupt
//!    handles): nothing is copied, the device checkpoint/restore covers it;
//! 3. otherwise: a compile error naming the field and the hints that fix
//!    it (`skip(field)`, `snapshot(field = "path::to::fn")`).
//!
//! Generated code calls `(&&&Field::<_, marker::name>::new(&self.name)).fgft_snapshot()`
//! and later `saved.put_back(&mut self.name)`.

use std::marker::PhantomData;

/// A field whose state lives in the device: restored by the device restore,
/// not snapshotted.
pub trait DeviceState {}

/// A field of `&mut self`, tagged with a marker type named after it.
pub struct Field<'a, T, F>(&'a T, PhantomData<F>);

impl<'a, T, F> Field<'a, T, F> {
    pub fn new(v: &'a T) -> Self {
        Field(v, PhantomData)
    }
}

/// A kept copy of a field.
pub struct Kept<T>(pub T);

impl<T> Kept<T> {
    pub fn put_back(self, dst: &mut T) {
        *dst = self.0;
    }
}

/// Nothing kept: the device restore brings it back.
pub struct ByDevice;

impl ByDevice {
    pub fn put_back<T>(self, _dst: &mut T) {}
}

/// Strategy 1 (highest priority): `Clone`.
pub trait ViaClone {
    type Saved;
    fn fgft_snapshot(&self) -> Self::Saved;
}

impl<T: Clone, F> ViaClone for &&Field<'_, T, F> {
    type Saved = Kept<T>;
    fn fgft_snapshot(&self) -> Kept<T> {
        Kept(self.0.clone())
    }
}

/// Strategy 2: [`DeviceState`].
pub trait ViaDevice {
    fn fgft_snapshot(&self) -> ByDevice;
}

impl<T: DeviceState, F> ViaDevice for &Field<'_, T, F> {
    fn fgft_snapshot(&self) -> ByDevice {
        ByDevice
    }
}

/// Implemented by no marker: the error a field with no strategy gets.
#[diagnostic::on_unimplemented(
    message = "driver state field `{Self}` has no snapshot strategy",
    label = "`{Self}` can change in this isolated method, but its type is neither `Clone` nor `fgft::DeviceState`",
    note = "add #[fgft::isolate(skip({Self}))] to leave it out of the snapshot, or #[fgft::isolate(snapshot({Self} = \"path::to::save_fn\"))] to copy it with `fn(&T) -> T`"
)]
pub trait NoSnapshotStrategy {}

/// Strategy 3 (lowest): a compile error.
pub trait ViaNone<F> {
    fn fgft_snapshot(&self) -> ByDevice
    where
        F: NoSnapshotStrategy;
}

impl<T, F> ViaNone<F> for Field<'_, T, F> {
    fn fgft_snapshot(&self) -> ByDevice
    where
        F: NoSnapshotStrategy,
    {
        ByDevice
    }
}

impl DeviceState for std::fs::File {}
