"""The synthetic studies: deterministic files with the headers and pixels of their modality,
readable by dcmtk and accepted by a real Orthanc (live)."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pydicom
import pytest

from clinigym.runtime.backends.base import Backend
from clinigym.runtime.fixtures import DEFAULT_STUDIES, MODALITY_STUDIES, write_studies
from clinigym.spec.apps import BASE_VARS, AppSpec


def read(modality_files, key: str, index: int = 0) -> pydicom.Dataset:
    return pydicom.dcmread(modality_files[key][index])


def test_two_writes_are_byte_identical(tmp_path, modality_files):
    write_studies(tmp_path, MODALITY_STUDIES)
    again = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.dcm"))
    assert len(again) == 16 + 1 + 1
    for rel in again:
        assert (tmp_path / rel).read_bytes() == modality_files[rel.parts[0]][int(rel.stem[3:]) - 1].read_bytes()


def test_default_studies_unchanged(tmp_path):
    # What the built-in scenarios show: three patients, 8 slices each, the same pixels as ever.
    assert [(s.key, s.modality, s.patient_name) for s in DEFAULT_STUDIES] == [
        ("ct-chest", "CT", "PHANTOM^ALICE"), ("mr-brain", "MR", "PHANTOM^BOB"),
        ("ct-abdomen", "CT", "PHANTOM^CAROL")]
    paths = write_studies(tmp_path)
    assert len(paths) == 24
    pixels = b"".join(pydicom.dcmread(p).PixelData for p in paths)
    assert hashlib.sha256(pixels).hexdigest() == \
        "f319b43794aa9f954096f71e9ec61773bb7b06419caaf03c66a0595e7809debc"
    ct = pydicom.dcmread(paths[0])
    assert (ct.PatientPosition, ct.SliceThickness, list(ct.PixelSpacing)) == ("HFS", 5.0, [1.5625, 1.5625])
    assert (ct.BitsAllocated, ct.BitsStored, ct.RescaleIntercept) == (16, 12, -1024)


@pytest.mark.parametrize("key, sop_class, modality, photometric, rows, columns, bits, files", [
    ("pt-wholebody", "1.2.840.10008.5.1.4.1.1.128", "PT", "MONOCHROME2", 128, 128, (16, 16, 15), 16),
    ("dx-chest", "1.2.840.10008.5.1.4.1.1.1.1", "DX", "MONOCHROME2", 512, 512, (16, 12, 11), 1),
    ("us-abdomen", "1.2.840.10008.5.1.4.1.1.6.1", "US", "MONOCHROME2", 480, 640, (8, 8, 7), 1),
])
def test_modality_basics(modality_files, key, sop_class, modality, photometric, rows, columns, bits, files):
    assert len(modality_files[key]) == files
    ds = read(modality_files, key)
    assert ds.SOPClassUID == ds.file_meta.MediaStorageSOPClassUID == sop_class
    assert ds.Modality == modality and ds.PhotometricInterpretation == photometric
    assert (ds.Rows, ds.Columns) == (rows, columns)
    assert (ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation) == (*bits, 0)
    assert ds.pixel_array.shape == (rows, columns)


def test_each_study_has_its_own_synthetic_patient(tmp_path, modality_files):
    headers = [read(modality_files, k) for k in modality_files]
    seen = {(str(h.PatientName), h.PatientID, h.BodyPartExamined) for h in headers}
    assert seen == {("PHANTOM^DAVID", "CG0004", "WHOLEBODY"), ("PHANTOM^ERIN", "CG0005", "CHEST"),
                    ("PHANTOM^FRANK", "CG0006", "ABDOMEN")}
    studies = {read(modality_files, k).StudyInstanceUID for k in modality_files}
    studies |= {pydicom.dcmread(p).StudyInstanceUID for p in write_studies(tmp_path)}
    assert len(studies) == 6


def test_pet_headers(modality_files):
    ds = read(modality_files, "pt-wholebody", 6)
    assert (ds.Units, ds.CountsSource, list(ds.SeriesType), ds.DecayCorrection) == \
        ("BQML", "EMISSION", ["WHOLE BODY", "IMAGE"], "START")
    assert list(ds.CorrectedImage) == ["DECY", "ATTN", "SCAT", "DTIM", "RAN", "NORM"]
    assert (ds.RescaleSlope, ds.RescaleIntercept, ds.NumberOfSlices, ds.ImageIndex) == (5, 0, 16, 7)
    assert (ds.PatientWeight, ds.WindowCenter, ds.WindowWidth) == (70, 15000, 30000)
    drug = ds.RadiopharmaceuticalInformationSequence[0]
    assert drug.Radiopharmaceutical == "Fluorodeoxyglucose"
    assert (drug.RadionuclideTotalDose, drug.RadionuclideHalfLife, drug.RadiopharmaceuticalStartTime) == \
        (350000000, 6586.2, "091500")
    assert [(c.CodeValue, c.CodingSchemeDesignator, c.CodeMeaning) for c in drug.RadionuclideCodeSequence] == \
        [("77004003", "SCT", "^18^Fluorine")]
    assert drug.RadiopharmaceuticalCodeSequence[0].CodeMeaning == "Fluorodeoxyglucose F^18^"
    assert ds.PatientOrientationCodeSequence[0].CodeMeaning == "recumbent"
    assert "PatientPosition" not in ds    # PET says the position by codes instead
    # Slices go from head to pelvis, 30 mm apart.
    z = [float(read(modality_files, "pt-wholebody", i).ImagePositionPatient[2]) for i in range(16)]
    assert z == [30.0 * i for i in range(16)]


def test_pet_pixels_are_suv_times_1000(modality_files):
    stats = [(int(a.max()), int(np.count_nonzero(a)), int(a.sum()))
             for a in (pydicom.dcmread(p).pixel_array for p in modality_files["pt-wholebody"])]
    assert [s[0] for s in stats] == [7000, 7000, 7000, 1200, 1000, 4500, 9000, 4500,
                                     2500, 2500, 4000, 12000, 1000, 1000, 20000, 20000]
    assert [s[1] for s in stats] == [1296] * 3 + [554] + [4562] * 10 + [4278] * 2
    assert stats[6][2] == 4771300
    ds = read(modality_files, "pt-wholebody", 6)
    a = ds.pixel_array
    assert sorted(np.unique(a).tolist()) == [0, 400, 800, 1000, 1500, 4500, 9000]
    assert int(np.count_nonzero(a == 9000)) > 0      # the lung hot spot: SUV 9
    # SUV = Bq/ml / (dose / weight in g): stored 1000 is SUV 1.
    suv = a.max() * ds.RescaleSlope / (350e6 / 70e3)
    assert suv == 9.0


def test_dx_headers_and_pixels(modality_files):
    ds = read(modality_files, "dx-chest")
    assert (ds.PresentationIntentType, ds.ViewPosition, ds.ImageLaterality) == ("FOR PRESENTATION", "PA", "U")
    assert ds.ViewCodeSequence[0].CodeMeaning == "postero-anterior"
    assert ds.AnatomicRegionSequence[0].CodeMeaning == "Chest"
    assert list(ds.PatientOrientation) == ["L", "F"]
    assert list(ds.ImagerPixelSpacing) == [0.8, 0.8] and "PixelSpacing" not in ds
    assert (ds.PixelIntensityRelationship, ds.PresentationLUTShape) == ("LOG", "IDENTITY")
    assert list(ds.WindowCenter) == [1500, 2048] and list(ds.WindowWidth) == [2600, 4096]
    assert list(ds.WindowCenterWidthExplanation) == ["STANDARD", "FULL"]
    assert "FrameOfReferenceUID" not in ds and "ImagePositionPatient" not in ds
    a = ds.pixel_array
    assert (int(a.min()), int(a.max()), int(a.sum())) == (150, 2699, 364097890)
    # Lungs dark, mediastinum (spine) bright, air outside the body darkest.
    assert a[150:300, 120:180].mean() < 1300 < 2000 < a[150:300, 250:262].mean() and a[256, 3] == 150


def test_us_headers_and_pixels(modality_files):
    ds = read(modality_files, "us-abdomen")
    assert list(ds.ImageType) == ["ORIGINAL", "PRIMARY", "ABDOMINAL", "0001"]
    assert (ds.LossyImageCompression, ds.TransducerType) == ("00", "CURVED LINEAR")
    region = ds.SequenceOfUltrasoundRegions[0]
    assert (region.RegionSpatialFormat, region.RegionDataType, region.PhysicalUnitsXDirection) == (1, 1, 3)
    assert (region.RegionLocationMinX0, region.RegionLocationMinY0,
            region.RegionLocationMaxX1, region.RegionLocationMaxY1) == (57, 0, 583, 440)
    assert (region.PhysicalDeltaX, region.PhysicalDeltaY) == (0.035, 0.035)
    assert (region.ReferencePixelX0, region.ReferencePixelY0) == (263, -20)
    a = ds.pixel_array
    assert a.dtype == np.uint8
    assert (int(a.max()), int(np.count_nonzero(a)), int(a.sum())) == (255, 128798, 8122809)
    # Outside the sector black (but the depth marks), the cyst anechoic, the liver speckled.
    assert a[5, 5] == 0 and a[470, 320] == 0
    cyst, liver = a[195:225, 245:285], a[100:140, 330:380]
    assert cyst.mean() < 15 < 60 < liver.mean() and liver.std() > 20


def test_modalities_is_a_base_variable(tmp_path, monkeypatch):
    from clinigym.runtime import slots
    monkeypatch.setattr(slots, "ROOT", tmp_path)     # work folders of this test only
    assert "MODALITIES" in BASE_VARS
    app = AppSpec(name="x", title="x", folder=tmp_path,
                  processes=[{"name": "p", "command": ["viewer", "${MODALITIES}/dx-chest/IMG0001.dcm"]}])
    backend = Backend(app)
    try:
        assert set(BASE_VARS) <= set(backend.variables)
        assert backend.variables["MODALITIES"] == str(backend.workdir / "modalities")
        assert Path(backend.variables["FIXTURES"]).parent == Path(backend.variables["MODALITIES"]).parent
    finally:
        shutil.rmtree(backend.workdir, ignore_errors=True)


