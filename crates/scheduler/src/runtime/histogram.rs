//! The poll-time histogram's configuration (tokio's unstable `HistogramConfiguration`,
//! `LogHistogram`, `HistogramScale`): which bucket a poll of `n` nanoseconds falls in,
//! and what range each bucket covers. The counting itself is the loops'
//! (`netloop_reactor::PollTimes`).
//!
//! Three shapes. Linear: buckets of one width, the last open-ended. Legacy log (the
//! deprecated `metrics_poll_count_histogram_*` setters): the first bucket up to a
//! power of two, each next one twice as wide. Log: a log-linear ("H2") histogram of
//! precision `p`, where each power-of-two range `[2^k, 2^(k+1))` is cut into `2^p`
//! equal buckets (below `2^(p+1)` every value has a bucket of its own), so that a
//! value's bucket is at most a `2^-p` fraction wider than the value; buckets below the
//! minimum value are folded into the first, and those from the maximum on into the
//! last.

use std::error::Error;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

/// A duration in nanoseconds, saturating at `u64::MAX`.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The scale of the deprecated histogram setters (tokio's `HistogramScale`).
#[derive(Debug, Copy, Clone, Eq, PartialEq)]
#[non_exhaustive]
pub enum HistogramScale {
    /// Buckets of one width.
    Linear,
    /// Each bucket twice as wide as the one before.
    Log,
}

/// The buckets of the poll-time histogram (tokio's `HistogramConfiguration`), for
/// [`Builder::metrics_poll_time_histogram_configuration`](super::Builder::metrics_poll_time_histogram_configuration).
#[derive(Debug, Clone)]
pub struct HistogramConfiguration {
    pub(crate) shape: Shape,
}

impl HistogramConfiguration {
    /// `num_buckets` buckets `bucket_width` wide, the last one open-ended.
    pub fn linear(bucket_width: Duration, num_buckets: usize) -> HistogramConfiguration {
        HistogramConfiguration {
            shape: Shape::Linear {
                width: nanos(bucket_width).max(1),
                buckets: num_buckets.max(1),
            },
        }
    }

    /// A log-linear histogram: see [`LogHistogram`].
    pub fn log(configuration: impl Into<LogHistogram>) -> HistogramConfiguration {
        HistogramConfiguration {
            shape: Shape::Log(configuration.into()),
        }
    }
}

/// A histogram's buckets, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Linear {
        width: u64,
        buckets: usize,
    },
    /// The first bucket `[0, first)`, `first` a power of two; each next twice as wide.
    LegacyLog {
        first: u64,
        buckets: usize,
    },
    Log(LogHistogram),
}

impl Shape {
    /// tokio's default: ten buckets of 100 µs.
    pub(crate) const DEFAULT: Shape = Shape::Linear {
        width: 100_000,
        buckets: 10,
    };

    pub(crate) fn num_buckets(&self) -> usize {
        match *self {
            Shape::Linear { buckets, .. } | Shape::LegacyLog { buckets, .. } => buckets,
            Shape::Log(log) => log.num_buckets,
        }
    }

    /// The bucket of a value of `n` nanoseconds.
    pub(crate) fn bucket(&self, n: u64) -> usize {
        let last = self.num_buckets() - 1;
        match *self {
            Shape::Linear { width, .. } => usize::try_from(n / width).unwrap_or(usize::MAX).min(last),
            Shape::LegacyLog { first, .. } => {
                if n < first {
                    0
                } else {
                    // `n` in [first * 2^(k-1), first * 2^k) is in bucket k.
                    let doublings = (n / first).ilog2() as usize + 1;
                    doublings.min(last)
                }
            }
            Shape::Log(log) => log.bucket(n),
        }
    }

    /// The values of bucket `b`, in nanoseconds; the last bucket ends at `u64::MAX`.
    pub(crate) fn range(&self, b: usize) -> Range<u64> {
        let last = self.num_buckets() - 1;
        let end = |e: u64| if b >= last { u64::MAX } else { e };
        match *self {
            Shape::Linear { width, .. } => {
                let b = b as u64;
                width.saturating_mul(b)..end(width.saturating_mul(b + 1))
            }
            Shape::LegacyLog { first, .. } => {
                let start = if b == 0 { 0 } else { shl(first, b - 1) };
                start..end(shl(first, b))
            }
            Shape::Log(log) => log.range(b),
        }
    }
}

/// `v << k`, saturating.
fn shl(v: u64, k: usize) -> u64 {
    if k >= 64 || v.leading_zeros() < k as u32 {
        u64::MAX
    } else {
        v << k
    }
}

/// The default smallest value a log histogram tells apart: 100 ns.
const DEFAULT_MIN: Duration = Duration::from_nanos(100);
/// The default largest value a log histogram tells apart: 60 s.
const DEFAULT_MAX: Duration = Duration::from_secs(60);
/// The default precision: buckets at most 25% wider than their values.
const DEFAULT_PRECISION: u32 = 2;
/// The finest precision.
const MAX_PRECISION: u32 = 10;

/// A log-linear histogram (tokio's `LogHistogram`): within each power-of-two range of
/// values, `2^p` buckets of equal width, so that every bucket's width is at most
/// `2^-p` of the values in it. Made with [`LogHistogram::builder`].
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
pub struct LogHistogram {
    num_buckets: usize,
    /// The precision.
    p: u32,
    /// Buckets of the full scale folded into the first (those below the minimum).
    offset: usize,
}

impl Default for LogHistogram {
    fn default() -> LogHistogram {
        LogHistogramBuilder::default().build()
    }
}

/// The bucket of `n` on the full log-linear scale of precision `p` (offset 0): below
/// `2^(p+1)`, the value itself; above, `2^p` buckets per power of two.
fn full_scale_bucket(n: u64, p: u32) -> u64 {
    if n < (1 << (p + 1)) {
        return n;
    }
    let magnitude = n.ilog2(); // n in [2^magnitude, 2^(magnitude+1)), magnitude > p
    let shift = magnitude - p; // each bucket of this range is 2^shift wide
    let within = (n - (1 << magnitude)) >> shift; // 0..2^p
    (u64::from(shift) + 1) * (1 << p) + within
}

/// The values of full-scale bucket `b` (the inverse of [`full_scale_bucket`]).
fn full_scale_range(b: u64, p: u32) -> Range<u64> {
    if b < (1 << (p + 1)) {
        return b..b + 1;
    }
    let shift = (b >> p) - 1; // as in `full_scale_bucket`
    let within = b & ((1 << p) - 1);
    let base = 1u64 << (shift + u64::from(p));
    let start = base + (within << shift);
    start..start.saturating_add(1 << shift)
}

impl LogHistogram {
    /// A builder, with tokio's defaults: values from 100 ns to 60 s, precision 2.
    pub fn builder() -> LogHistogramBuilder {
        LogHistogramBuilder::default()
    }

    /// The largest value the histogram tells apart: the start of its last bucket (the
    /// end of the one before it), in nanoseconds.
    pub fn max_value(&self) -> u64 {
        self.range(self.num_buckets - 2).end
    }

    fn bucket(&self, n: u64) -> usize {
        let b = full_scale_bucket(n, self.p).saturating_sub(self.offset as u64);
        usize::try_from(b).unwrap_or(usize::MAX).min(self.num_buckets - 1)
    }

    fn range(&self, b: usize) -> Range<u64> {
        let full = full_scale_range((b + self.offset) as u64, self.p);
        let start = if b == 0 { 0 } else { full.start };
        let end = if b + 1 >= self.num_buckets { u64::MAX } else { full.end };
        start..end
    }
}

/// Configures a [`LogHistogram`] (tokio's `LogHistogramBuilder`).
#[derive(Default, Debug, Copy, Clone)]
pub struct LogHistogramBuilder {
    max_value: Option<Duration>,
    min_value: Option<Duration>,
    precision: Option<u32>,
}

impl From<LogHistogramBuilder> for LogHistogram {
    fn from(builder: LogHistogramBuilder) -> LogHistogram {
        builder.build()
    }
}

impl LogHistogramBuilder {
    /// The precision that keeps each bucket's width below `max_error` of its values:
    /// the smallest `p` (at least 2, at most 10) with `2^-p <= max_error`.
    ///
    /// # Panics
    ///
    /// If `max_error` is not strictly between 0 and 1.
    pub fn max_error(mut self, max_error: f64) -> Self {
        assert!(max_error > 0.0, "max_error must be greater than 0");
        assert!(max_error < 1.0, "max_error must be less than 1");
        let mut p = DEFAULT_PRECISION;
        while p < MAX_PRECISION && 0.5f64.powi(p as i32) > max_error {
            p += 1;
        }
        self.precision = Some(p);
        self
    }

    /// The precision itself: `2^p` buckets per power of two.
    ///
    /// # Panics
    ///
    /// If `p` is above 10.
    pub fn precision_exact(mut self, p: u32) -> Self {
        assert!(p <= MAX_PRECISION, "precision must be <= {MAX_PRECISION}");
        self.precision = Some(p);
        self
    }

    /// The smallest value to tell apart: smaller ones share the first bucket.
    pub fn min_value(mut self, min: Duration) -> Self {
        self.min_value = Some(min);
        self
    }

    /// The largest value to tell apart: larger ones share the last bucket.
    ///
    /// # Panics
    ///
    /// If `max` is zero.
    pub fn max_value(mut self, max: Duration) -> Self {
        assert!(!max.is_zero(), "max value must be greater than 0");
        self.max_value = Some(max);
        self
    }

    /// The histogram, or an error if it would need more than `max_buckets` buckets.
    pub fn max_buckets(&mut self, max_buckets: usize) -> Result<LogHistogram, InvalidHistogramConfiguration> {
        let histogram = self.build();
        if histogram.num_buckets > max_buckets {
            return Err(InvalidHistogramConfiguration::TooManyBuckets {
                required_bucket_count: histogram.num_buckets,
            });
        }
        Ok(histogram)
    }

    /// The histogram.
    pub fn build(&self) -> LogHistogram {
        let p = self.precision.unwrap_or(DEFAULT_PRECISION);
        let max = nanos(self.max_value.unwrap_or(DEFAULT_MAX));
        let min = nanos(self.min_value.unwrap_or(DEFAULT_MIN));
        // The first bucket ends at or below `min`: the buckets of the full scale before
        // the one holding `min` are folded into it.
        let offset = full_scale_bucket(min, p).max(1) - 1;
        // Enough magnitudes for `max` rounded up to a power of two, then trimmed to
        // the buckets before the one `max` starts, plus the open-ended last one.
        let magnitudes = max.next_power_of_two().ilog2().max(p) + 1;
        let full = ((magnitudes - p + 1) as u64) << p;
        let mut histogram = LogHistogram {
            num_buckets: (full - offset) as usize,
            p,
            offset: offset as usize,
        };
        while histogram.num_buckets > 2 && histogram.max_value() >= max {
            histogram.num_buckets -= 1;
        }
        histogram.num_buckets += 1;
        histogram
    }
}

/// A histogram configuration that cannot be built (tokio's
/// `InvalidHistogramConfiguration`).
#[derive(Debug)]
#[non_exhaustive]
pub enum InvalidHistogramConfiguration {
    /// It would need more buckets than allowed.
    TooManyBuckets {
        /// The buckets it would need.
        required_bucket_count: usize,
    },
}

impl fmt::Display for InvalidHistogramConfiguration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidHistogramConfiguration::TooManyBuckets { required_bucket_count } => write!(
                f,
                "this histogram configuration needs {required_bucket_count} buckets, more than allowed: \
                 raise max_buckets, lower the precision or narrow the range between min_value and max_value"
            ),
        }
    }
}

impl Error for InvalidHistogramConfiguration {}

/// The poll-time histogram a builder asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistogramSettings {
    /// `enable_metrics_poll_time_histogram` was called.
    pub(crate) enabled: bool,
    /// `metrics_poll_time_histogram_configuration`'s shape.
    pub(crate) shape: Option<Shape>,
    /// The deprecated setters' scale, resolution and buckets, when any was called: they
    /// win over `shape`, as in tokio.
    pub(crate) legacy: Option<(HistogramScale, u64, usize)>,
}

impl HistogramSettings {
    /// The histogram's shape, if one is kept.
    pub(crate) fn shape(&self) -> Option<Shape> {
        if !self.enabled {
            return None;
        }
        Some(match self.legacy {
            Some((HistogramScale::Linear, resolution, buckets)) => Shape::Linear {
                width: resolution.max(1),
                buckets: buckets.max(1),
            },
            Some((HistogramScale::Log, resolution, buckets)) => Shape::LegacyLog {
                first: resolution.max(1).next_power_of_two(),
                buckets: buckets.max(1),
            },
            None => self.shape.unwrap_or(Shape::DEFAULT),
        })
    }

    /// The legacy settings, tokio's defaults for those not given.
    pub(crate) fn legacy_mut(&mut self) -> &mut (HistogramScale, u64, usize) {
        self.legacy.get_or_insert((HistogramScale::Linear, 100_000, 10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn default_log_histogram_has_tokios_buckets() {
        let h = LogHistogram::default();
        assert_eq!(h.num_buckets, 119);
        let shape = Shape::Log(h);
        assert_eq!(shape.range(0), 0..96);
        assert_eq!(shape.range(1), 96..112);
        assert_eq!(shape.range(118).end, u64::MAX);
    }

    #[test]
    fn every_value_lands_in_the_bucket_whose_range_holds_it() {
        for shape in [
            Shape::Log(LogHistogram::default()),
            Shape::Log(
                LogHistogram::builder()
                    .precision_exact(0)
                    .min_value(us(20))
                    .max_value(us(4000))
                    .build(),
            ),
            Shape::Linear {
                width: 50_000,
                buckets: 3,
            },
            Shape::LegacyLog {
                first: 65_536,
                buckets: 3,
            },
        ] {
            for n in (0..20u32).flat_map(|k| [0, 1, 3].map(|d| (1u64 << (2 * k)) + d)) {
                let b = shape.bucket(n);
                assert!(
                    shape.range(b).contains(&n),
                    "{shape:?}: {n} in bucket {b} {:?}",
                    shape.range(b)
                );
            }
        }
    }

    #[test]
    fn buckets_are_contiguous() {
        let shape = Shape::Log(LogHistogram::builder().max_error(0.25).build());
        for b in 1..shape.num_buckets() {
            assert_eq!(shape.range(b - 1).end, shape.range(b).start, "bucket {b}");
        }
    }

    #[test]
    fn too_many_buckets_is_an_error_that_says_what_to_change() {
        let err = LogHistogram::builder()
            .precision_exact(10)
            .max_buckets(100)
            .unwrap_err();
        assert!(err.to_string().contains("max_buckets"), "{err}");
    }
}
