import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand

from assembly import AssemblyError, assemble
from strategies_app.presenters import named
from studio.http import not_json_where


class Command(BaseCommand):
    help = "Assemble a request JSON (engine.md §1) and print the AssemblyResult; exit 1 with the error JSON on failure."

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True, help="request JSON file, or - for stdin")
        parser.add_argument("--format", choices=("json", "table"), default="json")

    def handle(self, *args, **options):
        source = options["input"]
        try:
            raw = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8-sig")
            request = json.loads(raw)
            result = assemble(request)
        except UnicodeDecodeError as exc:
            self._fail({"ok": False, "code": "INPUT_NOT_JSON", "status": 400,
                        "error": f"{source}: not UTF-8 text (byte {exc.start})", "detail": {}})
        except OSError as exc:
            self._fail({"ok": False, "code": "INPUT_UNREADABLE", "status": 400, "error": str(exc), "detail": {}})
        except json.JSONDecodeError as exc:
            self._fail({"ok": False, "code": "INPUT_NOT_JSON", "status": 400,
                        "error": f"{source}: not JSON ({not_json_where(exc)})", "detail": {}})
        except AssemblyError as exc:
            self._fail(exc.to_json())
        if options["format"] == "json":
            body = result.model_dump(mode="json")
            body["strategy"] = named(body["strategy"])
            self.stdout.write(json.dumps(body, ensure_ascii=False, indent=2))
            return
        self.stdout.write(_table(result))

    def _fail(self, error: dict) -> None:
        self.stdout.write(json.dumps(error, ensure_ascii=False, indent=2))
        sys.exit(1)


def _text_table(result) -> str:
    """A text-completion result: one row per span of the prompt (its source, tokens and text), then the stop
    strings and the total."""
    rows = [("#", "source", "tokens", "content")]
    for index, span in enumerate(result.request.spans or ()):
        content = span.text.replace("\n", "\\n")
        rows.append((str(index), span.source, str(span.tokens), content[:60] + ("…" if len(content) > 60 else "")))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    lines.append("stop strings: " + (", ".join(json.dumps(s, ensure_ascii=False) for s in result.request.stop or ())
                                     or "none"))
    lines.append(f"total tokens: {result.tokens.request_total} ({result.tokens.tokenizer})")
    return "\n".join(lines)


def _table(result) -> str:
    if result.request.prompt is not None:
        return _text_table(result)
    rows = [("#", "role", "delivery", "history", "tokens", "content")]
    for index, message in enumerate(result.request.messages):
        content = message.content.replace("\n", " ")
        rows.append((str(index), message.role, message.delivery, message.history_status, str(message.tokens),
                     content[:60] + ("…" if len(content) > 60 else "")))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(5)) + "  " + r[5] for r in rows]
    lines.append(f"total tokens: {result.tokens.total} ({result.tokens.tokenizer}); "
                 f"diagnostics: {', '.join(d.code for d in result.diagnostics) or 'none'}")
    return "\n".join(lines)
