//! CIFAR-10-C: the CIFAR-10 test images under 19 corruptions at 5 severities.
//!
//! [`CORRUPTED_ARCHIVE`] is an uncompressed tar of NumPy `.npy` arrays (read by the crate's own
//! strict reader), one per [`Corruption`] and one of labels:
//!
//! ```text
//! CIFAR-10-C/<corruption>.npy   |u1, shape (5·n, 32, 32, 3): channel-last, image[y][x][c]
//! CIFAR-10-C/labels.npy         |u1 or <i8, shape (5·n,)
//! rows (s − 1)·n .. s·n         severity s = 1..=5: the n = 10,000 test images, in order
//! ```
//!
//! A load locates the two members by their tar headers, reads their `.npy` headers and then
//! only the n rows of its severity (about 30 MB of the 2.9 GB), and transposes each image to
//! the clean reader's channel-first columns, `(y·32 + x)·3 + c ↦ c·1024 + y·32 + x`, scaled
//! alike, so that a corrupted image and its clean original are rows of the same layout.
//!
//! ```
//! use bdl_data::cifar::{Corruption, Severity};
//! assert_eq!(Corruption::ALL.len(), 19);
//! assert_eq!(Corruption::BENCHMARK.len(), 15);
//! assert!(!Corruption::BENCHMARK.contains(&Corruption::Saturate));
//! assert_eq!(Corruption::BENCHMARK[14], Corruption::JpegCompression);
//! assert_eq!(Corruption::JpegCompression.name(), "jpeg_compression");
//! assert_eq!(Severity::new(3).unwrap().level(), 3);
//! assert!(Severity::new(6).is_err());
//! ```

use std::fs::File;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{PIXELS, PLANE, dataset, folder, label, member_path, scale};
use crate::archive::{self, Span};
use crate::npy::{self, Dtype, Header};
use crate::{Dataset, Error, Result};

/// The CIFAR-10-C archive under the data root.
pub const CORRUPTED_ARCHIVE: &str = "cifar10-c/CIFAR-10-C.tar";

/// The labels' member of the archive.
const LABELS: &str = "CIFAR-10-C/labels.npy";

/// The number of severities, stacked in this order in every array.
const SEVERITIES: usize = 5;

/// A corruption of the release, named as its file (`<name>.npy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Corruption {
    /// Noise: additive Gaussian.
    GaussianNoise,
    /// Noise: Poisson (shot) noise.
    ShotNoise,
    /// Noise: salt and pepper.
    ImpulseNoise,
    /// Blur: a disc kernel (out of focus).
    DefocusBlur,
    /// Blur: frosted glass (pixels swapped locally).
    GlassBlur,
    /// Blur: camera motion.
    MotionBlur,
    /// Blur: zooming in.
    ZoomBlur,
    /// Weather: snow.
    Snow,
    /// Weather: frost on a pane.
    Frost,
    /// Weather: fog.
    Fog,
    /// Digital: brightness raised.
    Brightness,
    /// Digital: contrast lowered.
    Contrast,
    /// Digital: elastic deformation.
    ElasticTransform,
    /// Digital: down- and upsampling.
    Pixelate,
    /// Digital: JPEG at low quality.
    JpegCompression,
    /// Extra: multiplicative noise.
    SpeckleNoise,
    /// Extra: Gaussian blur.
    GaussianBlur,
    /// Extra: splashes of water or mud.
    Spatter,
    /// Extra: saturation changed.
    Saturate,
}

impl Corruption {
    /// All 19 corruptions of the release: the benchmark's fifteen, then the four extra ones.
    pub const ALL: [Corruption; 19] = [
        Corruption::GaussianNoise,
        Corruption::ShotNoise,
        Corruption::ImpulseNoise,
        Corruption::DefocusBlur,
        Corruption::GlassBlur,
        Corruption::MotionBlur,
        Corruption::ZoomBlur,
        Corruption::Snow,
        Corruption::Frost,
        Corruption::Fog,
        Corruption::Brightness,
        Corruption::Contrast,
        Corruption::ElasticTransform,
        Corruption::Pixelate,
        Corruption::JpegCompression,
        Corruption::SpeckleNoise,
        Corruption::GaussianBlur,
        Corruption::Spatter,
        Corruption::Saturate,
    ];

    /// The fifteen corruptions of the benchmark's main set (noise, blur, weather, digital), over
    /// which its mean corruption error is taken: the first fifteen of [`ALL`](Self::ALL), whose
    /// other four are the release's extra ones, meant for validation.
    pub const BENCHMARK: [Corruption; 15] = {
        let mut first = [Corruption::GaussianNoise; 15];
        let mut i = 0;
        while i < first.len() {
            first[i] = Self::ALL[i];
            i += 1;
        }
        first
    };

    /// The name of the release: `gaussian_noise`, …, the stem of its file (and its serialised
    /// form).
    pub fn name(self) -> &'static str {
        match self {
            Corruption::GaussianNoise => "gaussian_noise",
            Corruption::ShotNoise => "shot_noise",
            Corruption::ImpulseNoise => "impulse_noise",
            Corruption::DefocusBlur => "defocus_blur",
            Corruption::GlassBlur => "glass_blur",
            Corruption::MotionBlur => "motion_blur",
            Corruption::ZoomBlur => "zoom_blur",
            Corruption::Snow => "snow",
            Corruption::Frost => "frost",
            Corruption::Fog => "fog",
            Corruption::Brightness => "brightness",
            Corruption::Contrast => "contrast",
            Corruption::ElasticTransform => "elastic_transform",
            Corruption::Pixelate => "pixelate",
            Corruption::JpegCompression => "jpeg_compression",
            Corruption::SpeckleNoise => "speckle_noise",
            Corruption::GaussianBlur => "gaussian_blur",
            Corruption::Spatter => "spatter",
            Corruption::Saturate => "saturate",
        }
    }

    /// The member of the archive holding this corruption's images.
    fn member(self) -> String {
        format!("CIFAR-10-C/{}.npy", self.name())
    }
}

/// How strongly a corruption is applied: 1 (mildest) to 5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Severity(u8);

impl Severity {
    /// The five severities, mildest first.
    pub const ALL: [Severity; 5] = [
        Severity(1),
        Severity(2),
        Severity(3),
        Severity(4),
        Severity(5),
    ];

    /// Severity `level`; [`Error::InvalidArgument`] outside `1..=5`.
    pub fn new(level: u8) -> Result<Self> {
        if (1..=SEVERITIES as u8).contains(&level) {
            Ok(Severity(level))
        } else {
            Err(Error::InvalidArgument(format!(
                "CIFAR-10-C severity {level} is not one of 1..={SEVERITIES}"
            )))
        }
    }

    /// The level, 1 to 5.
    pub fn level(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Severity {
    type Error = Error;

    fn try_from(level: u8) -> Result<Self> {
        Severity::new(level)
    }
}

impl From<Severity> for u8 {
    fn from(severity: Severity) -> u8 {
        severity.0
    }
}

/// Loads the 10,000 test images under `corruption` at `severity` from [`CORRUPTED_ARCHIVE`]
/// under `root`, in the test set's order, in the features and scaling of
/// [`load`](super::load).
pub fn load_corrupted(root: &Path, corruption: Corruption, severity: Severity) -> Result<Dataset> {
    read_corrupted(&root.join(CORRUPTED_ARCHIVE), corruption, severity)
}

/// [`load_corrupted`] from the archive at `path`.
pub(crate) fn read_corrupted(
    path: &Path,
    corruption: Corruption,
    severity: Severity,
) -> Result<Dataset> {
    let file = archive::open(path, folder(CORRUPTED_ARCHIVE))?;
    let images_member = corruption.member();
    let spans = archive::locate(path, &file, &[&images_member, LABELS])?;
    let images = Array::open(path, &file, &images_member, spans[0])?;
    let labels = Array::open(path, &file, LABELS, spans[1])?;
    let total = match (images.header.dtype, &images.header.shape[..]) {
        (Dtype::U1, &[n, 32, 32, 3]) if n > 0 && n % SEVERITIES == 0 => n,
        (dtype, shape) => {
            return Err(images.error(format!(
                "expected images of dtype |u1 and shape (5·n, 32, 32, 3), found {} {shape:?}",
                dtype.descr()
            )));
        }
    };
    match (labels.header.dtype, &labels.header.shape[..]) {
        (Dtype::U1 | Dtype::I8, &[n]) if n == total => {}
        (Dtype::U1 | Dtype::I8, &[n]) => {
            return Err(Error::RowMismatch {
                first: member_path(path, images.member),
                first_rows: total,
                second: member_path(path, LABELS),
                second_rows: n,
            });
        }
        (dtype, shape) => {
            return Err(labels.error(format!(
                "expected labels of dtype |u1 or <i8 and shape (N,), found {} {shape:?}",
                dtype.descr()
            )));
        }
    }
    let n = total / SEVERITIES;
    let first = (usize::from(severity.level()) - 1) * n;
    let raw = labels.rows(first, n)?;
    let values: Vec<i64> = match labels.header.dtype {
        Dtype::I8 => raw
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
        _ => raw.iter().map(|&b| i64::from(b)).collect(),
    };
    let labels = (values.into_iter().enumerate())
        .map(|(i, value)| label(path, LABELS, first + i, value))
        .collect::<Result<Vec<u32>>>()?;
    let x: Vec<f32> = images
        .rows(first, n)?
        .chunks_exact(PIXELS)
        .flat_map(|hwc| (0..PIXELS).map(move |j| scale(hwc[(j % PLANE) * 3 + j / PLANE])))
        .collect();
    let description = format!(
        "cifar10-c {} severity {}",
        corruption.name(),
        severity.level()
    );
    dataset(x, labels, description, path)
}

/// A `.npy` member of the archive: its header, checked against the member's length, and where
/// its data starts in the file.
struct Array<'a> {
    path: &'a Path,
    file: &'a File,
    member: &'a str,
    header: Header,
    data: u64,
}

impl<'a> Array<'a> {
    /// Reads the header of `member` of the archive `file` (read from `path`), which lies at
    /// `span`: the prefix first, then the dictionary it locates, neither past the member.
    fn open(path: &'a Path, file: &'a File, member: &'a str, span: Span) -> Result<Self> {
        let error = |message| npy_error(path, member, message);
        let len = usize::try_from(span.len).unwrap_or(usize::MAX);
        let prefix = archive::read_span(path, file, span.start, len.min(npy::PREFIX_LEN))?;
        let range = npy::dictionary(&prefix, len).map_err(error)?;
        let text = archive::read_span(path, file, span.start + range.start as u64, range.len())?;
        let header = Header::read(&text).map_err(error)?;
        header
            .check_data(span.len - range.end as u64)
            .map_err(error)?;
        Ok(Array {
            path,
            file,
            member,
            header,
            data: span.start + range.end as u64,
        })
    }

    /// The bytes of `count` rows (of the outermost dimension) from row `first` on, rows the
    /// header's size check has shown to lie within the member.
    fn rows(&self, first: usize, count: usize) -> Result<Vec<u8>> {
        let row = self.header.shape[1..].iter().product::<usize>() * self.header.dtype.size();
        let start = self.data + (first * row) as u64;
        archive::read_span(self.path, self.file, start, count * row)
    }

    /// An [`Error::Npy`] naming the member.
    fn error(&self, message: String) -> Error {
        npy_error(self.path, self.member, message)
    }
}

/// An [`Error::Npy`] naming `member` of the archive at `path`.
fn npy_error(path: &Path, member: &str, message: String) -> Error {
    Error::Npy {
        path: member_path(path, member),
        message,
    }
}

#[cfg(test)]
mod tests;
