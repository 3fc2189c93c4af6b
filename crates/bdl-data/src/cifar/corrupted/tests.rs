use std::path::PathBuf;

use super::*;
use crate::cifar::tests::{column, image, record, write};
use crate::cifar::{Part, load};
use crate::test_util::{Scratch, npy_file, tar_file};

/// A channel-first image's bytes in channel-last order, `(y·32 + x)·3 + c`.
fn hwc(chw: &[u8]) -> Vec<u8> {
    (0..32)
        .flat_map(|y| (0..32).flat_map(move |x| (0..3).map(move |c| (c, y, x))))
        .map(|(c, y, x)| chw[column(c, y, x)])
        .collect()
}

/// Image `i` of the synthetic arrays, channel-first: `(c, y, x) ↦ (11i + 7c + 3y + x) mod 256`.
fn pattern(i: usize) -> Vec<u8> {
    image(|c, y, x| ((11 * i + 7 * c + 3 * y + x) % 256) as u8)
}

/// The `.npy` file of `count` channel-last images, image i being [`pattern`]`(i)`.
fn images(count: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..count).flat_map(|i| hwc(&pattern(i))).collect();
    npy_file("|u1", &format!("({count}, 32, 32, 3)"), &data)
}

/// The `.npy` file of the byte labels `labels`.
fn labels(labels: &[u8]) -> Vec<u8> {
    npy_file("|u1", &format!("({},)", labels.len()), labels)
}

/// A tar of `members` as `cifar10-c/CIFAR-10-C.tar` under `dir`.
fn write_corrupted(dir: &Scratch, members: &[(&str, &[u8])]) -> PathBuf {
    dir.write(CORRUPTED_ARCHIVE, tar_file(members))
}

/// Two images a severity: ten images, labelled `i mod 10`, as `fog` beside other members.
fn ten_fog_images(dir: &Scratch) -> PathBuf {
    let ten: Vec<u8> = (0..10).collect();
    write_corrupted(
        dir,
        &[
            ("CIFAR-10-C/brightness.npy", &images(5)),
            ("CIFAR-10-C/fog.npy", &images(10)),
            (LABELS, &labels(&ten)),
        ],
    )
}

fn fog(dir: &Scratch, level: u8) -> Result<Dataset> {
    load_corrupted(dir.path(), Corruption::Fog, Severity::new(level).unwrap())
}

#[test]
fn each_severity_is_its_block_of_rows() {
    let dir = Scratch::new("cifar-c-severity");
    let path = ten_fog_images(&dir);
    let before = std::fs::read(&path).unwrap();
    for severity in Severity::ALL {
        let s = usize::from(severity.level());
        let ds = load_corrupted(dir.path(), Corruption::Fog, severity).unwrap();
        let rows = [2 * (s - 1), 2 * (s - 1) + 1];
        assert_eq!(ds.labels().unwrap(), rows.map(|r| r as u32));
        let x = ds.x().to_vec2::<f32>().unwrap();
        for (row, i) in x.iter().zip(rows) {
            for (c, y, xx) in [(0, 0, 0), (2, 5, 7), (1, 31, 0), (2, 31, 31)] {
                let byte = (11 * i + 7 * c + 3 * y + xx) % 256;
                assert_eq!(
                    row[column(c, y, xx)],
                    byte as f32 / 255.0,
                    "{i} {c} {y} {xx}"
                );
            }
        }
        assert_eq!(ds.image_shape(), Some(crate::cifar::IMAGE));
        assert!(
            ds.provenance()
                .description
                .ends_with(&format!("fog severity {s}"))
        );
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "reading changed the archive"
    );
}

/// The same image, channel-first in a clean record and channel-last in CIFAR-10-C, gives the
/// same row.
#[test]
fn corrupted_images_are_transposed_to_the_clean_readers_order() {
    let dir = Scratch::new("cifar-c-transpose");
    let chw = image(|c, y, x| (c * 80 + y * 2 + x % 3) as u8);
    write(
        &dir,
        &[("cifar-10-batches-bin/test_batch.bin", &record(6, &chw))],
    );
    let clean = load(dir.path(), Part::Test).unwrap();
    // Severity 3 of five one-image blocks is row 2.
    let mut data: Vec<u8> = (0..5).flat_map(|i| hwc(&pattern(i))).collect();
    data[2 * 3072..3 * 3072].copy_from_slice(&hwc(&chw));
    let array = npy_file("|u1", "(5, 32, 32, 3)", &data);
    let labels = npy_file(
        "<i8",
        "(5,)",
        &[0i64, 1, 6, 3, 4].map(i64::to_le_bytes).concat(),
    );
    write_corrupted(&dir, &[("CIFAR-10-C/snow.npy", &array), (LABELS, &labels)]);
    let corrupted =
        load_corrupted(dir.path(), Corruption::Snow, Severity::new(3).unwrap()).unwrap();
    assert_eq!(corrupted.labels().unwrap(), [6]);
    assert_eq!(
        corrupted.x().to_vec2::<f32>().unwrap(),
        clean.x().to_vec2::<f32>().unwrap()
    );
}

#[test]
fn labels_out_of_range_are_named_by_their_row() {
    let dir = Scratch::new("cifar-c-labels");
    let bytes = npy_file(
        "<i8",
        "(5,)",
        &[0i64, 1, 2, -1, 4].map(i64::to_le_bytes).concat(),
    );
    write_corrupted(
        &dir,
        &[("CIFAR-10-C/fog.npy", &images(5)), (LABELS, &bytes)],
    );
    assert_eq!(fog(&dir, 3).unwrap().labels().unwrap(), [2]);
    let err = fog(&dir, 4).unwrap_err();
    assert!(
        matches!(&err, Error::BadLabel { row: 3, value, .. } if value == "-1"),
        "{err}"
    );
    assert!(err.to_string().contains("labels.npy"), "{err}");
    let bytes = labels(&[0, 1, 2, 3, 10]);
    write_corrupted(
        &dir,
        &[("CIFAR-10-C/fog.npy", &images(5)), (LABELS, &bytes)],
    );
    assert!(matches!(fog(&dir, 5), Err(Error::BadLabel { row: 4, .. })));
}

#[test]
fn severities_outside_one_to_five_are_refused() {
    for level in [0, 6, 255] {
        let err = Severity::new(level).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(Severity::try_from(level).is_err());
    }
    assert_eq!(u8::from(Severity::ALL[4]), 5);
    assert_eq!(Severity::ALL.map(Severity::level), [1, 2, 3, 4, 5]);
}

#[test]
fn missing_files_and_members_are_named() {
    let dir = Scratch::new("cifar-c-missing");
    let err = fog(&dir, 1).unwrap_err();
    assert!(matches!(err, Error::NotFetched { .. }), "{err}");
    assert!(
        err.to_string().contains("`cargo xtask fetch cifar10-c`"),
        "{err}"
    );
    ten_fog_images(&dir);
    let err = load_corrupted(dir.path(), Corruption::Frost, Severity::ALL[0]).unwrap_err();
    assert!(
        matches!(&err, Error::MissingMember { member, .. } if member == "CIFAR-10-C/frost.npy"),
        "{err}"
    );
    write_corrupted(&dir, &[("CIFAR-10-C/fog.npy", &images(5))]);
    let err = fog(&dir, 1).unwrap_err();
    assert!(
        matches!(&err, Error::MissingMember { member, .. } if member == LABELS),
        "{err}"
    );
}

#[test]
fn arrays_of_the_wrong_kind_or_length_are_named() {
    let dir = Scratch::new("cifar-c-kinds");
    let five = labels(&[0, 1, 2, 3, 4]);
    let floats = npy_file("<f4", "(5, 32, 32, 3)", &vec![0; 5 * 3072 * 4]);
    let grey = npy_file("|u1", "(5, 32, 32, 1)", &vec![0; 5 * 1024]);
    let short = npy_file("|u1", "(5, 32, 32, 3)", &vec![0; 4 * 3072]);
    let nine = npy_file("|u1", "(9, 32, 32, 3)", &vec![0; 9 * 3072]);
    for (array, says) in [
        (&floats, "found <f4"),
        (&grey, "[5, 32, 32, 1]"),
        (&short, "promises 15360 bytes"),
        (&nine, "(5·n, 32, 32, 3)"),
        (
            &b"\x93NUMPY\x01\x00\xff\xff"[..].to_vec(),
            "the header promises",
        ),
    ] {
        write_corrupted(&dir, &[("CIFAR-10-C/fog.npy", array), (LABELS, &five)]);
        let err = fog(&dir, 1).unwrap_err();
        assert!(matches!(err, Error::Npy { .. }), "{says}: {err}");
        let message = err.to_string();
        assert!(
            message.contains(says) && message.contains("fog.npy"),
            "{message}"
        );
    }
    let wrong_labels = npy_file("<f8", "(5,)", &[0; 40]);
    write_corrupted(
        &dir,
        &[("CIFAR-10-C/fog.npy", &images(5)), (LABELS, &wrong_labels)],
    );
    let err = fog(&dir, 1).unwrap_err();
    assert!(
        matches!(err, Error::Npy { .. }) && err.to_string().contains("labels.npy"),
        "{err}"
    );
    write_corrupted(
        &dir,
        &[("CIFAR-10-C/fog.npy", &images(10)), (LABELS, &five)],
    );
    let err = fog(&dir, 1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::RowMismatch {
                first_rows: 10,
                second_rows: 5,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn an_archive_cut_inside_a_member_is_named() {
    let dir = Scratch::new("cifar-c-cut");
    let path = ten_fog_images(&dir);
    let full = std::fs::read(&path).unwrap();
    // The labels are the last member, in one 512-byte block before the two zero blocks that
    // end an archive: cut the file 100 bytes into them.
    let labels_start = full.len() - 1024 - 512;
    std::fs::write(&path, &full[..labels_start + 100]).unwrap();
    let err = fog(&dir, 1).unwrap_err();
    assert!(
        matches!(&err, Error::MemberLength { member, .. } if member == LABELS),
        "{err}"
    );
}

#[test]
fn corruption_names_are_the_release_files() {
    let names: Vec<&str> = Corruption::ALL.iter().map(|c| c.name()).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 19);
    for c in Corruption::ALL {
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            format!("\"{}\"", c.name())
        );
        assert_eq!(c.member(), format!("CIFAR-10-C/{}.npy", c.name()));
    }
    assert_eq!(Corruption::BENCHMARK[..], Corruption::ALL[..15]);
    assert_eq!(
        Corruption::ALL[15..]
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>(),
        ["speckle_noise", "gaussian_blur", "spatter", "saturate"]
    );
    let severity: Severity = serde_json::from_str("4").unwrap();
    assert_eq!(severity.level(), 4);
    assert!(serde_json::from_str::<Severity>("6").is_err());
}
