//! What a `Hash` node reports under EXPLAIN ANALYZE: PostgreSQL's
//! `Buckets: 1024  Batches: 1  Memory Usage: 44kB`, for DataFusion's hash join.
//!
//! DataFusion 55 builds a join's inner side (its build side) in one of two shapes:
//!
//! - **a direct-address array** when the join has one integer key whose values are dense
//!   (a key range under 1024, or at least 15 % of the range present): one slot per value
//!   from the smallest key to the largest, `max − min + 1` slots. The plan's
//!   `array_map_created_count` metric says it chose this; the smallest and largest key
//!   are watched on the build side by the instrumentation ([`KeyBounds`]).
//! - **a hash table** (hashbrown 0.17) otherwise, sized once for the build side's rows: its
//!   bucket count is the next power of two above rows × 8 / 7 (a table stays at most 7/8
//!   full), and 4, 8 or 16 buckets for fewer than 15 rows.
//!
//! Either way the count is what PostgreSQL's `Buckets:` is, the slots the probe looks a
//! key up in, and it never changes after the build, so there is no
//! `(originally …)` part of its own. A join whose build side exceeds the hash limit runs in
//! batches (engine/src/exec/hash_join_batches.rs); its count is then the table of its
//! largest batch. `Memory Usage:` is the most the join's memory reservations held (the
//! build side's rows and the table), from the `work_mem` pool's record of the operator,
//! in kB rounded up as PostgreSQL rounds.

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use parking_lot::Mutex;

/// The buckets (or slots) of a join's build side holding `rows` rows: `slots` when it was
/// built as a direct-address array, else the hash table's bucket count.
pub fn buckets(rows: u64, slots: Option<u64>) -> u64 {
    if let Some(slots) = slots {
        return slots;
    }
    match rows {
        0 => 0, // no table is allocated
        1..=3 => 4,
        4..=7 => 8,
        8..=14 => 16,
        _ => (rows * 8 / 7).next_power_of_two(),
    }
}

/// The smallest and largest integer key seen on a hash join's build side.
#[derive(Debug, Default)]
pub struct KeyBounds(Mutex<Option<(i128, i128)>>);

impl KeyBounds {
    /// Widen the bounds by the non-null values of `keys` (nothing for a non-integer type).
    pub fn observe(&self, keys: &ArrayRef) {
        let Some((lo, hi)) = integer_bounds(keys) else {
            return;
        };
        let mut bounds = self.0.lock();
        *bounds = Some(match *bounds {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
    }

    /// The slots of a direct-address array over the keys seen, `max − min + 1`.
    pub fn slots(&self) -> Option<u64> {
        let (lo, hi) = (*self.0.lock())?;
        u64::try_from(hi - lo + 1).ok()
    }
}

fn integer_bounds(keys: &ArrayRef) -> Option<(i128, i128)> {
    fn bounds<T: ArrowPrimitiveType>(keys: &ArrayRef) -> Option<(i128, i128)>
    where
        T::Native: Into<i128>,
    {
        let values = keys.as_primitive::<T>();
        let lo = datafusion::arrow::compute::min(values)?;
        let hi = datafusion::arrow::compute::max(values)?;
        Some((lo.into(), hi.into()))
    }
    if keys.null_count() == keys.len() {
        return None;
    }
    match keys.data_type() {
        DataType::Int8 => bounds::<Int8Type>(keys),
        DataType::Int16 => bounds::<Int16Type>(keys),
        DataType::Int32 => bounds::<Int32Type>(keys),
        DataType::Int64 => bounds::<Int64Type>(keys),
        DataType::UInt8 => bounds::<UInt8Type>(keys),
        DataType::UInt16 => bounds::<UInt16Type>(keys),
        DataType::UInt32 => bounds::<UInt32Type>(keys),
        DataType::UInt64 => bounds::<UInt64Type>(keys),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, StringArray};

    use super::*;

    #[test]
    fn buckets_follow_the_table_hashbrown_builds() {
        for rows in [1u64, 3, 4, 7, 8, 14, 15, 100, 1000, 1024, 100_000] {
            let table = hashbrown::HashTable::<(u32, u64)>::with_capacity(rows as usize);
            // hashbrown keeps 1/8 of a table of 8 or more buckets empty, one of a smaller.
            let b = buckets(rows, None);
            let capacity = if b < 8 { b - 1 } else { b / 8 * 7 };
            assert_eq!(table.capacity() as u64, capacity, "{rows} rows");
        }
        assert_eq!(buckets(1000, Some(1000)), 1000);
    }

    #[test]
    fn key_bounds_span_every_batch() {
        let bounds = KeyBounds::default();
        assert_eq!(bounds.slots(), None);
        let keys = |v: Vec<Option<i32>>| Arc::new(Int32Array::from(v)) as ArrayRef;
        bounds.observe(&keys(vec![Some(5), None, Some(9)]));
        bounds.observe(&keys(vec![None]));
        bounds.observe(&keys(vec![Some(-2)]));
        bounds.observe(&(Arc::new(StringArray::from(vec!["a"])) as ArrayRef));
        assert_eq!(bounds.slots(), Some(12));
    }
}
